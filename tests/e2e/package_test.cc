// The Debian package (scripts/package, cmake/package.cmake): built from the test command's build
// tree, checked by lintian, unpacked by dpkg into a clean root, and the kfaild in it run against
// the lab: it loads its own librdkafka, probes, and serves the dashboard it was installed with.

#include <sys/stat.h>

#include <fstream>

#include "tests/e2e/e2e_support.h"
#include "tests/support/shell.h"

namespace package_test {

using namespace kfaild;
using namespace kfaild::e2e;
using nlohmann::json;

TEST_CASE(
    "the Debian package passes lintian, dpkg unpacks it into a clean root, and its kfaild probes "
    "the lab and "
    "serves its dashboard at /",
    "[e2e][package]") {
  testing::TempDir dir;
  const auto made =
      testing::run("KFAILD_BUILD_DIR=" + testing::quoted(KFAILD_BINARY_DIR) + " " +
                   testing::quoted(KFAILD_SOURCE_DIR "/scripts/package") + " --no-build");
  INFO(made.output.substr(made.output.size() > 6000 ? made.output.size() - 6000 : 0));
  REQUIRE(made.status ==
          0);  // lintian found no error and no warning beyond the explained overrides
  // The script prints the package's path last.
  auto text = made.output;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  const auto deb = text.substr(text.rfind('\n') + 1);
  REQUIRE(std::filesystem::is_regular_file(deb));
  CHECK_THAT(deb, Catch::EndsWith("_amd64.deb"));

  // A clean root: an empty dpkg database and nothing else. --unpack puts the files in place and
  // registers them; the postinst (systemd-sysusers) is not run, so the host's users stay as they
  // are. Its dependencies are the host's libraries, which the root does not have.
  const auto root = dir / "root";
  for (const char* d : {"var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers"}) {
    std::filesystem::create_directories(root / d);
  }
  std::ofstream(root / "var/lib/dpkg/status");
  std::ofstream(root / "var/lib/dpkg/available");
  const auto unpacked = testing::run("dpkg --root=" + testing::quoted(root) +
                                     " --force-depends --unpack " + testing::quoted(deb));
  INFO(unpacked.output);
  REQUIRE(unpacked.status == 0);
  const auto status = testing::run("dpkg --root=" + testing::quoted(root) + " -s kfaild");
  CHECK_THAT(status.output, Catch::Contains("Status: install ok unpacked") &&
                                Catch::Contains("/etc/kfaild/kfaild.yaml"));
  CHECK_THAT(testing::readFile(root / "lib/systemd/system/kfaild.service"),
             Catch::Contains("ExecStart=/usr/bin/kfaild --config /etc/kfaild/kfaild.yaml"));
  // The conffile waits as .dpkg-new until the package is configured (dpkg keeps an edited one).
  for (const char* f :
       {"usr/bin/kfailctl", "usr/lib/sysusers.d/kfaild.conf", "etc/kfaild/kfaild.yaml.dpkg-new",
        "usr/share/kfaild/web/index.html", "usr/lib/kfaild/librdkafka.so.1",
        "usr/share/doc/kfaild/copyright", "usr/share/doc/kfaild/changelog.gz",
        "usr/lib/kfaild/kfaild-gray", "usr/share/doc/kfaild/examples/kfaild-gray.sudoers"}) {
    INFO(f);
    CHECK(std::filesystem::is_regular_file(root / f));
  }
  // The configuration may hold credentials: 0640 in a 0750 directory, root's (the postinst, not
  // run here, gives both to the kfaild group: tests/deploy/deploy_files_test.cc runs it).
  struct stat st{};
  REQUIRE(::stat((root / "etc/kfaild").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0750);
  CHECK(st.st_uid == 0);
  REQUIRE(::stat((root / "etc/kfaild/kfaild.yaml.dpkg-new").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0640);
  CHECK(st.st_uid == 0);
  CHECK(testing::readFile(root / "usr/lib/tmpfiles.d/kfaild.conf") ==
        testing::readFile(KFAILD_SOURCE_DIR "/deploy/systemd/kfaild.tmpfiles"));

  const auto binary = (root / "usr/bin/kfaild").string();
  // Its own librdkafka, found through its RUNPATH, not the build's.
  const auto linked = testing::run("ldd " + testing::quoted(binary));
  CHECK_THAT(linked.output,
             Catch::Contains((root / "usr/bin/../lib/kfaild/librdkafka.so.1").string()));

  // Against the lab, with no http.web_dir: the dashboard installed beside it.
  Lab lab;
  Kfaild kfaild(lab, "kfaild", binary);
  kfaild.waitSteady(lab.topic);
  CHECK_THAT(readAll(kfaild.log), Catch::Contains("dashboard: ") &&
                                      Catch::Contains((root / "usr/share/kfaild/web").string()));
  const auto page = api::testing::httpGet(kfaild.port, "/");
  CHECK(page.status == 200);
  CHECK_THAT(page.body, Catch::Contains("<!doctype html>") || Catch::Contains("<!DOCTYPE html>"));
  const auto cli =
      testing::run(testing::quoted(root / "usr/bin/kfailctl") +
                   " --url http://127.0.0.1:" + std::to_string(kfaild.port) + " list --json");
  INFO(cli.output);
  CHECK(cli.status == 0);
}

}  // namespace package_test
