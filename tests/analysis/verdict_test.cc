#include "server/analysis/verdict.h"

#include <algorithm>
#include <catch2/catch.hpp>

namespace analysis_verdict_test {

using namespace kfaild::analysis;
using kfaild::common::GrayFault;
using nlohmann::json;

namespace {

constexpr std::int64_t kSecond = 1'000'000;

KindResult stallOf(double s) {
  KindResult k;
  k.outcome = Outcome::kStall;
  k.stall = Interval{0, static_cast<std::int64_t>(s * kSecond), false};
  k.longest_gap = k.stall;
  return k;
}

KindResult noneWith(double gap_s) {
  KindResult k;
  k.outcome = Outcome::kNone;
  k.longest_gap = Interval{0, static_cast<std::int64_t>(gap_s * kSecond), false};
  k.reason = "not significant";
  return k;
}

KindResult inconclusive(const std::string& reason) {
  KindResult k;
  k.outcome = Outcome::kInconclusive;
  k.longest_gap = Interval{0, 30 * kSecond, true};
  k.reason = reason;
  return k;
}

PartitionResult partition(std::int32_t p, Role role, KindResult ack, KindResult receive) {
  PartitionResult r;
  r.topic = "orders";
  r.partition = p;
  r.role = role;
  r.ack = std::move(ack);
  r.receive = std::move(receive);
  r.settled = true;
  return r;
}

// The article's kill: p0's leader died (9.8 s), p1 and p2 followed (8.6 s).
RunAnalysis killRun(double leader_s = 9.8, double follower_s = 8.6) {
  RunAnalysis a;
  a.fault = "kill";
  a.target = 1;
  a.fault_us = 100 * kSecond;
  a.recovered_us = a.fault_us + 15 * kSecond;
  a.departure = kfaild::common::Departure::kFenced;
  a.partitions.push_back(partition(0, Role::kLeader, stallOf(leader_s), stallOf(leader_s)));
  a.partitions.push_back(
      partition(1, Role::kFollowerInIsr, stallOf(follower_s), stallOf(follower_s)));
  a.partitions.push_back(
      partition(2, Role::kFollowerInIsr, stallOf(follower_s), stallOf(follower_s)));
  for (auto& p : a.partitions) p.phases.detection_us = static_cast<std::int64_t>(8.4 * kSecond);
  a.partitions[0].phases.discovery_us = 100'000;
  return a;
}

Objectives parsed(const char* text) {
  auto o = parseObjectives(json::parse(text), "expect");
  REQUIRE(o);
  return *o;
}

std::vector<const Check*> failing(const Verdict& v) {
  std::vector<const Check*> out;
  for (const auto& c : v.checks) {
    if (c.status == CheckStatus::kFail) out.push_back(&c);
  }
  return out;
}

}  // namespace

TEST_CASE(
    "the article's kill passes the default objectives and fails a 1 s ack stall on every partition",
    "[unit][verdict]") {
  const auto pass = evaluate({killRun()}, defaultObjectives(), "kill", {}, {});
  CHECK(pass.verdict == CheckStatus::kPass);
  CHECK(failing(pass).empty());
  // 3 partitions × (ack, receive, lost, duplicated, failed, detection) + p0's discovery + the run's
  // recovery.
  CHECK(pass.checks.size() == 3 * 6 + 1 + 1);

  const auto strict =
      evaluate({killRun()}, overlay(defaultObjectives(), parsed(R"({"max_ack_stall_s":1})")),
               "kill", {}, {});
  CHECK(strict.verdict == CheckStatus::kFail);
  const auto fails = failing(strict);
  REQUIRE(fails.size() == 3);
  CHECK(fails[0]->objective == "max_ack_stall_s");
  CHECK(fails[0]->threshold == 1.0);
  CHECK(*fails[0]->measured == Approx(9.8));
  CHECK(fails[0]->partition == 0);
  CHECK(fails[0]->role == "leader");
  CHECK(fails[0]->run == 1);
  CHECK(toJson(strict)["checks"][0]["topic"] == "orders");
}

TEST_CASE("each client profile is judged against the same objectives, the worst naming it",
          "[unit][verdict]") {
  const auto objectives = overlay(defaultObjectives(), parsed(R"({"max_ack_stall_s":12})"));
  auto verdict = evaluate({killRun()}, objectives, "kill", {}, {});
  REQUIRE(verdict.verdict == CheckStatus::kPass);
  const auto primary_checks = verdict.checks.size();
  // The application's client took 12.1 s on the killed leader's partition.
  const auto slow = evaluate({killRun(12.1)}, objectives, "kill", {}, {});
  addProfile(verdict, "librdkafka", "app-defaults", slow);
  CHECK(verdict.verdict == CheckStatus::kFail);
  CHECK(verdict.checks.size() == primary_checks + slow.checks.size());
  const auto fails = failing(verdict);
  REQUIRE(fails.size() == 1);
  CHECK(fails[0]->profile == "app-defaults");
  CHECK(*fails[0]->measured == Approx(12.1));
  CHECK_FALSE(verdict.checks.front().profile.has_value());
  const auto text = toJson(verdict);
  CHECK(text["profiles"] == json::array({{{"profile", "librdkafka"}, {"verdict", "pass"}},
                                         {{"profile", "app-defaults"}, {"verdict", "fail"}}}));
  CHECK_FALSE(text["checks"][0].contains("profile"));
  CHECK(text["checks"][primary_checks]["profile"] == "app-defaults");

  // An inconclusive profile makes a passing drill inconclusive, never a failing one less so.
  auto passing = evaluate({killRun()}, objectives, "kill", {}, {});
  auto unsure = slow;
  unsure.verdict = CheckStatus::kInconclusive;
  addProfile(passing, "librdkafka", "java", unsure);
  CHECK(passing.verdict == CheckStatus::kInconclusive);
  addProfile(verdict, "librdkafka", "java", unsure);
  CHECK(verdict.verdict == CheckStatus::kFail);
  CHECK(verdict.profiles.size() == 3);
}

TEST_CASE("a stall limit is the most specific one: by_fault.by_role, by_role, by_fault, top level",
          "[unit][verdict]") {
  const auto o = parsed(R"({"max_ack_stall_s":20,
                            "by_fault":{"kill":{"max_ack_stall_s":11,"by_role":{"leader":{"max_ack_stall_s":9}}},
                                        "stop":{"max_ack_stall_s":2}},
                            "by_role":{"follower":{"max_ack_stall_s":8}}})");
  CHECK(stallLimit(o, "kill", "leader", StallKind::kAck)->seconds == 9);
  CHECK(stallLimit(o, "kill", "leader", StallKind::kAck)->source ==
        "by_fault.kill.by_role.leader.max_ack_stall_s");
  CHECK(stallLimit(o, "kill", "follower", StallKind::kAck)->seconds == 8);
  CHECK(stallLimit(o, "kill", "sole_replica", StallKind::kAck)->seconds == 11);
  CHECK(stallLimit(o, "stop", "leader", StallKind::kAck)->seconds == 2);
  CHECK(stallLimit(o, "pause", "leader", StallKind::kAck)->seconds == 20);
  CHECK_FALSE(stallLimit(o, "kill", "leader", StallKind::kReceive));

