#pragma once

// Builds the injector a configured node asks for. Start-up only: a node without exactly one of
// docker / ssh / local / command, or with a log_timezone other than UTC or local, throws
// config::ConfigError naming the node (the config loader should have refused it already).
// The clock must outlive the injector.

#include <memory>
#include <string>

#include "server/common/clock.h"
#include "server/config/config.h"
#include "server/fault/injector.h"

namespace kfaild::fault {

// `gray_instance`: this kfaild's id in the names its gray faults leave on the node
// (grayInstanceId, gray_fault.h).
std::unique_ptr<Injector> makeInjector(const config::NodeConfig& node, const common::Clock& clock,
                                       const std::string& gray_instance = {});

}  // namespace kfaild::fault
