// Secrets in the configuration: a receiver's url and headers have the forms every other secret
// has (${env:NAME}, `<key>_file`), every `<key>_file` is read as a token file is (no symbolic
// link, kfaild's user's own, owner-only), and a secret left inline in a file that more than its
// owner can read is a warning at start naming the key and the file.

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "server/config/config.h"
#include "server/config/config_file.h"
#include "tests/support/process.h"
#include "tests/support/shell.h"
#include "tests/support/temp_dir.h"

namespace config_secrets_test {

namespace {

namespace fs = std::filesystem;
using kfaild::config::ConfigError;
using kfaild::config::parseConfig;

const std::string kCluster = R"(
clusters:
  - name: lab
    bootstrap: 127.0.0.1:19091
    probe: {topics: [orders]}
)";

constexpr const char* kHookUrl = "https://hooks.example.com/services/T000/B000/secretpath";

std::string errorOf(const std::string& yaml) {
  try {
    parseConfig(yaml, "test.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

fs::path writeSecret(const fs::path& path, const std::string& line, mode_t mode = 0600) {
  std::ofstream(path) << line << "\n";
  REQUIRE(::chmod(path.c_str(), mode) == 0);
  return path;
}

std::string receiver(const std::string& fields) {
  return kCluster + "notifications:\n  receivers:\n    - {name: hook, type: slack, " + fields +
         "}\n";
}

std::string clientSecret(const std::string& property) {
  return R"(
clusters:
  - name: lab
    bootstrap: 127.0.0.1:19091
    probe: {topics: [orders]}
    client:
      security.protocol: sasl_plaintext
      sasl.mechanism: PLAIN
      sasl.username: probe
      )" +
         property + "\n";
}

}  // namespace

TEST_CASE(
    "a receiver's url and headers come from an environment variable or an owner-only file, and "
    "each "
    "mistake names its key without the value",
    "[unit][config][notify]") {
  kfaild::testing::TempDir dir;
  ::setenv("KFAILD_TEST_HOOK_URL", kHookUrl, 1);
  ::setenv("KFAILD_TEST_HOOK_AUTH", "Bearer from-the-environment", 1);
  ::unsetenv("KFAILD_TEST_HOOK_UNSET");
  const auto url_file = writeSecret(dir / "hook-url", kHookUrl);
  const auto key_file = writeSecret(dir / "hook-key", "key-from-a-file");

  const auto from_env =
      parseConfig(receiver("url: \"${env:KFAILD_TEST_HOOK_URL}\", headers: {Authorization: "
                           "\"${env:KFAILD_TEST_HOOK_AUTH}\", X-Api-Key_file: " +
                           key_file.string() + "}"));
  REQUIRE(from_env.notifications.receivers.size() == 1);
  const auto& hook = from_env.notifications.receivers[0];
  CHECK(hook.url == kHookUrl);
  CHECK(hook.headers.at("Authorization") == "Bearer from-the-environment");
  CHECK(hook.headers.at("X-Api-Key") == "key-from-a-file");
  CHECK(hook.headers.size() == 2);

  const auto from_file = parseConfig(receiver("url_file: " + url_file.string()));
  CHECK(from_file.notifications.receivers[0].url == kHookUrl);

  CHECK(errorOf(receiver("url: http://a.example/x, url_file: " + url_file.string())) ==
        "test.yaml: notifications.receivers[0].url_file: and notifications.receivers[0].url are "
        "both set: keep one");
  CHECK(errorOf(receiver("url: \"${env:KFAILD_TEST_HOOK_UNSET}\"")) ==
        "test.yaml: notifications.receivers[0].url: names the environment variable "
        "KFAILD_TEST_HOOK_UNSET, which is "
        "not set");
  CHECK(
      errorOf(receiver("url: http://a.example/x, headers: {Authorization: "
                       "\"${env:KFAILD_TEST_HOOK_UNSET}\"}")) ==
      "test.yaml: notifications.receivers[0].headers.Authorization: names the environment variable "
      "KFAILD_TEST_HOOK_UNSET, which is not set");
  CHECK(errorOf(receiver("events: [incident]")) ==
        "test.yaml: notifications.receivers[0].url: required (or url_file)");

  const auto not_a_url = writeSecret(dir / "not-a-url", "ftp://hooks.example.com/secretpath");
  const auto refused_url = errorOf(receiver("url_file: " + not_a_url.string()));
  CHECK(refused_url ==
        "test.yaml: notifications.receivers[0].url_file: must start with http:// or https://");

  const auto shared = writeSecret(dir / "shared-url", kHookUrl, 0644);
  const auto refused_mode = errorOf(receiver("url_file: " + shared.string()));
  CHECK_THAT(refused_mode,
             Catch::StartsWith("test.yaml: notifications.receivers[0].url_file: " +
                               shared.string() + " has mode 0644, more than owner read and write"));
  for (const auto& message : {refused_url, refused_mode}) {
    CHECK_THAT(message, !Catch::Contains("secretpath"));
  }
}

TEST_CASE(
    "a <key>_file secret is read as a token file is: a symbolic link or another user's file is "
    "refused, the "
    "owner's own file is read",
    "[unit][config]") {
  kfaild::testing::TempDir dir;
  const auto password = writeSecret(dir / "kafka-password", "s3cret-from-file");
  CHECK(parseConfig(clientSecret("sasl.password_file: " + password.string()))
            .clusters[0]
            .client.at("sasl.password") == "s3cret-from-file");

  // A link to the API token file would send the operator's token to the brokers as the password.
  const auto api_token = writeSecret(dir / "api-token", "0123456789abcdef0123456789abcdef");
  fs::create_symlink(api_token, dir / "linked-password");
  CHECK(errorOf(clientSecret("sasl.password_file: " + (dir / "linked-password").string())) ==
        "test.yaml: clusters[0].client.sasl.password_file: " + (dir / "linked-password").string() +
            " is a symbolic link; give the path of the file itself");
  CHECK_THAT(errorOf(receiver("url_file: " + (dir / "linked-password").string())),
             Catch::Contains("notifications.receivers[0].url_file: ") &&
                 Catch::Contains("is a symbolic link"));

  if (::geteuid() != 0) {
    SUCCEED("not root: a file of another user cannot be set up");
    return;
  }
  const auto theirs = writeSecret(dir / "their-password", "s3cret-of-nobody");
  REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);  // nobody
  const auto refused = errorOf(clientSecret("sasl.password_file: " + theirs.string()));
  CHECK_THAT(refused, Catch::StartsWith(
                          "test.yaml: clusters[0].client.sasl.password_file: " + theirs.string() +
                          " is owned by uid 65534, not by kfaild's user (uid 0)"));
  CHECK_THAT(refused, !Catch::Contains("s3cret"));
}

TEST_CASE(
    "kfaild warns at start about a secret inline in a configuration file that group or others can "
    "read, "
    "naming the key and the file, and not for a file of mode 0600",
    "[integration][config]") {
  kfaild::testing::TempDir dir;
  const auto path = (dir / "kfaild.yaml").string();
  std::ofstream(path)
      << clientSecret("sasl.password: inline-s3cret") +
             "notifications:\n  receivers:\n    - {name: hook, type: slack, url: \"" + kHookUrl +
             "\"}\n";
  const auto check = [&](mode_t mode) {
    REQUIRE(::chmod(path.c_str(), mode) == 0);
    return kfaild::testing::run(kfaild::testing::kfaildBinary() + " --check-config --config " +
                                kfaild::testing::quoted(path));
  };

  const auto shared = check(0644);
  INFO(shared.output);
  CHECK(shared.status == 0);
  CHECK_THAT(shared.output,
             Catch::Contains("warning: " + path +
                             " (mode 0644) is readable by its group and others "
                             "and holds the secret clusters[0].client.sasl.password inline"));
  CHECK_THAT(shared.output,
             Catch::Contains("warning: " + path +
                             " (mode 0644) is readable by its group and others "
                             "and holds the secret notifications.receivers[0].url inline"));
  CHECK_THAT(shared.output, !Catch::Contains("inline-s3cret") && !Catch::Contains("secretpath"));

  const auto owner_only = check(0600);
  INFO(owner_only.output);
  CHECK(owner_only.status == 0);
  CHECK_THAT(owner_only.output, !Catch::Contains("warning"));

  // Started for real (its cluster is down, which is no reason to stop), it logs the same line;
  // timeout's SIGTERM stops it after 3 s.
  std::ofstream(path) << "storage: {path: " + (dir / "kfaild.db").string() +
                             "}\nhttp: {port: 0}\n" +
                             clientSecret("sasl.password: inline-s3cret").substr(1);
  REQUIRE(::chmod(path.c_str(), 0640) == 0);
  const auto started = kfaild::testing::run("timeout -s TERM 3 " + kfaild::testing::kfaildBinary() +
                                            " --config " + kfaild::testing::quoted(path));
  INFO(started.output);
  CHECK_THAT(started.output, Catch::Contains(" starting, librdkafka "));
  CHECK_THAT(started.output, Catch::Contains("config: " + path +
                                             " (mode 0640) is readable by its group and holds "
                                             "the secret clusters[0].client.sasl.password inline"));
  CHECK_THAT(started.output, !Catch::Contains("inline-s3cret"));
}

TEST_CASE(
    "inline secrets are warned about only in a file group or others can read, and secrets kept out "
    "of it or "
    "settings that are not secrets never",
    "[unit][config]") {
  kfaild::testing::TempDir dir;
  ::setenv("KFAILD_TEST_SASL_PASSWORD", "s3cret-from-env", 1);
  const auto path = (dir / "kfaild.yaml").string();
  const auto load = [&](const std::string& yaml, mode_t mode) {
    std::ofstream(path) << yaml;
    REQUIRE(::chmod(path.c_str(), mode) == 0);
    return kfaild::config::loadConfigFileWithWarnings(path).warnings;
  };
  const auto inline_secrets =
      clientSecret("sasl.password: inline-s3cret\n      socket.timeout.ms: \"30000\"") +
      "notifications:\n  receivers:\n    - {name: hook, type: webhook, url: \"" + kHookUrl +
      "\", headers: {Authorization: Bearer inline-token}}\n";

  const auto world = load(inline_secrets, 0644);
  REQUIRE(world.size() == 3);
  const auto has = [](const std::vector<std::string>& lines, const std::string& line) {
    return std::find(lines.begin(), lines.end(), line) != lines.end();
  };
  CHECK(has(world, path + " (mode 0644) is readable by its group and others and holds the secret "
                          "clusters[0].client.sasl.password inline: move it to "
                          "clusters[0].client.sasl.password_file "
                          "(a file only kfaild's user reads) or ${env:NAME}"));
  CHECK(has(
      world,
      path +
          " (mode 0644) is readable by its group and others and holds the secret "
          "notifications.receivers[0].url inline: move it to notifications.receivers[0].url_file "
          "(a file only kfaild's user reads) or ${env:NAME}"));
  CHECK(has(
      world,
      path +
          " (mode 0644) is readable by its group and others and holds the secret "
          "notifications.receivers[0].headers.Authorization inline: move it to "
          "notifications.receivers[0].headers.Authorization_file (a file only kfaild's user reads) "
          "or ${env:NAME}"));
  for (const auto& line : world) {
    CHECK_THAT(line, !Catch::Contains("s3cret") && !Catch::Contains("secretpath") &&
                         !Catch::Contains("inline-token"));
  }
  const auto group = load(inline_secrets, 0640);
  REQUIRE(group.size() == 3);
  CHECK_THAT(group[0], Catch::StartsWith(path + " (mode 0640) is readable by its group and holds"));
  const auto others = load(inline_secrets, 0604);
  REQUIRE(others.size() == 3);
  CHECK_THAT(others[0], Catch::StartsWith(path + " (mode 0604) is readable by others and holds"));
  CHECK(load(inline_secrets, 0600).empty());
  CHECK(load(inline_secrets, 0400).empty());

  const auto url_file = writeSecret(dir / "hook-url", kHookUrl);
  const auto kept_out =
      clientSecret("sasl.password: \"${env:KFAILD_TEST_SASL_PASSWORD}\"") +
      "notifications:\n  receivers:\n    - {name: hook, type: webhook, url_file: " +
      url_file.string() + "}\n";
  CHECK(load(kept_out, 0644).empty());
}

}  // namespace config_secrets_test
