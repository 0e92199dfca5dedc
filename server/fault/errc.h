#pragma once

// Errors of the fault injectors. Error::message keeps what the other side said: the Docker
// engine's own "message", ssh's stderr, the errno text of a failed syscall.

#include <string>
#include <system_error>

#include "server/common/result.h"

namespace kfaild::fault {

enum class errc {
  engine_unreachable = 1,  // no Docker engine at the endpoint (socket missing, refused, DNS)
  permission_denied,       // the engine (403/401), the socket or kill(2) refused us (EPERM/EACCES)
  no_such_container,       // 404 from the engine
  invalid_state,           // kill/stop/pause of what is not running, pause of what is paused
  engine_error,            // any other answer of the engine that is not a success
  bad_response,            // the engine answered something kfaild cannot read
  ssh_failed,              // ssh itself failed (exit 255): connection, host key, authentication
  remote_command_failed,   // the command ran on the remote host and failed
  command_failed,          // a local command (start_command) failed
  no_such_process,         // no pid file, no pid in it, or that pid is gone
  not_a_broker,            // the pid is alive but not a Kafka JVM: a stale pid file, refused
  invalid_target,          // a configured target kfaild refuses to use (e.g. host "-oProxy...")
  timeout,
  io_error,     // a local file could not be read (logs, pid file, /proc)
  unsupported,  // a fault this injector or host cannot do (refused at submission: 409)
  not_present,  // what a heal would act on is not there (no namespace, container stopped): healed
};

const std::error_category& faultCategory();
std::error_code make_error_code(errc e);

Error faultError(errc code, std::string message);

}  // namespace kfaild::fault

template <>
struct std::is_error_code_enum<kfaild::fault::errc> : true_type {};
