#pragma once

// A simulated KRaft cluster for the drill engine's unit tests: three brokers (1, 2, 3) and a
// controller (100), one probe topic "probe" with three partitions led by 1, 2, 3, replicated on
// all three brokers. Time is a ManualClock's. A broker that goes down (kill, stop, pause) loses
// its leaderships and leaves the ISRs `failover_us` later; its partitions' probe acks stop until
// then. A broker started again rejoins every ISR `rejoin_us` later. The KRaft quorum has the
// voters `quorum_voters` (100 by default; ids outside the nodes are voters a test sets up or
// behind through `voters_behind`): a node down leaves it at once with its log end offset and
// timestamps frozen, a node started again catches up `rejoin_us` later (unless
// `controller_catches_up` is off). The quorum's leader stays while it is in the quorum, else the
// first voter in it while a majority is; the high watermark grows by one every 500 ms, as KRaft's
// no-op records make it. Every node is advertised as "node<id>.fake" (Metadata's broker host,
// port 9000 + id; DescribeQuorum v2's CONTROLLER endpoint, port 9093, for every voter); the
// engine harness resolves the names. The fakes of the engine's seams (view, probe, admin,
// injectors) all read and change this one model.

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "server/drill/seams.h"
#include "server/fault/errc.h"
#include "server/fault/gray_runner.h"
#include "tests/support/manual_clock.h"

namespace kfaild::testing {

class FakeCluster {
 public:
  static constexpr std::int64_t kSecond = 1'000'000;

  common::WallMicros wallNow() const { return clock_.wallNow(); }
  explicit FakeCluster(ManualClock& clock) : clock_(clock) {
    for (std::int32_t id : {1, 2, 3, 100}) nodes_[id] = Node{};
    for (std::int32_t p = 0; p < 3; ++p) {
      std::vector<std::int32_t> replicas;
      for (std::int32_t k = 0; k < 3; ++k) replicas.push_back(1 + (p + k) % 3);
      parts_.push_back(
          {p, replicas, replicas.front(), {replicas.begin(), replicas.end()}, clock.now()});
    }
  }

  std::int64_t failover_us = 6 * kSecond;
  std::int64_t rejoin_us = 1 * kSecond;

  // Faults and recovery, as the injectors do them.
  void down(std::int32_t node, bool paused) {
    std::lock_guard lock(mutex_);
    update();
    auto& n = nodes_.at(node);
    n.running = paused;  // a paused process still runs
    n.paused = paused;
    n.down_since = clock_.monoNow();
    // The control plane goes dark while the quorum elects a new leader (control_failover_us).
    if (node == quorum_leader_) control_dark_since_ = clock_.now();
    if (n.in_quorum) {
      n.in_quorum = false;
      n.left_offset = highWatermarkLocked();
      n.left_ms = clock_.wallNow() / 1000;
    }
    updateQuorumLeader();
  }
  void up(std::int32_t node) {
    std::lock_guard lock(mutex_);
    update();
    auto& n = nodes_.at(node);
    n.running = true;
    n.paused = false;
    n.down_since.reset();
    n.up_since = clock_.monoNow();
  }
  bool running(std::int32_t node) const {
    std::lock_guard lock(mutex_);
    return nodes_.at(node).running;
  }
  bool paused(std::int32_t node) const {
    std::lock_guard lock(mutex_);
    return nodes_.at(node).paused;
  }
  bool available(std::int32_t node) const {
    std::lock_guard lock(mutex_);
    return nodes_.at(node).running && !nodes_.at(node).paused;
  }

  observe::ObservedCluster observed() const {
    std::lock_guard lock(mutex_);
    update();
    observe::ObservedCluster out;
    out.reachable = true;
    out.snapshot = snapshotLocked();
    out.snapshot_at = clock_.wallNow();
    if (quorum_answers) {
      out.quorum = quorumLocked();
      out.quorum_at = clock_.wallNow();
    } else {
      out.quorum_error = "DescribeQuorum timed out";
    }
    return out;
  }

