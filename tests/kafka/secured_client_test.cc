// The own protocol client's TLS against an OpenSSL server in the test (certificates from
// tests/support/test_certs.h): the CA and the host name are checked as librdkafka checks them, a
// client certificate is presented, and a start-up refusal from librdkafka names the key it points
// at.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <string>
#include <thread>

#include "server/kafka/access_check.h"
#include "server/kafka/quorum.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_certs.h"

namespace secured_client_test {

using namespace kfaild;

namespace {

// Accepts connections on 0.0.0.0 (so 127.0.0.2 reaches it too), completes the TLS handshake with
// the server certificate (requiring a client certificate when `client_ca` is given), records
// whether the peer presented one, reads the first request and closes: the client then fails after
// TLS, waiting for its answer, not during the handshake.
class TlsServer {
 public:
  TlsServer(const testing::TestCertificates& certs, const std::string& client_ca = "") {
    ctx_ = SSL_CTX_new(TLS_server_method());
    REQUIRE(SSL_CTX_use_certificate_chain_file(ctx_, certs.serverCert().c_str()) == 1);
    REQUIRE(SSL_CTX_use_PrivateKey_file(ctx_, certs.serverKey().c_str(), SSL_FILETYPE_PEM) == 1);
    if (!client_ca.empty()) {
      REQUIRE(SSL_CTX_load_verify_locations(ctx_, client_ca.c_str(), nullptr) == 1);
      SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    }
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd_, 8) == 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~TlsServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
    SSL_CTX_free(ctx_);
  }

  std::uint16_t port() const { return port_; }
  bool sawClientCertificate() const { return client_cert_; }

 private:
  void serve() {
    while (!stop_) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      SSL* ssl = SSL_new(ctx_);
      SSL_set_fd(ssl, c);
      if (SSL_accept(ssl) == 1) {
        X509* peer = SSL_get1_peer_certificate(ssl);
        if (peer != nullptr) client_cert_ = true;
        X509_free(peer);
        char request[4096];
        SSL_read(ssl, request,
                 sizeof request);  // the client's first request, read so that the close is clean
        SSL_shutdown(ssl);
      }
      SSL_free(ssl);
      ::close(c);
    }
  }

  SSL_CTX* ctx_ = nullptr;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> client_cert_{false};
  std::thread thread_;
};

// An error after the handshake: the client sent its request and found the connection closed.
void checkAfterTls(const std::string& error) {
  CHECK_THAT(error, Catch::Contains("receive: "));
  CHECK_THAT(error, !Catch::Contains("TLS handshake"));
}

std::string describeError(const std::string& host, std::uint16_t port,
                          const std::map<std::string, std::string>& client) {
  kafka::QuorumClientOptions options;
  options.bootstrap = host + ":" + std::to_string(port);
  options.properties = client;
  options.timeout_ms = 3000;
  const auto quorum = kafka::describeQuorum(options);
  REQUIRE_FALSE(quorum);
  return quorum.error().message;
}

}  // namespace

TEST_CASE(
    "the own protocol client verifies the broker's certificate and host as librdkafka does, and "
    "presents its "
    "client certificate",
    "[integration]") {
  testing::TempDir dir;
  const testing::TestCertificates certs(dir / "certs");
  const std::map<std::string, std::string> ssl = {{"security.protocol", "SSL"},
                                                  {"ssl.ca.location", certs.ca()}};

  SECTION(
      "the CA that signed it and the host it names: TLS completes, the server's close is what "
      "fails") {
    TlsServer server(certs);
    checkAfterTls(describeError("127.0.0.1", server.port(), ssl));
  }
  SECTION("another CA: the handshake fails with OpenSSL's verification result") {
    TlsServer server(certs);
    auto other = ssl;
    other["ssl.ca.location"] = certs.otherCa();
    CHECK_THAT(
        describeError("127.0.0.1", server.port(), other),
        Catch::Contains(
            "TLS handshake: certificate verify failed: unable to get local issuer certificate"));
  }
  SECTION("an address the certificate does not name: refused, unless identification is off") {
    TlsServer server(certs);
    CHECK_THAT(describeError("127.0.0.2", server.port(), ssl),
               Catch::Contains("IP address mismatch"));
    auto lax = ssl;
    lax["ssl.endpoint.identification.algorithm"] = "none";
    checkAfterTls(describeError("127.0.0.2", server.port(), lax));
  }
  SECTION("a server that requires a client certificate gets the configured one") {
    TlsServer server(certs, certs.ca());
    auto mtls = ssl;
    mtls["ssl.certificate.location"] = certs.clientCert();
    mtls["ssl.key.location"] = certs.clientKey();
    checkAfterTls(describeError("127.0.0.1", server.port(), mtls));
    CHECK(server.sawClientCertificate());
  }
  SECTION("a CA file that cannot be read is named with OpenSSL's reason before anything connects") {
    auto missing = ssl;
    missing["ssl.ca.location"] = (dir / "nothing.pem").string();
    CHECK_THAT(describeError("127.0.0.1", 1, missing),
               Catch::Contains("ssl.ca.location: cannot use"));
  }
}

TEST_CASE("a refusal librdkafka reports at start names the client property it points at",
          "[unit]") {
  CHECK(kafka::refusedKey(
            false,
            "SASL authentication error: Authentication failed during authentication due to "
            "invalid credentials with SASL mechanism SCRAM-SHA-512") == "sasl.password");
  CHECK(kafka::refusedKey(false, "Unsupported SASL mechanism: broker only supports PLAIN") ==
        "sasl.mechanism");
  CHECK(kafka::refusedKey(
            true,
            "SSL handshake failed: error:0A000086:SSL routines::certificate verify failed: "
            "broker certificate could not be verified") == "ssl.ca.location");
  CHECK(kafka::refusedKey(true, "certificate verify failed: Hostname mismatch") ==
        "ssl.endpoint.identification.algorithm");
  CHECK(kafka::refusedKey(true, "SSL transport error: tlsv13 alert certificate required") ==
        "ssl.certificate.location");
}

}  // namespace secured_client_test
