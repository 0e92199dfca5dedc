#include "server/analysis/incidents.h"

#include <catch2/catch.hpp>

namespace incidents_test {

using namespace kfaild;
using namespace kfaild::analysis;

namespace {

storage::Gap gap(std::int32_t partition, storage::GapKind kind, std::int64_t start,
                 std::int64_t end) {
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

TEST_CASE("overlapping gaps outside drills are one incident and gaps inside a drill none",
          "[unit][analysis]") {
  using storage::GapKind;
  const std::vector<storage::Gap> gaps = {
      gap(1, GapKind::kAck, 1'500, 2'500),  // overlaps the first: same incident
      gap(0, GapKind::kAck, 1'000, 2'000),
      gap(0, GapKind::kReceive, 2'400, 3'000),  // overlaps the merged end: same incident
      gap(2, GapKind::kAck, 5'000, 6'000),      // inside a drill
      gap(2, GapKind::kAck, 9'000, 9'500),      // alone
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

TEST_CASE(
    "a gap inside a maintenance window is planned and no incident, while one outside it still is",
    "[unit][analysis]") {
  using storage::GapKind;
  // Window 7 covers [10'000, 20'000): a rolling restart's stalls fall in it.
  const std::vector<MaintenanceSpan> windows = {{7, 10'000, 20'000}};
  const auto inside = gap(0, GapKind::kAck, 12'000, 14'000);
  const auto straddling = gap(1, GapKind::kReceive, 19'500, 21'000);  // began inside: planned too
  const auto before = gap(2, GapKind::kAck, 4'000, 6'000);
  const auto after = gap(0, GapKind::kAck, 20'000, 23'000);  // starts as the window ends
  CHECK(plannedBy(inside, windows) == std::optional<std::int64_t>(7));
  CHECK(plannedBy(straddling, windows) == std::optional<std::int64_t>(7));
  CHECK_FALSE(plannedBy(before, windows));
  CHECK_FALSE(plannedBy(after, windows));

  const auto incidents = incidentsOf({inside, straddling, before, after}, {}, windows);
  REQUIRE(incidents.size() == 2);
  CHECK(incidents[0].start_us == 4'000);
  CHECK(incidents[1].start_us == 20'000);
  REQUIRE(incidents[1].gaps.size() == 1);
  CHECK(incidents[1].gaps[0].partition == 0);
  // Without the window the same stream has three incidents (the two planned gaps are one).
  CHECK(incidentsOf({inside, straddling, before, after}, {}).size() == 3);
}

TEST_CASE("a maintenance window closed early stops covering gaps at its close",
          "[unit][analysis]") {
  storage::MaintenanceWindowRecord w;
  w.id = 3;
  w.started_us = 1'000;
  w.ends_us = 100'000;
  w.closed_us = 5'000;
  const auto spans = spansOf({w});
  REQUIRE(spans.size() == 1);
  CHECK(spans[0].to_us == 5'000);
  CHECK(w.activeAt(4'999));
  CHECK_FALSE(w.activeAt(5'000));
  CHECK_FALSE(w.activeAt(999));
  const auto late = gap(0, storage::GapKind::kAck, 6'000, 9'000);
  CHECK_FALSE(plannedBy(late, spans));
  CHECK(incidentsOf({late}, {}, spans).size() == 1);
  CHECK(extentOf({late, gap(1, storage::GapKind::kAck, 2'000, 7'000)}).from_us == 2'000);
  CHECK(extentOf({late, gap(1, storage::GapKind::kAck, 2'000, 7'000)}).to_us == 9'000);
}

}  // namespace incidents_test
