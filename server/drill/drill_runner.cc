#include "server/drill/drill_runner.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "server/common/time_format.h"
#include "server/drill/errc.h"
#include "server/drill/guards.h"
#include "server/kafka/admin.h"
#include "server/kafka/metadata.h"

namespace kfaild::drill {
namespace {

constexpr int kAdminTimeoutMs = 5000;
constexpr int kControllerCheckMs = 3000;
constexpr std::int64_t kPollUs = 100'000;
constexpr std::int64_t kSecond = 1'000'000;

bool terminal(const std::string& state) {
  return state == "done" || state == "failed" || state == "aborted";
}

Error refused(const std::string& reason) { return Error{make_error_code(errc::guard_refused), reason}; }

// Broker log lines that mark the phases of a failover, by file and by what they mean.
struct LogPattern {
  const char* file;
  const char* needle;
  const char* kind;
};
constexpr LogPattern kControllerPatterns[] = {
    {"controller.log", "because its session has timed out", "fenced"},
    {"controller.log", "has requested and been granted a controlled shutdown", "controlled_shutdown"},
    {"controller.log", "to shut down has been granted", "shutdown_granted"},
};

}  // namespace

DrillRunner::DrillRunner(const config::ClusterConfig& cluster, storage::ClusterId cluster_id,
                         storage::Store& store, storage::DrillStore& drills, const common::Clock& clock,
                         observe::MetadataPoller& poller, probe::ProbeRunner& probe,
                         std::map<std::int32_t, std::unique_ptr<fault::Injector>> injectors)
    : cluster_(cluster),
      cluster_id_(cluster_id),
      store_(store),
      drills_(drills),
      clock_(clock),
      poller_(poller),
      probe_(probe),
      injectors_(std::move(injectors)) {}

DrillRunner::~DrillRunner() { stop(); }

kafka::Handle& DrillRunner::admin() {
  std::lock_guard lock(mutex_);
  if (!admin_) {
    kafka::ClientOptions options;
    options.bootstrap = cluster_.bootstrap;
    options.properties = cluster_.client;
    options.client_id = "kfaild-" + cluster_.name + "-drill";
    auto handle = kafka::createClient(RD_KAFKA_PRODUCER, options, {{"allow.auto.create.topics", "false"}});
    if (handle) admin_ = std::move(*handle);
  }
  return admin_;
}

Status DrillRunner::start() {
  if (!admin()) return Error{make_error_code(errc::injector_failed), "cannot create the admin client"};
  // Drills queued before a restart start again in order.
  storage::DrillQuery q;
  q.cluster = cluster_id_;
  q.state = "queued";
  q.limit = 1000;
  if (auto queued = drills_.drills(q); queued) {
    std::lock_guard lock(mutex_);
    for (auto it = queued->rbegin(); it != queued->rend(); ++it) queue_.push_back(it->id);
  }
  worker_.start([this] { loop(); });
  return okStatus();
}

void DrillRunner::stop() { worker_.stop(); }

bool DrillRunner::stopping() const { return worker_.stopRequested(); }

std::optional<std::int64_t> DrillRunner::active() const {
  std::lock_guard lock(mutex_);
  return active_;
}

bool DrillRunner::interrupted() const {
  if (stopping()) return true;
  std::lock_guard lock(mutex_);
  return abort_request_ && active_ && *abort_request_ == *active_;
}

bool DrillRunner::waitFor(std::int64_t micros) {
  std::unique_lock lock(mutex_);
  const auto aborted = [this] { return abort_request_ && active_ && *abort_request_ == *active_; };
  worker_.waitFor(lock, std::chrono::microseconds(std::max<std::int64_t>(0, micros)), aborted);
  return !stopping() && !aborted();
}

void DrillRunner::recordEvent(const std::string& source, const std::string& kind, std::int64_t t_us,
                              std::optional<std::int32_t> broker, nlohmann::json detail) {
  storage::Event e;
  e.cluster = cluster_id_;
  e.t_us = t_us;
  e.source = source;
  e.kind = kind;
  e.broker = broker;
  e.detail = detail.dump();
  store_.addEvent(std::move(e));
}

void DrillRunner::persist(const storage::DrillRecord& drill) {
  if (auto s = drills_.updateDrill(drill); !s) {
    spdlog::error("drill {}: cannot record it: {}", drill.id, s.error().describe());
  }
}

void DrillRunner::persist(const storage::RecoveryEntry& entry) {
  // The node is recovered either way; a journal that stays open only means the next start of
  // kfaild checks that node again.
  if (auto s = drills_.updateRecovery(entry); !s) {
    spdlog::error("recovery journal {}: cannot record it: {}", entry.id, s.error().describe());
  }
}

void DrillRunner::setState(storage::DrillRecord& drill, const std::string& state, const std::string& reason) {
  drill.state = state;
  if (!reason.empty()) drill.reason = reason;
  if (terminal(state)) drill.finished_us = clock_.wallNow();
  if (auto s = drills_.updateDrill(drill); !s) {
    spdlog::error("drill {}: cannot record state {}: {}", drill.id, state, s.error().describe());
  }
  spdlog::info("drill {} on {}: {}{}", drill.id, cluster_.name, state, reason.empty() ? "" : " (" + reason + ")");
}

Result<std::int32_t> DrillRunner::resolveTarget(const Target& target) const {
  const auto observed = poller_.latest();
  switch (target.kind) {
    case TargetKind::kBroker:
      if (!injectors_.count(target.broker)) {
        return Error{make_error_code(errc::invalid_request),
                     "target.broker: node " + std::to_string(target.broker) + " is not in the inventory of cluster " +
                         cluster_.name};
      }
      return target.broker;
    case TargetKind::kLeaderOf: {
      if (!observed.snapshot) return refused("the cluster's metadata is unavailable");
      const auto* topic = observed.snapshot->topic(target.topic);
      if (topic == nullptr) {
        return Error{make_error_code(errc::invalid_request),
                     "target.leader_of.topic: " + target.topic + " is not a probe topic of cluster " + cluster_.name};
      }
      for (const auto& p : topic->partitions) {
        if (p.partition == target.partition) {
          if (p.leader < 0) return refused(target.topic + "-" + std::to_string(p.partition) + " has no leader");
          if (!injectors_.count(p.leader)) {
            return refused("the leader of " + target.topic + "-" + std::to_string(p.partition) + ", broker " +
                           std::to_string(p.leader) + ", is not in the inventory");
          }
          return p.leader;
        }
      }
      return Error{make_error_code(errc::invalid_request),
                   "target.leader_of.partition: " + target.topic + " has no partition " + std::to_string(target.partition)};
    }
    case TargetKind::kController:
      for (const auto& node : cluster_.inventory) {
        if (node.role == "controller") return node.id;
      }
      return Error{make_error_code(errc::invalid_request), "target.controller: no controller in the inventory"};
    case TargetKind::kRandom: {
      std::vector<std::int32_t> brokers;
      for (const auto& node : cluster_.inventory) {
        if (node.role == "broker") brokers.push_back(node.id);
      }
      if (brokers.empty()) return Error{make_error_code(errc::invalid_request), "target.random: no broker in the inventory"};
      std::mt19937 rng(std::random_device{}());
      return brokers[std::uniform_int_distribution<std::size_t>(0, brokers.size() - 1)(rng)];
    }
  }
  return Error{make_error_code(errc::invalid_request), "target: unknown kind"};
}

std::optional<std::string> DrillRunner::guards(std::int32_t target, const DrillSpec& spec, bool ignore_active,
                                              std::map<std::string, std::int32_t>* min_insync) {
  GuardInput in = guardInput(target, spec);
  if (!ignore_active) in.active_drill = active();
  auto& handle = admin();
  if (!handle) return std::string("the admin client could not be created");
  auto all = kafka::fetchAllMetadata(handle.get(), kAdminTimeoutMs);
  if (!all) return "the cluster's metadata is unavailable: " + all.error().describe();
  if (auto open = openRecoveryProblem()) return open;
  // Without a controller nobody fences the broker or elects new leaders: the "drill" would be an
  // outage until the node is back. Asked before anything else that needs the controller.
  if (auto answered = kafka::controllerAnswers(handle.get(), kControllerCheckMs); !answered) {
    return "the KRaft controller does not answer (" + answered.error().describe() +
           "): nothing would fence the broker or elect new leaders";
  }
  in.cluster = &*all;
  // min.insync.replicas matters only where the target is in the ISR with company.
  std::vector<std::string> topics;
  for (const auto& t : all->topics) {
    for (const auto& p : t.partitions) {
      if (std::find(p.isr.begin(), p.isr.end(), target) != p.isr.end() && p.isr.size() > 1) {
        topics.push_back(t.name);
        break;
      }
    }
  }
  auto min_isr = kafka::describeTopicConfig(handle.get(), topics, "min.insync.replicas", kAdminTimeoutMs);
  if (!min_isr) return "cannot read min.insync.replicas: " + min_isr.error().describe();
  for (const auto& [topic, value] : *min_isr) {
    try {
      in.min_insync[topic] = std::stoi(value);
    } catch (const std::exception&) {
      in.min_insync[topic] = 1;
    }
  }
  if (min_insync != nullptr) *min_insync = in.min_insync;
  return checkGuards(in);
}

Result<std::int64_t> DrillRunner::submit(const DrillSpec& spec, const SubmitOptions& options) {
  // One submission at a time: simultaneous requests must not all pass the "nothing is running"
  // check before any of them is queued.
  std::lock_guard serial(submit_mutex_);
  auto target = resolveTarget(spec.target);
  if (!target) return target.error();
  std::optional<std::int64_t> running;
  {
    std::lock_guard lock(mutex_);
    running = active_ ? active_ : (queue_.empty() ? std::nullopt : std::optional(queue_.front()));
  }
  if (running && !options.queue_if_busy) {
    return refused("drill " + std::to_string(*running) + " is running on cluster " + cluster_.name);
  }
  if (!running) {
    if (auto reason = guards(*target, spec, true)) return refused(*reason);
  }
  storage::DrillRecord drill;
  drill.cluster = cluster_id_;
  drill.fault = toString(spec.fault);
  drill.target = toJson(spec.target).dump();
  drill.options = toJson(spec.options).dump();
  drill.state = "queued";
  drill.schedule_id = options.schedule_id;
  drill.created_us = clock_.wallNow();
  auto id = drills_.createDrill(drill);
  if (!id) return id.error();
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(*id);
  }
  worker_.wake();
  spdlog::info("drill {} on {}: queued {} of {}", *id, cluster_.name, drill.fault, drill.target);
  return *id;
}

