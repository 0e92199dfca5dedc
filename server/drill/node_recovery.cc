#include "server/drill/node_recovery.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "server/drill/errc.h"
#include "server/drill/event_log.h"
#include "server/drill/fault_action.h"
#include "server/fault/local_injector.h"
#include "server/kafka/quorum.h"

namespace kfaild::drill {

using common::EventKind;
using common::EventSource;
using common::NodeRole;

namespace {

constexpr std::int64_t kSecond = 1'000'000;
constexpr std::int64_t kRejoinPollUs = 200'000;

}  // namespace

std::vector<std::int32_t> recoveryOrder(const std::vector<std::int32_t>& taken_down,
                                        const std::vector<config::NodeConfig>& inventory) {
  const auto isController = [&](std::int32_t node) {
    return std::any_of(inventory.begin(), inventory.end(), [node](const config::NodeConfig& n) {
      return n.id == node && n.role == NodeRole::kController;
    });
  };
  std::vector<std::int32_t> out;
  for (const bool controllers : {true, false}) {
    for (const auto node : taken_down) {
      if (isController(node) == controllers && std::find(out.begin(), out.end(), node) == out.end())
        out.push_back(node);
    }
  }
  return out;
}

namespace {

// Open entries as recoveryOrder has their nodes: controllers first, then the entries' order (the
// order the nodes went down).
void inRecoveryOrder(std::vector<storage::RecoveryEntry>& entries,
                     const std::vector<config::NodeConfig>& inventory) {
  std::vector<std::int32_t> nodes;
  for (const auto& entry : entries) nodes.push_back(entry.node);
  const auto order = recoveryOrder(nodes, inventory);
  std::stable_sort(entries.begin(), entries.end(),
                   [&](const storage::RecoveryEntry& a, const storage::RecoveryEntry& b) {
                     return std::find(order.begin(), order.end(), a.node) <
                            std::find(order.begin(), order.end(), b.node);
                   });
}

}  // namespace

std::string orphanProblem(const storage::RecoveryEntry& entry, const std::string& cluster) {
  return "node " + std::to_string(entry.node) + " left down by drill " +
         std::to_string(entry.drill_id) + " is no longer in the inventory of cluster " + cluster +
         ", so kfaild cannot bring it back: once it is back (or retired), resolve recovery " +
         std::to_string(entry.id) + " (POST /api/v1/recoveries/" + std::to_string(entry.id) +
         "/resolve)";
}

std::optional<std::string> NodeRecovery::notBack(std::int32_t node, RejoinBaseline& baseline) {
  for (const auto& n : deps_.cluster.inventory) {
    if (n.id == node && n.role == NodeRole::kController) return controllerNotBack(node, baseline);
  }
  return brokerNotBack(node);
}

std::optional<std::string> NodeRecovery::brokerNotBack(std::int32_t node) const {
  const auto observed = deps_.view.latest();
  if (!observed.reachable || !observed.snapshot) return std::string("the cluster does not answer");
  if (!observed.snapshot->hasBroker(node))
    return "broker " + std::to_string(node) + " is not registered";
  for (const auto& t : observed.snapshot->topics) {
    for (const auto& p : t.partitions) {
      const bool replica =
          std::find(p.replicas.begin(), p.replicas.end(), node) != p.replicas.end();
      const bool in_isr = std::find(p.isr.begin(), p.isr.end(), node) != p.isr.end();
      if (replica && !in_isr) {
        return "broker " + std::to_string(node) + " is not back in the ISR of " + t.name + "-" +
               std::to_string(p.partition);
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> NodeRecovery::controllerNotBack(std::int32_t node,
                                                           RejoinBaseline& baseline) {
  const auto name = "controller " + std::to_string(node);
  if (!kafka::quorumClientProblem(deps_.cluster.client).empty()) {
    // kfaild cannot see the quorum: the cluster answering is all it can tell.
    const auto observed = deps_.view.latest();
    if (!observed.reachable || !observed.snapshot || observed.snapshot->brokers.empty()) {
      return std::string("the cluster does not answer");
    }
    return std::nullopt;
  }
  auto quorum = deps_.admin.describeQuorum();
  if (!quorum) return "the KRaft quorum cannot be described: " + quorum.error().describe();
  const auto& q = *quorum;
  if (q.leader_id < 0) return std::string("the KRaft quorum has no leader");
  const kafka::QuorumReplica* entry = nullptr;
  std::string voters;
  for (const auto& v : q.voters) {
    if (v.replica_id == node) entry = &v;
    voters += (voters.empty() ? "" : ", ") + std::to_string(v.replica_id);
  }
  if (entry == nullptr) return name + " is not a voter of the KRaft quorum (voters " + voters + ")";
  if (q.leader_id == node) return std::nullopt;
  const auto* leader = q.leaderReplica();
  const auto leader_now = leader == nullptr ? -1
                                            : std::max(leader->last_fetch_timestamp_ms,
                                                       leader->last_caught_up_timestamp_ms);
  if (baseline.leader != q.leader_id || baseline.high_watermark < 0) {
    baseline = {q.leader_id, q.high_watermark, leader_now};
  }
  const bool offset_reached =
      baseline.high_watermark >= 0 && entry->log_end_offset >= baseline.high_watermark;
  const bool caught_up_since =
      baseline.leader_now_ms < 0 || entry->last_caught_up_timestamp_ms >= baseline.leader_now_ms;
  if (offset_reached && caught_up_since) return std::nullopt;
  return name + " has not caught up with the KRaft quorum's leader " + std::to_string(q.leader_id) +
         " since its start (log end offset " + std::to_string(entry->log_end_offset) +
         ", high watermark " + std::to_string(baseline.high_watermark) +
         " when first described after the start" +
         (caught_up_since ? "" : "; last caught up before then") + ")";
}

fault::GrayPlace placeOf(const storage::RecoveryEntry& entry) {
  return {entry.place_host, entry.place_netns, entry.place_netns_id, entry.place_table,
          entry.place_filler};
}

void setPlace(storage::RecoveryEntry& entry, const fault::GrayPlace& place) {
  entry.place_host = place.host;
  entry.place_netns = place.netns;
  entry.place_netns_id = place.netns_id;
  entry.place_table = place.table;
  entry.place_filler = place.filler;
}

Status NodeRecovery::bringBack(const storage::RecoveryEntry& entry, std::int64_t timeout_us,
                               const RetryReport& on_retry, const Sleeper& sleeper) {
  const auto node = entry.node;
  const auto& action = entry.action;
  auto& injector = deps_.injectors.at(node);
  const auto& clock = deps_.clock;
  const auto deadline = clock.monoNow() + timeout_us;
  std::int64_t backoff = kSecond;
  int attempt = 0;
  std::string last_error;
  std::string heal_error;
  std::optional<std::string> missing;
  // A failed injection placed nothing: there is nothing to heal.
  bool healed = action != "heal" || entry.injection == "failed";
  const auto place = placeOf(entry);
  const auto sleepUntil = [&](common::MonoMicros until) {
    if (!sleeper) {
      clock.sleepUntil(until);
      return true;
    }
    return sleeper(until);
  };
  const auto stopped = [&] {
    return Error{make_error_code(errc::injector_failed),
                 "node " + std::to_string(node) + " not back yet: kfaild is stopping" +
                     (last_error.empty() ? "" : " (last error: " + last_error + ")")};
  };
  // After a failed attempt: reported, then the backoff (false: the wait was cut short).
  const auto failed = [&](const std::string& what, const std::string& error) {
    last_error = error;
    spdlog::warn("recovery of node {}: {} failed: {} (retrying in {} s)", node, what, error,
                 backoff / kSecond);
    if (on_retry) on_retry(attempt, error, backoff);
  };
  const auto backOff = [&] {
    if (!sleepUntil(std::min(clock.monoNow() + backoff, deadline))) return false;
    backoff = std::min<std::int64_t>(backoff * 2, 30 * kSecond);
    return true;
  };
  while (clock.monoNow() < deadline) {
    if (!healed) {
      // A gray fault first, where the journal says it went: a node still cut off (or with a full
      // disk) would not rejoin.
      auto heal = place.empty() ? injector->heal(grayDrillName(entry.drill_id))
                                : injector->healPlaced(place);
      ++attempt;
      if (heal) {
        healed = true;
        heal_error.clear();
        recordEvent(deps_, EventSource::kInjector, EventKind::kHealed, heal->faultTime(), node,
                    {{"drill", entry.drill_id},
                     {"detail", heal->detail},
                     {"by", "recovery"},
                     {"uncertainty_us", heal->uncertainty_us}});
      } else {
        heal_error = heal.error().describe();
        failed("heal", heal_error);
      }
    }
    // A heal that failed does not keep a stopped broker down: it is started, and the heal retried.
    auto state = injector->inspect();
    const bool running = state && state->running && !state->paused;
    if (!running) {
      auto done = action == "resume" && state && state->paused
                      ? injector->resume(grayDrillName(entry.drill_id))
                      : injector->start();
      ++attempt;
      if (!done) {
        failed(action == "resume" ? "resume" : "start", done.error().describe());
        if (!backOff()) return stopped();
        continue;
      }
      // Stamped when the start was asked for: the command returns after the process is up. The
      // detail says how ("brought back by the platform" for a command node with no start).
      recordEvent(deps_, EventSource::kInjector,
                  action == "resume" ? EventKind::kResumed : EventKind::kStarted,
                  done->requested_at, node,
                  {{"injector", injector->describe()},
                   {"returned_us", clock.wallNow()},
                   {"detail", done->detail}});
    }
    if (!healed) {
      if (!backOff()) return stopped();
      continue;
    }
    // Wait for the node to rejoin, measured from this start.
    RejoinBaseline baseline;
    while (clock.monoNow() < deadline) {
      missing = notBack(node, baseline);
      if (!missing) return okStatus();
      if (!sleepUntil(clock.monoNow() + kRejoinPollUs)) return stopped();
      auto again = injector->inspect();
      if (again && !again->running) break;  // it died again: start it again
    }
  }
  return Error{make_error_code(errc::injector_failed),
               "node " + std::to_string(node) + " not back within " +
                   std::to_string(timeout_us / kSecond) + " s" +
                   (!heal_error.empty() ? ": its gray fault is not healed: " + heal_error
                    : missing           ? ": " + *missing
                                        : "") +
                   (last_error.empty() || last_error == heal_error ? "" : ": " + last_error)};
}

Result<storage::RecoveryEntry> NodeRecovery::open(std::int64_t drill_id, std::int32_t node,
                                                  const std::string& action,
                                                  const fault::GrayPlace& place) {
  storage::RecoveryEntry entry;
  entry.drill_id = drill_id;
  entry.cluster = deps_.cluster_id;
  entry.node = node;
  entry.action = action;
  entry.phase = "inject";
  entry.created_us = deps_.clock.wallNow();
  entry.injection = "pending";
  setPlace(entry, place);
  auto id = deps_.drills.addRecovery(entry);
  if (!id) return id.error();
  entry.id = *id;
  return entry;
}

void NodeRecovery::injected(storage::RecoveryEntry& entry, bool ok) {
  entry.injection = ok ? "done" : "failed";
  save(entry);
}

bool NodeRecovery::stillOpen(std::int64_t id) const {
  auto pending = deps_.drills.pendingRecoveries();
  if (!pending) return true;  // unknown: keep trying
  return std::any_of(pending->begin(), pending->end(),
                     [id](const storage::RecoveryEntry& e) { return e.id == id; });
}

void NodeRecovery::save(const storage::RecoveryEntry& entry) {
  // The node is recovered either way; a journal that stays open only means the next start of
  // kfaild checks that node again.
  if (auto s = deps_.drills.updateRecovery(entry); !s) {
    spdlog::error("recovery journal {}: cannot record it: {}", entry.id, s.error().describe());
  }
}

std::optional<std::string> NodeRecovery::openProblem(std::optional<std::int64_t> running) const {
  auto pending = deps_.drills.pendingRecoveries();
  if (!pending) return "cannot read the recovery journal: " + pending.error().describe();
  for (const auto& entry : *pending) {
    if (entry.cluster != deps_.cluster_id || (running && entry.drill_id == *running)) continue;
    if (!deps_.injectors.count(entry.node)) return orphanProblem(entry, deps_.cluster.name);
    return "node " + std::to_string(entry.node) + " left down by drill " +
           std::to_string(entry.drill_id) + " is not recovered yet (" +
           std::to_string(entry.attempts) + " attempt(s)" +
           (entry.last_error.empty() ? "" : ", last error: " + entry.last_error) + ")";
  }
  return std::nullopt;
}

void NodeRecovery::scheduleRetry(std::int64_t in_us) {
  retry_backoff_us_ = in_us;
  retry_at_ = deps_.clock.monoNow() + in_us;
}

Result<int> NodeRecovery::replay(std::int64_t timeout_us, const Sleeper& sleeper) {
  auto pending = deps_.drills.pendingRecoveries();
  if (!pending) return pending.error();
  int recovered = 0;
  inRecoveryOrder(*pending, deps_.cluster.inventory);
  for (auto entry : *pending) {
    if (entry.cluster != deps_.cluster_id) continue;
    if (!deps_.injectors.count(entry.node)) {
      spdlog::error("recovery journal: {}", orphanProblem(entry, deps_.cluster.name));
      recordEvent(deps_, EventSource::kKfaild, EventKind::kRecoveryOrphaned, deps_.clock.wallNow(),
                  entry.node, {{"drill", entry.drill_id}, {"recovery", entry.id}});
      healOrphan(entry);
      continue;
    }
    spdlog::warn("recovery journal: drill {} left node {} to {} (kfaild died during {})",
                 entry.drill_id, entry.node, entry.action, entry.phase);
    bool stopping = false;
    bool resolved = false;
    // Cut short by a stop, or by an operator's resolution of this very entry.
    const Sleeper until_stop = !sleeper ? Sleeper{} : [&](common::MonoMicros deadline) {
      stopping = !sleeper(deadline);
      resolved = !stopping && !stillOpen(entry.id);
      return !stopping && !resolved;
    };
    const auto before = entry.attempts;
    auto status = bringBack(
        entry, timeout_us,
        [&](int attempt, const std::string& error, std::int64_t) {
          entry.attempts = before + attempt;
          entry.last_error = error;
          save(entry);
        },
        until_stop);
    if (resolved) {
      spdlog::warn(
          "recovery journal: entry {} (node {}) was resolved by an operator while kfaild retried "
          "it",
          entry.id, entry.node);
      continue;
    }
    if (stopping) {
      spdlog::warn("recovery of node {} (drill {}): left for kfaild's next start", entry.node,
                   entry.drill_id);
      return recovered;
    }
    entry.attempts += 1;
    if (!status) {
      // kfaild still starts: it serves, probes and refuses drills on this cluster while the
      // engine keeps trying.
      entry.last_error = status.error().message;
      save(entry);
      spdlog::error(
          "recovery journal: node {} of drill {} is still down: {}; retrying in the background",
          entry.node, entry.drill_id, status.error().describe());
      scheduleRetry(kFirstRetryUs);
      continue;
    }
    entry.done_us = deps_.clock.wallNow();
    save(entry);
    recordEvent(deps_, EventSource::kKfaild, EventKind::kRecoveredAfterRestart, *entry.done_us,
                entry.node, {{"drill", entry.drill_id}, {"phase", entry.phase}});
    ++recovered;
  }
  return recovered;
}

void NodeRecovery::healOrphan(const storage::RecoveryEntry& entry) {
  // Without the node's injector only a fault on kfaild's own host can still be reached: its
  // namespace and filler are where the journal says. The entry stays for the operator (the node
  // itself may still be down).
  const auto place = placeOf(entry);
  if (entry.action != "heal" || entry.injection == "failed" || !place.local()) return;
  auto healed = fault::healLocalPlace(place, deps_.clock);
  if (!healed) {
    spdlog::error(
        "recovery journal: node {} (no longer in the inventory): healing drill {}'s gray fault "
        "failed: {}",
        entry.node, entry.drill_id, healed.error().describe());
    return;
  }
  recordEvent(deps_, EventSource::kInjector, EventKind::kHealed, healed->faultTime(), entry.node,
              {{"drill", entry.drill_id},
               {"detail", healed->detail},
               {"by", "recovery"},
               {"orphaned", true}});
}

void NodeRecovery::retryOpen(const Sleeper& sleeper) {
  retry_at_.reset();
  auto pending = deps_.drills.pendingRecoveries();
  if (!pending) {
    spdlog::error("recovery journal: cannot read it: {}", pending.error().describe());
    return;
  }
  bool open = false;
  inRecoveryOrder(*pending, deps_.cluster.inventory);
  for (auto entry : *pending) {
    if (entry.cluster != deps_.cluster_id || !deps_.injectors.count(entry.node)) continue;
    spdlog::warn("recovery of node {} (drill {}): trying again after {} attempt(s)", entry.node,
                 entry.drill_id, entry.attempts);
    const auto before = entry.attempts;
    bool stopping = false;
    bool resolved = false;
    const Sleeper until_stop_or_resolved = !sleeper ? Sleeper{} : [&](common::MonoMicros deadline) {
      stopping = !sleeper(deadline);
      resolved = !stopping && !stillOpen(entry.id);
      return !stopping && !resolved;
    };
    auto status = bringBack(
        entry, 60 * kSecond,
        [&](int attempt, const std::string& error, std::int64_t) {
          entry.attempts = before + attempt;
          entry.last_error = error;
          save(entry);
        },
        until_stop_or_resolved);
    if (resolved) continue;
    if (stopping) {
      // Left open for the next start's replay; no later entry is tried.
      spdlog::warn("recovery of node {} (drill {}): left for kfaild's next start", entry.node,
                   entry.drill_id);
      return;
    }
    entry.attempts += 1;
    if (!status) {
      entry.last_error = status.error().message;
      save(entry);
      open = true;
      continue;
    }
    entry.done_us = deps_.clock.wallNow();
    save(entry);
    recordEvent(deps_, EventSource::kKfaild, EventKind::kRecoveredLate, *entry.done_us, entry.node,
                {{"drill", entry.drill_id}, {"attempts", entry.attempts}});
    spdlog::info("recovery of node {} (drill {}): back after {} attempt(s)", entry.node,
                 entry.drill_id, entry.attempts);
  }
  if (open) {
    scheduleRetry(std::clamp<std::int64_t>(retry_backoff_us_ * 2, kFirstRetryUs, kMaxRetryUs));
    spdlog::warn("recovery journal: node(s) of cluster {} still down; next attempt in {} s",
                 deps_.cluster.name, retry_backoff_us_ / kSecond);
  } else {
    retry_backoff_us_ = 0;
  }
}

}  // namespace kfaild::drill
