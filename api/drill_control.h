#pragma once

// The drill seam: how the HTTP endpoints start and abort drills. The daemon implements it over
// its per-cluster DrillRunners; API tests implement it over the store alone.
//
// Thread-safety: called by HTTP threads concurrently; implementations must be thread-safe and
// must not wait for a drill to run (DrillRunner::submit checks the guards and queues).

#include <cstdint>

#include "server/common/result.h"
#include "server/drill/drill_spec.h"
#include "storage/records.h"

namespace kfaild::api {

class DrillControl {
 public:
  virtual ~DrillControl() = default;

  // True when the cluster has an inventory, so kfaild can inject faults into it.
  virtual bool drillsEnabled(storage::ClusterId cluster) const = 0;

  // Checks the guards and queues the drill; returns its id. Errors: drill::errc::guard_refused
  // and drill::errc::invalid_request (a target that cannot be resolved) carry the reason for the
  // 409; anything else is a failure of kfaild's own (the database).
  virtual Result<std::int64_t> submit(storage::ClusterId cluster, const drill::DrillSpec& spec) = 0;

  // Aborts a queued or running drill (a running one recovers its node at once).
  // drill::errc::drill_not_found when the drill is neither.
  virtual Status abort(storage::ClusterId cluster, std::int64_t drill_id) = 0;
};

}  // namespace kfaild::api