  // The leader's 9.8 s stall breaks its own 9 s; the followers' 7.5 s stays within their 8 s by
  // role.
  const auto v = evaluate({killRun(9.8, 7.5)}, o, "kill", {}, {});
  const auto fails = failing(v);
  REQUIRE(fails.size() == 1);
  CHECK(fails[0]->partition == 0);
  CHECK(fails[0]->source == "by_fault.kill.by_role.leader.max_ack_stall_s");
  // The same run as a stop is judged by the stop's 2 s (followers' 8 s by role wins over it).
  const auto as_stop = evaluate({killRun(9.8, 7.5)}, o, "stop", {}, {});
  CHECK(failing(as_stop).size() == 1);
  CHECK(failing(as_stop)[0]->threshold == 2);
}

TEST_CASE("a request's objectives override the cluster's key by key, and beneath the key they set",
          "[unit][verdict]") {
  const auto cluster = parsed(R"({"max_ack_stall_s":15,"max_receive_stall_s":15,
                                  "by_fault":{"kill":{"max_ack_stall_s":12,"by_role":{"leader":{"max_ack_stall_s":13}}}},
                                  "by_role":{"sole_replica":{"max_ack_stall_s":60}},
                                  "max_lost":0,"max_detection_s":12})");
  const auto merged = overlay(cluster, parsed(R"({"max_ack_stall_s":1,"max_detection_s":20})"));
  CHECK(stallLimit(merged, "kill", "leader", StallKind::kAck)->seconds == 1);
  CHECK(stallLimit(merged, "kill", "sole_replica", StallKind::kAck)->seconds == 1);
  CHECK(stallLimit(merged, "kill", "leader", StallKind::kReceive)->seconds ==
        15);  // untouched kind
  CHECK(merged.max_detection_s == 20);
  CHECK(merged.max_lost == 0);

  // A more specific request key leaves the cluster's other levels alone.
  const auto leader_only =
      overlay(cluster, parsed(R"({"by_role":{"leader":{"max_ack_stall_s":30}}})"));
  CHECK(stallLimit(leader_only, "kill", "leader", StallKind::kAck)->seconds == 30);
  CHECK(stallLimit(leader_only, "kill", "follower", StallKind::kAck)->seconds == 12);
  CHECK(stallLimit(leader_only, "stop", "follower", StallKind::kAck)->seconds == 15);
  CHECK(toJson(leader_only)["by_role"]["leader"]["max_ack_stall_s"] == 30.0);
}

