#include "server/common/tls_verify.h"

#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

namespace tls_verify_test {

using namespace kfaild::common;

namespace {

template <typename T, void (*Free)(T*)>
struct Freer {
  void operator()(T* p) const { Free(p); }
};
using CertPtr = std::unique_ptr<X509, Freer<X509, X509_free>>;
using KeyPtr = std::unique_ptr<EVP_PKEY, Freer<EVP_PKEY, EVP_PKEY_free>>;
using CtxPtr = std::unique_ptr<SSL_CTX, Freer<SSL_CTX, SSL_CTX_free>>;
using SslPtr = std::unique_ptr<SSL, Freer<SSL, SSL_free>>;
using StorePtr = std::unique_ptr<X509_STORE, Freer<X509_STORE, X509_STORE_free>>;
using StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, Freer<X509_STORE_CTX, X509_STORE_CTX_free>>;

// A self-signed certificate with subject CN `cn` (none when empty) and subjectAltName `san`
// ("DNS:a.example.com,IP:127.0.0.1"; none when empty), valid for a day.
CertPtr certificate(const std::string& cn, const std::string& san) {
  KeyPtr key(EVP_EC_gen("P-256"));
  REQUIRE(key);
  CertPtr cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 86'400);
  X509_NAME* name = X509_get_subject_name(cert.get());
  if (!cn.empty()) {
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  }
  X509_set_issuer_name(cert.get(), name);
  X509_set_pubkey(cert.get(), key.get());
  if (!san.empty()) {
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, cert.get(), cert.get(), nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name, san.c_str());
    REQUIRE(ext != nullptr);
    X509_add_ext(cert.get(), ext, -1);
    X509_EXTENSION_free(ext);
  }
  REQUIRE(X509_sign(cert.get(), key.get(), EVP_sha256()) > 0);
  return cert;
}

// A client session set up by expectPeerHost(host), and what its verification of `cert` (trusted
// as it is) says: X509_V_OK or the error the handshake would fail with.
struct Verdict {
  long error = X509_V_OK;
  std::string sni;  // the name the session would send, "" for none
};

Verdict verify(const CertPtr& cert, const std::string& host, bool verify_host = true) {
  CtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  SslPtr ssl(SSL_new(ctx.get()));
  REQUIRE_FALSE(expectPeerHost(ssl.get(), host, verify_host));
  StorePtr store(X509_STORE_new());
  X509_STORE_add_cert(store.get(), cert.get());
  StoreCtxPtr check(X509_STORE_CTX_new());
  REQUIRE(X509_STORE_CTX_init(check.get(), store.get(), cert.get(), nullptr) == 1);
  X509_VERIFY_PARAM_set1(X509_STORE_CTX_get0_param(check.get()), SSL_get0_param(ssl.get()));
  Verdict verdict;
  if (X509_verify_cert(check.get()) != 1) verdict.error = X509_STORE_CTX_get_error(check.get());
  const char* sni = SSL_get_servername(ssl.get(), TLSEXT_NAMETYPE_host_name);
  verdict.sni = sni != nullptr ? sni : "";
  return verdict;
}

}  // namespace

TEST_CASE("a certificate names a host by its exact DNS name, in any letter case",
          "[unit][common]") {
  const auto cert = certificate("", "DNS:kafka-1.example.com");
  CHECK(verify(cert, "kafka-1.example.com").error == X509_V_OK);
  CHECK(verify(cert, "KAFKA-1.Example.COM").error == X509_V_OK);
  CHECK(verify(cert, "kafka-1.example.com").sni == "kafka-1.example.com");
}

TEST_CASE("a name the certificate does not hold fails as a host-name mismatch", "[unit][common]") {
  const auto cert = certificate("", "DNS:kafka-1.example.com");
  CHECK(verify(cert, "kafka-2.example.com").error == X509_V_ERR_HOSTNAME_MISMATCH);
  CHECK(verify(cert, "example.com").error == X509_V_ERR_HOSTNAME_MISMATCH);
  CHECK(verify(cert, "kafka-1.example.com.evil.test").error == X509_V_ERR_HOSTNAME_MISMATCH);
}

