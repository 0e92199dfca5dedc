#pragma once

// What bounds a partition's stall under a gray fault (issue 26), and whether the recorded events
// show that bound at work. Pure; times are kfaild's wall clock (µs), as in drill_analysis.h.
//
// Mechanisms (the setting that governs each, its expected stall):
//   session_timeout  the target is fenced by the controller (broker.session.timeout.ms), then
//                    the partition is handed over: a new leader (leader_change /
//                    leader_epoch_start) or an ISR without the target (isr_shrink). The
//                    partitions a broker isolated from the quorum follows; a broker isolated
//                    from everyone with `reject`; a disk_full broker (it shuts down, as a kill).
//   client_timeout   the producer waits on a blackholed leader until its own request times out
//                    (the client's `client_request_timeout` event), and cannot go elsewhere
//                    before the fencing: max(session timeout, min(socket.timeout.ms,
//                    message.timeout.ms)). request.timeout.ms does not count: only the broker
//                    enforces it, and a blackholed broker answers nothing (librdkafka times a
//                    ProduceRequest out after the lesser of the other two; on the lab a 45 s
//                    isolation showed no client timeout at 30 s). A leader isolated from
//                    everyone with `drop`.
//   stale_leader     a leader cut from the quorum is fenced and replaced, yet it still takes
//                    its clients' produce requests, which it can never complete (its followers
//                    fetch from the new leader): each waits for the request's own timeout, then
//                    the producer refreshes its metadata and finds the new leader (its
//                    `client_leader_update`): max(session timeout, request.timeout.ms). A leader
//                    isolated from the quorum only.
//   isr_shrink       the leader waits for a replica that stopped fetching until it drops it from
//                    the ISR (replica.lag.time.max.ms), seen in the leader's logs (source
//                    broker_log, fault::isrShrinkEvents) or, later, in the metadata. A
//                    broker isolated from the other brokers (for the partitions it leads, only
//                    when min.insync.replicas is 1: else its ISR shrinks to itself alone and
//                    writes fail until the heal); a throttled follower.
//   heal             nothing but the fault's end ends it: the clients reconnect after the heal
//                    (duration_s). A leader isolated from the clients only; a throttled leader;
//                    a leader isolated from the brokers whose ISR alone is below
//                    min.insync.replicas; any mechanism whose expected bound is longer than the
//                    fault itself. After `drop` the reconnect waits for TCP's next
//                    retransmission, whose backoff doubles while packets vanish: up to the
//                    fault's length again after the heal (a 20 s isolation resumed 6.5 s after
//                    its heal on the lab).
//   node_back        the partition has no other replica to go to (sole replica, below
//                    min.insync.replicas) after disk_full: it resumes once the node is back.
//   none             the fault does not touch this partition's writes (a follower isolated from
//                    clients only, a partition the target does not replicate).
//   shared_request   (any fault, not only gray ones: shared_request.h) a partition the target
//                    does not replicate stalled because its batches waited in the producer's
//                    requests to its leader behind a partition the target follows.
//
// A stall is explained when its mechanism's event comes after the fault and no later than the
// ack that ended the stall (within the event source's resolution). A stall that is not is
// reported inconclusive by the analysis, with the reason: the figure is real, but what bounded
// it is not what the fault should have done, so it does not measure that mechanism. Neither a
// stall nor the mechanism's event (session_timeout, client_timeout, isr_shrink, heal) means the
// fault did not take effect: that partition is inconclusive too ("the fault did not take effect:
// no <event>"), never a pass.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/common/event_types.h"
#include "storage/records.h"

