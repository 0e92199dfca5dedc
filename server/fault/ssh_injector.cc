#include "server/fault/ssh_injector.h"

#include <charconv>
#include <map>
#include <regex>

#include "server/common/sensitive.h"
#include "server/fault/command.h"
#include "server/fault/errc.h"
#include "server/fault/pause_expiry.h"

namespace kfaild::fault {
namespace {

// Exit codes of the remote scripts for the cases kfaild tells apart; ssh itself uses 255.
constexpr int kExitNoPid = 93;
constexpr int kExitNotRunning = 94;
constexpr int kExitNotKafka = 95;
constexpr int kExitSurvivedKill = 96;
constexpr int kExitSshFailed = 255;

constexpr std::chrono::seconds kShortCallSlack{20};
constexpr std::chrono::seconds kStartTimeout{180};

std::string_view signalName(Signal s) {
  switch (s) {
    case Signal::kill:
      return "KILL";
    case Signal::term:
      return "TERM";
    case Signal::stop:
      return "STOP";
    case Signal::cont:
      return "CONT";
  }
  return "KILL";
}

// True when the process has an argument that is exactly kafka.Kafka (the JVM's main class).
// A substring match would also take the shell running this very script, whose command line
// holds the script's text; so no line or word of the script may be that argument alone.
constexpr std::string_view kIsKafka =
    "is_kafka() { if [ -r /proc/$1/cmdline ]; then tr '\\0' '\\n' </proc/$1/cmdline; else "
    "ps -ww -o args= -p $1 | tr ' ' '\\n'; fi | grep -qxF kafka.Kafka; }\n";

// The configured pid command goes on lines of its own so that a trailing comment in it cannot
// swallow the closing parenthesis.
std::string pidPrelude(const std::string& pid_command) {
  return std::string(kIsKafka) + "pid=$(\n" + pid_command +
         "\n)\n"
         "case $pid in ''|*[!0-9]*) echo \"kfaild: the pid command printed no pid: $pid\" >&2; "
         "exit 93;; esac\n"
         "case $(ps -o stat= -p $pid) in ''|Z*) echo \"kfaild: pid $pid is not running\" >&2; "
         "exit 94;; esac\n"
         "is_kafka $pid || { echo \"kfaild: pid $pid is not a Kafka broker JVM; refusing to "
         "signal it\" >&2; exit 95; }\n"
         "echo kfaild-pid=$pid\n";
}

std::map<std::string, std::string> keyValues(const std::string& out) {
  std::map<std::string, std::string> kv;
  std::size_t pos = 0;
  while (pos < out.size()) {
    auto end = out.find('\n', pos);
    if (end == std::string::npos) end = out.size();
    const std::string line = out.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind("kfaild-", 0) != 0) continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string value = line.substr(eq + 1);
    while (!value.empty() && (value.back() == '\r' || value.back() == ' ')) value.pop_back();
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    kv[line.substr(7, eq - 7)] = value;
  }
  return kv;
}

std::optional<std::int64_t> parseNumber(std::string_view s) {
  std::int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

bool plainFileName(const std::string& name) {
  static const std::regex kPlain("[A-Za-z0-9][A-Za-z0-9._-]*");
  return std::regex_match(name, kPlain);
}

}  // namespace

namespace ssh_script {

namespace {

// After the prelude: the remote clock, the signal (`on_failure` runs when kill fails, and the
// script then exits 1), and for STOP and CONT the wait for the state to show it.
std::string signalTail(Signal signal, const std::string& on_failure = {}) {
  std::string script =
      "echo kfaild-clock=$(date +%s%N)\n"
      "kill -" +
      std::string(signalName(signal)) + " $pid" +
      (on_failure.empty() ? "" : " || { " + on_failure + " exit 1; }") + "\n";
  // A JVM is stopped once all its threads are, a moment after kill returned: wait up to 2 s
  // for the state to show it, so a pause is done when this returns.
  if (signal == Signal::stop) {
    script +=
        "n=0; while case $(ps -o stat= -p $pid) in T*) false;; esac && [ $n -lt 20 ]; do "
        "sleep 0.1; n=$((n+1)); done\n";
  } else if (signal == Signal::cont) {
    script +=
        "n=0; while case $(ps -o stat= -p $pid) in T*) true;; *) false;; esac && "
        "[ $n -lt 20 ]; do sleep 0.1; n=$((n+1)); done\n";
  }
  return script;
}

}  // namespace

std::string signalCommand(const std::string& pid_command, Signal signal) {
  return pidPrelude(pid_command) + signalTail(signal);
}

std::string pauseCommand(const std::string& pid_command, const PauseSpec& spec) {
  return pidPrelude(pid_command) + processPauseTimerScript(spec) +
         signalTail(Signal::stop, "cancel_timer;");
}

std::string resumeCommand(const std::string& pid_command, std::string_view drill) {
  return pidPrelude(pid_command) +
         signalTail(Signal::cont, "echo \"kfaild: kill -CONT $pid failed\" >&2;") +
         processPauseCancelScript(drill);
}

std::string stopCommand(const std::string& pid_command, std::int64_t grace_s) {
  return pidPrelude(pid_command) +
         "echo kfaild-clock=$(date +%s%N)\n"
         "kill -TERM $pid\n"
         "kill -CONT $pid 2>/dev/null\n"
         "end=$(($(date +%s) + " +
         std::to_string(grace_s) +
         "))\n"
         "how=exited\n"
         "while case $(ps -o stat= -p $pid) in ''|Z*) false;; esac; do\n"
         "if [ $how = exited ] && [ $(date +%s) -ge $end ]; then kill -KILL $pid 2>/dev/null; "
         "how=killed; end=$((end + 10)); fi\n"
         "if [ $how = killed ] && [ $(date +%s) -ge $end ]; then echo \"kfaild: pid $pid still "
         "alive 10 s after SIGKILL\" >&2; exit 96; fi\n"
         "sleep 0.1\n"
         "done\n"
         "echo kfaild-stop=$how\n";
}

std::string inspectCommand(const std::string& pid_command) {
  return std::string(kIsKafka) + "pid=$( {\n" + pid_command +
         "\n} 2>/dev/null )\n"
         "case $pid in ''|*[!0-9]*) echo kfaild-state=nopid; exit 0;; esac\n"
         "echo kfaild-pid=$pid\n"
         "echo kfaild-now=$(date +%s)\n"
         "echo kfaild-stat=$(ps -o stat= -p $pid)\n"
         "echo kfaild-etimes=$(ps -o etimes= -p $pid)\n"
         "if is_kafka $pid; then echo kfaild-kafka=yes; else echo kfaild-kafka=no; fi\n";
}

std::string hostNamespaceCommand(const std::string& pid_command, const std::string& helper) {
  // kfaild-gray, as root, compares the broker's namespace with its own: where its rules go.
  return pidPrelude(pid_command) + helper +
         " --expect-pid \"$pid\" netns-check || { echo \"kfaild: gray network faults are refused: "
         "kfaild-gray's rules in this host's namespace would not reach the broker (pid $pid)\" "
         ">&2; "
         "exit 97; }\n"
         "echo kfaild-netns=host\n";
}

std::string clockCommand() {
  return "echo kfaild-clock=$(date +%s%N)\n";
}

std::string clockDialogueCommand() {
  return "echo kfaild-ready\n"
         "while IFS= read -r _; do echo kfaild-clock=$(date +%s%N); done\n";
}

std::string logsCommand(const std::string& log_dir, const std::string& file,
                        const std::vector<std::string>& patterns, common::WallMicros since) {
  return rolledLogsGrepScript(log_dir, file, patterns,
                              std::max<common::WallMicros>(0, since / 1'000'000));
}

}  // namespace ssh_script

std::optional<SshEndpoint> parseSshConfig(std::string_view text) {
  std::optional<std::string> host;
  std::optional<std::int64_t> port;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const auto line = text.substr(pos, end - pos);
    pos = end + 1;
    const auto space = line.find(' ');
    if (space == std::string_view::npos) continue;
    const auto key = line.substr(0, space);
    auto value = std::string(line.substr(space + 1));
    while (!value.empty() && (value.back() == '\r' || value.back() == ' ')) value.pop_back();
    if (key == "hostname" && !host) host = value;
    if (key == "port" && !port) port = parseNumber(value);
  }
  if (!host || host->empty() || !port || *port <= 0 || *port > 65535) return std::nullopt;
  return SshEndpoint{*host, static_cast<std::uint16_t>(*port)};
}

