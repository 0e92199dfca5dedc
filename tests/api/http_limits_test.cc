// What one client can make the server hold: the read buffer against a chunked body with an
// endless chunk extension, the body of a change without a token, the connection slots against
// many connections from one address or one IPv6 /64, and the error path of a request whose
// target has no path.

#include "api/http_limits.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "api/http_server.h"
#include "tests/api/api_test_support.h"
#include "tests/api/http_client.h"

namespace kfaild::api::http_limits_test {
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
  RawSocket(std::uint16_t port, const char* source = "127.0.0.1")
      : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
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
  REQUIRE(client.send(
      "POST /api/v1/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n1;ext="));
  std::atomic<std::int64_t> sent{0};
  std::thread sender([&] {
    const std::string block(1024 * 1024, 'e');
    for (int i = 0; i < 1024 && client.send(block); ++i)
      sent += static_cast<std::int64_t>(block.size());
  });
  const auto answer = client.receive("\r\n\r\n");
  long peak = residentKiB();
  sender.join();
  peak = std::max(peak, residentKiB());
  INFO("sent " << sent.load() << " bytes of extension; RSS " << before << " KiB before, " << peak
               << " KiB at most");
  CHECK(answer.rfind("HTTP/1.1 400 ", 0) == 0);
  CHECK(answer.find("Connection: close") != std::string::npos);
  CHECK(peak - before < 16 * 1024);
  CHECK(api.get("/healthz").status == 200);
}

TEST_CASE("a chunk extension over 1 KiB is refused while the body is within the limit",
          "[integration][api]") {
  ApiHarness api;
  RawSocket client(api.port());
  REQUIRE(client.send(
      "POST /api/v1/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n2;x=" +
      std::string(2000, 'e') + "\r\n{}\r\n0\r\n\r\n"));
  const auto answer = client.receive("}");
  CHECK(answer.rfind("HTTP/1.1 400 ", 0) == 0);
  CHECK(answer.find("chunk header") != std::string::npos);

  RawSocket fine(api.port());
  REQUIRE(fine.send(
      "POST /api/v1/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
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
  REQUIRE(client.send("GET ?a=b HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " +
                      std::string(20'000, 'p') + "\r\n\r\n"));
  const auto answer = client.receive("}");
  CHECK(answer.rfind("HTTP/1.1 431 ", 0) == 0);
  CHECK(answer.find("\"instance\":\"\"") != std::string::npos);
}

TEST_CASE(
    "an IPv6 peer is counted by its /64, an IPv4 peer and an IPv4-mapped one by their address",
    "[unit][api][security]") {
  CHECK(peerBucket("192.0.2.1") == "192.0.2.1");
  CHECK(peerBucket("::ffff:192.0.2.1") == "192.0.2.1");
  CHECK(peerBucket("2001:db8:1:2:aaaa:bbbb:cccc:dddd") == "2001:db8:1:2::/64");
  CHECK(peerBucket("2001:db8:1:2::5") == "2001:db8:1:2::/64");
  CHECK(peerBucket("2001:db8:1:3::5") == "2001:db8:1:3::/64");
  CHECK(peerBucket("::1") == "::/64");
  CHECK(peerBucket("fe80::1%2") == "fe80::/64%2");
  CHECK(peerBucket("-") == "-");

  PeerConnections peers(3);
  for (const char* address : {"2001:db8::a", "2001:db8::b", "2001:db8::ffff:1"}) {
    CHECK(peers.admit(address) == std::optional<std::string>("2001:db8::/64"));
  }
  CHECK_FALSE(peers.admit("2001:db8::c"));
  CHECK(peers.admit("2001:db8:0:1::a"));  // the next /64 is another peer
  CHECK(peers.admit("192.0.2.1"));
  CHECK(peers.admit("::ffff:192.0.2.1"));
  CHECK(peers.admit("192.0.2.1"));
  CHECK_FALSE(peers.admit("::ffff:192.0.2.1"));
  CHECK(peers.admit("192.0.2.2"));
  CHECK(peers.open("2001:db8::1234") == 3);
  peers.release("2001:db8::/64");
  CHECK(peers.admit("2001:db8::d"));
}

bool have(const std::string& program) {
  return std::system(("command -v " + program + " >/dev/null 2>&1").c_str()) == 0;
}

// A connection from `source` to `destination`:`port`; whether the server closed it within
// 300 ms. The socket stays open in `fds`.
bool closedByServer(const char* source, const char* destination, std::uint16_t port,
                    std::vector<int>& fds) {
  const bool v6 = std::string(source).find(':') != std::string::npos;
  const int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
  fds.push_back(fd);
  sockaddr_storage from{};
  sockaddr_storage to{};
  socklen_t size = 0;
  if (v6) {
    auto& a = reinterpret_cast<sockaddr_in6&>(from);
    auto& b = reinterpret_cast<sockaddr_in6&>(to);
    a.sin6_family = b.sin6_family = AF_INET6;
    ::inet_pton(AF_INET6, source, &a.sin6_addr);
    ::inet_pton(AF_INET6, destination, &b.sin6_addr);
    b.sin6_port = htons(port);
    size = sizeof(sockaddr_in6);
  } else {
    auto& a = reinterpret_cast<sockaddr_in&>(from);
    auto& b = reinterpret_cast<sockaddr_in&>(to);
    a.sin_family = b.sin_family = AF_INET;
    ::inet_pton(AF_INET, source, &a.sin_addr);
    ::inet_pton(AF_INET, destination, &b.sin_addr);
    b.sin_port = htons(port);
    size = sizeof(sockaddr_in);
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), size) != 0) return true;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&to), size) != 0) return true;
  pollfd readable{fd, POLLIN, 0};
  if (::poll(&readable, 1, 300) <= 0) return false;
  char byte = 0;
  return ::recv(fd, &byte, 1, 0) <= 0;
}

