#include "server/analysis/steady.h"

#include <catch2/catch.hpp>

namespace steady_test {

using namespace kfaild;
using namespace kfaild::analysis;

namespace {

constexpr std::int64_t kSecond = 1'000'000;
constexpr std::int64_t kNow = 1'700'000'000 * kSecond;

// Three partitions of `orders` (RF 3, min.insync.replicas 2) acked and read 20 ms ago, a probe
// that has run for ten minutes, a 30 s window and objectives of 2 s for both stalls.
SteadyInput steadyLab() {
  SteadyInput in;
  in.now_us = kNow;
  in.window_us = 30 * kSecond;
  in.probing = true;
  in.probe_state = "probing";
  in.probing_for_us = 600 * kSecond;
  for (std::int32_t p = 0; p < 3; ++p) {
    SteadyPartition partition;
    partition.topic = "orders";
    partition.partition = p;
    partition.ack_age_us = 20'000;
    partition.receive_age_us = 25'000;
    partition.metadata = SteadyReplicas{p + 1, {1, 2, 3}, {1, 2, 3}};
    in.partitions.push_back(partition);
  }
  in.min_insync["orders"] = 2;
  in.objectives.stall = {2.0, 2.0};
  return in;
}

storage::Gap gap(std::int32_t partition, storage::GapKind kind, std::int64_t end_us,
                 std::int64_t duration_us) {
  storage::Gap g;
  g.topic = "orders";
  g.partition = partition;
  g.kind = kind;
  g.start_us = end_us - duration_us;
  g.end_us = end_us;
  g.duration_us = duration_us;
  return g;
}

std::vector<std::string> checksOf(const SteadyResult& result) {
  std::vector<std::string> checks;
  for (const auto& f : result.failures) checks.emplace_back(toString(f.check));
  return checks;
}

}  // namespace

TEST_CASE("a probe that acked and read every partition within the bounds is steady",
          "[unit][analysis]") {
  auto in = steadyLab();
  // Short gaps inside the window, under the bounds, are the steady state's noise.
  in.gaps = {gap(0, storage::GapKind::kAck, kNow - 5 * kSecond, 1'900'000),
             gap(1, storage::GapKind::kReceive, kNow - 3 * kSecond, 400'000)};
  const auto result = checkSteady(in);
  INFO(result.failures.size());
  CHECK(result.steady);
  CHECK(result.failures.empty());
  CHECK(result.bounds.max_ack_stall_s == 2.0);
  CHECK(result.bounds.max_lost == 0);
}

TEST_CASE("a partition stalled now above the bound fails the ack check with its age",
          "[unit][analysis]") {
  auto in = steadyLab();
  in.partitions[1].ack_age_us = 6'500'000;
  in.partitions[1].receive_age_us = 1'000'000;
  const auto result = checkSteady(in);
  CHECK_FALSE(result.steady);
  REQUIRE(result.failures.size() == 1);
  const auto& f = result.failures[0];
  CHECK(f.check == SteadyCheck::kAckStall);
  CHECK(f.topic == "orders");
  CHECK(f.partition == 1);
  CHECK(f.observed == Approx(6.5));
  CHECK(f.bound == 2.0);
  CHECK(f.objective == "max_ack_stall_s");
  CHECK(f.reason == "orders-1 has had no ack for 6.5 s now, above max_ack_stall_s 2 s");
}

TEST_CASE("a stall that ended inside the window fails it, and one that ended before does not",
          "[unit][analysis]") {
  auto in = steadyLab();
  in.gaps = {
      gap(2, storage::GapKind::kAck, kNow - 31 * kSecond, 9 * kSecond),  // before the window
      gap(0, storage::GapKind::kReceive, kNow - 10 * kSecond, 8'200'000),
      gap(0, storage::GapKind::kReceive, kNow - 12 * kSecond, 3 * kSecond),  // the shorter one
  };
  const auto result = checkSteady(in);
  CHECK_FALSE(result.steady);
  REQUIRE(result.failures.size() == 1);
  const auto& f = result.failures[0];
  CHECK(f.check == SteadyCheck::kReceiveStall);
  CHECK(f.partition == 0);
  CHECK(f.observed == Approx(8.2));
  CHECK(f.objective == "max_receive_stall_s");
  CHECK(f.reason ==
        "orders-0 had no receipt for 8.2 s in a stall that ended 10 s ago, above "
        "max_receive_stall_s 2 s");

  // Widened to 40 s, the window takes in the earlier stall of partition 2 as well.
  in.window_us = 40 * kSecond;
  const auto wider = checkSteady(in);
  CHECK(checksOf(wider) == std::vector<std::string>{"ack_stall", "receive_stall"});
}

TEST_CASE(
    "a partition under min.insync.replicas or without a leader fails, under-replicated alone "
    "does not",
    "[unit][analysis]") {
  auto in = steadyLab();
  in.partitions[0].metadata->isr = {1, 2};  // one replica out: still at min.insync.replicas
  CHECK(checkSteady(in).steady);

  in.partitions[1].metadata->isr = {2};
  in.partitions[2].metadata->leader = -1;
  const auto result = checkSteady(in);
  CHECK_FALSE(result.steady);
  REQUIRE(checksOf(result) == std::vector<std::string>{"offline", "under_min_insync"});
  CHECK(result.failures[0].partition == 2);
  CHECK(result.failures[1].partition == 1);
  CHECK(result.failures[1].observed == 1.0);
  CHECK(result.failures[1].bound == 2.0);
  CHECK(result.failures[1].objective == "min.insync.replicas");

  // A topic whose min.insync.replicas kfaild does not know counts with Kafka's default, 1.
  in.min_insync.clear();
  CHECK(checksOf(checkSteady(in)) == std::vector<std::string>{"offline"});
}

TEST_CASE("a partition missing from the metadata is offline, and unknown metadata fails the check",
          "[unit][analysis]") {
  auto in = steadyLab();
  in.partitions[2].metadata.reset();
  auto result = checkSteady(in);
  REQUIRE(checksOf(result) == std::vector<std::string>{"offline"});
  CHECK(result.failures[0].reason == "orders-2 is not in the cluster's last metadata answer");

  in.metadata_problem = "the last metadata poll failed: all brokers are down";
  result = checkSteady(in);
  REQUIRE(checksOf(result) == std::vector<std::string>{"metadata"});
  CHECK_FALSE(result.failures[0].partition);
}

TEST_CASE("lost messages inside the window fail the check above max_lost", "[unit][analysis]") {
  auto in = steadyLab();
  in.lost[{"orders", 2}] = 3;
  auto result = checkSteady(in);
  REQUIRE(checksOf(result) == std::vector<std::string>{"lost"});
  CHECK(result.failures[0].partition == 2);
  CHECK(result.failures[0].observed == 3.0);
  CHECK(result.failures[0].bound == 0.0);

  in.objectives.max_lost = 3;
  CHECK(checkSteady(in).steady);
  // Losses of a partition the probe no longer has are not the probe partitions'.
  in.objectives.max_lost.reset();
  in.lost = {{{"other", 0}, 5}};
  CHECK(checkSteady(in).steady);
}

TEST_CASE("a probe that is not probing, or has not probed for the whole window, is never steady",
          "[unit][analysis]") {
  auto in = steadyLab();
  in.probing_for_us = 12 * kSecond;
  auto result = checkSteady(in);
  REQUIRE(checksOf(result) == std::vector<std::string>{"probe"});
  CHECK(result.failures[0].observed == 12.0);
  CHECK(result.failures[0].bound == 30.0);
  // A shorter window is covered.
  in.window_us = 10 * kSecond;
  CHECK(checkSteady(in).steady);

  in.probing = false;
  in.probe_state = "setting_up: topic orders missing";
  // The probe's ages mean nothing while it is not probing: only the probe is named.
  in.partitions[0].ack_age_us = 100 * kSecond;
  result = checkSteady(in);
  REQUIRE(checksOf(result) == std::vector<std::string>{"probe"});
  CHECK(result.failures[0].reason.find("setting_up: topic orders missing") != std::string::npos);

  in.probing = true;
  in.partitions.clear();
  CHECK(checksOf(checkSteady(in)) == std::vector<std::string>{"probe"});
}

TEST_CASE(
    "a partition never acked or never read names the probe, and the stall bounds come from the "
    "top level",
    "[unit][analysis]") {
  auto in = steadyLab();
  in.partitions[0].ack_age_us.reset();
  in.partitions[0].receive_age_us.reset();
  in.partitions[2].receive_age_us.reset();
  auto result = checkSteady(in);
  REQUIRE(checksOf(result) == std::vector<std::string>{"probe", "probe"});
  CHECK(result.failures[0].partition == 0);
  CHECK(result.failures[0].reason == "orders-0 has never been acked since the probe began");
  CHECK(result.failures[1].reason == "orders-2 has never been read back since the probe began");

  // by_role and by_fault limits belong to drills; without a top-level key nothing is bounded.
  in = steadyLab();
  in.objectives = Objectives{};
  in.objectives.by_fault["kill"].stall = {1.0, 1.0};
  in.partitions[1].ack_age_us = 60 * kSecond;
  result = checkSteady(in);
  CHECK(result.steady);
  CHECK_FALSE(result.bounds.max_ack_stall_s);

  // The defaults bound both stalls at 15 s.
  in.objectives = defaultObjectives();
  result = checkSteady(in);
  CHECK(checksOf(result) == std::vector<std::string>{"ack_stall"});
  CHECK(result.bounds.max_ack_stall_s == 15.0);
}

TEST_CASE("failures are listed by check, then by topic and partition", "[unit][analysis]") {
  auto in = steadyLab();
  in.partitions[2].ack_age_us = 5 * kSecond;
  in.partitions[0].ack_age_us = 4 * kSecond;
  in.partitions[1].receive_age_us = 3 * kSecond;
  std::swap(in.partitions[0], in.partitions[2]);
  const auto result = checkSteady(in);
  REQUIRE(checksOf(result) == std::vector<std::string>{"ack_stall", "ack_stall", "receive_stall"});
  CHECK(result.failures[0].partition == 0);
  CHECK(result.failures[1].partition == 2);
  CHECK(result.failures[2].partition == 1);
}

}  // namespace steady_test
