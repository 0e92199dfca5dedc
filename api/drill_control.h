#pragma once

// The drill seam: how the HTTP endpoints start and abort drills. The daemon implements it over
// its per-cluster DrillRunners; API tests implement it over the store alone.
//
// Thread-safety: called by HTTP threads concurrently; implementations must be thread-safe and
// must not wait for a drill to run (DrillRunner::submit checks the guards and queues).

#include <cstdint>
#include <optional>
#include <string>

#include "server/common/result.h"
#include "server/drill/drill_spec.h"
#include "server/drill/errc.h"
#include "storage/records.h"

namespace kfaild::api {

class DrillControl {
 public:
  virtual ~DrillControl() = default;

  // True when the cluster has an inventory, so kfaild can inject faults into it.
  virtual bool drillsEnabled(storage::ClusterId cluster) const = 0;
  // True when kfaild can observe faults others inject there (an observed drill): every cluster
  // it probes with a drill engine, with an inventory or without (a managed service).
  virtual bool observable(storage::ClusterId cluster) const { return drillsEnabled(cluster); }

  // Checks the guards and queues the drill; returns its id. Errors: drill::errc::guard_refused
  // and drill::errc::invalid_request (a target that cannot be resolved) carry the reason for the
  // 409; anything else is a failure of kfaild's own (the database).
  virtual Result<std::int64_t> submit(storage::ClusterId cluster, const drill::DrillSpec& spec) = 0;

  // Aborts a queued or running drill (a running one recovers its node at once).
  // drill::errc::drill_not_found when the drill is neither.
  virtual Status abort(storage::ClusterId cluster, std::int64_t drill_id) = 0;

  // Marks a running observed drill (drill::DrillRunner::mark): someone injected a fault at
  // `at_us` (now when unset), into `broker` when given, said by `by`. Returns the mark's time.
  // drill::errc::drill_not_found (not running here), drill::errc::not_observed,
  // drill::errc::invalid_request (the time, the broker). Without observed drills: not found.
  virtual Result<std::int64_t> mark(storage::ClusterId cluster, std::int64_t drill_id,
                                    std::optional<std::int64_t> at_us,
                                    std::optional<std::int32_t> broker, const std::string& by) {
    (void)cluster, (void)at_us, (void)broker, (void)by;
    return Error{make_error_code(drill::errc::drill_not_found),
                 "drill " + std::to_string(drill_id) + " is not running in this kfaild"};
  }
};

}  // namespace kfaild::api
