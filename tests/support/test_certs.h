#pragma once

// Certificates for the TLS tests, made with the `openssl` command into a directory: a CA, a server
// certificate it signed (SAN IP:127.0.0.1 and DNS:localhost), a client certificate it signed, and
// an unrelated second CA with a client certificate of its own. EC P-256 keys, valid for two days.
// The constructor throws std::runtime_error with openssl's output when a step fails.

#include <filesystem>
#include <string>

namespace kfaild::testing {

class TestCertificates {
 public:
  explicit TestCertificates(const std::filesystem::path& dir);

  std::string ca() const { return file("ca.pem"); }
  std::string serverCert() const { return file("server.pem"); }
  std::string serverKey() const { return file("server.key"); }
  std::string clientCert() const { return file("client.pem"); }
  std::string clientKey() const { return file("client.key"); }
  // The second CA, which signed nothing the server or the first CA knows.
  std::string otherCa() const { return file("other-ca.pem"); }
  std::string otherClientCert() const { return file("other-client.pem"); }
  std::string otherClientKey() const { return file("other-client.key"); }

 private:
  std::string file(const char* name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

}  // namespace kfaild::testing
