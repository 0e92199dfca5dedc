#pragma once

// A pause's self-expiry (issue 43): every pause kfaild injects ends by itself, whether or not
// kfaild is alive to resume it, pause_s + kExpiryMargin after it began, as a gray fault does.
//
// Before the broker is frozen, a timer is started beside it and checked to run; if it cannot be,
// the pause is not done. The timer is
//   - `systemd-run --no-ask-password --on-active=<s>` where systemd runs and lets the user start
//     a unit without a password (root): outside kfaild's cgroup and the ssh session, so neither a
//     stop of kfaild's unit (KillMode=control-group) nor logind's KillUserProcesses ends it;
//   - else a detached `setsid sh` (its own session and process group, so it outlives kfaild and
//     the ssh session that started it), checked with `kill -0`. It polls, every second, for a
//     file of its own, `/tmp/<stem>.XXXXXX` (mktemp), and does nothing once the file is gone.
//     It still ends with kfaild when kfaild's systemd unit is stopped (it is in the unit's
//     cgroup), and over ssh when logind's KillUserProcesses ends the session's processes.
// At the expiry the timer resumes only what was paused: a process only if its start time
// (/proc/<pid>/stat's 22nd field, `ps -o lstart` where there is no /proc) is still the one read
// at the pause (a pid reused since is left alone); a container by its id (a container re-created
// under the same name has another).
//
// Names. The timers of one pause are named `<stem>-XXXXXX` (the systemd unit, with mktemp's
// suffix: one per run of a drill with repeats) after the stem `kfaild-pause-d<drill>-p<pid>`
// (a process) or `kfaild-pause-d<drill>-c<container>` (a container): resume cancels only its own
// drill's timers for that broker, never a later drill's.
//
// Cancel (resume): removes the stem's files (a setsid timer then ends within a second) and stops
// its systemd timers; prints "kfaild-cancelled=<file or unit>" for each. Resume runs it after the
// broker is thawed, so a cancel that fails leaves a timer that only resumes a running broker.
//
// The scripts are POSIX sh (mktemp, setsid from util-linux, sed, cut). Pure functions,
// thread-safe.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/fault/gray_fault.h"

namespace kfaild::fault {

// What Injector::pause is asked: freeze the broker for drill `drill` for `duration`; it thaws by
// itself expiresAfter() from the pause if nobody resumes it.
struct PauseSpec {
  std::string drill;                 // the drill's id: 1 to 48 of [A-Za-z0-9_]; names the timers
  std::chrono::seconds duration{0};  // pause_s
  std::chrono::seconds margin = kExpiryMargin;  // tests shorten it
  std::chrono::seconds expiresAfter() const { return duration + margin; }
};

// Why `spec` cannot be paused as given (empty when it can): a drill id other than 1 to 48 of
// [A-Za-z0-9_], or an expiry of less than a second.
std::string invalidReason(const PauseSpec& spec);

// A sh function, `own_session PID`: waits (up to 10 s) until PID, a child just started with
// `setsid ... &`, leads a session of its own; fails when it has exited or is still in ours. `$!`
// is known before the child has run setsid(2), and a timer still in kfaild's session and process
// group dies with kfaild's group: a detached timer is reported only once it is detached. Reads
// /proc, else ps. Uses only the variables own_i and own_v.
extern const std::string_view kOwnSessionFn;

// Exit status of the timer scripts when no timer could be started (the reason on stderr), and of
// the container's when kfaild's host has no curl to unpause it with.
inline constexpr int kExitNoTimer = 98;
inline constexpr int kExitNoCurl = 97;

// "kfaild-pause-d<drill>-c<container>", every character of the container's name outside
// [A-Za-z0-9_.-] made '_'. Precondition: invalidReason of a spec with `drill` is empty.
std::string containerPauseStem(std::string_view drill, std::string_view container);

// For a broker process: scripts that expect `$pid` to hold its validated pid. The timer's script
// reads the start time, starts the timer (stem "kfaild-pause-d<drill>-p$pid") and checks it runs,
// prints "kfaild-timer=<systemd-run <unit>.timer | setsid pid N>" and defines `cancel_timer`, for
// a script that then fails to freeze the broker; exit kExitNoTimer when no timer runs.
// Precondition: invalidReason(spec) is empty.
std::string processPauseTimerScript(const PauseSpec& spec);
std::string processPauseCancelScript(std::string_view drill);

// For a container on an engine on this host's unix socket `socket`: at the expiry, POST
// `unpause_path` ("/v1.41/containers/<id>/unpause") there with curl. The same output, exit
// kExitNoCurl when there is no curl. Precondition: invalidReason(spec) is empty.
std::string containerPauseTimerScript(const PauseSpec& spec, std::string_view container,
                                      const std::string& socket, const std::string& unpause_path);
std::string containerPauseCancelScript(std::string_view drill, std::string_view container);

// For a node reached through commands (CommandInjector): at the expiry, runs `resume_argv` (the
// resume command with its placeholders filled, its program an absolute path) on kfaild's host,
// each word exactly as given. Stem "kfaild-pause-d<drill>-n<node>". Under systemd-run it runs with
// the service manager's environment, not kfaild's: a command that needs variables names them in
// its argv (`env KUBECONFIG=... kubectl ...`). Preconditions: invalidReason(spec) is empty and
// commandTimerProblem(resume_argv) is empty.
std::string commandPauseTimerScript(const PauseSpec& spec, std::int32_t node,
                                    const std::vector<std::string>& resume_argv);
std::string commandPauseCancelScript(std::string_view drill, std::int32_t node);
// Why `resume_argv` cannot be a timer's action: a word with `$` (the service manager would expand
// it in a unit's argv), or a program that is not an absolute path; empty when it can.
std::string commandTimerProblem(const std::vector<std::string>& resume_argv);

// From a timer script's output: the "kfaild-timer=" value ("setsid pid 4321"), empty when there
// is none. From a cancel script's: every "kfaild-cancelled=" value, joined with ", ".
std::string startedTimer(std::string_view output);
std::string cancelledTimers(std::string_view output);

// What a pause's and a resume's FaultRecord::detail add: "; thaws by itself 15 s after (setsid
// pid 4321)"; "; its expiry timer cancelled (/tmp/kfaild-pause-d12-p4242.Ab12Cd)" or "; no expiry
// timer was left" (it had fired, or the pause had none).
std::string expiryDetail(const PauseSpec& spec, std::string_view timer);
std::string cancelDetail(std::string_view cancelled);

}  // namespace kfaild::fault
