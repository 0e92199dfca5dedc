#include "server/drill/guards.h"

#include <catch2/catch.hpp>
#include <set>

#include "tests/support/lab.h"

namespace guards_test {

using namespace kfaild;
using namespace kfaild::drill;

namespace {

kafka::ClusterSnapshot article() {
  kafka::ClusterSnapshot s;
  s.brokers = {{1, "h", 1}, {2, "h", 2}, {3, "h", 3}};
  kafka::TopicInfo orders{"orders",
                          "",
                          {{0, 1, {1, 2, 3}, {1, 2, 3}, ""},
                           {1, 2, {2, 3, 1}, {2, 3, 1}, ""},
                           {2, 3, {3, 1, 2}, {3, 1, 2}, ""}}};
  s.topics = {orders};
  return s;
}

GuardInput input(const kafka::ClusterSnapshot& s) {
  GuardInput in;
  in.target = 1;
  in.inventory = {1, 2, 3, 100};
  in.inventory_brokers = {1, 2, 3};
  in.cluster = &s;
  in.probe_topics = {"orders"};
  in.min_insync = {{"orders", 2}};
  for (std::int32_t p = 0; p < 3; ++p)
    in.probe.push_back({"orders", p, 20'000, false, 15'000, 18'000});
  in.gap_threshold_us = 100'000;
  return in;
}

}  // namespace

TEST_CASE("a healthy article cluster lets a drill of broker 1 go ahead", "[unit][drill]") {
  const auto s = article();
  CHECK_FALSE(checkGuards(input(s)));
}

TEST_CASE("each guard refuses with its own reason", "[unit][drill][reliability]") {
  auto s = article();
  auto in = input(s);
  in.active_drill = 12;
  CHECK(*checkGuards(in) == "drill 12 is running on this cluster");

  in = input(s);
  in.target = 7;
  CHECK(*checkGuards(in) == "node 7 is not in the cluster's inventory");

  auto fenced = article();
  fenced.brokers.pop_back();
  in = input(fenced);
  CHECK(*checkGuards(in) == "broker 3 is not registered (fenced or down)");

  auto shrunk = article();
  shrunk.topics[0].partitions[2].isr = {3, 2};
  in = input(shrunk);
  CHECK(*checkGuards(in) == "probe partition orders-2 is under-replicated (ISR 2 of 3)");

  auto single = article();
  single.topics.push_back({"single", "", {{0, 1, {1}, {1}, ""}}});
  in = input(single);
  CHECK_THAT(*checkGuards(in), Catch::Contains("would take 1 partition(s) offline (single-0)"));
  in.allow_unavailable = true;
  CHECK_FALSE(checkGuards(in));

  auto two = article();
  two.topics.push_back({"pairs", "", {{0, 1, {1, 2}, {1, 2}, ""}}});
  in = input(two);
  in.min_insync["pairs"] = 2;
  CHECK_THAT(*checkGuards(in), Catch::Contains("below min.insync.replicas (pairs-0)"));

  in = input(s);
  in.cluster_problem = "the cluster's metadata is unavailable";
  CHECK(*checkGuards(in) == "the cluster's metadata is unavailable");
}

TEST_CASE("a probe that is not measuring normally refuses the drill", "[unit][drill]") {
  const auto s = article();
  auto in = input(s);
  in.probe_problem = "setting_up (topic orders missing)";
  CHECK(*checkGuards(in) == "the probe is not probing: setting_up (topic orders missing)");

  in = input(s);
  in.probe[1].last_ack_age_us.reset();
  CHECK(*checkGuards(in) == "probe partition orders-1 has had no ack yet");

  in = input(s);
  in.probe[2].last_ack_age_us = 4'500'000;
  CHECK(*checkGuards(in) ==
        "probe partition orders-2 has had no ack for 4.5 s: it is stalled already");

  // Acks come back but the consumer reads nothing: it is behind.
  in = input(s);
  in.probe[2].last_receive_age_us = 3'000'000;
  CHECK(*checkGuards(in) ==
        "probe partition orders-2 has read nothing back for 3.0 s: its consumer is behind");
  in.probe[2].last_receive_age_us.reset();
  CHECK(*checkGuards(in) == "probe partition orders-2 has read nothing back yet");

  // The oldest message without an ack was sent 56 s ago: the acks seen now are of old messages.
  in = input(s);
  in.probe[0].backlog_us = 56'000'000;
  const auto reason = checkGuards(in);
  REQUIRE(reason);
  CHECK(reason->find("the probe of orders-0 is 56.0 s behind") == 0);

  // Holding back sends at the outstanding bound: behind, whatever the age.
  in = input(s);
  in.probe[1].holding = true;
  const auto holding = checkGuards(in);
  REQUIRE(holding);
  CHECK(holding->find("the probe of orders-1 is 0.0 s behind (oldest message without an ack, sends "
                      "held back)") == 0);

  // Up to the limit is fine.
  in = input(s);
  in.probe[0].backlog_us = kMaxProbeBacklogUs;
  in.probe[0].last_ack_age_us = 900'000;
  CHECK_FALSE(checkGuards(in));
}

// The e2e tests ask again for a drill refused because its probe was not steady (and only for
// that): their predicate must know every probe reason above, as the engine words the refusal.
TEST_CASE("the e2e tests tell a refusal for the probe from every other refusal", "[unit][drill]") {
  const auto s = article();
  std::vector<GuardInput> probe_reasons(6, input(s));
  probe_reasons[0].probe_problem = "setting_up (topic orders missing)";
  probe_reasons[1].probe[1].last_ack_age_us.reset();
  probe_reasons[2].probe[2].last_ack_age_us = 4'500'000;
  probe_reasons[3].probe[2].last_receive_age_us = 3'000'000;
  probe_reasons[4].probe[0].backlog_us = 56'000'000;
  probe_reasons[5].probe[1].holding = true;
  for (const auto& in : probe_reasons) {
    const auto reason = checkGuards(in);
    REQUIRE(reason);
    INFO(*reason);
    CHECK(testing::refusedForProbe("refused: " + *reason));
    CHECK(testing::refusedForProbe("refused at the fault: " + *reason +
                                   "; the node was not touched"));
    CHECK(testing::refusedForProbe("refused after the preflight election: " + *reason));
    CHECK_FALSE(testing::refusedForProbe(*reason));  // not a drill's refusal
  }
  auto below = input(s);
  below.active_drill = 7;
  CHECK_FALSE(testing::refusedForProbe("refused: " + *checkGuards(below)));
  CHECK_FALSE(testing::refusedForProbe("refused: broker 1 is not registered (fenced or down)"));
  CHECK_FALSE(testing::refusedForProbe(
      "node 1 not back within 180 s: the probe of orders-0 is 2.0 s behind"));
}

namespace {

// A quorum of `voters` led by the first, described at the leader's 1'000'000 ms; `behind` voters
// last fetched 5 s before that.
kafka::QuorumInfo quorumOf(const std::vector<std::int32_t>& voters,
                           const std::set<std::int32_t>& behind = {}) {
  kafka::QuorumInfo q;
  q.leader_id = voters.front();
  q.leader_epoch = 7;
  q.high_watermark = 5000;
  for (auto id : voters) {
    const bool late = behind.count(id) > 0;
    const std::int64_t at = late ? 995'000 : 1'000'000;
    q.voters.push_back({id, late ? 4200 : 5000, at, at});
  }
  return q;
}

GuardInput controllerInput(const kafka::ClusterSnapshot& s, const kafka::QuorumInfo* quorum) {
  auto in = input(s);
  in.target = 100;
  in.inventory_controllers = {100};
  in.quorum = quorum;
  return in;
}

}  // namespace

TEST_CASE("a drill on a controller goes ahead while the other voters keep a majority",
          "[unit][drill]") {
  const auto s = article();
  const auto three = quorumOf({100, 101, 102});
  CHECK_FALSE(checkGuards(controllerInput(s, &three)));
  // The leader's followers are the ones that count: losing a follower is as fine.
  const auto led_by_101 = quorumOf({101, 100, 102});
  CHECK_FALSE(checkGuards(controllerInput(s, &led_by_101)));
  const auto five = quorumOf({100, 101, 102, 103, 104}, {103});
  CHECK_FALSE(checkGuards(controllerInput(s, &five)));  // 101, 102, 104: 3 of 5 without it
}

TEST_CASE("a drill that would leave the KRaft quorum without a majority is refused unless allowed",
          "[unit][drill]") {
  const auto s = article();
  // The lab: one dedicated controller. Losing it loses the quorum.
  const auto lab = quorumOf({100});
  auto in = controllerInput(s, &lab);
  auto reason = checkGuards(in);
  REQUIRE(reason);
  CHECK(*reason ==
        "losing controller 100 would leave the KRaft quorum without a majority: 0 of its 1 "
        "voter(s) (100) up and "
        "caught up without it (none), 1 needed; nothing would fence brokers or elect leaders until "
        "it is back; "
        "set options.allow_quorum_loss to run it anyway");
  in.allow_quorum_loss = true;
  CHECK_FALSE(checkGuards(in));

  // Three voters, one of them 5 s behind the leader: losing the leader leaves one of three.
  const auto behind = quorumOf({100, 101, 102}, {101});
  in = controllerInput(s, &behind);
  reason = checkGuards(in);
  REQUIRE(reason);
  CHECK_THAT(
      *reason,
      Catch::Contains(
          "1 of its 3 voter(s) (100, 101, 102) up and caught up without it (102), 2 needed"));
  in.allow_quorum_loss = true;
  CHECK_FALSE(checkGuards(in));

  // No leader: nothing to keep.
  auto leaderless = quorumOf({100, 101, 102});
  leaderless.leader_id = -1;
  in = controllerInput(s, &leaderless);
  CHECK_THAT(*checkGuards(in), Catch::StartsWith("the KRaft quorum has no leader"));
}

TEST_CASE(
    "a controller drill is refused when the quorum cannot be described, a broker drill is not",
    "[unit][drill]") {
  const auto s = article();
  auto in = controllerInput(s, nullptr);
  in.quorum_problem = "DescribeQuorum timed out";
  CHECK(
      *checkGuards(in) ==
      "the KRaft quorum cannot be described (DescribeQuorum timed out), so kfaild cannot tell "
      "whether losing "
      "controller 100 leaves a majority of voters; set options.allow_quorum_loss to run it anyway");
  in.allow_quorum_loss = true;
  CHECK_FALSE(checkGuards(in));

  in = input(s);
  in.inventory_controllers = {100};
  in.quorum_problem = "DescribeQuorum timed out";
  CHECK_FALSE(checkGuards(in));  // broker 1 is not a controller
  const auto lab = quorumOf({100});
  in.quorum = &lab;
  CHECK_FALSE(checkGuards(in));  // nor a voter
}

TEST_CASE("a voter is caught up by the leader's clock, or by its log end without timestamps",
          "[unit][drill]") {
  auto q = quorumOf({100, 101, 102}, {102});
  CHECK(voterCaughtUp(q, q.voters[0]));  // the leader
  CHECK(voterCaughtUp(q, q.voters[1]));
  CHECK_FALSE(voterCaughtUp(q, q.voters[2]));  // last fetched 5 s before the leader's now
  q.voters[2].last_fetch_timestamp_ms = 1'000'000 - kVoterMaxAgeMs;
  q.voters[2].last_caught_up_timestamp_ms = 1'000'000 - kVoterMaxAgeMs;
  CHECK(voterCaughtUp(q, q.voters[2]));
  q.voters[2].last_caught_up_timestamp_ms = 1'000'000 - kVoterMaxAgeMs - 1;  // fetching, but behind
  CHECK_FALSE(voterCaughtUp(q, q.voters[2]));

  // DescribeQuorum v0: no timestamps; the log end against the high watermark.
  for (auto& v : q.voters) v.last_fetch_timestamp_ms = v.last_caught_up_timestamp_ms = -1;
  CHECK(voterCaughtUp(q, q.voters[1]));
  CHECK_FALSE(voterCaughtUp(q, q.voters[2]));  // 4200 < 5000
  const auto impact = quorumImpactOfLosing(100, q);
  CHECK(impact.majority == 2);
  CHECK(impact.caught_up_without == std::vector<std::int32_t>{101});
  CHECK_FALSE(impact.keepsMajority());
}

TEST_CASE("a compound drill's second fault is guarded on what the two faults do together",
          "[unit][drill]") {
  // Broker 1 killed first: it is out of every ISR (its departure not yet in the metadata).
  const auto whole = article();
  const auto s = withoutNode(whole, 1);
  CHECK(s.topics[0].partitions[0].leader == -1);
  CHECK(s.topics[0].partitions[0].isr == std::vector<std::int32_t>{2, 3});
  CHECK(s.topics[0].partitions[1].leader == 2);
  CHECK(s.topics[0].partitions[1].isr == std::vector<std::int32_t>{2, 3});
  auto in = input(s);
  // The cluster is under-replicated and the probe lags, which would refuse a first fault; they do
  // not refuse the second. Broker 2 with 1 down leaves every partition below min.insync.replicas 2.
  for (auto& p : in.probe) p.backlog_us = 3'000'000;
  in.target = 2;
  CHECK(checkGuards(in));
  CHECK(checkSecondFault(in, 1, true) ==
        "losing broker 2 with node 1 down would leave 3 partition(s) below min.insync.replicas "
        "(orders-0, orders-1, "
        "orders-2); set options.allow_unavailable to run it anyway");
  in.allow_unavailable = true;
  CHECK_FALSE(checkSecondFault(in, 1, true));
  in.target = 1;
  CHECK(checkSecondFault(in, 1, true) == "its target names node 1, the first fault's");
  in.target = 7;
  CHECK(checkSecondFault(in, 1, true) == "node 7 is not in the cluster's inventory");

  // The active controller killed first, then broker 1, while the quorum has no leader: a broker
  // is not refused for the quorum (the drill's very question); a voter is, and with both
  // controllers down the third alone is no majority.
  auto quorum = quorumOf({100, 101, 102});
  quorum.leader_id = -1;
  auto c = input(whole);
  c.inventory = {1, 2, 3, 100, 101, 102};
  c.inventory_controllers = {100, 101, 102};
  c.quorum = &quorum;
  CHECK_FALSE(checkSecondFault(c, 100, true));
  c.target = 101;
  CHECK(checkSecondFault(c, 100, true) ==
        "the KRaft quorum has no leader (an election is under way); set options.allow_quorum_loss "
        "to run it anyway");
  quorum = quorumOf({101, 100, 102});
  CHECK_THAT(*checkSecondFault(c, 100, true),
             Catch::StartsWith(
                 "losing controller 101 with node 100 down would leave the KRaft quorum without a "
                 "majority: 1 of its 3 voter(s)"));
  c.allow_quorum_loss = true;
  CHECK_FALSE(checkSecondFault(c, 100, true));
}

}  // namespace guards_test
