// The deploy files checked by the tools that run them, since no Docker engine or systemd runs on
// the machines kfaild is tested on: systemd-analyze and systemd-sysusers read the unit and the
// sysusers file, podman-compose reads the compose file (dry run, nothing created), the Compose
// Specification's schema and hadolint (tests/deploy/lint) check the compose file and the
// Dockerfile, and kfaild's own loader and --check-config read the example configurations. Each
// check is also run on a broken copy, to show that it can fail. Cross-checks tie the files to each
// other: the compose user is the image's, the inventory names compose's containers, the mounted
// config is where the image's CMD looks for it.

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "server/config/config.h"
#include "tests/support/paths.h"
#include "tests/support/process.h"
#include "tests/support/shell.h"
#include "tests/support/temp_dir.h"

namespace deploy_files_test {

namespace fs = std::filesystem;
using kfaild::testing::quoted;
using kfaild::testing::Ran;
using kfaild::testing::readFile;
using kfaild::testing::replacedOnce;
using kfaild::testing::run;
using kfaild::testing::TempDir;

namespace {

const fs::path kSource = KFAILD_SOURCE_DIR;
const std::string kUnitExecStart = "/usr/local/bin/kfaild --config /etc/kfaild/kfaild.yaml";

void writeFile(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

// The value of the unit's `key=` line (the last one when repeated, as systemd reads it).
std::string unitValue(const std::string& unit, const std::string& key) {
  std::string value;
  for (const auto& line : lines(unit)) {
    if (line.rfind(key + "=", 0) == 0) value = line.substr(key.size() + 1);
  }
  return value;
}

// The arguments of the last Dockerfile instruction `name` (e.g. "USER"), or "".
std::string dockerfileInstruction(const std::string& dockerfile, const std::string& name) {
  std::string value;
  for (const auto& line : lines(dockerfile)) {
    if (line.rfind(name + " ", 0) == 0) value = line.substr(name.size() + 1);
  }
  return value;
}

// The unit as installed, but starting the kfaild this build made: systemd-analyze verify checks
// that ExecStart's program exists.
std::string unitWithBuiltBinary() {
  const auto unit = readFile(kSource / "deploy/systemd/kfaild.service");
  REQUIRE(fs::exists(kfaild::testing::kfaildBinary()));
  return replacedOnce(unit, "ExecStart=/usr/local/bin/kfaild ",
                      "ExecStart=" + kfaild::testing::kfaildBinary() + " ");
}

Ran systemdAnalyze(const std::string& command, const TempDir& dir, const std::string& unit) {
  writeFile(dir / "kfaild.service", unit);
  return run("systemd-analyze " + command + " " + quoted(dir / "kfaild.service"));
}

// What podman-compose would run for deploy/compose.yaml: it reads a copy in a temporary
// deploy/ (podman-compose creates missing bind-mount sources as directories, which must not
// happen in the checkout), calls /bin/true instead of podman, and only prints the commands.
struct ComposePlan {
  Ran ran;
  std::map<std::string, std::vector<std::string>> containers;  // --name → podman create args
};

ComposePlan planCompose(const TempDir& dir, const std::string& environment) {
  ComposePlan plan;
  writeFile(dir / "deploy/compose.yaml", readFile(kSource / "deploy/compose.yaml"));
  plan.ran = run("cd " + quoted(dir.path()) + " && env " + environment +
                 " podman-compose --dry-run --podman-path /bin/true -f " +
                 quoted(dir / "deploy/compose.yaml") + " up --no-build --no-start");
  for (const auto& line : lines(plan.ran.output)) {
    auto args = words(line);
    if (args.size() < 3 || args[1] != "create" || args[2].rfind("--name=", 0) != 0) continue;
    plan.containers[args[2].substr(7)] = args;
  }
  return plan;
}

std::vector<std::string> optionValues(const std::vector<std::string>& args,
                                      const std::string& option) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == option) out.push_back(args[i + 1]);
  }
  return out;
}

