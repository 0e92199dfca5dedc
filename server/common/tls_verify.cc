#include "server/common/tls_verify.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace kfaild::common {
namespace {

// The address without its IPv6 zone, when `host` is an IP literal. The zone names an interface
// of this host, never something a certificate can name.
std::optional<std::string> ipAddressOf(std::string_view host) {
  std::string address(host.substr(0, host.find('%')));
  in6_addr bytes{};
  if (address.size() < host.size()) {
    if (::inet_pton(AF_INET6, address.c_str(), &bytes) == 1) return address;
    return std::nullopt;
  }
  if (::inet_pton(AF_INET, address.c_str(), &bytes) == 1 ||
      ::inet_pton(AF_INET6, address.c_str(), &bytes) == 1) {
    return address;
  }
  return std::nullopt;
}

// OpenSSL's queued reasons for a step that failed, drained: the first one as Boost.Asio reports
// it, and the innermost one (the first after that which has words; the later ones of a PEM
// failure only say "PEM lib").
void takeReasons(TlsFileProblem& problem) {
  const char* first = ERR_reason_error_string(ERR_get_error());
  problem.message = first != nullptr ? first : "asio.ssl error";
  while (const unsigned long code = ERR_get_error()) {
    const char* text = ERR_reason_error_string(code);
    if (problem.reason.empty() && text != nullptr) problem.reason = text;
  }
  // OpenSSL 3 reads keys through decoders that queue nothing of their own.
  if (problem.reason == "PEM lib") {
    problem.reason = "not a PEM file of the expected kind (an unencrypted key, a certificate)";
  }
  if (problem.reason.empty()) problem.reason = problem.message;
}

std::optional<TlsFileProblem> failed(TlsFileProblem::Key key, const std::string& file) {
  TlsFileProblem problem{key, file, {}, {}};
  takeReasons(problem);
  return problem;
}

}  // namespace

bool isIpLiteral(std::string_view host) {
  return ipAddressOf(host).has_value();
}

std::optional<std::string> expectPeerHost(SSL* ssl, const std::string& host, bool verify_host) {
  const auto ip = ipAddressOf(host);
  const auto why = [](const char* what) {
    const char* reason = ERR_reason_error_string(ERR_peek_error());
    std::string out = std::string(what) + (reason != nullptr ? std::string(": ") + reason : "");
    ERR_clear_error();
    return out;
  };
  if (!ip && SSL_set_tlsext_host_name(ssl, host.c_str()) != 1) {
    return why("cannot send the host name");
  }
  if (!verify_host) return std::nullopt;
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  const int set = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, ip->c_str())
                     : X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
  if (set != 1) return why("cannot set the host to verify");
  return std::nullopt;
}

std::optional<TlsFileProblem> makeVerifyingClient(SSL_CTX* ctx, const TlsClientFiles& files) {
  using Key = TlsFileProblem::Key;
  // The queue is emptied before each step, so that a failure's reasons are that step's own.
  ERR_clear_error();
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  ERR_clear_error();
  const int trusted = files.ca_file.empty()
                          ? SSL_CTX_set_default_verify_paths(ctx)
                          : SSL_CTX_load_verify_locations(ctx, files.ca_file.c_str(), nullptr);
  if (trusted != 1) return failed(Key::ca_file, files.ca_file);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, SSL_CTX_get_verify_callback(ctx));
  if (!files.cert_file.empty()) {
    ERR_clear_error();
    if (SSL_CTX_use_certificate_chain_file(ctx, files.cert_file.c_str()) != 1) {
      return failed(Key::cert_file, files.cert_file);
    }
    ERR_clear_error();
    if (SSL_CTX_use_PrivateKey_file(ctx, files.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      return failed(Key::key_file, files.key_file);
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
      ERR_clear_error();
      const std::string why = "not the key of " + files.cert_file;
      return TlsFileProblem{Key::key_file, files.key_file, why, why};
    }
  }
  ERR_clear_error();
  return std::nullopt;
}

}  // namespace kfaild::common