TEST_CASE("what the analysis could not measure makes a check inconclusive, never a pass",
          "[unit][verdict]") {
  auto run = killRun();
  run.partitions[1].ack = inconclusive("the probe was lagging at the fault");
  run.partitions[2].settled = false;
  run.partitions[2].unresolved = 4;
  auto v = evaluate({run}, defaultObjectives(), "kill", {}, {});
  CHECK(v.verdict == CheckStatus::kInconclusive);
  const auto lagging = std::find_if(v.checks.begin(), v.checks.end(), [](const Check& c) {
    return c.objective == "max_ack_stall_s" && c.partition == 1;
  });
  REQUIRE(lagging != v.checks.end());
  CHECK(lagging->status == CheckStatus::kInconclusive);
  CHECK_FALSE(lagging->measured);
  CHECK(lagging->reason == "the probe was lagging at the fault");
  const auto lost = std::find_if(v.checks.begin(), v.checks.end(), [](const Check& c) {
    return c.objective == "max_lost" && c.partition == 2;
  });
  REQUIRE(lost != v.checks.end());
  CHECK(lost->status == CheckStatus::kInconclusive);

  // A count already above its limit fails even while unsettled: counts only grow.
  run.partitions[2].lost = 2;
  v = evaluate({run}, defaultObjectives(), "kill", {}, {});
  CHECK(v.verdict == CheckStatus::kFail);

  // No fencing seen on a kill: detection is inconclusive; no recovery: recovery is inconclusive.
  auto unseen = killRun();
  for (auto& p : unseen.partitions) p.phases.detection_us.reset();
  unseen.recovered_us.reset();
  v = evaluate({unseen}, defaultObjectives(), "kill", {}, {});
  CHECK(v.verdict == CheckStatus::kInconclusive);
  CHECK(std::count_if(v.checks.begin(), v.checks.end(),
                      [](const Check& c) { return c.status == CheckStatus::kInconclusive; }) == 2);
}

TEST_CASE("a gap that is no stall is still compared with the limit", "[unit][verdict]") {
  auto run = killRun();
  run.fault = "stop";
  run.departure = kfaild::common::Departure::kControlledShutdown;
  run.partitions[0].ack = stallOf(0.2);
  run.partitions[1].ack = noneWith(0.04);
  run.partitions[2].ack = noneWith(0.04);
  for (auto& p : run.partitions) {
    p.receive = p.ack;
    p.phases.detection_us.reset();
  }
  CHECK(evaluate({run}, defaultObjectives(), "stop", {}, {}).verdict == CheckStatus::kPass);
  const auto tight = overlay(defaultObjectives(), parsed(R"({"max_ack_stall_s":0.03})"));
  const auto v = evaluate({run}, tight, "stop", {}, {});
  CHECK(failing(v).size() == 3);
}

