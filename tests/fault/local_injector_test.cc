#include "server/fault/local_injector.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utime.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "server/fault/command.h"
#include "server/fault/errc.h"
#include "tests/fault/lab_broker.h"
#include "tests/support/temp_dir.h"

namespace local_injector_test {

using namespace kfaild;
using namespace kfaild::fault;
using namespace std::chrono_literals;

namespace {

// A pause for the tests that do not look at its expiry: long enough never to expire in them.
const PauseSpec kTestPause{"local_test", 30s};

// A child process for the safety checks, reaped on destruction.
class Child {
 public:
  explicit Child(std::vector<std::string> argv) {
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      ::execvp(args[0], args.data());
      ::_exit(127);
    }
    // Until the child has exec'd, its command line is this test binary's.
    const auto self = std::filesystem::read_symlink("/proc/self/exe");
    testing::eventually(5s, [&] {
      std::error_code ec;
      const auto exe = std::filesystem::read_symlink("/proc/" + std::to_string(pid_) + "/exe", ec);
      return !ec && exe != self;
    });
  }
  ~Child() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }
  // Alive and not yet exited (a zombie child counts as gone).
  bool running() const {
    char state = 0;
    std::ifstream stat("/proc/" + std::to_string(pid_) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    if (close != std::string::npos && close + 2 < text.size()) state = text[close + 2];
    return state != 0 && state != 'Z';
  }
  char state() const {
    std::ifstream stat("/proc/" + std::to_string(pid_) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    return close != std::string::npos && close + 2 < text.size() ? text[close + 2] : 0;
  }

 private:
  pid_t pid_ = -1;
};

void writePidFile(const std::string& path, pid_t pid) {
  std::ofstream(path) << pid << "\n";
}

// A stand-in with a Kafka JVM's command line ("java ... kafka.Kafka ...") that does whatever
// the given Python does on SIGTERM: the local injector's own logic, without a JVM's start-up.
// It creates `ready` once its handler is in place.
std::vector<std::string> fakeKafkaJvm(const std::string& on_sigterm, const std::string& ready) {
  const std::string script =
      "import signal, sys, time\n"
      "signal.signal(signal.SIGTERM, lambda *a: " +
      on_sigterm +
      ")\n"
      "open(sys.argv[2], 'w').close()\n"
      "while True: time.sleep(0.05)\n";
  return {"bash", "-c", "exec -a java /usr/bin/python3 -c \"$0\" kafka.Kafka \"$1\"", script,
          ready};
}

}  // namespace

TEST_CASE("a stale pid file pointing at another process is refused and that process untouched",
          "[integration][fault]") {
  const testing::TempDir dir;
  const Child sleeper({"sleep", "60"});
  const auto pid_file = (dir / "kafka.pid").string();
  writePidFile(pid_file, sleeper.pid());
  const common::SystemClock clock;
  LocalInjector injector({pid_file, {"true"}, ""}, LogZone::utc, clock);

  for (auto* action : {+[](LocalInjector& i) { return i.kill(); },
                       +[](LocalInjector& i) { return i.pause(kTestPause); },
                       +[](LocalInjector& i) { return i.stop(1s); }}) {
    const auto r = action(injector);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == errc::not_a_broker);
    CHECK(r.error().message.find("sleep") != std::string::npos);
  }
  std::this_thread::sleep_for(100ms);
  CHECK(sleeper.running());
  CHECK(sleeper.state() != 'T');
  const auto state = injector.inspect();
  REQUIRE(state);
  CHECK_FALSE(state->running);
}

TEST_CASE("a pid that is a thread's, or a process younger than its pid file, is a stale pid file",
          "[unit]") {
  constexpr common::WallMicros kWritten = 1'700'000'000'000'000;
  CHECK_FALSE(stalePidProblem(4242, 4242, kWritten - 30'000'000, kWritten));
  CHECK_FALSE(
      stalePidProblem(4242, 4242, kWritten + kPidFileSlackUs, kWritten));  // the start time's grain
  CHECK_FALSE(stalePidProblem(4242, std::nullopt, std::nullopt, std::nullopt));  // nothing to go by
  CHECK(*stalePidProblem(4242, 4100, kWritten - 30'000'000, kWritten) ==
        "is a thread of process 4100, not a process: the pid file is stale (its process exited and "
        "the number "
        "was reused)");
  CHECK(*stalePidProblem(4242, 4242, kWritten + 660'000'000, kWritten) ==
        "started 660 s after the pid file was written: the pid file is stale (its process exited "
        "and the number "
        "was reused)");
}

