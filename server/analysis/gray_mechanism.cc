#include "server/analysis/gray_mechanism.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "server/analysis/drill_analysis.h"

namespace kfaild::analysis {

using common::EventKind;
using common::EventSource;
using common::GrayFault;
using storage::isEvent;
using storage::sourceOf;

namespace {

// Broker and client log lines carry millisecond timestamps.
constexpr std::int64_t kLogResolutionUs = 1'000;
// How long after its mechanism's event a stall may still end and count as ended by it: the
// client's discovery and retry after the event (the objectives' 5 s margin, kGrayStallMarginS).
// A stall that goes on longer was ended by something else.
constexpr std::int64_t kResumeWindowUs = 5'000'000;
// The longest a stall may go on after a heal of vanished packets and still be credited to the
// heal: TCP's retransmission timer doubles while packets vanish but never past Linux's
// TCP_RTO_MAX (120 s), and the client then reconnects within its reconnect.backoff.max.ms
// (librdkafka's default 10 s). A stall ending later was not ended by the heal.
constexpr std::int64_t kHealCreditCapUs = 130'000'000;

std::string seconds(std::int64_t us) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f s", static_cast<double>(us) / 1e6);
  return text;
}

bool isPartition(const storage::Event& e, const MechanismScope& s) {
  return e.topic && *e.topic == s.topic && e.partition && *e.partition == s.partition;
}

bool leads(Role role) {
  return role == Role::kLeader || role == Role::kIsolatedLeader || role == Role::kThrottledLeader;
}
bool follows(Role role) {
  return role == Role::kFollowerInIsr || role == Role::kIsolatedFollower ||
         role == Role::kThrottledFollower;
}

struct Found {
  std::int64_t at_us = 0;
  std::string kind;
  std::int64_t resolution_us = 0;
};

// How late an event can be against what it reports. A log line: its own millisecond, and the
// uncertainty of its host's clock against kfaild's when it is another host's (ssh). A metadata
// observation: the change happened after the previous answer that did not show it (since_us, in
// the event), so up to that span, at least one poll interval; and the brokers answering Metadata
// learn a change from the controller after the leader that acts on it, so one more poll interval:
// an ISR shrink can be observed after the ack it allowed (88712dd).
// The Java client's leader updates are its producer's metadata as the child polls it
// (java/probe/KfaildJavaProbe.java, every 20 ms): seen up to one poll after the client applied it,
// so an ack it allowed may come first.
constexpr std::int64_t kJavaLeaderPollUs = 20'000;

std::int64_t resolutionOf(const storage::Event& e, const MechanismScope& s) {
  const auto source = sourceOf(e);
  if (source == EventSource::kBrokerLog) return logResolutionUs(e);
  if (source == EventSource::kClient && e.detail.find("\"via\":\"java\"") != std::string::npos) {
    return kJavaLeaderPollUs + kLogResolutionUs;
  }
  if (source != EventSource::kMetadata) return kLogResolutionUs;
  std::int64_t span = s.metadata_interval_us;
  const auto detail = nlohmann::json::parse(e.detail, nullptr, false);
  if (detail.is_object() && detail.contains("since_us") && detail["since_us"].is_number_integer()) {
    const auto since = detail["since_us"].get<std::int64_t>();
    if (since > 0 && since < e.t_us) span = std::max(span, e.t_us - since);
  }
  return span + s.metadata_interval_us;
}

// The first event after the fault that `matches`.
template <typename Match>
std::optional<Found> first(const std::vector<storage::Event>& events, const MechanismScope& s,
                           Match matches) {
  std::optional<Found> found;
  for (const auto& e : events) {
    if (e.t_us < s.fault_us || !matches(e)) continue;
    if (found && found->at_us <= e.t_us) continue;
    found = Found{e.t_us, e.kind, resolutionOf(e, s)};
  }
  return found;
}

// The event that hands the partition over from the target: its new leader, or its ISR without
// the target. For a follower that is the controller's fence itself: the controller writes the
// broker's removal from every ISR in the same batch of records as its fencing
// (ReplicationControlManager.handleBrokerFenced), so its log line times the shrink to its
// millisecond, where the metadata poller sees it up to two polls later, and later still when the
// broker it asks is slow to replay the batch, so a follower's partition can ack again before
// the poller sees the shrink (a10a495).
std::optional<Found> handover(const std::vector<storage::Event>& events, const MechanismScope& s) {
  return first(events, s, [&](const storage::Event& e) {
    const bool of_target = e.broker && *e.broker == s.target;
    if (!leads(s.role) && isEvent(e, EventSource::kBrokerLog, EventKind::kFenced) && of_target) {
      return true;
    }
    if (!isPartition(e, s)) return false;
    if (leads(s.role)) {
      const bool leader_event = isEvent(e, EventSource::kMetadata, EventKind::kLeaderChange) ||
                                isEvent(e, EventSource::kBrokerLog, EventKind::kLeaderEpochStart);
      return leader_event && e.broker && *e.broker != s.target && *e.broker >= 0;
    }
    return isEvent(e, EventSource::kMetadata, EventKind::kIsrShrink) && of_target;
  });
}

MechanismPhase fromFault(const char* name, const MechanismScope& s, const Found& end) {
  return {name, s.fault_us, end.at_us, end.kind, end.resolution_us};
}

}  // namespace