bool hasOption(const std::vector<std::string>& args, const std::string& option,
               const std::string& value) {
  for (const auto& v : optionValues(args, option)) {
    if (v == value) return true;
  }
  return false;
}

std::string lint(const std::string& kind, const fs::path& file, int* status) {
  const auto ran = run(quoted(kSource / "tests/deploy/lint") + " " + kind + " " + quoted(file));
  *status = ran.status;
  return ran.output;
}

}  // namespace

TEST_CASE(
    "systemd-analyze verify passes the unit without a warning, and fails a misspelt or "
    "missing one",
    "[integration][deploy]") {
  const auto unit = readFile(kSource / "deploy/systemd/kfaild.service");
  CHECK(unitValue(unit, "ExecStart") == kUnitExecStart);

  TempDir good;
  const auto verified = systemdAnalyze("verify", good, unitWithBuiltBinary());
  INFO(verified.output);
  CHECK(verified.status == 0);
  CHECK(verified.output.empty());  // a warning is a failure: systemd ignores what it cannot read

  // systemd-analyze exits 0 on an unknown directive; only its warning tells.
  TempDir misspelt;
  const auto unknown = systemdAnalyze(
      "verify", misspelt,
      replacedOnce(unitWithBuiltBinary(), "\nProtectHome=yes\n", "\nProtectHomes=yes\n"));
  CHECK(unknown.output.find("Unknown key") != std::string::npos);

  TempDir missing;
  const auto absent = systemdAnalyze(
      "verify", missing,
      replacedOnce(unit, "ExecStart=/usr/local/bin/kfaild ", "ExecStart=/nonexistent/kfaild "));
  CHECK(absent.status != 0);
}

TEST_CASE("the unit's sandbox keeps systemd-analyze security's exposure at 2.5 of 10 or below",
          "[integration][deploy]") {
  const auto unit = unitWithBuiltBinary();
  for (const auto* directive :
       {"User=kfaild", "StateDirectory=kfaild", "ProtectSystem=strict", "ProtectHome=yes",
        "NoNewPrivileges=yes", "PrivateTmp=yes", "Restart=on-failure"}) {
    INFO(directive);
    CHECK(unit.find(std::string("\n") + directive + "\n") != std::string::npos);
  }
  // systemd must give kfaild its whole shutdown grace to bring a drilled node back.
  const auto stop_timeout = unitValue(unit, "TimeoutStopSec");
  REQUIRE(stop_timeout.size() > 1);
  REQUIRE(stop_timeout.back() == 's');
  CHECK(std::stoll(stop_timeout) > kfaild::config::Config{}.shutdown_grace_s);

  TempDir sandboxed;
  const auto rated = systemdAnalyze("security --offline=yes --threshold=25", sandboxed, unit);
  INFO(rated.output);
  CHECK(rated.status == 0);
  CHECK(rated.output.find("Overall exposure level for kfaild.service") != std::string::npos);

  const auto sandboxing = [](const std::string& line) {
    for (const auto* prefix : {"Protect", "Private", "Restrict", "NoNewPrivileges", "Capability",
                               "SystemCall", "MemoryDeny", "LockPersonality"}) {
      if (line.rfind(prefix, 0) == 0) return true;
    }
    return false;
  };
  std::string loose;
  for (const auto& line : lines(unit)) {
    if (!sandboxing(line)) loose += line + "\n";
  }
  TempDir unsandboxed;
  CHECK(systemdAnalyze("security --offline=yes --threshold=25", unsandboxed, loose).status != 0);
}