Status DrillRunner::abort(std::int64_t drill_id) {
  {
    std::lock_guard lock(mutex_);
    if (active_ && *active_ == drill_id) {
      abort_request_ = drill_id;
      worker_.wake();
      return okStatus();
    }
    auto it = std::find(queue_.begin(), queue_.end(), drill_id);
    if (it == queue_.end()) {
      return Error{make_error_code(errc::drill_not_found), "drill " + std::to_string(drill_id) + " is not queued or running"};
    }
    queue_.erase(it);
  }
  auto drill = drills_.drill(drill_id);
  if (drill && *drill) {
    auto record = **drill;
    setState(record, "aborted", "aborted on request before it started");
  }
  return okStatus();
}

void DrillRunner::loop() {
  while (true) {
    std::int64_t id = 0;
    {
      std::unique_lock lock(mutex_);
      const auto ready = [this] { return !queue_.empty(); };
      if (recovery_retry_at_) {
        worker_.waitUntil(lock, *recovery_retry_at_, ready);
      } else {
        worker_.wait(lock, ready);
      }
      if (stopping()) return;
      if (queue_.empty()) {
        lock.unlock();
        retryOpenRecoveries();
        continue;
      }
      id = queue_.front();
      queue_.pop_front();
      active_ = id;
      abort_request_.reset();
    }
    auto drill = drills_.drill(id);
    if (drill && *drill && (*drill)->state == "queued") execute(**drill);
    std::lock_guard lock(mutex_);
    active_.reset();
    abort_request_.reset();
  }
}