TEST_CASE("a wildcard stands for one whole left-most label, never part of one", "[unit][common]") {
  const auto cert = certificate("", "DNS:*.example.com");
  CHECK(verify(cert, "k1.example.com").error == X509_V_OK);
  CHECK(verify(cert, "example.com").error == X509_V_ERR_HOSTNAME_MISMATCH);
  CHECK(verify(cert, "a.k1.example.com").error == X509_V_ERR_HOSTNAME_MISMATCH);
  // A partial wildcard names nothing (RFC 6125 6.4.3 lets a client refuse it; every client does).
  const auto partial = certificate("", "DNS:k*.example.com");
  CHECK(verify(partial, "k1.example.com").error == X509_V_ERR_HOSTNAME_MISMATCH);
}

TEST_CASE("an IP literal is matched against the IP addresses only and is not sent as SNI",
          "[unit][common]") {
  const auto cert = certificate("", "IP:127.0.0.1,IP:::1,IP:fe80::1,DNS:localhost");
  CHECK(verify(cert, "127.0.0.1").error == X509_V_OK);
  CHECK(verify(cert, "127.0.0.1").sni.empty());
  CHECK(verify(cert, "::1").error == X509_V_OK);
  CHECK(verify(cert, "0:0:0:0:0:0:0:1").error == X509_V_OK);
  CHECK(verify(cert, "127.0.0.2").error == X509_V_ERR_IP_ADDRESS_MISMATCH);
  // A link-local address with its zone: the certificate names the address, not the interface.
  CHECK(verify(cert, "fe80::1%lo").error == X509_V_OK);
  CHECK(verify(cert, "fe80::1%lo").sni.empty());
  // An address written only as a DNS name does not name the address.
  const auto as_name = certificate("", "DNS:10.0.0.7");
  CHECK(verify(as_name, "10.0.0.7").error == X509_V_ERR_IP_ADDRESS_MISMATCH);
}

TEST_CASE("the subject's CN names the host only when the certificate has no DNS name",
          "[unit][common]") {
  CHECK(verify(certificate("kafka-1.example.com", ""), "kafka-1.example.com").error == X509_V_OK);
  CHECK(verify(certificate("kafka-1.example.com", "DNS:other.example.com"), "kafka-1.example.com")
            .error == X509_V_ERR_HOSTNAME_MISMATCH);
}

TEST_CASE("without host verification any certificate the CAs signed passes, and SNI still goes",
          "[unit][common]") {
  const auto cert = certificate("", "DNS:kafka-1.example.com");
  const auto verdict = verify(cert, "other.example.com", /*verify_host=*/false);
  CHECK(verdict.error == X509_V_OK);
  CHECK(verdict.sni == "other.example.com");
}

TEST_CASE("IP literals are told from names", "[unit][common]") {
  CHECK(isIpLiteral("10.1.2.3"));
  CHECK(isIpLiteral("::1"));
  CHECK(isIpLiteral("fe80::1%eth0"));
  CHECK_FALSE(isIpLiteral("kafka-1"));
  CHECK_FALSE(isIpLiteral("10.1.2"));
  CHECK_FALSE(isIpLiteral("10.1.2.3%eth0"));  // a zone only with IPv6
  CHECK_FALSE(isIpLiteral("[::1]"));
  CHECK_FALSE(isIpLiteral(""));
}

TEST_CASE("a verifying client names the file it could not use", "[unit][common]") {
  CtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  const auto missing = makeVerifyingClient(ctx.get(), {"/nonexistent/ca.pem", "", ""});
  REQUIRE(missing);
  CHECK(missing->key == TlsFileProblem::Key::ca_file);
  CHECK(missing->file == "/nonexistent/ca.pem");
  CHECK_FALSE(missing->reason.empty());
  CHECK(SSL_CTX_get_verify_mode(ctx.get()) == SSL_VERIFY_NONE);
  CtxPtr system(SSL_CTX_new(TLS_client_method()));
  CHECK_FALSE(makeVerifyingClient(system.get(), {}));
  CHECK(SSL_CTX_get_verify_mode(system.get()) == SSL_VERIFY_PEER);
  CHECK(SSL_CTX_get_min_proto_version(system.get()) == TLS1_2_VERSION);
}

}  // namespace tls_verify_test
