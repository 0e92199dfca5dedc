// The wire client's connections to a secured broker (server/probe/wire_client.h), against a broker
// in the test that authenticates and nothing more: TLS with the test certificates
// (tests/support/test_certs.h) and a scripted SASL exchange. A broker refusing the credentials, a
// client certificate or the broker's own certificate is the client's refusal (counted, the
// problem says why, the partition's sends are to be refused); a broker closing mid-exchange is a
// broken connection, tried again and authenticated again.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "server/common/clock.h"
#include "server/kafka/sasl.h"
#include "server/kafka/security.h"
#include "server/kafka/tls.h"
#include "server/probe/wire_client.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_certs.h"

namespace wire_client_secured_test {

using namespace kfaild;
using namespace std::chrono_literals;
using Bytes = std::vector<std::uint8_t>;

namespace {

// What the broker does with a client's SASL exchange.
enum class Sasl {
  kRefuse,       // accepts the handshake, answers SaslAuthenticate with error 58 and closes
  kCloseMidway,  // closes on the handshake, without an answer
  kNone,         // no SASL: reads the first request and closes
};

void int16(Bytes& out, int v) {
  out.push_back(static_cast<std::uint8_t>((v >> 8) & 0xff));
  out.push_back(static_cast<std::uint8_t>(v & 0xff));
}

void int32(Bytes& out, std::int64_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<std::uint8_t>((v >> shift) & 0xff));
}

// One listener on 127.0.0.1: TLS when given a server context (owned), then `sasl`. Counts the
// connections and the SASL handshakes it saw.
class SecuredBroker {
 public:
  SecuredBroker(SSL_CTX* tls, Sasl sasl) : tls_(tls), sasl_(sasl) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd_, 8) == 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~SecuredBroker() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
    if (tls_ != nullptr) SSL_CTX_free(tls_);
  }

  std::string port() const { return std::to_string(port_); }
  int connections() const { return connections_; }
  int handshakes() const { return handshakes_; }

 private:
  // The bytes of one connection, in the clear or through TLS.
  struct Stream {
    int fd;
    SSL* ssl;
    bool read(std::uint8_t* into, std::size_t size) const {
      std::size_t got = 0;
      while (got < size) {
        const auto n = ssl != nullptr ? SSL_read(ssl, into + got, static_cast<int>(size - got))
                                      : static_cast<int>(::recv(fd, into + got, size - got, 0));
        if (n <= 0) return false;
        got += static_cast<std::size_t>(n);
      }
      return true;
    }
    void write(const Bytes& frame) const {
      if (ssl != nullptr) {
        SSL_write(ssl, frame.data(), static_cast<int>(frame.size()));
      } else {
        ::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL);
      }
    }
  };

  void serve() {
    for (;;) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      ++connections_;
      SSL* ssl = nullptr;
      if (tls_ != nullptr) {
        ssl = SSL_new(tls_);
        // Writing with MSG_NOSIGNAL: a client that went away must not end the test by SIGPIPE.
        kafka::attachSocket(ssl, c);
        if (SSL_accept(ssl) != 1) {
          SSL_free(ssl);
          ::close(c);
          continue;
        }
      }
      converse(Stream{c, ssl});
      if (ssl != nullptr) {
        SSL_shutdown(ssl);
        SSL_free(ssl);
      }
      ::close(c);
    }
  }

  // Reads requests and answers them as `sasl_` says, until it closes.
  void converse(const Stream& stream) {
    for (;;) {
      std::uint8_t prefix[4];
      if (!stream.read(prefix, 4)) return;
      const std::size_t size = (std::size_t{prefix[0]} << 24) | (std::size_t{prefix[1]} << 16) |
                               (std::size_t{prefix[2]} << 8) | prefix[3];
      Bytes body(size);
      if (size < 8 || !stream.read(body.data(), size)) return;
      const int key = (body[0] << 8) | body[1];
      Bytes correlation(body.begin() + 4, body.begin() + 8);
      if (sasl_ == Sasl::kNone) return;
      if (key == kafka::kSaslHandshakeKey) {
        ++handshakes_;
        if (sasl_ == Sasl::kCloseMidway) return;
        Bytes answer = correlation;
        int16(answer, 0);
        int32(answer, 1);
        int16(answer, 5);
        answer.insert(answer.end(), {'P', 'L', 'A', 'I', 'N'});
        stream.write(frame(answer));
        continue;
      }
      // SaslAuthenticate v2, refused as Kafka refuses it, then the connection closed.
      const std::string reason = "Authentication failed: Invalid username or password";
      Bytes answer = correlation;
      answer.push_back(0);
      int16(answer, 58);
      answer.push_back(static_cast<std::uint8_t>(reason.size() + 1));
      answer.insert(answer.end(), reason.begin(), reason.end());
      answer.push_back(1);  // empty auth bytes
      int32(answer, 0);
      int32(answer, 0);
      answer.push_back(0);
      stream.write(frame(answer));
      return;
    }
  }

  static Bytes frame(const Bytes& body) {
    Bytes out;
    int32(out, static_cast<std::int64_t>(body.size()));
    out.insert(out.end(), body.begin(), body.end());
    return out;
  }

  SSL_CTX* tls_;
  Sasl sasl_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<int> connections_{0};
  std::atomic<int> handshakes_{0};
  std::thread thread_;
};

