#pragma once

// Writes a drill's row as it moves (state, reason, result), so a reader always sees where it is.

#include <string>

#include "server/drill/drill_state.h"
#include "server/drill/seams.h"

namespace kfaild::drill {

class DrillRecords {
 public:
  explicit DrillRecords(EngineDeps& deps) : deps_(deps) {}
  // Sets the state (and the reason, when given; a terminal state stamps finished_us) and writes.
  void setState(storage::DrillRecord& drill, DrillState state, const std::string& reason = {});
  void persist(const storage::DrillRecord& drill);

 private:
  EngineDeps& deps_;
};

}  // namespace kfaild::drill
