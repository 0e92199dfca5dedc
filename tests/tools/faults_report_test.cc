// scripts/faults-report: docs/FAULTS.md from drills' JSON, on a fixture of three runs.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "tests/support/paths.h"
#include "tests/support/shell.h"
#include "tests/support/temp_dir.h"

namespace faults_report_test {

using namespace kfaild;

TEST_CASE("faults-report writes a row per fault with its mechanism, expected and measured range",
          "[unit]") {
  const testing::TempDir dir;
  const auto out = dir.path() / "FAULTS.md";
  const std::string source = KFAILD_SOURCE_DIR;
  const auto ran = testing::run(
      testing::quoted(source + "/scripts/faults-report") + " report --results " +
      testing::quoted(source + "/tests/tools/faults_report") + " --out " + testing::quoted(out));
  INFO(ran.output);
  REQUIRE(ran.status == 0);
  const auto page = testing::readFile(out);
  INFO(page);
  // The fixture: broker 1 isolated from the brokers, 3 runs; it leads p0 (30.41, 30.38, 30.50 s)
  // and follows p1 and p2 (30.22, 30.25, 30.60, 30.31, 30.29 s, and one stall without isr_shrink).
  CHECK(page.find(
            "`isolate, from: brokers, drop, 60 s`, drill 41, 3 run(s) | leader | isr_shrink | "
            "30.00 s (replica.lag.time.max.ms) | 30.38 s–30.50 s (3 stalls) | isr_shrink ×3 |") !=
        std::string::npos);
  CHECK(
      page.find("| follower | isr_shrink | 30.00 s (replica.lag.time.max.ms) | 30.22 s–30.60 s (5 "
                "stalls), "
                "n/a ×1 | isr_shrink ×5, inconclusive: the stall ended at 12.000 s after the fault "
                "without isr_shrink |") != std::string::npos);
  // Rows of the plan without JSON say so and invent nothing.
  CHECK(page.find("| leader isolated from all, drop | — | — | — | not run yet | — |") !=
        std::string::npos);
  CHECK(page.find("| disk_full of a leader | — | — | — | not run yet | — |") != std::string::npos);
  CHECK(page.find("- `request.timeout.ms`: 30000") != std::string::npos);
}

}  // namespace faults_report_test
