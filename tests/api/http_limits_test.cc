// What one client can make the server hold: the read buffer against a chunked body with an
// endless chunk extension, the connection slots against many connections from one address, and
// the error path of a request whose target has no path.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "api/http_server.h"
#include "tests/api/api_test_support.h"
#include "tests/api/http_client.h"

namespace kfaild::api {
namespace {

using testing::ApiHarness;
using testing::HttpConnection;
using Millis = std::chrono::milliseconds;

long residentKiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// A blocking TCP socket to 127.0.0.1:port from `source` (another loopback address is another
// peer to the server).
class RawSocket {
 public:
  RawSocket(std::uint16_t port, const char* source = "127.0.0.1") : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    REQUIRE(fd_ >= 0);
    sockaddr_in from{};
    from.sin_family = AF_INET;
    ::inet_pton(AF_INET, source, &from.sin_addr);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof from) == 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0);
    timeval timeout{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  }
  ~RawSocket() { ::close(fd_); }
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;

  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      const auto sent = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (sent <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(sent));
    }
    return true;
  }
  // Everything until the peer closes, an error, the receive timeout, or `enough` is seen.
  std::string receive(std::string_view enough = {}) {
    std::string data;
    char chunk[4096];
    for (;;) {
      const auto got = ::recv(fd_, chunk, sizeof chunk, 0);
      if (got <= 0) break;
      data.append(chunk, static_cast<std::size_t>(got));
      if (!enough.empty() && data.find(enough) != std::string::npos) break;
    }
    return data;
  }

 private:
  int fd_;
};

TEST_CASE("a 1 GB chunk extension gets a 400 and leaves the server's memory flat",
          "[integration][api]") {
  ApiHarness api;
  const auto before = residentKiB();
  RawSocket client(api.port());
  REQUIRE(client.send("POST /api/v1/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n1;ext="));
  std::atomic<std::int64_t> sent{0};
  std::thread sender([&] {
    const std::string block(1024 * 1024, 'e');
    for (int i = 0; i < 1024 && client.send(block); ++i) sent += static_cast<std::int64_t>(block.size());
  });
  const auto answer = client.receive("\r\n\r\n");
  long peak = residentKiB();
  sender.join();
  peak = std::max(peak, residentKiB());
  INFO("sent " << sent.load() << " bytes of extension; RSS " << before << " KiB before, " << peak << " KiB at most");
  CHECK(answer.rfind("HTTP/1.1 400 ", 0) == 0);
  CHECK(answer.find("Connection: close") != std::string::npos);
  CHECK(peak - before < 16 * 1024);
  CHECK(api.get("/healthz").status == 200);
}

TEST_CASE("a chunk extension over 1 KiB is refused while the body is within the limit",
          "[integration][api]") {
  ApiHarness api;
  RawSocket client(api.port());
  REQUIRE(client.send("POST /api/v1/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n2;x=" + std::string(2000, 'e') + "\r\n{}\r\n0\r\n\r\n"));
  const auto answer = client.receive("}");
  CHECK(answer.rfind("HTTP/1.1 400 ", 0) == 0);
  CHECK(answer.find("chunk header") != std::string::npos);

  RawSocket fine(api.port());
  REQUIRE(fine.send("POST /api/v1/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n2;x=short\r\n{}\r\n0\r\n\r\n"));
  CHECK(fine.receive("}").rfind("HTTP/1.1 200 ", 0) == 0);
}

TEST_CASE("many connections from one address leave slots for /healthz from another",
          "[integration][api][reliability]") {
  auto options = ApiHarness::defaultOptions();
  options.max_connections = 8;
  options.max_connections_per_peer = 3;
  options.read_timeout = Millis(20'000);
  ApiHarness api(options);
  std::vector<std::unique_ptr<HttpConnection>> crowd;
  for (int i = 0; i < 8; ++i) crowd.push_back(std::make_unique<HttpConnection>(api.port()));
  int open = 0;
  int closed = 0;
  for (auto& connection : crowd) {
    if (connection->closedByServer(Millis(300))) {
      ++closed;
    } else {
      ++open;
    }
  }
  CHECK(open == 3);
  CHECK(closed == 5);
  RawSocket operator_client(api.port(), "127.0.0.2");
  REQUIRE(operator_client.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  CHECK(operator_client.receive("\"ok\"}").rfind("HTTP/1.1 200 ", 0) == 0);
}

TEST_CASE("an oversized header on a target without a path gets a 431 with an empty instance",
          "[integration][api]") {
  ApiHarness api;
  RawSocket client(api.port());
  REQUIRE(client.send("GET ?a=b HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + std::string(20'000, 'p') +
                      "\r\n\r\n"));
  const auto answer = client.receive("}");
  CHECK(answer.rfind("HTTP/1.1 431 ", 0) == 0);
  CHECK(answer.find("\"instance\":\"\"") != std::string::npos);
}

}  // namespace
}  // namespace kfaild::api
