// A pause's self-expiry as its scripts say it (server/fault/pause_expiry.h): the timer started and
// checked before the broker is touched, resuming only what was paused, named after the drill; the
// same for the ssh injector's remote script. tests/fault/local_injector_test.cc runs them.

#include "server/fault/pause_expiry.h"

#include <catch2/catch.hpp>

#include "server/fault/ssh_injector.h"

namespace pause_expiry_test {

using namespace kfaild::fault;
using namespace std::chrono_literals;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("a pause's drill id and expiry are checked before any script is built", "[unit][fault]") {
  CHECK(invalidReason(PauseSpec{"12", 10s}).empty());
  CHECK(invalidReason(PauseSpec{"a_B9", 1s, 0s}).empty());
  CHECK(invalidReason(PauseSpec{"", 10s}) == "drill id '' is not 1 to 48 of [A-Za-z0-9_]");
  CHECK_FALSE(invalidReason(PauseSpec{"12'; kill -CONT 1; '", 10s}).empty());
  CHECK_FALSE(invalidReason(PauseSpec{"1-2", 10s}).empty());
  CHECK_FALSE(invalidReason(PauseSpec{std::string(49, '1'), 10s}).empty());
  CHECK(invalidReason(PauseSpec{"12", 0s, 0s}) ==
        "a pause must expire at least 1 s after it began, not 0 s");
  // pause_s + kExpiryMargin, as a gray fault's duration_s + kExpiryMargin.
  CHECK(PauseSpec{"12", 10s}.expiresAfter() == 15s);
}

TEST_CASE(
    "a paused process's timer is checked to run and resumes only the process that started then",
    "[unit][fault]") {
  const auto script = processPauseTimerScript({"12", 10s});
  INFO(script);
  // Which process the pid is, read before the timer: the guard the timer checks at the expiry.
  CHECK(script.find("st=$(started $pid)\n") < script.find("mktemp"));
  CHECK(script.find("s='kfaild-pause-d12-p'$pid\ne=15\n") != std::string::npos);
  CHECK(script.find("m=$(mktemp \"/tmp/$s.XXXXXX\")") != std::string::npos);
  // systemd where it lets this user start a unit without a password; checked to be active.
  CHECK(script.find("systemd-run --no-ask-password --quiet --collect --unit=\"$w\" "
                    "--on-active=\"$e\" sh -c '") != std::string::npos);
  CHECK(script.find("&& systemctl is-active --quiet \"$w.timer\"; then\n") != std::string::npos);
  // Else setsid, in a session of its own; it polls for its file.
  CHECK(script.find("  setsid sh -c 'end=$(( $(date +%s) + $3 )); while [ -e \"$4\" ]") !=
        std::string::npos);
  CHECK(
      script.find("' kfaild-pause \"$pid\" \"$st\" \"$e\" \"$m\" </dev/null >/dev/null 2>&1 &\n") !=
      std::string::npos);
  // Reported only once it leads a session of its own, not merely once it is alive.
  CHECK(script.find("own_session \"$!\" || { rm -f -- \"$m\"; echo \"kfaild: the pause's "
                    "expiry timer did not start in a session of its own\" >&2; exit 98; }") !=
        std::string::npos);
  CHECK(script.find(kOwnSessionFn) < script.find("mktemp"));
  // Both timers resume pid $1 only if it still started at $2.
  CHECK(count(script, "[ \"$(started \"$1\")\" = \"$2\" ] && kill -CONT \"$1\"\n") == 2);
  CHECK(count(script, "cancel_timer() {") == 2);
  CHECK(script.find("echo \"kfaild-timer=$z\"\n") ==
        script.size() - std::string("echo \"kfaild-timer=$z\"\n").size());
}

TEST_CASE("a pause's cancel removes only its drill's timers for that broker", "[unit][fault]") {
  const auto process = processPauseCancelScript("12");
  CHECK(process.rfind("s='kfaild-pause-d12-p'$pid\n", 0) == 0);
  CHECK(process.find("for m in \"/tmp/$s\".*; do") != std::string::npos);
  CHECK(process.find("systemctl list-units --plain --no-legend \"$s-*.timer\"") !=
        std::string::npos);
  CHECK(process.find("systemctl --no-ask-password stop \"$u\"") != std::string::npos);

  CHECK(containerPauseStem("12", "kbf-k1_1.x") == "kfaild-pause-d12-ckbf-k1_1.x");
  CHECK(containerPauseStem("12", "a/b c*") == "kfaild-pause-d12-ca_b_c_");
  CHECK(containerPauseCancelScript("12", "a/b c*").rfind("s='kfaild-pause-d12-ca_b_c_'\n", 0) == 0);
}

TEST_CASE("a paused container's timer needs curl and unpauses it by id on the engine's socket",
          "[unit][fault]") {
  const auto script = containerPauseTimerScript({"12", 10s}, "kbf-k1-1", "/run/docker 1.sock",
                                                "/v1.41/containers/0123abcd/unpause");
  INFO(script);
  CHECK(script.rfind("command -v curl >/dev/null 2>&1 || {", 0) == 0);
  CHECK(script.find("exit 97; }\n" + std::string(kOwnSessionFn) +
                    "s='kfaild-pause-d12-ckbf-k1-1'\ne=15\n") != std::string::npos);
  CHECK(count(script,
              "curl -s -o /dev/null --max-time 60 --unix-socket \"$1\" -X POST "
              "\"http://docker$2\"\n") == 2);
  CHECK(count(script, "kfaild-pause '/run/docker 1.sock' '/v1.41/containers/0123abcd/unpause'") ==
        2);
}

TEST_CASE(
    "over ssh the pause's timer starts on the broker's host before the SIGSTOP, in the same script",
    "[unit][fault]") {
  const PauseSpec spec{"12", 10s};
  const auto pause = ssh_script::pauseCommand("cat /run/kafka.pid", spec);
  const auto checked = pause.find("echo kfaild-pid=$pid\n");
  const auto timer = pause.find(processPauseTimerScript(spec));
  const auto stop = pause.find("kill -STOP $pid || { cancel_timer; exit 1; }\n");
  REQUIRE(checked != std::string::npos);
  REQUIRE(timer != std::string::npos);
  REQUIRE(stop != std::string::npos);
  CHECK(checked < timer);
  CHECK(timer < stop);

  // Resume thaws first: a cancel that fails leaves a timer that only resumes a running broker.
  const auto resume = ssh_script::resumeCommand("cat /run/kafka.pid", "12");
  const auto cont = resume.find("kill -CONT $pid || {");
  const auto cancel = resume.find(processPauseCancelScript("12"));
  REQUIRE(cont != std::string::npos);
  REQUIRE(cancel != std::string::npos);
  CHECK(cont < cancel);
}

TEST_CASE("the timer's and the cancel's output name what they started and removed",
          "[unit][fault]") {
  CHECK(startedTimer("kfaild-pid=42\nkfaild-timer=setsid pid 4321\r\nkfaild-clock=1\n") ==
        "setsid pid 4321");
  CHECK(startedTimer("kfaild-pid=42\n").empty());
  CHECK(
      cancelledTimers(
          "kfaild-cancelled=/tmp/kfaild-pause-d1-p2.abc\nnoise\nkfaild-cancelled=x-abc.timer\n") ==
      "/tmp/kfaild-pause-d1-p2.abc, x-abc.timer");
  CHECK(expiryDetail({"12", 10s}, "setsid pid 4321") ==
        "; thaws by itself 15 s after (setsid pid 4321)");
  CHECK(cancelDetail("") == "; no expiry timer was left");
  CHECK(cancelDetail("/tmp/f") == "; its expiry timer cancelled (/tmp/f)");
}

}  // namespace pause_expiry_test
