#pragma once

// The drill engine's events (injector, kfaild, broker_log sources) into the store.

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "server/common/json_text.h"
#include "server/drill/seams.h"

namespace kfaild::drill {

inline void recordEvent(const EngineDeps& deps, const std::string& source, const std::string& kind, std::int64_t t_us,
                        std::optional<std::int32_t> broker, const nlohmann::json& detail) {
  storage::Event e;
  e.cluster = deps.cluster_id;
  e.t_us = t_us;
  e.source = source;
  e.kind = kind;
  e.broker = broker;
  e.detail = common::jsonText(detail);
  deps.store.addEvent(std::move(e));
}

}  // namespace kfaild::drill