TEST_CASE("a failed or aborted drill is inconclusive with its reason, and no runs is never a pass",
          "[unit][verdict]") {
  const auto v =
      unfinishedVerdict(defaultObjectives(), "failed", "preflight: broker 2 is not in the ISR");
  CHECK(v.verdict == CheckStatus::kInconclusive);
  CHECK(toJson(v)["verdict"] == "inconclusive");
  CHECK(toJson(v)["reason"] == "the drill failed: preflight: broker 2 is not in the ISR");
  CHECK(evaluate({}, defaultObjectives(), "kill", {}, {}).verdict == CheckStatus::kInconclusive);
}

TEST_CASE(
    "a stall well above the median of earlier runs is a regression, flagged apart from the verdict",
    "[unit][verdict][regression]") {
  const std::vector<StallSample> history = {{"orders", "leader", StallKind::kAck, 9.0},
                                            {"orders", "leader", StallKind::kAck, 9.4},
                                            {"orders", "leader", StallKind::kAck, 30.0},
                                            {"orders", "follower", StallKind::kAck, 8.5}};
  RegressionPolicy policy;  // factor 1.5, min_runs 3, min_delta 1 s
  auto v = evaluate({killRun(14.5, 8.6)}, defaultObjectives(), "kill", history, policy);
  REQUIRE(v.regressions.size() == 1);  // median of 9.0, 9.4, 30 = 9.4; 14.5 > 14.1
  CHECK(v.regressions[0].kind == StallKind::kAck);
  CHECK(v.regressions[0].partition == 0);
  CHECK(v.regressions[0].median_s == Approx(9.4));
  CHECK(v.regressions[0].previous == 3);
  CHECK(v.regressions[0].factor == Approx(14.5 / 9.4));
  CHECK(v.verdict == CheckStatus::kPass);  // within 15 s: a regression alone does not fail
  CHECK(toJson(v)["regressions"][0]["kind"] == "ack");

  // Just below factor × median: none.
  CHECK(evaluate({killRun(14.0, 8.6)}, defaultObjectives(), "kill", history, policy)
            .regressions.empty());
  // Too few earlier values (followers have one): none, whatever the stall.
  CHECK(evaluate({killRun(9.0, 40.0)}, defaultObjectives(), "kill", history, policy)
            .regressions.empty());
  policy.min_runs = 1;
  CHECK(evaluate({killRun(9.0, 40.0)}, defaultObjectives(), "kill", history, policy)
            .regressions.size() == 2);
  // Less than min_delta_s above the median: none, even at a large factor.
  const std::vector<StallSample> short_history(3, {"orders", "leader", StallKind::kAck, 0.1});
  policy.min_runs = 3;
  CHECK(evaluate({killRun(0.5, 8.6)}, defaultObjectives(), "kill", short_history, policy)
            .regressions.empty());

  // fail_on_regression turns the regression into a failing check.
  auto strict = defaultObjectives();
  strict.fail_on_regression = true;
  v = evaluate({killRun(14.5, 8.6)}, strict, "kill", history, RegressionPolicy{});
  CHECK(v.verdict == CheckStatus::kFail);
  REQUIRE(failing(v).size() == 1);
  CHECK(failing(v)[0]->objective == "fail_on_regression");
}

TEST_CASE("earlier stalls are read back from a stored result, none's longest gap included",
          "[unit][verdict]") {
  RunAnalysis a = killRun(9.5, 8.5);
  a.partitions[2].ack = noneWith(0.04);
  a.partitions[1].receive = inconclusive("open");
  const json result = {
      {"runs", json::array({{{"run", 1}, {"state", "done"}, {"analysis", toJson(a)}},
                            {{"run", 2}, {"state", "failed"}, {"analysis", toJson(a)}}})}};
  const auto samples = stallSamplesOf(result);
  CHECK(samples.size() == 5);  // 6 values of the done run minus the inconclusive one
  CHECK(samples[0].topic == "orders");
  CHECK(samples[0].role == "leader");
  CHECK(samples[0].seconds == Approx(9.5));
  CHECK(stallSamplesOf(json::object()).empty());
}

