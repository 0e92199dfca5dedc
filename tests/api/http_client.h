#pragma once

// A small HTTP/1.1 client for the API tests. Every operation has a deadline, so a server that
// fails to answer makes a test fail instead of hang. Boost.Beast stays in http_client.cc: this
// header is included by most API and end-to-end tests, and Beast's templates in each of them
// were most of their compile time.

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kfaild::api::testing {

struct HttpReply {
  int status = 0;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  bool keep_alive = false;

  // "" when absent; names compare case-insensitively.
  std::string header(std::string_view name) const;
  bool hasHeader(std::string_view name) const;
  nlohmann::json json() const { return nlohmann::json::parse(body); }
};

struct HttpRequestSpec {
  std::string method = "GET";
  std::string target = "/";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

// One connection to 127.0.0.1:port. Not thread-safe. Every operation throws std::runtime_error
// when it fails or its deadline passes.
class HttpConnection {
 public:
  explicit HttpConnection(std::uint16_t port,
                          std::chrono::milliseconds deadline = std::chrono::seconds(10));
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  void send(const HttpRequestSpec& spec);

  // Reads one response. `head`: it answers a HEAD request, so it has no body whatever its
  // Content-Length says.
  HttpReply receive(bool head = false);

  HttpReply request(const HttpRequestSpec& spec) {
    send(spec);
    return receive(spec.method == "HEAD");
  }
  HttpReply get(const std::string& target) { return request({"GET", target, "", {}}); }

  void writeRaw(std::string_view bytes);

  // Reads whatever arrives until the server closes the connection (true) or `within` passes
  // (false). What arrived is appended to `received`, if given.
  bool closedByServer(std::chrono::milliseconds within, std::string* received = nullptr);

 private:
  struct Stream;
  std::unique_ptr<Stream> stream_;
};

inline HttpReply httpGet(std::uint16_t port, const std::string& target) {
  HttpConnection connection(port);
  return connection.get(target);
}

inline HttpReply httpRequest(std::uint16_t port, const HttpRequestSpec& spec) {
  HttpConnection connection(port);
  return connection.request(spec);
}

}  // namespace kfaild::api::testing
