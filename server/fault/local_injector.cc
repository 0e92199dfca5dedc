#include "server/fault/local_injector.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <regex>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "server/common/sensitive.h"
#include "server/common/utf8.h"
#include "server/fault/command.h"
#include "server/fault/errc.h"
#include "server/fault/gray_runner.h"

namespace kfaild::fault {
namespace {

constexpr std::chrono::milliseconds kExitPoll{20};
constexpr std::chrono::seconds kAfterKill{10};
constexpr std::chrono::seconds kStartTimeout{180};
constexpr std::chrono::seconds kStopStateWait{2};
// Starting or cancelling a pause's timer: a few forks, and systemd-run's round trip to systemd.
constexpr std::chrono::seconds kPauseScriptTimeout{20};

std::optional<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The state letter of /proc/<pid>/stat (R, S, D, T, Z, ...), or 0 when the process is gone.
char procState(pid_t pid) {
  const auto stat = readFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return 0;
  const auto close = stat->rfind(')');
  if (close == std::string::npos || close + 2 >= stat->size()) return 0;
  return (*stat)[close + 2];
}

// The argv of /proc/<pid>/cmdline, or why there is none: the file cannot be read (errno's text),
// or it is empty (a kernel thread, a process being torn down).
struct Cmdline {
  std::vector<std::string> argv;
  std::string problem;  // empty when argv was read
};

Cmdline procCmdline(pid_t pid) {
  const auto path = "/proc/" + std::to_string(pid) + "/cmdline";
  errno = 0;
  const auto raw = readFile(path);
  if (!raw)
    return {{}, "cannot be read (" + std::string(std::strerror(errno != 0 ? errno : EACCES)) + ")"};
  if (raw->empty()) return {{}, "is empty (a kernel thread, or a process that is exiting)"};
  Cmdline out;
  std::size_t pos = 0;
  while (pos < raw->size()) {
    auto end = raw->find('\0', pos);
    if (end == std::string::npos) end = raw->size();
    out.argv.push_back(raw->substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

// Alive for signalling purposes: exists and has not exited (a zombie has).
bool alive(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  const char s = procState(pid);
  return s != 0 && s != 'Z' && s != 'X';
}

std::optional<common::WallMicros> procStartTime(pid_t pid) {
  const auto stat = readFile("/proc/" + std::to_string(pid) + "/stat");
  const auto boot = readFile("/proc/stat");
  if (!stat || !boot) return std::nullopt;
  const auto close = stat->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  // Field 22 (starttime, clock ticks after boot); fields 3.. follow the ')'.
  std::istringstream fields(stat->substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
  }
  const auto btime_at = boot->find("\nbtime ");
  if (btime_at == std::string::npos) return std::nullopt;
  const long long btime = std::atoll(boot->c_str() + btime_at + 7);
  const long long ticks = std::atoll(field.c_str());
  const long hz = ::sysconf(_SC_CLK_TCK);
  if (hz <= 0 || btime <= 0) return std::nullopt;
  return btime * 1'000'000LL + ticks * 1'000'000LL / hz;
}

// The thread group (process) /proc/<pid> belongs to: <pid> itself for a process, another number
// for a thread, whose id /proc also answers to. nullopt when it cannot be read.
std::optional<pid_t> procTgid(pid_t pid) {
  const auto status = readFile("/proc/" + std::to_string(pid) + "/status");
  if (!status) return std::nullopt;
  const auto at = status->find("\nTgid:");
  if (at == std::string::npos) return std::nullopt;
  return static_cast<pid_t>(std::atol(status->c_str() + at + 6));
}

// When `path` was last written, on the wall clock; nullopt when it cannot be read.
std::optional<common::WallMicros> fileWrittenAt(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return static_cast<common::WallMicros>(st.st_mtim.tv_sec) * 1'000'000 + st.st_mtim.tv_nsec / 1000;
}

// SIGSTOP stops a JVM once every one of its threads has stopped, a moment after kill(2)
// returned; a pause is not done before that.
void waitForStopState(pid_t pid, bool stopped) {
  const auto deadline = std::chrono::steady_clock::now() + kStopStateWait;
  while (std::chrono::steady_clock::now() < deadline) {
    const char s = procState(pid);
    if (s == 0 || ((s == 'T' || s == 't') == stopped)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

std::string signalText(int signal) {
  switch (signal) {
    case SIGKILL:
      return "SIGKILL";
    case SIGTERM:
      return "SIGTERM";
    case SIGSTOP:
      return "SIGSTOP";
    case SIGCONT:
      return "SIGCONT";
    default:
      return "signal " + std::to_string(signal);
  }
}

// `dir`/`file`.* last written at or after `since`, oldest first.
std::vector<std::string> rolledSince(const std::string& dir, const std::string& file,
                                     common::WallMicros since) {
  std::vector<std::pair<common::WallMicros, std::string>> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const auto name = entry.path().filename().string();
    if (name.size() <= file.size() + 1 || name.compare(0, file.size() + 1, file + ".") != 0)
      continue;
    struct stat st{};
    if (::stat(entry.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    const common::WallMicros written =
        std::int64_t{st.st_mtim.tv_sec} * 1'000'000 + st.st_mtim.tv_nsec / 1000;
    if (written >= since) found.emplace_back(written, entry.path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& [t, path] : found) out.push_back(std::move(path));
  return out;
}

std::string tailOf(const std::string& text, std::size_t max = 2000) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return common::utf8Tail(t, max);
}

}  // namespace

std::optional<std::string> stalePidProblem(pid_t pid, std::optional<pid_t> tgid,
                                           std::optional<common::WallMicros> started,
                                           std::optional<common::WallMicros> pid_file_written) {
  if (tgid && *tgid != pid) {
    return "is a thread of process " + std::to_string(*tgid) +
           ", not a process: the pid file is stale (its process exited and the number was reused)";
  }
  if (started && pid_file_written && *started > *pid_file_written + kPidFileSlackUs) {
    return "started " + std::to_string((*started - *pid_file_written) / 1'000'000) +
           " s after the pid file was written: the pid file is stale (its process exited and the "
           "number was reused)";
  }
  return std::nullopt;
}

bool looksLikeKafkaJvm(const std::vector<std::string>& argv) {
  if (argv.empty()) return false;
  const std::string& exe = argv.front();
  const auto slash = exe.rfind('/');
  const std::string base = slash == std::string::npos ? exe : exe.substr(slash + 1);
  if (base.find("java") == std::string::npos) return false;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    if (argv[i] == "kafka.Kafka") return true;
  }
  return false;
}

std::string netnsMismatch(const std::string& netns, std::optional<std::uint64_t> configured,
                          pid_t pid, std::optional<std::uint64_t> broker) {
  const auto where = "/proc/" + std::to_string(pid) + "/ns/net";
  if (!configured)
    return "network namespace '" + netns + "' (/var/run/netns/" + netns + ") cannot be read";
  if (!broker) return "the broker's network namespace (" + where + ") cannot be read";
  if (*configured == *broker) return {};
  return "the broker (pid " + std::to_string(pid) + ") is not in network namespace '" + netns +
         "' (inode " + std::to_string(*configured) + ") but in inode " + std::to_string(*broker) +
         " (" + where + "): rules placed there would cut something else";
}

std::optional<std::uint64_t> namespaceInode(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return static_cast<std::uint64_t>(st.st_ino);
}

LocalInjector::LocalInjector(config::LocalTarget target, LogZone zone, const common::Clock& clock)
    : GrayFaultInjector(clock), target_(std::move(target)), zone_(zone), clock_(clock) {}

std::string LocalInjector::describe() const {
  return "local process (pid file " + target_.pid_file + ")";
}

Result<pid_t> LocalInjector::brokerPid() const {
  const auto text = readFile(target_.pid_file);
  if (!text) {
    return faultError(errc::no_such_process,
                      "no pid file " + target_.pid_file + ": " + std::strerror(errno));
  }
  static const std::regex kPid("\\s*([0-9]{1,10})\\s*");
  std::smatch m;
  if (!std::regex_match(*text, m, kPid)) {
    return faultError(errc::no_such_process, "pid file " + target_.pid_file + " holds no pid");
  }
  const long long value = std::stoll(m[1].str());
  if (value <= 1 || value > std::numeric_limits<pid_t>::max()) {
    return faultError(errc::no_such_process,
                      "pid file " + target_.pid_file + " holds pid " + m[1].str());
  }
  const auto pid = static_cast<pid_t>(value);
  if (!alive(pid)) {
    return faultError(errc::no_such_process, "pid " + std::to_string(pid) + " from " +
                                                 target_.pid_file +
                                                 " is not running (stale pid file)");
  }
  if (auto problem = stalePidProblem(pid, procTgid(pid), procStartTime(pid),
                                     fileWrittenAt(target_.pid_file))) {
    return faultError(errc::no_such_process,
                      "pid " + std::to_string(pid) + " from " + target_.pid_file + " " + *problem);
  }
  // What kfaild cannot show to be a Kafka JVM it does not signal. A process that was just
  // killed has an empty cmdline for a moment before it becomes a zombie: give it up to 500 ms to
  // finish exiting, so that it reads as gone rather than as not a broker.
  auto cmdline = procCmdline(pid);
  for (int wait = 0; wait < 50 && !cmdline.problem.empty() && alive(pid); ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    cmdline = procCmdline(pid);
  }
  if (!cmdline.problem.empty()) {
    if (!alive(pid)) {
      return faultError(errc::no_such_process, "pid " + std::to_string(pid) + " from " +
                                                   target_.pid_file +
                                                   " is not running (it exited)");
    }
    return faultError(errc::not_a_broker,
                      "pid " + std::to_string(pid) + " from " + target_.pid_file + ": /proc/" +
                          std::to_string(pid) + "/cmdline " + cmdline.problem +
                          ", so kfaild cannot tell it is a Java process running kafka.Kafka; "
                          "refusing to signal it");
  }
  if (!looksLikeKafkaJvm(cmdline.argv)) {
    return faultError(errc::not_a_broker, "pid " + std::to_string(pid) + " from " +
                                              target_.pid_file + " is '" + cmdline.argv.front() +
                                              "', not a Java process running kafka.Kafka; " +
                                              "refusing to signal it (stale pid file?)");
  }
  return pid;
}

Result<FaultRecord> LocalInjector::signalBroker(int signal, pid_t* signalled) {
  FaultRecord record;
  record.requested_at = clock_.wallNow();
  auto pid = brokerPid();
  if (!pid) return pid.error();
  if (signalled != nullptr) *signalled = *pid;
  if (auto sent = signalPid(signal, *pid, record); !sent) return sent.error();
  return record;
}

Status LocalInjector::signalPid(int signal, pid_t pid, FaultRecord& record) const {
  // The signal cannot arrive before the call starts; it can before the call returns.
  const common::WallMicros sent_at = clock_.wallNow();
  if (::kill(pid, signal) != 0) {
    const int err = errno;
    return faultError(
        err == EPERM ? errc::permission_denied : errc::no_such_process,
        signalText(signal) + " to pid " + std::to_string(pid) + ": " + std::strerror(err));
  }
  // kfaild's own clock: no offset, only the moment within the call.
  placeFault(record, sent_at, ClockOffset{0, clock_.wallNow() - sent_at}, "local");
  record.detail = signalText(signal) + " to pid " + std::to_string(pid);
  return okStatus();
}

Result<FaultRecord> LocalInjector::kill() {
  return signalBroker(SIGKILL);
}

namespace {

// A pause timer's script (pause_expiry.h) on this host, for broker `pid`.
Result<CommandOutput> runPauseScript(pid_t pid, const std::string& script) {
  auto out =
      runCommand(std::vector<std::string>{"sh", "-c", "pid=" + std::to_string(pid) + "\n" + script},
                 kPauseScriptTimeout);
  if (!out) return out.error();
  if (out->exit_code != 0) {
    return faultError(
        errc::command_failed,
        "sh exited with status " + std::to_string(out->exit_code) + ": " + tailOf(out->err));
  }
  return out;
}

}  // namespace

Result<FaultRecord> LocalInjector::pause(const PauseSpec& spec) {
  if (auto why = invalidReason(spec); !why.empty()) return faultError(errc::invalid_target, why);
  FaultRecord record;
  record.requested_at = clock_.wallNow();
  auto pid = brokerPid();
  if (!pid) return pid.error();
  // The timer first: a pause never exists without the timer that ends it.
  auto timer = runPauseScript(*pid, processPauseTimerScript(spec));
  if (!timer) {
    return Error{timer.error().code,
                 "pid " + std::to_string(*pid) +
                     " not paused: the timer that would end the pause by itself did not start: " +
                     timer.error().message};
  }
  if (auto sent = signalPid(SIGSTOP, *pid, record); !sent) {
    (void)runPauseScript(*pid, processPauseCancelScript(spec.drill));
    return sent.error();
  }
  waitForStopState(*pid, true);
  record.detail += expiryDetail(spec, startedTimer(timer->out));
  return record;
}

Result<FaultRecord> LocalInjector::resume(const std::string& drill) {
  pid_t pid = 0;
  auto record = signalBroker(SIGCONT, &pid);
  if (!record) return record;
  waitForStopState(pid, false);
  if (!invalidReason(PauseSpec{drill, std::chrono::seconds(1)}).empty()) return record;
  auto cancelled = runPauseScript(pid, processPauseCancelScript(drill));
  record->detail +=
      cancelled ? cancelDetail(cancelledTimers(cancelled->out))
                : "; its expiry timer could not be cancelled (it would only resume a running "
                  "broker): " +
                      cancelled.error().message;
  return record;
}

Result<FaultRecord> LocalInjector::stop(std::chrono::seconds grace) {
  pid_t pid = 0;
  auto record = signalBroker(SIGTERM, &pid);
  if (!record) return record;
  // A frozen JVM would sit on the SIGTERM until the grace period ends.
  ::kill(pid, SIGCONT);
  const auto t0 = std::chrono::steady_clock::now();
  bool killed = false;
  while (alive(pid)) {
    const auto waited = std::chrono::steady_clock::now() - t0;
    if (!killed && waited >= grace) {
      ::kill(pid, SIGKILL);
      killed = true;
    } else if (killed && waited >= grace + kAfterKill) {
      return faultError(errc::timeout, "pid " + std::to_string(pid) + " still alive " +
                                           std::to_string(kAfterKill.count()) + " s after SIGKILL");
    }
    std::this_thread::sleep_for(kExitPoll);
  }
  const auto took =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  record->detail += killed
                        ? ", SIGKILL after the " + std::to_string(grace.count()) + " s grace period"
                        : ", exited after " + std::to_string(took.count()) + " ms";
  return record;
}

Result<FaultRecord> LocalInjector::start() {
  FaultRecord record;
  record.requested_at = clock_.wallNow();
  // A stale pid file (gone, or another process's pid now) is no reason not to start: the start
  // command writes a new one.
  if (auto pid = brokerPid()) {
    record.detail = "already running (pid " + std::to_string(*pid) + ")";
    return record;
  }
  auto out = runCommand(target_.start_command, kStartTimeout);
  if (!out) return out.error();
  if (out->exit_code != 0) {
    std::string message = describeArgv(target_.start_command) + " exited with status " +
                          std::to_string(out->exit_code);
    if (!out->err.empty()) message += ": " + common::sensitive(tailOf(out->err));
    return faultError(errc::command_failed, message);
  }
  const auto done_at = clock_.wallNow();
  placeFault(record, done_at, ClockOffset{0, done_at - record.requested_at}, "local");
  record.detail = "ran " + describeArgv(target_.start_command);
  return record;
}

Result<ProcessState> LocalInjector::inspect() {
  ProcessState state;
  auto pid = brokerPid();
  if (!pid) {
    state.detail = pid.error().message;
    return state;
  }
  state.pid = *pid;
  state.running = true;
  const char s = procState(*pid);
  state.paused = s == 'T' || s == 't';
  state.started_at = procStartTime(*pid);
  state.detail = std::string("pid ") + std::to_string(*pid) + " state " + s;
  return state;
}

Result<std::vector<BrokerLogLine>> LocalInjector::logLines(
    const std::string& file, common::WallMicros since, const std::vector<std::string>& patterns) {
  if (target_.log_dir.empty()) return std::vector<BrokerLogLine>{};
  return readLogDir(target_.log_dir, file, zone_, since, patterns);
}

Result<std::vector<BrokerLogLine>> readLogDir(const std::string& log_dir, const std::string& file,
                                              LogZone zone, common::WallMicros since,
                                              const std::vector<std::string>& patterns) {
  static const std::regex kPlain("[A-Za-z0-9][A-Za-z0-9._-]*");
  if (!std::regex_match(file, kPlain)) {
    return faultError(errc::invalid_target, "log file '" + file + "' is not a plain file name");
  }
  const std::string path = log_dir + "/" + file;
  // Kafka rolls each log every hour (server/fault/kafka_log.h): the files rolled from this one
  // and last written at or after `since` first, then the file itself.
  std::string all;
  for (const auto& rolled : rolledSince(log_dir, file, since)) {
    if (const auto text = readFile(rolled)) all += *text;
  }
  const auto text = readFile(path);
  if (!text) return faultError(errc::io_error, "cannot read " + path + ": " + std::strerror(errno));
  all += *text;
  return selectKafkaLogLines(all, file, zone, since, patterns);
}

std::optional<std::string> netnsIdentity(const std::string& name) {
  struct stat st{};
  if (name.empty() || name.find('/') != std::string::npos ||
      ::stat(("/run/netns/" + name).c_str(), &st) != 0) {
    return std::nullopt;
  }
  return "net:[" + std::to_string(st.st_ino) + "]";
}

void LocalInjector::placeGrayFaults(const GrayPlacement& placement) {
  gray_netns_ = placement.netns;
  gray_helper_ = placement.helper.empty() ? defaultLocalGrayHelper() : placement.helper;
  NodeShell shell;
  if (!placement.netns.empty()) {
    // Rules go in only with the broker checked to be in the namespace: here when kfaild may read
    // its /proc/<pid>/ns/net, and always by kfaild-gray as root (--expect-pid) at the injection.
    shell.nft = [this, helper = gray_helper_, netns = placement.netns](
                    const std::vector<std::string>& words) -> Result<std::vector<std::string>> {
      const bool places =
          !words.empty() && (words.front() == "isolate" || words.front() == "throttle");
      std::int64_t expect = 0;
      if (places) {
        auto pid = brokerPid();
        if (!pid) return pid.error();
        expect = *pid;
      }
      return localHelperArgv(helper, netns, 0, words, expect);
    };
    shell.network_placement = [this, netns = placement.netns]() -> Result<NftExceptions> {
      auto pid = brokerPid();
      if (!pid) return pid.error();
      const auto where = "/proc/" + std::to_string(*pid) + "/ns/net";
      const auto broker = namespaceInode(where);
      // An unprivileged kfaild may not read a broker of another user's namespace: kfaild-gray
      // checks.
      if (!broker && (errno == EACCES || errno == EPERM)) return NftExceptions{};
      const auto why =
          netnsMismatch(netns, namespaceInode("/var/run/netns/" + netns), *pid, broker);
      if (!why.empty()) return faultError(errc::invalid_target, why);
      return NftExceptions{};
    };
  } else {
    shell.nft_refusal =
        "the broker runs in kfaild's own network namespace (no netns configured): "
        "cutting it off would cut kfaild off as well";
  }
  shell.sh = [helper = gray_helper_](
                 const std::vector<std::string>& words) -> Result<std::vector<std::string>> {
    return localHelperArgv(helper, {}, 0, words);
  };
  shell.fill_dir = placement.fill_dir;
  shell.instance = placement.instance;
  runGrayFaultsThrough(std::move(shell));
}

void LocalInjector::locate(GrayPlace& place) const {
  if (place.table.empty()) return;
  place.netns = gray_netns_;
  place.netns_id = netnsIdentity(gray_netns_).value_or("");
}

namespace {

// Into the namespace a local place names, whatever the configuration says now; one that is gone,
// or was re-created since (a reboot, `lab down` and up), holds nothing of the drill's.
HelperArgv placedNft(const GrayPlace& place, const std::vector<std::string>& helper) {
  if (place.table.empty() || place.netns.empty()) return {};
  return
      [place, helper](const std::vector<std::string>& words) -> Result<std::vector<std::string>> {
        const auto id = netnsIdentity(place.netns);
        if (!id) return faultError(errc::not_present, "no network namespace " + place.netns);
        if (!place.netns_id.empty() && *id != place.netns_id) {
          return faultError(errc::not_present, "network namespace " + place.netns + " is " + *id +
                                                   ", not the " + place.netns_id +
                                                   " the fault went into (re-created since)");
        }
        return localHelperArgv(helper, place.netns, 0, words);
      };
}

}  // namespace

Result<HelperArgv> LocalInjector::wayInto(const GrayPlace& place) const {
  return placedNft(place, gray_helper_);
}

Result<FaultRecord> healLocalPlace(const GrayPlace& place, const common::Clock& clock) {
  const auto helper = defaultLocalGrayHelper();
  NodeShell shell;
  shell.nft_refusal = "no network namespace is recorded for the fault";
  shell.sh = [helper](const std::vector<std::string>& words) -> Result<std::vector<std::string>> {
    return localHelperArgv(helper, {}, 0, words);
  };
  GrayRunner runner(std::move(shell), clock);
  return runner.healPlaced(place, placedNft(place, helper));
}

}  // namespace kfaild::fault