  probe::ProbeStatus probeStatus() const {
    std::lock_guard lock(mutex_);
    update();
    probe::ProbeStatus status;
    if (control_probe) {
      probe::ControlStatus control;
      control.interval_us = 500'000;
      // Dark for control_failover_us after the quorum's leader went, and for as long as the
      // quorum has no leader.
      const bool dark = control_dark_since_ &&
                        (quorum_leader_ < 0 ||
                         clock_.monoNow() < control_dark_since_->mono + control_failover_us);
      control.last_ok = dark ? *control_dark_since_ : clock_.now();
      status.control = control;
    }
    if (coordinator_probe) {
      probe::CoordinatorStatus c;
      c.group = "kfaild-probe-fake";
      probe::OperationStatus commits;
      commits.interval_us = 100'000;
      commits.last_ok = commit_ok_;
      c.commits = commits;
      if (watch_seen_) c.group_coordinator = *watch_seen_;
      status.coordinators = c;
    }
    status.phase = probe::ProbePhase::kProbing;
    status.interval_us = 10'000;
    for (const auto& p : parts_) {
      probe::PartitionStatus s;
      s.topic = "probe";
      s.partition = p.partition;
      s.last_ack = p.last_ok;
      s.last_receive = p.last_ok;
      if (probe_backlog_us > 0) {
        s.outstanding = 10;
        s.oldest_outstanding_sent = common::Instant{clock_.wallNow() - probe_backlog_us,
                                                    clock_.monoNow() - probe_backlog_us};
      }
      status.partitions.push_back(s);
    }
    return status;
  }

  Result<kafka::QuorumInfo> describeQuorum() const {
    std::lock_guard lock(mutex_);
    update();
    if (!quorum_answers)
      return Error{make_error_code(std::errc::timed_out), "DescribeQuorum timed out"};
    return quorumLocked();
  }

  Result<kafka::ClusterSnapshot> describe() const {
    std::lock_guard lock(mutex_);
    update();
    return snapshotLocked();
  }

  void electPreferred() {
    std::lock_guard lock(mutex_);
    update();
    for (auto& p : parts_) {
      const auto preferred = p.replicas.front();
      if (p.isr.count(preferred) && availableLocked(preferred)) p.leader = preferred;
    }
  }

  // Moves leadership away from the preferred replicas (as after a cluster restart).
  void moveLeadershipTo(std::int32_t node) {
    std::lock_guard lock(mutex_);
    for (auto& p : parts_) p.leader = node;
  }
  // Moves one partition's leadership (an election the test stands for).
  void moveLeader(std::int32_t partition, std::int32_t node) {
    std::lock_guard lock(mutex_);
    parts_.at(static_cast<std::size_t>(partition)).leader = node;
  }
  // A further controller node (running, in the quorum when it is a voter); before the engine
  // starts.
  void addController(std::int32_t id) {
    std::lock_guard lock(mutex_);
    nodes_[id] = Node{};
  }
  // Hands the quorum's leadership to `id` (a voter in the quorum), as a KRaft election does.
  void setQuorumLeader(std::int32_t id) {
    std::lock_guard lock(mutex_);
    if (quorum_leader_ != id) ++quorum_epoch_;
    quorum_leader_ = id;
  }

  std::int32_t leaderOf(std::int32_t partition) const {
    std::lock_guard lock(mutex_);
    update();
    return parts_.at(static_cast<std::size_t>(partition)).leader;
  }

  // Knobs a test turns.
  bool controller_answers = true;
  // FindCoordinator's answer for every group and transactional id (a broker; -1: an error).
  mutable std::atomic<int> coordinator{2};
  // The coordinator probe runs (ProbeStatus::coordinators: commits, the group's coordinator as
  // the watch saw it every watch_interval_us); the coordinator then moves off a broker down.
  bool coordinator_probe = false;
  std::int64_t watch_interval_us = 500'000;
  // The control-plane probe runs (ProbeStatus::control); it gets no answer for this long after
  // the quorum's leader goes down.
  bool control_probe = false;
  std::int64_t control_failover_us = 3 * kSecond;
  std::atomic<int> min_insync{2};     // every topic's min.insync.replicas
  std::int64_t probe_backlog_us = 0;  // the probe's oldest unacked message is this old
  std::vector<std::int32_t> quorum_voters = {100};  // set before the engine starts
  std::atomic<bool> controller_catches_up{true};    // a voter started again rejoins the quorum
  std::atomic<bool> quorum_answers{true};
  // Whether DescribeQuorum lists the voters' endpoints (v2) or not (as v1 answers); set before
  // the engine starts.
  bool quorum_endpoints = true;
  // The host node `id` is advertised by.
  static std::string hostOf(std::int32_t id) { return "node" + std::to_string(id) + ".fake"; }
  // Voters outside the nodes that are down or behind (any time).
  void setVotersBehind(std::set<std::int32_t> ids) {
    std::lock_guard lock(mutex_);
    voters_behind_ = std::move(ids);
  }

