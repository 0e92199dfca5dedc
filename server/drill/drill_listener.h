#pragma once

// Who is told when a drill ends. DrillRecords calls drillFinished() on the engine's thread right
// after a terminal state (done, failed, aborted) is written, with the row as written: its
// `result` holds the runs (and, once computed, the verdict). An implementation must not block the
// engine: it records what it needs (a queue, a row) and returns.

#include <string>

#include "storage/drill_store.h"

namespace kfaild::drill {

class DrillListener {
 public:
  virtual ~DrillListener() = default;
  virtual void drillFinished(const std::string& cluster, const storage::DrillRecord& drill) = 0;
};

}  // namespace kfaild::drill
