#include "api/http_server.h"

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/errc.h"
#include "tests/api/api_test_support.h"
#include "tests/api/http_client.h"
#include "tests/support/reliability_record.h"

namespace kfaild::api::http_server_test {
namespace {

using testing::ApiHarness;
using testing::HttpConnection;
using testing::HttpRequestSpec;
using Millis = std::chrono::milliseconds;

ServerOptions ephemeral() {
  ServerOptions options;
  options.port = 0;
  return options;
}

// Sends spdlog's output to a string while alive, at debug level.
class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()), level_(spdlog::get_level()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_);
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("captured", sink));
    spdlog::set_level(spdlog::level::debug);
  }
  ~CapturedLog() {
    spdlog::set_default_logger(previous_);
    spdlog::set_level(level_);
  }
  std::string text() {
    spdlog::default_logger()->flush();
    return stream_.str();
  }

 private:
  std::ostringstream stream_;
  std::shared_ptr<spdlog::logger> previous_;
  spdlog::level::level_enum level_;
};

TEST_CASE("the server answers /healthz on an ephemeral port", "[integration][api]") {
  ApiHarness api;
  REQUIRE(api.port() != 0);
  const auto reply = api.get("/healthz");
  CHECK(reply.status == 200);
  CHECK(reply.header("Content-Type") == "application/json");
  CHECK(reply.json() == nlohmann::json{{"status", "ok"}});
}

TEST_CASE("two pipelined requests on one connection are answered in order", "[integration][api]") {
  ApiHarness api;
  HttpConnection connection(api.port());
  // Both requests leave before either response is read.
  connection.send({"GET", "/api/v1/clusters", "", {}});
  connection.send({"GET", "/healthz", "", {}});
  const auto first = connection.receive();
  const auto second = connection.receive();
  CHECK(first.status == 200);
  CHECK(first.json()["items"][0]["name"] == "lab");
  CHECK(first.keep_alive);
  CHECK(second.status == 200);
  CHECK(second.json() == nlohmann::json{{"status", "ok"}});
  // And the connection is still good for a third.
  CHECK(connection.get("/healthz").status == 200);
}

TEST_CASE("a HEAD response has the GET length but no body and the connection goes on",
          "[integration][api]") {
  ApiHarness api;
  HttpConnection connection(api.port());
  const auto head = connection.request({"HEAD", "/healthz", "", {}});
  CHECK(head.status == 200);
  CHECK(head.header("Content-Length") == std::to_string(std::string(R"({"status":"ok"})").size()));
  CHECK(head.body.empty());
  CHECK(connection.get("/healthz").json() == nlohmann::json{{"status", "ok"}});
}

TEST_CASE("a request body over the limit gets a 413 problem and the connection closes",
          "[integration][api][reliability]") {
  ApiHarness api;
  HttpConnection connection(api.port());
  const auto reply =
      connection.request({"POST", "/api/v1/echo", std::string(2 * 1024 * 1024, 'x'), {}});
  CHECK(reply.status == 413);
  CHECK(reply.header("Content-Type") == "application/problem+json");
  const auto body = reply.json();
  CHECK(body["type"] == "urn:kfaild:problem:payload-too-large");
  CHECK(body["detail"] == "the request body exceeds the limit of 1048576 bytes");
  CHECK(body["instance"] == "/api/v1/echo");
  CHECK_FALSE(reply.keep_alive);
  CHECK(connection.closedByServer(Millis(5000)));
}

TEST_CASE("a body within the limit reaches the handler", "[integration][api]") {
  ApiHarness api;
  const auto reply = testing::httpRequest(
      api.port(),
      {"POST", "/api/v1/echo", std::string(1000, 'y'), {{"Content-Type", "application/json"}}});
  CHECK(reply.status == 200);
  CHECK(reply.json()["echo"] == std::string(1000, 'y'));
}

