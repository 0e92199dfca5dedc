// kfailctl as a process against an HTTPS server: the server's certificate checked against
// --ca-file, a wrong CA or a missing client certificate reported in one line with exit status 4.

#include <sys/wait.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

#include "api/http_message.h"
#include "api/http_server.h"
#include "api/router.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_certs.h"

namespace {

using kfaild::api::HttpServer;
using kfaild::api::Request;
using kfaild::api::Router;
using kfaild::api::ServerOptions;

// Runs kfailctl with `args`; its exit status and what it wrote to stdout and stderr together.
std::pair<int, std::string> kfailctl(const std::string& args) {
  const std::string command =
      std::string(KFAILD_BINARY_DIR) + "/tools/kfailctl/kfailctl " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// An HTTPS server with the one route `kfailctl show 7` calls.
class DrillServer {
 public:
  explicit DrillServer(const kfaild::testing::TestCertificates& certs,
                       std::string client_ca_file = {}) {
    router_.add("GET", "/api/v1/drills/{id}", [](const Request&) {
      return kfaild::api::jsonResponse(
          200, {{"id", 7},
                {"cluster", "lab"},
                {"fault", "kill"},
                {"target", {{"broker", 1}}},
                {"state", "done"},
                {"reason", nullptr},
                {"runs", nlohmann::json::array()},
                {"verdict", "pass"}});  // a passed drill: kfailctl exits 0 for it
    });
    ServerOptions options;
    options.port = 0;
    options.tls.cert_file = certs.serverCert();
    options.tls.key_file = certs.serverKey();
    options.tls.client_ca_file = std::move(client_ca_file);
    server_ = std::make_unique<HttpServer>(options, router_);
    const auto started = server_->start();
    if (!started) FAIL(started.error().describe());
  }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(server_->port()); }

 private:
  Router router_;
  std::unique_ptr<HttpServer> server_;
};

TEST_CASE(
    "kfailctl talks to an HTTPS kfaild whose certificate --ca-file signed, and names the "
    "cause when it did not",
    "[integration][api]") {
  kfaild::testing::TempDir dir;
  const kfaild::testing::TestCertificates certs(dir.path());
  DrillServer server(certs);

  auto [code, out] = kfailctl("--url " + server.url() + " --ca-file " + certs.ca() + " show 7");
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("drill 7 on lab: kill of node 1 — done") != std::string::npos);

  std::tie(code, out) =
      kfailctl("--url " + server.url() + " --ca-file " + certs.otherCa() + " show 7");
  INFO(out);
  CHECK(code == 4);
  CHECK(out ==
        "kfailctl: TLS: certificate verify failed (unable to get local issuer certificate) for " +
            server.url() +
            ": the --ca-file given did not sign the server's certificate; pass the CA that "
            "did\n");

  // https://localhost is in the certificate too; a name it does not carry is refused.
  const auto port = server.url().substr(server.url().rfind(':'));
  std::tie(code, out) =
      kfailctl("--url https://localhost" + port + " --ca-file " + certs.ca() + " show 7");
  INFO(out);
  CHECK(code == 0);

  std::tie(code, out) = kfailctl("--url " + server.url() + " --ca-file " + dir.path().string() +
                                 "/missing.pem show 7");
  CHECK(code == 2);
  CHECK(out.find("kfailctl: --ca-file " + dir.path().string() + "/missing.pem: cannot use it: ") ==
        0);
  std::tie(code, out) = kfailctl("--url http://127.0.0.1:1 --ca-file " + certs.ca() + " show 7");
  CHECK(code == 2);
  CHECK(out == "kfailctl: --ca-file, --cert-file and --key-file need an https:// --url\n");
}

TEST_CASE("kfailctl presents its client certificate to a kfaild that requires one",
          "[integration][api]") {
  kfaild::testing::TempDir dir;
  const kfaild::testing::TestCertificates certs(dir.path());
  DrillServer server(certs, certs.ca());
  const std::string base = "--url " + server.url() + " --ca-file " + certs.ca();

  auto [code, out] = kfailctl(base + " --cert-file " + certs.clientCert() + " --key-file " +
                              certs.clientKey() + " show 7");
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("drill 7 on lab: kill of node 1 — done") != std::string::npos);

  std::tie(code, out) = kfailctl(base + " show 7");
  INFO(out);
  CHECK(code == 4);
  CHECK(out.find("kfailctl: TLS: ") == 0);
  CHECK(out.find("--cert-file and --key-file") != std::string::npos);
  CHECK(std::count(out.begin(), out.end(), '\n') == 1);
}

}  // namespace
