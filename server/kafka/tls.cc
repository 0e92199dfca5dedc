#include "server/kafka/tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509_vfy.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "server/kafka/errc.h"

namespace kfaild::kafka {
namespace {

Error keyed(const std::string& key, const std::string& why) {
  return kafkaError(errc::invalid_property, key + ": " + why);
}

// OpenSSL asks for the key's passphrase through this; `user` is the ClientSecurity.
int keyPassword(char* buf, int size, int /*rwflag*/, void* user) {
  const auto& password = static_cast<const ClientSecurity*>(user)->key_password;
  if (password.empty() || static_cast<int>(password.size()) > size) return 0;
  std::memcpy(buf, password.data(), password.size());
  return static_cast<int>(password.size());
}

using BioPtr = std::unique_ptr<BIO, decltype(&BIO_free)>;

BioPtr memoryBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
}

// OpenSSL's socket BIO writes with write(2): to a peer that has closed, that raises SIGPIPE and
// ends the process. This one sends with MSG_NOSIGNAL (EPIPE instead), and is the socket BIO for
// the rest.
int sendNoSignal(BIO* bio, const char* data, int size) {
  BIO_clear_retry_flags(bio);
  const auto n = ::send(static_cast<int>(BIO_get_fd(bio, nullptr)), data,
                        static_cast<std::size_t>(size), MSG_NOSIGNAL);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    BIO_set_retry_write(bio);
  return static_cast<int>(n);
}

const BIO_METHOD* socketWithoutSigpipe() {
  static const BIO_METHOD* method = [] {
    const BIO_METHOD* socket = BIO_s_socket();
    BIO_METHOD* m = BIO_meth_new(BIO_TYPE_SOCKET, "kfaild socket");
    BIO_meth_set_write(m, sendNoSignal);
    BIO_meth_set_read(m, BIO_meth_get_read(socket));
    BIO_meth_set_puts(m, BIO_meth_get_puts(socket));
    BIO_meth_set_ctrl(m, BIO_meth_get_ctrl(socket));
    BIO_meth_set_create(m, BIO_meth_get_create(socket));
    BIO_meth_set_destroy(m, BIO_meth_get_destroy(socket));
    return m;
  }();
  return method;
}

}  // namespace

BIO* socketBio(int fd) {
  BIO* bio = BIO_new(socketWithoutSigpipe());
  if (bio != nullptr) BIO_set_fd(bio, fd, BIO_NOCLOSE);
  return bio;
}

bool attachSocket(SSL* ssl, int fd) {
  BIO* bio = socketBio(fd);
  if (bio == nullptr) return false;
  SSL_set_bio(ssl, bio, bio);  // the session owns it now
  return true;
}

std::string openSslErrors(const std::string& fallback) {
  std::string out;
  while (const auto code = ERR_get_error()) {
    char text[256];
    ERR_error_string_n(code, text, sizeof text);
    out += (out.empty() ? "" : "; ") + std::string(text);
  }
  return out.empty() ? fallback : out;
}

std::string tlsFailure(SSL* ssl, int ssl_error) {
  const auto verify = ssl == nullptr ? X509_V_OK : SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) {
    ERR_clear_error();
    return std::string("certificate verify failed: ") + X509_verify_cert_error_string(verify);
  }
  if (ssl_error == SSL_ERROR_SYSCALL && errno != 0) return openSslErrors(std::strerror(errno));
  if (ssl_error == SSL_ERROR_ZERO_RETURN || ssl_error == SSL_ERROR_SYSCALL) {
    return openSslErrors("the peer closed the connection");
  }
  return openSslErrors("TLS error " + std::to_string(ssl_error));
}

bool tlsRefused(SSL* ssl, int ssl_error) {
  if (ssl != nullptr && SSL_get_verify_result(ssl) != X509_V_OK) return true;
  if (ssl_error != SSL_ERROR_SSL) return false;
  // OpenSSL 3 reports a peer gone without close_notify (a broker killed) as a protocol error.
  return ERR_GET_REASON(ERR_peek_error()) != SSL_R_UNEXPECTED_EOF_WHILE_READING;
}

