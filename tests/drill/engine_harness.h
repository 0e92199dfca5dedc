#pragma once

// A drill engine on a FakeCluster, a ManualClock and a SQLite store in a temporary directory: a
// whole drill runs in milliseconds. The drill store is wrapped so a test can act when a drill
// enters a state (abort it, stop kfaild, break the cluster) on the engine's own thread.

#include <arpa/inet.h>

#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "server/drill/drill_runner.h"
#include "storage/sqlite_drill_store.h"
#include "storage/sqlite_store.h"
#include "tests/drill/fake_cluster.h"
#include "tests/support/manual_clock.h"
#include "tests/support/temp_dir.h"

namespace kfaild::testing {

class HookedDrillStore final : public storage::DrillStore {
 public:
  explicit HookedDrillStore(storage::DrillStore& inner) : inner_(inner) {}

  // Called after every update of a drill whose state changed, on the updating thread.
  std::function<void(const storage::DrillRecord&)> on_state;

  std::vector<std::string> states(std::int64_t id) const {
    std::lock_guard lock(mutex_);
    auto it = states_.find(id);
    return it == states_.end() ? std::vector<std::string>{} : it->second;
  }

  Result<std::int64_t> createDrill(const storage::DrillRecord& d) override {
    auto id = inner_.createDrill(d);
    if (id) {
      std::lock_guard lock(mutex_);
      states_[*id].push_back(d.state);
    }
    return id;
  }
  Status updateDrill(const storage::DrillRecord& d) override {
    auto s = inner_.updateDrill(d);
    bool changed = false;
    {
      std::lock_guard lock(mutex_);
      auto& seen = states_[d.id];
      if (seen.empty() || seen.back() != d.state) {
        seen.push_back(d.state);
        changed = true;
      }
    }
    if (changed && on_state) on_state(d);
    return s;
  }
  Result<std::optional<storage::DrillRecord>> drill(std::int64_t id) const override {
    return inner_.drill(id);
  }
  Result<std::vector<storage::DrillRecord>> drills(const storage::DrillQuery& q) const override {
    return inner_.drills(q);
  }
  Result<std::vector<storage::DrillSpan>> drillSpans(std::optional<storage::ClusterId> c,
                                                     storage::TimeRange r) const override {
    return inner_.drillSpans(c, r);
  }
  Result<std::vector<storage::DrillCount>> drillCounts() const override {
    return inner_.drillCounts();
  }
  Result<std::vector<storage::DrillRecord>> lastDrills(const std::string& state) const override {
    return inner_.lastDrills(state);
  }
  Result<std::int64_t> addRecovery(const storage::RecoveryEntry& e) override {
    return inner_.addRecovery(e);
  }
  Status updateRecovery(const storage::RecoveryEntry& e) override {
    return inner_.updateRecovery(e);
  }
  Result<std::vector<storage::RecoveryEntry>> pendingRecoveries() const override {
    return inner_.pendingRecoveries();
  }
  Result<std::int64_t> createSchedule(const storage::ScheduleRecord& s) override {
    return inner_.createSchedule(s);
  }
  Status updateSchedule(const storage::ScheduleRecord& s) override {
    return inner_.updateSchedule(s);
  }
  Status recordScheduleRun(const storage::ScheduleRecord& s) override {
    return inner_.recordScheduleRun(s);
  }
  Result<bool> deleteSchedule(std::int64_t id) override { return inner_.deleteSchedule(id); }
  Result<std::optional<storage::ScheduleRecord>> schedule(std::int64_t id) const override {
    return inner_.schedule(id);
  }
  Result<std::vector<storage::ScheduleRecord>> schedules(
      std::optional<storage::ClusterId> c) const override {
    return inner_.schedules(c);
  }

 private:
  storage::DrillStore& inner_;
  mutable std::mutex mutex_;
  std::map<std::int64_t, std::vector<std::string>> states_;
};

struct EngineHarness {
  std::vector<std::int32_t> nodes_;
  TempDir dir;
  ManualClock clock;
  FakeCluster cluster{clock};
  FakeView view{cluster};
  FakeProbe probe{cluster};
  FakeAdmin admin{cluster};
  config::ClusterConfig config;
  std::unique_ptr<storage::SqliteStore> store;
  std::unique_ptr<storage::SqliteDrillStore> sqlite;
  std::unique_ptr<HookedDrillStore> drills;
  storage::ClusterId id = 0;
  std::map<std::int32_t, FakeInjector*> injectors;  // owned by the runner
  std::unique_ptr<drill::DrillRunner> runner;
  // Set before makeRunner() for an engine that opens planned-maintenance windows.
  maintenance::MaintenanceWindows* maintenance = nullptr;
  // The names the engine resolves (its host resolver): each node's advertised name
  // (FakeCluster::hostOf) to 10.8.0.<id>, the interface the cluster lists it on; the inventory's
  // addresses are 10.9.0.<id>. A name not here does not resolve. Changed before the engine starts.
  std::map<std::string, std::vector<std::string>> dns;