 private:
  struct Node {
    bool running = true;
    bool paused = false;
    std::optional<common::MonoMicros> down_since;
    std::optional<common::MonoMicros> up_since;
    bool in_quorum = true;  // fetching from the quorum's leader, caught up (voters only matter)
    std::int64_t left_offset = 0;  // its log end offset and the leader's clock (ms) when it left
    std::int64_t left_ms = 0;
  };
  struct Part {
    std::int32_t partition;
    std::vector<std::int32_t> replicas;
    std::int32_t leader;
    std::set<std::int32_t> isr;
    common::Instant last_ok;  // the probe's last ack and receipt
  };

  bool availableLocked(std::int32_t node) const {
    return nodes_.at(node).running && !nodes_.at(node).paused;
  }

  // Applies what time has done since the last look.
  void update() const {
    const auto now = clock_.monoNow();
    for (auto& [id, n] : nodes_) {
      if (n.down_since && now - *n.down_since >= failover_us) {
        for (auto& p : parts_) {
          if (!p.isr.count(id) || p.isr.size() == 1) continue;  // the last ISR member stays
          p.isr.erase(id);
          if (p.leader == id) p.leader = *p.isr.begin();
        }
      }
      if (n.up_since && now - *n.up_since >= rejoin_us) {
        for (auto& p : parts_) {
          if (std::find(p.replicas.begin(), p.replicas.end(), id) != p.replicas.end())
            p.isr.insert(id);
        }
        n.up_since.reset();
      }
      // Back and caught up with the quorum once it has rejoined (and is allowed to).
      if (!n.in_quorum && n.running && !n.paused && !n.up_since && controller_catches_up)
        n.in_quorum = true;
    }
    updateQuorumLeader();
    for (auto& p : parts_) {
      if (availableLocked(p.leader)) p.last_ok = clock_.now();
    }
    if (coordinator_probe) updateCoordinator(now);
  }

  // The group's coordinator moves off a broker down for failover_us to the first one available;
  // commits succeed while the coordinator is available; the watch answers at each multiple of
  // watch_interval_us of the monotonic clock, naming the coordinator of that moment.
  void updateCoordinator(common::MonoMicros now) const {
    const auto node = coordinator.load();
    if (node > 0) {
      const auto& n = nodes_.at(node);
      if (n.down_since && now - *n.down_since >= failover_us) {
        for (std::int32_t id : {1, 2, 3}) {
          if (id != node && availableLocked(id)) {
            coordinator = id;
            break;
          }
        }
      }
      if (availableLocked(coordinator.load())) commit_ok_ = clock_.now();
    }
    const auto tick = now - now % watch_interval_us;
    if (tick > watch_tick_) {
      watch_tick_ = tick;
      const auto at = clock_.wallNow() - (now - tick);
      if (!watch_seen_ || watch_seen_->node != coordinator.load()) {
        watch_seen_ = probe::CoordinatorSeen{coordinator.load(), "__consumer_offsets-7", at, at};
      }
      watch_seen_->last_us = at;
    }
  }

