// kfaild started with a broken configuration: each mistake stops it with exit status 2 and a
// message naming the key and the problem, before it creates its database or connects anywhere,
// and the token never appears in what it prints.

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/reliability_record.h"
#include "tests/support/temp_dir.h"

namespace config_start_test {

namespace {

constexpr const char* kToken = "config-test-token-0123456789";

struct Outcome {
  int status = -1;
  std::string output;
};

Outcome runKfaild(const std::string& config) {
  // A kfaild that wrongly starts is stopped after 20 s (status 124).
  const auto command =
      "timeout 20 " + kfaild::testing::kfaildBinary() + " --config " + config + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  Outcome outcome;
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) outcome.output.append(buffer, n);
  const int status = pclose(pipe);
  outcome.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return outcome;
}

// A loopback port held open by this test, so that kfaild cannot bind it.
struct HeldPort {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int port = 0;
  HeldPort() {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(listen(fd, 1) == 0);
    socklen_t length = sizeof address;
    getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    port = ntohs(address.sin_port);
  }
  ~HeldPort() { close(fd); }
};

}  // namespace

TEST_CASE(
    "kfaild refuses every kind of configuration mistake at start with exit 2, naming the key, "
    "before it creates its database",
    "[integration][config][reliability]") {
  kfaild::testing::Record record("config-mistakes");
  kfaild::testing::TempDir dir;
  const auto token_file = (dir / "token").string();
  std::ofstream(token_file) << kToken << "\n";
  std::ofstream(dir / "short-token") << "short\n";
  std::ofstream(dir / "shared-token") << kToken << "\n";  // left readable by others
  const auto owner_only = std::filesystem::perms::owner_read | std::filesystem::perms::owner_write;
  std::filesystem::permissions(token_file, owner_only);
  std::filesystem::permissions(dir / "short-token", owner_only);
  std::filesystem::permissions(dir / "shared-token",
                               owner_only | std::filesystem::perms::others_read);
  const auto db = (dir / "kfaild.db").string();
  HeldPort held;

  // A valid configuration with one line changed each time. Port 1 on loopback: kfaild must never
  // get as far as connecting to it.
  const auto config = [&](const std::string& http, const std::string& cluster_extra,
                          const std::string& top = "") {
    return "log_level: info\n" + top + "storage: {path: " + db + "}\nhttp: {" +
           (http.empty() ? "port: 0, token_file: " + token_file : http) +
           "}\nclusters:\n  - name: lab\n    bootstrap: 127.0.0.1:1\n    probe:\n      "
           "interval_ms: 20\n" +
           "      topics: [orders]\n" + cluster_extra;
  };
  struct Mistake {
    std::string what, yaml, expected;
  };
  const std::vector<Mistake> mistakes = {
      {"not YAML", "clusters: [\n", "not valid YAML"},
      {"unknown top-level key", config("", "", "shutdown_grace: 5\n"),
       "shutdown_grace: unknown key"},
      {"misspelt probe key", config("", "    probe2: {}\n"), "clusters[0].probe2: unknown key"},
      {"interval out of range",
       config("", "").replace(config("", "").find("interval_ms: 20"), 15, "interval_ms: 0"),
       "clusters[0].probe.interval_ms: must be between 1 and 60000, got 0"},
      {"negative grace period", config("", "", "shutdown_grace_s: -1\n"), "shutdown_grace_s"},
      {"huge port", config("port: 70000, token_file: " + token_file, ""), "http.port"},
      {"a key given twice", config("port: 0, port: 8080, token_file: " + token_file, ""),
       "http.port: given twice"},
      {"token file missing", config("token_file: " + (dir / "nope").string(), ""),
       "http.token_file: cannot read"},
      {"token too short", config("token_file: " + (dir / "short-token").string(), ""),
       "http.token_file: the token in"},
      {"token file readable by others",
       config("port: 0, token_file: " + (dir / "shared-token").string(), ""),
       "http.token_file: " + (dir / "shared-token").string() +
           " has mode 0604, more than owner read and write"},
      {"viewer token the operator's",
       config("port: 0, token_file: " + token_file + ", viewer_token_file: " + token_file, ""),
       "http.viewer_token_file: holds the operator's token"},
      {"auth neither token nor none", config("port: 0, auth: basic", ""),
       "http.auth: must be token or none"},
      {"auth none beside a token file",
       config("port: 0, auth: none, token_file: " + token_file, ""), "http.auth: none contradicts"},
      {"a Host name that is not one", config("port: 0, allowed_hosts: [\"a/b\"]", ""),
       "http.allowed_hosts: 'a/b'"},
      {"non-loopback address without a token", config("host: 0.0.0.0, port: 0, auth: none", ""),
       "auth: a token is required to listen on 0.0.0.0"},
      {"dashboard directory missing",
       config("port: 0, token_file: " + token_file + ", web_dir: " + (dir / "no-web").string(), ""),
       "http.web_dir"},
      {"port in use",
       config("port: " + std::to_string(held.port) + ", token_file: " + token_file, ""),
       "cannot listen on 127.0.0.1:" + std::to_string(held.port)},
      {"client property librdkafka does not know",
       config("", "    client: {no.such.property: \"1\"}\n"),
       "clusters[0].client: invalid client property: no.such.property"},
      {"client property with a bad value", config("", "    client: {socket.timeout.ms: \"-5\"}\n"),
       "clusters[0].client: invalid client property: socket.timeout.ms"},
      {"a node reached two ways",
       config("",
              "    inventory:\n      - id: 1\n        docker: {container: k1}\n"
              "        local: {pid_file: /x, start_command: [/bin/true]}\n"),
       "clusters[0].inventory[0]"},
      {"duplicate cluster name",
       config("", "  - name: lab\n    bootstrap: 127.0.0.1:2\n    probe: {topics: [orders]}\n"),
       "clusters[1].name"},
  };
  int refused = 0;
  for (std::size_t i = 0; i < mistakes.size(); ++i) {
    const auto& m = mistakes[i];
    const auto path = (dir / ("mistake-" + std::to_string(i) + ".yaml")).string();
    std::ofstream(path) << m.yaml;
    const auto outcome = runKfaild(path);
    INFO(m.what << ":\n" << m.yaml << "\n-> " << outcome.status << ": " << outcome.output);
    CHECK(outcome.status == 2);
    CHECK(outcome.output.find("configuration error") != std::string::npos);
    CHECK(outcome.output.find(m.expected) != std::string::npos);
    CHECK(outcome.output.find(kToken) == std::string::npos);
    CHECK_FALSE(std::filesystem::exists(db));
    if (outcome.status == 2 && !std::filesystem::exists(db)) ++refused;
  }
  record["mistakes_tried"] = static_cast<int>(mistakes.size());
  record["refused_with_exit_2_before_the_database"] = refused;
  record.completed();
}

}  // namespace config_start_test
