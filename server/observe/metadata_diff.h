#pragma once

// Turns two consecutive metadata snapshots into the events that separate them:
//   broker_gone / broker_back       a broker left or re-entered the metadata (fenced, shut down,
//                                   or registered again)
//   leader_change                   a probe partition's leader moved (to -1 when it has none)
//   isr_shrink / isr_expand         replicas left or joined a probe partition's ISR
//   replicas_change                 the replica list itself changed (reassignment)
// Event details are JSON objects ({"from":1,"to":2}, {"removed":[1],"isr":[2,3]}, ...); a
// partition's leader_change, isr_shrink and isr_expand also carry "since_us", when the previous
// answer (the last one without the change) arrived.
// Times: a partition's events carry the time its topic's answer arrived (TopicInfo::
// answered_at_us), broker events the time the answers started to show the new broker list
// (ClusterSnapshot::brokers_at_us); never one time taken after the whole poll.
//
// And two consecutive descriptions of the KRaft quorum into
//   controller_change               the active controller changed, or was elected again (a new
//                                   leader epoch); {"from":100,"to":101,"epoch":4}, -1 for none

#include <optional>
#include <vector>

#include "server/common/clock.h"
#include "server/kafka/metadata.h"
#include "server/kafka/quorum.h"
#include "storage/records.h"

namespace kfaild::observe {

std::vector<storage::Event> diffSnapshots(const kafka::ClusterSnapshot& before,
                                          const kafka::ClusterSnapshot& after,
                                          storage::ClusterId cluster);

// `at`: when `after` was described. Nothing when the leader and its epoch are unchanged.
std::optional<storage::Event> diffQuorum(const kafka::QuorumInfo& before,
                                         const kafka::QuorumInfo& after, storage::ClusterId cluster,
                                         common::WallMicros at);

}  // namespace kfaild::observe
