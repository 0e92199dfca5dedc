#pragma once

// Which nodes a rolling restart restarts, and in which order. Pure.
//
// The default target (every_broker): the inventory's brokers in ascending id, then, with
// include_controllers, its controllers: the standby voters first, the active controller (the
// KRaft quorum's leader) last, as Strimzi's KafkaRoller orders them, so that the quorum changes
// leader once. Who is active is asked again before each controller's step (nextRollingStep): a
// restart of a standby can move the leadership. target.nodes: those nodes, in the order given.

#include <cstdint>
#include <optional>
#include <vector>

#include "server/common/result.h"
#include "server/config/config.h"
#include "server/drill/drill_spec.h"

namespace kfaild::drill {

// The plan; an error names a node of target.nodes that is not in the inventory, or says that
// the default plan is empty (no broker in the inventory).
Result<std::vector<std::int32_t>> rollingPlan(const DrillSpec& spec,
                                              const std::vector<config::NodeConfig>& inventory,
                                              std::optional<std::int32_t> active_controller);

// The rest of a default plan from `remaining` (the steps not yet taken, in plan order) with the
// active controller moved behind every other controller; an explicit plan is left as it is.
std::vector<std::int32_t> activeControllerLast(const DrillSpec& spec,
                                               std::vector<std::int32_t> remaining,
                                               const std::vector<config::NodeConfig>& inventory,
                                               std::optional<std::int32_t> active_controller);

}  // namespace kfaild::drill
