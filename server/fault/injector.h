#pragma once

// The fault seam: one Injector per broker (or controller) process, bound at start-up to how the
// configured inventory says that process is reached — a Docker-compatible engine, SSH, or a
// local pid file. Nothing from an API request reaches an injector except the choice of broker id
// (which selects the injector) and numeric durations.
//
// Every call blocks until the engine / remote host / kernel has answered or its timeout passed,
// and never throws. Implementations are not required to be thread-safe: the drill runner owns
// them and calls one at a time.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "server/common/clock.h"
#include "server/common/result.h"
#include "server/fault/errc.h"
#include "server/fault/gray_fault.h"
#include "server/fault/pause_expiry.h"

namespace kfaild::fault {

// When a fault happened, as well as kfaild can tell. fault_time_source says where fault_at
// came from: "local" (kill(2) on this host), "ssh:remote-clock" (the broker host's clock just
// before the signal), "docker:State.FinishedAt" (kill), "docker:logs" (stop: Kafka's own
// SIGTERM line), "kfaild:requested_at" (stop, when that line was not found),
// "docker:State.StartedAt" (start). Docker's pause and unpause have no engine-side time: fault_at
// stays empty and requested_at is the best there is.
//
// fault_at is read on another clock than kfaild's (the remote host's, the engine's, the broker
// log's): its offset from kfaild's clock is estimated by bracketing a reading of that clock
// between two of kfaild's (bracketOffset), and faultTime() is the fault on kfaild's clock, within
// ± uncertainty_us. Without fault_at, faultTime() is requested_at and uncertainty_us the time the
// call took (the fault happened somewhere in it).
struct FaultRecord {
  common::WallMicros requested_at = 0;         // local wall clock just before the request
  std::optional<common::WallMicros> fault_at;  // the injector side's own time, where it has one
  std::string fault_time_source;
  std::string detail;                // what was done, e.g. "SIGKILL to pid 4242"
  std::int64_t clock_offset_us = 0;  // fault_at's clock − kfaild's, as estimated
  std::int64_t uncertainty_us = 0;   // ± of faultTime()

  common::WallMicros faultTime() const {
    return fault_at ? *fault_at - clock_offset_us : requested_at;
  }
};

// Another clock against kfaild's.
struct ClockOffset {
  std::int64_t offset_us = 0;       // the other clock − kfaild's
  std::int64_t uncertainty_us = 0;  // ± of offset_us
};

// `reading` of another clock whose resolution is `resolution_us`, taken at some moment between
// kfaild's readings `before` and `after`: the best estimate puts it at the bracket's middle, so
// the offset is reading − middle, uncertain by half the bracket plus the other clock's resolution.
inline ClockOffset bracketOffset(common::WallMicros reading, common::WallMicros before,
                                 common::WallMicros after, std::int64_t resolution_us) {
  const std::int64_t half = (after - before + 1) / 2;
  return {reading - (before + half), half + resolution_us};
}

// Sets fault_at (read on the other clock) and how it lies on kfaild's.
inline void placeFault(FaultRecord& record, common::WallMicros fault_at, const ClockOffset& offset,
                       std::string source) {
  record.fault_at = fault_at;
  record.clock_offset_us = offset.offset_us;
  record.uncertainty_us = offset.uncertainty_us;
  record.fault_time_source = std::move(source);
}

struct ProcessState {
  bool running = false;
  bool paused = false;
  std::optional<std::int64_t> pid;
  std::optional<common::WallMicros> started_at;
  std::optional<common::WallMicros> finished_at;
  std::string detail;  // engine-specific status text
};

// A line from the broker's own logs (server.log, controller.log, state-change.log) with the
// time the broker wrote it.
struct BrokerLogLine {
  common::WallMicros t = 0;  // on kfaild's clock
  // The log's clock − kfaild's, as estimated when the log is another host's (ssh), and the ± of
  // t that adds (the line's own millisecond aside); 0 for a log on kfaild's host's clock.
  std::int64_t clock_offset_us = 0;
  std::int64_t clock_uncertainty_us = 0;
  std::string file;
  std::string level;
  std::string message;
  std::string logger;  // log4j logger name, e.g. "org.apache.kafka.controller.QuorumController"
};

// Where one drill's gray fault goes on a node, as its injector places it: written to the recovery
// journal before the injection, so that recovery undoes exactly that, also after the node's
// configuration changed (another netns or fill_dir) or it left the inventory. Empty fields are
// steps the fault does not have there.
struct GrayPlace {
  std::string host;      // ssh: the host the rules and the filler are on
  std::string netns;     // local: the network namespace's name; docker: "container:<name>"
  std::string netns_id;  // local: that namespace's identity when placed, "net:[<inode>]"
  std::string table;     // the nft table, "kfaild_d12" (family inet)
  std::string filler;    // the disk filler's path
  bool empty() const { return table.empty() && filler.empty(); }
  // On kfaild's own host (a local injector's): no ssh host, no container.
  bool local() const { return !empty() && host.empty() && netns.rfind("container:", 0) != 0; }
};

// A gray fault as it would be injected, for the preflight's check (Injector::checkGray).
using GrayAction = std::variant<IsolateSpec, ThrottleSpec, DiskFullSpec, DiskSlowSpec>;
inline GrayFault grayFaultOf(const GrayAction& action) {
  constexpr GrayFault kByIndex[] = {GrayFault::isolate, GrayFault::throttle, GrayFault::disk_full,
                                    GrayFault::disk_slow};
  return kByIndex[action.index()];
}

class Injector {
 public:
  virtual ~Injector() = default;