TEST_CASE("objective keys that do not exist, and values out of range, are errors naming the key",
          "[unit][verdict][config]") {
  const auto error = [](const char* text) {
    auto o = parseObjectives(json::parse(text), "expect");
    REQUIRE_FALSE(o);
    return o.error().message;
  };
  CHECK_THAT(error(R"({"max_ack_stal_s":1})"),
             Catch::StartsWith("expect.max_ack_stal_s: unknown key"));
  CHECK_THAT(error(R"({"by_role":{"leder":{}}})"),
             Catch::StartsWith("expect.by_role.leder: unknown key"));
  CHECK_THAT(error(R"({"by_fault":{"kill":{"max_lost":0}}})"),
             Catch::StartsWith("expect.by_fault.kill.max_lost: unknown key"));
  CHECK_THAT(error(R"({"by_fault":{"kill":{"by_role":{"leader":{"max_x":1}}}}})"),
             Catch::StartsWith("expect.by_fault.kill.by_role.leader.max_x: unknown key"));
  CHECK_THAT(error(R"({"max_ack_stall_s":-1})"),
             Catch::StartsWith("expect.max_ack_stall_s: must be between"));
  CHECK_THAT(error(R"({"max_ack_stall_s":"12"})"),
             Catch::StartsWith("expect.max_ack_stall_s: must be a number"));
  CHECK_THAT(error(R"({"max_lost":0.5})"),
             Catch::StartsWith("expect.max_lost: must be a whole number"));
  CHECK_THAT(error(R"({"fail_on_regression":1})"), Catch::StartsWith("expect.fail_on_regression"));
  CHECK_THAT(error("[1]"), Catch::StartsWith("expect: must be a mapping"));

  auto policy = parseRegressionPolicy(json::parse(R"({"window":10,"factor":2.5,"min_runs":2})"),
                                      "regression");
  REQUIRE(policy);
  CHECK(policy->window == 10);
  CHECK(policy->factor == 2.5);
  CHECK(policy->min_runs == 2);
  CHECK_FALSE(parseRegressionPolicy(json::parse(R"({"factor":1})"), "regression"));
  CHECK_THAT(parseRegressionPolicy(json::parse(R"({"windw":3})"), "regression").error().message,
             Catch::StartsWith("regression.windw: unknown key"));
}

namespace {

// A pause of broker 1 that leads p0 and follows p1, p2: every partition waits the pause out.
RunAnalysis pauseRun(double pause_s, bool fenced, std::optional<double> discovery_s) {
  RunAnalysis a;
  a.fault = "pause";
  a.target = 1;
  a.fault_us = 100 * kSecond;
  a.recovered_us = a.fault_us + static_cast<std::int64_t>((pause_s + 2) * kSecond);
  if (fenced) a.departure = kfaild::common::Departure::kFenced;
  a.partitions.push_back(
      partition(0, Role::kLeader, stallOf(pause_s + 0.3), stallOf(pause_s + 0.3)));
  a.partitions.push_back(partition(1, Role::kFollowerInIsr, stallOf(pause_s), stallOf(pause_s)));
  a.partitions.push_back(partition(2, Role::kFollowerInIsr, stallOf(pause_s), stallOf(pause_s)));
  for (auto& p : a.partitions) {
    if (fenced) p.phases.detection_us = static_cast<std::int64_t>(8.1 * kSecond);
  }
  if (discovery_s)
    a.partitions[0].phases.discovery_us = static_cast<std::int64_t>(*discovery_s * kSecond);
  return a;
}

const Check* checkOf(const Verdict& v, const std::string& objective,
                     std::optional<std::int32_t> partition = {}) {
  for (const auto& c : v.checks) {
    if (c.objective == objective && c.partition == partition) return &c;
  }
  return nullptr;
}

FaultMechanism pauseOf(double pause_s) {
  FaultMechanism m;
  m.fault = "pause";
  m.pause_s = pause_s;
  return m;
}

}  // namespace