std::optional<std::string> DrillRunner::openRecoveryProblem() const {
  auto pending = drills_.pendingRecoveries();
  if (!pending) return "cannot read the recovery journal: " + pending.error().describe();
  const auto running = active();
  for (const auto& entry : *pending) {
    if (entry.cluster != cluster_id_ || (running && entry.drill_id == *running)) continue;
    return "node " + std::to_string(entry.node) + " left down by drill " + std::to_string(entry.drill_id) +
           " is not recovered yet (" + std::to_string(entry.attempts) + " attempt(s)" +
           (entry.last_error.empty() ? "" : ", last error: " + entry.last_error) + ")";
  }
  return std::nullopt;
}

void DrillRunner::retryOpenRecoveries() {
  recovery_retry_at_.reset();
  auto pending = drills_.pendingRecoveries();
  if (!pending) {
    spdlog::error("recovery journal: cannot read it: {}", pending.error().describe());
    return;
  }
  bool open = false;
  for (auto entry : *pending) {
    if (entry.cluster != cluster_id_ || !injectors_.count(entry.node)) continue;
    spdlog::warn("recovery of node {} (drill {}): trying again after {} attempt(s)", entry.node, entry.drill_id,
                 entry.attempts);
    const auto before = entry.attempts;
    auto status = recoverNode(entry.node, entry.action, 60 * kSecond,
                              [&](int attempt, const std::string& error, std::int64_t) {
                                entry.attempts = before + attempt;
                                entry.last_error = error;
                                persist(entry);
                              });
    entry.attempts += 1;
    if (!status) {
      entry.last_error = status.error().message;
      persist(entry);
      open = true;
      continue;
    }
    entry.done_us = clock_.wallNow();
    persist(entry);
    recordEvent("kfaild", "recovered_late", *entry.done_us, entry.node,
                {{"drill", entry.drill_id}, {"attempts", entry.attempts}});
    spdlog::info("recovery of node {} (drill {}): back after {} attempt(s)", entry.node, entry.drill_id, entry.attempts);
  }
  if (open && !stopping()) {
    recovery_retry_backoff_us_ = std::clamp<std::int64_t>(recovery_retry_backoff_us_ * 2, 30 * kSecond, 300 * kSecond);
    recovery_retry_at_ = std::chrono::steady_clock::now() + std::chrono::microseconds(recovery_retry_backoff_us_);
    spdlog::warn("recovery journal: node(s) of cluster {} still down; next attempt in {} s", cluster_.name,
                 recovery_retry_backoff_us_ / kSecond);
  } else {
    recovery_retry_backoff_us_ = 0;
  }
}

void DrillRunner::execute(storage::DrillRecord drill) {
  auto spec = parseDrillSpec(nlohmann::json{{"fault", drill.fault},
                                            {"target", nlohmann::json::parse(drill.target)},
                                            {"options", nlohmann::json::parse(drill.options)}});
  if (!spec) {
    setState(drill, "failed", "stored request no longer valid: " + spec.error().message);
    return;
  }
  drill.started_us = clock_.wallNow();
  nlohmann::json result = {{"runs", nlohmann::json::array()}};
  for (int run = 1; run <= spec->options.repeats; ++run) {
    auto outcome = runOnce(drill, *spec, run);
    result["runs"].push_back(outcome);
    drill.result = result.dump();
    if (outcome.value("state", "") != "done") {
      setState(drill, outcome.value("state", "failed"), outcome.value("reason", ""));
      return;
    }
    if (run < spec->options.repeats) persist(drill);
  }
  setState(drill, "done");
}

