#include "server/analysis/drill_analysis.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>

namespace drill_analysis_test {

using namespace kfaild;
using namespace kfaild::analysis;

namespace {

// The article's first SIGKILL run, rebuilt: fault at t0, fencing 8.27 s later, new leader of p0
// 0.09 s after that, the producer applies it 0.075 s after fencing, p0 acks again 1.04 s later.
constexpr std::int64_t kT0 = 1'700'000'000'000'000;
constexpr std::int64_t kSecond = 1'000'000;
constexpr std::int64_t kInterval = 20'000;

storage::Event event(std::int64_t t, const char* source, const char* kind,
                     std::optional<int> broker, std::optional<int> partition = std::nullopt,
                     const char* detail = "{}") {
  storage::Event e;
  e.t_us = t;
  e.source = source;
  e.kind = kind;
  e.broker = broker;
  if (partition) {
    e.topic = "orders";
    e.partition = *partition;
  }
  e.detail = detail;
  return e;
}

storage::ProbeSample probeSample(int partition, std::int64_t seq, std::int64_t send,
                                 std::optional<std::int64_t> ack,
                                 std::optional<std::int64_t> receive) {
  storage::ProbeSample s;
  s.topic = "orders";
  s.partition = partition;
  s.seq = seq;
  s.send_us = send;
  s.ack_us = ack;
  s.receive_us = receive;
  return s;
}

// One message per interval, acked 3 ms and received 4 ms after it was sent.
void steady(AnalysisInput& in, int partition, std::int64_t from, std::int64_t to,
            std::int64_t& seq) {
  for (std::int64_t t = from; t < to; t += kInterval) {
    in.samples.push_back(probeSample(partition, seq++, t, t + 3'000, t + 4'000));
  }
}

// One message per interval from `from` until `until`, all acked at once at `ack_at` (received
// 0.5 ms later): the cluster held them.
void stalled(AnalysisInput& in, int partition, std::int64_t from, std::int64_t until,
             std::int64_t ack_at, std::int64_t& seq) {
  for (std::int64_t t = from; t < until; t += kInterval) {
    in.samples.push_back(probeSample(partition, seq++, t, ack_at, ack_at + 500));
  }
}

const std::vector<PartitionAtFault> kOrders = {{"orders", 0, 1, {1, 2, 3}, {1, 2, 3}},
                                               {"orders", 1, 2, {2, 3, 1}, {2, 3, 1}},
                                               {"orders", 2, 3, {3, 1, 2}, {3, 1, 2}}};

// p0..p2 each: 250 steady messages (seq 0..249) before the fault, the stall (seq 250 onwards
// acked at resume), then steady until observation ends: 1000 messages.
AnalysisInput articleKill() {
  AnalysisInput in;
  in.fault = "kill";
  in.target = 1;
  in.fault_us = kT0;
  in.window_start_us = kT0 - 5 * kSecond;
  in.observe_end_us = kT0 + 15 * kSecond;
  in.recovered_us = kT0 + 16 * kSecond;
  in.window_end_us = kT0 + 25 * kSecond;
  in.partitions = kOrders;
  const std::int64_t fenced = kT0 + 8'270'000;
  const std::int64_t resume[] = {kT0 + 9'400'000, kT0 + 8'370'000, kT0 + 8'370'000};
  for (int p = 0; p < 3; ++p) {
    std::int64_t seq = 0;
    steady(in, p, in.window_start_us, kT0, seq);
    stalled(in, p, kT0, resume[p], resume[p], seq);
    steady(in, p, resume[p], in.observe_end_us, seq);
  }
  in.events = {event(kT0, "injector", "fault", 1),
               event(fenced, "broker_log", "fenced", 1),
               event(fenced + 50'000, "metadata", "isr_shrink", 1, 1),
               event(fenced + 50'000, "metadata", "isr_shrink", 1, 2),
               event(fenced + 75'000, "client", "client_leader_update", 2, 0,
                     R"({"client":"producer","from":1,"to":2})"),
               event(fenced + 90'000, "broker_log", "leader_epoch_start", 2, 0),
               event(fenced + 100'000, "metadata", "leader_change", 2, 0)};
  return in;
}

// SIGTERM on k1: it hands p0 over in 70 ms and p0 stalls 0.5 s; p1 and p2 pause 57 ms right
// after the fault, less than the 60 ms they once paused two seconds before it.
AnalysisInput gracefulStop() {
  AnalysisInput in;
  in.fault = "stop";
  in.target = 1;
  in.fault_us = kT0;
  in.window_start_us = kT0 - 5 * kSecond;
  in.observe_end_us = kT0 + 10 * kSecond;
  in.window_end_us = kT0 + 20 * kSecond;
  in.partitions = kOrders;
  std::int64_t seq0 = 0;
  steady(in, 0, in.window_start_us, kT0, seq0);
  stalled(in, 0, kT0, kT0 + 500'000, kT0 + 500'000, seq0);
  steady(in, 0, kT0 + 500'000, in.observe_end_us, seq0);
  for (int p : {1, 2}) {
    const std::int64_t before = kT0 - 2 * kSecond;
    std::int64_t seq = 0;
    steady(in, p, in.window_start_us, before, seq);
    stalled(in, p, before, before + 40'000, before + 43'000, seq);
    steady(in, p, before + 40'000, kT0, seq);
    stalled(in, p, kT0, kT0 + 40'000, kT0 + 40'000, seq);
    steady(in, p, kT0 + 40'000, in.observe_end_us, seq);
  }
  in.events = {event(kT0 + 3'000, "broker_log", "controlled_shutdown", 1),
               event(kT0 + 70'000, "broker_log", "leader_epoch_start", 2, 0),
               event(kT0 + 90'000, "client", "client_leader_update", 2, 0,
                     R"({"client":"producer","from":1,"to":2})"),
               event(kT0 + 150'000, "metadata", "isr_shrink", 1, 1),
               event(kT0 + 150'000, "metadata", "isr_shrink", 1, 2)};
  return in;
}

}  // namespace

TEST_CASE("events of a source or kind this kfaild cannot name change nothing in the analysis",
          "[unit]") {
  const auto plain = articleKill();
  auto with_unknown = plain;
  // Each would move a phase or the departure were it read as the kind it resembles.
  const std::int64_t early = kT0 + 1'000'000;
  with_unknown.events.push_back(event(early, "broker_log_v2", "fenced", 1));
  with_unknown.events.push_back(event(early, "broker_log", "fenced_v2", 1));
  with_unknown.events.push_back(event(early, "metadata", "Leader_Change", 2, 0));
  with_unknown.events.push_back(event(early, "client", "client_leader_updated", 2, 0,
                                      R"({"client":"producer","from":1,"to":2})"));
  with_unknown.events.push_back(event(early, "", "", 1, 0));
  CHECK(toJson(analyse(with_unknown)) == toJson(analyse(plain)));
  CHECK(analyse(with_unknown).departure_at_us == kT0 + 8'270'000);
}

TEST_CASE("the article's kill run is analysed into roles, stalls and phases", "[unit]") {
  const auto a = analyse(articleKill());
  CHECK(a.departure == kfaild::common::Departure::kFenced);
  CHECK(*a.recovered_us == kT0 + 16 * kSecond);
  CHECK(a.settled);
  CHECK(a.conclusive);
  REQUIRE(a.partitions.size() == 3);

  const auto& p0 = a.partitions[0];
  CHECK(p0.role == Role::kLeader);
  CHECK(p0.ack.outcome == Outcome::kStall);
  REQUIRE(p0.ack.stall);
  // The last ack before the fault came 17 ms before it; the next at 9.40 s.
  CHECK(p0.ack.stall->duration_us() == 9'400'000 + (kInterval - 3'000));
  CHECK_FALSE(p0.ack.stall->open);
  CHECK(p0.ack.longest_gap->end_us == p0.ack.stall->end_us);
  REQUIRE(p0.ack.ended_by);
  CHECK(p0.ack.ended_by->seq == 250);  // the first message sent after the fault
  CHECK(p0.ack.ended_by->at_us == kT0 + 9'400'000);
  CHECK(p0.ack.reason.empty());
  CHECK(p0.ack.baseline->duration_us() == kInterval);
  CHECK(p0.ack.count == 1000);
  CHECK(p0.receive.outcome == Outcome::kStall);
  CHECK(p0.receive.stall->duration_us() == 9'400'000 + 500 + (kInterval - 4'000));
  CHECK(p0.receive.ended_by->at_us == kT0 + 9'400'500);

  CHECK(*p0.phases.detection_us == 8'270'000);
  CHECK(*p0.phases.detection_resolution_us == 1'000);  // the controller's log line
  CHECK(*p0.phases.election_us == 90'000);             // the new leader's own log line is earliest
  CHECK(*p0.phases.election_resolution_us == 1'000);
  CHECK(*p0.phases.new_leader == 2);
  // The producer applied it 15 ms before k2 logged it: below the resolution, never negative.
  CHECK(*p0.phases.discovery_us == 0);
  CHECK(*p0.phases.discovery_resolution_us == 1'000);
  CHECK(p0.phases.below_resolution == std::vector<std::string>{"discovery"});
  CHECK(p0.phases.inconclusive.empty());
  CHECK(*p0.phases.resume_us == 9'400'000 - 8'345'000);
  CHECK_FALSE(p0.phases.node_back_us);
  CHECK(p0.sent == 1000);
  CHECK(p0.lost == 0);
  CHECK(p0.failed == 0);
  CHECK(p0.unresolved == 0);
  CHECK(p0.settled);

  for (int p : {1, 2}) {
    const auto& r = a.partitions[p];
    CHECK(r.role == Role::kFollowerInIsr);
    CHECK(r.ack.outcome == Outcome::kStall);
    REQUIRE(r.ack.stall);
    CHECK(r.ack.stall->end_us == kT0 + 8'370'000);
    CHECK(r.ack.ended_by->seq == 250);
    CHECK(*r.phases.election_us == 50'000);  // the ISR dropped broker 1
    // The ISR change is only seen by the metadata poll.
    CHECK(*r.phases.election_resolution_us == 100'000);
    CHECK_FALSE(r.phases.discovery_us);  // the leader did not move
    CHECK_FALSE(r.phases.discovery_resolution_us);
    CHECK(*r.phases.resume_us == 50'000);
    // Both 50 ms, seen by a 100 ms metadata poll: "≤ 0.100 s".
    CHECK(r.phases.below_resolution == std::vector<std::string>{"election", "resume"});
  }
  CHECK(a.partitions[0].ack.stall->duration_us() > a.partitions[1].ack.stall->duration_us());
}

TEST_CASE("a graceful stop leaves followers whose longest gap is within the noise with no stall",
          "[unit]") {
  const auto a = analyse(gracefulStop());
  CHECK(a.departure == kfaild::common::Departure::kControlledShutdown);
  CHECK(a.conclusive);

  const auto& p0 = a.partitions[0];
  CHECK(p0.ack.outcome == Outcome::kStall);
  CHECK(p0.ack.stall->duration_us() == 517'000);
  CHECK_FALSE(p0.phases.detection_us);
  CHECK_FALSE(p0.phases.detection_resolution_us);
  CHECK_FALSE(p0.phases.fenced_at_us);
  CHECK(*p0.phases.election_us == 67'000);
  CHECK(*p0.phases.discovery_us == 20'000);
  CHECK(*p0.phases.resume_us == 500'000 - 90'000);

  for (int p : {1, 2}) {
    const auto& r = a.partitions[p];
    CHECK(r.ack.outcome == Outcome::kNone);
    CHECK_FALSE(r.ack.stall);
    REQUIRE(r.ack.longest_gap);
    CHECK(r.ack.longest_gap->duration_us() == 57'000);
    // The 60 ms pause is one of 247 baseline gaps: above their 99th percentile, so the noise is
    // the probe's spacing, and 57 ms is still short of it plus two intervals.
    CHECK(r.ack.baseline->duration_us() == kInterval);
    CHECK(r.ack.noise_gaps == 247);
    CHECK(r.ack.reason == "0.057 s is within the noise (0.020 s, p99 of 247 baseline gaps)");
    CHECK(r.ack.ended_by->at_us == kT0 + 40'000);
    CHECK(r.receive.outcome == Outcome::kNone);
    CHECK_FALSE(r.receive.stall);
    CHECK(*r.phases.election_us == 147'000);
    CHECK(*r.phases.election_resolution_us == 100'000);
    CHECK_FALSE(r.phases.resume_us);  // nothing to resume from
  }
}

TEST_CASE("a partition that does not touch the target has no stall", "[unit]") {
  auto in = articleKill();
  in.partitions.push_back({"orders", 3, 2, {2, 3}, {2, 3}});
  std::int64_t seq = 0;
  steady(in, 3, in.window_start_us, in.observe_end_us, seq);
  const auto a = analyse(in);
  const auto& p3 = a.partitions[3];
  CHECK(p3.role == Role::kNotAReplica);
  CHECK(p3.ack.outcome == Outcome::kNone);
  CHECK_FALSE(p3.ack.stall);
  CHECK(p3.ack.longest_gap->duration_us() == kInterval);
  CHECK(p3.ack.reason == "0.020 s is within the noise (0.020 s, p99 of 249 baseline gaps)");
  CHECK(p3.receive.outcome == Outcome::kNone);
  CHECK_FALSE(p3.phases.election_us);
  CHECK_FALSE(p3.phases.resume_us);
  CHECK(a.conclusive);
}

TEST_CASE("messages still pending at analysis are unresolved and unsettled, not lost", "[unit]") {
  auto in = articleKill();
  const std::int64_t t = in.observe_end_us;
  in.pending.push_back(probeSample(0, 1000, t, std::nullopt, std::nullopt));
  in.pending.push_back(probeSample(0, 1001, t + kInterval, t + kInterval + 3'000, std::nullopt));
  in.pending.push_back(
      probeSample(0, 1002, t + 2 * kInterval, t + 2 * kInterval + 3'000, std::nullopt));
  // Stored meanwhile: the stored sample is final and counts once.
  in.pending.push_back(probeSample(0, 999, t - kInterval, std::nullopt, std::nullopt));
  const auto a = analyse(in);
  const auto& p0 = a.partitions[0];
  CHECK(p0.sent == 1003);
  CHECK(p0.awaiting_ack == 1);
  CHECK(p0.awaiting_receive == 2);
  CHECK(p0.missing == 0);
  CHECK(p0.unresolved == 3);
  CHECK(p0.lost == 0);
  CHECK_FALSE(p0.settled);
  CHECK(p0.ack.count == 1002);  // pending acks are acks
  CHECK(p0.ack.outcome == Outcome::kStall);
  CHECK(a.partitions[1].settled);
  CHECK_FALSE(a.settled);
}

TEST_CASE("a hole in the sequence numbers is missing and unresolved", "[unit]") {
  auto in = articleKill();
  std::erase_if(in.samples, [](const storage::ProbeSample& s) {
    return s.partition == 1 && (s.seq == 600 || s.seq == 601);
  });
  const auto a = analyse(in);
  const auto& p1 = a.partitions[1];
  CHECK(p1.sent == 999);  // 1001 sent, two of them neither stored nor pending
  CHECK(p1.missing == 2);
  CHECK(p1.unresolved == 2);
  CHECK(p1.lost == 0);
  CHECK_FALSE(p1.settled);
  CHECK(a.partitions[0].settled);
  CHECK_FALSE(a.settled);
}

TEST_CASE("a message that times out late is failed, neither an ack nor lost", "[unit]") {
  auto in = articleKill();
  auto& late = *std::find_if(in.samples.begin(), in.samples.end(),
                             [](const auto& s) { return s.partition == 0 && s.seq == 300; });
  late.ack_error = -192;  // message timed out; its report came in the middle of the stall
  late.ack_us = kT0 + 5 * kSecond;
  late.receive_us.reset();
  // An acked message the probe gave up on is lost.
  in.samples.front().receive_us.reset();
  const auto a = analyse(in);
  const auto& p0 = a.partitions[0];
  CHECK(p0.failed == 1);
  CHECK(p0.lost == 1);
  CHECK(p0.settled);
  CHECK(p0.ack.count == 999);
  CHECK(p0.ack.stall->duration_us() == 9'417'000);  // the error report did not end it
  CHECK(p0.ack.ended_by->seq == 250);
  CHECK(toJson(a)["partitions"][0]["failed"] == 1);
}

TEST_CASE("a partition still without an ack when observation ends is inconclusive with an open gap",
          "[unit]") {
  AnalysisInput in;
  in.fault = "kill";
  in.target = 1;
  in.fault_us = kT0;
  in.window_start_us = kT0 - 5 * kSecond;
  in.observe_end_us = kT0 + 20 * kSecond;
  in.window_end_us = kT0 + 30 * kSecond;
  in.partitions = {{"orders", 0, 1, {1, 2}, {1, 2}}};
  std::int64_t seq = 0;
  steady(in, 0, in.window_start_us, kT0 + 60'000, seq);
  for (int i = 0; i < 5; ++i) {
    const std::int64_t sent = kT0 + 60'000 + i * kInterval;
    in.pending.push_back(probeSample(0, seq++, sent, std::nullopt, std::nullopt));
  }
  const auto a = analyse(in);
  const auto& p0 = a.partitions[0];
  CHECK(p0.role == Role::kLeader);
  CHECK(p0.ack.outcome == Outcome::kInconclusive);
  CHECK_FALSE(p0.ack.stall);
  REQUIRE(p0.ack.longest_gap);
  CHECK(p0.ack.longest_gap->open);
  CHECK(p0.ack.longest_gap->start_us == kT0 + 40'000 + 3'000);
  CHECK(p0.ack.longest_gap->end_us == in.observe_end_us);
  CHECK_FALSE(p0.ack.ended_by);
  CHECK(p0.ack.reason == "still stalled when observation ended (≥ 19.957 s)");
  CHECK(p0.receive.outcome == Outcome::kInconclusive);
  CHECK(p0.awaiting_ack == 5);
  CHECK_FALSE(p0.phases.resume_us);
  CHECK_FALSE(a.conclusive);
  const auto json = toJson(a);
  CHECK(json["partitions"][0]["ack"]["longest_gap"]["open"] == true);
  CHECK(json["partitions"][0]["ack"]["stall"].is_null());
  CHECK(json["conclusive"] == false);
}

TEST_CASE("an open tail shorter than the stall before it does not replace it", "[unit]") {
  auto in = articleKill();
  in.samples.clear();
  in.partitions = {kOrders[1]};
  std::int64_t seq = 0;
  steady(in, 1, in.window_start_us, kT0, seq);
  stalled(in, 1, kT0, kT0 + kSecond, kT0 + kSecond, seq);
  steady(in, 1, kT0 + kSecond, in.observe_end_us - 500'000, seq);
  const auto a = analyse(in);
  const auto& p1 = a.partitions[0];
  CHECK(p1.ack.outcome == Outcome::kStall);
  CHECK_FALSE(p1.ack.stall->open);
  CHECK(p1.ack.stall->duration_us() == kSecond + 17'000);
}

TEST_CASE("acks after the end of observation close a stall that began before it but are not noise",
          "[unit]") {
  auto in = articleKill();
  in.observe_end_us = kT0 + 5 * kSecond;
  in.partitions.push_back({"orders", 3, 2, {2, 3}, {2, 3}});
  std::int64_t seq = 0;
  steady(in, 3, in.window_start_us, kT0 + 7 * kSecond, seq);
  stalled(in, 3, kT0 + 7 * kSecond, kT0 + 8 * kSecond, kT0 + 8 * kSecond, seq);
  steady(in, 3, kT0 + 8 * kSecond, kT0 + 15 * kSecond, seq);
  const auto a = analyse(in);
  const auto& p0 = a.partitions[0];
  CHECK(p0.ack.outcome == Outcome::kStall);
  CHECK(p0.ack.stall->end_us == kT0 + 9'400'000);
  CHECK_FALSE(p0.ack.stall->open);
  // p3's one-second pause came after observation ended: neither its candidate nor its noise.
  const auto& p3 = a.partitions[3];
  CHECK(p3.ack.outcome == Outcome::kNone);
  CHECK(p3.ack.longest_gap->duration_us() == kInterval);
  CHECK(p3.ack.baseline->duration_us() == kInterval);
}

TEST_CASE("the target as the only in-sync replica makes a sole replica even when it leads",
          "[unit]") {
  CHECK(roleOf(1, {"single", 0, 1, {1}, {1}}) == Role::kSoleReplica);
  CHECK(roleOf(1, {"orders", 0, 1, {1, 2}, {1}}) == Role::kSoleReplica);
  CHECK(roleOf(1, {"orders", 0, 1, {1, 2}, {1, 2}}) == Role::kLeader);
  CHECK(roleOf(1, {"orders", 0, 2, {2, 1}, {2}}) == Role::kFollowerOutOfIsr);
  CHECK(roleOf(1, {"orders", 0, 2, {2, 1}, {2, 1}}) == Role::kFollowerInIsr);
  CHECK(roleOf(1, {"orders", 0, 2, {2, 3}, {2, 3}}) == Role::kNotAReplica);
  CHECK(std::string(toString(Role::kSoleReplica)) == "sole_replica");
}

TEST_CASE("a sole replica is observed until the window ends and resumes once the node is back",
          "[unit]") {
  // The article's graceful stop of the RF-1 topic: offline for 33.26 s, the node back at 33 s.
  AnalysisInput in;
  in.fault = "stop";
  in.target = 1;
  in.fault_us = kT0;
  in.window_start_us = kT0 - 5 * kSecond;
  in.observe_end_us = kT0 + 15 * kSecond;
  in.recovered_us = kT0 + 33 * kSecond;
  in.window_end_us = kT0 + 40 * kSecond;
  in.partitions = {{"orders", 0, 1, {1}, {1}}, kOrders[1]};
  const std::int64_t back = kT0 + 33'260'000;
  std::int64_t seq0 = 0, seq1 = 0;
  steady(in, 0, in.window_start_us, kT0, seq0);
  stalled(in, 0, kT0, back, back, seq0);
  steady(in, 0, back, in.window_end_us, seq0);
  steady(in, 1, in.window_start_us, kT0, seq1);
  stalled(in, 1, kT0, kT0 + 100'000, kT0 + 100'000, seq1);
  steady(in, 1, kT0 + 100'000, in.observe_end_us, seq1);
  in.events = {event(kT0 + 3'000, "broker_log", "controlled_shutdown", 1),
               event(kT0 + 50'000, "metadata", "isr_shrink", 1, 1)};

  const auto a = analyse(in);
  const auto& single = a.partitions[0];
  CHECK(single.role == Role::kSoleReplica);
  CHECK(single.ack.outcome == Outcome::kStall);
  REQUIRE(single.ack.stall);
  CHECK_FALSE(single.ack.stall->open);
  CHECK(single.ack.stall->end_us == back);  // after observe_end_us: watched to window_end_us
  CHECK(single.ack.stall->duration_us() == 33'260'000 + 17'000);
  CHECK(single.ack.ended_by->seq == 250);
  CHECK(single.receive.outcome == Outcome::kStall);
  CHECK(*single.phases.node_back_us == 33 * kSecond);
  CHECK(*single.phases.resume_us == 260'000);
  CHECK_FALSE(single.phases.election_us);
  CHECK_FALSE(single.phases.discovery_us);
  CHECK_FALSE(single.phases.detection_us);
  const auto& p1 = a.partitions[1];
  CHECK(p1.role == Role::kFollowerInIsr);
  CHECK_FALSE(p1.phases.node_back_us);
  CHECK(p1.ack.stall->end_us == kT0 + 100'000);
  CHECK(toJson(a)["partitions"][0]["role"] == "sole_replica");

  SECTION(
      "the node's registration counts as back when the partition acks before every ISR is whole") {
    // Broker 1 registered at 33.1 s and led the partition again at once; kfaild saw it back in
    // every ISR only at 34 s, after the partition's first ack (33.26 s).
    in.recovered_us = kT0 + 34 * kSecond;
    in.events.push_back(event(kT0 + 33'100'000, "metadata", "broker_back", 1));
    const auto early = analyse(in);
    const auto& r = early.partitions[0];
    CHECK(*r.phases.node_back_us == 33'100'000);
    CHECK(*r.phases.resume_us == 160'000);
    CHECK(*r.phases.resume_resolution_us == in.metadata_interval_us);
  }

  SECTION("without the node back it stays open until the window ends") {
    in.recovered_us.reset();
    std::erase_if(in.samples, [](const auto& s) { return s.partition == 0 && s.send_us >= kT0; });
    const auto open = analyse(in);
    const auto& r = open.partitions[0];
    CHECK(r.ack.outcome == Outcome::kInconclusive);
    REQUIRE(r.ack.longest_gap);
    CHECK(r.ack.longest_gap->open);
    CHECK(r.ack.longest_gap->end_us == in.window_end_us);
    CHECK_FALSE(r.phases.node_back_us);
    CHECK_FALSE(r.phases.resume_us);
    CHECK_FALSE(open.conclusive);
  }
}

namespace {

// One message per interval from `from` until `until`, each failed by the client 1 ms after it was
// sent (a transport error): the way the wire client answers sends for a leader it cannot reach.
void failedAtOnce(AnalysisInput& in, int partition, std::int64_t from, std::int64_t until,
                  std::int64_t& seq) {
  constexpr std::int32_t kTransport = -195;  // RD_KAFKA_RESP_ERR__TRANSPORT
  for (std::int64_t t = from; t < until; t += kInterval) {
    auto sample = probeSample(partition, seq++, t, t + 1'000, std::nullopt);
    sample.ack_error = kTransport;
    in.samples.push_back(sample);
  }
}

// The article's kill with p1's sends after the fault failed at once over `failing` ([from, until)
// each), and steady again from `resumed` (its first message acked 3 ms after it was sent).
AnalysisInput killWithFailedSends(const std::vector<std::pair<std::int64_t, std::int64_t>>& failing,
                                  std::int64_t resumed) {
  auto in = articleKill();
  std::erase_if(in.samples, [](const auto& s) { return s.partition == 1 && s.send_us >= kT0; });
  std::int64_t seq = 250;
  for (const auto& [from, until] : failing) failedAtOnce(in, 1, from, until, seq);
  steady(in, 1, resumed, in.observe_end_us, seq);
  return in;
}

}  // namespace

TEST_CASE(
    "a gap during which the probe had nothing outstanding before it sent the message that ended it "
    "is inconclusive",
    "[unit]") {
  // p1's sends fail at once until 6.87 s and the probe sends nothing more until 8.37 s.
  auto in = killWithFailedSends({{kT0, kT0 + 6'870'000}}, kT0 + 8'370'000);
  // Two overlapping records of the end of that idle stretch of p1's acks: 1.5 s, not 2 s.
  in.idles.push_back({"orders", 1, storage::GapKind::kAck, kT0 + 6'870'000, kT0 + 7'870'000});
  in.idles.push_back({"orders", 1, storage::GapKind::kAck, kT0 + 7'370'000, kT0 + 8'370'000});
  // 30 ms of p2's receives: within the probe's own spacing.
  in.idles.push_back({"orders", 2, storage::GapKind::kReceive, kT0 + kSecond, kT0 + 1'030'000});
  const auto a = analyse(in);
  const auto& p1 = a.partitions[1];
  CHECK(p1.ack.outcome == Outcome::kInconclusive);
  CHECK_FALSE(p1.ack.stall);
  CHECK(p1.ack.probe_idle_us == 1'500'000);
  CHECK(p1.ack.probe_idle_at_end_us == 1'500'000);
  CHECK(p1.ack.reason ==
        "the probe had nothing outstanding for 1.500 s of it before it sent the message that ended "
        "it");
  CHECK(p1.ack.longest_gap->end_us == kT0 + 8'373'000);
  CHECK(p1.receive.outcome == Outcome::kStall);  // the idle stretch was of acks only
  CHECK(p1.receive.probe_idle_us == 0);
  const auto& p2 = a.partitions[2];
  CHECK(p2.receive.outcome == Outcome::kStall);
  CHECK(p2.receive.probe_idle_us == 30'000);
  CHECK(a.partitions[0].ack.outcome == Outcome::kStall);
  CHECK_FALSE(a.conclusive);
}

TEST_CASE(
    "idle time followed by sends that failed does not make a stall inconclusive, "
    "idle time before the ending message's send does",
    "[unit]") {
  SECTION("in the middle: the cluster was asked again after it and was not ready") {
    // p1's sends fail at once until its leader takes them at 8.37 s; once, at 2 s, the sender
    // woke 40 ms late (a busy host): nothing was outstanding from 2.001 s until 2.06 s.
    auto in = killWithFailedSends({{kT0, kT0 + 2'020'000}, {kT0 + 2'060'000, kT0 + 8'370'000}},
                                  kT0 + 8'370'000);
    in.idles.push_back({"orders", 1, storage::GapKind::kAck, kT0 + 2'001'000, kT0 + 2'060'000});
    in.idles.push_back({"orders", 1, storage::GapKind::kReceive, kT0 + 2'001'000, kT0 + 2'060'000});
    const auto a = analyse(in);
    const auto& p1 = a.partitions[1];
    CHECK(p1.ack.outcome == Outcome::kStall);
    CHECK(p1.ack.probe_idle_us == 59'000);
    CHECK(p1.ack.probe_idle_at_end_us == 0);
    CHECK(p1.ack.stall->end_us == kT0 + 8'373'000);
    CHECK(p1.ack.ended_by->at_us == kT0 + 8'373'000);
    CHECK(p1.receive.outcome == Outcome::kStall);
    CHECK(p1.receive.probe_idle_us == 59'000);
    CHECK(p1.receive.probe_idle_at_end_us == 0);
    CHECK(toJson(a)["partitions"][1]["ack"]["probe_idle_at_end_us"] == 0);
    CHECK(a.conclusive);
  }

  SECTION("before the ending message's send: the cluster may have been ready earlier") {
    // The last failed send was at 8.35 s, failed at 8.351 s; the next send came only at 8.399 s.
    auto in = killWithFailedSends({{kT0, kT0 + 8'370'000}}, kT0 + 8'399'000);
    in.idles.push_back({"orders", 1, storage::GapKind::kAck, kT0 + 8'351'000, kT0 + 8'399'000});
    const auto a = analyse(in);
    const auto& p1 = a.partitions[1];
    CHECK(p1.ack.outcome == Outcome::kInconclusive);
    CHECK(p1.ack.probe_idle_at_end_us == 48'000);
    CHECK(p1.ack.reason ==
          "the probe had nothing outstanding for 0.048 s of it before it sent the message that "
          "ended it");
    CHECK(p1.ack.longest_gap->end_us == kT0 + 8'402'000);
  }
}

TEST_CASE(
    "a gap within the noise is no stall even when the probe had nothing outstanding for part of it",
    "[unit]") {
  auto in = gracefulStop();
  // The sender woke 45 ms late at the start of p1's 57 ms follower gap (a busy host).
  in.idles.push_back({"orders", 1, storage::GapKind::kAck, kT0 - 17'000, kT0 + 28'000});
  const auto a = analyse(in);
  const auto& p1 = a.partitions[1];
  CHECK(p1.ack.outcome == Outcome::kNone);
  CHECK_FALSE(p1.ack.stall);
  CHECK(p1.ack.probe_idle_us == 45'000);
  CHECK(p1.ack.reason ==
        "0.057 s is within the noise (0.020 s, p99 of 247 baseline gaps), though the probe had "
        "nothing "
        "outstanding for 0.045 s of it");
  CHECK(a.partitions[0].ack.outcome == Outcome::kStall);
  CHECK(a.partitions[2].ack.outcome == Outcome::kNone);
}

TEST_CASE("a probe lagging at the fault makes the partition inconclusive", "[unit]") {
  auto in = articleKill();
  ProbeAtFault old_message{"orders", 0, 60, 1'500'000, false, 0};
  ProbeAtFault holding{"orders", 1, 50, 200'000, true, 12};
  ProbeAtFault keeping_up{"orders", 2, 25, 500'000, false, 0};
  in.probe_at_fault = {old_message, holding, keeping_up};
  const auto a = analyse(in);
  const auto& p0 = a.partitions[0];
  CHECK(p0.ack.outcome == Outcome::kInconclusive);
  CHECK(p0.receive.outcome == Outcome::kInconclusive);
  CHECK(p0.ack.reason ==
        "the probe was lagging at the fault (oldest outstanding message 1.500 s old)");
  CHECK_FALSE(p0.ack.stall);
  REQUIRE(p0.ack.ended_by);  // still named
  CHECK(p0.ack.ended_by->seq == 250);
  CHECK(a.partitions[1].ack.outcome == Outcome::kInconclusive);
  CHECK(a.partitions[1].ack.reason == "the probe was holding back sends at the fault");
  CHECK(a.partitions[2].ack.outcome == Outcome::kStall);
  CHECK_FALSE(a.conclusive);
}

TEST_CASE("sends held back during a stall leave it a stall and report the ticks", "[unit]") {
  auto in = articleKill();
  in.holds.push_back({"orders", 0, kT0 + kSecond, kT0 + 3 * kSecond, 100, "outstanding_count"});
  // 0.4 s of this one-second hold lies inside p0's stall: 20 of its 50 ticks.
  in.holds.push_back({"orders", 0, kT0 + 9 * kSecond, kT0 + 10 * kSecond, 50, "outstanding_age"});
  // Still open: it ends with the stall.
  in.holds.push_back({"orders", 1, kT0 + 8'270'000, std::nullopt, 5, "outstanding_count"});
  in.holds.push_back({"orders", 2, kT0 - 3 * kSecond, kT0 - 2 * kSecond, 9, "outstanding_count"});
  const auto a = analyse(in);
  CHECK(a.partitions[0].ack.outcome == Outcome::kStall);
  CHECK(a.partitions[0].ack.held_ticks == 120);
  CHECK(a.partitions[0].receive.held_ticks == 120);
  CHECK(a.partitions[1].ack.outcome == Outcome::kStall);
  CHECK(a.partitions[1].ack.held_ticks == 5);
  CHECK(a.partitions[2].ack.held_ticks == 0);
  CHECK(a.conclusive);
  CHECK(toJson(a)["partitions"][0]["ack"]["held_ticks"] == 120);
}

TEST_CASE("too few acks before the fault leave the noise unknown and the outcome inconclusive",
          "[unit]") {
  AnalysisInput in;
  in.fault = "kill";
  in.target = 1;
  in.fault_us = kT0;
  in.window_start_us = kT0 - 100'000;
  in.observe_end_us = kT0 + 9'460'000;
  in.window_end_us = in.observe_end_us;
  in.partitions = {kOrders[0]};
  std::int64_t seq = 0;
  steady(in, 0, in.window_start_us, kT0, seq);
  stalled(in, 0, kT0, kT0 + 9'400'000, kT0 + 9'400'000, seq);
  steady(in, 0, kT0 + 9'400'000, in.observe_end_us, seq);
  const auto a = analyse(in);
  const auto& p0 = a.partitions[0];
  CHECK(p0.ack.outcome == Outcome::kInconclusive);
  CHECK_FALSE(p0.ack.stall);
  // 4 intervals before the fault; the 3 after it are not baseline.
  CHECK(p0.ack.reason ==
        "too few acks before the fault to know the noise (4 intervals, 10 needed)");
  CHECK(p0.ack.noise_gaps == 4);
  CHECK(p0.ack.longest_gap->duration_us() == 9'417'000);
  CHECK(p0.ack.baseline->duration_us() == kInterval);
  CHECK(p0.receive.outcome == Outcome::kInconclusive);
  CHECK_FALSE(a.conclusive);
}

TEST_CASE("the noise is the 99th percentile of the baseline gaps by nearest rank", "[unit]") {
  CHECK(noiseRank(1) == 1);
  CHECK(noiseRank(10) == 10);
  CHECK(noiseRank(99) == 99);
  CHECK(noiseRank(100) == 99);
  CHECK(noiseRank(250) == 248);
  CHECK(noiseRank(1000) == 990);
}

// One partition led by the target: steady for 5 s, with the baseline gaps given by `hiccup`
// (a stretch acked at once, 2 s before the fault, when set), then the outages after the fault,
// each [start, end) with its messages acked at its end, steady in between.
AnalysisInput leaderWithOutages(std::optional<std::int64_t> hiccup_us,
                                const std::vector<std::pair<std::int64_t, std::int64_t>>& outages) {
  AnalysisInput in;
  in.fault = "kill";
  in.target = 1;
  in.fault_us = kT0;
  in.window_start_us = kT0 - 5 * kSecond;
  in.observe_end_us = kT0 + 15 * kSecond;
  in.window_end_us = in.observe_end_us;
  in.partitions = {kOrders[0]};
  std::int64_t seq = 0;
  std::int64_t t = in.window_start_us;
  if (hiccup_us) {
    const std::int64_t at = kT0 - 2 * kSecond;
    steady(in, 0, t, at, seq);
    stalled(in, 0, at, at + *hiccup_us, at + *hiccup_us, seq);
    t = at + *hiccup_us;
  }
  steady(in, 0, t, kT0, seq);
  t = kT0;
  for (const auto& [start, end] : outages) {
    steady(in, 0, t, start, seq);
    stalled(in, 0, start, end, end, seq);
    t = end;
  }
  steady(in, 0, t, in.observe_end_us, seq);
  return in;
}

TEST_CASE("a 0.4 s stall after a 0.2 s hiccup in the baseline is still reported as a stall",
          "[unit]") {
  // The hiccup's gap is 217 ms, the stall's 417 ms: under the longest-gap rule 417 < 2 × 217
  // made it "none".
  const auto a = analyse(leaderWithOutages(200'000, {{kT0, kT0 + 400'000}}));
  const auto& ack = a.partitions[0].ack;
  CHECK(ack.outcome == Outcome::kStall);
  REQUIRE(ack.stall);
  CHECK(ack.stall->duration_us() == 417'000);
  CHECK(ack.baseline->duration_us() == kInterval);
  CHECK(ack.noise_gaps > 100);
  CHECK(a.partitions[0].receive.outcome == Outcome::kStall);
  CHECK(a.conclusive);
}

TEST_CASE("an outage split in two after the fault is still reported as a stall", "[unit]") {
  // 4 s, 200 ms of acks, 4 s again: each half used to be the other's noise.
  const auto a = analyse(leaderWithOutages(
      std::nullopt, {{kT0, kT0 + 4 * kSecond}, {kT0 + 4'200'000, kT0 + 8'200'000}}));
  const auto& ack = a.partitions[0].ack;
  CHECK(ack.outcome == Outcome::kStall);
  REQUIRE(ack.stall);
  CHECK(ack.stall->start_us == kT0 - 17'000);
  CHECK(ack.stall->end_us == kT0 + 4 * kSecond);
  CHECK(ack.baseline->duration_us() == kInterval);
  CHECK(ack.baseline->end_us <= kT0);
  CHECK(a.partitions[0].receive.outcome == Outcome::kStall);
}

TEST_CASE("in a baseline of fewer than 100 gaps the longest gap is the noise", "[unit]") {
  // The 99th percentile of fewer than 100 gaps is the longest, so a hiccup as long as the stall
  // keeps it from being called one.
  auto in = leaderWithOutages(400'000, {{kT0, kT0 + 400'000}});
  in.window_start_us = kT0 - 2'200'000;
  std::erase_if(in.samples, [&](const auto& s) { return s.send_us < in.window_start_us; });
  const auto& ack = analyse(in).partitions[0].ack;
  CHECK(ack.noise_gaps < 100);
  CHECK(ack.baseline->duration_us() == 417'000);
  CHECK(ack.outcome == Outcome::kNone);
}

TEST_CASE("a phase below its resolution is never negative and is named as such", "[unit]") {
  // The first ack after the election came before the metadata poll that saw the new leader:
  // resume would be -43 ms.
  auto in = articleKill();
  std::erase_if(in.events, [](const auto& e) {
    return e.source == "client" || (e.source == "broker_log" && e.kind == "leader_epoch_start");
  });
  for (auto& e : in.events) {
    if (e.kind == "leader_change") e.t_us = kT0 + 9'443'000;  // p0 acked again at 9.400 s
  }
  const auto a = analyse(in);
  const auto& ph = a.partitions[0].phases;
  REQUIRE(ph.resume_us);
  CHECK(*ph.resume_us == 0);
  CHECK(*ph.resume_resolution_us == 100'000);
  CHECK(ph.below_resolution == std::vector<std::string>{"resume"});
  CHECK(*ph.election_us == 1'173'000);
  CHECK(*ph.detection_us == 8'270'000);
  CHECK(toJson(a)["partitions"][0]["phases"]["resume_us"] == 0);
}

TEST_CASE("the fault time's uncertainty widens the resolution of the phases from the fault",
          "[unit]") {
  auto in = articleKill();
  in.fault_time_source = "ssh:remote-clock";
  in.fault_time_uncertainty_us = 150'000;
  const auto a = analyse(in);
  CHECK(a.fault_time_uncertainty_us == 150'000);
  const auto& ph = a.partitions[0].phases;
  CHECK(*ph.detection_us == 8'270'000);
  CHECK(*ph.detection_resolution_us == 151'000);
  CHECK(*ph.election_resolution_us == 1'000);  // fenced → new leader does not use the fault time
  CHECK(ph.inconclusive.empty());
}

TEST_CASE("a phase from the fault shorter than the fault time's uncertainty is inconclusive",
          "[unit]") {
  auto in = articleKill();
  in.fault_time_source = "docker:logs";
  in.fault_time_uncertainty_us = 9 * kSecond;
  // The fencing line is still found though the fault time may be 9 s late.
  const auto a = analyse(in);
  const auto& ph = a.partitions[0].phases;
  REQUIRE(ph.detection_us);
  CHECK(ph.inconclusive.at("detection") ==
        "the fault time (docker:logs) is uncertain by ± 9.000 s, more than the phase's 8.270 s");
  CHECK(ph.inconclusive.count("election") == 0);
  CHECK(toJson(a)["partitions"][0]["phases"]["inconclusive"]["detection"].is_string());
}

TEST_CASE("a partition with no acks at all is inconclusive", "[unit]") {
  auto in = articleKill();
  std::erase_if(in.samples, [](const auto& s) { return s.partition == 2; });
  const auto a = analyse(in);
  const auto& p2 = a.partitions[2];
  CHECK(p2.ack.outcome == Outcome::kInconclusive);
  CHECK(p2.ack.reason == "no acks in the window");
  CHECK(p2.receive.reason == "no receives in the window");
  CHECK_FALSE(p2.ack.longest_gap);
  CHECK(p2.sent == 0);
  CHECK(p2.settled);
}

TEST_CASE("a controlled shutdown has no detection phase", "[unit]") {
  auto in = articleKill();
  in.fault = "stop";
  for (auto& e : in.events) {
    if (e.kind == std::string("fenced")) {
      e.kind = "controlled_shutdown";
      e.t_us = kT0 + 3'000;
    }
  }
  const auto a = analyse(in);
  CHECK(a.departure == kfaild::common::Departure::kControlledShutdown);
  CHECK_FALSE(a.partitions[0].phases.detection_us);
}

TEST_CASE("without broker logs a kill is fenced and the metadata sets the resolution", "[unit]") {
  auto in = articleKill();
  std::erase_if(in.events, [](const storage::Event& e) { return e.source == "broker_log"; });
  in.metadata_interval_us = 250'000;
  const auto a = analyse(in);
  CHECK(a.departure == kfaild::common::Departure::kFenced);
  CHECK(*a.departure_at_us == kT0 + 8'320'000);
  const auto& p0 = a.partitions[0];
  CHECK(*p0.phases.detection_us == 8'320'000);
  CHECK(*p0.phases.detection_resolution_us == 250'000);
  CHECK(*p0.phases.election_us == 50'000);  // isr_shrink → leader_change, both polled
  CHECK(*p0.phases.election_resolution_us == 250'000);
  CHECK(*p0.phases.discovery_resolution_us == 250'000);
}

TEST_CASE("a restart without broker logs is a controlled shutdown, not a fencing", "[unit]") {
  auto in = articleKill();
  in.fault = "restart";
  std::erase_if(in.events, [](const storage::Event& e) { return e.source == "broker_log"; });
  const auto a = analyse(in);
  CHECK(a.departure == kfaild::common::Departure::kControlledShutdown);
  CHECK(*a.departure_at_us == kT0 + 8'320'000);
  CHECK_FALSE(a.partitions[0].phases.detection_us);
  CHECK_FALSE(a.partitions[0].phases.fenced_at_us);

  in.fault = "pause";
  CHECK(analyse(in).departure == kfaild::common::Departure::kFenced);
  // A restart by SIGKILL (a rolling restart's `kill`) is fenced like a kill.
  in.fault = "restart";
  in.killed = true;
  CHECK(analyse(in).departure == kfaild::common::Departure::kFenced);
}

TEST_CASE("duplicated and reordered messages are counted from the probe's events", "[unit]") {
  auto in = articleKill();
  in.events.push_back(event(kT0 + 9'500'000, "probe", "duplicate", std::nullopt, 0));
  in.events.push_back(event(kT0 + 9'600'000, "probe", "duplicate", std::nullopt, 0));
  in.events.push_back(event(kT0 + 9'700'000, "probe", "reordered", std::nullopt, 1));
  auto other_topic = event(kT0 + 9'800'000, "probe", "duplicate", std::nullopt, 1);
  other_topic.topic = "single";
  in.events.push_back(other_topic);
  const auto a = analyse(in);
  CHECK(a.partitions[0].duplicated == 2);
  CHECK(a.partitions[0].reordered == 0);
  CHECK(a.partitions[1].duplicated == 0);
  CHECK(a.partitions[1].reordered == 1);
  const auto json = toJson(a);
  CHECK(json["partitions"][0]["duplicated"] == 2);
  CHECK(json["partitions"][1]["reordered"] == 1);
}

TEST_CASE("the probe's hold and idle events are parsed and malformed ones ignored", "[unit]") {
  std::vector<storage::Event> events = {
      event(kT0, "probe", "held_back", std::nullopt, 0,
            R"({"end_us":1700000000500000,"ticks":7,"reason":"outstanding_count"})"),
      event(kT0 + 10, "probe", "held_back", std::nullopt, 1,
            R"({"end_us":null,"ticks":3,"reason":"outstanding_age"})"),
      event(kT0 + 20, "probe", "idle", std::nullopt, 0,
            R"({"kind":"ack","end_us":1700000001000000})"),
      event(kT0 + 30, "probe", "idle", std::nullopt, 2,
            R"({"kind":"receive","end_us":1700000002000000})"),
      event(kT0, "probe", "held_back", std::nullopt, 0, "not json"),
      event(kT0, "probe", "held_back", std::nullopt, 0, "[1,2]"),
      event(kT0, "probe", "held_back", std::nullopt, 0, R"({"end_us":null,"ticks":"7"})"),
      event(kT0, "probe", "held_back", std::nullopt, 0, R"({"end_us":"soon","ticks":7})"),
      event(kT0, "probe", "idle", std::nullopt, 0, R"({"kind":"bogus","end_us":1700000001000000})"),
      event(kT0, "probe", "idle", std::nullopt, 0, R"({"kind":"ack"})"),
      event(kT0, "probe", "idle", std::nullopt, 0, R"({"kind":"ack","end_us":1})"),
      event(kT0, "probe", "idle", std::nullopt, std::nullopt,
            R"({"kind":"ack","end_us":1700000001000000})"),
      event(kT0, "metadata", "idle", std::nullopt, 0,
            R"({"kind":"ack","end_us":1700000001000000})"),
      event(kT0, "probe", "duplicate", std::nullopt, 0, R"({"seq":4})"),
  };
  std::vector<ProbeHold> holds;
  std::vector<ProbeIdle> idles;
  REQUIRE_NOTHROW(probeStretchesFromEvents(events, holds, idles));
  REQUIRE(holds.size() == 2);
  CHECK(holds[0].topic == "orders");
  CHECK(holds[0].partition == 0);
  CHECK(holds[0].start_us == kT0);
  CHECK(*holds[0].end_us == kT0 + 500'000);
  CHECK(holds[0].ticks == 7);
  CHECK(holds[0].reason == "outstanding_count");
  CHECK(holds[1].partition == 1);
  CHECK_FALSE(holds[1].end_us);
  CHECK(holds[1].ticks == 3);
  CHECK(holds[1].reason == "outstanding_age");
  REQUIRE(idles.size() == 2);
  CHECK(idles[0].kind == storage::GapKind::kAck);
  CHECK(idles[0].start_us == kT0 + 20);
  CHECK(idles[0].end_us == kT0 + kSecond);
  CHECK(idles[1].kind == storage::GapKind::kReceive);
  CHECK(idles[1].partition == 2);
}

TEST_CASE("the analysis as JSON keeps the previous fields and carries the new ones", "[unit]") {
  auto in = articleKill();
  in.fault_time_source = "ssh:remote-clock";
  in.fault_time_uncertainty_us = 2'000;
  in.pending.push_back(probeSample(0, 1000, in.observe_end_us, std::nullopt, std::nullopt));
  const auto json = toJson(analyse(in));
  CHECK(json["fault"] == "kill");
  CHECK(json["departure"] == "fenced");
  CHECK(json["departure_at_us"] == kT0 + 8'270'000);
  CHECK(json["recovered_us"] == kT0 + 16 * kSecond);
  CHECK(json["settled"] == false);
  CHECK(json["conclusive"] == true);

  const auto& p0 = json["partitions"][0];
  CHECK(p0["role"] == "leader");
  CHECK(p0["sent"] == 1001);
  CHECK(p0["failed"] == 0);
  CHECK(p0["lost"] == 0);
  CHECK(p0["unresolved"] == 1);
  CHECK(p0["awaiting_ack"] == 1);
  CHECK(p0["awaiting_receive"] == 0);
  CHECK(p0["missing"] == 0);
  CHECK(p0["settled"] == false);
  CHECK(p0["duplicated"] == 0);
  CHECK(p0["reordered"] == 0);
  CHECK(json["partitions"][1]["role"] == "follower");

  const auto& ack = p0["ack"];
  CHECK(ack["outcome"] == "stall");
  CHECK(ack["stall"]["duration_us"] == 9'417'000);
  CHECK(ack["stall"]["open"] == false);
  CHECK(ack["longest_gap"]["start_us"] == kT0 - 17'000);
  CHECK(ack["longest_gap"]["end_us"] == kT0 + 9'400'000);
  CHECK(ack["baseline"]["duration_us"] == kInterval);
  CHECK(ack["noise_gaps"] == 249);
  CHECK(ack["ended_by"]["seq"] == 250);
  CHECK(ack["ended_by"]["at_us"] == kT0 + 9'400'000);
  CHECK(ack["reason"] == "");
  CHECK(ack["held_ticks"] == 0);
  CHECK(ack["probe_idle_us"] == 0);
  CHECK(ack["count"] == 1000);
  CHECK(p0["receive"]["outcome"] == "stall");

  const auto& phases = p0["phases"];
  CHECK(phases["detection_us"] == 8'270'000);
  CHECK(phases["election_us"] == 90'000);
  CHECK(phases["discovery_us"] == 0);
  CHECK(phases["below_resolution"] == nlohmann::json::array({"discovery"}));
  CHECK(phases["inconclusive"] == nlohmann::json::object());
  CHECK(phases["node_back_resolution_us"].is_null());
  CHECK(json["fault_time_source"] == "ssh:remote-clock");
  CHECK(json["fault_time_uncertainty_us"] == 2'000);
  CHECK(phases["resume_us"] == 1'055'000);
  CHECK(phases["node_back_us"].is_null());
  CHECK(phases["fenced_at_us"] == kT0 + 8'270'000);
  CHECK(phases["new_leader_at_us"] == kT0 + 8'360'000);
  CHECK(phases["client_update_at_us"] == kT0 + 8'345'000);
  CHECK(phases["new_leader"] == 2);
  CHECK(phases["detection_resolution_us"] == 3'000);  // the log line's 1 ms + the fault time's 2 ms
  CHECK(phases["election_resolution_us"] == 1'000);
  CHECK(phases["discovery_resolution_us"] == 1'000);
  CHECK(json["partitions"][1]["phases"]["discovery_resolution_us"].is_null());

  CHECK(std::string(toString(Outcome::kNone)) == "none");
  CHECK(std::string(toString(Outcome::kInconclusive)) == "inconclusive");
}

TEST_CASE("a compound drill's second fault takes its noise from before the first fault", "[unit]") {
  // The active controller killed 2 s before broker 1: between the two faults p2 paused 600 ms
  // (nothing to do with broker 1). The second fault's analysis must not take that pause as p2's
  // noise, nor as its stall.
  AnalysisInput in;
  in.fault = "kill";
  in.target = 1;
  in.fault_us = kT0;
  in.window_start_us = kT0 - 2'400'000;  // under 100 baseline gaps: the noise is the longest
  in.observe_end_us = kT0 + 12 * kSecond;
  in.recovered_us = kT0 + 13 * kSecond;
  in.window_end_us = kT0 + 13 * kSecond;
  in.partitions = kOrders;
  const std::int64_t first = kT0 - 2 * kSecond;
  const std::int64_t resume = kT0 + 9'400'000;
  std::int64_t seq0 = 0;
  steady(in, 0, in.window_start_us, kT0, seq0);
  stalled(in, 0, kT0, resume, resume, seq0);
  steady(in, 0, resume, in.observe_end_us, seq0);
  std::int64_t seq1 = 0;
  steady(in, 1, in.window_start_us, in.observe_end_us, seq1);
  std::int64_t seq2 = 0;
  const std::int64_t pause = first + 500'000;
  steady(in, 2, in.window_start_us, pause, seq2);
  stalled(in, 2, pause, pause + 600'000, pause + 600'000, seq2);
  steady(in, 2, pause + 600'000, in.observe_end_us, seq2);

  auto alone = analyse(in);  // the baseline runs to the second fault
  CHECK_THAT(alone.partitions[2].ack.reason, Catch::Contains("noise (0.617 s, p99 of"));

  in.baseline_end_us = first;
  const auto a = analyse(in);
  const auto& p0 = a.partitions[0];
  CHECK(p0.role == Role::kLeader);
  CHECK(p0.ack.outcome == Outcome::kStall);
  REQUIRE(p0.ack.stall);
  CHECK(p0.ack.stall->duration_us() == resume - (kT0 - kInterval + 3'000));
  CHECK(a.partitions[2].ack.outcome == Outcome::kNone);
  CHECK(a.partitions[2].ack.reason ==
        "0.020 s is within the noise (0.020 s, p99 of 19 baseline gaps)");
}

TEST_CASE(
    "a compound drill's first fault, analysed up to the second, leaves a stall still open then "
    "inconclusive",
    "[unit]") {
  auto in = articleKill();
  in.observe_end_us = kT0 + 2 * kSecond;
  in.window_end_us = kT0 + 2 * kSecond;
  in.recovered_us.reset();
  // Without the cut, the ack at 9.4 s would close a gap that outlived the window.
  const auto uncut = analyse(in);
  CHECK(uncut.partitions[0].ack.outcome == Outcome::kStall);
  in.cut_by = "the second fault";
  const auto a = analyse(in);
  const auto& p0 = a.partitions[0].ack;
  CHECK(p0.outcome == Outcome::kInconclusive);
  CHECK_FALSE(p0.stall);
  CHECK(p0.reason == "still stalled at the second fault (≥ 2.017 s)");
  CHECK(a.partitions[0].receive.outcome == Outcome::kInconclusive);
}

TEST_CASE("phases read from another host's log are as uncertain as its clock against kfaild's",
          "[unit]") {
  auto in = articleKill();
  // The controller's and the new leader's logs came over ssh, their hosts' clocks placed on
  // kfaild's within ± 0.7 ms and ± 4 ms.
  for (auto& e : in.events) {
    if (e.source != "broker_log") continue;
    e.detail = e.kind == "fenced" ? R"({"clock_offset_us":-120000,"clock_uncertainty_us":700})"
                                  : R"({"clock_offset_us":5000,"clock_uncertainty_us":4000})";
  }
  CHECK(logResolutionUs(in.events) == 5'000);
  const auto a = analyse(in);
  const auto& p0 = a.partitions[0];
  // Same figures; each resolution grows by the largest host clock uncertainty of the run.
  CHECK(*p0.phases.detection_us == 8'270'000);
  CHECK(*p0.phases.detection_resolution_us == 5'000);
  CHECK(*p0.phases.election_resolution_us == 5'000);
  // No host clock in the events: the line's millisecond.
  CHECK(logResolutionUs(articleKill().events) == 1'000);
}

}  // namespace drill_analysis_test
