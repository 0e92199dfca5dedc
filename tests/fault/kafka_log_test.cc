#include "server/fault/kafka_log.h"

#include <sys/stat.h>
#include <utime.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <optional>
#include <string>

#include "server/fault/command.h"
#include "tests/support/temp_dir.h"

namespace kafka_log_test {

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

namespace {

// isrShrinkEvents of one leader's server.log text, the probe topic e2e-api-1.
std::vector<FailoverLogEvent> shrinksIn(const std::string& server_log, std::int32_t node) {
  return isrShrinkEvents(selectKafkaLogLines(server_log, "server.log", LogZone::utc, 0, {}),
                         {"e2e-api-1"}, node);
}

}  // namespace

TEST_CASE("a leader's ISR shrink is read from its server.log when the controller has accepted it",
          "[unit][fault]") {
  // The netns lab's leaders of a CI run, broker 3 cut off from the other brokers.
  const std::string log =
      "[2026-12-04 03:51:55,236] INFO [Partition e2e-api-1-0 broker=1] Shrinking ISR from 1,3,2 to "
      "1,2. Leader: "
      "(highWatermark: 446, endOffset: 447). Out of sync replicas: (brokerId: 3, endOffset: 446, "
      "lastCaughtUpTimeMs: "
      "1796356305172). (kafka.cluster.Partition)\n"
      "[2026-12-04 03:51:55,247] INFO [Partition __consumer_offsets-24 broker=1] Shrinking ISR "
      "from 1,3,2 to 1,2. "
      "Leader: (highWatermark: 104, endOffset: 106). (kafka.cluster.Partition)\n"
      "[2026-12-04 03:51:55,320] INFO [Partition e2e-api-1-0 broker=1] ISR updated to 1,2  and "
      "version updated to 1 "
      "(kafka.cluster.Partition)\n"
      "[2026-12-04 03:51:55,362] INFO [Partition __consumer_offsets-24 broker=1] ISR updated to "
      "1,2  and version "
      "updated to 1 (kafka.cluster.Partition)\n"
      // A shrink to the leader alone the controller never accepted: no event.
      "[2026-12-04 03:51:57,276] INFO [Partition e2e-api-1-2 broker=1] Shrinking ISR from 1,2,3 to "
      "1. Leader: "
      "(highWatermark: 446, endOffset: 447). (kafka.cluster.Partition)\n"
      // An expansion: no event.
      "[2026-12-04 03:52:11,668] INFO [Partition e2e-api-1-0 broker=1] ISR updated to 1,3,2  and "
      "version updated to 2 "
      "(kafka.cluster.Partition)\n"
      // Another topic whose name starts like the probe's.
      "[2026-12-04 03:52:12,000] INFO [Partition e2e-api-1-x-0 broker=1] Shrinking ISR from 1,3 to "
      "1. "
      "(kafka.cluster.Partition)\n"
      "[2026-12-04 03:52:12,100] INFO [Partition e2e-api-1-x-0 broker=1] ISR updated to 1 and "
      "version updated to 3 "
      "(kafka.cluster.Partition)\n";
  const auto lines = selectKafkaLogLines(log, "server.log", LogZone::utc, 0,
                                         {"] Shrinking ISR from ", "] ISR updated to "});
  REQUIRE(lines.size() == 8);
  const auto events = isrShrinkEvents(lines, {"e2e-api-1"}, 1);
  REQUIRE(events.size() == 1);
  CHECK(events[0].kind == "isr_shrink");
  CHECK(events[0].t == 1'796'356'315'320'000);
  CHECK(events[0].broker == 3);
  CHECK(events[0].node == 1);
  CHECK(*events[0].topic == "e2e-api-1");
  CHECK(*events[0].partition == 0);
  CHECK(events[0].file == "server.log");

  // The shrink names the ISR in another order than the update does (as a leader of the lab did).
  const auto one = shrinksIn(
      "[2026-12-04 04:22:30,709] INFO [Partition e2e-api-1-1 broker=2] Shrinking ISR from 2,3,1 to "
      "1,2. (x)\n"
      "[2026-12-04 04:22:30,768] INFO [Partition e2e-api-1-1 broker=2] ISR updated to 2,1  and "
      "version updated to 1 (x)\n",
      2);
  REQUIRE(one.size() == 1);
  CHECK(one[0].broker == 3);
  CHECK(one[0].t == 1'796'358'150'768'000);

  // The new ISR brought by the metadata log first (state-change.log), no "ISR updated" after it.
  auto via_metadata = selectKafkaLogLines(
      "[2026-12-04 04:23:37,150] INFO [Partition e2e-api-1-1 broker=2] Shrinking ISR from 1,3,2 to "
      "1,2. (x)\n",
      "server.log", LogZone::utc, 0, {});
  const auto change = selectKafkaLogLines(
      "[2026-12-04 04:23:37,196] INFO [Broker id=2] Skipped the become-leader state change for "
      "e2e-api-1-1 with "
      "topic id Some(20gDFU03QuOGbP5DQttoiA), partition registration "
      "PartitionRegistration(replicas=[2, 3, 1], "
      "isr=[1, 2], removingReplicas=[], addingReplicas=[], elr=[], lastKnownElr=[], leader=2, "
      "leaderEpoch=0, "
      "partitionEpoch=1) and isNew=false since it is already the leader with leader epoch 0. "
      "Current high "
      "watermark 423, ISR [1,2], adding replicas [] and removing replicas []. "
      "(state.change.logger)\n",
      "state-change.log", LogZone::utc, 0, {});
  via_metadata.insert(via_metadata.begin(), change.begin(),
                      change.end());  // files read one after the other
  // An update of another kind before it (the ISR unchanged) leaves the shrink waiting.
  auto other = change.front();
  other.t -= 20'000;
  const auto isr_at = other.message.find("isr=[1, 2]");
  other.message.replace(isr_at, 10, "isr=[1, 2, 3]");
  via_metadata.push_back(other);
  const auto applied = isrShrinkEvents(via_metadata, {"e2e-api-1"}, 2);
  REQUIRE(applied.size() == 1);
  CHECK(applied[0].broker == 3);
  CHECK(applied[0].t == 1'796'358'217'196'000);
  CHECK(applied[0].file == "state-change.log");

  // Two replicas dropped at once: the event names none.
  const auto two = shrinksIn(
      "[2026-12-04 03:53:00,000] INFO [Partition e2e-api-1-1 broker=2] Shrinking ISR from 2,3,1 to "
      "2. (x)\n"
      "[2026-12-04 03:53:00,050] INFO [Partition e2e-api-1-1 broker=2] ISR updated to 2 and "
      "version updated to 4 (x)\n",
      2);
  REQUIRE(two.size() == 1);
  CHECK(two[0].broker == -1);
  CHECK(*two[0].partition == 1);
}

namespace {

void writeFile(const std::filesystem::path& path, const std::string& text, std::time_t written) {
  std::ofstream(path) << text;
  const utimbuf times{written, written};
  REQUIRE(::utime(path.c_str(), &times) == 0);
}

}  // namespace

TEST_CASE("the grep script reads the files Kafka rolled since the time asked, then the file itself",
          "[unit][fault]") {
  // Kafka's log4j rolls controller.log every hour: a drill that crossed 11:00 finds its
  // controlled-shutdown grant in controller.log.2026-12-05-10, not in controller.log.
  const kfaild::testing::TempDir dir;
  const std::time_t since = 1'796'468'397;  // 2026-12-05T10:59:57Z
  writeFile(dir / "controller.log.2026-12-05-09",
            "[2026-12-05 09:59:59,000] INFO Fencing broker 2 at epoch 7 (an earlier hour)\n",
            since - 3600);
  writeFile(dir / "controller.log.2026-12-05-10",
            "[2026-12-05 10:59:57,700] INFO Unfenced broker 2 has requested and been granted a "
            "controlled shutdown\n"
            "[2026-12-05 10:59:58,000] INFO something else\n",
            since + 2);
  writeFile(dir / "controller.log", "[2026-12-05 11:00:09,000] INFO Fencing broker 2 at epoch 9\n",
            since + 12);
  const auto script = rolledLogsGrepScript(dir.path().string(), "controller.log",
                                           {"controlled shutdown", "Fencing broker 2"}, since);
  const auto out = runCommand({"sh", "-c", script}, std::chrono::seconds(10));
  REQUIRE(out);
  CHECK(out->exit_code == 0);
  CHECK(out->out ==
        "[2026-12-05 10:59:57,700] INFO Unfenced broker 2 has requested and been granted a "
        "controlled shutdown\n"
        "[2026-12-05 11:00:09,000] INFO Fencing broker 2 at epoch 9\n");
  // Nothing matching anywhere: grep's 1, which the injectors read as no line.
  const auto none = runCommand(
      {"sh", "-c", rolledLogsGrepScript(dir.path().string(), "controller.log", {"no such"}, since)},
      std::chrono::seconds(10));
  REQUIRE(none);
  CHECK(none->exit_code == 1);
  // The lines of the rolled file and of the current one come back in time order.
  const auto lines =
      selectKafkaLogLines("[2026-12-05 11:00:09,000] INFO b\n[2026-12-05 10:59:57,700] INFO a\n",
                          "controller.log", LogZone::utc, 0, {});
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].message.find("a") != std::string::npos);
  CHECK(lines[0].t < lines[1].t);
}

}  // namespace kafka_log_test
