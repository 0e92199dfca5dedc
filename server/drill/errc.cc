#include "server/drill/errc.h"

namespace kfaild::drill {
namespace {

class DrillCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "drill"; }
  std::string message(int value) const override {
    switch (static_cast<errc>(value)) {
      case errc::invalid_cron:
        return "invalid cron expression";
      case errc::guard_refused:
        return "refused by a safety guard";
      case errc::drill_not_found:
        return "no such drill";
      case errc::injector_failed:
        return "fault injection failed";
      case errc::invalid_request:
        return "invalid drill request";
      case errc::analysis_window:
        return "analysis window unreadable";
      case errc::not_observed:
        return "not an observed drill";
    }
    return "unknown drill error";
  }
};

}  // namespace

const std::error_category& drillCategory() {
  static const DrillCategory category;
  return category;
}

std::error_code make_error_code(errc e) {
  return {static_cast<int>(e), drillCategory()};
}

Error drillError(errc code, std::string message) {
  return Error{code, std::move(message)};
}

}  // namespace kfaild::drill
