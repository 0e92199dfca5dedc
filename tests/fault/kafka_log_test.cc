#include "server/fault/kafka_log.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>

using namespace kfaild::fault;

namespace {

// 2026-11-30 03:26:17.385 UTC, the article's fencing line.
constexpr kfaild::common::WallMicros kFencedAt = 1'796'009'177'385'000;

// Runs the test body with TZ set, restoring kfaild's zone afterwards.
class ScopedTimeZone {
 public:
  explicit ScopedTimeZone(const char* tz) {
    if (const char* old = std::getenv("TZ")) old_ = old;
    setenv("TZ", tz, 1);
    tzset();
  }
  ~ScopedTimeZone() {
    if (old_) {
      setenv("TZ", old_->c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
  }

 private:
  std::optional<std::string> old_;
};

}  // namespace

TEST_CASE("the controller's fencing line of the article is read with its own time",
          "[unit][fault]") {
  const auto line = parseKafkaLogLine(
      "[2026-11-30 03:26:17,385] INFO [QuorumController id=100] Fencing broker 1 at epoch 14 "
      "because its session has timed out. (org.apache.kafka.controller.ReplicationControlManager)",
      LogZone::utc);
  REQUIRE(line);
  CHECK(line->t == kFencedAt);
  CHECK(line->level == "INFO");
  CHECK(
      line->message ==
      "[QuorumController id=100] Fencing broker 1 at epoch 14 because its session has timed out.");
  CHECK(line->logger == "org.apache.kafka.controller.ReplicationControlManager");
}

TEST_CASE("a controlled shutdown grant and a SIGTERM line keep their messages whole",
          "[unit][fault]") {
  const auto granted = parseKafkaLogLine(
      "[2026-11-30 03:30:58,832] INFO [QuorumController id=100] Unfenced broker 1 has requested "
      "and been granted a controlled shutdown. "
      "(org.apache.kafka.controller.BrokerHeartbeatManager)\n",
      LogZone::utc);
  REQUIRE(granted);
  CHECK(granted->message ==
        "[QuorumController id=100] Unfenced broker 1 has requested and been "
        "granted a controlled shutdown.");
  const auto sigterm = parseKafkaLogLine(
      "[2026-11-30 03:30:58,829] INFO Terminating process due to signal SIGTERM "
      "(org.apache.kafka.common.utils.LoggingSignalHandler)\r\n",
      LogZone::utc);
  REQUIRE(sigterm);
  CHECK(sigterm->message == std::string(kSigtermLine));
  CHECK(sigterm->logger == "org.apache.kafka.common.utils.LoggingSignalHandler");
  CHECK(granted->t - sigterm->t == 3'000);
}

TEST_CASE("parentheses inside a state-change message are not taken for the logger",
          "[unit][fault]") {
  const auto line = parseKafkaLogLine(
      "[2026-11-30 03:26:17,476] INFO [Broker id=2] Leader orders-0 starts at leader epoch 1 from "
      "offset 445 with partition epoch 1, high watermark 445, ISR [2,3], adding replicas [] and "
      "removing replicas [] (under-min-isr). Previous leader Some(1) and previous leader epoch was "
      "0. (state.change.logger)",
      LogZone::utc);
  REQUIRE(line);
  CHECK(line->logger == "state.change.logger");
  CHECK(line->message.rfind(
            "[Broker id=2] Leader orders-0 starts at leader epoch 1 from offset 445", 0) == 0);
  CHECK(line->message.find("(under-min-isr). Previous leader Some(1)") != std::string::npos);

  const auto no_logger =
      parseKafkaLogLine("[2026-11-30 03:26:17,476] WARN a message (with words)", LogZone::utc);
  REQUIRE(no_logger);
  CHECK(no_logger->logger.empty());
  CHECK(no_logger->message == "a message (with words)");
}

TEST_CASE("stack traces and other continuation lines are skipped", "[unit][fault]") {
  CHECK_FALSE(parseKafkaLogLine("java.io.IOException: Connection reset by peer", LogZone::utc));
  CHECK_FALSE(parseKafkaLogLine("\tat kafka.server.KafkaServer.startup(KafkaServer.scala:123)",
                                LogZone::utc));
  CHECK_FALSE(parseKafkaLogLine("[2026-11-30 03:26:17] INFO no millis (x)", LogZone::utc));
  CHECK_FALSE(parseKafkaLogLine("[2026-13-30 03:26:17,385] INFO bad month (x)", LogZone::utc));
  CHECK_FALSE(parseKafkaLogLine("[2026-11-30 03:26:17,385] NOTICE not a level (x)", LogZone::utc));

  const std::string log =
      "[2026-11-30 03:26:09,000] INFO before the fault (kafka.server.BrokerServer)\n"
      "[2026-11-30 03:26:17,385] ERROR [QuorumController id=100] Fencing broker 1 failed (x.Y)\n"
      "org.apache.kafka.common.KafkaException: Fencing broker 1 in a stack trace\n"
      "\tat org.apache.kafka.controller.QuorumController.run(QuorumController.java:1)\n"
      "[2026-11-30 03:26:17,394] INFO [QuorumController id=100] handleBrokerFenced: changing 54 "
      "partition(s) (org.apache.kafka.controller.ReplicationControlManager)\n"
      "[2026-11-30 03:26:18,000] INFO unrelated (x.Z)";
  const auto lines = selectKafkaLogLines(log, "controller.log", LogZone::utc, kFencedAt - 1'000'000,
                                         {"Fencing broker 1", "handleBrokerFenced"});
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].t == kFencedAt);
  CHECK(lines[0].level == "ERROR");
  CHECK(lines[0].file == "controller.log");
  CHECK(lines[1].message.find("handleBrokerFenced: changing 54 partition(s)") != std::string::npos);
  CHECK(lines[1].t == kFencedAt + 9'000);

  const auto all_since = selectKafkaLogLines(log, "controller.log", LogZone::utc, kFencedAt, {});
  CHECK(all_since.size() == 3);
}

TEST_CASE("a broker logging in local time is read in kfaild's zone", "[unit][fault]") {
  const ScopedTimeZone seoul("KST-9");
  const auto line = parseKafkaLogLine(
      "[2026-11-30 12:26:17,385] INFO [QuorumController id=100] Fencing broker 1 at epoch 14 "
      "because its session has timed out. (org.apache.kafka.controller.ReplicationControlManager)",
      LogZone::local);
  REQUIRE(line);
  CHECK(line->t == kFencedAt);
  CHECK(logZoneFromConfig("UTC") == LogZone::utc);
  CHECK(logZoneFromConfig("local") == LogZone::local);
  CHECK_FALSE(logZoneFromConfig("Asia/Seoul"));
}
