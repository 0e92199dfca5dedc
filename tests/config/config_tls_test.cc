// http.tls in the configuration: both files or neither, each readable, unknown keys refused.

#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "server/config/config.h"
#include "tests/support/temp_dir.h"

namespace config_tls_test {

using namespace kfaild::config;

namespace {

std::string withHttp(const std::string& http) {
  return "http:\n" + http + R"(
clusters:
  - name: lab
    bootstrap: 127.0.0.1:19091
    probe: {topics: [orders]}
)";
}

std::string errorOf(const std::string& yaml) {
  try {
    parseConfig(yaml, "test.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("http.tls takes a certificate and a key, both readable, and an optional client CA",
          "[unit][config]") {
  kfaild::testing::TempDir dir;
  for (const char* name : {"cert.pem", "key.pem", "ca.pem"}) std::ofstream(dir / name) << "x\n";
  const auto path = [&](const char* name) { return (dir / name).string(); };

  CHECK_FALSE(parseConfig(withHttp("  port: 8443\n")).http.tls.enabled());
  const auto c = parseConfig(withHttp("  tls: {cert_file: " + path("cert.pem") +
                                      ", key_file: " + path("key.pem") +
                                      ", client_ca_file: " + path("ca.pem") + "}\n"));
  CHECK(c.http.tls.enabled());
  CHECK(c.http.tls.cert_file == path("cert.pem"));
  CHECK(c.http.tls.key_file == path("key.pem"));
  CHECK(c.http.tls.client_ca_file == path("ca.pem"));

  CHECK(errorOf(withHttp("  tls: {cert_file: " + path("cert.pem") + "}\n")) ==
        "test.yaml: http.tls.key_file: required with http.tls");
  CHECK(errorOf(withHttp("  tls: {key_file: " + path("key.pem") + "}\n")) ==
        "test.yaml: http.tls.cert_file: required with http.tls");
  CHECK(errorOf(withHttp("  tls: {cert_file: " + path("nope.pem") +
                         ", key_file: " + path("key.pem") + "}\n")) ==
        "test.yaml: http.tls.cert_file: cannot read " + path("nope.pem"));
  CHECK(errorOf(withHttp("  tls: {cert_file: " + path("cert.pem") + ", key_file: " +
                         path("key.pem") + ", client_ca_file: " + path("nope.pem") + "}\n")) ==
        "test.yaml: http.tls.client_ca_file: cannot read " + path("nope.pem"));
  CHECK(errorOf(withHttp("  tls: {cert_file: " + path("cert.pem") +
                         ", key_file: " + path("key.pem") + ", ca_file: " + path("ca.pem") + "}\n"))
            .find("test.yaml: http.tls.ca_file: unknown key (known: cert_file, client_ca_file, "
                  "key_file)") == 0);
}

}  // namespace config_tls_test