  std::int64_t highWatermarkLocked() const { return clock_.monoNow() / 500'000; }

  bool voterInQuorum(std::int32_t id) const {
    const auto n = nodes_.find(id);
    if (n == nodes_.end()) return !voters_behind_.count(id);
    return n->second.in_quorum && availableLocked(id);
  }

  void updateQuorumLeader() const {
    if (quorum_leader_ >= 0 && voterInQuorum(quorum_leader_)) return;
    std::vector<std::int32_t> in;
    for (auto id : quorum_voters) {
      if (voterInQuorum(id)) in.push_back(id);
    }
    const auto before = quorum_leader_;
    quorum_leader_ = in.size() >= quorum_voters.size() / 2 + 1 ? in.front() : -1;
    if (quorum_leader_ != before && quorum_leader_ >= 0) ++quorum_epoch_;
  }

  kafka::QuorumInfo quorumLocked() const {
    kafka::QuorumInfo q;
    const auto now_ms = clock_.wallNow() / 1000;
    q.leader_id = quorum_leader_;
    q.leader_epoch = quorum_epoch_;
    q.high_watermark = highWatermarkLocked();
    q.api_version = quorum_endpoints ? 2 : 1;
    for (auto id : quorum_voters) {
      if (quorum_endpoints) q.endpoints[id] = {{"CONTROLLER", hostOf(id), 9093}};
      kafka::QuorumReplica r;
      r.replica_id = id;
      if (voterInQuorum(id)) {
        r.log_end_offset = q.high_watermark;
        r.last_fetch_timestamp_ms = r.last_caught_up_timestamp_ms = now_ms;
      } else if (const auto n = nodes_.find(id); n != nodes_.end()) {
        r.log_end_offset = n->second.left_offset;
        r.last_fetch_timestamp_ms = r.last_caught_up_timestamp_ms = n->second.left_ms;
      } else {
        r.log_end_offset = 0;
        r.last_fetch_timestamp_ms = r.last_caught_up_timestamp_ms = 0;
      }
      q.voters.push_back(r);
    }
    return q;
  }

  kafka::ClusterSnapshot snapshotLocked() const {
    kafka::ClusterSnapshot s;
    for (std::int32_t id : {1, 2, 3}) {
      if (availableLocked(id)) s.brokers.push_back({id, hostOf(id), 9000 + id});
    }
    kafka::TopicInfo topic;
    topic.name = "probe";
    for (const auto& p : parts_) {
      kafka::PartitionInfo info;
      info.partition = p.partition;
      info.leader = availableLocked(p.leader) ? p.leader : -1;
      if (info.leader < 0 && p.isr.size() > 1) info.leader = p.leader;  // not fenced yet
      info.replicas = p.replicas;
      info.isr.assign(p.isr.begin(), p.isr.end());
      topic.partitions.push_back(info);
    }
    s.topics.push_back(topic);
    return s;
  }

  ManualClock& clock_;
  mutable std::mutex mutex_;
  mutable std::map<std::int32_t, Node> nodes_;
  mutable std::vector<Part> parts_;
  std::set<std::int32_t> voters_behind_;  // guarded by mutex_
  mutable std::int32_t quorum_leader_ = 100;
  std::optional<common::Instant> control_dark_since_;
  mutable std::optional<common::Instant> commit_ok_;
  mutable std::optional<probe::CoordinatorSeen> watch_seen_;
  mutable common::MonoMicros watch_tick_ = -1;
  mutable std::int32_t quorum_epoch_ = 1;
};

class FakeView final : public drill::ClusterView {
 public:
  explicit FakeView(const FakeCluster& cluster) : cluster_(cluster) {}
  observe::ObservedCluster latest() const override { return cluster_.observed(); }

 private:
  const FakeCluster& cluster_;
};

class FakeProbe final : public drill::ProbeView {
 public:
  explicit FakeProbe(const FakeCluster& cluster) : cluster_(cluster) {}
  probe::ProbeStatus status() const override { return cluster_.probeStatus(); }
  std::vector<storage::ProbeSample> pending(common::WallMicros, common::WallMicros) const override {
    return {};
  }
  struct Steered {
    std::vector<std::int32_t> nodes;
    std::vector<std::int32_t> running;  // of those nodes, the ones running at the call
    common::WallMicros at_us = 0;       // the cluster's clock at the call
  };
  // Every steerAround() call, in order.
  void steerAround(std::vector<std::int32_t> nodes) const override {
    Steered s{nodes, {}, cluster_.wallNow()};
    for (const auto n : nodes) {
      if (cluster_.running(n)) s.running.push_back(n);
    }
    std::lock_guard lock(mutex_);
    steered_.push_back(std::move(s));
  }
  std::vector<Steered> steered() const {
    std::lock_guard lock(mutex_);
    return steered_;
  }

