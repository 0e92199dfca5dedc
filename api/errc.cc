#include "api/errc.h"

#include <string>

namespace kfaild::api {
namespace {

class ApiCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "api"; }
  std::string message(int value) const override {
    switch (static_cast<errc>(value)) {
      case errc::invalid_options:
        return "invalid HTTP server options";
      case errc::listen_failed:
        return "cannot listen";
      case errc::invalid_request:
        return "invalid request";
      case errc::invalid_parameter:
        return "invalid parameter";
      case errc::unknown_parameter:
        return "unknown parameter";
    }
    return "unknown api error";
  }
};

}  // namespace

const std::error_category& apiCategory() {
  static const ApiCategory category;
  return category;
}

std::error_code make_error_code(errc e) {
  return {static_cast<int>(e), apiCategory()};
}

}  // namespace kfaild::api