MechanismSettings withClientSettings(MechanismSettings settings,
                                     const std::map<std::string, std::string>& client) {
  const auto millis = [&](const char* key, std::int64_t& into) {
    const auto it = client.find(key);
    if (it == client.end()) return;
    std::int64_t ms = 0;
    const auto* end = it->second.data() + it->second.size();
    const auto [ptr, ec] = std::from_chars(it->second.data(), end, ms);
    if (ec == std::errc() && ptr == end && ms > 0) into = ms * 1'000;
  };
  millis("request.timeout.ms", settings.request_timeout_us);
  millis("socket.timeout.ms", settings.socket_timeout_us);
  millis("message.timeout.ms", settings.message_timeout_us);
  if (const auto it = client.find("probe.client"); it != client.end() && it->second == "wire") {
    settings.sends_retried = false;
  }
  if (const auto it = client.find("probe.client"); it != client.end() && it->second == "java") {
    settings.java_client = true;
    settings.socket_timeout_us = 30'000'000;  // kafka-clients' request.timeout.ms default
    millis("java.request.timeout.ms", settings.socket_timeout_us);
    millis("java.delivery.timeout.ms", settings.message_timeout_us);
  }
  return settings;
}

Expectation expectationFor(const GrayFaultInput& fault, Role role, const MechanismSettings& s,
                           bool alone_below_min_isr) {
  const Expectation session{Mechanism::kSessionTimeout, "broker.session.timeout.ms",
                            s.session_timeout_us};
  const Expectation shrink{Mechanism::kIsrShrink, "replica.lag.time.max.ms",
                           s.replica_lag_time_max_us};
  const Expectation heal{Mechanism::kHeal, "duration_s", fault.duration_us};
  const bool leader = leads(role);
  const bool follower = follows(role);
  const bool offline = role == Role::kSoleReplica || role == Role::kBelowMinIsr;

  Expectation e;
  if (fault.kind == GrayFault::kDiskFull) {
    // The broker takes its only log directory offline and shuts down: a kill.
    if (offline) return {Mechanism::kNodeBack, "recovery", 0};
    if (leader || follower) e = session;
  } else if (fault.kind == GrayFault::kThrottle) {
    // Nothing fails: a follower falls behind until it lags replica.lag.time.max.ms; the
    // leader's clients are slowed until the heal.
    if (follower) e = shrink;
    if (leader || offline) e = heal;
  } else if (fault.kind == GrayFault::kIsolate) {
    // The partition has nowhere else to go: only the heal ends it.
    if (offline)
      e = heal;
    else if (fault.from == "clients") {
      if (leader) e = heal;
    } else if (fault.from == "brokers") {
      if (follower) e = shrink;
      // Its followers stop fetching, and it drops them: acks=all then waits for the heal when
      // the leader alone is below min.insync.replicas.
      if (leader) e = alone_below_min_isr ? heal : shrink;
    } else if (fault.from == "quorum") {
      // A follower cut from the quorum alone still fetches from its leaders, so their acks=all
      // writes never wait for it; its fencing only takes it out of their ISRs. (On the lab, six
      // runs: their longest gaps 0.05-0.42 s, none at the fence; docs/FAULTS.md.)
      // Fenced and replaced, the old leader still takes the producer's requests and holds each
      // until its timeout; only then does the producer look for the new leader.
      if (leader)
        e = {Mechanism::kStaleLeader, "request.timeout.ms",
             std::max(s.session_timeout_us, s.request_timeout_us)};
    } else if (fault.from == "all") {
      if (follower || (leader && fault.mode == "reject")) e = session;
      if (leader && fault.mode == "drop") {
        // Requests in flight to the blackholed leader wait for the client's own timeout, and a
        // retry cannot go elsewhere before the fencing names a new leader.
        const bool socket_first = s.socket_timeout_us <= s.message_timeout_us;
        const char* request_setting = s.java_client ? "request.timeout.ms" : "socket.timeout.ms";
        const char* message_setting = s.java_client ? "delivery.timeout.ms" : "message.timeout.ms";
        e = {Mechanism::kClientTimeout, socket_first ? request_setting : message_setting,
             std::max(s.session_timeout_us, std::min(s.socket_timeout_us, s.message_timeout_us))};
      }
    }
  }
  // A fault healed before its mechanism could act is ended by the heal.
  if (e.mechanism != Mechanism::kNone && e.mechanism != Mechanism::kHeal && fault.duration_us > 0 &&
      fault.duration_us < e.expected_us) {
    e = heal;
  }
  return e;
}

