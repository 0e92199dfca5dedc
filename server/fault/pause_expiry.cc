#include "server/fault/pause_expiry.h"

#include <cassert>
#include <vector>

#include "server/fault/command.h"

namespace kfaild::fault {
namespace {

constexpr std::size_t kMaxDrillName = 48;

// The timers' files: a directory every host has, that both the setsid timer and a later resume
// (another ssh session, kfaild restarted) see alike.
constexpr std::string_view kTimerDir = "/tmp";

// Which process a pid is: its start time. No single quote in it: it also goes inside the timer's
// sh -c '...'. The fields after "(comm) " start at the 3rd, so starttime (22nd) is their 20th;
// the greedy match skips a comm that holds ") " itself.
constexpr std::string_view kStartedFn =
    "started() { if [ -r /proc/$1/stat ]; then sed \"s/^.*) //\" /proc/$1/stat | cut -d\" \" "
    "-f20; else ps -o lstart= -p $1; fi; }\n";

// What the timer does at the expiry with its two arguments: resume pid $1 if it still started at
// $2.
std::string processResumeAction() {
  return std::string(kStartedFn) + "[ \"$(started \"$1\")\" = \"$2\" ] && kill -CONT \"$1\"\n";
}

}  // namespace

const std::string_view kOwnSessionFn =
    "own_session() { own_i=0; while :; do if [ -r /proc/$1/stat ]; then own_v=$(sed \"s/^.*) //\" "
    "/proc/$1/stat | cut -d\" \" -f4); else own_v=$(ps -o sid= -p \"$1\" | tr -d \" \"); fi; "
    "[ \"$own_v\" = \"$1\" ] && return 0; kill -0 \"$1\" 2>/dev/null || return 1; "
    "own_i=$((own_i + 1)); [ \"$own_i\" -le 100 ] || return 1; sleep 0.1 2>/dev/null || sleep 1; "
    "done; }\n";

namespace {

// POST path $2 on the engine at socket $1.
constexpr std::string_view kUnpauseAction =
    "curl -s -o /dev/null --max-time 60 --unix-socket \"$1\" -X POST \"http://docker$2\"\n";

// The setsid timer's wait: $3 seconds, or until its file $4 is gone (resume removed it); then it
// removes the file and goes on to the action.
constexpr std::string_view kPoll =
    "end=$(( $(date +%s) + $3 )); while [ -e \"$4\" ] && [ \"$(date +%s)\" -lt \"$end\" ]; do "
    "sleep 1; done; [ -e \"$4\" ] || exit 0; rm -f -- \"$4\"\n";

// `stem` is a sh assignment of s (the stem); `action` takes its two arguments from `args` (sh
// words of the outer script).
std::string timerScript(const std::string& stem, std::chrono::seconds after,
                        const std::string& action, const std::string& args) {
  // Inside sh -c '...'; and the service manager expands ${VAR} in a unit's argv (systemd-run's
  // --expand-environment, on by default), so neither may be in the action.
  assert(action.find('\'') == std::string::npos && action.find("${") == std::string::npos);
  const std::string dir(kTimerDir);
  const std::string no_timer = std::to_string(kExitNoTimer);
  return std::string(kOwnSessionFn) + stem + "\n" + "e=" + std::to_string(after.count()) + "\n" +
         "m=$(mktemp \"" + dir +
         "/$s.XXXXXX\") || { echo \"kfaild: cannot create the pause timer's file in " + dir +
         "\" >&2; exit " + no_timer +
         "; }\n"
         "w=\"$s-${m##*.}\"\n"
         "if [ -d /run/systemd/system ] && command -v systemd-run >/dev/null 2>&1 && "
         "systemd-run --no-ask-password --quiet --collect --unit=\"$w\" --on-active=\"$e\" sh -c "
         "'" +
         action + "' kfaild-pause " + args +
         " >/dev/null 2>&1 && systemctl is-active --quiet \"$w.timer\"; then\n"
         "  rm -f -- \"$m\"\n"
         "  z=\"systemd-run $w.timer\"\n"
         "  cancel_timer() { systemctl --no-ask-password stop \"$w.timer\" >/dev/null 2>&1 || :; "
         "}\n"
         "else\n"
         "  command -v setsid >/dev/null 2>&1 || { rm -f -- \"$m\"; echo \"kfaild: neither "
         "systemd-run nor setsid "
         "is there to start the timer that ends the pause by itself\" >&2; exit " +
         no_timer +
         "; }\n"
         "  setsid sh -c '" +
         std::string(kPoll) + action + "' kfaild-pause " + args +
         " \"$e\" \"$m\" </dev/null >/dev/null 2>&1 &\n"
         "  z=\"setsid pid $!\"\n"
         "  own_session \"$!\" || { rm -f -- \"$m\"; echo \"kfaild: the pause's expiry "
         "timer did not start in a session of its own\" >&2; exit " +
         no_timer +
         "; }\n"
         "  cancel_timer() { rm -f -- \"$m\"; }\n"
         "fi\n"
         "echo \"kfaild-timer=$z\"\n";
}

std::string cancelScript(const std::string& stem) {
  const std::string dir(kTimerDir);
  return stem + "\n" + "for m in \"" + dir +
         "/$s\".*; do if [ -e \"$m\" ]; then rm -f -- \"$m\" && echo \"kfaild-cancelled=$m\"; "
         "fi; done\n"
         "if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then\n"
         "  for u in $(systemctl list-units --plain --no-legend \"$s-*.timer\" 2>/dev/null | "
         "grep -o \"$s-[A-Za-z0-9]*[.]timer\"); do\n"
         "    systemctl --no-ask-password stop \"$u\" >/dev/null 2>&1 && echo "
         "\"kfaild-cancelled=$u\"\n"
         "  done\n"
         "fi\n";
}

std::string processStem(std::string_view drill) {
  return "s=" + shellQuote("kfaild-pause-d" + std::string(drill) + "-p") + "$pid";
}

std::string containerStem(std::string_view drill, std::string_view container) {
  return "s=" + shellQuote(containerPauseStem(drill, container));
}

std::string commandStem(std::string_view drill, std::int32_t node) {
  return "s=" + shellQuote("kfaild-pause-d" + std::string(drill) + "-n" + std::to_string(node));
}

// Runs $1, the resume command's words each single-quoted: eval takes them as they are.
constexpr std::string_view kCommandResumeAction = "eval \"$1\"\n";

}  // namespace

std::string invalidReason(const PauseSpec& spec) {
  const bool plain =
      !spec.drill.empty() && spec.drill.size() <= kMaxDrillName &&
      spec.drill.find_first_not_of(
          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
  if (!plain) return "drill id '" + spec.drill + "' is not 1 to 48 of [A-Za-z0-9_]";
  if (spec.expiresAfter().count() < 1) {
    return "a pause must expire at least 1 s after it began, not " +
           std::to_string(spec.expiresAfter().count()) + " s";
  }
  return {};
}

std::string containerPauseStem(std::string_view drill, std::string_view container) {
  std::string name(container);
  for (auto& c : name) {
    const bool kept = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '.' || c == '-';
    if (!kept) c = '_';
  }
  return "kfaild-pause-d" + std::string(drill) + "-c" + name;
}

std::string processPauseTimerScript(const PauseSpec& spec) {
  return std::string(kStartedFn) +
         "st=$(started $pid)\n"
         "[ -n \"$st\" ] || { echo \"kfaild: cannot read the start time of pid $pid\" >&2; exit " +
         std::to_string(kExitNoTimer) + "; }\n" +
         timerScript(processStem(spec.drill), spec.expiresAfter(), processResumeAction(),
                     "\"$pid\" \"$st\"");
}

std::string processPauseCancelScript(std::string_view drill) {
  return cancelScript(processStem(drill));
}

std::string containerPauseTimerScript(const PauseSpec& spec, std::string_view container,
                                      const std::string& socket, const std::string& unpause_path) {
  return "command -v curl >/dev/null 2>&1 || { echo \"kfaild: there is no curl on kfaild's host to "
         "unpause the "
         "container with when the pause expires\" >&2; exit " +
         std::to_string(kExitNoCurl) + "; }\n" +
         timerScript(containerStem(spec.drill, container), spec.expiresAfter(),
                     std::string(kUnpauseAction),
                     shellQuote(socket) + " " + shellQuote(unpause_path));
}

std::string containerPauseCancelScript(std::string_view drill, std::string_view container) {
  return cancelScript(containerStem(drill, container));
}

std::string commandTimerProblem(const std::vector<std::string>& resume_argv) {
  if (resume_argv.empty()) return "there is no resume command";
  if (resume_argv.front().empty() || resume_argv.front().front() != '/')
    return "the resume command's program " + resume_argv.front() + " is not an absolute path";
  for (const auto& word : resume_argv) {
    if (word.find('$') != std::string::npos)
      return "a word of the resume command holds '$', which a systemd timer would expand";
  }
  return {};
}

std::string commandPauseTimerScript(const PauseSpec& spec, std::int32_t node,
                                    const std::vector<std::string>& resume_argv) {
  assert(commandTimerProblem(resume_argv).empty());
  std::string words;
  for (const auto& word : resume_argv) words += (words.empty() ? "" : " ") + shellQuote(word);
  // Two words, as the other timers' actions take: the command line and an unused one.
  return timerScript(commandStem(spec.drill, node), spec.expiresAfter(),
                     std::string(kCommandResumeAction), shellQuote(words) + " -");
}

std::string commandPauseCancelScript(std::string_view drill, std::int32_t node) {
  return cancelScript(commandStem(drill, node));
}

namespace {

std::vector<std::string> valuesOf(std::string_view output, std::string_view key) {
  std::vector<std::string> out;
  const std::string prefix = "kfaild-" + std::string(key) + "=";
  std::size_t pos = 0;
  while (pos < output.size()) {
    auto end = output.find('\n', pos);
    if (end == std::string_view::npos) end = output.size();
    auto line = output.substr(pos, end - pos);
    pos = end + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.substr(0, prefix.size()) == prefix && line.size() > prefix.size()) {
      out.emplace_back(line.substr(prefix.size()));
    }
  }
  return out;
}

}  // namespace

std::string startedTimer(std::string_view output) {
  const auto values = valuesOf(output, "timer");
  return values.empty() ? std::string() : values.back();
}

std::string cancelledTimers(std::string_view output) {
  return join(valuesOf(output, "cancelled"), ", ");
}

std::string expiryDetail(const PauseSpec& spec, std::string_view timer) {
  return "; thaws by itself " + std::to_string(spec.expiresAfter().count()) + " s after (" +
         std::string(timer) + ")";
}

std::string cancelDetail(std::string_view cancelled) {
  return cancelled.empty() ? std::string("; no expiry timer was left")
                           : "; its expiry timer cancelled (" + std::string(cancelled) + ")";
}

}  // namespace kfaild::fault