TEST_CASE(
    "systemd-sysusers creates the unit's user from the sysusers file, and refuses a "
    "malformed one",
    "[integration][deploy]") {
  const auto sysusers = readFile(kSource / "deploy/systemd/kfaild.sysusers");
  const auto unit = readFile(kSource / "deploy/systemd/kfaild.service");
  TempDir root;
  fs::create_directories(root / "etc");
  const auto created = run("systemd-sysusers --dry-run --root=" + quoted(root.path()) + " " +
                           quoted(kSource / "deploy/systemd/kfaild.sysusers"));
  INFO(created.output);
  CHECK(created.status == 0);
  CHECK(created.output.find("Creating user '" + unitValue(unit, "User") + "'") !=
        std::string::npos);
  CHECK(created.output.find("Creating group '" + unitValue(unit, "Group") + "'") !=
        std::string::npos);
  // Its home is the state directory, where ssh finds ~/.ssh behind ProtectHome=yes.
  CHECK(sysusers.find(" /var/lib/" + unitValue(unit, "StateDirectory") + " ") != std::string::npos);

  writeFile(root / "broken.conf",
            replacedOnce(sysusers, "/usr/sbin/nologin", "/usr/sbin/nologin x"));
  CHECK(run("systemd-sysusers --dry-run --root=" + quoted(root.path()) + " " +
            quoted(root / "broken.conf"))
            .status != 0);
}

namespace {

// The gid of `group` in the group file of the root at `root`, or -1.
long groupId(const fs::path& root, const std::string& group) {
  for (const auto& line : lines(readFile(root / "etc/group"))) {
    if (line.rfind(group + ":x:", 0) == 0) return std::stol(line.substr(group.size() + 3));
  }
  return -1;
}

struct Owned {
  unsigned mode = 0;
  long uid = -1;
  long gid = -1;
};

Owned ownedBy(const fs::path& path) {
  struct stat st{};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return {static_cast<unsigned>(st.st_mode & 07777), static_cast<long>(st.st_uid),
          static_cast<long>(st.st_gid)};
}

}  // namespace

TEST_CASE(
    "the package's postinst gives /etc/kfaild and its kfaild.yaml to the kfaild group, 0750 and "
    "0640, "
    "as the unit's ConfigurationDirectoryMode says, and a misspelt group fails",
    "[integration][deploy]") {
  const auto unit = readFile(kSource / "deploy/systemd/kfaild.service");
  CHECK(unitValue(unit, "ConfigurationDirectoryMode") == "0750");
  // cmake/package.cmake ships both that way before the group exists (tests/e2e/package_test.cc
  // checks the package itself).
  const auto package = readFile(kSource / "cmake/package.cmake");
  CHECK(package.find("install(DIRECTORY DESTINATION /etc/kfaild\n"
                     "        DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE "
                     "GROUP_READ GROUP_EXECUTE)") != std::string::npos);
  CHECK(package.find(
            "DESTINATION /etc/kfaild\n        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ)") !=
        std::string::npos);
  if (::geteuid() != 0) {
    SUCCEED("not root: the postinst cannot give files to a group");
    return;
  }

  // The root as dpkg leaves it before the postinst: the package's files, the configuration left
  // readable by everyone (as a manual install or an older package did).
  const auto unpacked = [](const TempDir& root, const std::string& tmpfiles) {
    writeFile(root / "usr/lib/sysusers.d/kfaild.conf",
              readFile(kSource / "deploy/systemd/kfaild.sysusers"));
    writeFile(root / "usr/lib/tmpfiles.d/kfaild.conf", tmpfiles);
    writeFile(root / "etc/kfaild/kfaild.yaml", readFile(kSource / "deploy/systemd/kfaild.yaml"));
    fs::permissions(root / "etc/kfaild", fs::perms(0755));
    fs::permissions(root / "etc/kfaild/kfaild.yaml", fs::perms(0644));
    return run("DPKG_ROOT=" + quoted(root.path()) + " sh " +
               quoted(kSource / "deploy/debian/postinst") + " configure");
  };
  const auto tmpfiles = readFile(kSource / "deploy/systemd/kfaild.tmpfiles");
  TempDir root;
  const auto configured = unpacked(root, tmpfiles);
  INFO(configured.output);
  REQUIRE(configured.status == 0);
  const auto group = groupId(root.path(), unitValue(unit, "Group"));
  REQUIRE(group > 0);
  const auto directory = ownedBy(root / "etc/kfaild");
  CHECK(directory.mode == 0750);
  CHECK(directory.uid == 0);
  CHECK(directory.gid == group);
  const auto config = ownedBy(root / "etc/kfaild/kfaild.yaml");
  CHECK(config.mode == 0640);
  CHECK(config.uid == 0);
  CHECK(config.gid == group);

  TempDir misspelt;
  CHECK(
      unpacked(misspelt, replacedOnce(tmpfiles, "0640 root kfaild", "0640 root kfailed")).status !=
      0);
  CHECK(ownedBy(misspelt / "etc/kfaild/kfaild.yaml").mode == 0644);
}

