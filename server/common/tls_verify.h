#pragma once

// How every TLS client of kfaild verifies its peer: the Docker engine client (server/fault), the
// notifier (server/notify), kfailctl, and the Kafka protocol client (server/kafka).
//
// The peer's certificate must chain to the trusted CAs and name the host connected to:
//   - an IP literal (IPv4, or IPv6 with or without a %zone) is matched against the certificate's
//     iPAddress names only, and is never sent as SNI (RFC 6066, section 3);
//   - a name is matched against its DNS names, case-insensitively (against the subject's CN only
//     when it has no DNS name, as OpenSSL and Kafka's Java client do), and is sent as SNI. A
//     wildcard stands for exactly one whole left-most label: "*.example.com" names k1.example.com,
//     not example.com nor a.k1.example.com; "k*.example.com" names nothing (RFC 6125, 6.4.3).
//
// Thread-safety: the functions touch only the session or context given, which the caller owns.

#include <openssl/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace kfaild::common {

// True when `host` is an IPv4 or IPv6 address (an IPv6 %zone allowed), not a name.
bool isIpLiteral(std::string_view host);

// Sets a client session, before its handshake, to send `host` as SNI when it is a name and, when
// `verify_host`, to fail the handshake unless the peer's certificate names `host` as above
// (X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH). nullopt when done; else why
// OpenSSL did not take it, and the session must not be used: unchecked, it would accept any
// certificate its CAs signed.
[[nodiscard]] std::optional<std::string> expectPeerHost(SSL* ssl, const std::string& host,
                                                        bool verify_host = true);

// The PEM files of a verifying client.
struct TlsClientFiles {
  std::string ca_file;    // the CAs to trust; empty: the system's trust store
  std::string cert_file;  // the client's certificate chain; empty: none presented
  std::string key_file;   // its key, unencrypted; read only with cert_file
};

// A file a verifying client could not use.
struct TlsFileProblem {
  enum class Key { ca_file, cert_file, key_file };
  Key key;
  std::string file;     // as given ("" for the system's trust store)
  std::string reason;   // OpenSSL's innermost reason ("no start line"), in words for "PEM lib"
  std::string message;  // OpenSSL's first reason, as Boost.Asio words it ("asio.ssl error")
};

// Makes `ctx` (a new client context) verify its peer: TLS 1.2 or newer, the peer's certificate
// checked against `files.ca_file`, the client certificate and key presented when given and
// checked to be a pair. nullopt when done. Leaves OpenSSL's error queue of this thread empty.
[[nodiscard]] std::optional<TlsFileProblem> makeVerifyingClient(SSL_CTX* ctx,
                                                                const TlsClientFiles& files);

}  // namespace kfaild::common
