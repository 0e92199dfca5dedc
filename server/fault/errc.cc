#include "server/fault/errc.h"

namespace kfaild::fault {
namespace {

class FaultCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "fault"; }
  std::string message(int value) const override {
    switch (static_cast<errc>(value)) {
      case errc::engine_unreachable:
        return "container engine unreachable";
      case errc::permission_denied:
        return "permission denied";
      case errc::no_such_container:
        return "no such container";
      case errc::invalid_state:
        return "not in a state that allows this";
      case errc::engine_error:
        return "container engine error";
      case errc::bad_response:
        return "unreadable answer from the container engine";
      case errc::ssh_failed:
        return "ssh failed";
      case errc::remote_command_failed:
        return "remote command failed";
      case errc::command_failed:
        return "command failed";
      case errc::no_such_process:
        return "no such process";
      case errc::not_a_broker:
        return "process is not a Kafka broker";
      case errc::invalid_target:
        return "invalid fault target";
      case errc::timeout:
        return "timed out";
      case errc::io_error:
        return "I/O error";
      case errc::unsupported:
        return "fault not supported here";
      case errc::not_present:
        return "not present";
    }
    return "unknown fault error";
  }
};

}  // namespace

const std::error_category& faultCategory() {
  static const FaultCategory category;
  return category;
}

std::error_code make_error_code(errc e) {
  return {static_cast<int>(e), faultCategory()};
}

Error faultError(errc code, std::string message) {
  return Error{code, std::move(message)};
}

}  // namespace kfaild::fault
