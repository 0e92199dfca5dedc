#pragma once

// The analysis of one drill run, from what was recorded. Pure: everything comes in through
// AnalysisInput; times are kfaild's timebase (common::Clock: wall-clock µs derived from the
// monotonic clock, so durations between them are monotonic durations).
//
// Per probe partition and per kind (ack, receive):
//   candidate  the longest interval between consecutive acks (receives) that ends after the fault
//              and starts before the end of the partition's observation (observe_end_us; for a
//              sole replica window_end_us, since it can only resume once the node is back). An
//              interval with no ack since its start at the end of the observation is "open".
//   noise      the kNoisePercentile-th percentile (nearest rank, see noiseRank) of the intervals
//              between consecutive acks (receives) of the baseline: those in [window_start_us,
//              fault_us], of non-zero length. Gaps after the fault are never noise (a second
//              outage, or a split one, is part of what is measured), and one hiccup in the
//              baseline does not set the noise once there are 100 or more baseline gaps.
//   outcome    stall         the candidate is significant (see kSignificance* below), closed (the
//                            ack/receive that ended it is named in ended_by) and the probe was
//                            able to measure it (it was neither idle during it nor lagging at the
//                            fault). Only then is `stall` set.
//              none          the candidate is not significant: it is reported as `longest_gap`,
//                            `stall` is null.
//              inconclusive  the candidate is open, or the probe was idle during it (nothing
//                            outstanding that the cluster could have acked: kfaild's fault, not
//                            the cluster's), or lagging at the fault, or the noise is unknown
//                            (fewer than kMinNoiseIntervals baseline intervals).
//                            `reason` says which; `stall` is null.
// Per partition: the role of the target at the fault; sends failed, lost, duplicated, reordered;
// what is still unresolved (no fate yet: pending in the probe, or a sequence number missing); and
// the phases of the stall where events show them:
//   detection   fault → the target is fenced (session timeout) — absent on a controlled shutdown
//   election    fenced / shut down → the partition's new leader (or ISR without the target)
//   discovery   new leader → the producer applies it (client log)
//   resume      → the first ack after the stall
//   node_back   (sole replica) fault → the node is back: registered again (the metadata's
//               broker_back), else recovered_us
//   resume      (sole replica) node back → the ack that ended the stall
// Each phase has a resolution (±): the source of its bounds (metadata poll interval, 1 ms for
// log lines), plus the fault time's uncertainty for the phases that start at the fault
// (detection, node_back). A phase is never negative: one measured below its resolution (the
// events' order within their resolution can even be reversed) is reported as max(measured, 0)
// and named in below_resolution: it is "≤ its resolution". A phase that starts at the fault
// and is shorter than the fault time's uncertainty is named in `inconclusive` with the reason.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/analysis/gray_mechanism.h"
#include "server/common/event_types.h"
#include "storage/records.h"

