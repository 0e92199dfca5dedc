#pragma once

// The gray-fault half of an Injector (injector.h), written once for the local, SSH and Docker
// injectors: each one only says how kfaild-gray reaches its node (a NodeShell, gray_runner.h),
// where a fault it placed lies (locate) and how a recorded place is reached again (wayInto).
//
// Until the injector hands over its NodeShell (runGrayFaultsThrough, from its placeGrayFaults)
// every gray fault is refused with kGrayFaultsOff, heal and sweep succeed with nothing done, and
// healPlaced of a recorded place is errc::unsupported (kfaild cannot tell what is left there).
// disk_slow is refused everywhere (diskSlowRefusalHere). Not thread-safe (see Injector).

#include <memory>
#include <string>
#include <vector>

#include "server/common/clock.h"
#include "server/fault/gray_runner.h"
#include "server/fault/injector.h"

namespace kfaild::fault {

// Why a node refuses every gray fault until its inventory entry opts in.
inline constexpr std::string_view kGrayFaultsOff =
    "gray faults are off for this node: gray_faults: true in its inventory entry opts in";

class GrayFaultInjector : public Injector {
 public:
  std::string refusal(GrayFault fault) const final;
  Result<FaultRecord> isolate(const IsolateSpec& spec) final;
  Result<FaultRecord> throttle(const ThrottleSpec& spec) final;
  Result<FaultRecord> fillDisk(const DiskFullSpec& spec) final;
  Result<FaultRecord> slowDisk(const DiskSlowSpec& spec) final;
  Status checkGray(const GrayAction& action) final;
  // The runner's place for `drill`, located by this injector; empty until gray faults are on.
  GrayPlace grayPlace(const std::string& drill) const final;
  // The runner's healPlaced through wayInto(place); wayInto's error first.
  Result<FaultRecord> healPlaced(const GrayPlace& place) final;
  Result<std::vector<std::string>> sweep() final;

 protected:
  // `clock` stamps a heal that had nothing to do; it must outlive the injector.
  explicit GrayFaultInjector(const common::Clock& clock) : heal_clock_(clock) {}

  // Turns gray faults on: from now on they run through `shell`.
  void runGrayFaultsThrough(NodeShell shell);

  // Adds what only the injector knows to a place the runner gave (not empty): the ssh host, the
  // network namespace or container.
  virtual void locate(GrayPlace& place) const = 0;
  // How healPlaced reaches the nft table `place` (from the recovery journal) names: an empty
  // HelperArgv for the runner's own shell. An error when the place is not this node's to heal
  // (another host, another container).
  virtual Result<HelperArgv> wayInto(const GrayPlace& /*place*/) const { return HelperArgv{}; }

 private:
  const common::Clock& heal_clock_;
  std::unique_ptr<GrayRunner> gray_;  // null until runGrayFaultsThrough
};

}  // namespace kfaild::fault
