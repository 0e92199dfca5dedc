#pragma once

// Errors of the HTTP API. Error::message says what exactly was wrong (the address that could not
// be bound, the option that is out of range), so the operator can fix it from the message alone.

#include <system_error>

#include "server/common/result.h"

namespace kfaild::api {

enum class errc {
  invalid_options = 1,  // a ServerOptions value is out of range or unsafe
  listen_failed,        // the address cannot be resolved, bound or listened on
  invalid_request,      // the request target is malformed
  invalid_parameter,    // a parameter has a value the endpoint does not accept, or repeats
  unknown_parameter,    // a query parameter the endpoint does not take
};

const std::error_category& apiCategory();
std::error_code make_error_code(errc e);

}  // namespace kfaild::api

template <>
struct std::is_error_code_enum<kfaild::api::errc> : true_type {};
