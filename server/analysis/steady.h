#pragma once

// The steady-state check: whether, over the last window, every probe partition was acked and
// read within the cluster's objectives, so that a chaos tool or a rollout can ask kfaild "is
// the cluster steady?" before and after what it does (GET /api/v1/clusters/{c}/steady).
//
// Steady means that none of these fails:
//   probe            the probe is probing, has probed for at least the window (before that,
//                    nothing is known of the window's start), and every probe partition has
//                    been acked and read back at least once;
//   metadata         the cluster answered the last metadata poll;
//   offline          every probe partition is in the last metadata answer and has a leader;
//   under_min_insync every probe partition's ISR holds at least its topic's
//                    min.insync.replicas (an acks=all write needs them);
//   ack_stall        no ack stall above max_ack_stall_s: neither one going on now (the time
//                    since the partition's last ack) nor a gap that ended inside the window;
//   receive_stall    the same for receipts, against max_receive_stall_s;
//   lost             no more messages given up on as lost inside the window than max_lost.
// The stall bounds are the objectives' top-level keys (the "any role, any fault" limits): a
// steady state has no fault and so no role; a key the objectives leave unset is not checked.
// max_lost unset counts as 0: a steady cluster loses nothing.
//
// Every failure names its check, its partition (none for probe-wide and cluster-wide ones),
// what was observed and the bound, in seconds for stalls and the window, in counts for lost
// messages and replicas. Failures come in the order of the list above, then by topic and
// partition.
//
// Pure: the caller gathers the inputs (the probe's state now, the last metadata answer, the gaps
// and losses the store holds for the window). A gap is stored when it ends, by a writer thread
// that commits in batches: a stall that ended in the last moments may be missing from `gaps`,
// and was, until it ended, the stall going on.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server/analysis/objectives.h"
#include "storage/records.h"

namespace kfaild::analysis {

inline constexpr std::int64_t kSteadyDefaultWindowS = 30;
inline constexpr std::int64_t kSteadyMinWindowS = 1;
inline constexpr std::int64_t kSteadyMaxWindowS = 3600;

enum class SteadyCheck {
  kProbe,
  kMetadata,
  kOffline,
  kUnderMinIsr,
  kAckStall,
  kReceiveStall,
  kLost,
};
// "probe", "metadata", "offline", "under_min_insync", "ack_stall", "receive_stall", "lost".
const char* toString(SteadyCheck check);

// A probe partition as the last metadata answer describes it.
struct SteadyReplicas {
  std::int32_t leader = -1;  // -1: no leader
  std::vector<std::int32_t> replicas;
  std::vector<std::int32_t> isr;
};

// A probe partition now.
struct SteadyPartition {
  std::string topic;
  std::int32_t partition = 0;
  std::optional<std::int64_t> ack_age_us;      // since its last ack; none before the first
  std::optional<std::int64_t> receive_age_us;  // since its last receipt; none before the first
  std::optional<SteadyReplicas> metadata;      // none: not in the last metadata answer
};

struct SteadyInput {
  std::int64_t window_us = kSteadyDefaultWindowS * 1'000'000;
  std::int64_t now_us = 0;  // wall clock: the window is [now_us - window_us, now_us]
  // The probe: whether it is probing, else what it is doing ("setting_up: topic missing"), and
  // how long it has probed (its ticks, sent or skipped, times its interval).
  bool probing = false;
  std::string probe_state;
  std::int64_t probing_for_us = 0;
  // Why the cluster's metadata is not known now; none when the last poll answered.
  std::optional<std::string> metadata_problem;
  std::vector<SteadyPartition> partitions;
  // min.insync.replicas per topic; a topic not named here has Kafka's default, 1.
  std::map<std::string, std::int32_t> min_insync;
  // The cluster's gaps that ended inside the window (others, and other partitions', are ignored).
  std::vector<storage::Gap> gaps;
  // Messages given up on as lost inside the window, per (topic, partition).
  std::map<std::pair<std::string, std::int32_t>, std::int64_t> lost;
  Objectives objectives = defaultObjectives();
};

struct SteadyFailure {
  SteadyCheck check = SteadyCheck::kProbe;
  std::optional<std::string> topic;
  std::optional<std::int32_t> partition;
  std::optional<double> observed;  // seconds (stalls, probe time) or a count (lost, ISR)
  std::optional<double> bound;
  std::string objective;  // the key the bound comes from ("max_ack_stall_s"); empty: none
  std::string reason;     // one sentence an operator can act on
};

// The bounds the check applied; none where the objectives leave a key unset.
struct SteadyBounds {
  std::optional<double> max_ack_stall_s;
  std::optional<double> max_receive_stall_s;
  std::int64_t max_lost = 0;
};

struct SteadyResult {
  bool steady = false;
  std::vector<SteadyFailure> failures;
  SteadyBounds bounds;
};

SteadyBounds steadyBounds(const Objectives& objectives);
SteadyResult checkSteady(const SteadyInput& in);

}  // namespace kfaild::analysis