namespace {

// The event that should end the stall under `expected` (unset when it did not come), what it is
// called in the reasons, and the steps up to it, appended to `phases`.
struct MechanismEnd {
  std::optional<Found> end;
  std::string wanted;
};

MechanismEnd sessionTimeoutEnd(const MechanismScope& s, const std::vector<storage::Event>& events,
                               std::vector<MechanismPhase>& phases) {
  MechanismEnd m{handover(events, s),
                 leads(s.role) ? std::string(toString(EventKind::kLeaderChange))
                               : std::string(toString(EventKind::kIsrShrink)) + " or its fencing"};
  const auto& end = m.end;
  if (s.departure_at_us && *s.departure_at_us >= s.fault_us) {
    phases.push_back({"fencing", s.fault_us, *s.departure_at_us,
                      s.departure ? toString(*s.departure) : "", s.departure_resolution_us});
    // A follower's fence is its handover: no phase between the two.
    if (end && end->at_us > *s.departure_at_us) {
      phases.push_back({"handover", *s.departure_at_us, end->at_us, end->kind, end->resolution_us});
    }
  } else if (end) {
    phases.push_back({"handover", s.fault_us, end->at_us, end->kind, end->resolution_us});
  }
  return m;
}

MechanismEnd mechanismEnd(Mechanism mechanism, const MechanismScope& s,
                          const std::vector<storage::Event>& events,
                          std::vector<MechanismPhase>& phases) {
  MechanismEnd m;
  auto& end = m.end;
  switch (mechanism) {
    case Mechanism::kNone:
    case Mechanism::kSharedRequest:  // never a gray fault's expectation: shared_request.h
      break;
    case Mechanism::kSessionTimeout:
      return sessionTimeoutEnd(s, events, phases);
    case Mechanism::kClientTimeout:
      m.wanted = toString(EventKind::kClientRequestTimeout);
      end = first(events, s, [&](const storage::Event& e) {
        // The producer's: the acks wait on it, not on the consumer's fetches. The Java client logs
        // no request timeout; its producer's move of this partition off the target, which it makes
        // only once the request to the target gave up, stands for it.
        if (isEvent(e, EventSource::kClient, EventKind::kClientLeaderUpdate) &&
            e.detail.find("\"via\":\"java\"") != std::string::npos) {
          return isPartition(e, s) && e.broker && *e.broker != s.target;
        }
        return isEvent(e, EventSource::kClient, EventKind::kClientRequestTimeout) && e.broker &&
               *e.broker == s.target && e.detail.find("\"producer\"") != std::string::npos;
      });
      if (end) phases.push_back(fromFault("client_timeout", s, *end));
      break;
    case Mechanism::kStaleLeader:
      m.wanted = toString(EventKind::kClientLeaderUpdate);
      end = first(events, s, [&](const storage::Event& e) {
        // The producer's own move to a leader other than the target.
        return isPartition(e, s) &&
               isEvent(e, EventSource::kClient, EventKind::kClientLeaderUpdate) && e.broker &&
               *e.broker != s.target && e.detail.find("\"producer\"") != std::string::npos;
      });
      if (end) phases.push_back(fromFault("stale_leader", s, *end));
      break;
    case Mechanism::kIsrShrink:
      m.wanted = toString(EventKind::kIsrShrink);
      end = first(events, s, [&](const storage::Event& e) {
        // The first of the leader's own log line (its millisecond, when kfaild can read it) and the
        // metadata: another broker may serve the new ISR before the controller's answer reaches the
        // leader and it logs `ISR updated`.
        if (!isPartition(e, s) || (!isEvent(e, EventSource::kMetadata, EventKind::kIsrShrink) &&
                                   !isEvent(e, EventSource::kBrokerLog, EventKind::kIsrShrink))) {
          return false;
        }
        // A follower leaves the ISR; a leader cut from the brokers drops its followers.
        return leads(s.role) ? !(e.broker && *e.broker == s.target)
                             : (e.broker && *e.broker == s.target);
      });
      if (end) phases.push_back(fromFault("isr_shrink", s, *end));
      break;
    case Mechanism::kHeal:
      m.wanted = "heal";
      if (s.healed_us && *s.healed_us >= s.fault_us) {
        const auto uncertainty = std::max(s.healed_uncertainty_us, kLogResolutionUs);
        end = Found{*s.healed_us, "heal", uncertainty};
        phases.push_back({"heal", s.fault_us, end->at_us, "heal", uncertainty});
      }
      break;
    case Mechanism::kNodeBack:
      m.wanted = toString(EventKind::kBrokerBack);
      end = first(events, s, [&](const storage::Event& e) {
        return isEvent(e, EventSource::kMetadata, EventKind::kBrokerBack) && e.broker &&
               *e.broker == s.target;
      });
      if (!end && s.recovered_us) end = Found{*s.recovered_us, "recovered", s.metadata_interval_us};
      if (end) phases.push_back(fromFault("node_back", s, *end));
      break;
  }
  return m;
}

}  // namespace

