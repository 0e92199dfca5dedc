#pragma once

// Errors of the notifier. Error::message keeps the peer's words (the HTTP status and the start of
// its body, OpenSSL's reason) so a failed delivery says why in GET /api/v1/notifications.

#include <system_error>

#include "server/common/result.h"

namespace kfaild::notify {

enum class errc {
  invalid_url = 1,   // the receiver's URL cannot be parsed
  connect_failed,    // resolve or connect failed (refused, unreachable)
  tls_failed,        // the CA or client certificate files, or the handshake
  timeout,           // no complete answer within the receiver's timeout
  transport_failed,  // the connection broke while writing or reading
  rejected,          // the receiver answered with a status that is not 2xx
};

const std::error_category& notifyCategory();
std::error_code make_error_code(errc e);

}  // namespace kfaild::notify

template <>
struct std::is_error_code_enum<kfaild::notify::errc> : true_type {};
