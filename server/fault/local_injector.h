#pragma once

// Faults to a broker on kfaild's own host, found through its pid file, with kill(2).
//
// Before every signal the pid is checked: the pid file holds only digits, the process is alive
// and not a zombie, the pid is a process's (not a thread's) and that process started no later
// than the pid file was written (stalePidProblem), and /proc/<pid>/cmdline says it is a JVM
// (argv[0] contains "java") running kafka.Kafka. Anything else is refused (errc::no_such_process,
// errc::not_a_broker), and inspect() reports the node as not running; also a
// command line kfaild cannot read or that is empty (a kernel thread): errc::not_a_broker naming
// the pid and the /proc path. A stale pid file whose pid now belongs to another process must
// never make kfaild signal it.
//
// fault_at is the wall-clock time read right before kill(2), fault_time_source "local". `start`
// runs the configured argv (no shell) in kfaild's working directory and waits for it to return, so
// the start command must launch the broker and return (`lab start 1`, `systemctl start kafka`,
// `kafka-server-start.sh -daemon ...`). Relative paths are relative to kfaild's working
// directory.
//
// pause is SIGSTOP after its expiry timer is started on this host with `sh -c` (pause_expiry.h:
// systemd-run where kfaild may start units, root; else setsid); resume is SIGCONT, then the
// timer's cancel. Under the shipped systemd unit (user kfaild) the timer is a setsid one in
// kfaild's cgroup, which a stop of the unit ends: there the journal's replay resumes the broker
// at kfaild's next start. Not thread-safe (see Injector).

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/common/clock.h"
#include "server/config/config.h"
#include "server/fault/gray_fault_injector.h"
#include "server/fault/gray_runner.h"
#include "server/fault/injector.h"
#include "server/fault/kafka_log.h"

namespace kfaild::fault {

class LocalInjector final : public GrayFaultInjector {
 public:
  LocalInjector(config::LocalTarget target, LogZone zone, const common::Clock& clock);

  std::string describe() const override;
  Result<FaultRecord> kill() override;
  Result<FaultRecord> stop(std::chrono::seconds grace) override;
  Result<FaultRecord> pause(const PauseSpec& spec) override;
  Result<FaultRecord> resume(const std::string& drill) override;
  Result<FaultRecord> start() override;
  Result<ProcessState> inspect() override;
  Result<std::vector<BrokerLogLine>> logLines(const std::string& file, common::WallMicros since,
                                              const std::vector<std::string>& patterns) override;

  // Where the node's gray faults go: nft rules in its network namespace `netns` (the lab's
  // `kfl<base>-n<N>`; a node in kfaild's own namespace is refused, since cutting it off would cut
  // kfaild off too) and disk fillers in `fill_dir` (a dir on its log dir's filesystem). Before
  // every isolate or throttle the broker's own namespace (/proc/<pid>/ns/net) must be `netns`
  // (netnsMismatch), or the rules would cut something else. Both through kfaild-gray
  // (placement.helper; defaultLocalGrayHelper when empty).
  void placeGrayFaults(const GrayPlacement& placement);

 private:
  // The table's netns and its identity now.
  void locate(GrayPlace& place) const override;
  // Into the namespace the place names, if it is still the one the fault went into.
  Result<HelperArgv> wayInto(const GrayPlace& place) const override;
  // The broker's pid from the pid file, checked as the header says.
  Result<pid_t> brokerPid() const;
  Result<FaultRecord> signalBroker(int signal, pid_t* signalled = nullptr);
  // Sends `signal` to `pid`, setting the record's fault time and detail.
  Status signalPid(int signal, pid_t pid, FaultRecord& record) const;

  config::LocalTarget target_;
  LogZone zone_;
  const common::Clock& clock_;
  std::string gray_netns_;                // placeGrayFaults' netns
  std::vector<std::string> gray_helper_;  // how kfaild-gray runs here (placeGrayFaults)
};

// The lines of `file` in `log_dir` on this host, and of the files Kafka rolled from it last written
// at or after `since`, as Injector::logLines gives them (selectKafkaLogLines); the broker's log on
// kfaild's host clock. errc::invalid_target for a `file` that is not a plain name, errc::io_error
// when it cannot be read. Blocks on the file system; thread-safe.
Result<std::vector<BrokerLogLine>> readLogDir(const std::string& log_dir, const std::string& file,
                                              LogZone zone, common::WallMicros since,
                                              const std::vector<std::string>& patterns);

// A named network namespace's identity, "net:[<inode>]" of /run/netns/<name>; nullopt when there
// is none by that name.
std::optional<std::string> netnsIdentity(const std::string& name);

// Heals a local place (GrayPlace::local()) with no injector: its node left the inventory since the
// fault. kfaild-gray (defaultLocalGrayHelper) into the recorded namespace (when it is still the
// one the fault went into) and on this host's filesystem, as LocalInjector::healPlaced. Blocks.
Result<FaultRecord> healLocalPlace(const GrayPlace& place, const common::Clock& clock);

// How much later than its pid file was written a process may have started and still be the one
// the file names: the start time from /proc has the boot time's one-second grain, and a pid file
// is written as its process starts (or later, when rewritten).
inline constexpr common::WallMicros kPidFileSlackUs = 10'000'000;

// Why a live pid read from a pid file is not the file's process, or nullopt: it is a thread's id
// (/proc answers to those too; `tgid` is its process), or its process started more than
// kPidFileSlackUs after the file was written. Either means the file's process exited and the
// number was reused, on a busy host within minutes (pid_max is often 32768). Pure.
std::optional<std::string> stalePidProblem(pid_t pid, std::optional<pid_t> tgid,
                                           std::optional<common::WallMicros> started,
                                           std::optional<common::WallMicros> pid_file_written);

// What /proc/<pid>/cmdline says about a process: true for a JVM running kafka.Kafka. Pure.
bool looksLikeKafkaJvm(const std::vector<std::string>& argv);

// Why rules placed in the network namespace `netns` (inode `configured` of
// /var/run/netns/<netns>, where `ip netns` keeps it) would not reach broker `pid`, whose
// /proc/<pid>/ns/net has inode `broker`: either could not be read, or they differ. Empty when
// they are the same namespace. Pure.
std::string netnsMismatch(const std::string& netns, std::optional<std::uint64_t> configured,
                          pid_t pid, std::optional<std::uint64_t> broker);

// The inode of a namespace file (nsfs), or nullopt when it cannot be read.
std::optional<std::uint64_t> namespaceInode(const std::string& path);

}  // namespace kfaild::fault