MechanismResult explainStall(const Expectation& expected, const MechanismScope& s,
                             const std::optional<std::pair<std::int64_t, std::int64_t>>& stall,
                             const std::vector<storage::Event>& events) {
  MechanismResult r;
  r.mechanism = expected.mechanism;
  r.setting = expected.setting;
  r.expected_us = expected.expected_us;

  // The event that should end the stall, and the steps before it.
  const auto [end, wanted] = mechanismEnd(expected.mechanism, s, events, r.phases);
  if (!stall) {
    const bool bites = expected.mechanism == Mechanism::kSessionTimeout ||
                       expected.mechanism == Mechanism::kClientTimeout ||
                       expected.mechanism == Mechanism::kIsrShrink ||
                       expected.mechanism == Mechanism::kHeal;
    if (bites && !end) {
      r.took_effect = false;
      r.reason = "the fault did not take effect: no " + wanted;
    }
    return r;
  }
  const auto [start_us, end_us] = *stall;
  if (expected.mechanism == Mechanism::kNone) {
    r.reason = "the fault should not stall this partition, yet it stalled " +
               seconds(end_us - start_us) + ": no mechanism explains it";
    return r;
  }
  if (!end || end->at_us > end_us + end->resolution_us) {
    r.reason = "the stall ended at " + seconds(end_us - s.fault_us) + " after the fault without " +
               wanted + (end ? " (it came at " + seconds(end->at_us - s.fault_us) + ")" : "") +
               ", which " + toString(expected.mechanism) + " needs: it does not measure " +
               (expected.setting.empty() ? "the mechanism" : expected.setting);
    return r;
  }
  // After a heal of vanished packets, TCP retransmits on a timer that doubled while they
  // vanished: the connection comes back within the fault's length again after the heal.
  const auto heal_window = s.drop && s.healed_us ? std::clamp(*s.healed_us - s.fault_us,
                                                              kResumeWindowUs, kHealCreditCapUs)
                                                 : kResumeWindowUs;
  const auto window = expected.mechanism == Mechanism::kHeal ? heal_window : kResumeWindowUs;
  if (end_us > end->at_us + window) {
    r.reason = "the stall ended at " + seconds(end_us - s.fault_us) + " after the fault, " +
               seconds(end_us - end->at_us) + " after " + wanted + " (at " +
               seconds(end->at_us - s.fault_us) + "): more than " + seconds(window) +
               " later, so " + wanted + " did not end it";
    if (s.healed_us && end_us >= *s.healed_us && end_us <= *s.healed_us + heal_window) {
      r.reason += "; it ended " + seconds(end_us - *s.healed_us) + " after the heal";
    }
    r.reason += ": it does not measure " +
                (expected.setting.empty() ? std::string("the mechanism") : expected.setting);
    return r;
  }
  r.explained = true;
  r.ended_by = end->kind;
  r.phases.push_back({expected.mechanism == Mechanism::kHeal ? "reconnect" : "resume",
                      std::min(end->at_us, end_us), end_us, "ack", end->resolution_us});
  return r;
}

nlohmann::json toJson(const MechanismResult& r) {
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& p : r.phases) {
    phases.push_back({{"name", p.name},
                      {"start_us", p.start_us},
                      {"end_us", p.end_us},
                      {"duration_us", p.duration_us()},
                      {"ended_by", p.ended_by},
                      {"resolution_us", p.resolution_us}});
  }
  nlohmann::json out = {
      {"name", toString(r.mechanism)},
      {"setting", r.setting.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.setting)},
      {"expected_us", r.expected_us},
      {"phases", phases},
      {"explained", r.explained},
      {"ended_by", r.ended_by.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.ended_by)},
      {"reason", r.reason}};
  if (r.waited_on) {
    out["waited_on"] = {{"topic", r.waited_on->topic}, {"partition", r.waited_on->partition}};
    out["cluster_stall_us"] =
        r.cluster_stall_us ? nlohmann::json(*r.cluster_stall_us) : nlohmann::json(nullptr);
    out["client_stall_us"] = r.client_stall_us;
  }
  return out;
}

}  // namespace kfaild::analysis