namespace {

// A stand-in Kafka JVM (fakeKafkaJvm's command line) with a second thread, whose id it writes to
// `thread_id` (then to `ready`).
std::vector<std::string> fakeKafkaJvmWithThread(const std::string& thread_id,
                                                const std::string& ready) {
  const std::string script =
      "import sys, threading, time\n"
      "def other():\n"
      "    open(sys.argv[2], 'w').write(str(threading.get_native_id()))\n"
      "    open(sys.argv[3], 'w').close()\n"
      "    time.sleep(600)\n"
      "threading.Thread(target=other, daemon=True).start()\n"
      "while True: time.sleep(0.05)\n";
  return {"bash", "-c",      "exec -a java /usr/bin/python3 -c \"$0\" kafka.Kafka \"$1\" \"$2\"",
          script, thread_id, ready};
}

}  // namespace

TEST_CASE(
    "a pid file whose number was reused by a broker's thread or by a later broker is no such "
    "process, "
    "and that broker untouched",
    "[integration][fault]") {
  const testing::TempDir dir;
  const common::SystemClock clock;
  const auto pid_file = (dir / "kafka.pid").string();
  LocalInjector injector({pid_file, {"true"}, ""}, LogZone::utc, clock);
  const auto refused = [&](const std::string& expected) {
    const auto state = injector.inspect();
    REQUIRE(state);
    CHECK_FALSE(state->running);
    CHECK(state->detail.find(expected) != std::string::npos);
    for (auto* action : {+[](LocalInjector& i) { return i.kill(); },
                         +[](LocalInjector& i) { return i.pause(kTestPause); }}) {
      const auto r = action(injector);
      REQUIRE_FALSE(r);
      CHECK(r.error().code == errc::no_such_process);
      CHECK(r.error().message.find(expected) != std::string::npos);
    }
  };

  SECTION("a thread of another broker's JVM") {
    const auto tid_file = (dir / "tid").string();
    const auto ready = (dir / "ready").string();
    const Child broker(fakeKafkaJvmWithThread(tid_file, ready));
    testing::eventually(10s, [&] { return std::filesystem::exists(ready); });
    std::string tid;
    std::ifstream(tid_file) >> tid;
    REQUIRE_FALSE(tid.empty());
    REQUIRE(std::stoi(tid) != broker.pid());
    std::ofstream(pid_file) << tid << "\n";
    refused("is a thread of process " + std::to_string(broker.pid()));
    std::this_thread::sleep_for(100ms);
    CHECK(broker.running());
    CHECK(broker.state() != 'T');
  }

  SECTION("a broker started after the pid file was written") {
    const auto ready = (dir / "ready").string();
    const Child broker(fakeKafkaJvm("None", ready));
    testing::eventually(10s, [&] { return std::filesystem::exists(ready); });
    writePidFile(pid_file, broker.pid());
    // Written ten minutes ago for a process that has since exited.
    std::filesystem::last_write_time(pid_file,
                                     std::filesystem::file_time_type::clock::now() - 10min);
    refused("s after the pid file was written: the pid file is stale");
    std::this_thread::sleep_for(100ms);
    CHECK(broker.running());
    CHECK(broker.state() != 'T');

    // The same process, its pid file written now: a broker.
    writePidFile(pid_file, broker.pid());
    const auto state = injector.inspect();
    REQUIRE(state);
    CHECK(state->running);
  }
}

namespace {

// A live process whose /proc/<pid>/cmdline is empty: a kernel thread (kthreadd is pid 2 where the
// host's kernel threads are visible). 0 when there is none.
pid_t kernelThread() {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto pid = static_cast<pid_t>(std::stol(name));
    if (pid <= 1) continue;
    std::ifstream cmdline(entry.path() / "cmdline");
    std::ifstream stat(entry.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    const char state =
        close != std::string::npos && close + 2 < text.size() ? text[close + 2] : 'Z';
    if (cmdline && cmdline.peek() == std::ifstream::traits_type::eof() && state != 'Z' &&
        state != 'X')
      return pid;
  }
  return 0;
}

}  // namespace