std::optional<common::WallMicros> parseRemoteClock(std::string_view text) {
  if (!text.empty() && text.back() == 'N') {
    const auto secs = parseNumber(text.substr(0, text.size() - 1));
    if (!secs) return std::nullopt;
    return *secs * 1'000'000;
  }
  if (text.size() < 10) return std::nullopt;
  const auto ns = parseNumber(text);
  if (!ns) return std::nullopt;
  return *ns / 1'000;
}

std::int64_t remoteClockResolution(std::string_view text) {
  return !text.empty() && text.back() == 'N' ? 1'000'000 : 1;
}

SshInjector::SshInjector(config::SshTarget target, LogZone zone, const common::Clock& clock,
                         std::string ssh_program)
    : GrayFaultInjector(clock),
      target_(std::move(target)),
      zone_(zone),
      clock_(clock),
      ssh_program_(std::move(ssh_program)) {}

std::string SshInjector::destination() const {
  return target_.user.empty() ? target_.host : target_.user + "@" + target_.host;
}

std::string SshInjector::describe() const {
  return "ssh " + destination() + ":" + std::to_string(target_.port) +
         " (pid: " + target_.pid_command + ")";
}

Result<std::vector<std::string>> SshInjector::sshArgv(const std::string& remote_command) const {
  // ssh reads an argument that starts with '-' as an option, even after the destination; a host
  // or user must be nothing but a name.
  static const std::regex kHost("[A-Za-z0-9_][A-Za-z0-9._:%\\[\\]-]*");
  static const std::regex kUser("[A-Za-z0-9_][A-Za-z0-9._-]*");
  if (!std::regex_match(target_.host, kHost)) {
    return faultError(errc::invalid_target, "ssh host '" + target_.host + "' is not a host name");
  }
  if (!target_.user.empty() && !std::regex_match(target_.user, kUser)) {
    return faultError(errc::invalid_target, "ssh user '" + target_.user + "' is not a user name");
  }
  std::vector<std::string> argv = {ssh_program_, "-o", "BatchMode=yes", "-o",
                                   "ConnectTimeout=" + std::to_string(target_.connect_timeout_s)};
  if (target_.port != 22) {
    argv.insert(argv.end(), {"-p", std::to_string(target_.port)});
  }
  if (!target_.identity_file.empty()) argv.insert(argv.end(), {"-i", target_.identity_file});
  for (const auto& opt : target_.options) argv.insert(argv.end(), {"-o", opt});
  argv.push_back(destination());
  argv.push_back("--");
  argv.push_back(remote_command);
  return argv;
}