TEST_CASE(
    "a pause shorter than the session timeout passes the defaults: detection is not applicable",
    "[unit][verdict]") {
  // The lab's 3 s pause of broker 2 used to end inconclusive: "no partition's detection phase".
  const auto m = pauseOf(3);
  const auto v = evaluate({pauseRun(3, false, std::nullopt)}, objectivesFor(defaultObjectives(), m),
                          m, {}, {});
  CHECK(v.verdict == CheckStatus::kPass);
  const auto* detection = checkOf(v, "max_detection_s");
  REQUIRE(detection);
  CHECK(detection->status == CheckStatus::kNotApplicable);
  CHECK(detection->reason ==
        "a pause of 3.0 s is shorter than the session timeout (9.0 s): no fencing is expected, so "
        "there is no detection phase");
  bool stated = false;
  const auto as_json = toJson(v);
  for (const auto& c : as_json["checks"]) stated = stated || c["status"] == "not_applicable";
  CHECK(stated);
  CHECK(checkStatusFromString("not_applicable") == CheckStatus::kNotApplicable);

  // Told by its fault alone, the same run stays inconclusive: the mechanism is what says why.
  CHECK(
      evaluate({pauseRun(3, false, std::nullopt)}, defaultObjectives(), "pause", {}, {}).verdict ==
      CheckStatus::kInconclusive);
}

TEST_CASE("a pause longer than the session timeout has its discovery bounded by the pause's end",
          "[unit][verdict]") {
  // The lab's 12 s pause: the leader partition's discovery took 3.90 s against the 2 s default.
  const auto m = pauseOf(12);
  const auto o = objectivesFor(defaultObjectives(), m);
  // 2 s + 12 s − (9 s − 2 s): fencing can come 7 s after the freeze, the clients see it at 12 s.
  CHECK(*o.max_discovery_s == Approx(7.0));
  CHECK(stallLimit(o, "pause", "leader", StallKind::kAck)->seconds == Approx(17.0));
  CHECK(stallLimit(o, "pause", "sole_replica", StallKind::kAck)->seconds == Approx(17.0));
  CHECK(stallLimit(o, "kill", "leader", StallKind::kAck)->seconds == Approx(15.0));

  const auto v = evaluate({pauseRun(12, true, 3.9)}, o, m, {}, {});
  CHECK(v.verdict == CheckStatus::kPass);
  CHECK(checkOf(v, "max_discovery_s", 0)->status == CheckStatus::kPass);
  CHECK(checkOf(v, "max_detection_s", 0)->status == CheckStatus::kPass);
  CHECK(toJson(v)["objectives"]["max_discovery_s"] == Approx(7.0));

  // Before: the same run failed on max_discovery_s.
  CHECK(evaluate({pauseRun(12, true, 3.9)}, defaultObjectives(), "pause", {}, {}).verdict ==
        CheckStatus::kFail);
}

TEST_CASE("limits a cluster or a request set are not derived from the pause", "[unit][verdict]") {
  const auto m = pauseOf(12);
  const auto requested = objectivesFor(
      overlay(defaultObjectives(), parsed(R"({"max_discovery_s":1,"max_ack_stall_s":4})")), m);
  CHECK(*requested.max_discovery_s == 1.0);
  CHECK(stallLimit(requested, "pause", "leader", StallKind::kAck)->seconds == 4.0);
  // The receive limit is still the default's, but a request that names stall limits owns them.
  CHECK(stallLimit(requested, "pause", "leader", StallKind::kReceive)->seconds == 15.0);

  const auto configured = objectivesFor(parsed(R"({"max_discovery_s":2,"max_ack_stall_s":15})"), m);
  CHECK(*configured.max_discovery_s == 2.0);
  CHECK(stallLimit(configured, "pause", "leader", StallKind::kAck)->seconds == 15.0);

  // A short pause keeps the default discovery limit, and a kill is never derived.
  CHECK(*objectivesFor(defaultObjectives(), pauseOf(3)).max_discovery_s == 2.0);
  FaultMechanism kill;
  kill.fault = "kill";
  CHECK(toJson(objectivesFor(defaultObjectives(), kill)) == toJson(defaultObjectives()));
}

