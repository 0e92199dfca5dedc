#pragma once

// Kafka's log4j lines, as every Kafka distribution writes them with the layout `[%d] %p %m (%c)%n`:
//   [2026-11-30 03:26:17,385] INFO [QuorumController id=100] Fencing broker 1 at epoch 14 ...
//   (org.apache.kafka.controller.ReplicationControlManager)
// `%d` is "yyyy-MM-dd HH:mm:ss,SSS" in the broker JVM's own time zone, which the node's
// `log_timezone` names. Lines that do not start with a timestamp (stack traces, the rest of a
// multi-line message) are continuation lines and are skipped. Pure functions, thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/common/clock.h"
#include "server/fault/injector.h"

namespace kfaild::fault {

enum class LogZone {
  utc,
  local,  // kfaild's own local zone (TZ), for brokers on the same host or in the same zone
};

// "UTC" → utc, "local" → local, anything else nullopt.
std::optional<LogZone> logZoneFromConfig(std::string_view name);

// One line (with or without its trailing newline / carriage return). `file` stays empty.
std::optional<BrokerLogLine> parseKafkaLogLine(std::string_view line, LogZone zone);

// Kafka's log4j configuration rolls each log file every hour (`server.log` becomes
// `server.log.2026-12-05-10`), so a line written before a drill crossed the hour sits in the
// rolled file when the drill reads it. A shell script (for ssh and `docker exec`) that greps
// `patterns` (plain substrings, single-quoted) in every `log_dir`/`file`.* last written at or
// after `since_s` (seconds since the epoch, by `stat -c %Y`; a file stat cannot read is left out)
// and then in `log_dir`/`file` itself. grep's exit codes: 1 is "no line matched".
std::string rolledLogsGrepScript(const std::string& log_dir, const std::string& file,
                                 const std::vector<std::string>& patterns, std::int64_t since_s);

// The lines of `text` that parse, were written at or after `since`, and whose message contains
// one of `patterns` as a plain substring (every line when `patterns` is empty), in file order,
// each with `file` set.
std::vector<BrokerLogLine> selectKafkaLogLines(std::string_view text, const std::string& file,
                                               LogZone zone, common::WallMicros since,
                                               const std::vector<std::string>& patterns);

// The line Kafka writes when it receives SIGTERM (kafka.Kafka's shutdown hook, logged by
// org.apache.kafka.common.utils.LoggingSignalHandler). The graceful stop's own time.
inline constexpr std::string_view kSigtermLine = "Terminating process due to signal SIGTERM";

// A line of a node's own logs that marks a phase of a failover: "fenced", "controlled_shutdown",
// "shutdown_granted" (controller.log, about the target), "leader_epoch_start" (state-change.log
// of a broker becoming a probe partition's leader), "signal_received" (the target's server.log),
// "isr_shrink" (server.log and state-change.log of a probe partition's leader: the ISR it shrank
// took effect, isrShrinkEvents).
struct FailoverLogEvent {
  common::WallMicros t = 0;
  std::string kind;
  // The broker the line is about: the new leader for leader_epoch_start, the replica dropped for
  // isr_shrink (-1 when it dropped several).
  std::int32_t broker = -1;
  std::int32_t node = -1;  // whose log it is
  std::string file;
  std::string line;
  std::optional<std::string> topic;  // leader_epoch_start and isr_shrink only
  std::optional<std::int32_t> partition;
  // The line's BrokerLogLine::clock_offset_us and clock_uncertainty_us (another host's log).
  std::int64_t clock_offset_us = 0;
  std::int64_t clock_uncertainty_us = 0;
};

struct LogSource {
  std::int32_t node = -1;
  bool controller = false;
  Injector* injector = nullptr;
};

// The moments a leader's ISR shrinks of the `topics`' partitions took effect, from its logs
// (`node` is that leader; `lines` from server.log and state-change.log, in any order):
//   server.log        [Partition orders-0 broker=1] Shrinking ISR from 1,3,2 to 1,2. Leader: ...
//   server.log        [Partition orders-0 broker=1] ISR updated to 1,2  and version updated to 1
//   state-change.log  [Broker id=1] Skipped the become-leader state change for orders-0 with ...
//                     isr=[1, 2], ... since it is already the leader ...
// The first is the leader's decision. Either of the others, whichever comes first, is the
// controller's new ISR in force on the leader (from its answer, or from the metadata log when
// that brought it first), so that the writes waiting on the dropped replica are acked: that
// line's time, to its millisecond. The metadata shows the change later, by as much as the brokers
// answering Metadata lag the controller (0.35 s seen on a busy host). A new ISR without a shrink
// to it before (an expansion, or a shrink the controller refused) is none. Pure.
std::vector<FailoverLogEvent> isrShrinkEvents(std::vector<BrokerLogLine> lines,
                                              const std::vector<std::string>& topics,
                                              std::int32_t node);

// Reads the failover's marks from every node's logs since `since` (nodes whose logs cannot be
// read contribute nothing). `topics` are the probe topics.
std::vector<FailoverLogEvent> readFailoverLogs(const std::vector<LogSource>& nodes,
                                               std::int32_t target,
                                               const std::vector<std::string>& topics,
                                               common::WallMicros since);

}  // namespace kfaild::fault
