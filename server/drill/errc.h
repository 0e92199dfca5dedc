#pragma once

// Errors of the drill component (scheduled fault drills). Error::message says what exactly went
// wrong, and where; for a failed injection it keeps the injector's own message.

#include <string>
#include <system_error>

#include "server/common/result.h"

namespace kfaild::drill {

enum class errc {
  invalid_cron = 1,  // a schedule that is not a valid cron expression
  guard_refused,     // a safety guard refused to start the drill
  drill_not_found,   // no drill by that name or id
  injector_failed,   // the fault injector failed to inject or to heal
  invalid_request,   // a drill request with a wrong field (the message names it)
  analysis_window,   // the run's recorded window cannot be read whole for its analysis
  not_observed,      // a mark on a drill whose fault is kfaild's own
};

const std::error_category& drillCategory();
std::error_code make_error_code(errc e);

Error drillError(errc code, std::string message);

}  // namespace kfaild::drill

template <>
struct std::is_error_code_enum<kfaild::drill::errc> : true_type {};
