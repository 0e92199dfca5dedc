#pragma once

// Builds the injector a configured node asks for. Start-up only: a node without exactly one of
// docker / ssh / local, or with a log_timezone other than UTC or local, throws
// config::ConfigError naming the node (the config loader should have refused it already).
// The clock must outlive the injector.

#include <memory>

#include "server/common/clock.h"
#include "server/config/config.h"
#include "server/fault/injector.h"

namespace kfaild::fault {

std::unique_ptr<Injector> makeInjector(const config::NodeConfig& node, const common::Clock& clock);

}  // namespace kfaild::fault