// A server context with the test certificates' server certificate, requiring a client
// certificate of their CA when `require_client`.
SSL_CTX* serverTls(const testing::TestCertificates& certs, bool require_client) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  REQUIRE(SSL_CTX_use_certificate_chain_file(ctx, certs.serverCert().c_str()) == 1);
  REQUIRE(SSL_CTX_use_PrivateKey_file(ctx, certs.serverKey().c_str(), SSL_FILETYPE_PEM) == 1);
  if (require_client) {
    REQUIRE(SSL_CTX_load_verify_locations(ctx, certs.ca().c_str(), nullptr) == 1);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return ctx;
}

// A wire client on `broker` with the client properties `client`, probing one partition and
// ticking every 20 ms without sending: what the ticker saw of authenticationFailure(), and the
// client's stats once `done` holds (or 5 s have passed).
struct Outcome {
  probe::WireStats stats;
  bool refusing = false;  // authenticationFailure() at the last tick
};

template <typename Done>
Outcome probeWith(const SecuredBroker& broker, const std::map<std::string, std::string>& client,
                  Done done) {
  common::SystemClock clock;
  probe::WireClientOptions options;
  options.bootstrap = {{"127.0.0.1", broker.port()}};
  auto security = kafka::clientSecurity(client);
  REQUIRE(security);
  if (security->tls()) {
    auto tls = kafka::TlsContext::create(*security);
    REQUIRE(tls);
    options.tls = *tls;
  }
  options.security = *security;
  probe::WireClient wire(
      options, clock, [](std::span<const probe::WireAck>, common::Instant) {},
      [](std::span<const probe::WireRecord>, common::Instant) {});
  wire.start({{"probe", 0, 0, 0}}, 0ms);
  std::atomic<bool> refusing{false};
  wire.tickOnIoThread(
      [&](std::vector<probe::WireSend>&) {
        refusing = wire.authenticationFailure(0) != nullptr;
        return clock.monoNow() + 20'000;
      },
      clock.monoNow());
  Outcome out;
  for (int i = 0; i < 250; ++i) {
    out.stats = wire.stats();
    if (done(out.stats)) break;
    std::this_thread::sleep_for(20ms);
  }
  std::this_thread::sleep_for(50ms);  // a tick after the last stats
  wire.stopTicking();
  out.refusing = refusing;
  wire.stop();
  return out;
}

std::map<std::string, std::string> saslPlaintext() {
  return {{"security.protocol", "SASL_PLAINTEXT"},
          {"sasl.mechanism", "PLAIN"},
          {"sasl.username", "kfaild"},
          {"sasl.password", "not-the-password"}};
}

}  // namespace

TEST_CASE(
    "a broker refusing the wire client's credentials is the client's refusal: counted, named in "
    "the problem, the partition's sends refused, and every reconnect authenticates again",
    "[integration]") {
  SecuredBroker broker(nullptr, Sasl::kRefuse);
  const auto out = probeWith(broker, saslPlaintext(), [&](const probe::WireStats& s) {
    return s.authentication_failures >= 2;
  });
  INFO("problem: " << out.stats.problem);
  CHECK(out.stats.authentication_failures >= 2);
  CHECK(broker.handshakes() >= 2);
  CHECK_THAT(out.stats.problem, Catch::Contains("authentication failed") &&
                                    Catch::Contains("Invalid username or password") &&
                                    !Catch::Contains("not-the-password"));
  CHECK(out.refusing);
}