Result<std::vector<std::string>> SshInjector::sshConfigArgv() const {
  auto argv = sshArgv({});
  if (!argv) return argv.error();
  argv->resize(argv->size() - 2);  // no "--" and no remote command
  argv->insert(argv->begin() + 1, "-G");
  return argv;
}

Result<SshEndpoint> SshInjector::effectiveEndpoint() const {
  auto argv = sshConfigArgv();
  if (!argv) return argv.error();
  // Reads only the local configuration: no connection.
  auto out = runCommand(*argv, std::chrono::seconds(10));
  if (!out) return out.error();
  auto endpoint = out->exit_code == 0 ? parseSshConfig(out->out) : std::nullopt;
  if (!endpoint) {
    return faultError(errc::ssh_failed, common::sensitive(destination()) +
                                            ": ssh -G gave no hostname and port (exit status " +
                                            std::to_string(out->exit_code) + ": " +
                                            common::sensitive(trimmed(out->err)) + ")");
  }
  return *endpoint;
}

Result<std::string> SshInjector::run(const std::string& remote_command,
                                     std::chrono::milliseconds timeout) {
  auto argv = sshArgv(remote_command);
  if (!argv) return argv.error();
  auto out = runCommand(*argv, timeout);
  if (!out) return out.error();
  // Who was reached and what ssh or the remote shell said: operator-only text.
  const std::string where = common::sensitive(destination());
  const std::string said = trimmed(out->err);
  const std::string err = said.empty() ? said : common::sensitive(said);
  switch (out->exit_code) {
    case 0:
      return std::move(out->out);
    case kExitSshFailed:
      return faultError(errc::ssh_failed, where + ": " + err);
    case kExitNoPid:
    case kExitNotRunning:
      return faultError(errc::no_such_process, where + ": " + err);
    case kExitNotKafka:
      return faultError(errc::not_a_broker, where + ": " + err);
    case kExitSurvivedKill:
      return faultError(errc::remote_command_failed, where + ": " + err);
    default:
      break;
  }
  std::string message = where + ": exit status " + std::to_string(out->exit_code);
  if (!err.empty()) message += ": " + err;
  return faultError(errc::remote_command_failed, message);
}

