// Drills on the lab through the local injector, in process: the runner kills broker 1, observes,
// brings it back, restores the preferred leaders and analyses what the probe saw.

#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "server/drill/drill_runner.h"
#include "server/drill/errc.h"
#include "server/drill/live_seams.h"
#include "server/fault/injector_factory.h"
#include "server/kafka/admin.h"
#include "server/observe/client_log.h"
#include "storage/sqlite_drill_store.h"
#include "storage/sqlite_store.h"
#include "tests/support/lab.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"

namespace drill_e2e_test {

using namespace kfaild;
using namespace std::chrono_literals;

namespace {

config::ClusterConfig labCluster(const std::string& topic) {
  config::ClusterConfig c;
  c.name = "lab";
  c.bootstrap = testing::labBootstrap();
  c.probe.interval_us = 20'000;
  c.probe.gap_threshold_us = 100'000;
  config::TopicCreation create;
  create.replica_assignment = {{1, 2, 3}, {2, 3, 1}, {3, 1, 2}};
  create.partitions = 3;
  create.replication_factor = 3;
  create.configs = {{"min.insync.replicas", "2"}};
  c.probe.topics = {config::ProbeTopic{topic, create}};
  const std::string lab = testing::labStateDir();
  for (int id : {1, 2, 3, 100}) {
    config::NodeConfig n;
    n.id = id;
    n.role = id == 100 ? common::NodeRole::kController : common::NodeRole::kBroker;
    config::LocalTarget t;
    t.pid_file = lab + "/node" + std::to_string(id) + "/kafka.pid";
    t.start_command = {std::string(KFAILD_SOURCE_DIR) + "/lab/lab", "start", std::to_string(id)};
    t.log_dir = lab + "/node" + std::to_string(id) + "/logs";
    n.local = t;
    c.inventory.push_back(n);
  }
  return c;
}

struct Daemon {
  testing::TempDir dir;
  common::SystemClock clock;
  config::ClusterConfig cluster;
  std::unique_ptr<storage::SqliteStore> store;
  std::unique_ptr<storage::SqliteDrillStore> drills;
  storage::ClusterId id = 0;
  std::unique_ptr<observe::ClientLogWatcher> client_log;
  std::unique_ptr<kafka::SharedHandle> observer;
  std::unique_ptr<observe::MetadataPoller> poller;
  std::unique_ptr<probe::ProbeRunner> probe;
  std::unique_ptr<drill::PollerView> view;
  std::unique_ptr<drill::RunnerProbeView> probe_view;
  std::unique_ptr<drill::KafkaClusterAdmin> admin;
  std::unique_ptr<drill::DrillRunner> runner;

  explicit Daemon(const std::string& topic) : cluster(labCluster(topic)) {
    auto s = storage::SqliteStore::open((dir / "kfaild.db").string());
    REQUIRE(s);
    store = std::move(*s);
    auto d = storage::SqliteDrillStore::open((dir / "kfaild.db").string());
    REQUIRE(d);
    drills = std::move(*d);
    auto cid = store->ensureCluster(cluster.name, cluster.bootstrap);
    REQUIRE(cid);
    id = *cid;
    client_log = std::make_unique<observe::ClientLogWatcher>(id, std::set<std::string>{topic},
                                                             *store, clock);
    // As ClusterParts wires them: the poller and the drill engine share one observer client.
    observer = observe::makeObserverClient(cluster);
    poller = std::make_unique<observe::MetadataPoller>(cluster, id, *store, clock, observer.get());
    probe = std::make_unique<probe::ProbeRunner>(cluster, id, *store, clock, client_log->sink());
    std::map<std::int32_t, std::unique_ptr<fault::Injector>> injectors;
    for (const auto& n : cluster.inventory) injectors[n.id] = fault::makeInjector(n, clock);
    view = std::make_unique<drill::PollerView>(*poller);
    probe_view = std::make_unique<drill::RunnerProbeView>(*probe);
    admin = std::make_unique<drill::KafkaClusterAdmin>(cluster, *observer);
    REQUIRE(admin->connect());
    runner = std::make_unique<drill::DrillRunner>(cluster, id, *store, *drills, clock,
                                                  drill::RunnerSeams{*view, *probe_view, *admin},
                                                  std::move(injectors));
    REQUIRE(probe->start());
    REQUIRE(poller->start());
    runner->start();
  }
  ~Daemon() {
    runner->stop();
    probe->stop();
    poller->stop();
  }

  storage::DrillRecord waitForDrill(std::int64_t drill_id, std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      auto d = drills->drill(drill_id);
      REQUIRE(d);
      REQUIRE(*d);
      const auto& state = (*d)->state;
      if (state == "done" || state == "failed" || state == "aborted") return **d;
      std::this_thread::sleep_for(500ms);
    }
    FAIL("drill " << drill_id << " did not finish in time");
    return {};
  }