Result<std::shared_ptr<const TlsContext>> TlsContext::create(const ClientSecurity& security) {
  ERR_clear_error();
  SSL_CTX* raw = SSL_CTX_new(TLS_client_method());
  if (raw == nullptr) return keyed("security.protocol", openSslErrors("cannot make a TLS context"));
  std::shared_ptr<TlsContext> context(
      new TlsContext(raw, security.verify_certificate && security.verify_hostname));
  SSL_CTX_set_min_proto_version(raw, TLS1_2_VERSION);
  SSL_CTX_set_verify(raw, security.verify_certificate ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);

  if (!security.ca_pem.empty()) {
    auto bio = memoryBio(security.ca_pem);
    X509_STORE* store = SSL_CTX_get_cert_store(raw);
    int added = 0;
    while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
      added += X509_STORE_add_cert(store, cert);
      X509_free(cert);
    }
    ERR_clear_error();  // the loop ends on a "no start line" error
    if (added == 0) return keyed("ssl.ca.pem", "holds no PEM certificate");
  } else if (!security.ca_location.empty()) {
    std::error_code ec;
    const bool directory = std::filesystem::is_directory(security.ca_location, ec);
    const int ok = directory
                       ? SSL_CTX_load_verify_locations(raw, nullptr, security.ca_location.c_str())
                       : SSL_CTX_load_verify_locations(raw, security.ca_location.c_str(), nullptr);
    if (ok != 1) {
      return keyed("ssl.ca.location",
                   "cannot use " + security.ca_location + ": " + openSslErrors("unreadable"));
    }
  } else if (SSL_CTX_set_default_verify_paths(raw) != 1) {
    return keyed("ssl.ca.location",
                 "not set, and the system's CAs cannot be used: " + openSslErrors("unknown"));
  }

  SSL_CTX_set_default_passwd_cb(raw, keyPassword);
  // The context keeps a pointer to this; only used while create() runs.
  SSL_CTX_set_default_passwd_cb_userdata(raw, const_cast<ClientSecurity*>(&security));
  if (!security.certificate_pem.empty()) {
    auto bio = memoryBio(security.certificate_pem);
    X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr);
    const bool used = cert != nullptr && SSL_CTX_use_certificate(raw, cert) == 1;
    X509_free(cert);
    if (!used)
      return keyed("ssl.certificate.pem",
                   "cannot use it: " + openSslErrors("not a PEM certificate"));
  } else if (!security.certificate_location.empty() &&
             SSL_CTX_use_certificate_chain_file(raw, security.certificate_location.c_str()) != 1) {
    return keyed("ssl.certificate.location", "cannot use " + security.certificate_location + ": " +
                                                 openSslErrors("unreadable"));
  }
  if (!security.key_pem.empty()) {
    auto bio = memoryBio(security.key_pem);
    EVP_PKEY* key = PEM_read_bio_PrivateKey(bio.get(), nullptr, keyPassword,
                                            const_cast<ClientSecurity*>(&security));
    const bool used = key != nullptr && SSL_CTX_use_PrivateKey(raw, key) == 1;
    EVP_PKEY_free(key);
    if (!used) return keyed("ssl.key.pem", "cannot use it: " + openSslErrors("not a PEM key"));
  } else if (!security.key_location.empty() &&
             SSL_CTX_use_PrivateKey_file(raw, security.key_location.c_str(), SSL_FILETYPE_PEM) !=
                 1) {
    return keyed(security.key_password.empty() ? "ssl.key.location" : "ssl.key.password",
                 "cannot use " + security.key_location + ": " + openSslErrors("unreadable"));
  }
  SSL_CTX_set_default_passwd_cb(raw, nullptr);
  SSL_CTX_set_default_passwd_cb_userdata(raw, nullptr);
  if ((!security.key_location.empty() || !security.key_pem.empty()) &&
      SSL_CTX_check_private_key(raw) != 1) {
    return keyed("ssl.key.location",
                 "not the key of the certificate: " + openSslErrors("mismatch"));
  }
  return std::shared_ptr<const TlsContext>(std::move(context));
}

TlsContext::~TlsContext() {
  SSL_CTX_free(ctx_);
}

}  // namespace kfaild::kafka
