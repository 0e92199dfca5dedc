#define CATCH_CONFIG_RUNNER
#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <sstream>
#include <string>

#include "tests/support/paths.h"

namespace {

// The lab ctest gave this test (tests/CMakeLists.txt): CTEST_RESOURCE_GROUP_0_LAB is "id:b,slots:1"
// and KFAILD_E2E_LABS "b:18000:<dir>,..." says where lab `b` lives. Lab `a` is the default one, and
// so is every lab when ctest ran without its resource spec (a test run by hand).
void useAssignedLab() {
  const char* group = std::getenv("CTEST_RESOURCE_GROUP_0");
  const char* assigned = std::getenv("CTEST_RESOURCE_GROUP_0_LAB");
  const char* labs = std::getenv("KFAILD_E2E_LABS");
  if (group == nullptr || std::string(group) != "lab" || assigned == nullptr || labs == nullptr)
    return;
  std::string id(assigned);
  if (id.rfind("id:", 0) != 0) return;
  id = id.substr(3, id.find(',') - 3);
  std::stringstream entries(labs);
  for (std::string entry; std::getline(entries, entry, ',');) {
    const auto first = entry.find(':');
    const auto second = entry.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos || entry.substr(0, first) != id)
      continue;
    setenv("KFAILD_LAB_PORT_BASE", entry.substr(first + 1, second - first - 1).c_str(), 1);
    setenv("KFAILD_LAB_DIR", entry.substr(second + 1).c_str(), 1);
  }
}

}  // namespace

int main(int argc, char* argv[]) {
  // Tests assert on behaviour, not on log output; keep the console readable unless asked.
  const char* level = std::getenv("KFAILD_TEST_LOG");
  spdlog::set_level(level ? spdlog::level::from_str(level) : spdlog::level::warn);
  useAssignedLab();
  // The gray-fault helper the tests run, and the kfaild processes they start: this build's.
  setenv("KFAILD_GRAY_HELPER", KFAILD_BINARY_DIR "/server/kfaild-gray", 0);
  return Catch::Session().run(argc, argv);
}
