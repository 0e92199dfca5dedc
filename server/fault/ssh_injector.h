#pragma once

// Faults over SSH: the OpenSSH client, run with a fixed argv (no local shell), runs one short
// POSIX shell script per call on the broker's host. Each script is built only from the
// configured `pid_command`, `start_command` and `log_dir` and from numbers and fixed signal
// names; the remote side checks that the pid is all digits, alive, and a Kafka JVM
// (an argument that is exactly kafka.Kafka) before it sends any signal, so a stale pid file never
// makes kfaild signal an unrelated process.
//
// fault_at comes from the remote host's clock (`date +%s%N`, read in the same session just
// before the signal), fault_time_source "ssh:remote-clock". Its offset from kfaild's clock is
// estimated right after the fault by one more round trip that only reads the remote clock
// (bracketOffset: half that round trip plus the clock's resolution, 1 µs, or 1 s where `date`
// has no %N); if that round trip fails, by the fault command's own bracket.
//
// Errors: errc::ssh_failed (ssh's own exit 255, with its stderr: connection refused, host key,
// authentication), errc::no_such_process (no pid, or it is not running), errc::not_a_broker,
// errc::remote_command_failed (exit status and stderr), errc::timeout (ssh is killed),
// errc::invalid_target (a host or user that ssh would read as an option).
// Not thread-safe (see Injector).

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/common/clock.h"
#include "server/config/config.h"
#include "server/fault/gray_fault_injector.h"
#include "server/fault/gray_runner.h"
#include "server/fault/injector.h"
#include "server/fault/kafka_log.h"

namespace kfaild::fault {

enum class Signal { kill, term, stop, cont };

// The host and port ssh connects to, as `ssh -G` prints them.
struct SshEndpoint {
  std::string hostname;
  std::uint16_t port = 22;
};
// `ssh -G`'s output (lines "hostname <name>", "port <n>"); nullopt without both.
std::optional<SshEndpoint> parseSshConfig(std::string_view text);

// The remote scripts. Pure; exposed so tests can pin their exact text.
namespace ssh_script {

// Sends `signal` to the broker: validates the pid, prints "kfaild-pid=N" and
// "kfaild-clock=<ns since epoch>" (the remote clock just before the signal), then signals.
std::string signalCommand(const std::string& pid_command, Signal signal);
// The pause: after the prelude, the expiry timer (pause_expiry.h: on the broker's host, as the
// ssh user; systemd-run where that user may start units without a password, else setsid, which
// logind's KillUserProcesses=yes ends with the session), started and checked before the SIGSTOP
// in the same script, so that the pause never exists without it; a failed SIGSTOP cancels it.
// Prints kfaild-pid, kfaild-timer, kfaild-clock.
std::string pauseCommand(const std::string& pid_command, const PauseSpec& spec);
// SIGCONT, then the cancel of drill `drill`'s timers for that pid (kfaild-cancelled lines).
std::string resumeCommand(const std::string& pid_command, std::string_view drill);
// SIGTERM (and SIGCONT, so a frozen JVM can act on it), wait up to `grace_s` for the exit,
// then SIGKILL; prints "kfaild-stop=exited|killed".
std::string stopCommand(const std::string& pid_command, std::int64_t grace_s);
// Prints kfaild-pid, kfaild-now, kfaild-stat, kfaild-etimes, kfaild-kafka lines, or
// "kfaild-state=nopid"; never signals.
std::string inspectCommand(const std::string& pid_command);
// Prints "kfaild-clock=<ns since epoch>" and nothing else.
std::string clockCommand();
// Prints "kfaild-ready", then one "kfaild-clock=<ns since epoch>" line for every line it reads,
// until its input ends: the remote clock read NTP-style over one session (exchangeLines).
std::string clockDialogueCommand();
// Before a gray network fault: the broker must run in the host's own network namespace (that of
// pid 1), where the rules go; a broker in a container on the host (its traffic passes FORWARD,
// not INPUT/OUTPUT) is refused with exit status 97 and the reason. Prints "kfaild-netns=host".
std::string hostNamespaceCommand(const std::string& pid_command, const std::string& helper);
// Rounds of that dialogue: the tightest bracket is taken.
inline constexpr int kClockRounds = 5;
// grep -h -F of `patterns` (single-quoted) in `log_dir`/`file` and in the files rolled from it
// since `since` (rolledLogsGrepScript, server/fault/kafka_log.h); exit 1 is "no match".
std::string logsCommand(const std::string& log_dir, const std::string& file,
                        const std::vector<std::string>& patterns, common::WallMicros since);

}  // namespace ssh_script

class SshInjector final : public GrayFaultInjector {
 public:
  SshInjector(config::SshTarget target, LogZone zone, const common::Clock& clock,
              std::string ssh_program = "ssh");

