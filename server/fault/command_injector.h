#pragma once

// Faults through commands the operator names (config::CommandTarget): whatever reaches the
// broker's platform, `kubectl delete pod`, `systemctl kill`, `aws ec2 stop-instances`, `podman
// kill`. Each command is an argv run without a shell (runCommand: its own session, killed with its
// process group at its timeout), after its placeholders are filled ({id}, {host}, {drill}:
// config/command_target.h). Exit status 0 is done; a non-zero status or a timeout fails that step
// with the status and the end of stderr, marked operator-only (common::sensitive).
//
// Fault time. kfaild cannot see when the platform acted, only when the command began and ended on
// its own clock: the fault is put in the middle, uncertain by half the command's duration
// ("command:bracket"). A stop with `log_dir` set is narrowed to Kafka's own SIGTERM line when that
// line lies within the command (same host clock, millisecond resolution: "command:log").
//
// What runs. `alive` (optional) answers inspect(): exit 0, with `alive_output` in its stdout when
// that is set, is running; any other exit, or other output, is not; output needed but none printed
// is an error. Without `alive` kfaild goes by its own commands: down after a kill or stop until a
// start; at kfaild's start not known, so taken as not running (recovery then runs `start`, which
// must be harmless on a running broker). A pause is known only from kfaild's own pause and resume;
// after kfaild's start a node with a resume command is taken as paused until a start or resume
// succeeded, so that the recovery journal's replay resumes it (resume, too, must be harmless on a
// running broker).
//
// start() with an empty `start` is "the platform brings it back": it waits until `alive` says the
// broker runs (within start's timeout), or without `alive` returns at once; either way the
// recovery then waits for the broker to register and rejoin every ISR. A start command is followed
// by the same wait for `alive`.
//
// A pause ends by the resume command: the drill's, the recovery journal's, or its own timer's at
// pause_s + kExpiryMargin if kfaild never comes back (pause_expiry.h: started, and checked, before
// the pause command runs; cancelled by a resume). No gray faults: they need kfaild-gray on the node
// (refusal()). logLines reads `log_dir` on kfaild's host as a local node's (readLogDir). Not
// thread-safe (see Injector); the clock must outlive the injector.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/common/clock.h"
#include "server/config/command_target.h"
#include "server/fault/command.h"
#include "server/fault/injector.h"
#include "server/fault/kafka_log.h"

namespace kfaild::fault {

// The time source of a fault bracketed by the command that caused it, and of one narrowed to the
// broker's SIGTERM line in its log.
inline constexpr std::string_view kCommandBracketSource = "command:bracket";
inline constexpr std::string_view kCommandLogSource = "command:log";

class CommandInjector final : public Injector {
 public:
  // `address`: the node's (inventory[].address), what {host} stands for; empty: none.
  CommandInjector(config::CommandTarget target, std::int32_t id, std::string address, LogZone zone,
                  const common::Clock& clock);

  std::string describe() const override;
  Result<FaultRecord> kill() override;
  // `grace` is the command's business (its own option, e.g. kubectl's --grace-period): it is not
  // passed, and the stop's timeout must cover it.
  Result<FaultRecord> stop(std::chrono::seconds grace) override;
  Result<FaultRecord> pause(const PauseSpec& spec) override;
  Result<FaultRecord> resume(const std::string& drill) override;
  Result<FaultRecord> start() override;
  Result<ProcessState> inspect() override;
  Result<std::vector<BrokerLogLine>> logLines(const std::string& file, common::WallMicros since,
                                              const std::vector<std::string>& patterns) override;
  std::string refusal(GrayFault fault) const override;

  // How often start() asks `alive` while it waits for the broker.
  static constexpr std::chrono::milliseconds kAlivePoll{500};

 private:
  // One step's command run with its placeholders (`drill` for pause and resume), the fault record
  // bracketed by it; errors name the step.
  Result<FaultRecord> runStep(const char* name, const config::CommandStep& step,
                              const std::optional<std::string>& drill = std::nullopt);
  // The resume command for `drill`'s pause as its timer runs it: placeholders filled, the program
  // an absolute path; errc::invalid_target when it cannot be a timer's (commandTimerProblem).
  Result<std::vector<std::string>> resumeArgv(const std::string& drill) const;
  // Whether `alive` says the broker runs; the error when it cannot tell (timeout, no output where
  // some is needed).
  Result<bool> aliveNow(std::string& detail);
  // Waits until `alive` says the broker runs, up to `deadline` (monotonic); without `alive` at
  // once. The detail of the wait.
  Result<std::string> awaitAlive(common::MonoMicros deadline, common::MonoMicros since);
  // The stop's record narrowed to Kafka's SIGTERM line, when log_dir has one within it.
  void narrowToSigterm(FaultRecord& record) const;

  config::CommandTarget target_;
  std::int32_t id_;
  std::string address_;
  LogZone zone_;
  const common::Clock& clock_;
  // What kfaild's own commands left the node as: true down (kill, stop), false up (start,
  // resume); nullopt not known (kfaild's start, a kill or stop that failed).
  std::optional<bool> down_;
  // Paused by kfaild's pause (true) or not (false, after a resume, start, kill or stop); nullopt
  // not known (kfaild's start).
  std::optional<bool> paused_;
};

}  // namespace kfaild::fault