 private:
  const FakeCluster& cluster_;
  mutable std::mutex mutex_;
  mutable std::vector<Steered> steered_;
};

class FakeAdmin final : public drill::ClusterAdmin {
 public:
  explicit FakeAdmin(FakeCluster& cluster) : cluster_(cluster) {}
  Result<kafka::ClusterSnapshot> describeCluster() override { return cluster_.describe(); }
  Status controllerAnswers() override {
    if (cluster_.controller_answers) return okStatus();
    return Error{make_error_code(std::errc::timed_out), "CreateTopics (validate only) timed out"};
  }
  Result<std::map<std::string, std::string>> topicConfig(const std::vector<std::string>& topics,
                                                         const std::string&) override {
    std::map<std::string, std::string> out;
    for (const auto& t : topics) out[t] = std::to_string(cluster_.min_insync.load());
    return out;
  }
  Status electPreferredLeaders(const std::vector<kafka::TopicPartition>&) override {
    cluster_.electPreferred();
    return okStatus();
  }
  Result<kafka::QuorumInfo> describeQuorum() override { return cluster_.describeQuorum(); }
  Result<kafka::Coordinator> findCoordinator(kafka::CoordinatorType,
                                             const std::string& key) override {
    ++find_coordinator_calls;
    {
      std::lock_guard lock(mutex_);
      find_coordinator_threads.push_back(std::this_thread::get_id());
    }
    if (cluster_.coordinator < 0) {
      return Error{make_error_code(std::errc::timed_out),
                   "find coordinator of " + key + ": COORDINATOR_NOT_AVAILABLE"};
    }
    return kafka::Coordinator{cluster_.coordinator, "127.0.0.1", 19090 + cluster_.coordinator};
  }
  std::atomic<int> find_coordinator_calls{0};
  std::vector<std::thread::id> find_coordinator_threads;  // each call's thread; guarded by mutex_
  // Every broker answers broker_configs (default: empty, so Kafka's defaults stand); the
  // controller answers controller_configs, or fails when controller_config_error is set.
  Result<std::map<std::string, kafka::NodeConfigValue>> brokerConfig(
      std::int32_t broker, const std::vector<std::string>&) override {
    std::lock_guard lock(mutex_);
    if (auto found = broker_configs.find(broker); found != broker_configs.end())
      return found->second;
    return std::map<std::string, kafka::NodeConfigValue>{};
  }
  Result<std::map<std::string, kafka::NodeConfigValue>> controllerConfig(
      const std::vector<std::string>&) override {
    std::lock_guard lock(mutex_);
    if (!controller_config_error.empty())
      return Error{make_error_code(std::errc::timed_out), controller_config_error};
    return controller_configs;
  }

  std::map<std::int32_t, std::map<std::string, kafka::NodeConfigValue>>
      broker_configs;                                                // guarded by mutex_
  std::map<std::string, kafka::NodeConfigValue> controller_configs;  // guarded by mutex_
  std::string controller_config_error;                               // guarded by mutex_
  std::mutex mutex_;

 private:
  FakeCluster& cluster_;
};

// One node's injector over the model; counts what it was asked and fails on demand.
class FakeInjector final : public fault::Injector {
 public:
  FakeInjector(FakeCluster& cluster, std::int32_t node, const common::Clock& clock)
      : netns("ns-" + std::to_string(node)), cluster_(cluster), node_(node), clock_(clock) {}

  std::string describe() const override { return "fake node " + std::to_string(node_); }
  Result<fault::FaultRecord> kill() override { return fault("kill", false); }
  Result<fault::FaultRecord> stop(std::chrono::seconds) override { return fault("stop", false); }
  Result<fault::FaultRecord> pause(const fault::PauseSpec& spec) override {
    {
      std::lock_guard lock(mutex_);
      last_pause_ = spec;
    }
    return fault("pause", true);
  }
  Result<fault::FaultRecord> resume(const std::string& drill) override {
    {
      std::lock_guard lock(mutex_);
      resumed_drills_.push_back(drill);
    }
    return back("resume");
  }
  Result<fault::FaultRecord> start() override { return back("start"); }
  Result<fault::ProcessState> inspect() override {
    record("inspect");
    if (unreachable)
      return Error{make_error_code(std::errc::host_unreachable), "no route to the fake node"};
    fault::ProcessState s;
    s.running = cluster_.running(node_);
    s.paused = cluster_.paused(node_);
    return s;
  }
  Result<std::vector<fault::BrokerLogLine>> logLines(const std::string&, common::WallMicros,
                                                     const std::vector<std::string>&) override {
    return std::vector<fault::BrokerLogLine>{};
  }