TEST_CASE("a kill of a KRaft controller states that detection is not applicable",
          "[unit][verdict]") {
  RunAnalysis a;
  a.fault = "kill";
  a.target = 3000;
  a.fault_us = 100 * kSecond;
  a.recovered_us = a.fault_us + 10 * kSecond;
  a.partitions.push_back(partition(0, Role::kNotAReplica, noneWith(0.02), noneWith(0.02)));
  FaultMechanism m;
  m.fault = "kill";
  m.target_is_controller = true;
  const auto v = evaluate({a}, objectivesFor(defaultObjectives(), m), m, {}, {});
  CHECK(v.verdict == CheckStatus::kPass);
  const auto* detection = checkOf(v, "max_detection_s");
  REQUIRE(detection);
  CHECK(detection->status == CheckStatus::kNotApplicable);
  CHECK(detection->reason ==
        "the target is a KRaft controller: controllers are never fenced, so there is no detection "
        "phase");

  // A broker's kill without fencing is still inconclusive.
  m.target_is_controller = false;
  const auto broker = evaluate({a}, defaultObjectives(), m, {}, {});
  CHECK(broker.verdict == CheckStatus::kInconclusive);
  CHECK(checkOf(broker, "max_detection_s")->status == CheckStatus::kInconclusive);
}

TEST_CASE("a detection phase the fault time's uncertainty hides is an inconclusive check",
          "[unit][verdict]") {
  auto a = killRun();
  a.partitions[0].phases.inconclusive["detection"] = "the fault time is uncertain by ± 9.000 s";
  const auto v = evaluate({a}, defaultObjectives(), "kill", {}, {});
  CHECK(v.verdict == CheckStatus::kInconclusive);
  const auto* c = checkOf(v, "max_detection_s", 0);
  REQUIRE(c);
  CHECK(c->status == CheckStatus::kInconclusive);
  CHECK(c->reason == "the fault time is uncertain by ± 9.000 s");
  CHECK(checkOf(v, "max_detection_s", 1)->status == CheckStatus::kPass);
}

TEST_CASE("a gray fault's default stall limits follow each role's mechanism", "[unit]") {
  FaultMechanism m;
  m.fault = "isolate";
  m.gray = GrayFaultInput{GrayFault::kIsolate, "brokers", "drop", 0, 60'000'000, std::nullopt};
  auto o = objectivesFor(defaultObjectives(), m);
  // The follower: replica.lag.time.max.ms 30 s + 5 s. The leader: its ISR shrinks to itself,
  // below min.insync.replicas 2 (the objective is per role, so the worse case counts), until the
  // heal at 60 s; after `drop` the connections come back on TCP's retransmission backoff, up to
  // the fault's length again: 120 s.
  CHECK(stallLimit(o, "isolate", "isolated_follower", StallKind::kAck)->seconds == Approx(35.0));
  CHECK(stallLimit(o, "isolate", "isolated_leader", StallKind::kReceive)->seconds == Approx(120.0));
  m.gray->mode = "reject";
  CHECK(stallLimit(objectivesFor(defaultObjectives(), m), "isolate", "isolated_leader",
                   StallKind::kAck)
            ->seconds == Approx(65.0));
  m.gray->mode = "drop";
  CHECK(stallLimit(o, "isolate", "isolated_follower", StallKind::kAck)->source ==
        "by_fault.isolate.by_role.isolated_follower.max_ack_stall_s");
  // Untouched roles and faults keep the defaults.
  CHECK(stallLimit(o, "isolate", "not_a_replica", StallKind::kAck)->seconds == Approx(15.0));
  CHECK(stallLimit(o, "kill", "leader", StallKind::kAck)->seconds == Approx(15.0));

  // From the clients only: the leader waits for the heal and TCP's retransmission after it
  // (2 × 20 s; the lab resumed 6.5 s after a 20 s isolation's heal), its followers are not touched.
  m.gray->from = "clients";
  m.gray->duration_us = 20'000'000;
  o = objectivesFor(defaultObjectives(), m);
  CHECK(stallLimit(o, "isolate", "isolated_leader", StallKind::kAck)->seconds == Approx(40.0));
  CHECK(stallLimit(o, "isolate", "isolated_follower", StallKind::kAck)->seconds == Approx(15.0));

  // disk_full shuts the broker down: the session timeout, under the kill's role names.
  m.fault = "disk_full";
  m.gray = GrayFaultInput{GrayFault::kDiskFull, "", "", 0, 60'000'000, std::nullopt};
  o = objectivesFor(defaultObjectives(), m);
  CHECK(stallLimit(o, "disk_full", "leader", StallKind::kAck)->seconds == Approx(14.0));

  // A limit the cluster or request set is theirs.
  m.fault = "isolate";
  m.gray = GrayFaultInput{GrayFault::kIsolate, "brokers", "drop", 0, 60'000'000, std::nullopt};
  o = objectivesFor(overlay(defaultObjectives(), parsed(R"({"max_ack_stall_s":4})")), m);
  CHECK(stallLimit(o, "isolate", "isolated_follower", StallKind::kAck)->seconds == 4.0);
}

