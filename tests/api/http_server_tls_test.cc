// The HTTP server over TLS: HTTPS requests with keep-alive and pipelining, the limits and
// timeouts of the plain server inside TLS, certificates refused either way, client certificates,
// and TLS files that cannot be used refused at start with their option named.

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "api/errc.h"
#include "api/http_server.h"
#include "tests/api/api_test_support.h"
#include "tests/api/http_client.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_certs.h"

namespace kfaild::api::http_server_tls_test {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using testing::ApiHarness;
using testing::HttpConnection;
using testing::HttpReply;
using testing::HttpRequestSpec;
using Millis = std::chrono::milliseconds;

// The certificates of one test, in a directory of their own.
struct Certificates {
  kfaild::testing::TempDir dir;
  kfaild::testing::TestCertificates files{dir.path()};
};

ServerOptions tlsOptions(const kfaild::testing::TestCertificates& certs) {
  ServerOptions options;
  options.port = 0;
  options.tls.cert_file = certs.serverCert();
  options.tls.key_file = certs.serverKey();
  return options;
}

struct ClientIdentity {
  std::string ca_file;
  std::string cert_file;  // empty: no client certificate
  std::string key_file;
};

// An HTTPS/1.1 connection to 127.0.0.1 that verifies the server's certificate against
// `identity.ca_file` and the address 127.0.0.1. Every operation has a deadline; failures throw
// std::runtime_error with the step and OpenSSL's reason.
class HttpsConnection {
 public:
  HttpsConnection(std::uint16_t port, const ClientIdentity& identity,
                  Millis deadline = std::chrono::seconds(10))
      : context_(ssl::context::tls_client), deadline_(deadline) {
    context_.load_verify_file(identity.ca_file);
    context_.set_verify_mode(ssl::verify_peer);
    if (!identity.cert_file.empty()) {
      context_.use_certificate_chain_file(identity.cert_file);
      context_.use_private_key_file(identity.key_file, ssl::context::pem);
    }
    stream_ = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(ioc_, context_);
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(stream_->native_handle()), "127.0.0.1");
    const asio::ip::tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), port);
    auto ec =
        run([&](auto done) { beast::get_lowest_layer(*stream_).async_connect(endpoint, done); });
    if (ec) throw std::runtime_error("connect: " + ec.message());
    ec = run([&](auto done) { stream_->async_handshake(ssl::stream_base::client, done); });
    if (ec) throw std::runtime_error("handshake: " + ec.message());
  }

  void send(const HttpRequestSpec& spec) {
    http::request<http::string_body> request;
    request.method_string(beast::string_view(spec.method.data(), spec.method.size()));
    request.target(beast::string_view(spec.target.data(), spec.target.size()));
    request.version(11);
    request.set(http::field::host, "127.0.0.1");
    for (const auto& [name, value] : spec.headers) {
      request.set(beast::string_view(name.data(), name.size()), value);
    }
    request.body() = spec.body;
    request.prepare_payload();
    const auto ec = run([&](auto done) { http::async_write(*stream_, request, done); });
    if (ec) throw std::runtime_error("write: " + ec.message());
  }

  HttpReply receive() {
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    const auto ec = run([&](auto done) { http::async_read(*stream_, buffer_, parser, done); });
    if (ec) throw std::runtime_error("read: " + ec.message());
    HttpReply reply;
    reply.status = static_cast<int>(parser.get().result_int());
    reply.body = parser.get().body();
    reply.keep_alive = parser.get().keep_alive();
    for (const auto& field : parser.get()) {
      reply.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    return reply;
  }

  HttpReply request(const HttpRequestSpec& spec) {
    send(spec);
    return receive();
  }
  HttpReply get(const std::string& target) { return request({"GET", target, "", {}}); }

  void writeRaw(std::string_view bytes) {
    const auto ec = run([&](auto done) {
      asio::async_write(*stream_, asio::buffer(bytes.data(), bytes.size()), done);
    });
    if (ec) throw std::runtime_error("raw write: " + ec.message());
  }

  // True when the server ends the connection (close_notify or TCP close) within `within`.
  bool closedByServer(Millis within) {
    const auto saved = deadline_;
    deadline_ = within;
    bool closed = false;
    for (;;) {
      char chunk[4096];
      const auto ec = run([&](auto done) { stream_->async_read_some(asio::buffer(chunk), done); });
      if (!ec) continue;
      closed = ec != beast::error::timeout;
      break;
    }
    deadline_ = saved;
    return closed;
  }

 private:
  template <typename Start>
  boost::system::error_code run(Start&& start) {
    boost::system::error_code result = asio::error::would_block;
    beast::get_lowest_layer(*stream_).expires_after(deadline_);
    start([&result](boost::system::error_code ec, auto&&...) { result = ec; });
    ioc_.restart();
    ioc_.run();
    return result;
  }

  asio::io_context ioc_;
  ssl::context context_;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> stream_;
  beast::flat_buffer buffer_;
  Millis deadline_;
};