TEST_CASE(
    "the compose file follows the Compose Specification's schema, which refuses an unknown "
    "key",
    "[integration][deploy]") {
  int status = -1;
  const auto valid = lint("compose", kSource / "deploy/compose.yaml", &status);
  INFO(valid);
  CHECK(status == 0);

  TempDir dir;
  writeFile(dir / "compose.yaml",
            replacedOnce(readFile(kSource / "deploy/compose.yaml"), "\n    read_only: true\n",
                         "\n    read_only: true\n    restart_policy: always\n"));
  const auto invalid = lint("compose", dir / "compose.yaml", &status);
  CHECK(status == 1);
  CHECK(invalid.find("restart_policy") != std::string::npos);
}

TEST_CASE(
    "podman-compose reads the compose file: kfaild runs as the image's user, unprivileged, "
    "with every mounted file from the repository",
    "[integration][deploy]") {
  TempDir dir;
  writeFile(dir / "docker.sock", "");
  const auto plan = planCompose(
      dir, "KFAILD_DOCKER_GID=990 KFAILD_DOCKER_SOCKET=" + (dir / "docker.sock").string());
  INFO(plan.ran.output);
  REQUIRE(plan.ran.status == 0);
  CHECK(plan.containers.size() == 5);
  REQUIRE(plan.containers.count("kfaild-lab-kfaild") == 1);
  const auto& kfaild = plan.containers.at("kfaild-lab-kfaild");

  const auto dockerfile = readFile(kSource / "deploy/Dockerfile");
  const auto image_user = dockerfileInstruction(dockerfile, "USER");
  CHECK(image_user == "10001:10001");
  CHECK(optionValues(kfaild, "-u") == std::vector<std::string>{image_user});
  CHECK(hasOption(kfaild, "--cap-drop", "ALL"));
  CHECK(hasOption(kfaild, "--security-opt", "no-new-privileges:true"));
  CHECK(std::find(kfaild.begin(), kfaild.end(), "--read-only") != kfaild.end());
  CHECK(optionValues(kfaild, "-p") == std::vector<std::string>{"127.0.0.1:8080:8080"});

  // Mount sources: the socket from KFAILD_DOCKER_SOCKET, files of the repository (the temporary
  // root stands for it), or named volumes; nothing else of the host.
  std::map<std::string, std::string> mounted;  // target → source relative to the repository
  for (const auto& volume : optionValues(kfaild, "-v")) {
    INFO(volume);
    const auto source = volume.substr(0, volume.find(':'));
    const auto target = volume.substr(source.size() + 1);
    if (source == (dir / "docker.sock").string()) {
      CHECK(target == "/var/run/docker.sock");
    } else if (source.find('/') == std::string::npos) {
      CHECK(target == "/var/lib/kfaild");  // the named volume for the database and the token
    } else {
      const auto relative = fs::path(source).lexically_relative(dir.path());
      REQUIRE_FALSE(relative.empty());
      CHECK(relative.begin()->string() != "..");
      CHECK(fs::is_regular_file(kSource / relative));
      mounted[target] = relative.string();
    }
  }
  // The configuration is where the image's CMD looks for it, read-only.
  CHECK(dockerfileInstruction(dockerfile, "CMD") == R"(["--config", "/etc/kfaild/kfaild.yaml"])");
  CHECK(mounted.at("/etc/kfaild/kfaild.yaml:ro") == "deploy/examples/kfaild.compose.yaml");
  // The image's state directory belongs to its user, so that a new volume does too.
  CHECK(dockerfile.find("chown kfaild:kfaild /var/lib/kfaild") != std::string::npos);

  TempDir unset;
  writeFile(unset / "docker.sock", "");
  const auto refused = planCompose(
      unset, "-u KFAILD_DOCKER_GID KFAILD_DOCKER_SOCKET=" + (unset / "docker.sock").string());
  CHECK(refused.ran.status != 0);
  CHECK(refused.ran.output.find("set KFAILD_DOCKER_GID") != std::string::npos);
}

