#include "server/probe/control_probe.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace probe_control_probe_test {

using namespace kfaild::probe;
using kfaild::common::Instant;

namespace {

struct Ops {
  OperationLedger ledger{3, kControlStream, 500'000, 1'500'000};
  Instant now{1'700'000'000'000'000, 9'000'000};
  ControlOutput out;

  void advance(std::int64_t us) {
    now.wall += us;
    now.mono += us;
  }
  // One operation that takes `latency_us` and is answered (or not).
  void op(std::int64_t latency_us, bool answered = true) {
    const auto sent = now;
    advance(latency_us);
    ledger.record(sent, now, answered ? 0 : kControlNoAnswer,
                  answered ? "" : "the controller did not answer", out);
  }
};

}  // namespace

TEST_CASE("control operations answered every interval record one sample each and no gap",
          "[unit][probe]") {
  Ops o;
  for (int i = 0; i < 20; ++i) {
    o.op(4'000);
    o.advance(496'000);
  }
  CHECK(o.out.samples.size() == 20);
  CHECK(o.out.gaps.empty());
  CHECK(o.out.samples.front().topic == kControlStream);
  CHECK(o.out.samples[5].seq == 5);
  CHECK(*o.out.samples[5].ack_us - o.out.samples[5].send_us == 4'000);
  const auto& s = o.ledger.status();
  CHECK(s.ops == 20);
  CHECK(s.failures == 0);
  CHECK(s.longest_gap_us == 500'000);
  CHECK(s.last_latency_us == 4'000);
  CHECK_FALSE(s.failing_since);
}

TEST_CASE(
    "a control plane that stops answering for 3 s is one gap from the last answer to the next, "
    "ended by the "
    "answering operation",
    "[unit][probe]") {
  Ops o;
  o.op(4'000);
  const auto last_ok = o.now;
  o.advance(496'000);
  // Five operations time out after 600 ms each (the controller is gone), then one is answered
  // after waiting 100 ms for the new controller.
  for (int i = 0; i < 5; ++i) o.op(600'000, false);
  CHECK(o.ledger.status().failing_since.has_value());
  CHECK(o.ledger.status().failing_since->wall == last_ok.wall + 496'000);
  o.op(100'000);
  REQUIRE(o.out.gaps.size() == 1);
  const auto& gap = o.out.gaps.front();
  CHECK(gap.topic == kControlStream);
  CHECK(gap.start_us == last_ok.wall);
  CHECK(gap.end_us == o.now.wall);
  CHECK(gap.duration_us == 496'000 + 5 * 600'000 + 100'000);
  CHECK(gap.seq_before == 0);
  CHECK(gap.seq_after == 6);
  CHECK(o.ledger.status().failures == 5);
  CHECK_FALSE(o.ledger.status().failing_since);
  CHECK(o.ledger.status().last_error == "the controller did not answer");
  // The failed operations are samples too, with their error.
  REQUIRE(o.out.samples.size() == 7);
  CHECK(o.out.samples[3].ack_error == kControlNoAnswer);
}

TEST_CASE("a gap is measured on the monotonic clock: a wall-clock step neither makes nor hides one",
          "[unit][probe]") {
  Ops o;
  o.op(4'000);
  o.advance(496'000);
  o.now.wall += 10'000'000;  // the wall clock jumps 10 s forward
  o.op(4'000);
  CHECK(o.out.gaps.empty());
  CHECK(o.ledger.status().longest_gap_us == 500'000);
}

TEST_CASE(
    "the quorum watch raises one event per change of leader, with the old leader's last answer and "
    "the "
    "epochs between",
    "[unit][probe]") {
  QuorumWatch watch(3);
  ControlOutput out;
  std::int64_t t = 1'700'000'000'000'000;
  watch.answered(t, 100, 5, "c100", out);
  watch.answered(t += 500'000, 100, 5, "c100", out);
  CHECK(out.events.empty());  // the first leader seen is no change
  const auto last_of_old = t;
  watch.unanswered(t += 500'000, "controller 100: connection refused", out);
  watch.unanswered(t += 500'000, "controller 100: connection refused", out);
  REQUIRE(out.events.size() == 1);  // one quorum_unanswered per silence
  CHECK(out.events[0].kind == "quorum_unanswered");
  CHECK(out.events[0].broker == 100);
  watch.answered(t += 500'000, 101, 7, "c101", out);
  REQUIRE(out.events.size() == 2);
  const auto& e = out.events[1];
  CHECK(e.source == "control");
  CHECK(e.kind == "quorum_leader_elected");
  CHECK(e.broker == 101);
  CHECK(e.t_us == t);
  const auto d = nlohmann::json::parse(e.detail);
  CHECK(d["previous_leader"] == 100);
  CHECK(d["previous_epoch"] == 5);
  CHECK(d["epoch"] == 7);
  CHECK(d["elections"] == 2);
  CHECK(d["previous_last_us"] == last_of_old);
  CHECK(d["leaderless_us"] == t - last_of_old);
  CHECK(d["watch_period_us"] == 500'000);
  CHECK(watch.changes() == 1);
  CHECK(watch.error().empty());
  // A late answer of the deposed leader in its old epoch changes nothing.
  watch.answered(t += 500'000, 100, 5, "c100", out);
  CHECK(out.events.size() == 2);
  CHECK(watch.leader()->leader == 101);
  // The same leader re-elected in a new epoch is a change.
  watch.answered(t += 500'000, 101, 8, "c101", out);
  REQUIRE(out.events.size() == 3);
  CHECK(nlohmann::json::parse(out.events[2].detail)["previous_leader"] == 101);
}

}  // namespace probe_control_probe_test