TEST_CASE(
    "a broker closing the connection in the middle of the SASL exchange is a broken connection, "
    "not a refusal, and the client connects and authenticates again",
    "[integration]") {
  SecuredBroker broker(nullptr, Sasl::kCloseMidway);
  const auto out = probeWith(broker, saslPlaintext(),
                             [&](const probe::WireStats&) { return broker.handshakes() >= 3; });
  INFO("problem: " << out.stats.problem);
  CHECK(broker.handshakes() >= 3);
  CHECK(out.stats.authentication_failures == 0);
  CHECK_THAT(out.stats.problem, Catch::Contains("closed by the broker"));
  CHECK_FALSE(out.refusing);
}

TEST_CASE(
    "over TLS the wire client verifies the broker as the rest of kfaild does, presents its "
    "certificate, and a TLS refusal either way is the client's",
    "[integration]") {
  testing::TempDir dir;
  const testing::TestCertificates certs(dir / "certs");
  std::map<std::string, std::string> ssl = {{"security.protocol", "SSL"},
                                            {"ssl.ca.location", certs.ca()}};
  const auto refused = [](const probe::WireStats& s) { return s.authentication_failures >= 1; };

  SECTION("a CA that did not sign the broker: the handshake is refused with the verify result") {
    SecuredBroker broker(serverTls(certs, false), Sasl::kNone);
    ssl["ssl.ca.location"] = certs.otherCa();
    const auto out = probeWith(broker, ssl, refused);
    CHECK_THAT(out.stats.problem, Catch::Contains("certificate verify failed"));
    CHECK(out.refusing);
  }
  SECTION("a broker that requires a client certificate, and the client has none: refused") {
    SecuredBroker broker(serverTls(certs, true), Sasl::kNone);
    const auto out = probeWith(broker, ssl, refused);
    INFO("problem: " << out.stats.problem);
    CHECK(out.stats.authentication_failures >= 1);
    CHECK_THAT(out.stats.problem, Catch::Contains("TLS"));
    CHECK(out.refusing);
  }
  SECTION("with its certificate the session is made and the first request sent over it") {
    SecuredBroker broker(serverTls(certs, true), Sasl::kNone);
    ssl["ssl.certificate.location"] = certs.clientCert();
    ssl["ssl.key.location"] = certs.clientKey();
    const auto out =
        probeWith(broker, ssl, [&](const probe::WireStats&) { return broker.connections() >= 2; });
    INFO("problem: " << out.stats.problem);
    CHECK(out.stats.authentication_failures == 0);
    CHECK_THAT(out.stats.problem, Catch::Contains("closed by the broker"));
    CHECK_FALSE(out.refusing);
  }
  SECTION("SASL over TLS: the exchange runs inside the session and its refusal is the client's") {
    SecuredBroker broker(serverTls(certs, false), Sasl::kRefuse);
    auto sasl_ssl = saslPlaintext();
    sasl_ssl["security.protocol"] = "SASL_SSL";
    sasl_ssl["ssl.ca.location"] = certs.ca();
    const auto out = probeWith(broker, sasl_ssl, refused);
    CHECK(broker.handshakes() >= 1);
    CHECK_THAT(out.stats.problem, Catch::Contains("Invalid username or password"));
    CHECK(out.refusing);
  }
  SECTION("SASL over mutual TLS: the certificate admits the session, SASL runs inside it") {
    SecuredBroker broker(serverTls(certs, true), Sasl::kRefuse);
    auto both = saslPlaintext();
    both["security.protocol"] = "SASL_SSL";
    both["ssl.ca.location"] = certs.ca();
    both["ssl.certificate.location"] = certs.clientCert();
    both["ssl.key.location"] = certs.clientKey();
    const auto out = probeWith(broker, both, refused);
    CHECK(broker.handshakes() >= 1);
    CHECK_THAT(out.stats.problem, Catch::Contains("Invalid username or password"));
  }
}

}  // namespace wire_client_secured_test
