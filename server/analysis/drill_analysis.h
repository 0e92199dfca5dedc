#pragma once

// The analysis of one drill run, from what was recorded: per probe partition and per kind (ack,
// receive) the stall — the longest interval between consecutive acks (receives) that ends after
// the fault and starts before the end of observation — and the longest interval elsewhere in the
// run's window (baseline noise); the partition's role for the target at the fault; failed sends;
// lost, duplicated, reordered messages; and the phases of the stall where events show them:
//   detection   fault → the target is fenced (session timeout) — absent on a controlled shutdown
//   election    fenced / shut down → the partition's new leader (or ISR without the target)
//   discovery   new leader → the producer applies it (client log)
//   resume      → the first ack after the stall
// Pure: everything comes in through AnalysisInput. Times are wall-clock µs.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "storage/records.h"

namespace kfaild::analysis {

enum class Role { kLeader, kFollowerInIsr, kFollowerOutOfIsr, kNotAReplica };
const char* toString(Role role);

struct PartitionAtFault {
  std::string topic;
  std::int32_t partition = 0;
  std::int32_t leader = -1;
  std::vector<std::int32_t> replicas;
  std::vector<std::int32_t> isr;
};

Role roleOf(std::int32_t target, const PartitionAtFault& p);

struct AnalysisInput {
  std::string fault;           // kill | stop | pause | restart
  std::int32_t target = -1;
  std::int64_t fault_us = 0;         // best fault time (injector's own where it had one)
  std::int64_t window_start_us = 0;  // baseline start
  std::int64_t observe_end_us = 0;   // end of observation (before recovery)
  std::int64_t interval_us = 20'000;
  std::vector<PartitionAtFault> partitions;
  std::vector<storage::ProbeSample> samples;  // sent within [window_start, observe_end]
  std::vector<storage::Event> events;         // within [window_start, observe_end + settle]
};

struct Interval {
  std::int64_t start_us = 0;
  std::int64_t end_us = 0;
  // Still open when observation ended: no ack (receive) since start_us, so end_us is the end of
  // observation and the duration a lower bound (a partition that stays offline, for instance
  // with its only replica stopped).
  bool open = false;
  std::int64_t duration_us() const { return end_us - start_us; }
};

struct KindResult {
  std::optional<Interval> stall;     // none when no interval spans the fault
  std::optional<Interval> baseline;  // longest interval elsewhere in the window
  std::int64_t count = 0;            // acks (receives) in the window
};

struct Phases {
  std::optional<std::int64_t> detection_us;
  std::optional<std::int64_t> election_us;
  std::optional<std::int64_t> discovery_us;
  std::optional<std::int64_t> resume_us;
  std::optional<std::int64_t> fenced_at_us;
  std::optional<std::int64_t> new_leader_at_us;
  std::optional<std::int64_t> client_update_at_us;
  std::optional<std::int32_t> new_leader;
};

struct PartitionResult {
  std::string topic;
  std::int32_t partition = 0;
  Role role = Role::kNotAReplica;
  KindResult ack;
  KindResult receive;
  std::int64_t sent = 0;
  std::int64_t failed = 0;      // sends with a delivery error
  std::int64_t lost = 0;        // acked, never received
  std::int64_t unresolved = 0;  // sequences not yet final when analysed (still in flight)
  std::int64_t duplicated = 0;  // from the probe's anomaly events
  std::int64_t reordered = 0;
  Phases phases;
};

struct RunAnalysis {
  std::string fault;
  std::int32_t target = -1;
  std::int64_t fault_us = 0;
  std::string departure;  // "fenced" (session timeout), "controlled_shutdown", or "" when unseen
  std::optional<std::int64_t> departure_at_us;
  std::vector<PartitionResult> partitions;
};

RunAnalysis analyse(const AnalysisInput& input);

nlohmann::json toJson(const RunAnalysis& analysis);

}  // namespace kfaild::analysis
