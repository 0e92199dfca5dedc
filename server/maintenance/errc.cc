#include "server/maintenance/errc.h"

#include <string>

namespace kfaild::maintenance {
namespace {

class MaintenanceCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "maintenance"; }
  std::string message(int value) const override {
    switch (static_cast<errc>(value)) {
      case errc::invalid_window:
        return "invalid maintenance window";
      case errc::unknown_window:
        return "no such maintenance window";
      case errc::window_over:
        return "maintenance window is over";
      case errc::silence_failed:
        return "Alertmanager silence failed";
    }
    return "unknown maintenance error";
  }
};

}  // namespace

const std::error_category& maintenanceCategory() {
  static const MaintenanceCategory category;
  return category;
}

std::error_code make_error_code(errc e) {
  return {static_cast<int>(e), maintenanceCategory()};
}

}  // namespace kfaild::maintenance
