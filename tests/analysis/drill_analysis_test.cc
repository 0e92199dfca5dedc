#include "server/analysis/drill_analysis.h"

#include <catch2/catch.hpp>

using namespace kfaild;
using namespace kfaild::analysis;

namespace {

// The article's first SIGKILL run, rebuilt: fault at t0, fencing 8.27 s later, new leader of p0
// 0.09 s after that, the producer applies it 0.075 s after fencing, p0 acks again 1.04 s later.
constexpr std::int64_t kT0 = 1'700'000'000'000'000;
constexpr std::int64_t kInterval = 20'000;

storage::Event event(std::int64_t t, const char* source, const char* kind, std::optional<int> broker,
                     std::optional<int> partition = std::nullopt, const char* detail = "{}") {
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

void steady(AnalysisInput& in, int partition, std::int64_t from, std::int64_t to, std::int64_t& seq) {
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

AnalysisInput articleKill() {
  AnalysisInput in;
  in.fault = "kill";
  in.target = 1;
  in.fault_us = kT0;
  in.window_start_us = kT0 - 5'000'000;
  in.observe_end_us = kT0 + 15'000'000;
  in.partitions = {{"orders", 0, 1, {1, 2, 3}, {1, 2, 3}},
                   {"orders", 1, 2, {2, 3, 1}, {2, 3, 1}},
                   {"orders", 2, 3, {3, 1, 2}, {3, 1, 2}}};
  const std::int64_t fenced = kT0 + 8'270'000;
  const std::int64_t resume[] = {kT0 + 9'400'000, kT0 + 8'370'000, kT0 + 8'370'000};
  for (int p = 0; p < 3; ++p) {
    std::int64_t seq = 0;
    steady(in, p, in.window_start_us, kT0, seq);
    // Everything sent during the stall is acked at once when it ends.
    for (std::int64_t t = kT0; t < resume[p]; t += kInterval) {
      storage::ProbeSample s;
      s.topic = "orders";
      s.partition = p;
      s.seq = seq++;
      s.send_us = t;
      s.ack_us = resume[p];
      s.receive_us = resume[p] + 500;
      in.samples.push_back(s);
    }
    steady(in, p, resume[p], in.observe_end_us, seq);
  }
  in.events = {event(kT0, "injector", "fault", 1),
               event(fenced, "broker_log", "fenced", 1),
               event(fenced + 50'000, "metadata", "isr_shrink", 1, 1),
               event(fenced + 50'000, "metadata", "isr_shrink", 1, 2),
               event(fenced + 75'000, "client", "client_leader_update", 2, 0, R"({"client":"producer","from":1,"to":2})"),
               event(fenced + 90'000, "broker_log", "leader_epoch_start", 2, 0),
               event(fenced + 100'000, "metadata", "leader_change", 2, 0)};
  return in;
}

}  // namespace

TEST_CASE("the article's kill run is analysed into roles, stalls and phases", "[unit][analysis]") {
  const auto a = analyse(articleKill());
  CHECK(a.departure == "fenced");
  REQUIRE(a.partitions.size() == 3);

  const auto& p0 = a.partitions[0];
  CHECK(p0.role == Role::kLeader);
  REQUIRE(p0.ack.stall);
  // The last ack before the fault came 17 ms before it; the next at 9.40 s.
  CHECK(p0.ack.stall->duration_us() == 9'400'000 + (kInterval - 3'000));
  CHECK(p0.ack.baseline->duration_us() == kInterval);
  CHECK(*p0.phases.detection_us == 8'270'000);
  CHECK(*p0.phases.election_us == 90'000);       // the new leader's own log line is earliest
  CHECK(*p0.phases.new_leader == 2);
  CHECK(*p0.phases.discovery_us == -15'000);     // the producer applied it before k2 logged it
  CHECK(*p0.phases.resume_us == 9'400'000 - 8'345'000);
  CHECK(p0.lost == 0);
  CHECK(p0.failed == 0);
  CHECK(p0.unresolved == 0);

  for (int p : {1, 2}) {
    const auto& r = a.partitions[p];
    CHECK(r.role == Role::kFollowerInIsr);
    REQUIRE(r.ack.stall);
    CHECK(r.ack.stall->end_us == kT0 + 8'370'000);
    CHECK(*r.phases.election_us == 50'000);  // the ISR dropped broker 1
    CHECK_FALSE(r.phases.discovery_us);      // the leader did not move
  }
  CHECK(a.partitions[0].ack.stall->duration_us() > a.partitions[1].ack.stall->duration_us());
}

TEST_CASE("a controlled shutdown has no detection phase", "[unit][analysis]") {
  auto in = articleKill();
  in.fault = "stop";
  for (auto& e : in.events) {
    if (e.kind == std::string("fenced")) {
      e.kind = "controlled_shutdown";
      e.t_us = kT0 + 3'000;
    }
  }
  const auto a = analyse(in);
  CHECK(a.departure == "controlled_shutdown");
  CHECK_FALSE(a.partitions[0].phases.detection_us);
}

TEST_CASE("without broker logs the metadata marks the departure, classified by the fault", "[unit][analysis]") {
  auto in = articleKill();
  std::erase_if(in.events, [](const storage::Event& e) { return e.source == "broker_log"; });
  const auto a = analyse(in);
  CHECK(a.departure == "fenced");
  CHECK(*a.departure_at_us == kT0 + 8'320'000);
  CHECK(*a.partitions[0].phases.detection_us == 8'320'000);
}

TEST_CASE("losses, failures and partitions the target does not hold are reported", "[unit][analysis]") {
  auto in = articleKill();
  in.partitions.push_back({"orders", 3, 2, {2, 3}, {2, 3}});
  std::int64_t seq = 0;
  steady(in, 3, in.window_start_us, in.observe_end_us, seq);
  in.samples[10].receive_us.reset();  // p0: acked, never received
  in.samples[11].ack_error = -192;    // p0: failed
  in.samples[11].ack_us.reset();
  in.samples.erase(in.samples.begin() + 12);  // p0: still in flight at analysis time
  in.events.push_back(event(kT0 + 9'500'000, "probe", "duplicate", std::nullopt, 0));
  const auto a = analyse(in);
  CHECK(a.partitions[0].lost == 1);
  CHECK(a.partitions[0].failed == 1);
  CHECK(a.partitions[0].unresolved == 1);
  CHECK(a.partitions[0].duplicated == 1);
  CHECK(a.partitions[3].role == Role::kNotAReplica);
  CHECK(a.partitions[3].ack.stall->duration_us() == kInterval);
  const auto json = toJson(a);
  CHECK(json["partitions"][3]["role"] == "not_a_replica");
  CHECK(json["partitions"][0]["phases"]["detection_us"] == 8'270'000);
}

TEST_CASE("a partition still without an ack when observation ends has an open stall, not none and not "
          "the short gap before it",
          "[unit][analysis]") {
  // A graceful stop of the only replica: p0 acks for 60 ms more after the fault (the broker
  // finishes its controlled shutdown), then nothing until observation ends 20 s later.
  AnalysisInput in;
  in.fault = "stop";
  in.target = 1;
  in.fault_us = kT0;
  in.window_start_us = kT0 - 5'000'000;
  in.observe_end_us = kT0 + 20'000'000;
  in.partitions = {{"orders", 0, 1, {1}, {1}}, {"orders", 1, 2, {2}, {2}}};
  std::int64_t seq0 = 0, seq1 = 0;
  steady(in, 0, in.window_start_us, kT0 + 60'000, seq0);
  steady(in, 1, in.window_start_us, in.observe_end_us - 5'000, seq1);
  const auto a = analyse(in);
  const auto& p0 = a.partitions[0];
  REQUIRE(p0.ack.stall);
  CHECK(p0.ack.stall->open);
  CHECK(p0.ack.stall->start_us == kT0 + 40'000 + 3'000);
  CHECK(p0.ack.stall->end_us == in.observe_end_us);
  CHECK_FALSE(p0.phases.resume_us);
  CHECK(toJson(a)["partitions"][0]["ack"]["stall"]["open"] == true);
  // A partition that kept acking has its usual closed stall: its last gap before the end of
  // observation is shorter than five intervals.
  const auto& p1 = a.partitions[1];
  REQUIRE(p1.ack.stall);
  CHECK_FALSE(p1.ack.stall->open);
  CHECK(p1.ack.stall->duration_us() == kInterval);
}