Result<ClockOffset> SshInjector::remoteClockOffset() {
  const auto timeout = std::chrono::seconds(target_.connect_timeout_s) + kShortCallSlack;
  if (auto argv = sshArgv(ssh_script::clockDialogueCommand()); argv) {
    if (auto rounds = exchangeLines(*argv, timeout, ssh_script::kClockRounds, clock_); rounds) {
      std::optional<ClockOffset> best;
      for (const auto& round : *rounds) {
        const auto kv = keyValues(round.line + "\n");
        const auto text = kv.find("clock");
        const auto reading = text != kv.end() ? parseRemoteClock(text->second) : std::nullopt;
        if (!reading) continue;
        const auto offset = bracketOffset(*reading, round.sent, round.received,
                                          remoteClockResolution(text->second));
        if (!best || offset.uncertainty_us < best->uncertainty_us) best = offset;
      }
      if (best) return *best;
    } else {
    }
  }
  const auto before = clock_.wallNow();
  auto out = run(ssh_script::clockCommand(), timeout);
  const auto after = clock_.wallNow();
  if (!out) return out.error();
  const auto kv = keyValues(*out);
  const auto text = kv.find("clock");
  const auto reading = text != kv.end() ? parseRemoteClock(text->second) : std::nullopt;
  if (!reading) {
    return faultError(errc::remote_command_failed,
                      destination() + ": the remote clock printed no time: " + *out);
  }
  return bracketOffset(*reading, before, after, remoteClockResolution(text->second));
}

void SshInjector::placeRemoteFault(FaultRecord& record, const std::string& clock_text,
                                   common::WallMicros after) {
  const auto reading = parseRemoteClock(clock_text);
  if (!reading) return;
  // A round trip that only reads the clock brackets it tighter than the fault's own command,
  // which also waits for the process; after the fault, so that the fault is not delayed.
  auto offset = remoteClockOffset();
  if (!offset) {
    offset = bracketOffset(*reading, record.requested_at, after, remoteClockResolution(clock_text));
  }
  placeFault(record, *reading, *offset, "ssh:remote-clock");
}

Result<FaultRecord> SshInjector::signal(Signal signal) {
  return signalBy(ssh_script::signalCommand(target_.pid_command, signal), signal);
}

Result<FaultRecord> SshInjector::signalBy(const std::string& script, Signal signal,
                                          std::string* output) {
  FaultRecord record;
  record.requested_at = clock_.wallNow();
  const auto timeout = std::chrono::seconds(target_.connect_timeout_s) + kShortCallSlack;
  auto out = run(script, timeout);
  if (!out) return out.error();
  const auto after = clock_.wallNow();
  const auto kv = keyValues(*out);
  const auto clock = kv.find("clock");
  if (clock != kv.end()) placeRemoteFault(record, clock->second, after);
  const auto pid = kv.find("pid");
  record.detail = "SIG" + std::string(signalName(signal)) + " to pid " +
                  (pid != kv.end() ? pid->second : "?") + " on " + target_.host;
  if (output != nullptr) *output = std::move(*out);
  return record;
}