GuardInput DrillRunner::guardInput(std::int32_t target, const DrillSpec& spec) const {
  GuardInput in;
  in.fault = spec.fault;
  in.target = target;
  in.allow_unavailable = spec.options.allow_unavailable;
  for (const auto& node : cluster_.inventory) {
    in.inventory.insert(node.id);
    if (node.role == "broker") in.inventory_brokers.insert(node.id);
  }
  for (const auto& t : cluster_.probe.topics) in.probe_topics.push_back(t.name);
  const auto status = probe_.status();
  if (status.phase != probe::ProbePhase::kProbing) {
    in.probe_problem = std::string(probe::toString(status.phase)) + (status.problem.empty() ? "" : " (" + status.problem + ")");
  }
  const auto now = clock_.monoNow();
  for (const auto& p : status.partitions) {
    drill::ProbeHealth h;
    h.topic = p.topic;
    h.partition = p.partition;
    if (p.oldest_outstanding_sent) h.backlog_us = now - p.oldest_outstanding_sent->mono;
    h.holding = p.holding_since.has_value();
    if (p.last_ack) h.last_ack_age_us = now - p.last_ack->mono;
    if (p.last_receive) h.last_receive_age_us = now - p.last_receive->mono;
    in.probe.push_back(h);
  }
  in.gap_threshold_us = cluster_.probe.gap_threshold_us;
  return in;
}

std::optional<std::string> DrillRunner::guardsAtFault(std::int32_t target, const DrillSpec& spec,
                                                      const kafka::ClusterSnapshot& snapshot) {
  // The same checks as at submission, on what kfaild keeps fresh (the poller's metadata of the
  // probe topics, the probe's own state) so that nothing slow stands between them and the fault.
  // Every other topic was checked at preflight.
  GuardInput in = guardInput(target, spec);
  in.cluster = &snapshot;
  in.min_insync = min_insync_at_preflight_;
  if (auto open = openRecoveryProblem()) return open;
  return checkGuards(in);
}

std::optional<observe::ObservedCluster> DrillRunner::freshSnapshot(std::int64_t max_age_us) {
  // A snapshot taken before now - max_age_us may predate a leadership change; wait for the
  // poller's next one (it polls every observe.metadata_interval_ms).
  const auto deadline = clock_.monoNow() + std::max<std::int64_t>(2 * max_age_us, 2 * kSecond);
  while (true) {
    const auto observed = poller_.latest();
    if (observed.reachable && observed.snapshot && clock_.wallNow() - observed.snapshot_at <= max_age_us) {
      return observed;
    }
    if (clock_.monoNow() >= deadline || !waitFor(kPollUs / 2)) return std::nullopt;
  }
}

std::vector<kafka::TopicPartition> DrillRunner::notOnPreferredLeader() const {
  std::vector<kafka::TopicPartition> out;
  const auto observed = poller_.latest();
  if (!observed.snapshot) return out;
  for (const auto& t : observed.snapshot->topics) {
    for (const auto& p : t.partitions) {
      if (!p.replicas.empty() && p.leader != p.replicas.front()) out.push_back({t.name, p.partition});
    }
  }
  return out;
}

nlohmann::json DrillRunner::electPreferred(const std::vector<kafka::TopicPartition>& partitions) {
  nlohmann::json names = nlohmann::json::array();
  for (const auto& p : partitions) names.push_back(p.topic + "-" + std::to_string(p.partition));
  nlohmann::json out = {{"partitions", names}};
  auto elected = kafka::electPreferredLeaders(admin().get(), partitions, kAdminTimeoutMs * 2);
  if (!elected) {
    out["error"] = elected.error().describe();
    out["preferred"] = false;
    return out;
  }
  const auto deadline = clock_.monoNow() + 30 * kSecond;
  bool preferred = false;
  while (!preferred && clock_.monoNow() < deadline && waitFor(kPollUs * 2)) {
    preferred = notOnPreferredLeader().empty();
  }
  out["preferred"] = preferred;
  return out;
}

bool DrillRunner::probesResumed(std::int64_t since_us, const std::set<std::string>& only) const {
  const auto status = probe_.status();
  if (status.phase != probe::ProbePhase::kProbing || status.partitions.empty()) return false;
  const auto now = clock_.now();
  const auto threshold = cluster_.probe.gap_threshold_us;
  for (const auto& p : status.partitions) {
    if (!only.count(p.topic + "-" + std::to_string(p.partition))) continue;
    if (!p.last_ack || p.last_ack->wall < since_us) return false;
    if (!p.last_receive || p.last_receive->wall < since_us) return false;
    if (now.mono - p.last_ack->mono > threshold) return false;
  }
  return true;
}

bool DrillRunner::nodeBack(std::int32_t node) const {
  const auto observed = poller_.latest();
  if (!observed.reachable || !observed.snapshot) return false;
  bool is_broker = false;
  for (const auto& n : cluster_.inventory) {
    if (n.id == node) is_broker = n.role == "broker";
  }
  if (!is_broker) return observed.snapshot->brokers.size() > 0;  // a controller: the cluster answers
  if (!observed.snapshot->hasBroker(node)) return false;
  for (const auto& t : observed.snapshot->topics) {
    for (const auto& p : t.partitions) {
      const bool replica = std::find(p.replicas.begin(), p.replicas.end(), node) != p.replicas.end();
      const bool in_isr = std::find(p.isr.begin(), p.isr.end(), node) != p.isr.end();
      if (replica && !in_isr) return false;
    }
  }
  return true;
}