  int count(const std::string& call) const {
    std::lock_guard lock(mutex_);
    return static_cast<int>(std::count(calls_.begin(), calls_.end(), call));
  }

  // Gray faults: the drills whose fault is in force on this node (what heal and sweep remove), and
  // the last isolate asked for. A disk_full takes the node down, as a broker whose log cannot be
  // written shuts itself down.
  std::string refusal(fault::GrayFault gray) const override {
    if (gray == fault::GrayFault::disk_slow) return "the fake node cannot slow its disk";
    std::lock_guard lock(mutex_);
    return gray_refusal.empty() ? std::string() : gray_refusal + " (" + fault::toString(gray) + ")";
  }
  Result<fault::FaultRecord> isolate(const fault::IsolateSpec& spec) override {
    {
      std::lock_guard lock(mutex_);
      last_isolate_ = spec;
    }
    return grayIn("isolate", spec.drill, false);
  }
  Result<fault::FaultRecord> throttle(const fault::ThrottleSpec& spec) override {
    {
      std::lock_guard lock(mutex_);
      last_rate_ = spec.bytes_per_second;
    }
    return grayIn("throttle", spec.drill, false);
  }
  Result<fault::FaultRecord> fillDisk(const fault::DiskFullSpec& spec) override {
    {
      std::lock_guard lock(mutex_);
      last_fill_ = spec;
    }
    return grayIn("fill_disk", spec.drill, true);
  }
  std::optional<fault::DiskFullSpec> lastFill() const {
    std::lock_guard lock(mutex_);
    return last_fill_;
  }
  Status checkGray(const fault::GrayAction&) override {
    record("check");
    std::lock_guard lock(mutex_);
    if (!check_problem.empty()) return fault::faultError(fault::errc::unsupported, check_problem);
    return okStatus();
  }
  // The node's gray faults go into its namespace `netns` (a table per drill).
  fault::GrayPlace grayPlace(const std::string& drill) const override {
    std::lock_guard lock(mutex_);
    return {"", netns, "", "kfaild_d" + drill, ""};
  }
  // Removes the table the place names from the namespace it names. With `real_heal` set, the heal's
  // outcome is the real GrayRunner's on that place (its commands through the runner's shell).
  Result<fault::FaultRecord> healPlaced(const fault::GrayPlace& place) override {
    record("heal");
    {
      std::lock_guard lock(mutex_);
      healed_at_.push_back(place);
    }
    if (heal_failures != 0) {
      if (heal_failures > 0) --heal_failures;
      return Error{make_error_code(std::errc::io_error), "the fake nft refused to heal"};
    }
    fault::FaultRecord r;
    if (real_heal) {
      auto healed = real_heal->healPlaced(place);
      if (!healed) return healed.error();
      r = *healed;
    } else {
      r.requested_at = clock_.wallNow();
      r.detail = "nft delete table inet " + place.table;
    }
    std::lock_guard lock(mutex_);
    in_force_.erase({place.netns, place.table.substr(std::string("kfaild_d").size())});
    return r;
  }
  Result<std::vector<std::string>> sweep() override {
    record("sweep");
    std::lock_guard lock(mutex_);
    std::vector<std::string> removed;
    for (const auto& [ns, d] : in_force_) removed.push_back("inet kfaild_d" + d);
    in_force_.clear();
    return removed;
  }
  // The drills whose fault is in force on the node, in whatever namespace.
  std::set<std::string> grayInForce() const {
    std::lock_guard lock(mutex_);
    std::set<std::string> out;
    for (const auto& [ns, d] : in_force_) out.insert(d);
    return out;
  }
  // As a kfaild that died would leave it (in `in_netns`; default: the node's netns now).
  void leaveGray(const std::string& drill, std::optional<std::string> in_netns = std::nullopt) {
    std::lock_guard lock(mutex_);
    in_force_.insert({in_netns.value_or(netns), drill});
  }
  // Every place a heal was asked for, in order.
  std::vector<fault::GrayPlace> healedAt() const {
    std::lock_guard lock(mutex_);
    return healed_at_;
  }
  std::optional<fault::IsolateSpec> lastIsolate() const {
    std::lock_guard lock(mutex_);
    return last_isolate_;
  }
  std::uint64_t lastRate() const {
    std::lock_guard lock(mutex_);
    return last_rate_;
  }
  // The last pause asked for, and the drill of every resume, in order.
  std::optional<fault::PauseSpec> lastPause() const {
    std::lock_guard lock(mutex_);
    return last_pause_;
  }
  std::vector<std::string> resumedDrills() const {
    std::lock_guard lock(mutex_);
    return resumed_drills_;
  }
  std::string gray_refusal;   // non-empty: refusal() says so (set before the runner runs)
  std::string check_problem;  // non-empty: checkGray() fails with it (set before the runner runs)
  std::string netns;  // where grayPlace() puts the node's faults (set before the runner runs)
  std::unique_ptr<fault::GrayRunner> real_heal;  // set before the runner runs; see healPlaced
  std::atomic<int> heal_failures{0};             // the next this many heals fail; -1: every one
  std::atomic<int> inject_failures{0};  // the next this many gray injections fail, placing nothing