Result<FaultRecord> SshInjector::kill() {
  return signal(Signal::kill);
}

Result<FaultRecord> SshInjector::pause(const PauseSpec& spec) {
  if (auto why = invalidReason(spec); !why.empty()) return faultError(errc::invalid_target, why);
  std::string out;
  auto record = signalBy(ssh_script::pauseCommand(target_.pid_command, spec), Signal::stop, &out);
  if (record) record->detail += expiryDetail(spec, startedTimer(out));
  return record;
}

Result<FaultRecord> SshInjector::resume(const std::string& drill) {
  if (!invalidReason(PauseSpec{drill, std::chrono::seconds(1)}).empty())
    return signal(Signal::cont);
  std::string out;
  auto record = signalBy(ssh_script::resumeCommand(target_.pid_command, drill), Signal::cont, &out);
  if (record) record->detail += cancelDetail(cancelledTimers(out));
  return record;
}

Result<FaultRecord> SshInjector::stop(std::chrono::seconds grace) {
  FaultRecord record;
  record.requested_at = clock_.wallNow();
  const auto timeout = grace + std::chrono::seconds(target_.connect_timeout_s) +
                       std::chrono::seconds(10) + kShortCallSlack;
  auto out = run(ssh_script::stopCommand(target_.pid_command, grace.count()), timeout);
  if (!out) return out.error();
  const auto after = clock_.wallNow();
  const auto kv = keyValues(*out);
  const auto clock = kv.find("clock");
  if (clock != kv.end()) placeRemoteFault(record, clock->second, after);
  const auto pid = kv.find("pid");
  const auto how = kv.find("stop");
  record.detail = "SIGTERM to pid " + (pid != kv.end() ? pid->second : "?") + " on " +
                  target_.host + ", " +
                  (how != kv.end() && how->second == "killed"
                       ? "SIGKILL after the " + std::to_string(grace.count()) + " s grace period"
                       : std::string("exited"));
  return record;
}

Result<FaultRecord> SshInjector::start() {
  FaultRecord record;
  record.requested_at = clock_.wallNow();
  const std::string command = "echo kfaild-clock=$(date +%s%N)\n" + target_.start_command + "\n";
  auto out = run(command, kStartTimeout + std::chrono::seconds(target_.connect_timeout_s));
  if (!out) return out.error();
  const auto after = clock_.wallNow();
  const auto kv = keyValues(*out);
  const auto clock = kv.find("clock");
  if (clock != kv.end()) placeRemoteFault(record, clock->second, after);
  record.detail = "ran the start command on " + target_.host;
  return record;
}

Result<ProcessState> SshInjector::inspect() {
  const auto timeout = std::chrono::seconds(target_.connect_timeout_s) + kShortCallSlack;
  auto out = run(ssh_script::inspectCommand(target_.pid_command), timeout);
  if (!out) return out.error();
  const auto kv = keyValues(*out);
  ProcessState state;
  if (kv.count("state") != 0) {
    state.detail = "the pid command printed no pid";
    return state;
  }
  const auto get = [&](const char* key) {
    const auto it = kv.find(key);
    return it == kv.end() ? std::string() : it->second;
  };
  state.pid = parseNumber(get("pid"));
  const std::string stat = get("stat");
  const bool alive = !stat.empty() && stat.front() != 'Z';
  const bool kafka = get("kafka") == "yes";
  state.running = alive && kafka;
  state.paused = state.running && stat.front() == 'T';
  if (state.running) {
    const auto now = parseNumber(get("now"));
    const auto etimes = parseNumber(get("etimes"));
    if (now && etimes) state.started_at = (*now - *etimes) * 1'000'000;
    state.detail = "pid " + get("pid") + " state " + stat;
  } else if (alive) {
    state.detail = "pid " + get("pid") + " is not a Kafka JVM (stale pid?)";
  } else {
    state.detail = "pid " + get("pid") + " is not running";
  }
  return state;
}