  // `extra_controllers`: controller nodes besides 100 (in the inventory and the simulated cluster;
  // the quorum's voters are still the test's to set).
  explicit EngineHarness(std::vector<std::int32_t> extra_controllers = {}) : nodes_{1, 2, 3, 100} {
    for (auto c : extra_controllers) {
      nodes_.push_back(c);
      cluster.addController(c);
    }
    config.name = "fake";
    config.bootstrap = "127.0.0.1:1";
    config.probe.topics = {config::ProbeTopic{"probe", std::nullopt}};
    for (std::int32_t node : nodes_) {
      config::NodeConfig n;
      n.id = node;
      n.role = node >= 100 ? common::NodeRole::kController : common::NodeRole::kBroker;
      n.local = config::LocalTarget{"/nonexistent/kafka.pid", {"/bin/false"}, ""};
      n.address = "10.9.0." + std::to_string(node);
      config.inventory.push_back(n);
      dns[cluster.hostOf(node)] = {"10.8.0." + std::to_string(node)};
    }
    auto s = storage::SqliteStore::open((dir / "kfaild.db").string());
    REQUIRE(s);
    store = std::move(*s);
    auto d = storage::SqliteDrillStore::open((dir / "kfaild.db").string());
    REQUIRE(d);
    sqlite = std::move(*d);
    drills = std::make_unique<HookedDrillStore>(*sqlite);
    auto cid = store->ensureCluster(config.name, config.bootstrap);
    REQUIRE(cid);
    id = *cid;
    makeRunner();
  }
  ~EngineHarness() {
    if (runner) runner->stop();
  }

  // A new engine (as a restarted kfaild makes), not started.
  void makeRunner() {
    if (runner) runner->stop();
    runner.reset();
    injectors.clear();
    std::map<std::int32_t, std::unique_ptr<fault::Injector>> owned;
    for (std::int32_t node : nodes_) {
      auto injector = std::make_unique<FakeInjector>(cluster, node, clock);
      injectors[node] = injector.get();
      owned[node] = std::move(injector);
    }
    drill::RunnerSeams seams{
        view,    probe,       admin,
        nullptr, maintenance, [this](const std::string& host) { return resolve(host); }};
    runner = std::make_unique<drill::DrillRunner>(config, id, *store, *drills, clock, seams,
                                                  std::move(owned));
  }

  // `dns`'s answer; an IP literal is itself.
  std::vector<std::string> resolve(const std::string& host) const {
    if (const auto found = dns.find(host); found != dns.end()) return found->second;
    in6_addr ip{};
    if (inet_pton(AF_INET, host.c_str(), &ip) == 1 || inet_pton(AF_INET6, host.c_str(), &ip) == 1)
      return {host};
    return {};
  }

  static drill::DrillSpec spec(const std::string& json) {
    auto parsed = drill::parseDrillSpec(nlohmann::json::parse(json));
    REQUIRE(parsed);
    return *parsed;
  }

  // The only run of a drill's result, as stored.
  static nlohmann::json onlyRun(const storage::DrillRecord& d) {
    auto result = nlohmann::json::parse(d.result.empty() ? "{}" : d.result);
    REQUIRE(result.contains("runs"));
    REQUIRE(result["runs"].size() == 1);
    return result["runs"][0];
  }

  storage::DrillRecord record(std::int64_t drill_id) const {
    auto d = drills->drill(drill_id);
    REQUIRE(d);
    REQUIRE(*d);
    return **d;
  }

  // Moves the clock from deadline to deadline until the drill has ended.
  storage::DrillRecord runToEnd(std::int64_t drill_id) {
    for (int i = 0; i < 200'000; ++i) {
      auto d = record(drill_id);
      if (drill::isTerminal(d.state)) {
        // The engine writes the final state before it lets go of the drill: until it does, the
        // drill is still the running one (a submission is refused with "drill N is running")
        // and the state hook may not have seen the last update.
        waitUntilReleased(drill_id);
        return record(drill_id);
      }
      clock.advanceToNextDeadline(std::chrono::milliseconds(50));
    }
    FAIL("drill " << drill_id << " did not end");
    return {};
  }

  // Waits, in real time, until the engine's thread no longer holds `drill_id` as its running
  // drill (it has nothing left to do with it that needs the manual clock).
  void waitUntilReleased(std::int64_t drill_id) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (runner->active() == drill_id) {
      if (std::chrono::steady_clock::now() > give_up)
        FAIL("the engine still holds drill " << drill_id);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  std::vector<storage::RecoveryEntry> openRecoveries() const {
    auto pending = drills->pendingRecoveries();
    REQUIRE(pending);
    return *pending;
  }

  std::vector<storage::Event> events(const std::string& kind) {
    store->flush();
    storage::EventQuery q;
    q.cluster = id;
    auto all = store->events(q);
    REQUIRE(all);
    std::vector<storage::Event> out;
    for (auto& e : *all) {
      if (e.kind == kind) out.push_back(std::move(e));
    }
    return out;
  }
};

}  // namespace kfaild::testing
