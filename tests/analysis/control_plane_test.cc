#include "server/analysis/control_plane.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "server/probe/probe_status.h"

namespace control_plane_test {

using namespace kfaild::analysis;
using kfaild::storage::Event;
using kfaild::storage::ProbeSample;

namespace {

constexpr std::int64_t kT0 = 1'700'000'000'000'000;
constexpr std::int64_t kFault = kT0 + 10'000'000;

// Operations every 500 ms from the window's start, each answered 5 ms after its send, except
// those sent inside [dark_from, dark_to), which get no answer and are given up on 1 s later.
std::vector<ProbeSample> stream(std::int64_t dark_from, std::int64_t dark_to,
                                std::int64_t end = kT0 + 30'000'000) {
  std::vector<ProbeSample> out;
  std::int64_t seq = 0;
  for (std::int64_t t = kT0; t < end;) {
    ProbeSample s;
    s.topic = std::string(kfaild::probe::kControlStream);
    s.seq = seq++;
    s.send_us = t;
    const bool dark = t >= dark_from && t < dark_to;
    s.ack_us = t + (dark ? 1'000'000 : 5'000);
    s.ack_error = dark ? kfaild::probe::kControlNoAnswer : 0;
    out.push_back(s);
    t = dark ? *s.ack_us : t + 500'000;
  }
  return out;
}

ControlPlaneInput input(std::vector<ProbeSample> samples) {
  ControlPlaneInput in;
  in.fault_us = kFault;
  in.window_start_us = kT0;
  in.window_end_us = kT0 + 30'000'000;
  in.samples = std::move(samples);
  in.quorum_watched = true;
  return in;
}

Event elected(std::int64_t at, int leader, int epoch, int previous, int previous_epoch,
              std::int64_t previous_last) {
  Event e;
  e.t_us = at;
  e.source = "control";
  e.kind = "quorum_leader_elected";
  e.broker = leader;
  e.detail = nlohmann::json{{"leader", leader},
                            {"epoch", epoch},
                            {"previous_leader", previous},
                            {"previous_epoch", previous_epoch},
                            {"previous_last_us", previous_last},
                            {"leaderless_us", at - previous_last},
                            {"elections", epoch - previous_epoch},
                            {"watch_period_us", 500'000}}
                 .dump();
  return e;
}

}  // namespace

TEST_CASE(
    "an active controller's death: the control plane's stall runs from its last answer before the "
    "fault to "
    "the first after, and the quorum's election is reported",
    "[unit][analysis]") {
  // Dark from the first operation after the fault for 3 s.
  auto in = input(stream(kFault, kFault + 3'000'000));
  const std::vector<Event> events = {elected(kFault + 3'100'000, 101, 6, 100, 5, kFault - 300'000)};
  const auto r = analyseControlPlane(in, events);
  REQUIRE(r.outcome == Outcome::kStall);
  REQUIRE(r.stall);
  CHECK(r.stall->start_us <= kFault);
  CHECK(r.stall->start_us > kFault - 500'000);
  CHECK(r.stall->end_us > kFault + 3'000'000);
  CHECK(r.ended_by);
  CHECK(r.ended_by->at_us == r.stall->end_us);
  CHECK(r.failed >= 2);
  CHECK(r.baseline_longest_us == 500'000);
  CHECK(r.epoch_increments == 1);
  REQUIRE(r.leaderless_us);
  CHECK(*r.leaderless_us == 3'400'000);
  REQUIRE(r.elections.size() == 1);
  CHECK(r.elections[0].leader == 101);
  CHECK(r.elections[0].resolution_us == 1'000'000);
  const auto j = toJson(r);
  CHECK(j["outcome"] == "stall");
  CHECK(j["quorum"]["new_leader"] == 101);
  CHECK(j["quorum"]["epoch_increments"] == 1);
}

TEST_CASE("a broker's death leaves the control plane answering: no stall, no election",
          "[unit][analysis]") {
  const auto r = analyseControlPlane(input(stream(0, 0)), {});
  CHECK(r.outcome == Outcome::kNone);
  CHECK_FALSE(r.stall);
  CHECK(r.longest_gap);
  CHECK(r.longest_gap->duration_us() <= 500'000);
  CHECK(r.elections.empty());
  CHECK(r.epoch_increments == 0);
  CHECK_FALSE(r.leaderless_us);
  CHECK_FALSE(r.reason.empty());
}

TEST_CASE(
    "a control plane still silent when the observation ends is an open, inconclusive candidate",
    "[unit][analysis]") {
  auto in = input(stream(kFault, kT0 + 60'000'000));
  const auto r = analyseControlPlane(in, {});
  CHECK(r.outcome == Outcome::kInconclusive);
  REQUIRE(r.longest_gap);
  CHECK(r.longest_gap->open);
  CHECK(r.longest_gap->end_us == in.window_end_us);
  CHECK_FALSE(r.ended_by);
  CHECK(r.reason.find("no operation was answered after the fault") != std::string::npos);
}

TEST_CASE("a control plane already silent before the fault does not give the fault a stall",
          "[unit][analysis]") {
  auto in = input(stream(kFault - 5'000'000, kFault + 2'000'000));
  const auto r = analyseControlPlane(in, {});
  CHECK(r.outcome == Outcome::kInconclusive);
  CHECK(r.reason.find("had not been answered for") != std::string::npos);
}

TEST_CASE("a clock step in the window makes the control plane's outcome inconclusive",
          "[unit][analysis]") {
  auto in = input(stream(kFault, kFault + 3'000'000));
  in.clock_steps = 1;
  const auto r = analyseControlPlane(in, {});
  CHECK(r.outcome == Outcome::kInconclusive);
  CHECK(r.reason.find("stepped") != std::string::npos);
}

TEST_CASE("a fault time less certain than the candidate makes it inconclusive",
          "[unit][analysis]") {
  auto in = input(stream(kFault, kFault + 3'000'000));
  in.fault_time_uncertainty_us = 10'000'000;
  const auto r = analyseControlPlane(in, {});
  CHECK(r.outcome == Outcome::kInconclusive);
  CHECK(r.reason.find("fault time") != std::string::npos);
}

TEST_CASE(
    "elections before the fault are not the drill's, and several after it add up their epochs",
    "[unit][analysis]") {
  auto in = input(stream(kFault, kFault + 3'000'000));
  const std::vector<Event> events = {
      elected(kFault - 2'000'000, 100, 5, 101, 4, kFault - 2'500'000),
      elected(kFault + 3'100'000, 102, 8, 100, 5, kFault - 300'000),
      elected(kFault + 9'000'000, 100, 9, 102, 8, kFault + 8'500'000)};
  const auto r = analyseControlPlane(in, events);
  REQUIRE(r.elections.size() == 2);
  CHECK(r.epoch_increments == 4);
  CHECK(*r.leaderless_us == 3'400'000);
  CHECK(toJson(r)["quorum"]["new_leader"] == 100);
}

TEST_CASE(
    "without a quorum watch the control plane's figures stand and the election's are absent with "
    "the reason",
    "[unit][analysis]") {
  auto in = input(stream(kFault, kFault + 3'000'000));
  in.quorum_watched = false;
  in.quorum_unwatched_reason = "the quorum is not described: security.protocol is SASL_SSL";
  const auto r = analyseControlPlane(in, {});
  CHECK(r.outcome == Outcome::kStall);
  CHECK_FALSE(r.quorum_watched);
  CHECK(toJson(r)["quorum"]["reason"] == in.quorum_unwatched_reason);
}

namespace {

Event moved(std::int64_t at, const char* type, int from, int to, const char* partition = nullptr) {
  Event e;
  e.t_us = at;
  e.source = "coordinator";
  e.kind = "coordinator_moved";
  e.broker = to;
  nlohmann::json detail = {
      {"type", type}, {"key", "kfaild-probe-lab"},        {"from", from},
      {"to", to},     {"previous_last_us", at - 500'000}, {"moved_us", 500'000}};
  if (partition) detail["partition"] = partition;
  e.detail = detail.dump();
  return e;
}

}  // namespace

TEST_CASE(
    "a coordinator's death: the commits stall from the last commit before the fault to the first "
    "after, and "
    "the phases run fault, coordinator moved off the target, first commit",
    "[unit][analysis]") {
  // Commits every 500 ms in this synthetic stream (the analysis does not care about the rate),
  // none answered for 9 s after the fault.
  auto commits = stream(kFault, kFault + 9'000'000);
  CoordinatorsInput in;
  in.target = 3;
  in.commits.interval_us = 100'000;
  in.commits.gap_threshold_us = 1'000'000;
  in.commits.fault_us = kFault;
  in.commits.window_start_us = kT0;
  in.commits.window_end_us = kT0 + 30'000'000;
  in.commits.samples = &commits;
  in.watched = true;
  const std::vector<Event> events = {
      moved(kFault - 5'000'000, "group", 2, 3),  // before the fault: not the drill's
      moved(kFault + 8'700'000, "transaction", 1, 2),
      moved(kFault + 8'800'000, "group", 3, 1, "__consumer_offsets-24")};
  const auto r = analyseCoordinators(in, events);
  REQUIRE(r.commits.outcome == Outcome::kStall);
  CHECK(r.commits.stall->end_us > kFault + 9'000'000);
  REQUIRE(r.moves.size() == 2);
  REQUIRE(r.coordinator_moved_us);
  CHECK(*r.coordinator_moved_us ==
        8'800'000);  // the move off the target, not the transaction's off broker 1
  REQUIRE(r.first_commit_us);
  CHECK(*r.first_commit_us == r.commits.ended_by->at_us - kFault);
  CHECK_FALSE(r.transactions);
  CHECK_FALSE(r.first_transaction_us);
  const auto j = toJson(r);
  CHECK(j["transactions"].is_null());
  CHECK(j["moves"][1]["from"] == 3);
  // The partition that moved with the group's coordinator, as the watch named it; unknown for the
  // other.
  CHECK(j["moves"][1]["partition"] == "__consumer_offsets-24");
  CHECK(j["moves"][0]["partition"].is_null());
  CHECK(j["phases"]["first_transaction_s"].is_null());
}

TEST_CASE("an answer that may have come before the fault does not end the stall that follows it",
          "[unit][analysis]") {
  // Commits every 100 ms, each answered 20 ms after its send; the one sent 9 ms before the fault
  // is answered 11 ms after it; then nothing is answered until 8.4 s after the fault.
  std::vector<ProbeSample> commits;
  std::int64_t seq = 0;
  for (std::int64_t t = kT0; t < kT0 + 30'000'000; t += 100'000) {
    ProbeSample s;
    s.seq = seq++;
    s.send_us = t;
    const bool lost = t > kFault - 9'000 && t < kFault + 8'400'000;
    s.ack_us = lost ? t + 1'000'000 : t + 20'000;
    s.ack_error = lost ? 1 : 0;
    commits.push_back(s);
  }
  ProbeSample last;
  last.seq = seq++;
  last.send_us = kFault - 9'000;
  last.ack_us = kFault + 11'000;
  commits.push_back(last);
  StreamInput in;
  in.interval_us = 100'000;
  in.gap_threshold_us = 1'000'000;
  in.fault_us = kFault;
  in.window_start_us = kT0;
  in.window_end_us = kT0 + 30'000'000;
  in.samples = &commits;

  SECTION("within the fault time's uncertainty") {
    in.fault_time_uncertainty_us = 64'000;
    const auto r = analyseStream(in);
    REQUIRE(r.outcome == Outcome::kStall);
    CHECK(r.stall->start_us == kFault + 11'000);
    CHECK(r.stall->end_us >= kFault + 8'400'000);
  }
  SECTION("sent before the fault and answered within an interval of it") {
    in.fault_time_uncertainty_us = 0;
    const auto r = analyseStream(in);
    REQUIRE(r.outcome == Outcome::kStall);
    CHECK(r.stall->start_us == kFault + 11'000);
  }
  SECTION("sent after the fault and answered at once: the cluster answered, no stall") {
    in.fault_time_uncertainty_us = 0;
    commits.back().send_us = kFault + 1'000;
    const auto r = analyseStream(in);
    CHECK(r.outcome == Outcome::kNone);
    CHECK(r.ended_by->at_us == kFault + 11'000);
  }
}

}  // namespace control_plane_test
