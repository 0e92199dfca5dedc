// The Docker target's transport rules: TLS files in the configuration, plain tcp:// only to
// loopback unless `insecure: true`, and the injector refusing the same without a network call.

#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "server/common/clock.h"
#include "server/config/config.h"
#include "server/fault/docker_injector.h"
#include "server/fault/errc.h"
#include "tests/support/temp_dir.h"

namespace docker_tls_test {

using namespace kfaild;

namespace {

// A configuration with one node whose docker section is `docker` (YAML, indented for it).
std::string withDocker(const std::string& docker) {
  return R"(
clusters:
  - name: lab
    bootstrap: 127.0.0.1:19091
    probe: {topics: [orders]}
    inventory:
      - id: 1
        docker:
)" + docker;
}

std::string errorOf(const std::string& yaml) {
  try {
    config::parseConfig(yaml, "test.yaml");
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

const config::DockerTarget& dockerOf(const config::Config& c) {
  return *c.clusters.at(0).inventory.at(0).docker;
}

}  // namespace

TEST_CASE("plain tcp:// to a Docker engine that is not on loopback is refused unless insecure",
          "[unit][fault][config]") {
  const auto refused =
      errorOf(withDocker("          {endpoint: \"tcp://10.1.2.3:2375\", container: k1}\n"));
  INFO(refused);
  CHECK(
      refused.find("test.yaml: clusters[0].inventory[0].docker.endpoint: plain tcp:// to 10.1.2.3, "
                   "which is not loopback") == 0);
  CHECK(refused.find("insecure: true") != std::string::npos);
  CHECK(errorOf(withDocker("          {endpoint: \"tcp://docker.internal:2375\", container: k1}\n"))
            .find("docker.endpoint: plain tcp:// to docker.internal") != std::string::npos);

  const auto insecure = config::parseConfig(
      withDocker("          {endpoint: \"tcp://10.1.2.3:2375\", container: k1, insecure: true}\n"));
  CHECK(dockerOf(insecure).insecure);
  CHECK_FALSE(dockerOf(insecure).tls);
  for (const char* loopback :
       {"tcp://127.0.0.1:2375", "tcp://[::1]:2375", "tcp://localhost:2375"}) {
    INFO(loopback);
    const auto c = config::parseConfig(
        withDocker(std::string("          {endpoint: \"") + loopback + "\", container: k1}\n"));
    CHECK(dockerOf(c).endpoint == loopback);
  }
  CHECK(
      errorOf(withDocker(
          "          {endpoint: \"unix:///run/docker.sock\", container: k1, insecure: true}\n")) ==
      "test.yaml: clusters[0].inventory[0].docker.insecure: only for tcp:// endpoints");
}

TEST_CASE("docker.tls takes a CA and a client certificate and key, each readable, for tcp:// only",
          "[unit][fault][config]") {
  testing::TempDir dir;
  for (const char* name : {"ca.pem", "cert.pem", "key.pem"}) std::ofstream(dir / name) << "x\n";
  const auto path = [&](const char* name) { return (dir / name).string(); };
  const std::string files = "ca_file: " + path("ca.pem") + ", cert_file: " + path("cert.pem") +
                            ", key_file: " + path("key.pem");

  const auto c = config::parseConfig(withDocker(
      "          {endpoint: \"tcp://10.1.2.3:2376\", container: k1, tls: {" + files + "}}\n"));
  REQUIRE(dockerOf(c).tls);
  CHECK(dockerOf(c).tls->ca_file == path("ca.pem"));
  CHECK(dockerOf(c).tls->cert_file == path("cert.pem"));
  CHECK(dockerOf(c).tls->key_file == path("key.pem"));
  CHECK_FALSE(dockerOf(c).insecure);

  const std::string key = "test.yaml: clusters[0].inventory[0].docker.";
  CHECK(errorOf(withDocker(
            "          {endpoint: \"tcp://10.1.2.3:2376\", container: k1, tls: {cert_file: " +
            path("cert.pem") + "}}\n")) ==
        key + "tls.ca_file: required: the CA that signed the engine's certificate");
  CHECK(errorOf(withDocker(
            "          {endpoint: \"tcp://10.1.2.3:2376\", container: k1, tls: {ca_file: " +
            path("ca.pem") + ", cert_file: " + path("cert.pem") + "}}\n")) ==
        key + "tls.key_file: required with cert_file");
  CHECK(errorOf(withDocker(
            "          {endpoint: \"tcp://10.1.2.3:2376\", container: k1, tls: {ca_file: " +
            path("nope.pem") + "}}\n")) == key + "tls.ca_file: cannot read " + path("nope.pem"));
  CHECK(errorOf(withDocker(
                    "          {endpoint: \"tcp://10.1.2.3:2376\", container: k1, tls: {ca: x}}\n"))
            .find(key + "tls.ca: unknown key") == 0);
  CHECK(errorOf(withDocker(
            "          {endpoint: \"unix:///run/docker.sock\", container: k1, tls: {" + files +
            "}}\n")) == key + "tls: only for tcp:// endpoints (a unix socket has no TLS)");
  CHECK(errorOf(withDocker(
            "          {endpoint: \"tcp://10.1.2.3:2376\", container: k1, insecure: true, tls: {" +
            files + "}}\n")) == key + "insecure: give either tls or insecure: true, not both");
}

TEST_CASE("the Docker injector itself refuses plain tcp:// to a host that is not loopback",
          "[unit][fault]") {
  const common::SystemClock clock;
  // Nothing listens at 10.1.2.3: the refusal must come before any connection attempt.
  fault::DockerInjector plain({"tcp://10.1.2.3:2375", "k1"}, fault::LogZone::utc, clock, {},
                              std::chrono::milliseconds(200));
  const auto refused = plain.inspect();
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == fault::errc::invalid_target);
  CHECK(refused.error().message.find("plain tcp:// to a host that is not loopback is refused") !=
        std::string::npos);

  config::DockerTarget insecure{"tcp://10.1.2.3:2375", "k1"};
  insecure.insecure = true;
  fault::DockerInjector allowed(insecure, fault::LogZone::utc, clock, {},
                                std::chrono::milliseconds(200));
  const auto tried = allowed.inspect();
  REQUIRE_FALSE(tried);
  CHECK(tried.error().code != fault::errc::invalid_target);  // it tried the network

  config::DockerTarget bad_files{"tcp://10.1.2.3:2376", "k1"};
  bad_files.tls = config::DockerTls{"/nonexistent/ca.pem", "", ""};
  fault::DockerInjector unusable(bad_files, fault::LogZone::utc, clock);
  const auto unusable_result = unusable.inspect();
  REQUIRE_FALSE(unusable_result);
  CHECK(unusable_result.error().code == fault::errc::invalid_target);
  CHECK(unusable_result.error().message.find(
            "docker.tls.ca_file: cannot use /nonexistent/ca.pem") == 0);
}

}  // namespace docker_tls_test