TEST_CASE("a pid whose command line is empty is refused, naming the pid and the /proc path",
          "[integration][fault]") {
  const pid_t pid = kernelThread();
  INFO("this test needs a kernel thread visible in /proc");
  REQUIRE(pid > 1);
  const testing::TempDir dir;
  const common::SystemClock clock;
  const auto pid_file = (dir / "kafka.pid").string();
  writePidFile(pid_file, pid);
  LocalInjector injector({pid_file, {"true"}, ""}, LogZone::utc, clock);
  // SIGCONT: harmless to any process, should the check ever let it through.
  const auto r = injector.resume(kTestPause.drill);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == errc::not_a_broker);
  const auto path = "/proc/" + std::to_string(pid) + "/cmdline";
  CHECK(r.error().message ==
        "pid " + std::to_string(pid) + " from " + pid_file + ": " + path +
            " is empty (a kernel thread, or a process that is exiting), so kfaild cannot "
            "tell it is a Java process running kafka.Kafka; refusing to signal it");
  const auto state = injector.inspect();
  REQUIRE(state);
  CHECK_FALSE(state->running);
  CHECK(state->detail.find(path) != std::string::npos);
}

TEST_CASE("a missing or empty or dead pid file is no such process", "[integration][fault]") {
  const testing::TempDir dir;
  const common::SystemClock clock;
  const auto pid_file = (dir / "kafka.pid").string();
  LocalInjector injector({pid_file, {"true"}, ""}, LogZone::utc, clock);
  CHECK(injector.kill().error().code == errc::no_such_process);
  std::ofstream(pid_file) << "not a pid\n";
  CHECK(injector.kill().error().code == errc::no_such_process);
  std::ofstream(pid_file) << "1\n";  // init: never a broker, never signalled
  CHECK(injector.kill().error().code == errc::no_such_process);
  pid_t dead = 0;
  {
    const Child gone({"true"});
    dead = gone.pid();
  }
  writePidFile(pid_file, dead);
  const auto r = injector.kill();
  REQUIRE_FALSE(r);
  CHECK(r.error().code == errc::no_such_process);
  CHECK(r.error().message.find("stale") != std::string::npos);
}