  // Drill `drill_id` to its end; one refused after acceptance because the probe was not steady
  // (testing::refusedForProbe: the node was not touched; seen once, 1.0 s without an ack at the
  // preflight while the other labs started) is asked again as `spec`, up to twice.
  storage::DrillRecord waitAskingAgain(std::int64_t drill_id, const drill::DrillSpec& spec) {
    auto drill = waitForDrill(drill_id, 300s);
    for (int again = 0;
         again < 2 && drill.state == "failed" && testing::refusedForProbe(drill.reason); ++again) {
      WARN("drill " << drill_id << " asked again: " << drill.reason);
      waitSteady();
      auto again_id = runner->submit(spec);
      REQUIRE(again_id);
      drill_id = *again_id;
      drill = waitForDrill(drill_id, 300s);
    }
    return drill;
  }

  // Steady probing: every partition acked its last 20 messages within 200 ms. A broker that has
  // just been restarted (the previous test's drill) lags for a while on a busy machine, and a
  // drill started then would measure the lag, not the failover.
  void waitSteady() {
    const auto deadline = std::chrono::steady_clock::now() + 180s;
    while (std::chrono::steady_clock::now() < deadline) {
      store->flush();
      const auto now_us = clock.wallNow();
      bool ok = probe->status().phase == probe::ProbePhase::kProbing;
      for (int p = 0; ok && p < 3; ++p) {
        storage::SampleQuery q;
        q.cluster = id;
        q.topic = cluster.probe.topics[0].name;
        q.partition = p;
        q.range = {now_us - 3'000'000, now_us};
        auto rows = store->samples(q);
        ok = rows && rows->size() >= 20;
        for (auto it = ok ? rows->end() - 20 : rows->end(); ok && it != rows->end(); ++it) {
          ok = it->ack_us && *it->ack_us - it->send_us < 200'000;
        }
      }
      if (ok) return;
      std::this_thread::sleep_for(500ms);
    }
    FAIL("the probe never reached steady state");
  }
};

std::string uniqueTopic() {
  return "e2e-drill-" + std::to_string(std::random_device{}() % 1'000'000);
}

}  // namespace

TEST_CASE(
    "a kill drill of broker 1 stalls every orders partition for at least its detection "
    "then recovers broker 1 and gives partition 0 back to it",
    "[e2e][drill]") {
  const auto topic = uniqueTopic();
  Daemon d(topic);
  d.waitSteady();

  auto spec = drill::parseDrillSpec(nlohmann::json::parse(
      R"({"fault":"kill","target":{"broker":1},"options":{"baseline_s":3,"observe_min_s":3}})"));
  REQUIRE(spec);
  auto id = d.runner->submit(*spec);
  REQUIRE(id);

  // A second request while the first runs is refused with the guard's reason.
  auto second = d.runner->submit(*spec);
  REQUIRE_FALSE(second);
  CHECK(second.error().code == drill::errc::guard_refused);
  CHECK_THAT(second.error().message, Catch::Contains("is running"));

  const auto drill = d.waitAskingAgain(*id, *spec);
  INFO("drill: " << drill.state << " " << drill.reason << " " << drill.result);
  REQUIRE(drill.state == "done");
  const auto result = nlohmann::json::parse(drill.result);
  const auto& run = result["runs"][0];
  CHECK(run["fault_time_source"] == "local");
  CHECK(run["preferred_leaders_restored"] == true);
  const auto& analysis = run["analysis"];
  CHECK(analysis["departure"] == "fenced");
  REQUIRE(analysis["partitions"].size() == 3);
  std::int64_t detection = 0;
  for (const auto& p : analysis["partitions"]) {
    if (!p["phases"]["detection_us"].is_null())
      detection = p["phases"]["detection_us"].get<std::int64_t>();
  }
  // Default session timeout 9 s, heartbeat 2 s: fenced between 6 and 10.5 s after the kill.
  CHECK(detection > 6'000'000);
  CHECK(detection < 10'500'000);
  std::int64_t p0_stall = 0;
  for (const auto& p : analysis["partitions"]) {
    INFO("partition " << p.dump());
    CHECK(p["role"] == (p["partition"] == 0 ? "leader" : "follower"));
    REQUIRE(!p["ack"]["stall"].is_null());
    const auto stall = p["ack"]["stall"]["duration_us"].get<std::int64_t>();
    CHECK(stall >= detection - 1'000'000);  // minus one heartbeat phase of slack for follower acks
    CHECK(p["lost"] == 0);
    if (p["partition"] == 0) {
      p0_stall = stall;
      CHECK(p["phases"]["new_leader"] != 1);
      CHECK(!p["phases"]["client_update_at_us"].is_null());
    }
  }
  CHECK(p0_stall >= detection);

  // Broker 1 is back in every ISR and leads partition 0 again.
  const auto observed = d.poller->latest();
  REQUIRE(observed.snapshot);
  CHECK(observed.snapshot->hasBroker(1));
  const auto* t = observed.snapshot->topic(topic);
  REQUIRE(t);
  CHECK(t->partitions[0].leader == 1);

  auto journal = d.drills->pendingRecoveries();
  REQUIRE(journal);
  CHECK(journal->empty());
}