TEST_CASE("objectives name gray faults and gray roles", "[unit]") {
  const auto o = parseObjectives(
      nlohmann::json::parse(
          R"({"by_fault":{"isolate":{"by_role":{"isolated_follower":{"max_ack_stall_s":40}}}},
                               "by_role":{"throttled_follower":{"max_ack_stall_s":35}}})"),
      "expect");
  REQUIRE(o);
  CHECK(stallLimit(*o, "isolate", "isolated_follower", StallKind::kAck)->seconds == 40.0);
  CHECK(stallLimit(*o, "throttle", "throttled_follower", StallKind::kAck)->seconds == 35.0);
}

TEST_CASE(
    "with the wire client a failed send is an attempt: max_failed is not applicable, not a fail",
    "[unit][verdict]") {
  auto run = killRun();
  run.partitions[0].failed = 485;  // every tick of the leader's stall, failed at once
  FaultMechanism m;
  m.fault = "kill";
  m.settings = withClientSettings({}, {{"probe.client", "librdkafka"}});
  CHECK(m.settings.sends_retried);
  const auto retried = evaluate({run}, defaultObjectives(), m, {}, {});
  CHECK(retried.verdict == CheckStatus::kFail);
  REQUIRE(failing(retried).size() == 1);
  CHECK(failing(retried)[0]->objective == "max_failed");

  m.settings = withClientSettings({}, {{"probe.client", "wire"}});
  CHECK_FALSE(m.settings.sends_retried);
  const auto wire = evaluate({run}, defaultObjectives(), m, {}, {});
  CHECK(wire.verdict == CheckStatus::kPass);
  const auto* failed = checkOf(wire, "max_failed", 0);
  REQUIRE(failed);
  CHECK(failed->status == CheckStatus::kNotApplicable);
  CHECK(*failed->measured == 485.0);
  CHECK_THAT(failed->reason, Catch::Contains("does not retry"));
}

TEST_CASE(
    "messages counted lost while kfaild's consumer read nothing from the partition are not the "
    "cluster's "
    "losses: max_lost leaves them out and is inconclusive, and fails on the rest",
    "[unit][verdict]") {
  const auto lostCheck = [](const Verdict& v) {
    const auto it = std::find_if(v.checks.begin(), v.checks.end(), [](const Check& c) {
      return c.objective == "max_lost" && c.partition == 1;
    });
    REQUIRE(it != v.checks.end());
    return *it;
  };
  auto run = killRun();
  run.partitions[1].lost = 40;
  run.partitions[1].lost_consumer_stuck = 40;
  const auto stuck = lostCheck(evaluate({run}, defaultObjectives(), "kill", {}, {}));
  CHECK(stuck.status == CheckStatus::kInconclusive);
  CHECK(*stuck.measured == 0);
  CHECK(stuck.reason.find("40 message(s) were counted lost while kfaild's consumer read nothing") !=
        std::string::npos);

  // Two more lost before any restart: the cluster's, and over the limit.
  run.partitions[1].lost = 42;
  const auto cluster = lostCheck(evaluate({run}, defaultObjectives(), "kill", {}, {}));
  CHECK(cluster.status == CheckStatus::kFail);
  CHECK(*cluster.measured == 2);

  // None stuck: an ordinary loss check.
  run.partitions[1].lost_consumer_stuck = 0;
  CHECK(*lostCheck(evaluate({run}, defaultObjectives(), "kill", {}, {})).measured == 42);
  run.partitions[1].lost = 0;
  CHECK(lostCheck(evaluate({run}, defaultObjectives(), "kill", {}, {})).status ==
        CheckStatus::kPass);
}

}  // namespace analysis_verdict_test
