#pragma once

// Errors of planned-maintenance windows. Error::message says what was wrong in the caller's terms
// (the end asked for, the window's state), so the API can hand it on as a problem's detail.

#include <system_error>

#include "server/common/result.h"

namespace kfaild::maintenance {

enum class errc {
  invalid_window = 1,  // a reason or an end kfaild does not accept (past, too far, empty)
  unknown_window,      // no window has that id
  window_over,         // closing a window that was closed already or has run out
  silence_failed,      // Alertmanager refused or could not be reached
};

const std::error_category& maintenanceCategory();
std::error_code make_error_code(errc e);

}  // namespace kfaild::maintenance

template <>
struct std::is_error_code_enum<kfaild::maintenance::errc> : true_type {};