namespace kfaild::analysis {

struct GrayFaultInput;
using Role = common::PartitionRole;

using Mechanism = common::Mechanism;  // spelled by common::toString

// The broker and client settings in force that the mechanisms depend on. Defaults: Kafka's
// broker.session.timeout.ms and replica.lag.time.max.ms, librdkafka's producer
// request.timeout.ms, socket.timeout.ms and message.timeout.ms.
struct MechanismSettings {
  std::int64_t session_timeout_us = 9'000'000;
  std::int64_t replica_lag_time_max_us = 30'000'000;
  std::int64_t request_timeout_us = 30'000'000;   // the broker holds a produce request this long
  std::int64_t socket_timeout_us = 60'000'000;    // librdkafka gives up on a request after this
  std::int64_t message_timeout_us = 300'000'000;  // ... or the batch's remaining message timeout
  // librdkafka retries a send until message.timeout.ms, so a failed send is an error an
  // application would see; kfaild's wire client (probe.client wire) does not retry, and every
  // send during a stall fails at once, the next tick being the retry.
  bool sends_retried = true;
  // The Java client (probe.client java) gives up on a request at its request.timeout.ms, which
  // then stands where librdkafka's socket.timeout.ms does (socket_timeout_us), and it logs no
  // request timeout: its own discovery of the new leader afterwards ends the stall.
  bool java_client = false;
};

// `settings` with the probe's client settings applied ("request.timeout.ms", "socket.timeout.ms",
// "message.timeout.ms" as the run outcome's probe_client lists them; "probe.client" wire: sends not
// retried; java: its client's "java.request.timeout.ms" (30 s unless set) as the client timeout and
// "java.delivery.timeout.ms" as the message timeout); values that are not whole milliseconds are
// ignored.
MechanismSettings withClientSettings(MechanismSettings settings,
                                     const std::map<std::string, std::string>& client);

// What a fault should do to a partition of `role` (its role for the gray fault, see
// grayRole in drill_analysis.h): the mechanism, the setting it comes from, the expected stall.
struct Expectation {
  Mechanism mechanism = Mechanism::kNone;
  std::string setting;  // "broker.session.timeout.ms", ..., "duration_s"; empty for none
  std::int64_t expected_us = 0;
};
// `alone_below_min_isr`: the ISR the partition would shrink to, the target alone, is below its
// min.insync.replicas (a leader cut from its followers then fails acks=all writes until the heal).
Expectation expectationFor(const GrayFaultInput& fault, Role role, const MechanismSettings& s,
                           bool alone_below_min_isr = false);

// One step of the stall: from start_us to end_us, ended by the event `ended_by` ("fenced",
// "leader_change", "client_request_timeout", "isr_shrink", "heal", "broker_back", "ack", ...).
struct MechanismPhase {
  std::string name;  // fencing | handover | client_timeout | stale_leader | isr_shrink | heal |
                     // node_back | resume
  std::int64_t start_us = 0;
  std::int64_t end_us = 0;
  std::string ended_by;
  std::int64_t resolution_us = 0;  // ± from the sources of its bounds
  std::int64_t duration_us() const { return end_us - start_us; }
};

struct MechanismResult {
  Mechanism mechanism = Mechanism::kNone;
  std::string setting;
  std::int64_t expected_us = 0;
  std::vector<MechanismPhase> phases;
  // The stall ended with (after) the mechanism's event; false when there is no stall too.
  bool explained = false;
  std::string ended_by;  // the mechanism's event that ended the stall, when explained
  // Why not explained, when there is a stall; without one, why the fault did not take effect.
  std::string reason;
  // False when the mechanism is one a fault that bites always shows (session_timeout,
  // client_timeout, isr_shrink, heal) and neither a stall nor its event was seen: the rules never
  // reached the broker (another namespace, a fill that did not fill), so the partition's "no
  // stall" measures nothing.
  bool took_effect = true;
  // shared_request only (shared_request.h): the partition whose stall this one's waited on; the
  // partition's own stall as the cluster saw it (0 when its leader and ISR never changed in the
  // window; unset when they did, and it is not known); the stall the client measured.
  struct PartitionRef {
    std::string topic;
    std::int32_t partition = 0;
  };
  std::optional<PartitionRef> waited_on;
  std::optional<std::int64_t> cluster_stall_us;
  std::int64_t client_stall_us = 0;
};

// What one partition's ack stall (`stall`: closed, or nullopt when there is none) shows of
// `expected`. `departure`/`departure_at_us` as RunAnalysis has them.
struct MechanismScope {
  std::string topic;
  std::int32_t partition = 0;
  Role role;
  std::int32_t target = -1;
  std::int64_t fault_us = 0;
  std::optional<std::int64_t> healed_us;
  std::int64_t healed_uncertainty_us =
      0;  // ± of healed_us (kfaild-gray's window, a host's clock offset)
  std::optional<std::int64_t> recovered_us;
  std::optional<common::Departure> departure;
  std::optional<std::int64_t> departure_at_us;
  std::int64_t departure_resolution_us = 1'000;
  bool drop = false;  // the fault made packets vanish (isolate with mode drop)
  std::int64_t metadata_interval_us = 100'000;
};
MechanismResult explainStall(const Expectation& expected, const MechanismScope& scope,
                             const std::optional<std::pair<std::int64_t, std::int64_t>>& stall,
                             const std::vector<storage::Event>& events);

nlohmann::json toJson(const MechanismResult& result);

}  // namespace kfaild::analysis