TEST_CASE("header fields over the limit get a 431 problem", "[integration][api]") {
  ApiHarness api;
  HttpConnection connection(api.port());
  const auto reply =
      connection.request({"GET", "/healthz", "", {{"X-Padding", std::string(20'000, 'p')}}});
  CHECK(reply.status == 431);
  CHECK(reply.json()["type"] == "urn:kfaild:problem:headers-too-large");
  CHECK(connection.closedByServer(Millis(5000)));
}

TEST_CASE("mutating requests need the configured bearer token", "[integration][api][reliability]") {
  AccessOptions access;
  access.operator_token = "s3cret-token-value";
  CapturedLog log;
  ApiHarness api(ephemeral(), access);

  SECTION("without a token") {
    const auto reply = testing::httpRequest(api.port(), {"POST", "/api/v1/echo", "hi", {}});
    CHECK(reply.status == 401);
    CHECK(reply.header("WWW-Authenticate") == "Bearer realm=\"kfaild\"");
    CHECK(reply.header("Content-Type") == "application/problem+json");
    CHECK(reply.json()["detail"] ==
          "POST needs the operator token in an \"Authorization: Bearer <token>\" header");
  }
  SECTION("with a wrong token") {
    const auto reply = testing::httpRequest(
        api.port(),
        {"POST", "/api/v1/echo", "hi", {{"Authorization", "Bearer s3cret-token-valuf"}}});
    CHECK(reply.status == 401);
    CHECK(reply.header("WWW-Authenticate") == "Bearer realm=\"kfaild\", error=\"invalid_token\"");
  }
  SECTION("with a token of another scheme") {
    const auto reply = testing::httpRequest(
        api.port(), {"POST", "/api/v1/echo", "hi", {{"Authorization", "Basic czNjcmV0"}}});
    CHECK(reply.status == 401);
  }
  SECTION("with a prefix of the token") {
    const auto reply = testing::httpRequest(
        api.port(), {"POST", "/api/v1/echo", "hi", {{"Authorization", "Bearer s3cret"}}});
    CHECK(reply.status == 401);
  }
  SECTION("with the right token, any case of the scheme") {
    const auto reply = testing::httpRequest(
        api.port(),
        {"POST",
         "/api/v1/echo",
         "hi",
         {{"Authorization", "bearer s3cret-token-value"}, {"Content-Type", "application/json"}}});
    CHECK(reply.status == 200);
    CHECK(reply.json()["echo"] == "hi");
  }
  SECTION("reads need no token") {
    CHECK(api.get("/api/v1/clusters").status == 200);
  }
  api.server().stop();
  const auto text = log.text();
  CHECK(text.find("s3cret") == std::string::npos);
  CHECK(text.find("Authorization") == std::string::npos);
}

TEST_CASE("every request gets one access log line with method and path and status and duration",
          "[integration][api]") {
  CapturedLog log;
  ApiHarness api;
  CHECK(api.get("/api/v1/clusters/lab/gaps?limit=5").status == 200);
  CHECK(api.get("/nope").status == 404);
  api.server().stop();
  const auto text = log.text();
  INFO(text);
  CHECK(text.find("http: GET /api/v1/clusters/lab/gaps 200 ") != std::string::npos);
  CHECK(text.find("http: GET /nope 404 ") != std::string::npos);
  // The query is not logged.
  CHECK(text.find("limit=5") == std::string::npos);
}

TEST_CASE("the server stops promptly with an idle connection open", "[integration][api]") {
  ApiHarness api;
  HttpConnection idle(api.port());
  CHECK(idle.get("/healthz").status == 200);  // now idle in keep-alive
  HttpConnection silent(api.port());          // never sent anything
  const auto started = std::chrono::steady_clock::now();
  api.server().stop();
  const auto took = std::chrono::steady_clock::now() - started;
  CHECK(took < Millis(1000));
  CHECK(idle.closedByServer(Millis(2000)));
  CHECK(silent.closedByServer(Millis(2000)));
  CHECK_THROWS(HttpConnection(api.port(), Millis(500)).get("/healthz"));
}

TEST_CASE("a client that is too slow to send its request is disconnected",
          "[integration][api][reliability]") {
  auto options = ephemeral();
  options.read_timeout = Millis(300);
  ApiHarness api(options);
  HttpConnection slow(api.port());
  slow.writeRaw("GET /healthz HTTP/1.1\r\nHost: x\r\n");  // and never the blank line
  const auto started = std::chrono::steady_clock::now();
  CHECK(slow.closedByServer(Millis(3000)));
  CHECK(std::chrono::steady_clock::now() - started < Millis(2000));
  CHECK(api.get("/healthz").status == 200);
}

TEST_CASE("connections beyond the cap are closed at once", "[integration][api][reliability]") {
  auto options = ephemeral();
  options.max_connections = 2;
  ApiHarness api(options);
  auto first = std::make_unique<HttpConnection>(api.port());
  HttpConnection second(api.port());
  CHECK(first->get("/healthz").status == 200);
  CHECK(second.get("/healthz").status == 200);
  HttpConnection third(api.port());
  CHECK(third.closedByServer(Millis(2000)));
  // A slot freed is a slot usable again.
  first.reset();
  bool served = false;
  for (int attempt = 0; attempt < 50 && !served; ++attempt) {
    try {
      served = HttpConnection(api.port(), Millis(500)).get("/healthz").status == 200;
    } catch (const std::exception&) {
      std::this_thread::sleep_for(Millis(20));
    }
  }
  CHECK(served);
}

// Resident memory of this process (the server runs in it), in KiB.
long residentKiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

TEST_CASE(
    "hundreds of idle connections, slow clients and a 2,000-request pipeline leave the server "
    "responsive and its memory bounded",
    "[integration][api][reliability]") {
  kfaild::testing::Record record("http-connections");
  auto options = ephemeral();
  options.read_timeout = Millis(1500);
  // Every client here is on loopback: the per-peer cap is not what this test measures.
  options.max_connections_per_peer = options.max_connections;
  ApiHarness api(options);
  const auto rss_before = residentKiB();

  // 400 connections that send nothing, 50 that stop half-way through a request line.
  std::vector<std::unique_ptr<HttpConnection>> idle;
  for (int i = 0; i < 400; ++i) idle.push_back(std::make_unique<HttpConnection>(api.port()));
  std::vector<std::unique_ptr<HttpConnection>> slow;
  for (int i = 0; i < 50; ++i) {
    slow.push_back(std::make_unique<HttpConnection>(api.port()));
    slow.back()->writeRaw("GET /healthz HT");
  }
  // A newcomer is answered at once.
  const auto asked = std::chrono::steady_clock::now();
  CHECK(api.get("/healthz").status == 200);
  const auto answer_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - asked).count();
  CHECK(answer_ms < 500);

  // One connection sends 2,000 requests in one write, then reads the answers in order.
  std::string pipeline;
  constexpr int kPipelined = 2000;
  for (int i = 0; i < kPipelined; ++i)
    pipeline += "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  HttpConnection pipelined(api.port(), Millis(30'000));
  std::thread writer([&] { pipelined.writeRaw(pipeline); });
  int answered = 0;
  for (int i = 0; i < kPipelined; ++i) answered += pipelined.receive().status == 200 ? 1 : 0;
  writer.join();
  CHECK(answered == kPipelined);
  const auto rss_loaded = residentKiB();

  // After the read timeout every idle and slow connection has been closed by the server.
  int closed = 0;
  for (auto& c : idle) closed += c->closedByServer(Millis(3000)) ? 1 : 0;
  for (auto& c : slow) closed += c->closedByServer(Millis(3000)) ? 1 : 0;
  CHECK(closed == 450);
  CHECK(api.get("/healthz").status == 200);
  const auto growth_kib = rss_loaded - rss_before;
  CHECK(growth_kib < 32 * 1024);
  record["idle_connections"] = 400;
  record["slow_clients"] = 50;
  record["closed_by_read_timeout"] = closed;
  record["newcomer_answer_ms"] = answer_ms;
  record["pipelined_requests"] = kPipelined;
  record["pipelined_answered"] = answered;
  record["rss_growth_kib"] = growth_kib;
  record.completed();
}

TEST_CASE("a request that is not HTTP gets a 400 problem", "[integration][api]") {
  ApiHarness api;
  HttpConnection connection(api.port());
  connection.writeRaw("HELLO THERE\r\n\r\n");
  std::string received;
  CHECK(connection.closedByServer(Millis(3000), &received));
  CHECK(received.rfind("HTTP/1.1 400 Bad Request\r\n", 0) == 0);
  CHECK(received.find("urn:kfaild:problem:malformed-request") != std::string::npos);
}

TEST_CASE("a target that is not a path gets a 400 problem and the connection stays usable",
          "[integration][api]") {
  ApiHarness api;
  HttpConnection connection(api.port());
  const auto reply = connection.get("/api/v1/clusters%zz");
  CHECK(reply.status == 400);
  CHECK(reply.json()["type"] == "urn:kfaild:problem:malformed-request");
  CHECK(connection.get("/healthz").status == 200);
}

TEST_CASE("random bytes never bring the server down", "[integration][api][reliability]") {
  ApiHarness api;
  std::mt19937 random(20261130);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> length(1, 4000);
  const std::vector<std::string> prefixes = {
      "", "GET ", "GET / HTTP/1.1\r\n", "POST /api/v1/echo HTTP/1.1\r\nContent-Length: 10\r\n",
      "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"};
  for (int round = 0; round < 60; ++round) {
    HttpConnection connection(api.port(), Millis(2000));
    std::string bytes = prefixes[static_cast<std::size_t>(round) % prefixes.size()];
    const int n = length(random);
    for (int i = 0; i < n; ++i) bytes.push_back(static_cast<char>(byte(random)));
    try {
      connection.writeRaw(bytes);
    } catch (const std::exception&) {
      // The server may close first; that is its right.
    }
  }
  const auto reply = api.get("/healthz");
  CHECK(reply.status == 200);
}

TEST_CASE("start() reports the address it could not bind", "[integration][api]") {
  ApiHarness api;
  Router router;
  ServerOptions options;
  options.port = api.port();
  HttpServer second(options, router);
  const auto started = second.start();
  REQUIRE_FALSE(started.ok());
  CHECK(started.error().code == errc::listen_failed);
  CHECK(started.error().message.find("127.0.0.1:" + std::to_string(api.port())) !=
        std::string::npos);
}

TEST_CASE("a non-loopback address needs a token", "[integration][api][reliability]") {
  Router router;  // no access options: auth none
  ServerOptions options;
  options.host = "0.0.0.0";
  options.port = 0;
  HttpServer open(options, router);
  const auto refused = open.start();
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == errc::invalid_options);
  CHECK(refused.error().message.rfind("auth: a token is required to listen on 0.0.0.0:0", 0) == 0);

  AccessOptions access;
  access.operator_token = "a-long-enough-token";
  router.setAccess(AccessPolicy(access));
  HttpServer guarded(options, router);
  CHECK(guarded.start().ok());
  guarded.stop();
}

TEST_CASE("options out of range are refused with the option named", "[unit][api][reliability]") {
  ServerOptions options;
  options.threads = 0;
  CHECK(validateOptions(options).error().message.rfind("threads: ", 0) == 0);
  options = {};
  options.max_connections = 0;
  CHECK(validateOptions(options).error().message.rfind("max_connections: ", 0) == 0);
  options = {};
  options.read_timeout = Millis(0);
  CHECK(validateOptions(options).error().message.rfind("read_timeout: ", 0) == 0);
  CHECK(validateOptions(ServerOptions{}).ok());
}

}  // namespace
}  // namespace kfaild::api::http_server_test