Result<std::vector<BrokerLogLine>> SshInjector::logLines(const std::string& file,
                                                         common::WallMicros since,
                                                         const std::vector<std::string>& patterns) {
  if (target_.log_dir.empty()) return std::vector<BrokerLogLine>{};
  if (!plainFileName(file)) {
    return faultError(errc::invalid_target, "log file '" + file + "' is not a plain file name");
  }
  // The log's times are the remote host's clock: read there from `since` on that clock, then
  // placed on kfaild's, each line uncertain by the offset's uncertainty.
  auto offset = logClockOffset();
  if (!offset) return offset.error();
  // `since` and the lines returned are on the system clock, as every injector's; the offset is
  // against kfaild's timebase (common::Clock::fromSystem).
  const auto remote_since = clock_.fromSystem(since) + offset->offset_us;
  const auto timeout = std::chrono::seconds(target_.connect_timeout_s) + kShortCallSlack;
  auto argv = sshArgv(ssh_script::logsCommand(target_.log_dir, file, patterns, remote_since));
  if (!argv) return argv.error();
  auto out = runCommand(*argv, timeout);
  if (!out) return out.error();
  if (out->exit_code == 1) return std::vector<BrokerLogLine>{};  // grep: no line matched
  if (out->exit_code == kExitSshFailed) {
    return faultError(errc::ssh_failed, common::sensitive(destination()) + ": " +
                                            common::sensitive(trimmed(out->err)));
  }
  if (out->exit_code != 0) {
    return faultError(errc::remote_command_failed, common::sensitive(destination()) +
                                                       ": grep exit status " +
                                                       std::to_string(out->exit_code) + ": " +
                                                       common::sensitive(trimmed(out->err)));
  }
  auto lines = selectKafkaLogLines(out->out, file, zone_, remote_since, patterns);
  for (auto& line : lines) {
    line.t = clock_.toSystem(line.t - offset->offset_us);
    line.clock_offset_us = offset->offset_us;
    line.clock_uncertainty_us = offset->uncertainty_us;
  }
  return lines;
}

Result<ClockOffset> SshInjector::logClockOffset() {
  constexpr common::MonoMicros kReuseUs = 60'000'000;
  std::lock_guard lock(log_offset_mutex_);
  const auto now = clock_.monoNow();
  if (log_offset_ && now - log_offset_->first < kReuseUs) return log_offset_->second;
  auto offset = remoteClockOffset();
  if (!offset) return offset.error();
  log_offset_ = std::make_pair(now, *offset);
  return *offset;
}

void SshInjector::placeGrayFaults(const GrayPlacement& placement) {
  const auto helper = placement.helper.empty() ? defaultSshGrayHelper() : placement.helper;
  NodeShell shell;
  const HelperArgv remote = [this, helper](const std::vector<std::string>& words) {
    return sshArgv(remoteHelperCommand(helper, words));
  };
  shell.nft = remote;
  shell.sh = remote;
  shell.network_placement = [this, helper]() -> Result<NftExceptions> {
    auto endpoint = effectiveEndpoint();
    if (!endpoint) return endpoint.error();
    auto host =
        run(ssh_script::hostNamespaceCommand(target_.pid_command, remoteHelperCommand(helper, {})),
            std::chrono::seconds(target_.connect_timeout_s) + kShortCallSlack);
    if (!host) return host.error();
    NftExceptions keep;
    keep.keep_tcp_ports = {endpoint->port};
    keep.keep_session_port = true;
    return keep;
  };
  // kfaild-gray reports on the host's clock; the offset is the one the log lines use.
  shell.clock_offset = [this]() { return logClockOffset(); };
  shell.fill_dir = placement.fill_dir;
  shell.instance = placement.instance;
  shell.timeout = kShellTimeout + std::chrono::seconds(target_.connect_timeout_s);
  runGrayFaultsThrough(std::move(shell));
}

void SshInjector::locate(GrayPlace& place) const {
  place.host = target_.host;
}

Result<HelperArgv> SshInjector::wayInto(const GrayPlace& place) const {
  if (!place.host.empty() && place.host != target_.host) {
    return faultError(errc::invalid_target, "the fault was placed on host " + place.host +
                                                ", and this node is now " + target_.host +
                                                ": kfaild has no way to " + place.host);
  }
  return HelperArgv{};
}

}  // namespace kfaild::fault
