#pragma once

// probe.client `java` (probe_client.h): the probe's messages sent and read back by the Java
// client (kafka-clients 4.3.1) in a child process, java/probe/KfaildJavaProbe.java, spoken to
// over its stdin and stdout (java_protocol.h has the protocol). Set-up goes through the runner's
// librdkafka clients, which are then let go, as the wire client's are.
//
// Threads: the sender starts the first child (beginReading) and ticks, writing each tick's sends
// to the child's stdin at once, never blocking on it (a child that does not read has its sends
// refused once 8 MiB wait). The reporter reads the child's stdout and stderr (stderr forwarded to
// kfaild's log, at most kStderrLines lines per 10 s) and supervises it: a child that exits, dies
// mid-line, writes a line it cannot parse, or cannot start, is killed if need be, recorded
// (probe/client_exited with the reason), and started again after a backoff of 1 s doubling to
// 30 s (probe/client_restarted; the backoff starts over once a child has lived 60 s). While no
// child runs, every send is refused with kClientDown and what was outstanding at the death fails
// with it: the ledger's refused stretch makes a gap across it the probe's own (inconclusive).
// Every child is a child of a thread that lives as long as the client (PR_SET_DEATHSIG fires at
// the exit of the thread that forked), killed with SIGKILL when kfaild dies; it also exits on
// its stdin's EOF. The receiver thread only gives up on lost messages.

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "server/probe/java_protocol.h"
#include "server/probe/probe_client.h"

namespace kfaild::probe {

// The Java runtime and the probe's jar a java client runs.
struct JavaRuntime {
  std::string java;  // the `java` executable
  std::string jar;   // kfaild-java-probe.jar, its dependencies beside it
};

// probe.java.runtime, else $JAVA_HOME/bin/java, else `java` on PATH; probe.java.jar, else the
// jar installed beside kfaild (<bin>/../share/kfaild/java) or built beside it (<bin>/../java: the
// build tree). An error names the key (probe.java.runtime or probe.java.jar) and what is missing.
[[nodiscard]] Result<JavaRuntime> findJavaRuntime(const config::JavaProbeConfig& java);
// The Java client's settings for `cluster` (java::javaSettings of its `client` map and `settings`,
// with bootstrap.servers and client.id), checked by kafka-clients itself (the child's --check
// mode): an error names the first key it refuses and why ("probe.java.settings.<key>: ..." for
// one of `settings`, "client.<key>: ..." for one mapped from the client map).
[[nodiscard]] Result<java::JavaSettings> checkJavaSettings(
    const config::ClusterConfig& cluster, const std::map<std::string, std::string>& settings,
    const JavaRuntime& runtime);

class ProbeRunner::JavaProbeClient final : public ProbeRunner::Client {
 public:
  explicit JavaProbeClient(ProbeRunner& runner) : runner_(runner) {}
  ~JavaProbeClient() override;

  // Finds the runtime and checks the settings (a refusal is a configuration error at start).
  [[nodiscard]] Status prepare() override;
  void describe(std::map<std::string, std::string>& settings,
                std::int64_t& message_timeout_us) override;
  [[nodiscard]] Status beginReading(const rd_kafka_topic_partition_list_t& assignment) override;
  void runSender() override;
  rd_kafka_resp_err_t send(std::size_t index, Slot& slot, std::int64_t seq, const std::string& body,
                           common::Instant now) override;
  [[nodiscard]] bool addPartitions(std::vector<AddedPartition>& added,
                                   const std::vector<std::string>& grown) override;
  void runReporter() override;
  void runReceiver() override;
  void stopTicking() override {}
  void finishOutstanding() override;

  static constexpr std::int64_t kBackoffFirstUs = 1'000'000;
  static constexpr std::int64_t kBackoffMaxUs = 30'000'000;
  static constexpr std::int64_t kStableUs = 60'000'000;  // a child this old restarts the backoff
  static constexpr std::int64_t kHelloTimeoutUs = 30'000'000;
  static constexpr std::size_t kMaxPendingBytes = 8 << 20;
  static constexpr int kStderrLines = 20;

 private:
  struct Target {
    std::string topic;
    std::int32_t partition = 0;
    std::int64_t read_from = 0;  // the next offset to read: where a new child starts reading
    std::int32_t leader = -1;    // the last leader the child reported (-1: none yet)
  };
  struct Child {
    pid_t pid = -1;
    int in = -1, out = -1, err = -1;  // its stdin (ours to write), stdout and stderr
    common::MonoMicros started = 0;
  };

  // Starts a child and waits for its hello (giving up at a stop request); then assigns it every
  // target. The reporter's (or, the first, the sender's) thread.
  [[nodiscard]] Status startChild();
  // The child is gone (or made to go) for `reason`: killed, reaped, recorded, its outstanding
  // messages failed, the next start scheduled.
  void childGone(const std::string& reason);
  // The reporter: what the child wrote, until it is gone or the reporter is stopped.
  void serveChild();
  [[nodiscard]] bool handleLine(const std::string& line, common::Instant now);
  void forwardStderr(const std::string& line);
  void applyAck(const java::Report& report, common::Instant at, LedgerOutput& out);
  void applyRecv(const java::Report& report, common::Instant at, LedgerOutput& out);
  void leaderSeen(const java::Report& report, common::Instant at);
  // Writes what is pending to the child's stdin without blocking (child_mutex_ held).
  void flushLocked();
  void recordEvent(common::EventKind kind, const std::string& reason, common::Instant at);
  bool outstanding() const;

  ProbeRunner& runner_;
  JavaRuntime runtime_;
  java::JavaSettings settings_;  // written by prepare() only

  // child_, pending_ and targets_ are guarded by child_mutex_: the sender writes sends and
  // targets, the reporter reads the child's output and replaces the child.
  mutable std::mutex child_mutex_;
  Child child_;
  std::string pending_;  // lines for the child's stdin not written yet
  std::vector<Target> targets_;
  std::atomic<bool> up_{false};        // a child runs and said hello
  std::atomic<bool> begun_{false};     // beginReading() gave the targets
  std::atomic<int> attempts_{0};       // starts tried
  std::atomic<bool> quitting_{false};  // finishOutstanding() told the child to quit
  // The reporter's only.
  java::LineSplitter stdout_lines_;
  java::LineSplitter stderr_lines_;
  std::int64_t backoff_us_ = kBackoffFirstUs;
  common::MonoMicros next_start_ = 0;
  std::uint64_t exits_ = 0;
  std::uint64_t restarts_ = 0;
  common::MonoMicros stderr_window_ = 0;
  int stderr_in_window_ = 0;
  int stderr_dropped_ = 0;
};

}  // namespace kfaild::probe