std::string failureOf(const std::function<void()>& attempt) {
  try {
    attempt();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("an HTTPS request is answered, and keep-alive and pipelining work inside TLS",
          "[integration][api]") {
  Certificates certs;
  ApiHarness api(tlsOptions(certs.files));
  HttpsConnection connection(api.port(), {certs.files.ca(), "", ""});
  const auto health = connection.get("/healthz");
  CHECK(health.status == 200);
  CHECK(health.json() == nlohmann::json{{"status", "ok"}});
  CHECK(health.keep_alive);
  connection.send({"GET", "/api/v1/clusters", "", {}});
  connection.send({"GET", "/healthz", "", {}});
  const auto first = connection.receive();
  const auto second = connection.receive();
  CHECK(first.status == 200);
  CHECK(first.json()["items"][0]["name"] == "lab");
  CHECK(second.status == 200);
  CHECK(second.json() == nlohmann::json{{"status", "ok"}});
}

TEST_CASE("a client that trusts another CA refuses the server's certificate",
          "[integration][api]") {
  Certificates certs;
  ApiHarness api(tlsOptions(certs.files));
  const auto failure =
      failureOf([&] { HttpsConnection(api.port(), {certs.files.otherCa(), "", ""}); });
  INFO(failure);
  CHECK(failure.find("handshake: certificate verify failed") == 0);
  CHECK(HttpsConnection(api.port(), {certs.files.ca(), "", ""}).get("/healthz").status == 200);
}

TEST_CASE("plain HTTP to the TLS port is disconnected without an answer and the server goes on",
          "[integration][api]") {
  Certificates certs;
  ApiHarness api(tlsOptions(certs.files));
  HttpConnection plain(api.port());
  plain.writeRaw("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  std::string received;
  CHECK(plain.closedByServer(Millis(3000), &received));
  CHECK(received.find("HTTP/1.1") == std::string::npos);
  CHECK(received.find("status") == std::string::npos);
  CHECK(HttpsConnection(api.port(), {certs.files.ca(), "", ""}).get("/healthz").status == 200);
}

TEST_CASE("over TLS a body over the limit gets 413 and header fields over the limit get 431",
          "[integration][api]") {
  Certificates certs;
  ApiHarness api(tlsOptions(certs.files));
  {
    HttpsConnection connection(api.port(), {certs.files.ca(), "", ""});
    const auto reply =
        connection.request({"POST", "/api/v1/echo", std::string(2 * 1024 * 1024, 'x'), {}});
    CHECK(reply.status == 413);
    CHECK(reply.json()["type"] == "urn:kfaild:problem:payload-too-large");
    CHECK_FALSE(reply.keep_alive);
    CHECK(connection.closedByServer(Millis(5000)));
  }
  {
    HttpsConnection connection(api.port(), {certs.files.ca(), "", ""});
    const auto reply =
        connection.request({"GET", "/healthz", "", {{"X-Padding", std::string(20'000, 'p')}}});
    CHECK(reply.status == 431);
    CHECK(reply.json()["type"] == "urn:kfaild:problem:headers-too-large");
    CHECK(connection.closedByServer(Millis(5000)));
  }
  HttpsConnection after(api.port(), {certs.files.ca(), "", ""});
  const auto echo = after.request(
      {"POST", "/api/v1/echo", std::string(1000, 'y'), {{"Content-Type", "application/json"}}});
  CHECK(echo.status == 200);
  CHECK(echo.json()["echo"] == std::string(1000, 'y'));
}

TEST_CASE(
    "over TLS a client that never handshakes or sends half a request is disconnected "
    "after the read timeout",
    "[integration][api][reliability]") {
  Certificates certs;
  auto options = tlsOptions(certs.files);
  options.read_timeout = Millis(300);
  ApiHarness api(options);
  HttpConnection silent(api.port());  // TCP only: no ClientHello ever
  HttpsConnection slow(api.port(), {certs.files.ca(), "", ""});
  slow.writeRaw("GET /healthz HTTP/1.1\r\nHost: x\r\n");  // and never the blank line
  const auto started = std::chrono::steady_clock::now();
  CHECK(silent.closedByServer(Millis(3000)));
  CHECK(slow.closedByServer(Millis(3000)));
  CHECK(std::chrono::steady_clock::now() - started < Millis(2000));
  CHECK(HttpsConnection(api.port(), {certs.files.ca(), "", ""}).get("/healthz").status == 200);
}

TEST_CASE("over TLS connections beyond the cap are closed at once and the server stops promptly",
          "[integration][api][reliability]") {
  Certificates certs;
  auto options = tlsOptions(certs.files);
  options.max_connections = 2;
  ApiHarness api(options);
  const ClientIdentity trusted{certs.files.ca(), "", ""};
  auto first = std::make_unique<HttpsConnection>(api.port(), trusted);
  HttpsConnection second(api.port(), trusted);
  CHECK(first->get("/healthz").status == 200);
  CHECK(second.get("/healthz").status == 200);
  CHECK_FALSE(failureOf([&] { HttpsConnection(api.port(), trusted, Millis(2000)); }).empty());
  first.reset();
  bool served = false;
  for (int attempt = 0; attempt < 50 && !served; ++attempt) {
    try {
      served = HttpsConnection(api.port(), trusted, Millis(500)).get("/healthz").status == 200;
    } catch (const std::exception&) {
      std::this_thread::sleep_for(Millis(20));
    }
  }
  CHECK(served);

  const auto started = std::chrono::steady_clock::now();
  api.server().stop();
  CHECK(std::chrono::steady_clock::now() - started < Millis(1000));
  CHECK(second.closedByServer(Millis(2000)));
}

TEST_CASE("with a client CA the server requires a client certificate that CA signed",
          "[integration][api][reliability]") {
  Certificates certs;
  auto options = tlsOptions(certs.files);
  options.tls.client_ca_file = certs.files.ca();
  ApiHarness api(options);
  const auto& f = certs.files;

  SECTION("a client with its certificate is served") {
    HttpsConnection connection(api.port(), {f.ca(), f.clientCert(), f.clientKey()});
    CHECK(connection.get("/healthz").status == 200);
    CHECK(connection.get("/api/v1/clusters").status == 200);
  }
  SECTION("a client without a certificate gets no answer") {
    // TLS 1.3: the client's handshake ends before the server has checked it; the refusal
    // arrives as an alert instead of the answer.
    const auto failure = failureOf([&] {
      HttpsConnection connection(api.port(), {f.ca(), "", ""});
      connection.get("/healthz");
    });
    INFO(failure);
    CHECK(failure.find("certificate required") != std::string::npos);
  }
  SECTION("a client with a certificate of another CA gets no answer") {
    const auto failure = failureOf([&] {
      HttpsConnection connection(api.port(), {f.ca(), f.otherClientCert(), f.otherClientKey()});
      connection.get("/healthz");
    });
    INFO(failure);
    CHECK(failure.find("unknown ca") != std::string::npos);
  }
}

TEST_CASE("TLS files that cannot be used stop start() with the option named",
          "[integration][api]") {
  Certificates certs;
  Router router;
  const auto startWith = [&](ServerOptions options) {
    options.port = 0;
    HttpServer server(options, router);
    return server.start();
  };
  {
    auto options = tlsOptions(certs.files);
    options.tls.cert_file = (certs.dir / "missing.pem").string();
    const auto started = startWith(options);
    REQUIRE_FALSE(started);
    CHECK(started.error().code == errc::invalid_options);
    INFO(started.error().message);
    CHECK(started.error().message.find("tls.cert_file: cannot use " + options.tls.cert_file +
                                       ": ") == 0);
  }
  {
    auto options = tlsOptions(certs.files);
    options.tls.key_file = certs.files.clientKey();  // a key, but not the certificate's
    const auto started = startWith(options);
    REQUIRE_FALSE(started);
    INFO(started.error().message);
    CHECK(started.error().message ==
          "tls.key_file: cannot use " + options.tls.key_file + ": key values mismatch");
  }
  {
    auto options = tlsOptions(certs.files);
    options.tls.key_file = certs.files.serverCert();  // a certificate where the key belongs
    const auto started = startWith(options);
    REQUIRE_FALSE(started);
    CHECK(started.error().message ==
          "tls.key_file: cannot use " + options.tls.key_file +
              ": not a PEM file of the expected kind (an unencrypted key, a certificate)");
  }
  {
    auto options = tlsOptions(certs.files);
    options.tls.client_ca_file = certs.files.serverKey();  // no certificate in it
    const auto started = startWith(options);
    REQUIRE_FALSE(started);
    CHECK(started.error().message.find("tls.client_ca_file: ") == 0);
  }
  {
    auto options = tlsOptions(certs.files);
    options.tls.cert_file.clear();
    CHECK(validateOptions(options).error().message == "tls.cert_file: required with tls.key_file");
    options = ServerOptions{};
    options.tls.client_ca_file = certs.files.ca();
    CHECK(validateOptions(options).error().message ==
          "tls.client_ca_file: needs tls.cert_file and tls.key_file");
  }
}

}  // namespace
}  // namespace kfaild::api::http_server_tls_test
