#pragma once

// TLS for kfaild's own protocol client: an OpenSSL client context made once from a cluster's
// ClientSecurity (server/kafka/security.h) and shared by its connections, and the words for a
// failed handshake. TLS 1.2 or newer; the peer's certificate is verified against ssl.ca.location
// (or the system's CAs) and, with ssl.endpoint.identification.algorithm https, must name the host
// connected to, as librdkafka checks it.
//
// Thread-safety: a TlsContext is immutable after create() and may be used by any number of
// connections on any threads (OpenSSL's SSL_CTX is, once configured).

#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "server/common/result.h"
#include "server/kafka/security.h"

namespace kfaild::kafka {

class TlsContext {
 public:
  // Reads the CA, certificate and key now. An error's message starts with the key it concerns and
  // gives OpenSSL's reason ("ssl.ca.location: cannot use /x/ca.pem: ... no such file").
  static Result<std::shared_ptr<const TlsContext>> create(const ClientSecurity& security);

  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  SSL_CTX* get() const { return ctx_; }
  bool verifyHostname() const { return verify_hostname_; }

 private:
  TlsContext(SSL_CTX* ctx, bool verify_hostname) : ctx_(ctx), verify_hostname_(verify_hostname) {}

  SSL_CTX* ctx_;
  bool verify_hostname_;
};

// Why a handshake or a TLS read or write failed, in OpenSSL's words, with the certificate
// verification result when that is what failed ("certificate verify failed: unable to get local
// issuer certificate"). Drains OpenSSL's error queue of this thread.
std::string tlsFailure(SSL* ssl, int ssl_error);

// Whether a failed handshake, TLS read or write (`ssl_error` from SSL_get_error) was a refusal
// of the session (the peer's certificate not verified, a TLS alert from the peer: a client
// certificate it does not accept) rather than a broken transport (reset, closed, an EOF without
// close_notify). Call before tlsFailure(), which drains the error queue this reads.
bool tlsRefused(SSL* ssl, int ssl_error);

// A BIO on `fd` (a connected socket the caller keeps owning) that writes with MSG_NOSIGNAL and
// reads as OpenSSL's socket BIO; the caller's until given to a session. Null when OpenSSL cannot
// allocate it.
BIO* socketBio(int fd);

// Makes `fd` (a connected socket the caller keeps owning) the session's transport, writing with
// MSG_NOSIGNAL: a broker that closed the connection is an error, never a SIGPIPE. False when
// OpenSSL cannot allocate it.
bool attachSocket(SSL* ssl, int fd);

// OpenSSL's error queue of this thread as one line, drained; `fallback` when it is empty.
std::string openSslErrors(const std::string& fallback);

}  // namespace kfaild::kafka
