#include "server/config/token_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "tests/support/temp_dir.h"

namespace kfaild::config::token_file_test {
namespace {

namespace fs = std::filesystem;
constexpr const char* kToken = "0123456789abcdef0123456789abcdef";

std::string writeToken(const fs::path& path, mode_t mode) {
  std::ofstream(path) << kToken << "\n";
  REQUIRE(::chmod(path.c_str(), mode) == 0);
  return path.string();
}

TEST_CASE("a token file of kfaild's user with mode 0600 or less is read", "[unit]") {
  testing::TempDir dir;
  CHECK(readTokenFile(writeToken(dir / "token", 0600)).value() == kToken);
  CHECK(readTokenFile(writeToken(dir / "read-only", 0400)).value() == kToken);
}

TEST_CASE("a token file reached through a symbolic link is refused", "[unit]") {
  testing::TempDir dir;
  const auto target = writeToken(dir / "elsewhere", 0600);
  fs::create_symlink(target, dir / "token");
  const auto read = readTokenFile((dir / "token").string());
  REQUIRE_FALSE(read);
  CHECK_THAT(read.error().message, Catch::Contains("is a symbolic link"));
}

TEST_CASE("a token file with more than owner read and write is refused", "[unit]") {
  testing::TempDir dir;
  for (const mode_t mode : {0640, 0604, 0620, 0700, 04600}) {
    CAPTURE(mode);
    const auto read = readTokenFile(writeToken(dir / "token", mode));
    REQUIRE_FALSE(read);
    CHECK_THAT(read.error().message, Catch::Contains("more than owner read and write"));
  }
}

TEST_CASE("a token file owned by another user is refused", "[unit]") {
  testing::TempDir dir;
  const auto path = writeToken(dir / "token", 0600);
  if (::geteuid() != 0) {
    // Only root can give a file away; as another user the open itself would have to fail.
    SUCCEED("not root: the owner check cannot be set up");
    return;
  }
  REQUIRE(::chown(path.c_str(), 4242, 4242) == 0);
  const auto read = readTokenFile(path);
  REQUIRE_FALSE(read);
  CHECK_THAT(read.error().message, Catch::Contains("owned by uid 4242, not by kfaild's user"));
}

}  // namespace
}  // namespace kfaild::config::token_file_test
