// Where kfaild finds the dashboard it was installed with (cmake --install, the Debian package).

#include "api/static_files.h"

#include <catch2/catch.hpp>
#include <fstream>

#include "tests/support/temp_dir.h"

namespace static_files_test {

using namespace kfaild;

TEST_CASE(
    "the installed dashboard is share/kfaild/web beside the binary's bin, only with an index.html",
    "[unit][api]") {
  testing::TempDir dir;
  const auto prefix = dir.path() / "usr";
  std::filesystem::create_directories(prefix / "bin");
  std::filesystem::create_directories(prefix / "share" / "kfaild" / "web");
  const auto binary = prefix / "bin" / "kfaild";
  // No index.html: nothing to serve.
  CHECK(api::installedWebDir(binary).empty());
  std::ofstream(prefix / "share" / "kfaild" / "web" / "index.html") << "<!doctype html>";
  CHECK(api::installedWebDir(binary) == (prefix / "share" / "kfaild" / "web").string());
  // A binary elsewhere (a build tree) has none.
  CHECK(api::installedWebDir(dir.path() / "build" / "server" / "kfaild").empty());
  api::StaticFiles files;
  CHECK(files.load(api::installedWebDir(binary)));
  CHECK(files.fileCount() == 1);
}

}  // namespace static_files_test
