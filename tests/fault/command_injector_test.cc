#include "server/fault/command_injector.h"

#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "server/common/sensitive.h"
#include "server/fault/errc.h"
#include "tests/support/eventually.h"
#include "tests/support/temp_dir.h"

namespace command_injector_test {

using namespace kfaild;
using namespace kfaild::fault;
using namespace std::chrono_literals;
using config::CommandStep;
using config::CommandTarget;

namespace {

// Each reading of the wall clock one step after the one before: a command's bracket is then
// exactly one step wide, whatever the command took.
class SteppingClock final : public common::Clock {
 public:
  SteppingClock(common::WallMicros first, std::int64_t step) : next_(first), step_(step) {}
  common::WallMicros wallNow() const override {
    const auto now = next_;
    next_ += step_;
    return now;
  }
  common::MonoMicros monoNow() const override { return real_.monoNow(); }
  void sleepUntil(common::MonoMicros deadline) const override { real_.sleepUntil(deadline); }

 private:
  mutable common::WallMicros next_;
  std::int64_t step_;
  common::SystemClock real_;
};

CommandStep step(std::vector<std::string> argv, std::chrono::seconds timeout = 10s) {
  return {std::move(argv), timeout};
}

CommandTarget commands() {
  CommandTarget t;
  t.kill = step({"true"});
  t.stop = step({"true"});
  return t;
}

// A log4j line of Kafka's at `t` (UTC).
std::string logLine(common::WallMicros t, const std::string& message) {
  const std::time_t s = t / 1'000'000;
  std::tm tm{};
  ::gmtime_r(&s, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
  char ms[8];
  std::snprintf(ms, sizeof ms, ",%03d", static_cast<int>(t / 1000 % 1000));
  return std::string("[") + stamp + ms + "] INFO " + message +
         " (org.apache.kafka.common.utils.LoggingSignalHandler)\n";
}

bool processGone(pid_t pid) {
  for (int i = 0; i < 100; ++i) {
    if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

}  // namespace

TEST_CASE("a placeholder inside a word is filled, and doubled or other braces are kept as they are",
          "[unit][fault]") {
  const config::PlaceholderValues values{"1", "10.0.0.7", "42"};
  CHECK(config::expandPlaceholders("my-cluster-kafka-{id}", values).text == "my-cluster-kafka-1");
  CHECK(config::expandPlaceholders("{host}:{id}/{drill}", values).text == "10.0.0.7:1/42");
  CHECK(config::expandPlaceholders("jsonpath={.status.phase}", values).text ==
        "jsonpath={.status.phase}");
  CHECK(config::expandPlaceholders("{{.State.Status}}", values).text == "{{.State.Status}}");
  CHECK(config::expandPlaceholders("{{id}}", values).text == "{{id}}");
  CHECK(config::expandPlaceholders("{}", values).text == "{}");
  CHECK(config::expandPlaceholders("{ id }", values).text == "{ id }");

  const auto unknown = config::expandPlaceholders("pod-{ID}", values);
  CHECK(unknown.problem.find("{ID} is not a placeholder") != std::string::npos);
  const auto no_host = config::expandPlaceholders("{host}", {"1", std::nullopt, std::nullopt});
  CHECK(no_host.problem.find("needs the node's address") != std::string::npos);
  const auto no_drill = config::expandPlaceholders("d{drill}", {"1", "h", std::nullopt});
  CHECK(no_drill.problem.find("only in pause and resume") != std::string::npos);
}

TEST_CASE("a command runs its argv without a shell, with the node's placeholders filled",
          "[integration][fault]") {
  const testing::TempDir dir;
  auto target = commands();
  target.kill =
      step({"touch", (dir / "killed {id} at {host}").string(), (dir / "$HOME;*").string()});
  const common::SystemClock clock;
  CommandInjector injector(target, 3, "10.0.0.3", LogZone::utc, clock);

  const auto record = injector.kill();
  REQUIRE(record);
  CHECK(std::filesystem::exists(dir / "killed 3 at 10.0.0.3"));
  CHECK(std::filesystem::exists(dir / "$HOME;*"));  // no shell expanded it
  CHECK(record->fault_time_source == kCommandBracketSource);
  CHECK(record->detail.find("ran ") == 0);
  CHECK(record->detail.find(std::string(common::kSensitiveOpen)) != std::string::npos);
}

TEST_CASE("a command that exits non-zero fails its step with the status and the end of its stderr",
          "[integration][fault]") {
  auto target = commands();
  target.kill = step(
      {"sh", "-c", "head -c 20000 /dev/zero | tr '\\0' x >&2; echo ' the reason' >&2; exit 3"});
  const common::SystemClock clock;
  CommandInjector injector(target, 1, "", LogZone::utc, clock);

  const auto record = injector.kill();
  REQUIRE_FALSE(record);
  CHECK(record.error().code == errc::command_failed);
  const auto& message = record.error().message;
  CHECK(message.find("kill: ") == 0);
  CHECK(message.find("exited with status 3") != std::string::npos);
  CHECK(message.find("the reason" + std::string(common::kSensitiveClose)) != std::string::npos);
  CHECK(message.size() < 2600);  // the end of stderr, bounded
  // A kill that failed leaves the node's state unknown: recovery asks again.
  const auto state = injector.inspect();
  REQUIRE(state);
  CHECK_FALSE(state->running);
}

TEST_CASE("a command past its timeout fails as a timeout and leaves no process behind",
          "[integration][fault]") {
  const testing::TempDir dir;
  const auto pid_file = (dir / "child.pid").string();
  auto target = commands();
  target.stop = step({"sh", "-c", "sleep 5 & echo $! > \"$0\"; wait", pid_file}, 1s);
  const common::SystemClock clock;
  CommandInjector injector(target, 1, "", LogZone::utc, clock);

  const auto t0 = std::chrono::steady_clock::now();
  const auto record = injector.stop(30s);
  const auto took = std::chrono::steady_clock::now() - t0;
  REQUIRE_FALSE(record);
  CHECK(record.error().code == errc::timeout);
  CHECK(record.error().message.find("stop: ") == 0);
  CHECK(took < 3s);
  pid_t child = 0;
  std::ifstream(pid_file) >> child;
  REQUIRE(child > 1);
  CHECK(processGone(child));  // the sleep the command started died with its process group
}

TEST_CASE("a kill's fault time is the middle of its command on kfaild's clock, uncertain by half",
          "[unit][fault]") {
  constexpr common::WallMicros kFirst = 1'765'000'000'000'000;
  const SteppingClock clock(kFirst, 800'000);
  CommandInjector injector(commands(), 1, "", LogZone::utc, clock);

  const auto record = injector.kill();
  REQUIRE(record);
  CHECK(record->requested_at == kFirst);
  CHECK(record->faultTime() == kFirst + 400'000);
  CHECK(record->uncertainty_us == 400'000);
  CHECK(record->fault_time_source == kCommandBracketSource);
}

TEST_CASE("a stop is narrowed to Kafka's SIGTERM line in log_dir when it lies within the command",
          "[integration][fault]") {
  constexpr common::WallMicros kFirst = 1'765'000'000'000'000;
  const testing::TempDir dir;
  auto target = commands();
  target.log_dir = dir.path().string();

  SECTION("the line within the command") {
    std::ofstream(dir / "server.log")
        << logLine(kFirst - 60'000'000, "Terminating process due to signal SIGTERM")
        << logLine(kFirst + 1'300'000, "Terminating process due to signal SIGTERM")
        << logLine(kFirst + 1'500'000, "shutting down");
    const SteppingClock clock(kFirst, 2'000'000);
    CommandInjector injector(target, 1, "", LogZone::utc, clock);
    const auto record = injector.stop(30s);
    REQUIRE(record);
    CHECK(record->fault_time_source == kCommandLogSource);
    CHECK(record->faultTime() == kFirst + 1'300'000);
    CHECK(record->uncertainty_us == 1'000);
  }
  SECTION("no line within it: the bracket stays") {
    std::ofstream(dir / "server.log")
        << logLine(kFirst + 5'000'000, "Terminating process due to signal SIGTERM");
    const SteppingClock clock(kFirst, 2'000'000);
    CommandInjector injector(target, 1, "", LogZone::utc, clock);
    const auto record = injector.stop(30s);
    REQUIRE(record);
    CHECK(record->fault_time_source == kCommandBracketSource);
    CHECK(record->faultTime() == kFirst + 1'000'000);
    CHECK(record->detail.find("no SIGTERM line") != std::string::npos);
  }
}

TEST_CASE("an empty start is the platform's: it returns at once, or once alive says it runs",
          "[integration][fault]") {
  const testing::TempDir dir;
  const common::SystemClock clock;

  SECTION("without alive, kfaild goes by its own commands") {
    CommandInjector injector(commands(), 1, "", LogZone::utc, clock);
    auto state = injector.inspect();
    REQUIRE(state);
    CHECK_FALSE(state->running);  // not known since kfaild's start: recovery starts it
    REQUIRE(injector.kill());
    CHECK_FALSE(injector.inspect()->running);
    const auto started = injector.start();
    REQUIRE(started);
    CHECK(started->detail.find("brought back by the platform") != std::string::npos);
    CHECK(started->uncertainty_us < 100'000);
    CHECK(injector.inspect()->running);
  }
  SECTION("with alive, start waits for it") {
    // Alive on its third call.
    const auto count = (dir / "calls").string();
    auto target = commands();
    target.alive = step({"sh", "-c",
                         "n=$(cat \"$0\" 2>/dev/null || echo 0); echo $((n + 1)) > \"$0\"; "
                         "[ \"$n\" -ge 2 ]",
                         count});
    target.start.timeout = 10s;
    CommandInjector injector(target, 1, "", LogZone::utc, clock);
    const auto started = injector.start();
    REQUIRE(started);
    CHECK(started->detail.find("brought back by the platform (alive after") != std::string::npos);
    CHECK(started->uncertainty_us >= 400'000);  // two polls of alive
  }
  SECTION("with alive never running, start fails at its timeout") {
    auto target = commands();
    target.alive = step({"false"});
    target.start.timeout = 1s;
    CommandInjector injector(target, 1, "", LogZone::utc, clock);
    const auto started = injector.start();
    REQUIRE_FALSE(started);
    CHECK(started.error().code == errc::timeout);
    CHECK(started.error().message.find("by the platform") != std::string::npos);
  }
}

TEST_CASE("alive answers inspect by its exit status and, where set, the output it must contain",
          "[integration][fault]") {
  const common::SystemClock clock;
  auto target = commands();
  target.alive = step({"echo", "Running"});
  target.alive_output = "Running";
  CHECK(CommandInjector(target, 1, "", LogZone::utc, clock).inspect()->running);
  target.alive = step({"echo", "Pending"});
  CHECK_FALSE(CommandInjector(target, 1, "", LogZone::utc, clock).inspect()->running);
  target.alive = step({"true"});  // prints nothing where output is needed
  const auto silent = CommandInjector(target, 1, "", LogZone::utc, clock).inspect();
  REQUIRE_FALSE(silent);
  CHECK(silent.error().message.find("printed nothing") != std::string::npos);
  target.alive_output.clear();
  CHECK(CommandInjector(target, 1, "", LogZone::utc, clock).inspect()->running);
  target.alive = step({"false"});
  CHECK_FALSE(CommandInjector(target, 1, "", LogZone::utc, clock).inspect()->running);
}

TEST_CASE(
    "a pause runs its command with the drill, after its timer, and is taken as open after a "
    "restart",
    "[integration][fault]") {
  const testing::TempDir dir;
  const common::SystemClock clock;
  SECTION("no pause command") {
    CommandInjector injector(commands(), 1, "", LogZone::utc, clock);
    const auto paused = injector.pause({"7", 10s});
    REQUIRE_FALSE(paused);
    CHECK(paused.error().code == errc::unsupported);
    CHECK_FALSE(injector.inspect()->paused);
  }
  SECTION("pause and resume") {
    auto target = commands();
    target.pause = step({"touch", (dir / "paused-{drill}").string()});
    target.resume = step({"touch", (dir / "resumed-{drill}").string()});
    CommandInjector injector(target, 1, "", LogZone::utc, clock);
    CHECK(injector.inspect()->paused);  // not known since kfaild's start: replay resumes it
    const auto paused = injector.pause({"7", 10s});
    REQUIRE(paused);
    INFO(paused->detail);
    CHECK(std::filesystem::exists(dir / "paused-7"));
    CHECK(paused->detail.find("; thaws by itself 15 s after (") != std::string::npos);
    CHECK(paused->detail.find("), by its resume command") != std::string::npos);
    CHECK(injector.inspect()->paused);
    const auto resumed = injector.resume("7");
    REQUIRE(resumed);
    INFO(resumed->detail);
    CHECK(std::filesystem::exists(dir / "resumed-7"));
    // The resume cancelled the timer, which then never runs the resume command again.
    CHECK(resumed->detail.find("; its expiry timer cancelled (") != std::string::npos);
    const auto state = injector.inspect();
    CHECK(state->running);
    CHECK_FALSE(state->paused);
  }
}

TEST_CASE(
    "a command node's pause ends by itself: its timer runs the resume command at the expiry, "
    "each word as given",
    "[integration][fault]") {
  const testing::TempDir dir;
  const common::SystemClock clock;
  const std::string drill = "cmd_" + std::to_string(::getpid());
  const auto resumed = dir / "resumed; it's {drill}";
  auto target = commands();
  target.pause = step({"touch", (dir / "paused").string()});
  // A bare program name: the timer runs it by the path found now, and a word with a space, a
  // semicolon and a quote stays one word.
  target.resume = step({"touch", (dir / "resumed; it's {drill}").string()});
  {
    CommandInjector injector(target, 1, "", LogZone::utc, clock);
    const auto paused = injector.pause({drill, 1s, 1s});
    REQUIRE(paused);
    INFO(paused->detail);
    CHECK(paused->detail.find("; thaws by itself 2 s after (") != std::string::npos);
  }
  // The injector is gone, as kfaild would be: only the timer runs the resume command.
  const auto expected = dir / ("resumed; it's " + drill);
  CHECK_FALSE(std::filesystem::exists(expected));
  CHECK(testing::eventually([&] { return std::filesystem::exists(expected); }, 6s));
  CHECK_FALSE(std::filesystem::exists(resumed));

  SECTION("a resume command with '$' cannot be a timer's, and nothing is paused") {
    auto dollar = target;
    dollar.pause = step({"touch", (dir / "paused-again").string()});
    dollar.resume = step({"echo", "$HOME"});
    CommandInjector injector(dollar, 1, "", LogZone::utc, clock);
    const auto paused = injector.pause({drill, 1s, 1s});
    REQUIRE_FALSE(paused);
    CHECK(paused.error().code == errc::invalid_target);
    CHECK(paused.error().message.find("'$'") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir / "paused-again"));
  }
}

TEST_CASE("a command node refuses gray faults and reads its broker's logs from log_dir",
          "[integration][fault]") {
  const testing::TempDir dir;
  const common::SystemClock clock;
  auto target = commands();
  target.log_dir = dir.path().string();
  std::ofstream(dir / "controller.log") << logLine(1'765'000'000'000'000, "Fencing broker 1");
  CommandInjector injector(target, 1, "", LogZone::utc, clock);

  CHECK(injector.refusal(GrayFault::isolate).find("kfaild-gray") != std::string::npos);
  const auto isolated = injector.isolate({});
  REQUIRE_FALSE(isolated);
  CHECK(isolated.error().code == errc::unsupported);
  const auto lines = injector.logLines("controller.log", 1'764'000'000'000'000, {"Fencing"});
  REQUIRE(lines);
  REQUIRE(lines->size() == 1);
  CHECK(lines->front().t == 1'765'000'000'000'000);
}

}  // namespace command_injector_test