  std::string describe() const override;
  Result<FaultRecord> kill() override;
  Result<FaultRecord> stop(std::chrono::seconds grace) override;
  Result<FaultRecord> pause(const PauseSpec& spec) override;
  Result<FaultRecord> resume(const std::string& drill) override;
  Result<FaultRecord> start() override;
  Result<ProcessState> inspect() override;
  Result<std::vector<BrokerLogLine>> logLines(const std::string& file, common::WallMicros since,
                                              const std::vector<std::string>& patterns) override;

  // Gray faults on the broker's host through kfaild-gray (placement.helper; by default
  // `sudo -n /usr/lib/kfaild/kfaild-gray`): nft rules in the host's own network namespace, disk
  // fillers in placement.fill_dir; its times are placed by the host's clock offset
  // (logClockOffset). placement.netns is not used. Before every isolate or throttle the rules
  // are placed: TCP to and from the port `ssh -G` connects to and the one the session reached
  // (behind a NAT) stays open, and a broker that is not in the host's network namespace is refused
  // (hostNamespaceCommand). Calls time out after kShellTimeout plus connect_timeout_s.
  void placeGrayFaults(const GrayPlacement& placement);

  // The full local argv for one remote command: ssh, its options from the config, the
  // destination, "--", and the remote command as one argument.
  Result<std::vector<std::string>> sshArgv(const std::string& remote_command) const;
  // `ssh -G` with the same options and destination: prints the configuration ssh would use.
  Result<std::vector<std::string>> sshConfigArgv() const;
  // Where ssh connects, from `ssh -G` (~/.ssh/config's Port and HostName, -o Port=, -p).
  Result<SshEndpoint> effectiveEndpoint() const;

 private:
  void locate(GrayPlace& place) const override;  // the host
  // Refuses a place on another host than this node's now.
  Result<HelperArgv> wayInto(const GrayPlace& place) const override;
  Result<FaultRecord> signal(Signal signal);
  // Runs `script` (one that signals as signalCommand does, printing kfaild-pid and kfaild-clock)
  // and records the fault; `output`, when given, gets what the script printed.
  Result<FaultRecord> signalBy(const std::string& script, Signal signal,
                               std::string* output = nullptr);
  // The remote clock against kfaild's: the tightest of kClockRounds rounds over one ssh session
  // (clockDialogueCommand), so that the connection's set-up (tens to hundreds of ms, most of it
  // before the remote clock is read) is outside the bracket; a single call's bracket if the
  // dialogue fails.
  Result<ClockOffset> remoteClockOffset();
  // The offset the broker log's times are placed with: taken again when older than a minute.
  Result<ClockOffset> logClockOffset();
  // Sets the record's fault time from the remote clock's text, read during the call that ended
  // (on kfaild's clock) at `after`.
  void placeRemoteFault(FaultRecord& record, const std::string& clock_text,
                        common::WallMicros after);
  Result<std::string> run(const std::string& remote_command, std::chrono::milliseconds timeout);
  std::string destination() const;

  config::SshTarget target_;
  LogZone zone_;
  const common::Clock& clock_;
  std::string ssh_program_;
  std::mutex log_offset_mutex_;
  std::optional<std::pair<common::MonoMicros, ClockOffset>>
      log_offset_;  // guarded by log_offset_mutex_
};

// "1796015337879312744" (date +%s%N) → µs; "1796015337N" (a date without %N) → whole seconds.
std::optional<common::WallMicros> parseRemoteClock(std::string_view text);
// The resolution of that text's clock in µs: 1, or 1'000'000 for whole seconds.
std::int64_t remoteClockResolution(std::string_view text);

}  // namespace kfaild::fault
