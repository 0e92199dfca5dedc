// A partition added to a probe topic shortly before a drill has no baseline: the analysis leaves
// it out with the reason instead of making the whole verdict inconclusive.

#include <catch2/catch.hpp>
#include <string>

#include "server/analysis/drill_analysis.h"

namespace added_partition_test {

using namespace kfaild;
using namespace kfaild::analysis;

namespace {

constexpr std::int64_t kT0 = 1'700'000'000'000'000;
constexpr std::int64_t kSecond = 1'000'000;
constexpr std::int64_t kInterval = 20'000;

void steady(AnalysisInput& in, std::int32_t partition, std::int64_t from, std::int64_t to) {
  std::int64_t seq = 0;
  for (std::int64_t t = from; t < to; t += kInterval) {
    storage::ProbeSample s;
    s.topic = "orders";
    s.partition = partition;
    s.seq = seq++;
    s.send_us = t;
    s.ack_us = t + 3'000;
    s.receive_us = t + 4'000;
    in.samples.push_back(s);
  }
}

storage::Event added(std::int32_t partition, std::int64_t t) {
  storage::Event e;
  e.t_us = t;
  e.source = "probe";
  e.kind = "partition_added";
  e.topic = "orders";
  e.partition = partition;
  e.detail = R"({"partitions":4})";
  return e;
}

// A kill of broker 1, which leads nothing of orders-0 and orders-3 (led by 2 and 3): both ack
// steadily through it. orders-3 was added to the topic; the probe took it up at `probed_from`.
AnalysisInput withAddedPartition(std::int64_t probed_from) {
  AnalysisInput in;
  in.fault = "kill";
  in.target = 1;
  in.fault_us = kT0;
  in.window_start_us = kT0 - 5 * kSecond;
  in.observe_end_us = kT0 + 10 * kSecond;
  in.window_end_us = in.observe_end_us;
  in.partitions = {{"orders", 0, 2, {2, 3}, {2, 3}}, {"orders", 3, 3, {3, 2}, {3, 2}}};
  in.probe_at_fault = {{"orders", 0, 1, 3'000, false, 0}};
  if (probed_from <= kT0) in.probe_at_fault.push_back({"orders", 3, 1, 3'000, false, 0});
  steady(in, 0, in.window_start_us, in.observe_end_us);
  steady(in, 3, probed_from, in.observe_end_us);
  in.events.push_back(added(3, probed_from));
  return in;
}

}  // namespace

TEST_CASE(
    "a partition the probe took up 3 s before the fault is left out with the reason, and "
    "the verdict stays conclusive",
    "[unit]") {
  // Probing began 3 s before the fault, 2 s into the 5 s baseline: its noise is not that of the
  // window, so it is left out rather than judged on part of a baseline.
  const auto in = withAddedPartition(kT0 - 3 * kSecond);
  const auto a = analyse(in);
  REQUIRE(a.partitions.size() == 1);
  CHECK(a.partitions[0].partition == 0);
  REQUIRE(a.excluded.size() == 1);
  CHECK(a.excluded[0].topic == "orders");
  CHECK(a.excluded[0].partition == 3);
  CHECK(a.excluded[0].reason == "added 3.000 s before the fault: no baseline");
  CHECK(a.conclusive);
  const auto json = toJson(a);
  REQUIRE(json["excluded"].size() == 1);
  CHECK(json["excluded"][0]["partition"] == 3);
  CHECK(json["excluded"][0]["reason"] == "added 3.000 s before the fault: no baseline");
}

TEST_CASE(
    "a partition added after the fault, and one the probe did not probe at the fault, are "
    "left out",
    "[unit]") {
  auto in = withAddedPartition(kT0 + 2 * kSecond);
  const auto a = analyse(in);
  REQUIRE(a.excluded.size() == 1);
  CHECK(a.excluded[0].reason == "added 2.000 s after the fault: no baseline");
  CHECK(a.conclusive);

  // Its partition_added event fell outside the events read (or was never recorded): the probe's
  // state at the fault shows it was not probed.
  in.events.clear();
  const auto b = analyse(in);
  REQUIRE(b.excluded.size() == 1);
  CHECK(b.excluded[0].reason ==
        "not probed at the fault: added to the topic after the probe last looked");
  CHECK(b.conclusive);
}

TEST_CASE("a partition taken up before the window started has its baseline and is analysed",
          "[unit]") {
  auto in = withAddedPartition(kT0 - 5 * kSecond);
  in.events.front().t_us = kT0 - 6 * kSecond;  // took up before the window
  const auto a = analyse(in);
  CHECK(a.excluded.empty());
  REQUIRE(a.partitions.size() == 2);
  CHECK(a.partitions[1].partition == 3);
  CHECK(a.partitions[1].ack.outcome == Outcome::kNone);
  CHECK(a.conclusive);
}

TEST_CASE("a partition of the metadata the probe never probed no longer makes the run inconclusive",
          "[unit]") {
  // What every drill after a partition was added looked like before the probe followed it: the
  // metadata at the fault lists orders-3, the probe sent nothing to it.
  auto in = withAddedPartition(kT0);
  std::erase_if(in.samples, [](const storage::ProbeSample& s) { return s.partition == 3; });
  std::erase_if(in.probe_at_fault, [](const ProbeAtFault& f) { return f.partition == 3; });
  in.events.clear();
  const auto a = analyse(in);
  REQUIRE(a.excluded.size() == 1);
  CHECK(a.excluded[0].partition == 3);
  CHECK(a.conclusive);
  REQUIRE(a.partitions.size() == 1);
  CHECK(a.partitions[0].ack.outcome == Outcome::kNone);
}

}  // namespace added_partition_test