TEST_CASE("connections from several addresses of one IPv6 /64 share one peer's slots",
          "[integration][api][security]") {
  // Addresses of a /64 exist only in a network namespace of the test's own: a thread moves to
  // a new one, and the server's threads, started from it, live there too.
  if (::geteuid() != 0 || !have("ip")) {
    WARN("not run: needs root and ip");
    return;
  }
  std::string failure;
  std::vector<bool> closed;
  std::thread in_namespace([&] {
    if (::unshare(CLONE_NEWNET) != 0) {
      failure = "unshare(CLONE_NEWNET) failed";
      return;
    }
    std::string setup = "ip link set lo up";
    for (const char* address : {"2001:db8::a", "2001:db8::b", "2001:db8::c", "2001:db8::d",
                                "2001:db8::e", "2001:db8:0:1::a"}) {
      setup += std::string(" && ip -6 addr add ") + address + "/64 dev lo nodad";
    }
    if (std::system(setup.c_str()) != 0) {
      failure = "cannot set up the namespace's addresses: " + setup;
      return;
    }
    AccessOptions access;
    access.operator_token = "operator-token-0123456789";
    access.listen_host = "::";
    Router router;
    router.setAccess(AccessPolicy(access));
    ServerOptions options;
    options.host = "::";  // dual-stack: IPv4 peers arrive as ::ffff:a.b.c.d
    options.port = 0;
    options.max_connections = 32;
    options.max_connections_per_peer = 3;
    HttpServer server(options, router);
    if (auto started = server.start(); !started) {
      failure = "start: " + started.error().describe();
      return;
    }
    std::vector<int> fds;
    for (const char* source :
         {"2001:db8::a", "2001:db8::b", "2001:db8::c", "2001:db8::d", "2001:db8::e"}) {
      closed.push_back(closedByServer(source, "::1", server.port(), fds));
    }
    closed.push_back(closedByServer("2001:db8:0:1::a", "::1", server.port(), fds));
    for (int i = 0; i < 4; ++i)
      closed.push_back(closedByServer("127.0.0.1", "127.0.0.1", server.port(), fds));
    closed.push_back(closedByServer("127.0.0.2", "127.0.0.1", server.port(), fds));
    server.stop();
    for (const int fd : fds) ::close(fd);
  });
  in_namespace.join();
  REQUIRE(failure.empty());
  // Three of one /64, the next /64 apart; IPv4 per address, as before.
  CHECK(closed == std::vector<bool>{false, false, false, true, true, false, false, false, false,
                                    true, false});
}

TEST_CASE(
    "a change with a 1 MiB body and no valid operator token is refused before its body is sent",
    "[integration][api][security]") {
  AccessOptions access;
  access.operator_token = "operator-token-0123456789";
  access.viewer_token = "viewer-token-0123456789";
  ApiHarness api(ApiHarness::defaultOptions(), access);
  const std::string body = "\"" + std::string(1024 * 1024 - 2, 'b') + "\"";
  const auto header = [&](const std::string& authorization) {
    return "POST /api/v1/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
           authorization + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  };

  SECTION("without a token: 401, and the connection closes") {
    RawSocket client(api.port());
    REQUIRE(client.send(header("")));
    const auto answer = client.receive("}");
    CHECK(answer.rfind("HTTP/1.1 401 ", 0) == 0);
    CHECK(answer.find("Connection: close") != std::string::npos);
    CHECK(answer.find("needs the operator token") != std::string::npos);
    client.send(body);  // the server drains what comes, then closes
    CHECK(client.receive().find("HTTP/1.1") == std::string::npos);
  }
  SECTION("with the viewer token: 403") {
    RawSocket client(api.port());
    REQUIRE(client.send(header("Authorization: Bearer viewer-token-0123456789\r\n")));
    CHECK(client.receive("}").rfind("HTTP/1.1 403 ", 0) == 0);
  }
  SECTION("with an unknown token: 401") {
    RawSocket client(api.port());
    REQUIRE(client.send(header("Authorization: Bearer operator-token-0123456780\r\n")));
    CHECK(client.receive("}").rfind("HTTP/1.1 401 ", 0) == 0);
  }
  SECTION("chunked, without a token: 401") {
    RawSocket client(api.port());
    REQUIRE(client.send(
        "POST /api/v1/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"));
    CHECK(client.receive("}").rfind("HTTP/1.1 401 ", 0) == 0);
  }
  SECTION("with the operator token the body is read and the change made") {
    RawSocket client(api.port());
    REQUIRE(client.send(header("Authorization: Bearer operator-token-0123456789\r\n")));
    REQUIRE(client.send(body));
    const auto answer = client.receive("\"}");
    CHECK(answer.rfind("HTTP/1.1 200 ", 0) == 0);
    CHECK(answer.size() > body.size());
  }
  CHECK(api.get("/healthz").status == 200);
}

}  // namespace
}  // namespace kfaild::api::http_limits_test