Status DrillRunner::recoverNode(std::int32_t node, const std::string& action, std::int64_t timeout_us,
                                const RetryReport& on_retry) {
  auto& injector = injectors_.at(node);
  const auto deadline = clock_.monoNow() + timeout_us;
  std::int64_t backoff = kSecond;
  int attempt = 0;
  std::string last_error;
  while (clock_.monoNow() < deadline) {
    auto state = injector->inspect();
    const bool running = state && state->running && !state->paused;
    if (!running) {
      auto done = action == "resume" && state && state->paused ? injector->resume() : injector->start();
      ++attempt;
      if (!done) {
        last_error = done.error().describe();
        spdlog::warn("recovery of node {}: {} failed: {} (retrying in {} s)", node, action, last_error, backoff / kSecond);
        if (on_retry) on_retry(attempt, last_error, backoff);
        std::this_thread::sleep_for(std::chrono::microseconds(std::min(backoff, std::max<std::int64_t>(0, deadline - clock_.monoNow()))));
        backoff = std::min<std::int64_t>(backoff * 2, 30 * kSecond);
        continue;
      }
      // Stamped when the start was asked for: the command returns after the process is up.
      recordEvent("injector", action == "resume" ? "resumed" : "started", done->requested_at, node,
                  {{"injector", injector->describe()}, {"returned_us", clock_.wallNow()}});
    }
    // Wait for the node to rejoin: registered and back in every probe ISR.
    while (clock_.monoNow() < deadline) {
      if (nodeBack(node)) return okStatus();
      std::this_thread::sleep_for(std::chrono::microseconds(kPollUs * 2));
      auto again = injector->inspect();
      if (again && !again->running) break;  // it died again: start it again
    }
  }
  return Error{make_error_code(errc::injector_failed),
               "node " + std::to_string(node) + " not back within " + std::to_string(timeout_us / kSecond) + " s" +
                   (last_error.empty() ? "" : ": " + last_error)};
}

void DrillRunner::collectBrokerLogs(std::int32_t target, std::int64_t since_us) {
  std::vector<std::string> controller_needles;
  for (const auto& p : kControllerPatterns) controller_needles.push_back(p.needle);
  for (const auto& node : cluster_.inventory) {
    auto& injector = injectors_.at(node.id);
    if (node.role == "controller") {
      auto lines = injector->logLines("controller.log", since_us, controller_needles);
      if (!lines) continue;
      for (const auto& line : *lines) {
        for (const auto& p : kControllerPatterns) {
          const std::string subject = "broker " + std::to_string(target) + " ";
          if (line.message.find(p.needle) == std::string::npos) continue;
          // "Fencing broker 1 at epoch", "Unfenced broker 1 has requested", "request from broker 1 to shut down"
          if (line.message.find(subject) == std::string::npos) continue;
          recordEvent("broker_log", p.kind, line.t, target,
                      {{"node", node.id}, {"file", line.file}, {"line", line.message}});
        }
      }
    } else {
      std::vector<std::string> needles;
      for (const auto& t : cluster_.probe.topics) needles.push_back("Leader " + t.name + "-");
      auto lines = injector->logLines("state-change.log", since_us, needles);
      if (lines) {
        for (const auto& line : *lines) {
          if (line.message.find("starts at leader epoch") == std::string::npos) continue;
          for (const auto& t : cluster_.probe.topics) {
            const auto marker = "Leader " + t.name + "-";
            const auto at = line.message.find(marker);
            if (at == std::string::npos) continue;
            const auto rest = line.message.substr(at + marker.size());
            const auto space = rest.find(' ');
            int partition = -1;
            try {
              partition = std::stoi(rest.substr(0, space));
            } catch (const std::exception&) {
              continue;
            }
            storage::Event e;
            e.cluster = cluster_id_;
            e.t_us = line.t;
            e.source = "broker_log";
            e.kind = "leader_epoch_start";
            e.broker = node.id;
            e.topic = t.name;
            e.partition = partition;
            e.detail = nlohmann::json{{"node", node.id}, {"file", line.file}, {"line", line.message}}.dump();
            store_.addEvent(std::move(e));
          }
        }
      }
      if (node.id == target) {
        auto sigterm = injector->logLines("server.log", since_us, {"Terminating process due to signal"});
        if (sigterm) {
          for (const auto& line : *sigterm) {
            recordEvent("broker_log", "signal_received", line.t, target, {{"file", line.file}, {"line", line.message}});
          }
        }
      }
    }
  }
}

