#pragma once

// A small HTTP/1.1 client for the API tests (Boost.Beast). Every operation has a deadline, so a
// server that fails to answer makes a test fail instead of hang. Header-only: the test target
// compiles only *_test.cc files from this folder.

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
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
  std::string header(std::string_view name) const {
    for (const auto& [key, value] : headers) {
      if (boost::beast::iequals(key, boost::beast::string_view(name.data(), name.size()))) {
        return value;
      }
    }
    return "";
  }
  bool hasHeader(std::string_view name) const {
    for (const auto& [key, value] : headers) {
      if (boost::beast::iequals(key, boost::beast::string_view(name.data(), name.size()))) {
        return true;
      }
    }
    return false;
  }
  nlohmann::json json() const { return nlohmann::json::parse(body); }
};

struct HttpRequestSpec {
  std::string method = "GET";
  std::string target = "/";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

class HttpConnection {
 public:
  explicit HttpConnection(std::uint16_t port,
                          std::chrono::milliseconds deadline = std::chrono::seconds(10))
      : stream_(ioc_), deadline_(deadline) {
    namespace asio = boost::asio;
    const asio::ip::tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), port);
    const auto ec = run([&](auto done) { stream_.async_connect(endpoint, done); });
    if (ec)
      throw std::runtime_error("connect to port " + std::to_string(port) + ": " + ec.message());
  }

  void send(const HttpRequestSpec& spec) {
    namespace http = boost::beast::http;
    http::request<http::string_body> request;
    request.method_string(boost::beast::string_view(spec.method.data(), spec.method.size()));
    request.target(boost::beast::string_view(spec.target.data(), spec.target.size()));
    request.version(11);
    request.set(http::field::host, "127.0.0.1");
    for (const auto& [name, value] : spec.headers) {
      request.set(boost::beast::string_view(name.data(), name.size()), value);
    }
    request.body() = spec.body;
    request.prepare_payload();
    const auto ec = run([&](auto done) { http::async_write(stream_, request, done); });
    if (ec) throw std::runtime_error("write: " + ec.message());
  }

  // Reads one response. `head`: it answers a HEAD request, so it has no body whatever its
  // Content-Length says.
  HttpReply receive(bool head = false) {
    namespace http = boost::beast::http;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    parser.skip(head);
    const auto ec = run([&](auto done) { http::async_read(stream_, buffer_, parser, done); });
    if (ec) throw std::runtime_error("read: " + ec.message());
    auto& message = parser.get();
    HttpReply reply;
    reply.status = static_cast<int>(message.result_int());
    reply.body = message.body();
    reply.keep_alive = message.keep_alive();
    for (const auto& field : message) {
      reply.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    return reply;
  }

  HttpReply request(const HttpRequestSpec& spec) {
    send(spec);
    return receive(spec.method == "HEAD");
  }
  HttpReply get(const std::string& target) { return request({"GET", target, "", {}}); }

  void writeRaw(std::string_view bytes) {
    const auto ec = run([&](auto done) {
      boost::asio::async_write(stream_, boost::asio::buffer(bytes.data(), bytes.size()), done);
    });
    if (ec) throw std::runtime_error("raw write: " + ec.message());
  }

  // Reads whatever arrives until the server closes the connection (true) or `within` passes
  // (false). What arrived is appended to `received`, if given.
  bool closedByServer(std::chrono::milliseconds within, std::string* received = nullptr) {
    const auto saved = deadline_;
    deadline_ = within;
    std::string data(static_cast<const char*>(buffer_.data().data()), buffer_.size());
    buffer_.consume(buffer_.size());
    bool closed = false;
    for (;;) {
      char chunk[4096];
      std::size_t n = 0;
      const auto ec = run([&](auto done) {
        stream_.async_read_some(boost::asio::buffer(chunk), [&n, done](auto error, std::size_t k) {
          n = k;
          done(error, k);
        });
      });
      data.append(chunk, n);
      if (!ec) continue;
      closed = ec != boost::beast::error::timeout;
      break;
    }
    deadline_ = saved;
    if (received != nullptr) *received += data;
    return closed;
  }

 private:
  // Runs one asynchronous operation to completion or to the deadline.
  template <typename Start>
  boost::system::error_code run(Start&& start) {
    boost::system::error_code result = boost::asio::error::would_block;
    stream_.expires_after(deadline_);
    start([&result](boost::system::error_code ec, auto&&...) { result = ec; });
    ioc_.restart();
    ioc_.run();
    return result;
  }

  boost::asio::io_context ioc_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::chrono::milliseconds deadline_;
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