TEST_CASE("hadolint passes the Dockerfile, and refuses an image that ends as root",
          "[integration][deploy]") {
  int status = -1;
  const auto clean = lint("dockerfile", kSource / "deploy/Dockerfile", &status);
  INFO(clean);
  CHECK(status == 0);

  TempDir dir;
  writeFile(dir / "Dockerfile", readFile(kSource / "deploy/Dockerfile") + "USER root\n");
  const auto root = lint("dockerfile", dir / "Dockerfile", &status);
  CHECK(status == 1);
  CHECK(root.find("DL3002") != std::string::npos);
}

TEST_CASE(
    "kfaild loads the example configurations of compose and systemd, and they match the "
    "files that deploy them",
    "[integration][deploy]") {
  const auto compose_config = kSource / "deploy/examples/kfaild.compose.yaml";
  const auto systemd_config = kSource / "deploy/systemd/kfaild.yaml";

  SECTION("the compose example") {
    const auto c = kfaild::config::loadConfigFile(compose_config.string());
    CHECK(c.storage.path == "/var/lib/kfaild/kfaild.db");  // on the kfaild-data volume
    CHECK(c.http.host == "0.0.0.0");
    CHECK(c.http.port == 8080);
    CHECK(c.http.token_file.empty());  // kfaild generates the token beside the database
    const auto web =
        dockerfileInstruction(readFile(kSource / "deploy/Dockerfile"), "COPY --from=web");
    CHECK(web.substr(web.rfind(' ') + 1) == c.http.web_dir + "/");

    TempDir dir;
    writeFile(dir / "docker.sock", "");
    const auto plan = planCompose(
        dir, "KFAILD_DOCKER_GID=990 KFAILD_DOCKER_SOCKET=" + (dir / "docker.sock").string());
    REQUIRE(c.clusters.size() == 1);
    REQUIRE(c.clusters[0].inventory.size() == 4);
    for (const auto& node : c.clusters[0].inventory) {
      REQUIRE(node.docker);
      INFO(node.docker->container);
      CHECK(plan.containers.count(node.docker->container) == 1);
      CHECK(node.docker->endpoint == "unix:///var/run/docker.sock");
    }
  }
  SECTION("the systemd example") {
    const auto c = kfaild::config::loadConfigFile(systemd_config.string());
    const auto unit = readFile(kSource / "deploy/systemd/kfaild.service");
    CHECK(fs::path(c.storage.path).parent_path() ==
          "/var/lib/" + unitValue(unit, "StateDirectory"));
    CHECK(c.http.host == "127.0.0.1");
    CHECK(c.http.token_file.empty());
  }
  SECTION("kfaild --check-config accepts both") {
    for (const auto& file : {compose_config, systemd_config}) {
      const auto checked =
          run(kfaild::testing::kfaildBinary() + " --config " + quoted(file) + " --check-config");
      INFO(checked.output);
      CHECK(checked.status == 0);
    }
  }
}

}  // namespace deploy_files_test