  // Knobs a test turns (set before the engine's thread uses the injector, or from its hooks).
  std::atomic<int> start_failures{0};  // the next this many starts fail; -1: every one
  std::atomic<bool> unreachable{false};
  std::string fault_output;  // ends a kill's, stop's or pause's detail, as a tool's stderr would
  std::function<void()> after_fault;  // called once the node is down; may throw, as a bug would

 private:
  void record(const std::string& call) {
    std::lock_guard lock(mutex_);
    calls_.push_back(call);
  }
  Result<fault::FaultRecord> fault(const std::string& call, bool paused) {
    record(call);
    fault::FaultRecord r;
    r.requested_at = clock_.wallNow();
    r.detail = call + " of fake node " + std::to_string(node_) + fault_output;
    cluster_.down(node_, paused);
    if (after_fault) after_fault();
    return r;
  }
  Result<fault::FaultRecord> back(const std::string& call) {
    record(call);
    if (start_failures != 0) {
      if (start_failures > 0) --start_failures;
      return Error{make_error_code(std::errc::io_error), "the fake engine refused to " + call};
    }
    fault::FaultRecord r;
    r.requested_at = clock_.wallNow();
    cluster_.up(node_);
    return r;
  }

  Result<fault::FaultRecord> grayIn(const std::string& call, const std::string& drill,
                                    bool goes_down) {
    record(call);
    if (inject_failures != 0) {
      if (inject_failures > 0) --inject_failures;
      return Error{make_error_code(std::errc::operation_not_permitted),
                   "the fake nft: Operation not permitted"};
    }
    fault::FaultRecord r;
    r.requested_at = clock_.wallNow();
    r.detail = "nft -f - (" + call + " of fake node " + std::to_string(node_) + ")";
    {
      std::lock_guard lock(mutex_);
      in_force_.insert({netns, drill});
    }
    if (goes_down) cluster_.down(node_, false);
    return r;
  }

  FakeCluster& cluster_;
  std::int32_t node_;
  const common::Clock& clock_;
  mutable std::mutex mutex_;
  std::vector<std::string> calls_;
  std::set<std::pair<std::string, std::string>> in_force_;  // (netns, drill)
  std::vector<fault::GrayPlace> healed_at_;
  std::optional<fault::DiskFullSpec> last_fill_;  // guarded by mutex_
  std::optional<fault::IsolateSpec> last_isolate_;
  std::uint64_t last_rate_ = 0;
  std::optional<fault::PauseSpec> last_pause_;  // guarded by mutex_
  std::vector<std::string> resumed_drills_;     // guarded by mutex_
};

}  // namespace kfaild::testing
