#include "server/notify/errc.h"

#include <string>

namespace kfaild::notify {
namespace {

class NotifyCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "notify"; }
  std::string message(int value) const override {
    switch (static_cast<errc>(value)) {
      case errc::invalid_url:
        return "invalid receiver URL";
      case errc::connect_failed:
        return "cannot connect";
      case errc::tls_failed:
        return "TLS failed";
      case errc::timeout:
        return "timed out";
      case errc::transport_failed:
        return "connection failed";
      case errc::rejected:
        return "receiver refused";
    }
    return "unknown notify error";
  }
};

}  // namespace

const std::error_category& notifyCategory() {
  static const NotifyCategory category;
  return category;
}

std::error_code make_error_code(errc e) {
  return {static_cast<int>(e), notifyCategory()};
}

}  // namespace kfaild::notify
