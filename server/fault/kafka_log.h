#pragma once

// Kafka's log4j lines, as every Kafka distribution writes them with the layout `[%d] %p %m (%c)%n`:
//   [2026-11-30 03:26:17,385] INFO [QuorumController id=100] Fencing broker 1 at epoch 14 ...
//   (org.apache.kafka.controller.ReplicationControlManager)
// `%d` is "yyyy-MM-dd HH:mm:ss,SSS" in the broker JVM's own time zone, which the node's
// `log_timezone` names. Lines that do not start with a timestamp (stack traces, the rest of a
// multi-line message) are continuation lines and are skipped. Pure functions, thread-safe.

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

// The lines of `text` that parse, were written at or after `since`, and whose message contains
// one of `patterns` as a plain substring (every line when `patterns` is empty), in file order,
// each with `file` set.
std::vector<BrokerLogLine> selectKafkaLogLines(std::string_view text, const std::string& file,
                                               LogZone zone, common::WallMicros since,
                                               const std::vector<std::string>& patterns);

// The line Kafka writes when it receives SIGTERM (kafka.Kafka's shutdown hook, logged by
// org.apache.kafka.common.utils.LoggingSignalHandler). The graceful stop's own time.
inline constexpr std::string_view kSigtermLine = "Terminating process due to signal SIGTERM";

}  // namespace kfaild::fault