nlohmann::json DrillRunner::runOnce(storage::DrillRecord& drill, const DrillSpec& spec, int run) {
  nlohmann::json out = {{"run", run}, {"fault", toString(spec.fault)}};
  auto fail = [&](const std::string& state, const std::string& reason) {
    out["state"] = state;
    out["reason"] = reason;
    return out;
  };
  auto stopped = [&](const char* phase) {
    return fail("aborted", std::string(stopping() ? "kfaild stopped during " : "aborted on request during ") + phase);
  };

  setState(drill, "preflight");
  auto target = resolveTarget(spec.target);
  if (!target) return fail("failed", target.error().message);
  out["target"] = *target;
  if (auto reason = guards(*target, spec, true, &min_insync_at_preflight_)) return fail("failed", "refused: " + *reason);
  // The way to the node must work before it is touched: a fault kfaild could not undo is worse
  // than no drill.
  if (auto state = injectors_.at(*target)->inspect(); !state) {
    return fail("failed", "node " + std::to_string(*target) + " cannot be reached (" + injectors_.at(*target)->describe() +
                              "): " + state.error().describe());
  }
  // Every run starts from the leadership the topics were designed with: after a restart of the
  // cluster one broker may lead everything, and the drill would never see a follower.
  if (spec.options.preflight_election) {
    if (auto moved = notOnPreferredLeader(); !moved.empty()) {
      setState(drill, "preflight", "moving leadership back to the preferred replicas first");
      out["preflight_election"] = electPreferred(moved);
      // The producer follows the moved leaders within moments; the baseline starts once every
      // partition acks and reads back again, so that the move is not counted as noise.
      const auto elected_us = clock_.wallNow();
      std::set<std::string> all;
      for (const auto& p : probe_.status().partitions) all.insert(p.topic + "-" + std::to_string(p.partition));
      const auto deadline = clock_.monoNow() + 30 * kSecond;
      while (!probesResumed(elected_us + kSecond, all) && clock_.monoNow() < deadline && waitFor(kPollUs)) {
      }
      drill.reason.clear();
      persist(drill);
    }
  }
  if (interrupted()) return stopped("preflight");

  setState(drill, "baseline");
  const auto baseline_start = clock_.wallNow();
  out["baseline_start_us"] = baseline_start;
  if (!waitFor(spec.options.baseline_s * kSecond)) return stopped("baseline");

  // Roles come from metadata at most two poll intervals old; the guards are asked again now,
  // right before the fault, and the probe's state at this moment goes with the result.
  const auto max_age = std::max<std::int64_t>(2 * cluster_.observe.metadata_interval_us, 500'000);
  const auto observed = freshSnapshot(max_age);
  const auto* snapshot = observed ? &*observed->snapshot : nullptr;
  if (snapshot == nullptr) {
    if (interrupted()) return stopped("baseline");
    return fail("failed", "refused at the fault: no metadata younger than " + std::to_string(max_age / 1000) +
                              " ms (the cluster does not answer); the node was not touched");
  }
  if (auto reason = guardsAtFault(*target, spec, *snapshot)) {
    return fail("failed", "refused at the fault: " + *reason + "; the node was not touched");
  }
  const auto roles_at_us = observed->snapshot_at;
  std::vector<analysis::PartitionAtFault> at_fault;
  nlohmann::json leadership = nlohmann::json::array();
  for (const auto& t : snapshot->topics) {
    for (const auto& p : t.partitions) {
      at_fault.push_back({t.name, p.partition, p.leader, p.replicas, p.isr});
      leadership.push_back({{"topic", t.name}, {"partition", p.partition}, {"leader", p.leader},
                            {"replicas", p.replicas}, {"isr", p.isr}});
    }
  }
  const auto probe_status = probe_.status();
  std::vector<analysis::ProbeAtFault> probe_at_fault;
  {
    const auto now = clock_.monoNow();
    nlohmann::json parts = nlohmann::json::array();
    for (const auto& p : probe_status.partitions) {
      analysis::ProbeAtFault f;
      f.topic = p.topic;
      f.partition = p.partition;
      f.outstanding = static_cast<std::int64_t>(p.outstanding);
      if (p.oldest_outstanding_sent) f.oldest_outstanding_age_us = now - p.oldest_outstanding_sent->mono;
      f.holding = p.holding_since.has_value();
      f.held_ticks = static_cast<std::int64_t>(p.counters.held_ticks);
      parts.push_back({{"topic", f.topic}, {"partition", f.partition}, {"outstanding", f.outstanding},
                       {"oldest_outstanding_age_us", f.oldest_outstanding_age_us}, {"holding", f.holding},
                       {"held_ticks", f.held_ticks}});
      probe_at_fault.push_back(std::move(f));
    }
    out["probe_at_fault"] = {{"partitions", parts},
                             {"skipped_ticks", probe_status.skipped_ticks},
                             {"max_send_lateness_us", probe_status.max_send_lateness_us},
                             {"clock_steps", clock_.steps()}};
    out["probe_client"] = probe_status.client_settings;
  }
  out["leadership_at_fault"] = {{"observed_at_us", roles_at_us}, {"partitions", leadership}};

  // Partitions whose only in-sync replica is the target cannot recover while it is down: the
  // observation does not wait for them, the node is brought back, and their outage is measured
  // to their first ack after that.
  std::set<std::string> recoverable, offline;
  for (const auto& p : at_fault) {
    const auto name = p.topic + "-" + std::to_string(p.partition);
    const bool node_stays_down = spec.fault == FaultType::kKill || spec.fault == FaultType::kStop;
    (node_stays_down && analysis::roleOf(*target, p) == analysis::Role::kSoleReplica ? offline : recoverable).insert(name);
  }

  setState(drill, "inject");
  auto& injector = injectors_.at(*target);
  storage::RecoveryEntry journal;
  journal.drill_id = drill.id;
  journal.cluster = cluster_id_;
  journal.node = *target;
  journal.action = spec.fault == FaultType::kPause ? "resume" : "start";
  journal.phase = "inject";
  journal.created_us = clock_.wallNow();
  auto journal_id = drills_.addRecovery(journal);
  if (!journal_id) return fail("failed", "cannot write the recovery journal: " + journal_id.error().describe());
  journal.id = *journal_id;

  Result<fault::FaultRecord> record = Error{};
  switch (spec.fault) {
    case FaultType::kKill: record = injector->kill(); break;
    case FaultType::kStop:
    case FaultType::kRestart: record = injector->stop(std::chrono::seconds(spec.options.grace_s)); break;
    case FaultType::kPause: record = injector->pause(); break;
  }
  bool injected = record.ok();
  std::string failure;
  std::int64_t fault_us = clock_.wallNow();
  if (injected) {
    fault_us = record->fault_at.value_or(record->requested_at);
    out["fault_requested_us"] = record->requested_at;
    out["fault_us"] = fault_us;
    out["fault_time_source"] = record->fault_at ? record->fault_time_source : "requested";
    out["fault_detail"] = record->detail;
    recordEvent("injector", "fault", fault_us, *target,
                {{"fault", toString(spec.fault)}, {"requested_us", record->requested_at},
                 {"time_source", out["fault_time_source"]}, {"detail", record->detail},
                 {"drill", drill.id}, {"run", run}});
  } else {
    failure = "injecting " + std::string(toString(spec.fault)) + " into node " + std::to_string(*target) +
              " failed: " + record.error().describe();
  }

  std::int64_t observe_end = clock_.wallNow();
  if (injected) {
    if (spec.fault == FaultType::kPause) {
      const bool full = waitFor(spec.options.pause_s * kSecond);
      auto resumed = injector->resume();
      if (resumed) recordEvent("injector", "resumed", resumed->requested_at, *target, {{"paused_s", spec.options.pause_s}});
      if (!full) failure = stopping() ? "kfaild stopped during the pause" : "aborted on request during the pause";
    }
    if (spec.fault == FaultType::kRestart && !interrupted()) {
      auto started = injector->start();
      if (started) recordEvent("injector", "started", started->requested_at, *target, {{"restart", true}});
    }
    if (failure.empty()) {
      setState(drill, "observe");
      journal.phase = "observe";
      persist(journal);
      const auto settle_from = spec.fault == FaultType::kPause ? fault_us + spec.options.pause_s * kSecond : fault_us;
      const auto started_mono = clock_.monoNow();
      const auto timeout = spec.options.observe_timeout_s * kSecond;
      bool resumed = false;
      while (clock_.monoNow() - started_mono < timeout) {
        if (clock_.wallNow() - settle_from >= spec.options.observe_min_s * kSecond &&
            probesResumed(fault_us, recoverable)) {
          resumed = true;
          break;
        }
        if (!waitFor(kPollUs)) break;
      }
      if (interrupted()) {
        failure = stopping() ? "kfaild stopped during observe" : "aborted on request during observe";
      } else if (!resumed) {
        out["observe_timed_out"] = true;
      }
      observe_end = clock_.wallNow();
    }
  }
  out["observe_end_us"] = observe_end;

  setState(drill, "recover");
  journal.phase = "recover";
  persist(journal);
  // Each failed attempt is reported where a reader looks: the drill's reason while it recovers,
  // the journal, an event.
  auto retry_errors = nlohmann::json::array();
  auto recovered = recoverNode(
      *target, journal.action, spec.options.recover_timeout_s * kSecond,
      [&](int attempt, const std::string& error, std::int64_t retry_in_us) {
        const auto now = clock_.wallNow();
        journal.attempts = attempt;
        journal.last_error = error;
        persist(journal);
        if (retry_errors.size() < 20) retry_errors.push_back({{"attempt", attempt}, {"t_us", now}, {"error", error}});
        recordEvent("kfaild", "recovery_retry", now, *target,
                    {{"drill", drill.id}, {"run", run}, {"attempt", attempt}, {"error", error},
                     {"retry_in_s", static_cast<double>(retry_in_us) / kSecond}});
        setState(drill, "recover",
                 "recovering node " + std::to_string(*target) + ": attempt " + std::to_string(attempt) + " failed (" +
                     error + "); retrying in " + std::to_string(retry_in_us / kSecond) + " s");
      });
  journal.attempts += 1;
  out["recovery"] = {{"attempts", journal.attempts}, {"errors", retry_errors}};
  if (!recovered) {
    journal.last_error = recovered.error().message;
    persist(journal);
    // Left open: the runner keeps trying between drills and refuses new ones meanwhile.
    recovery_retry_at_ = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    return fail("failed", (failure.empty() ? "" : failure + "; ") + recovered.error().message +
                              " (kfaild keeps retrying every 30 s to 5 min; drills on this cluster are refused until it is back)");
  }
  journal.done_us = clock_.wallNow();
  persist(journal);
  if (!retry_errors.empty()) {
    drill.reason.clear();
    persist(drill);
  }
  const auto recovered_us = *journal.done_us;
  out["recovered_us"] = recovered_us;
  recordEvent("injector", "recovered", recovered_us, *target, {{"drill", drill.id}, {"run", run}});

  // The offline partitions' outage ends at their first ack (and receipt) after the node is back.
  std::int64_t window_end = observe_end;
  if (injected && failure.empty() && !offline.empty()) {
    const auto deadline = clock_.monoNow() + spec.options.observe_timeout_s * kSecond;
    bool back = false;
    while (!(back = probesResumed(recovered_us, offline)) && clock_.monoNow() < deadline && waitFor(kPollUs)) {
    }
    if (!back) out["offline_timed_out"] = true;
    window_end = clock_.wallNow();
  }
  out["window_end_us"] = window_end;

  if (injected) collectBrokerLogs(*target, baseline_start);
  if (!failure.empty() && injected) return fail("aborted", failure);
  if (!injected) return fail("failed", failure);

  if (spec.options.preferred_election) {
    setState(drill, "elect");
    std::vector<kafka::TopicPartition> partitions;
    for (const auto& p : at_fault) partitions.push_back({p.topic, p.partition});
    const auto election = electPreferred(partitions);
    if (election.contains("error")) {
      out["election_error"] = election["error"];
    } else {
      out["preferred_leaders_restored"] = election["preferred"];
    }
  }

  setState(drill, "analyse");
  // Settle: every message sent in the window gets its fate (acked and received, failed, or given
  // up on) before the numbers are taken, or the settle timeout passes and the rest is unresolved.
  const auto settle_start = clock_.monoNow();
  const auto settle_deadline = settle_start + spec.options.settle_timeout_s * kSecond;
  while (!probe_.pending(baseline_start, window_end).empty() && clock_.monoNow() < settle_deadline &&
         waitFor(kPollUs)) {
  }
  out["settle_us"] = clock_.monoNow() - settle_start;

  analysis::AnalysisInput input;
  input.fault = toString(spec.fault);
  input.target = *target;
  input.fault_us = fault_us;
  input.window_start_us = baseline_start;
  input.observe_end_us = observe_end;
  input.recovered_us = recovered_us;
  input.window_end_us = window_end;
  input.interval_us = cluster_.probe.interval_us;
  input.metadata_interval_us = cluster_.observe.metadata_interval_us;
  input.partitions = at_fault;
  input.probe_at_fault = std::move(probe_at_fault);
  // The ledger first, then the store: a message that finishes in between is in both (the
  // analysis prefers the stored one), never in neither.
  input.pending = probe_.pending(baseline_start, window_end);
  const auto live = probe_.status();
  store_.flush();
  for (const auto& p : at_fault) {
    storage::SampleQuery q;
    q.cluster = cluster_id_;
    q.topic = p.topic;
    q.partition = p.partition;
    q.range = {baseline_start, window_end};
    if (auto rows = store_.samples(q); rows) {
      input.samples.insert(input.samples.end(), rows->begin(), rows->end());
    }
  }
  storage::EventQuery eq;
  eq.cluster = cluster_id_;
  eq.range = {baseline_start - kSecond, window_end + 5 * kSecond};
  if (auto events = store_.events(eq); events) input.events = std::move(*events);
  analysis::probeStretchesFromEvents(input.events, input.holds, input.idles);
  for (const auto& p : live.partitions) {
    // A hold still open is not an event yet.
    if (p.holding_since && p.holding_since->wall <= window_end) {
      input.holds.push_back({p.topic, p.partition, p.holding_since->wall, std::nullopt, 0, "open"});
    }
  }
  out["analysis"] = analysis::toJson(analysis::analyse(input));
  out["state"] = "done";
  return out;
}

Result<int> DrillRunner::recoverPending(std::chrono::seconds timeout) {
  auto pending = drills_.pendingRecoveries();
  if (!pending) return pending.error();
  int recovered = 0;
  for (auto entry : *pending) {
    if (entry.cluster != cluster_id_) continue;
    if (!injectors_.count(entry.node)) {
      spdlog::error("recovery journal: node {} of drill {} is no longer in the inventory", entry.node, entry.drill_id);
      continue;
    }
    spdlog::warn("recovery journal: drill {} left node {} to {} (kfaild died during {})", entry.drill_id, entry.node,
                 entry.action, entry.phase);
    auto status = recoverNode(entry.node, entry.action, std::chrono::duration_cast<std::chrono::microseconds>(timeout).count());
    entry.attempts += 1;
    if (!status) {
      // kfaild still starts: it serves, probes and refuses drills on this cluster while the
      // runner keeps trying.
      entry.last_error = status.error().message;
      persist(entry);
      spdlog::error("recovery journal: node {} of drill {} is still down: {}; retrying in the background",
                    entry.node, entry.drill_id, status.error().describe());
      recovery_retry_at_ = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      continue;
    }
    entry.done_us = clock_.wallNow();
    persist(entry);
    recordEvent("kfaild", "recovered_after_restart", *entry.done_us, entry.node,
                {{"drill", entry.drill_id}, {"phase", entry.phase}});
    ++recovered;
  }
  // Every drill this cluster had in flight died with the previous kfaild.
  storage::DrillQuery q;
  q.cluster = cluster_id_;
  q.limit = 1000;
  if (auto all = drills_.drills(q); all) {
    for (auto d : *all) {
      if (terminal(d.state)) continue;
      setState(d, "aborted", d.state == "queued" ? std::string("kfaild stopped before the drill ran")
                                                 : "kfaild stopped during " + d.state);
    }
  }
  return recovered;
}

}  // namespace kfaild::drill
