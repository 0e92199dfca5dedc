#pragma once

// A rolling restart's figures (drill fault rolling_restart; server/drill/drill_runner.cc runs it):
// its steps are the runs of a restart drill, one per node, and this sums them up. Pure.
//
//   partition-seconds   per kind (ack, receive): the sum over the step's partitions of their
//                       stall (outcome stall only; a none or an inconclusive candidate adds
//                       nothing and is counted in `inconclusive`)
//   worst stall         the longest stall of any partition, either kind, and where it was
//   verdict             a step's is its checks' (the drill verdict's checks of that run): fail
//                       when one failed, else inconclusive when one was, else pass; the
//                       rehearsal's is the drill verdict's

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/analysis/drill_analysis.h"
#include "server/analysis/verdict.h"

namespace kfaild::analysis {

struct RollingStall {
  int step = 0;
  std::int32_t node = -1;
  std::string topic;
  std::int32_t partition = 0;
  std::string role;
  StallKind kind = StallKind::kAck;
  double seconds = 0;
};

struct RollingStepSummary {
  int step = 0;  // from 1
  std::int32_t node = -1;
  CheckStatus verdict = CheckStatus::kNotApplicable;
  double ack_partition_seconds = 0;
  double receive_partition_seconds = 0;
  std::optional<RollingStall> worst;
  int stalled_partitions = 0;       // ack or receive stall
  int inconclusive_partitions = 0;  // ack or receive outcome inconclusive
};

struct RollingSummary {
  std::vector<RollingStepSummary> steps;
  double ack_partition_seconds = 0;
  double receive_partition_seconds = 0;
  std::optional<RollingStall> worst;
  CheckStatus verdict = CheckStatus::kInconclusive;
};

// `steps[i]` is the analysis of step i + 1 (on `nodes[i]`); `verdict` the drill's, over them as
// its runs. Fewer steps than nodes when the rehearsal ended early.
RollingSummary summariseRolling(const std::vector<RunAnalysis>& steps,
                                const std::vector<std::int32_t>& nodes, const Verdict& verdict);

// The step verdict of run `run` among `checks`, as above.
CheckStatus stepVerdict(const std::vector<Check>& checks, int run);

nlohmann::json toJson(const RollingStall& stall);
nlohmann::json toJson(const RollingStepSummary& step);
nlohmann::json toJson(const RollingSummary& summary);

}  // namespace kfaild::analysis
