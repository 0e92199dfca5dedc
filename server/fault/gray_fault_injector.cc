#include "server/fault/gray_fault_injector.h"

#include <utility>

#include "server/fault/errc.h"

namespace kfaild::fault {

void GrayFaultInjector::runGrayFaultsThrough(NodeShell shell) {
  gray_ = std::make_unique<GrayRunner>(std::move(shell), heal_clock_);
}

std::string GrayFaultInjector::refusal(GrayFault fault) const {
  if (fault == GrayFault::disk_slow) return diskSlowRefusalHere();
  return gray_ ? gray_->refusal(fault) : std::string(kGrayFaultsOff);
}

Result<FaultRecord> GrayFaultInjector::isolate(const IsolateSpec& spec) {
  if (!gray_) return faultError(errc::unsupported, refusal(GrayFault::isolate));
  return gray_->isolate(spec);
}

Result<FaultRecord> GrayFaultInjector::throttle(const ThrottleSpec& spec) {
  if (!gray_) return faultError(errc::unsupported, refusal(GrayFault::throttle));
  return gray_->throttle(spec);
}

Result<FaultRecord> GrayFaultInjector::fillDisk(const DiskFullSpec& spec) {
  if (!gray_) return faultError(errc::unsupported, refusal(GrayFault::disk_full));
  return gray_->fillDisk(spec);
}

Result<FaultRecord> GrayFaultInjector::slowDisk(const DiskSlowSpec& /*spec*/) {
  return faultError(errc::unsupported, refusal(GrayFault::disk_slow));
}

Status GrayFaultInjector::checkGray(const GrayAction& action) {
  if (!gray_) return faultError(errc::unsupported, refusal(grayFaultOf(action)));
  return gray_->check(action);
}

GrayPlace GrayFaultInjector::grayPlace(const std::string& drill) const {
  if (!gray_) return {};
  auto place = gray_->placeOf(drill);
  if (!place.empty()) locate(place);
  return place;
}

Result<FaultRecord> GrayFaultInjector::healPlaced(const GrayPlace& place) {
  auto nft = wayInto(place);
  if (!nft) return nft.error();
  if (gray_) return gray_->healPlaced(place, *nft);
  if (!place.empty()) {
    // Placed by an earlier configuration of this node that had gray faults: without a way to the
    // node now, kfaild cannot tell whether the table or filler is still there.
    return faultError(errc::unsupported,
                      "the journal places drill's gray fault at " + place.table + " " +
                          place.filler +
                          ", but this node has no way to it now: " + refusal(GrayFault::isolate));
  }
  FaultRecord nothing;
  nothing.requested_at = heal_clock_.wallNow();
  nothing.detail = "no gray fault can have been injected: " + refusal(GrayFault::isolate);
  return nothing;
}

Result<std::vector<std::string>> GrayFaultInjector::sweep() {
  if (!gray_) return std::vector<std::string>{};
  return gray_->sweep();
}

}  // namespace kfaild::fault
