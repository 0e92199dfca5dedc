#pragma once

// The drill engine's events (injector, kfaild, broker_log sources) into the store.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "server/common/event_types.h"
#include "server/common/json_text.h"
#include "server/drill/seams.h"

namespace kfaild::drill {

// `kind` as text for the kinds common::EventKind does not name (an injector's "<action>_failed").
inline void recordEvent(const EngineDeps& deps, common::EventSource source, std::string kind,
                        std::int64_t t_us, std::optional<std::int32_t> broker,
                        const nlohmann::json& detail) {
  storage::Event e;
  e.cluster = deps.cluster_id;
  e.t_us = t_us;
  e.source = common::toString(source);
  e.kind = std::move(kind);
  e.broker = broker;
  e.detail = common::jsonText(detail);
  deps.store.addEvent(std::move(e));
}

inline void recordEvent(const EngineDeps& deps, common::EventSource source, common::EventKind kind,
                        std::int64_t t_us, std::optional<std::int32_t> broker,
                        const nlohmann::json& detail) {
  recordEvent(deps, source, common::toString(kind), t_us, broker, detail);
}

}  // namespace kfaild::drill
