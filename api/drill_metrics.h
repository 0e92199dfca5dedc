#pragma once

// The `kfaild_last_drill_*` families of /metrics: what the last analysed drill of each cluster and
// fault found, for alert rules and dashboards. Rendered from drill rows alone (no I/O), so tests
// feed it synthetic rows.
//
// Read from each row's `result` JSON, all of it optional (an older drill has no verdict):
//   result.verdict.verdict          pass | fail | inconclusive      → kfaild_last_drill_verdict
//   result.verdict.regressions[]    non-empty                       → kfaild_last_drill_regressed
//   result.runs[].analysis.partitions[]: topic, partition, role, ack/receive {outcome, stall},
//     phases {detection_us, ...}, lost/failed/duplicated/unresolved
// A stall is the max over the drill's runs of that partition and role; a partition whose kind
// ended without a stall (outcome "none") reads 0, an inconclusive one has no sample.
//
// Thread-safety: none needed; pure functions.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "api/prometheus_text.h"
#include "storage/drill_store.h"

namespace kfaild::api {

// The states whose drills carry an analysis (and, with objectives, a verdict).
inline constexpr const char* kAnalysedDrillState = "done";

// Every verdict value kfaild_last_drill_verdict has a series for; "none" when the drill carries
// no verdict.
inline constexpr const char* kDrillVerdicts[] = {"pass", "fail", "inconclusive", "none"};

// `drills`: the last analysed drill of each (cluster, fault), as DrillStore::lastDrills returns
// them. `configured`: every configured cluster's id and name, in order; a drill of a cluster no
// longer configured is labelled with its id. Every configured cluster gets a
// kfaild_drill_last_done_timestamp_seconds sample (0 when it never had an analysed drill), so a
// "no drill for N days" rule sees a cluster that never had one.
void renderLastDrills(PrometheusText& out, const std::vector<storage::DrillRecord>& drills,
                      const std::vector<std::pair<storage::ClusterId, std::string>>& configured);

}  // namespace kfaild::api