namespace kfaild::analysis {

// A candidate is significant when it is at least kSignificanceFactor × the noise and at least
// the noise plus kSignificanceIntervals probe intervals.
inline constexpr std::int64_t kSignificanceFactor = 2;
inline constexpr std::int64_t kSignificanceIntervals = 2;
// Fewer baseline intervals than this: the noise is unknown.
inline constexpr std::int64_t kMinNoiseIntervals = 10;
// The noise is this percentile of the baseline's gaps.
inline constexpr std::int64_t kNoisePercentile = 99;
// The rank (from 1, in ascending order of duration) of the gap that is the noise among `gaps`
// baseline gaps (≥ 1): ceil(kNoisePercentile / 100 × gaps). 250 gaps (5 s at 20 ms) → 248: the
// two longest are left out; fewer than 100 gaps → the longest.
std::int64_t noiseRank(std::int64_t gaps);
// Idle time inside a candidate that is tolerated (the probe's own spacing), in probe intervals.
inline constexpr std::int64_t kIdleToleranceIntervals = 2;
// The probe lagged at the fault when its oldest outstanding message was older than this, or it
// was holding back sends.
inline constexpr std::int64_t kLagAtFaultUs = 1'000'000;

// The target's role in a partition; the last four: what a gray fault (isolate, throttle) means for
// a partition the target leads or follows in its ISR (grayRole). Spelled by common::toString.
using Role = common::PartitionRole;

struct PartitionAtFault {
  std::string topic;
  std::int32_t partition = 0;
  std::int32_t leader = -1;
  std::vector<std::int32_t> replicas;
  std::vector<std::int32_t> isr;
  std::int32_t min_insync = 0;  // the topic's min.insync.replicas; 0 when unknown
};

// kSoleReplica when the target is the only in-sync replica (the partition is offline until the
// node is back), kBelowMinIsr when the ISR without it is below min.insync.replicas (acks=all
// writes fail until it is back: observed like an offline partition), kLeader when it leads, then
// follower in / out of ISR, else not a replica.
Role roleOf(std::int32_t target, const PartitionAtFault& p);

// The role under `fault` (isolate, throttle; kill, stop, ...: `role` as it is): a leader and an
// in-sync follower become isolated_* / throttled_*. disk_full shuts the broker down, as a kill,
// so its roles are a kill's.
Role grayRole(Role role, common::GrayFault fault);
// The role as roleOf has it (isolated_leader → leader, throttled_follower → follower).
Role baseRole(Role role);

// What the probe looked like for one partition just before the fault.
struct ProbeAtFault {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t outstanding = 0;                // sent, no delivery report yet
  std::int64_t oldest_outstanding_age_us = 0;  // 0 when nothing is outstanding
  bool holding = false;                        // sends held back at that moment
  std::int64_t held_ticks = 0;                 // ticks held back since the probe started
};

// A stretch during which the probe held back its sends to a partition (its bound on outstanding
// messages was reached). Messages were outstanding throughout, so the cluster could still end a
// gap: a hold does not make a gap the probe's. Open when end_us is unset.
struct ProbeHold {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t start_us = 0;
  std::optional<std::int64_t> end_us;
  std::int64_t ticks = 0;
  std::string reason;  // "outstanding_count" | "outstanding_age"
};

// A stretch during which nothing was outstanding for the cluster to ack (kind ack) or to deliver
// to the consumer (kind receive): a gap that overlaps it is (partly) the probe's own.
struct ProbeIdle {
  std::string topic;
  std::int32_t partition = 0;
  storage::GapKind kind = storage::GapKind::kAck;
  std::int64_t start_us = 0;
  std::int64_t end_us = 0;
};

// A stretch during which the client refused every send to a partition locally (its queue full,
// the producer in a fatal state): the cluster was never asked, so a gap that overlaps it is
// (partly) the probe's own, for acks and receives alike. Open when end_us is unset.
struct ProbeRefusal {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t start_us = 0;
  std::optional<std::int64_t> end_us;
  std::int64_t sends = 0;
  std::string error;  // the client's error name, e.g. "_QUEUE_FULL", "_FATAL"
};

// The probe's own cause of a gap (source probe). Kind producer_recreated: it recreated its
// producer after a fatal error; every message of the old producer failed, and the new one starts
// with a new epoch. A gap that spans it is the probe's, not the cluster's. Kind
// "consumer_restarted" (one partition's receive gaps only): it restarted its consumer's fetch of a
// partition whose acked messages the consumer had not read for probe.consumer_restart_ms; a
// receive gap that spans the restart is the consumer's. Kind "consumer_recreated" (every
// partition's receive gaps): a restart by a new consumer, whose reading of every partition
// started over.
struct ProbeCause {
  std::int64_t at_us = 0;
  std::string error;  // the fatal error, as librdkafka stated it
  common::EventKind kind = common::EventKind::kProducerRecreated;
  std::int64_t waited_us =
      0;  // consumer_restarted: how long the oldest unread message had been acked
};

// A gray fault (issue 26) as the analysis needs it: what was done to the target and when it was
// healed. The engine fills it for isolate, throttle and disk_full; absent for kill, stop, pause
// and restart. Times are kfaild's wall clock (µs).
struct GrayFaultInput {
  common::GrayFault kind = common::GrayFault::kIsolate;
  std::string from;                   // isolate: quorum | brokers | clients | all; else empty
  std::string mode;                   // isolate: drop | reject; else empty
  std::int64_t bytes_per_second = 0;  // throttle's rate; 0 otherwise
  std::int64_t duration_us = 0;       // how long the fault was meant to stay in force
  std::optional<std::int64_t>
      healed_us;  // when kfaild healed it (nullopt: never healed in the window)
  std::int64_t healed_uncertainty_us = 0;  // ± of healed_us
};

struct AnalysisInput {
  std::string fault;  // kill | stop | pause | restart | isolate | throttle | disk_full
  // The node was SIGKILLed (a kill, or a restart with options.kill): without a broker log it never
  // left in a controlled shutdown.
  bool killed = false;
  std::optional<GrayFaultInput> gray;  // set for isolate, throttle and disk_full
  // The settings the gray mechanisms depend on (the cluster's, the probe's client settings:
  // withClientSettings); used only with `gray`.
  MechanismSettings settings;
  std::int32_t target = -1;
  std::int64_t fault_us = 0;      // best fault time (injector's own where it had one)
  std::string fault_time_source;  // where fault_us comes from (fault::FaultRecord's spelling)
  std::int64_t fault_time_uncertainty_us = 0;  // ± of fault_us on kfaild's clock
  std::int64_t window_start_us = 0;            // baseline start
  // The baseline's end, when it is not the fault: a compound drill's analysis of its second fault
  // takes the noise from before the first.
  std::optional<std::int64_t> baseline_end_us;
  std::int64_t observe_end_us = 0;  // observation of the partitions that recover without the node
  std::optional<std::int64_t> recovered_us;  // the node was back (registered, in its ISRs)
  std::int64_t window_end_us = 0;  // end of the run's window (≥ observe_end_us); sole replicas
                                   // are observed until here
  std::int64_t interval_us = 20'000;
  std::int64_t metadata_interval_us = 100'000;  // resolution of phases taken from metadata events
  std::vector<PartitionAtFault> partitions;
  std::vector<storage::ProbeSample> samples;  // stored (final) samples sent in the window
  // Messages sent in the window whose fate was still open when analysed (from the probe's
  // ledger): no delivery report yet, or acked and not yet received. Not counted as lost.
  std::vector<storage::ProbeSample> pending;
  std::vector<ProbeAtFault> probe_at_fault;
  std::vector<ProbeHold> holds;
  std::vector<ProbeIdle> idles;
  std::vector<ProbeRefusal> refusals;
  std::vector<storage::Event> events;  // within [window_start - 1 s, window_end + 5 s]
  // The observation ended on its timeout (observe_timeout_s) rather than on the partitions'
  // resumption; offline_timed_out the same for the offline partitions' observation after the
  // node was back. An ack (receive) after such an end came after kfaild brought the node back
  // itself: it does not close a gap, which stays open (inconclusive).
  bool observe_timed_out = false;
  // The observation was cut at observe_end_us by something other than its timeout (a compound
  // drill's first fault, analysed up to its second: "the second fault"): a gap still open then is
  // cut there and inconclusive, its reason naming this.
  std::optional<std::string> cut_by;
  bool offline_timed_out = false;
  // How often kfaild's wall clock stepped during the window (common::Clock::steps): times on
  // either side of a step do not line up, so every outcome of the run is inconclusive.
  std::uint64_t clock_steps = 0;
};

struct Interval {
  std::int64_t start_us = 0;
  std::int64_t end_us = 0;
  // No ack (receive) since start_us when observation ended: end_us is the end of observation.
  bool open = false;
  std::int64_t duration_us() const { return end_us - start_us; }
};

using Outcome = common::Outcome;  // spelled by common::toString

struct EndedBy {
  std::int64_t seq = 0;  // the message whose ack (receive) ended the candidate
  std::int64_t at_us = 0;
};

struct KindResult {
  Outcome outcome = Outcome::kInconclusive;
  std::optional<Interval> stall;        // only when outcome == kStall
  std::optional<Interval> longest_gap;  // the candidate, whatever the outcome
  std::optional<Interval> baseline;     // the noise: the baseline gap at the noise's rank
  std::int64_t noise_gaps = 0;          // baseline gaps the noise is taken over
  std::optional<EndedBy> ended_by;      // unset when the candidate is open or absent
  std::string reason;                   // why none / inconclusive, in words
  std::int64_t held_ticks = 0;          // ticks held back during the candidate
  std::int64_t probe_idle_us = 0;       // idle time of this kind inside the candidate
  // The part of it up to the send of the message that ended the candidate (all of it when the
  // candidate is open): the only idle time that can have lengthened it. Above two probe intervals
  // it makes a significant candidate inconclusive.
  std::int64_t probe_idle_at_end_us = 0;
  std::int64_t probe_refused_us = 0;  // time inside the candidate the client refused sends
  // The probe's own cause of the candidate (its producer was recreated during it): the outcome
  // is then inconclusive and the figure is not the cluster's.
  std::optional<ProbeCause> probe_cause;
  std::int64_t count = 0;  // acks (receives) in the window
};

struct Phases {
  std::optional<std::int64_t> detection_us;
  std::optional<std::int64_t> election_us;
  std::optional<std::int64_t> discovery_us;
  std::optional<std::int64_t> resume_us;
  std::optional<std::int64_t> node_back_us;  // sole replica: fault → node back
  std::optional<std::int64_t> fenced_at_us;
  std::optional<std::int64_t> new_leader_at_us;
  std::optional<std::int64_t> client_update_at_us;
  std::optional<std::int32_t> new_leader;
  // The resolution of each phase: ± this much, from the source of the events bounding it
  // (metadata: the poll interval; broker and client logs: 1 ms). Unset when the phase is.
  std::optional<std::int64_t> detection_resolution_us;
  std::optional<std::int64_t> election_resolution_us;
  std::optional<std::int64_t> discovery_resolution_us;
  std::optional<std::int64_t> resume_resolution_us;
  std::optional<std::int64_t> node_back_resolution_us;
  // Phases ("detection", "election", "discovery", "resume", "node_back") measured below their
  // resolution: their value is max(measured, 0) and reads "≤ resolution".
  std::vector<std::string> below_resolution;
  // Phases that cannot be told from the fault time's uncertainty: phase → reason.
  std::map<std::string, std::string> inconclusive;
};

struct PartitionResult {
  std::string topic;
  std::int32_t partition = 0;
  Role role = Role::kNotAReplica;
  KindResult ack;
  KindResult receive;
  std::int64_t sent = 0;    // samples + pending
  std::int64_t failed = 0;  // sends with a delivery error (timeouts included)
  std::int64_t lost = 0;    // acked, given up on by the probe (never received)
  // Of `lost`, those acked before the probe restarted its consumer's reading of the partition
  // (probe/consumer_restarted or consumer_recreated at or after the ack): the consumer read
  // nothing then, so whether the cluster lost them is not known.
  std::int64_t lost_consumer_stuck = 0;
  std::int64_t unresolved = 0;        // awaiting_ack + awaiting_receive + missing
  std::int64_t awaiting_ack = 0;      // pending, no delivery report yet
  std::int64_t awaiting_receive = 0;  // pending, acked, not yet received
  std::int64_t missing = 0;           // sequence numbers in the window neither stored nor pending
  bool settled = false;               // unresolved == 0: the counts are final
  std::int64_t duplicated = 0;        // from the probe's anomaly events
  std::int64_t reordered = 0;
  Phases phases;
  // Gray faults: what bounds the stall (gray_mechanism.h) and the steps observed. A stall its
  // mechanism does not explain makes the ack outcome inconclusive, with the reason. Any fault:
  // shared_request for a not_a_replica partition whose stall another's explains
  // (shared_request.h). Unset otherwise.
  std::optional<MechanismResult> mechanism;
};

// A partition of the metadata at the fault that the analysis leaves out, and why: the probe
// began probing it after the window's start (a partition added to a probe topic: it has no
// baseline), or was not probing it at the fault at all. Its figures would be the probe's late
// start, not the cluster's.
struct ExcludedPartition {
  std::string topic;
  std::int32_t partition = 0;
  std::string reason;
};

struct RunAnalysis {
  std::string fault;
  std::int32_t target = -1;
  std::int64_t fault_us = 0;
  std::string fault_time_source;
  std::int64_t fault_time_uncertainty_us = 0;
  std::optional<common::Departure> departure;  // unset when unseen
  std::optional<std::int64_t> departure_at_us;
  std::optional<std::int64_t> recovered_us;
  bool settled = false;     // every partition settled
  bool conclusive = false;  // no partition's ack or receive outcome is inconclusive
  std::vector<PartitionResult> partitions;
  std::vector<ExcludedPartition> excluded;
};

RunAnalysis analyse(const AnalysisInput& input);

// The probe's own events in a window (source "probe"): holds ("held_back", detail
// {"end_us","ticks","reason"}, t_us = start) and idle stretches ("idle", detail
// {"kind":"ack"|"receive","end_us"}, t_us = start), as the probe records them.
void probeStretchesFromEvents(const std::vector<storage::Event>& events,
                              std::vector<ProbeHold>& holds, std::vector<ProbeIdle>& idles);

// The probe's refused stretches ("refused", detail {"end_us","sends","error"}, t_us = start)
// and producer recreations ("producer_recreated", detail {"error"}) in a window.
void probeRefusalsFromEvents(const std::vector<storage::Event>& events,
                             std::vector<ProbeRefusal>& refusals);
// How late a time read from the brokers' logs can be against kfaild's clock: the line's own
// millisecond, plus the largest clock uncertainty of the run's broker_log events (detail
// clock_uncertainty_us: a log on another host's clock, placed on kfaild's over ssh).
std::int64_t logResolutionUs(const std::vector<storage::Event>& events);
// The same for one event: its line's millisecond plus its own clock uncertainty.
std::int64_t logResolutionUs(const storage::Event& event);

std::vector<ProbeCause> producerRecreationsFromEvents(const std::vector<storage::Event>& events);

nlohmann::json toJson(const RunAnalysis& analysis);

}  // namespace kfaild::analysis
