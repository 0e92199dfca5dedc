#pragma once

// Turns two consecutive metadata snapshots into the events that separate them:
//   broker_gone / broker_back       a broker left or re-entered the metadata (fenced, shut down,
//                                   or registered again)
//   leader_change                   a probe partition's leader moved (to -1 when it has none)
//   isr_shrink / isr_expand         replicas left or joined a probe partition's ISR
//   replicas_change                 the replica list itself changed (reassignment)
// Event details are JSON objects ({"from":1,"to":2}, {"removed":[1],"isr":[2,3]}, ...).

#include <vector>

#include "server/common/clock.h"
#include "server/kafka/metadata.h"
#include "storage/records.h"

namespace kfaild::observe {

std::vector<storage::Event> diffSnapshots(const kafka::ClusterSnapshot& before,
                                          const kafka::ClusterSnapshot& after,
                                          storage::ClusterId cluster, common::WallMicros at);

}  // namespace kfaild::observe
