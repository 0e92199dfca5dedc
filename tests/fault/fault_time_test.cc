// The fault time on kfaild's clock: other clocks are placed on it by bracketing one of their
// readings between two of kfaild's, and the uncertainty that leaves is kept with the fault.

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/fault/injector.h"
#include "server/fault/ssh_injector.h"
#include "tests/support/temp_dir.h"

namespace fault_time_test {

using namespace kfaild;
using namespace kfaild::fault;

namespace {

constexpr common::WallMicros kT0 = 1'796'015'337'000'000;
constexpr std::int64_t kRemoteAheadUs = 3'000'000;

// Hands out the given wall-clock readings in turn (then 1 ms apart): what kfaild read before
// and after each call, however long the call really took.
class ScriptedClock final : public common::Clock {
 public:
  explicit ScriptedClock(std::vector<common::WallMicros> readings)
      : readings_(std::move(readings)) {}
  common::WallMicros wallNow() const override {
    std::lock_guard lock(mutex_);
    const auto extra = static_cast<common::WallMicros>(next_ + 1) -
                       static_cast<common::WallMicros>(readings_.size());
    const auto t = next_ < readings_.size() ? readings_[next_] : readings_.back() + 1'000 * extra;
    ++next_;
    return t;
  }
  common::MonoMicros monoNow() const override { return wallNow(); }
  std::size_t reads() const {
    std::lock_guard lock(mutex_);
    return next_;
  }