TEST_CASE("a broker that ignores SIGTERM is SIGKILLed after the grace period",
          "[integration][fault]") {
  const testing::TempDir dir;
  const auto ready = (dir / "ready").string();
  const Child jvm(fakeKafkaJvm("None", ready));
  const auto pid_file = (dir / "kafka.pid").string();
  writePidFile(pid_file, jvm.pid());
  const common::SystemClock clock;
  LocalInjector injector({pid_file, {"true"}, ""}, LogZone::utc, clock);
  REQUIRE(testing::eventually(10s, [&] { return std::filesystem::exists(ready); }));
  REQUIRE(injector.inspect()->running);

  const auto t0 = std::chrono::steady_clock::now();
  const auto r = injector.stop(1s);
  const auto took = std::chrono::steady_clock::now() - t0;
  REQUIRE(r);
  CHECK(r->detail.find("SIGKILL after the 1 s grace period") != std::string::npos);
  CHECK(took >= 1s);
  CHECK(took < 4s);
  CHECK_FALSE(jvm.running());
  REQUIRE(r->fault_at);
  CHECK(r->fault_time_source == "local");
  CHECK(*r->fault_at >= r->requested_at);
  CHECK(*r->fault_at - r->requested_at < 100'000);
  // kfaild's own clock: no offset, and the SIGTERM went out within the kill(2) call.
  CHECK(r->clock_offset_us == 0);
  CHECK(r->faultTime() == *r->fault_at);
  CHECK(r->uncertainty_us >= 0);
  CHECK(r->uncertainty_us < 100'000);
}

TEST_CASE("pause freezes the process and resume thaws it", "[integration][fault]") {
  const testing::TempDir dir;
  const auto ready = (dir / "ready").string();
  const Child jvm(fakeKafkaJvm("exit(0)", ready));
  const auto pid_file = (dir / "kafka.pid").string();
  writePidFile(pid_file, jvm.pid());
  const common::SystemClock clock;
  LocalInjector injector({pid_file, {"true"}, ""}, LogZone::utc, clock);
  REQUIRE(testing::eventually(10s, [&] { return std::filesystem::exists(ready); }));
  REQUIRE(injector.inspect()->running);

  REQUIRE(injector.pause(kTestPause));
  REQUIRE(testing::eventually(2s, [&] { return injector.inspect()->paused; }));
  CHECK(jvm.state() == 'T');
  REQUIRE(injector.resume(kTestPause.drill));
  REQUIRE(testing::eventually(2s, [&] { return !injector.inspect()->paused; }));
  CHECK(jvm.running());

  // A stop of a frozen broker thaws it, so it can act on SIGTERM at once.
  REQUIRE(injector.pause(kTestPause));
  const auto stopped = injector.stop(10s);
  REQUIRE(stopped);
  CHECK(stopped->detail.find("exited after") != std::string::npos);
  CHECK_FALSE(jvm.running());
}

namespace {

// The timer a pause's detail names: "(setsid pid N)"; 0 for a systemd timer or none.
pid_t setsidTimerOf(const std::string& detail) {
  const auto at = detail.find("(setsid pid ");
  return at == std::string::npos ? 0 : static_cast<pid_t>(std::atol(detail.c_str() + at + 12));
}

// Gone, or a zombie nobody has reaped yet (a container's pid 1 may never reap orphans).
bool ended(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  return close == std::string::npos || close + 2 >= text.size() || text[close + 2] == 'Z';
}

// The setsid timers' files of `drill`'s pause of `pid` still in /tmp.
std::vector<std::string> timerFiles(const std::string& drill, pid_t pid) {
  const auto stem = "kfaild-pause-d" + drill + "-p" + std::to_string(pid) + ".";
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator("/tmp")) {
    const auto name = entry.path().filename().string();
    if (name.rfind(stem, 0) == 0) out.push_back(name);
  }
  return out;
}

// A drill id of this test process's own, so that a test run beside it never shares a timer name.
std::string ownDrill(const std::string& what) {
  return what + "_" + std::to_string(::getpid());
}

}  // namespace

TEST_CASE(
    "a pause ends by itself at its expiry without any resume, from a timer in a session of its own",
    "[integration][fault]") {
  const testing::TempDir dir;
  const auto ready = (dir / "ready").string();
  const Child jvm(fakeKafkaJvm("exit(0)", ready));
  const auto pid_file = (dir / "kafka.pid").string();
  writePidFile(pid_file, jvm.pid());
  REQUIRE(testing::eventually(10s, [&] { return std::filesystem::exists(ready); }));
  const PauseSpec spec{ownDrill("expiry"), 1s, 1s};

  pid_t timer = 0;
  {
    const common::SystemClock clock;
    LocalInjector injector({pid_file, {"true"}, ""}, LogZone::utc, clock);
    const auto paused = injector.pause(spec);
    REQUIRE(paused);
    INFO(paused->detail);
    CHECK(paused->detail.rfind(
              "SIGSTOP to pid " + std::to_string(jvm.pid()) + "; thaws by itself 2 s after (", 0) ==
          0);
    timer = setsidTimerOf(paused->detail);
  }
  // The injector is gone, as kfaild would be: nothing of it resumes the broker.
  CHECK(jvm.state() == 'T');
  if (timer > 0) {
    // Its own session and process group: neither kfaild's exit nor a kill of its group ends it.
    CHECK(::getsid(timer) == timer);
    CHECK(::getsid(timer) != ::getsid(0));
    CHECK(::getpgid(timer) == timer);
  }
  std::this_thread::sleep_for(1s);
  CHECK(jvm.state() == 'T');
  REQUIRE(testing::eventually(5s, [&] { return jvm.state() != 'T'; }));
  CHECK(jvm.running());
  if (timer > 0) CHECK(testing::eventually(3s, [&] { return ended(timer); }));
  CHECK(timerFiles(spec.drill, jvm.pid()).empty());
}

TEST_CASE("resume cancels the pause's timer, which then never thaws the broker",
          "[integration][fault]") {
  const testing::TempDir dir;
  const auto ready = (dir / "ready").string();
  const Child jvm(fakeKafkaJvm("exit(0)", ready));
  const auto pid_file = (dir / "kafka.pid").string();
  writePidFile(pid_file, jvm.pid());
  REQUIRE(testing::eventually(10s, [&] { return std::filesystem::exists(ready); }));
  const common::SystemClock clock;
  LocalInjector injector({pid_file, {"true"}, ""}, LogZone::utc, clock);
  const PauseSpec spec{ownDrill("cancel"), 1s, 1s};

  const auto paused = injector.pause(spec);
  REQUIRE(paused);
  INFO(paused->detail);
  const auto timer = setsidTimerOf(paused->detail);
  CHECK(timerFiles(spec.drill, jvm.pid()).size() == (timer > 0 ? 1U : 0U));
  // Another drill's resume of the same broker thaws it but leaves this drill's timer alone.
  const auto other = injector.resume(ownDrill("other"));
  REQUIRE(other);
  CHECK(other->detail ==
        "SIGCONT to pid " + std::to_string(jvm.pid()) + "; no expiry timer was left");
  CHECK(timerFiles(spec.drill, jvm.pid()).size() == (timer > 0 ? 1U : 0U));
  REQUIRE(::kill(jvm.pid(), SIGSTOP) == 0);

  const auto resumed = injector.resume(spec.drill);
  REQUIRE(resumed);
  INFO(resumed->detail);
  CHECK(resumed->detail.rfind(
            "SIGCONT to pid " + std::to_string(jvm.pid()) + "; its expiry timer cancelled (", 0) ==
        0);
  CHECK(jvm.state() != 'T');
  CHECK(timerFiles(spec.drill, jvm.pid()).empty());

  // Frozen again by hand at once, past the cancelled timer's expiry (2 s after the pause): it
  // stays frozen, and the timer has ended (it looks for its file every second).
  REQUIRE(::kill(jvm.pid(), SIGSTOP) == 0);
  std::this_thread::sleep_for(2500ms);
  CHECK(jvm.state() == 'T');
  ::kill(jvm.pid(), SIGCONT);
  if (timer > 0) CHECK(ended(timer));
}

TEST_CASE("a pause whose timer cannot start is not done, and leaves nothing behind",
          "[integration][fault]") {
  const testing::TempDir dir;
  const auto ready = (dir / "ready").string();
  const Child jvm(fakeKafkaJvm("exit(0)", ready));
  const auto pid_file = (dir / "kafka.pid").string();
  writePidFile(pid_file, jvm.pid());
  REQUIRE(testing::eventually(10s, [&] { return std::filesystem::exists(ready); }));
  const common::SystemClock clock;
  LocalInjector injector({pid_file, {"true"}, ""}, LogZone::utc, clock);
  const PauseSpec spec{ownDrill("notimer"), 1s, 1s};

  // A PATH with what the script needs but neither systemd-run nor setsid.
  const auto bin = dir / "bin";
  std::filesystem::create_directory(bin);
  for (const auto* tool : {"sh", "sed", "cut", "ps", "mktemp", "rm", "date", "sleep"}) {
    for (const auto* where : {"/usr/bin/", "/bin/"}) {
      if (std::filesystem::exists(std::string(where) + tool)) {
        std::filesystem::create_symlink(std::string(where) + tool, bin / tool);
        break;
      }
    }
  }
  const std::string saved = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  ::setenv("PATH", bin.c_str(), 1);
  const auto r = injector.pause(spec);
  ::setenv("PATH", saved.c_str(), 1);

  REQUIRE_FALSE(r);
  CHECK(r.error().code == errc::command_failed);
  CHECK(r.error().message == "pid " + std::to_string(jvm.pid()) +
                                 " not paused: the timer that would end the pause by itself did "
                                 "not start: sh exited with status 98: "
                                 "kfaild: neither systemd-run nor setsid is there to start the "
                                 "timer that ends the pause by itself");
  std::this_thread::sleep_for(100ms);
  CHECK(jvm.state() != 'T');
  CHECK(timerFiles(spec.drill, jvm.pid()).empty());
}

TEST_CASE(
    "a pause is reported only once its timer leads a session of its own, however late setsid runs",
    "[integration][fault]") {
  if (std::filesystem::exists("/run/systemd/system")) {
    WARN("systemd-run's timer is used here, not setsid");
    return;
  }
  const testing::TempDir dir;
  const auto ready = (dir / "ready").string();
  const Child jvm(fakeKafkaJvm("exit(0)", ready));
  const auto pid_file = (dir / "kafka.pid").string();
  writePidFile(pid_file, jvm.pid());
  REQUIRE(testing::eventually(10s, [&] { return std::filesystem::exists(ready); }));
  const common::SystemClock clock;
  LocalInjector injector({pid_file, {"true"}, ""}, LogZone::utc, clock);
  const PauseSpec spec{ownDrill("lateset"), 1s, 1s};

  // A setsid that starts late, as on a loaded host: `$!` is known at once, the new session only
  // once setsid has run. Its pid stays the timer's (exec, then setsid(2) with no fork).
  const auto bin = dir / "bin";
  std::filesystem::create_directory(bin);
  const auto wrapper = bin / "setsid";
  std::ofstream(wrapper) << "#!/bin/sh\nsleep 1\nexec "
                         << (std::filesystem::exists("/usr/bin/setsid") ? "/usr/bin/setsid"
                                                                        : "/bin/setsid")
                         << " \"$@\"\n";
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  const std::string saved = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  ::setenv("PATH", (bin.string() + ":" + saved).c_str(), 1);
  const auto paused = injector.pause(spec);
  ::setenv("PATH", saved.c_str(), 1);

  REQUIRE(paused);
  INFO(paused->detail);
  const auto timer = setsidTimerOf(paused->detail);
  REQUIRE(timer > 0);
  // Before the fix the script reported the timer while it was still in this test's session.
  CHECK(::getsid(timer) == timer);
  CHECK(::getpgid(timer) == timer);
  REQUIRE(testing::eventually(6s, [&] { return jvm.state() != 'T'; }));
  CHECK(testing::eventually(3s, [&] { return ended(timer); }));
  CHECK(timerFiles(spec.drill, jvm.pid()).empty());
}

TEST_CASE("start runs the configured argv without a shell and reports its failure",
          "[integration][fault]") {
  const testing::TempDir dir;
  const common::SystemClock clock;
  const auto marker = (dir / "started; echo injected").string();
  LocalInjector ok({(dir / "kafka.pid").string(), {"touch", marker}, ""}, LogZone::utc, clock);
  const auto r = ok.start();
  REQUIRE(r);
  CHECK(std::filesystem::exists(marker));  // one argument, semicolon and all

  LocalInjector failing({(dir / "kafka.pid").string(), {"ls", (dir / "nothing").string()}, ""},
                        LogZone::utc, clock);
  const auto f = failing.start();
  REQUIRE_FALSE(f);
  CHECK(f.error().code == errc::command_failed);
  CHECK(f.error().message.find("No such file or directory") != std::string::npos);

  LocalInjector missing({(dir / "kafka.pid").string(), {"/nonexistent/kafka-start"}, ""},
                        LogZone::utc, clock);
  CHECK(missing.start().error().code == errc::command_failed);
}

TEST_CASE("the local injector kills lab broker 1 at the time of kill(2) and starts it again",
          "[e2e][fault]") {
  testing::LabBrokerOne broker;
  const common::SystemClock clock;
  LocalInjector injector(
      {testing::labPidFile(1), {testing::labScript(), "start", "1"}, testing::labLogDir(1)},
      LogZone::local, clock);

  const auto before = injector.inspect();
  REQUIRE(before);
  REQUIRE(before->running);
  CHECK_FALSE(before->paused);
  REQUIRE(before->pid);
  REQUIRE(before->started_at);
  CHECK(*before->started_at < clock.wallNow());

  const auto killed = injector.kill();
  REQUIRE(killed);
  REQUIRE(killed->fault_at);
  CHECK(killed->fault_time_source == "local");
  CHECK(*killed->fault_at - killed->requested_at >= 0);
  CHECK(*killed->fault_at - killed->requested_at < 50'000);
  CHECK(killed->detail == "SIGKILL to pid " + std::to_string(*before->pid));
  REQUIRE(testing::eventually(5s, [&] { return !injector.inspect()->running; }));
  const auto again = injector.kill();
  REQUIRE_FALSE(again);
  CHECK(again.error().code == errc::no_such_process);

  const auto started = injector.start();
  REQUIRE(started);
  const auto after = injector.inspect();
  REQUIRE(after);
  CHECK(after->running);
  CHECK(after->pid != before->pid);
  CHECK(broker.waitInIsr(120s));
}

TEST_CASE(
    "the local injector's graceful stop of lab broker 1 shows in its own and the "
    "controller's logs",
    "[e2e][fault]") {
  testing::LabBrokerOne broker;
  const common::SystemClock clock;
  LocalInjector injector(
      {testing::labPidFile(1), {testing::labScript(), "start", "1"}, testing::labLogDir(1)},
      LogZone::local, clock);
  LocalInjector controller({testing::labPidFile(100), {}, testing::labLogDir(100)}, LogZone::local,
                           clock);

  const auto stopped = injector.stop(30s);
  REQUIRE(stopped);
  INFO(stopped->detail);
  CHECK(stopped->detail.find("exited after") != std::string::npos);
  REQUIRE(stopped->fault_at);

  const auto sigterm = injector.logLines("server.log", stopped->requested_at - 1'000'000,
                                         {std::string(kSigtermLine)});
  REQUIRE(sigterm);
  REQUIRE(sigterm->size() == 1);
  CHECK(sigterm->front().file == "server.log");
  // The JVM's log time (ms) against kill(2)'s time: the same clock, within the JVM's reaction.
  CHECK(sigterm->front().t >= *stopped->fault_at - 1'000);
  CHECK(sigterm->front().t - *stopped->fault_at < 1'000'000);

  const auto granted = controller.logLines(
      "controller.log", stopped->requested_at - 1'000'000,
      {"Unfenced broker 1 has requested and been granted a controlled shutdown"});
  REQUIRE(granted);
  CHECK(granted->size() == 1);

  REQUIRE(injector.start());
  CHECK(broker.waitInIsr(120s));
}

TEST_CASE("the local injector pauses lab broker 1 for a few seconds and it runs again after",
          "[e2e][fault]") {
  testing::LabBrokerOne broker;
  const common::SystemClock clock;
  LocalInjector injector(
      {testing::labPidFile(1), {testing::labScript(), "start", "1"}, testing::labLogDir(1)},
      LogZone::local, clock);
  const auto paused = injector.pause({"lab1", 60s});
  REQUIRE(paused);
  CHECK(paused->detail.rfind("SIGSTOP to pid ", 0) == 0);
  const auto frozen = injector.inspect();
  REQUIRE(frozen);
  CHECK(frozen->running);
  CHECK(frozen->paused);
  CHECK(broker.status().value("paused", false));
  std::this_thread::sleep_for(3s);

  const auto resumed = injector.resume("lab1");
  REQUIRE(resumed);
  const auto thawed = injector.inspect();
  REQUIRE(thawed);
  CHECK(thawed->running);
  CHECK_FALSE(thawed->paused);
  CHECK(thawed->pid == frozen->pid);  // the same JVM: frozen, not restarted
  CHECK(broker.waitInIsr(60s));
}

TEST_CASE(
    "the local injector reads a log line from the file Kafka rolled it into since the time asked",
    "[unit][fault]") {
  const testing::TempDir dir;
  const common::SystemClock clock;
  LocalInjector injector({(dir / "kafka.pid").string(), {"true"}, dir.path().string()},
                         LogZone::utc, clock);
  const std::time_t since = 1'796'468'397;  // 2026-12-05T10:59:57Z
  const auto write = [&](const std::string& name, const std::string& text, std::time_t written) {
    std::ofstream(dir / name) << text;
    const utimbuf times{written, written};
    REQUIRE(::utime((dir / name).c_str(), &times) == 0);
  };
  write("controller.log.2026-12-05-09",
        "[2026-12-05 10:59:58,000] INFO Fencing broker 2 at epoch 6\n",
        since - 3600);  // last written before `since`: not read, whatever it holds
  write("controller.log.2026-12-05-10",
        "[2026-12-05 10:59:57,700] INFO Unfenced broker 2 has requested and been granted a "
        "controlled shutdown\n",
        since + 1);
  write("controller.log", "[2026-12-05 11:00:09,000] INFO Fencing broker 2 at epoch 9\n",
        since + 12);
  const auto lines = injector.logLines("controller.log", std::int64_t{since} * 1'000'000,
                                       {"controlled shutdown", "Fencing broker 2"});
  REQUIRE(lines);
  REQUIRE(lines->size() == 2);
  CHECK((*lines)[0].message.find("granted a controlled shutdown") != std::string::npos);
  CHECK((*lines)[0].file == "controller.log");
  CHECK((*lines)[1].message.find("at epoch 9") != std::string::npos);
  // Without the rolled file the grant is gone: what a drill across 11:00 read before.
  std::filesystem::remove(dir / "controller.log.2026-12-05-10");
  const auto current = injector.logLines("controller.log", std::int64_t{since} * 1'000'000,
                                         {"controlled shutdown", "Fencing broker 2"});
  REQUIRE(current);
  CHECK(current->size() == 1);
}

TEST_CASE("the rules' namespace and the broker's are compared by inode, and a difference is named",
          "[unit]") {
  CHECK(netnsMismatch("kfl25000-n1", 4026532001, 77, 4026532001).empty());
  CHECK(netnsMismatch("kfl25000-n1", 4026532001, 77, 4026531840) ==
        "the broker (pid 77) is not in network namespace 'kfl25000-n1' (inode 4026532001) but in "
        "inode "
        "4026531840 (/proc/77/ns/net): rules placed there would cut something else");
  CHECK(netnsMismatch("n1", std::nullopt, 77, 1).find("(/var/run/netns/n1) cannot be read") !=
        std::string::npos);
  CHECK(netnsMismatch("n1", 1, 77, std::nullopt).find("/proc/77/ns/net") != std::string::npos);
}

TEST_CASE("a local isolation goes only into the namespace the broker runs in",
          "[integration][fault]") {
  if (::geteuid() != 0 ||
      std::system("command -v ip >/dev/null 2>&1 && command -v nft >/dev/null 2>&1") != 0) {
    WARN("not run: needs root, ip and nft");
    return;
  }
  const std::string netns = "kfgt-local";
  std::system(("ip netns delete " + netns + " 2>/dev/null").c_str());
  REQUIRE(std::system(("ip netns add " + netns).c_str()) == 0);
  struct Remove {
    std::string name;
    ~Remove() { std::system(("ip netns delete " + name + " 2>/dev/null").c_str()); }
  } remove{netns};
  const common::SystemClock clock;
  IsolateSpec spec;
  spec.drill = "lt1";
  spec.from = IsolateFrom::all;
  spec.duration = 30s;

  SECTION("a broker in kfaild's own namespace: refused, nothing placed") {
    const testing::TempDir dir;
    const auto ready = (dir / "ready").string();
    const Child jvm(fakeKafkaJvm("exit(0)", ready));
    writePidFile((dir / "kafka.pid").string(), jvm.pid());
    REQUIRE(testing::eventually(10s, [&] { return std::filesystem::exists(ready); }));
    LocalInjector injector({(dir / "kafka.pid").string(), {"true"}, ""}, LogZone::utc, clock);
    injector.placeGrayFaults({.netns = netns, .fill_dir = {}, .instance = {}, .helper = {}});
    const auto isolated = injector.isolate(spec);
    REQUIRE_FALSE(isolated);
    CHECK(isolated.error().message.find("is not in network namespace 'kfgt-local'") !=
          std::string::npos);
    auto tables = runCommand({"ip", "netns", "exec", netns, "nft", "list", "tables"}, 10s);
    REQUIRE(tables);
    CHECK(tables->out.find("kfaild_") == std::string::npos);
  }
  SECTION("a broker in that namespace: placed, and healed") {
    const testing::TempDir dir;
    const auto ready = (dir / "ready").string();
    auto argv = fakeKafkaJvm("exit(0)", ready);
    argv.insert(argv.begin(), {"ip", "netns", "exec", netns});
    const Child jvm(argv);
    writePidFile((dir / "kafka.pid").string(), jvm.pid());
    REQUIRE(testing::eventually(10s, [&] { return std::filesystem::exists(ready); }));
    LocalInjector injector({(dir / "kafka.pid").string(), {"true"}, ""}, LogZone::utc, clock);
    injector.placeGrayFaults({.netns = netns, .fill_dir = {}, .instance = {}, .helper = {}});
    const auto isolated = injector.isolate(spec);
    INFO((isolated ? isolated->detail : isolated.error().describe()));
    REQUIRE(isolated);
    CHECK(injector.heal("lt1"));
  }
}

}  // namespace local_injector_test
