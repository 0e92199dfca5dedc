#pragma once

// A stall that is the client's, not the cluster's: the shared_request mechanism, under any fault
// (kill, stop, pause, restart, isolate, throttle, disk_full). Pure; times are kfaild's wall clock
// (µs), as in drill_analysis.h.
//
// Why it happens. The probe writes every partition through one producer, and its batches for the
// partitions one broker leads travel together: the client puts every batch ready for that broker
// in one Produce request, and the broker reads a connection's next request only once it has
// answered the one before. With acks=all the leader answers a request only when every partition in
// it is done, and a partition whose ISR holds the fault's node is done when that node has fetched
// its batch or left the ISR. So a partition the node holds no replica of, led by the same broker,
// waits as long as that one: a real stall for a client that writes both through one producer, and
// none of the cluster's (a producer of its own would not wait).
//
// A partition's ack stall is named shared_request, waiting on partition W, when:
//   - the target holds none of its replicas (role not_a_replica);
//   - W had the same leader at the fault, with the target in its ISR and not its leader (acks=all
//     waited for the target), and an ack stall of its own (outcome stall: under a gray fault, one
//     its own mechanism explained);
//   - W's stall covers this one's: it ended within one probe interval + kSharedAckResolutionUs
//     of this one's end (both are answered together), and started no later than this one's start
//     plus the larger of the two partitions' noise (at least one interval) and
//     kSharedAckResolutionUs: the two last acks before the hold can be a tick and an ack's
//     latency apart, but a stall that began well before W's was not W's.
// Among several such W, the one whose end is nearest this one's (the first in the metadata's
// order on a tie). When there is none, no mechanism is claimed: the stall stays unexplained.
//
// The result keeps the two views apart: client_stall_us, the ack stall as measured, and
// cluster_stall_us, the partition's own stall as the cluster saw it: 0 when no event of the
// window (metadata, broker log) shows its leader or ISR changing, unset (not known) when one does.
// The verdict judges the cluster's figure where it is known (verdict.h).

#include <cstdint>
#include <optional>
#include <vector>

#include "server/analysis/drill_analysis.h"
#include "server/analysis/gray_mechanism.h"

namespace kfaild::analysis {

// How far apart the ends of two stalls ended by one answer of the leader can be, beyond the
// probe's interval: the leader answers a connection's next request right after the one that
// held it, and the client reports both in its next poll.
inline constexpr std::int64_t kSharedAckResolutionUs = 10'000;

// The shared_request mechanism of `stalled` (a partition of `analysed`, the run's partitions
// with their ack outcomes and, under a gray fault, the others' mechanisms already set), or
// nullopt when it is not one (see above).
std::optional<MechanismResult> sharedRequest(const AnalysisInput& in,
                                             const std::vector<PartitionResult>& analysed,
                                             const PartitionResult& stalled);

}  // namespace kfaild::analysis
