#include "server/fault/command_injector.h"

#include <utility>

#include "server/common/sensitive.h"
#include "server/common/utf8.h"
#include "server/fault/errc.h"
#include "server/fault/local_injector.h"

namespace kfaild::fault {
namespace {

// Kafka's log4j timestamps have millisecond resolution.
constexpr std::int64_t kLogTimeResolutionUs = 1'000;
// How much of a failed command's stderr a message keeps: its end, where the reason usually is.
constexpr std::size_t kStderrTail = 2000;

std::string stderrTail(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return common::utf8Tail(text, kStderrTail);
}

std::string secondsText(std::int64_t us) {
  const auto tenths = (us + 50'000) / 100'000;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " s";
}

// The fault somewhere in [before, after] on kfaild's clock: the middle, ± half.
void bracket(FaultRecord& record, common::WallMicros before, common::WallMicros after) {
  const std::int64_t half = (after - before + 1) / 2;
  record.requested_at = before;
  placeFault(record, before + half, ClockOffset{0, half}, std::string(kCommandBracketSource));
}

}  // namespace

CommandInjector::CommandInjector(config::CommandTarget target, std::int32_t id, std::string address,
                                 LogZone zone, const common::Clock& clock)
    : target_(std::move(target)),
      id_(id),
      address_(std::move(address)),
      zone_(zone),
      clock_(clock) {}

std::string CommandInjector::describe() const {
  return "commands (kill: " + describeArgv(target_.kill.argv) + ")";
}

Result<FaultRecord> CommandInjector::runStep(const char* name, const config::CommandStep& step,
                                             const std::optional<std::string>& drill) {
  const config::PlaceholderValues values{
      std::to_string(id_), address_.empty() ? std::nullopt : std::optional<std::string>(address_),
      drill};
  auto expanded = config::expandArgv(step.argv, values);
  // The loader checked every placeholder against this node: a problem here is one it let through.
  if (!expanded.problem.empty())
    return faultError(errc::invalid_target, std::string(name) + ": " + expanded.problem);
  FaultRecord record;
  const auto before = clock_.wallNow();
  auto out = runCommand(expanded.argv, step.timeout);
  const auto after = clock_.wallNow();
  if (!out) return Error{out.error().code, std::string(name) + ": " + out.error().message};
  if (out->exit_code != 0) {
    std::string message = std::string(name) + ": " + describeArgv(expanded.argv) +
                          " exited with status " + std::to_string(out->exit_code);
    if (auto err = stderrTail(out->err); !err.empty()) message += ": " + common::sensitive(err);
    return faultError(errc::command_failed, message);
  }
  bracket(record, before, after);
  record.detail = "ran " + describeArgv(expanded.argv) + " (" + secondsText(after - before) + ")";
  return record;
}

Result<FaultRecord> CommandInjector::kill() {
  auto record = runStep("kill", target_.kill);
  down_ = record ? std::optional<bool>(true) : std::nullopt;
  if (record) paused_ = false;
  return record;
}

Result<FaultRecord> CommandInjector::stop(std::chrono::seconds /*grace*/) {
  auto record = runStep("stop", target_.stop);
  down_ = record ? std::optional<bool>(true) : std::nullopt;
  if (!record) return record;
  paused_ = false;
  narrowToSigterm(*record);
  return record;
}

void CommandInjector::narrowToSigterm(FaultRecord& record) const {
  if (target_.log_dir.empty()) return;
  const auto began = record.requested_at;
  const auto ended = record.faultTime() + record.uncertainty_us;
  auto lines = readLogDir(target_.log_dir, "server.log", zone_, began - kLogTimeResolutionUs,
                          {std::string(kSigtermLine)});
  if (!lines) {
    record.detail += "; its SIGTERM line not read: " + lines.error().message;
    return;
  }
  // The broker's log on this host's clock: its line is the fault only if it lies within the
  // command (a line outside it is an earlier stop's, or another clock's).
  for (auto it = lines->rbegin(); it != lines->rend(); ++it) {
    if (it->t < began - kLogTimeResolutionUs || it->t > ended) continue;
    placeFault(record, it->t, ClockOffset{0, kLogTimeResolutionUs}, std::string(kCommandLogSource));
    record.detail += "; Kafka's SIGTERM line at +" + secondsText(it->t - began) + " into it";
    return;
  }
  record.detail += "; no SIGTERM line of Kafka's within it in " +
                   common::sensitive(target_.log_dir + "/server.log");
}

namespace {

// Starting or cancelling a pause's timer: a few forks, or systemd-run's round trip to systemd.
constexpr std::chrono::seconds kTimerScriptTimeout{20};

Result<CommandOutput> runTimerScript(const std::string& script) {
  auto out = runCommand({"sh", "-c", script}, kTimerScriptTimeout);
  if (!out) return out.error();
  if (out->exit_code != 0) {
    return faultError(errc::command_failed, "sh exited with status " +
                                                std::to_string(out->exit_code) + ": " +
                                                common::sensitive(stderrTail(out->err)));
  }
  return out;
}

}  // namespace

Result<std::vector<std::string>> CommandInjector::resumeArgv(const std::string& drill) const {
  const config::PlaceholderValues values{
      std::to_string(id_), address_.empty() ? std::nullopt : std::optional<std::string>(address_),
      drill};
  auto expanded = config::expandArgv(target_.resume.argv, values);
  if (!expanded.problem.empty()) return faultError(errc::invalid_target, expanded.problem);
  // The timer may run where PATH is the service manager's: the program as found now.
  if (auto path = config::programPath(expanded.argv.front()); !path.empty())
    expanded.argv.front() = path;
  if (auto why = commandTimerProblem(expanded.argv); !why.empty())
    return faultError(errc::invalid_target, why);
  return expanded.argv;
}

Result<FaultRecord> CommandInjector::pause(const PauseSpec& spec) {
  if (auto why = invalidReason(spec); !why.empty()) return faultError(errc::invalid_target, why);
  if (target_.pause.argv.empty()) {
    return faultError(errc::unsupported,
                      describe() + " has no pause command (command.pause and command.resume)");
  }
  // The timer first: a pause never exists without the timer that runs the resume command.
  auto argv = resumeArgv(spec.drill);
  if (!argv) {
    return Error{
        argv.error().code,
        "not paused: the resume command cannot be the pause's expiry: " + argv.error().message};
  }
  auto timer = runTimerScript(commandPauseTimerScript(spec, id_, *argv));
  if (!timer) {
    return Error{timer.error().code,
                 "not paused: the timer that would end the pause by itself did not start: " +
                     timer.error().message};
  }
  auto record = runStep("pause", target_.pause, spec.drill);
  if (!record) {
    (void)runTimerScript(commandPauseCancelScript(spec.drill, id_));
    return record;
  }
  paused_ = true;
  record->detail += expiryDetail(spec, startedTimer(timer->out)) + ", by its resume command";
  return record;
}

Result<FaultRecord> CommandInjector::resume(const std::string& drill) {
  if (target_.resume.argv.empty()) {
    return faultError(errc::unsupported, describe() + " has no resume command (command.resume)");
  }
  auto record = runStep("resume", target_.resume, drill);
  if (!record) return record;
  paused_ = false;
  down_ = false;
  if (!invalidReason(PauseSpec{drill, std::chrono::seconds(1)}).empty()) return record;
  auto cancelled = runTimerScript(commandPauseCancelScript(drill, id_));
  record->detail +=
      cancelled ? cancelDetail(cancelledTimers(cancelled->out))
                : "; its expiry timer could not be cancelled (it would run the resume command "
                  "once more): " +
                      cancelled.error().message;
  return record;
}

Result<bool> CommandInjector::aliveNow(std::string& detail) {
  const config::PlaceholderValues values{
      std::to_string(id_), address_.empty() ? std::nullopt : std::optional<std::string>(address_),
      std::nullopt};
  const auto argv = config::expandArgv(target_.alive.argv, values).argv;
  auto out = runCommand(argv, target_.alive.timeout);
  if (!out) return Error{out.error().code, "alive: " + out.error().message};
  if (out->exit_code != 0) {
    detail = "alive: " + describeArgv(argv) + " exited with status " +
             std::to_string(out->exit_code) + ": not running";
    return false;
  }
  if (target_.alive_output.empty()) {
    detail = "alive: " + describeArgv(argv) + " exited with status 0: running";
    return true;
  }
  if (out->out.empty()) {
    return faultError(errc::command_failed,
                      "alive: " + describeArgv(argv) + " printed nothing, where '" +
                          target_.alive_output + "' tells it runs" +
                          (out->err.empty() ? "" : ": " + common::sensitive(stderrTail(out->err))));
  }
  const bool running = out->out.find(target_.alive_output) != std::string::npos;
  detail = "alive: " + describeArgv(argv) + " printed " + common::sensitive(stderrTail(out->out)) +
           (running ? ": running" : ": not running");
  return running;
}

Result<std::string> CommandInjector::awaitAlive(common::MonoMicros deadline,
                                                common::MonoMicros since) {
  if (target_.alive.argv.empty()) return std::string();
  while (true) {
    std::string detail;
    auto alive = aliveNow(detail);
    if (alive && *alive) return "alive after " + secondsText(clock_.monoNow() - since);
    const auto poll = std::chrono::duration_cast<std::chrono::microseconds>(kAlivePoll).count();
    if (clock_.monoNow() + poll > deadline) {
      return faultError(errc::timeout, "not running within " + secondsText(deadline - since) +
                                           " (" + (alive ? detail : alive.error().message) + ")");
    }
    clock_.sleepUntil(clock_.monoNow() + poll);
  }
}

Result<FaultRecord> CommandInjector::start() {
  const auto& step = target_.start;
  const auto since = clock_.monoNow();
  const auto deadline =
      since + std::chrono::duration_cast<std::chrono::microseconds>(step.timeout).count();
  FaultRecord record;
  const auto before = clock_.wallNow();
  if (!step.argv.empty()) {
    auto ran = runStep("start", step);
    if (!ran) return ran;
    record = std::move(*ran);
  }
  auto waited = awaitAlive(deadline, since);
  if (!waited) {
    return Error{
        waited.error().code,
        std::string(step.argv.empty() ? "start (by the platform: start is empty)" : "start") +
            ": " + waited.error().message};
  }
  bracket(record, before, clock_.wallNow());
  if (step.argv.empty()) {
    record.detail =
        "start is empty: brought back by the platform" +
        (waited->empty() ? std::string("; kfaild waits for it to register") : " (" + *waited + ")");
  } else if (!waited->empty()) {
    record.detail += ", " + *waited;
  }
  down_ = false;
  paused_ = false;
  return record;
}

Result<ProcessState> CommandInjector::inspect() {
  ProcessState state;
  if (target_.alive.argv.empty()) {
    state.running = down_.has_value() && !*down_;
    state.detail = !down_   ? "no alive command, and not known since kfaild's start"
                   : *down_ ? "no alive command: down since kfaild's kill or stop"
                            : "no alive command: up since kfaild's start or resume";
  } else {
    auto alive = aliveNow(state.detail);
    if (!alive) return alive.error();
    state.running = *alive;
  }
  state.paused = paused_.value_or(!target_.resume.argv.empty());
  if (state.paused) state.detail += paused_ ? "; paused by kfaild" : "; taken as paused";
  return state;
}

Result<std::vector<BrokerLogLine>> CommandInjector::logLines(
    const std::string& file, common::WallMicros since, const std::vector<std::string>& patterns) {
  if (target_.log_dir.empty()) return std::vector<BrokerLogLine>{};
  return readLogDir(target_.log_dir, file, zone_, since, patterns);
}

std::string CommandInjector::refusal(GrayFault fault) const {
  return describe() + " cannot inject " + toString(fault) +
         ": gray faults need kfaild-gray on the node (nft rules, a disk filler), which only a "
         "docker, ssh or local node runs";
}

}  // namespace kfaild::fault
