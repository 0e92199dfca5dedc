#include "server/drill/drill_records.h"

#include <spdlog/spdlog.h>

namespace kfaild::drill {

void DrillRecords::setState(storage::DrillRecord& drill, DrillState state,
                            const std::string& reason) {
  drill.state = toString(state);
  if (!reason.empty()) drill.reason = reason;
  if (isTerminal(state)) drill.finished_us = deps_.clock.wallNow();
  if (auto s = deps_.drills.updateDrill(drill); !s) {
    spdlog::error("drill {}: cannot record state {}: {}", drill.id, drill.state,
                  s.error().describe());
  }
  spdlog::info("drill {} on {}: {}{}", drill.id, deps_.cluster.name, drill.state,
               reason.empty() ? "" : " (" + reason + ")");
  if (isTerminal(state) && deps_.listener) deps_.listener->drillFinished(deps_.cluster.name, drill);
}

void DrillRecords::persist(const storage::DrillRecord& drill) {
  if (auto s = deps_.drills.updateDrill(drill); !s) {
    spdlog::error("drill {}: cannot record it: {}", drill.id, s.error().describe());
  }
}

}  // namespace kfaild::drill
