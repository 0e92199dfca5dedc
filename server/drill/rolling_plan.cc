#include "server/drill/rolling_plan.h"

#include <algorithm>

#include "server/drill/errc.h"

namespace kfaild::drill {

using common::NodeRole;

namespace {

bool isControllerNode(const std::vector<config::NodeConfig>& inventory, std::int32_t id) {
  return std::any_of(inventory.begin(), inventory.end(), [id](const config::NodeConfig& n) {
    return n.id == id && n.role == NodeRole::kController;
  });
}

}  // namespace

Result<std::vector<std::int32_t>> rollingPlan(const DrillSpec& spec,
                                              const std::vector<config::NodeConfig>& inventory,
                                              std::optional<std::int32_t> active_controller) {
  if (!spec.target.nodes.empty()) {
    for (const auto id : spec.target.nodes) {
      const bool known = std::any_of(inventory.begin(), inventory.end(),
                                     [id](const config::NodeConfig& n) { return n.id == id; });
      if (!known) {
        return Error{make_error_code(errc::invalid_request),
                     "target.nodes: node " + std::to_string(id) + " is not in the inventory"};
      }
    }
    return spec.target.nodes;
  }
  std::vector<std::int32_t> brokers, controllers;
  for (const auto& n : inventory) {
    (n.role == NodeRole::kController ? controllers : brokers).push_back(n.id);
  }
  std::sort(brokers.begin(), brokers.end());
  std::sort(controllers.begin(), controllers.end());
  if (brokers.empty()) {
    return Error{make_error_code(errc::invalid_request),
                 "target.every_broker: no broker in the inventory"};
  }
  auto plan = brokers;
  if (spec.options.include_controllers)
    plan.insert(plan.end(), controllers.begin(), controllers.end());
  return activeControllerLast(spec, plan, inventory, active_controller);
}

std::vector<std::int32_t> activeControllerLast(const DrillSpec& spec,
                                               std::vector<std::int32_t> remaining,
                                               const std::vector<config::NodeConfig>& inventory,
                                               std::optional<std::int32_t> active_controller) {
  if (!spec.target.nodes.empty() || !active_controller ||
      !isControllerNode(inventory, *active_controller)) {
    return remaining;
  }
  const auto it = std::find(remaining.begin(), remaining.end(), *active_controller);
  if (it == remaining.end()) return remaining;
  remaining.erase(it);
  // Behind the last controller (controllers come after the brokers in a default plan).
  remaining.push_back(*active_controller);
  return remaining;
}

}  // namespace kfaild::drill
