#include "server/analysis/incidents.h"

#include <catch2/catch.hpp>

using namespace kfaild;
using namespace kfaild::analysis;

namespace {

storage::Gap gap(std::int32_t partition, storage::GapKind kind, std::int64_t start, std::int64_t end) {
  storage::Gap g;
  g.topic = "orders";
  g.partition = partition;
  g.kind = kind;
  g.start_us = start;
  g.end_us = end;
  g.duration_us = end - start;
  return g;
}

}  // namespace

TEST_CASE("overlapping gaps outside drills are one incident and gaps inside a drill none", "[unit][analysis]") {
  using storage::GapKind;
  const std::vector<storage::Gap> gaps = {
      gap(1, GapKind::kAck, 1'500, 2'500),   // overlaps the first: same incident
      gap(0, GapKind::kAck, 1'000, 2'000),
      gap(0, GapKind::kReceive, 2'400, 3'000),  // overlaps the merged end: same incident
      gap(2, GapKind::kAck, 5'000, 6'000),   // inside a drill
      gap(2, GapKind::kAck, 9'000, 9'500),   // alone
  };
  const auto incidents = incidentsOf(gaps, {{4'500, 7'000}});
  REQUIRE(incidents.size() == 2);
  CHECK(incidents[0].start_us == 1'000);
  CHECK(incidents[0].end_us == 3'000);
  REQUIRE(incidents[0].gaps.size() == 3);
  CHECK(incidents[0].gaps[0].partition == 0);  // by start time
  CHECK(incidents[0].gaps[2].kind == GapKind::kReceive);
  CHECK(incidents[1].start_us == 9'000);
  CHECK(incidents[1].gaps.size() == 1);
  CHECK(incidentsOf({}, {}).empty());
}