 private:
  std::vector<common::WallMicros> readings_;
  mutable std::mutex mutex_;
  mutable std::size_t next_ = 0;
};

std::string nanos(common::WallMicros us) {
  return std::to_string(us) + "000";
}

// An ssh that runs nothing remote: the kill script answers with a pid and the remote clock at
// `fault_remote_us`; the clock-only script with `probe_remote_us`, or fails as ssh does (255).
std::string fakeSsh(const testing::TempDir& dir, common::WallMicros fault_remote_us,
                    std::optional<common::WallMicros> probe_remote_us) {
  const auto path = (dir / "ssh").string();
  std::ofstream out(path);
  out << "#!/bin/sh\n"
         "for last; do :; done\n"
         "case \"$last\" in\n"
         "  \"echo kfaild-clock=\"*) "
      << (probe_remote_us
              ? "echo kfaild-clock=" + nanos(*probe_remote_us)
              : std::string("echo 'ssh: connect to host k1: Connection refused' >&2; exit 255"))
      << ";;\n"
         "  *\"kill -KILL\"*) echo kfaild-pid=4242; echo kfaild-clock="
      << nanos(fault_remote_us)
      << ";;\n"
         "  *) exit 1;;\n"
         "esac\n";
  out.close();
  ::chmod(path.c_str(), 0755);
  return path;
}

config::SshTarget target() {
  config::SshTarget t;
  t.host = "k1";
  t.pid_command = "cat /var/run/kafka.pid";
  t.start_command = "true";
  return t;
}

}  // namespace

TEST_CASE(
    "a reading bracketed by two of kfaild's puts the other clock's offset at the bracket's middle",
    "[unit][fault]") {
  // Read 3 s ahead, somewhere in a 40 ms bracket: ± 20 ms plus the clock's resolution.
  const auto o = bracketOffset(kT0 + 20'000 + kRemoteAheadUs, kT0, kT0 + 40'000, 1);
  CHECK(o.offset_us == kRemoteAheadUs);
  CHECK(o.uncertainty_us == 20'001);
  // An odd bracket rounds the half up: never narrower than it is.
  CHECK(bracketOffset(kT0, kT0, kT0 + 3, 0).uncertainty_us == 2);
  CHECK(bracketOffset(kT0, kT0, kT0, 1'000).uncertainty_us == 1'000);

  FaultRecord r;
  r.requested_at = kT0;
  CHECK(r.faultTime() == kT0);  // no source time: the request's
  placeFault(r, kT0 + 5'000 + kRemoteAheadUs, o, "ssh:remote-clock");
  CHECK(*r.fault_at == kT0 + 5'000 + kRemoteAheadUs);
  CHECK(r.faultTime() == kT0 + 5'000);
  CHECK(r.uncertainty_us == 20'001);
  CHECK(r.clock_offset_us == kRemoteAheadUs);
  CHECK(r.fault_time_source == "ssh:remote-clock");
}

TEST_CASE("an ssh kill places the remote clock on kfaild's by a round trip that only reads it",
          "[unit][fault]") {
  const testing::TempDir dir;
  // The kill read the remote clock 100 ms into a call that took 2 s (the remote host is 3 s
  // ahead); the clock-only round trip took 10 ms and read it in its middle.
  const auto ssh = fakeSsh(dir, kT0 + 100'000 + kRemoteAheadUs, kT0 + 2'006'000 + kRemoteAheadUs);
  const ScriptedClock clock({kT0, kT0 + 2'000'000, kT0 + 2'001'000, kT0 + 2'011'000});
  SshInjector injector(target(), LogZone::utc, clock, ssh);
  const auto r = injector.kill();
  REQUIRE(r);
  CHECK(r->fault_time_source == "ssh:remote-clock");
  CHECK(*r->fault_at == kT0 + 100'000 + kRemoteAheadUs);
  CHECK(r->clock_offset_us == kRemoteAheadUs);
  CHECK(r->uncertainty_us == 5'001);  // half the 10 ms round trip + the clock's 1 µs
  CHECK(r->faultTime() == kT0 + 100'000);
  CHECK(clock.reads() == 4);
}

TEST_CASE(
    "an ssh kill whose clock round trip fails is placed by its own call, as uncertain as that",
    "[unit][fault]") {
  const testing::TempDir dir;
  const auto ssh = fakeSsh(dir, kT0 + 100'000 + kRemoteAheadUs, std::nullopt);
  const ScriptedClock clock({kT0, kT0 + 2'000'000, kT0 + 2'001'000, kT0 + 2'011'000});
  SshInjector injector(target(), LogZone::utc, clock, ssh);
  const auto r = injector.kill();
  REQUIRE(r);  // the fault happened: only its time is less certain
  CHECK(r->uncertainty_us == 1'000'001);
  CHECK(r->faultTime() == kT0 + 1'000'000);
  CHECK(r->clock_offset_us == kRemoteAheadUs - 900'000);
}

TEST_CASE("a remote date without nanoseconds is a clock of one second", "[unit][fault]") {
  CHECK(remoteClockResolution("1796015337N") == 1'000'000);
  CHECK(remoteClockResolution("1796015337879312744") == 1);
}

namespace {

// An ssh whose remote host is kRemoteAheadUs ahead and answers the clock dialogue
// (clockDialogueCommand) with `readings` in turn, the kill script with `fault_remote_us`, and a
// grep of the logs with `log_line`.
std::string fakeDialogueSsh(const testing::TempDir& dir,
                            const std::vector<common::WallMicros>& readings,
                            common::WallMicros fault_remote_us, const std::string& log_line = "") {
  const auto path = (dir / "ssh").string();
  std::ofstream out(path);
  out << "#!/bin/sh\n"
         "for last; do :; done\n"
         "case \"$last\" in\n"
         "  \"echo kfaild-ready\"*) echo kfaild-ready; for c in";
  for (const auto r : readings) out << " " << nanos(r);
  out << "; do IFS= read -r _ || exit 0; echo kfaild-clock=$c; done;;\n"
         "  *\"kill -KILL\"*) echo kfaild-pid=4242; echo kfaild-clock="
      << nanos(fault_remote_us)
      << ";;\n"
         "  *grep*) echo '"
      << log_line
      << "';;\n"
         "  *) exit 1;;\n"
         "esac\n";
  out.close();
  ::chmod(path.c_str(), 0755);
  return path;
}

}  // namespace

TEST_CASE(
    "the remote clock is read in rounds over one ssh session and the tightest round places it, the "
    "connection's set-up outside every bracket",
    "[unit][fault]") {
  const testing::TempDir dir;
  constexpr auto A = kRemoteAheadUs;
  // Five rounds after the kill's call: 40, 2, 10, 5 and 10 ms; the 2 ms one read the remote
  // clock in its middle. The others read it at their ends, 1-20 ms off the middle: a wrong pick
  // shows in the offset.
  const std::vector<common::WallMicros> rounds = {
      kT0 + 2'001'000, kT0 + 2'041'000, kT0 + 2'050'000, kT0 + 2'052'000, kT0 + 2'060'000,
      kT0 + 2'070'000, kT0 + 2'080'000, kT0 + 2'085'000, kT0 + 2'090'000, kT0 + 2'100'000};
  const auto ssh = fakeDialogueSsh(dir,
                                   {kT0 + 2'041'000 + A, kT0 + 2'051'000 + A, kT0 + 2'070'000 + A,
                                    kT0 + 2'085'000 + A, kT0 + 2'100'000 + A},
                                   kT0 + 100'000 + A);
  std::vector<common::WallMicros> readings = {kT0, kT0 + 2'000'000};
  readings.insert(readings.end(), rounds.begin(), rounds.end());
  const ScriptedClock clock(readings);
  SshInjector injector(target(), LogZone::utc, clock, ssh);
  const auto r = injector.kill();
  REQUIRE(r);
  CHECK(r->clock_offset_us == A);
  CHECK(r->uncertainty_us == 1'001);  // half the 2 ms round + the clock's 1 µs
  CHECK(r->faultTime() == kT0 + 100'000);
  CHECK(clock.reads() == 12);
}

TEST_CASE(
    "a broker log read over ssh is placed on kfaild's clock by the remote clock's offset, each "
    "line "
    "uncertain by it",
    "[unit][fault]") {
  const testing::TempDir dir;
  constexpr auto A = kRemoteAheadUs;
  // 2026-11-30 03:26:17.385 UTC on the remote clock, which is 3 s ahead of kfaild's.
  constexpr common::WallMicros kLineRemote = 1'796'009'177'385'000;
  const auto ssh = fakeDialogueSsh(
      dir,
      {kT0 + 1'000 + A, kT0 + 11'000 + A, kT0 + 21'000 + A, kT0 + 31'000 + A, kT0 + 41'000 + A},
      kT0,
      "[2026-11-30 03:26:17,385] INFO [QuorumController id=100] Fencing broker 1 at epoch 14 "
      "(org.apache.kafka.controller.QuorumController)");
  // The age of a cached offset (none yet), then five rounds of 2 ms, each with the reading in
  // its middle.
  const ScriptedClock clock({kT0 - 1'000'000, kT0, kT0 + 2'000, kT0 + 10'000, kT0 + 12'000,
                             kT0 + 20'000, kT0 + 22'000, kT0 + 30'000, kT0 + 32'000, kT0 + 40'000,
                             kT0 + 42'000});
  auto t = target();
  t.log_dir = "/var/log/kafka";
  SshInjector injector(t, LogZone::utc, clock, ssh);
  // Since 1 s before the line on kfaild's clock: on the remote clock that is 2 s after it, so a
  // since read on the wrong clock would drop the line.
  const auto lines =
      injector.logLines("controller.log", kLineRemote - A - 1'000'000, {"Fencing broker 1"});
  REQUIRE(lines);
  REQUIRE(lines->size() == 1);
  CHECK(lines->front().t == kLineRemote - A);
  CHECK(lines->front().clock_offset_us == A);
  CHECK(lines->front().clock_uncertainty_us == 1'001);
  // The offset is taken once a minute, not for every read.
  const auto again =
      injector.logLines("controller.log", kLineRemote - A - 1'000'000, {"Fencing broker 1"});
  REQUIRE(again);
  CHECK(again->size() == 1);
  CHECK(clock.reads() == 2 + 10);  // the cached offset's age twice, and the rounds once
}

}  // namespace fault_time_test