  // "docker container kbf-k1-1 (unix:///var/run/docker.sock)", "ssh kafka@k1 (pid file ...)".
  virtual std::string describe() const = 0;

  virtual Result<FaultRecord> kill() = 0;                            // SIGKILL
  virtual Result<FaultRecord> stop(std::chrono::seconds grace) = 0;  // SIGTERM, SIGKILL after grace
  // Freezes the broker (SIGSTOP / cgroup freezer) for drill spec.drill, after starting the timer
  // that thaws it by itself spec.expiresAfter() later if resume() does not come
  // (server/fault/pause_expiry.h). A timer that cannot be started fails the pause before the
  // broker is touched, except where the injector says in FaultRecord::detail why the pause has
  // no self-expiry (docs/SECURITY.md). A spec that invalidReason rejects is errc::invalid_target.
  virtual Result<FaultRecord> pause(const PauseSpec& spec) = 0;
  // Thaws the broker, then cancels drill `drill`'s expiry timers for it (a cancel that fails
  // leaves a timer that would only resume a broker that runs already; detail says so).
  virtual Result<FaultRecord> resume(const std::string& drill) = 0;
  virtual Result<FaultRecord> start() = 0;  // start a stopped broker
  virtual Result<ProcessState> inspect() = 0;

  // Broker log lines written at or after `since` in `file` ("server.log", "controller.log",
  // "state-change.log") that contain one of `patterns` (plain substrings). Injectors that cannot
  // read logs return an empty list.
  virtual Result<std::vector<BrokerLogLine>> logLines(const std::string& file,
                                                      common::WallMicros since,
                                                      const std::vector<std::string>& patterns) = 0;

  // Gray faults (server/fault/gray_fault.h). Each one expires by itself duration +
  // kExpiryMargin after it was injected; heal() ends it earlier. FaultRecord::detail has the
  // exact command(s) run, for the drill's timeline. An injector that cannot do a fault returns
  // errc::unsupported with the reason, before touching anything: refusal() says the same
  // without trying, for submission (409), and is empty when the fault can be done. A spec that
  // gray_fault's invalidReason rejects is errc::invalid_target.
  virtual std::string refusal(GrayFault fault) const {
    return describe() + " cannot inject " + toString(fault);
  }
  virtual Result<FaultRecord> isolate(const IsolateSpec& /*spec*/) {
    return faultError(errc::unsupported, refusal(GrayFault::isolate));
  }
  virtual Result<FaultRecord> throttle(const ThrottleSpec& /*spec*/) {
    return faultError(errc::unsupported, refusal(GrayFault::throttle));
  }
  virtual Result<FaultRecord> fillDisk(const DiskFullSpec& /*spec*/) {
    return faultError(errc::unsupported, refusal(GrayFault::disk_full));
  }
  virtual Result<FaultRecord> slowDisk(const DiskSlowSpec& /*spec*/) {
    return faultError(errc::unsupported, refusal(GrayFault::disk_slow));
  }
  // Proves, before the fault, that `action` can be injected on this node as it stands: the way in
  // works (the namespace can be entered, sudo answers without a password), nft accepts the exact
  // script (`nft --check`), the filler's directory is a writable directory on a filesystem of its
  // own. Touches nothing. errc::unsupported with the reason when it cannot.
  virtual Status checkGray(const GrayAction& action) {
    if (auto why = refusal(grayFaultOf(action)); !why.empty())
      return faultError(errc::unsupported, why);
    return okStatus();
  }
  // Where `drill`'s gray fault would be placed on this node now; empty for an injector without
  // gray faults.
  virtual GrayPlace grayPlace(const std::string& /*drill*/) const { return {}; }
  // Undoes every gray fault of `drill` on this node (its nft table, its disk filler) where the
  // node's configuration puts them now: healPlaced(grayPlace(drill)).
  virtual Result<FaultRecord> heal(const std::string& drill) {
    return healPlaced(grayPlace(drill));
  }
  // Undoes what `place` names. The nft step and the disk step run and succeed independently; each
  // succeeds when there is nothing of ours left (no such namespace, or one re-created since; the
  // container stopped; no table; no filler). An error only for a step that could not run for
  // another reason, with every step's outcome in its message.
  virtual Result<FaultRecord> healPlaced(const GrayPlace& place) {
    FaultRecord nothing;  // an injector without gray faults cannot have injected one
    nothing.detail = "nothing to heal" +
                     std::string(place.empty() ? "" : " at " + place.table + place.filler) + ": " +
                     describe() + " has no gray faults";
    return nothing;
  }
  // At kfaild's start: removes every kfaild_* nft table and disk filler on this node, whatever
  // drill left it. Returns what was removed (empty: nothing was left). The nft step and the disk
  // step run independently; an error names what failed (and what was removed all the same).
  virtual Result<std::vector<std::string>> sweep() { return std::vector<std::string>{}; }
};

}  // namespace kfaild::fault