TEST_CASE("a drill that would take a single-replica partition offline is refused unless allowed",
          "[e2e][drill]") {
  const auto topic = uniqueTopic();
  Daemon d(topic);
  d.waitSteady();
  // A topic with one replica on broker 1, like the article's `single`.
  kafka::ClientOptions options;
  options.bootstrap = testing::labBootstrap();
  auto admin =
      kafka::createClient(RD_KAFKA_PRODUCER, options, {{"allow.auto.create.topics", "false"}});
  REQUIRE(admin);
  kafka::NewTopic single;
  single.name = topic + "-single";
  single.replica_assignment = {{1}};
  REQUIRE(kafka::createTopic(admin->get(), single, 10000));
  // The shared lab must not keep a partition that only broker 1 holds: later drills would be
  // refused because of it.
  struct DropTopic {
    rd_kafka_t* rk;
    std::string name;
    ~DropTopic() { (void)kafka::deleteTopic(rk, name, 10000); }
  } drop{admin->get(), single.name};
  std::this_thread::sleep_for(2s);

  auto spec =
      drill::parseDrillSpec(nlohmann::json::parse(R"({"fault":"stop","target":{"broker":1}})"));
  REQUIRE(spec);
  auto refused = d.runner->submit(*spec);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == drill::errc::guard_refused);
  CHECK_THAT(refused.error().message,
             Catch::Contains("offline") && Catch::Contains(single.name + "-0"));
  auto none = d.drills->drills({});
  REQUIRE(none);
  CHECK(none->empty());  // nothing stored, nothing touched

  auto unknown =
      drill::parseDrillSpec(nlohmann::json::parse(R"({"fault":"kill","target":{"broker":7}})"));
  REQUIRE(unknown);
  auto bad = d.runner->submit(*unknown);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == drill::errc::invalid_request);
}

TEST_CASE(
    "a kill drill on the lab's only controller is refused for the quorum, and with "
    "allow_quorum_loss it runs "
    "and counts the controller back only once it leads the quorum again",
    "[e2e][drill]") {
  const auto topic = uniqueTopic();
  Daemon d(topic);
  d.waitSteady();

  auto plain =
      drill::parseDrillSpec(nlohmann::json::parse(R"({"fault":"kill","target":{"broker":100}})"));
  REQUIRE(plain);
  auto refused = d.runner->submit(*plain);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == drill::errc::guard_refused);
  CHECK_THAT(
      refused.error().message,
      Catch::StartsWith(
          "losing controller 100 would leave the KRaft quorum without a majority: 0 of its 1 "
          "voter(s) (100)") &&
          Catch::Contains("set options.allow_quorum_loss to run it anyway"));
  auto none = d.drills->drills({});
  REQUIRE(none);
  CHECK(none->empty());

  auto allowed = drill::parseDrillSpec(nlohmann::json::parse(
      R"({"fault":"kill","target":{"controller":true},
          "options":{"allow_quorum_loss":true,"baseline_s":3,"observe_min_s":3}})"));
  REQUIRE(allowed);
  auto id = d.runner->submit(*allowed);
  REQUIRE(id);
  const auto drill = d.waitAskingAgain(*id, *allowed);
  INFO("drill: " << drill.state << " " << drill.reason << " " << drill.result);
  REQUIRE(drill.state == "done");
  const auto run = nlohmann::json::parse(drill.result)["runs"][0];
  CHECK(run["target"] == 100);
  // The active controller, from the KRaft quorum (a describe of the engine's own at preflight,
  // the poller's at the fault), not the inventory's first controller.
  CHECK(run["target_resolution"]["preflight"] == 100);
  CHECK(run["target_resolution"]["at_fault"] == 100);
  CHECK_THAT(run["target_resolution"]["how"].get<std::string>(),
             Catch::StartsWith("the KRaft quorum's leader (DescribeQuorum, epoch "));

  // Its start (the lab's start command returns once the node listens) came before it was counted
  // back, and it leads the quorum now.
  storage::EventQuery q;
  q.cluster = d.id;
  d.store->flush();
  auto events = d.store->events(q);
  REQUIRE(events);
  std::optional<std::int64_t> started_us, returned_us;
  for (const auto& e : *events) {
    if (e.source == "injector" && e.kind == "started" && e.broker == 100) {
      started_us = e.t_us;
      returned_us = nlohmann::json::parse(e.detail).value("returned_us", std::int64_t{0});
    }
  }
  REQUIRE(started_us);
  const auto recovered_us = run["recovered_us"].get<std::int64_t>();
  CHECK(recovered_us > *started_us);
  auto quorum = d.admin->describeQuorum();
  REQUIRE(quorum);
  CHECK(quorum->leader_id == 100);
  CHECK(quorum->isVoter(100));
  auto journal = d.drills->pendingRecoveries();
  REQUIRE(journal);
  CHECK(journal->empty());
  // What it took, for the report.
  WARN("controller 100: start asked " << (*started_us - run["fault_us"].get<std::int64_t>()) / 1000
                                      << " ms after the kill, the start command returned after "
                                      << (*returned_us - *started_us) / 1000 << " ms, counted back "
                                      << (recovered_us - *returned_us) / 1000 << " ms after that");
}

}  // namespace drill_e2e_test
