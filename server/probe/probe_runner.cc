#include "server/probe/probe_runner.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>
#include <utility>

#include "server/common/json_text.h"
#include "server/common/thread_priority.h"
#include "server/kafka/admin.h"
#include "server/kafka/errc.h"
#include "server/kafka/metadata.h"
#include "server/kafka/quorum.h"
#include "server/kafka/rdkafka_ptr.h"
#include "server/probe/payload.h"

#include <nlohmann/json.hpp>

#include "server/probe/control_probe.h"
#include "server/probe/coordinator_probe.h"

namespace kfaild::probe {
namespace {

// A delivery report carries back which slot and sequence it belongs to in its opaque pointer:
// 20 bits of slot index (a million partitions), 44 bits of sequence (centuries at 1 ms).
constexpr int kSeqBits = 44;
constexpr std::uint64_t kSeqMask = (std::uint64_t{1} << kSeqBits) - 1;
constexpr std::size_t kMaxSlots = std::size_t{1} << (64 - kSeqBits);

void* packOpaque(std::size_t slot, std::int64_t seq) {
  return reinterpret_cast<void*>((static_cast<std::uint64_t>(slot) << kSeqBits) |
                                 (static_cast<std::uint64_t>(seq) & kSeqMask));
}
std::pair<std::size_t, std::int64_t> unpackOpaque(void* opaque) {
  const auto bits = reinterpret_cast<std::uint64_t>(opaque);
  return {static_cast<std::size_t>(bits >> kSeqBits), static_cast<std::int64_t>(bits & kSeqMask)};
}

constexpr int kSetUpRequestTimeoutMs = 5000;
// A failed set-up is tried again after 250 ms, doubling up to 3 s: a topic created moments ago is
// in the brokers' metadata within a few hundred ms (it took a fixed 3 s wait before), while a
// cluster that is down is not asked more than once every 3 s for long.
constexpr std::int64_t kSetUpRetryFirstUs = 250'000;
constexpr std::int64_t kSetUpRetryMaxUs = 3'000'000;
constexpr std::int64_t kExpireEveryUs = 1'000'000;
constexpr std::int32_t kWireRequestTimeoutMs = 30'000;
constexpr std::int32_t kWireFetchWaitMs = 500;

// The producer settings that decide what the probe measures, reported with every drill.
constexpr const char* kReportedSettings[] = {
    "acks", "enable.idempotence", "message.timeout.ms", "max.in.flight.requests.per.connection",
    "retries", "retry.backoff.ms", "retry.backoff.max.ms", "linger.ms", "request.timeout.ms",
    "queue.buffering.max.messages", "reconnect.backoff.ms", "reconnect.backoff.max.ms",
    "socket.timeout.ms", "topic.metadata.refresh.interval.ms", "metadata.max.age.ms"};

// The consumer settings that decide when a message is read back, reported as "consumer.KEY".
// With fetch.min.bytes above 1 the broker may hold a fetch for up to fetch.wait.max.ms to fill
// it: every receive time is then late by up to that long.
constexpr const char* kReportedConsumerSettings[] = {"fetch.min.bytes", "fetch.wait.max.ms",
                                                     "fetch.max.bytes", "queued.max.messages.kbytes"};
constexpr const char* kConsumerPrefix = "consumer.";

}  // namespace

ProbeRunner::ProbeRunner(const config::ClusterConfig& cluster, storage::ClusterId cluster_id,
                         storage::Store& store, const common::Clock& clock,
                         kafka::LogSink client_log)
    : cluster_(cluster),
      cluster_id_(cluster_id),
      store_(store),
      clock_(clock),
      client_log_(std::move(client_log)),
      run_id_(std::random_device{}() | (std::uint64_t{std::random_device{}()} << 32)) {}

ProbeRunner::~ProbeRunner() { stop(); }

Status ProbeRunner::start() {
  kafka::ClientOptions options;
  options.bootstrap = cluster_.bootstrap;
  options.properties = cluster_.client;
  options.client_id = "kfaild-" + cluster_.name;
  options.debug = cluster_.observe.client_debug;
  options.log = client_log_;
  // The ledger bounds what each partition may have outstanding (probe.max_outstanding*), so the
  // local queue holds at most partitions × max_outstanding messages; librdkafka's default of
  // 100,000 would refuse the probe's own sends from 1,000 partitions at the default bound on.
  // The producer is idempotent (the Java client's default since Kafka 3.0), so its own retries
  // neither duplicate nor reorder what it measures, and every message has a fate within
  // message.timeout.ms. A user who runs their applications otherwise sets `client`; the
  // settings in force are reported with every drill (clientSettings()).
  std::map<std::string, std::string> producer_settings = {{"acks", "all"}, {"allow.auto.create.topics", "false"}};
  auto unless_set = [&](const char* key, std::string value) {
    if (!options.properties.contains(key)) producer_settings[key] = std::move(value);
  };
  unless_set("queue.buffering.max.messages", "10000000");
  unless_set("enable.idempotence", "true");
  if (!options.properties.contains("delivery.timeout.ms")) {
    unless_set("message.timeout.ms", std::to_string(cluster_.probe.message_timeout_us / 1000));
  }
  // librdkafka backs off reconnecting to a broker that is gone up to reconnect.backoff.max.ms
  // (10 s, plus up to 50 % jitter): after an outage that would add up to 15 s of the probe's own
  // waiting to the time the cluster was unavailable. At 1 s the probe sees a returning broker
  // within a second, at the cost of one connection attempt per second to a dead one.
  unless_set("reconnect.backoff.max.ms", "1000");

  client_options_ = options;
  producer_settings_ = producer_settings;
  auto producer = createProducer();
  if (!producer) return producer.error();
  std::map<std::string, std::string> consumer_settings = {{"group.id", "kfaild-probe-" + cluster_.name},
                                                         {"enable.auto.commit", "false"},
                                                         {"enable.auto.offset.store", "false"},
                                                         {"auto.offset.reset", "latest"},
                                                         {"enable.partition.eof", "false"},
                                                         {"allow.auto.create.topics", "false"}};
  if (!options.properties.contains("reconnect.backoff.max.ms")) {
    consumer_settings["reconnect.backoff.max.ms"] = "1000";
  }
  // The transaction probe (coordinator_probe.h) writes its transactions to the first probe
  // topic's partition 0. librdkafka reads read_committed by default, which stops at the first
  // open transaction: a transaction held open by a coordinator's death would then stall the
  // probe's receipts on that partition for as long, a stall that is the probe's, not the
  // cluster's. The probe's own messages are not transactional, so read_uncommitted reads them
  // exactly as read_committed would.
  if (cluster_.probe.coordinators.enabled && cluster_.probe.coordinators.transactions &&
      !options.properties.contains("isolation.level")) {
    consumer_settings["isolation.level"] = "read_uncommitted";
  }
  // Memory: librdkafka's defaults let a consumer hold a 50 MiB fetch response per broker plus a
  // 64 MiB pre-fetched queue, which the probe never needs (its receiver drains the queue as it
  // fills; 4 MiB is 30,000+ probe messages) but which a backlog after an outage would fill at
  // 1,000 partitions. Smaller bounds only mean more fetch round trips while catching up.
  // (librdkafka refuses a fetch.max.bytes below message.max.bytes: a user who raises the latter
  // keeps librdkafka's fetch bound.)
  if (!options.properties.contains("fetch.max.bytes") && !options.properties.contains("message.max.bytes")) {
    consumer_settings["fetch.max.bytes"] = "4194304";
  }
  if (!options.properties.contains("queued.max.messages.kbytes")) {
    consumer_settings["queued.max.messages.kbytes"] = "16384";
  }
  auto consumer = kafka::createClient(RD_KAFKA_CONSUMER, options, consumer_settings);
  if (!consumer) return consumer.error();
  consumer_settings_ = consumer_settings;
  producer_ = std::move(*producer);
  consumer_ = std::move(*consumer);
  client_settings_.clear();
  auto report = [this](rd_kafka_t* client, const char* key, const std::string& name) {
    char value[512];
    std::size_t size = sizeof value;
    if (rd_kafka_conf_get(rd_kafka_conf(client), key, value, &size) == RD_KAFKA_CONF_OK) {
      client_settings_[name] = value;
    }
  };
  for (const char* key : kReportedSettings) report(producer_.get(), key, key);
  for (const char* key : kReportedConsumerSettings) {
    report(consumer_.get(), key, std::string(kConsumerPrefix) + key);
  }
  const auto consumer_setting = [this](const char* key) {
    const auto it = client_settings_.find(std::string(kConsumerPrefix) + key);
    return it == client_settings_.end() ? std::string() : it->second;
  };
  if (const auto min_bytes = consumer_setting("fetch.min.bytes"); min_bytes != "1") {
    spdlog::warn("probe {}: client sets fetch.min.bytes {}: the broker may hold a fetch for up to "
                 "fetch.wait.max.ms ({} ms), and every receive time is late by up to that long",
                 cluster_.name, min_bytes, consumer_setting("fetch.wait.max.ms"));
  }
  if (auto it = client_settings_.find("message.timeout.ms"); it != client_settings_.end()) {
    message_timeout_us_ = std::stoll(it->second) * 1000;
  }
  rd_kafka_poll_set_consumer(consumer_.get());
  if (wire()) {
    // What decides what the wire client measures (wire_client.h), reported with every drill
    // beside the librdkafka settings, which then only apply to set-up.
    client_settings_["probe.client"] = "wire";
    client_settings_["wire.acks"] = "all";
    client_settings_["wire.retries"] = "0";
    client_settings_["wire.request.timeout.ms"] = std::to_string(kWireRequestTimeoutMs);
    client_settings_["wire.fetch.min.bytes"] = "1";
    client_settings_["wire.fetch.wait.max.ms"] = std::to_string(kWireFetchWaitMs);
    client_settings_["wire.metadata.retry.ms"] = "100";
    client_settings_["wire.reconnect.backoff.max.ms"] = "1000";
    // A message has its fate within the request timeout (no retries).
    message_timeout_us_ = std::int64_t{kWireRequestTimeoutMs} * 1000 + 5'000'000;
  }

  sender_.start("kfaild:send", [this] { senderLoop(); });
  reporter_.start("kfaild:report", [this] { reporterLoop(); });
  receiver_.start("kfaild:receive", [this] { receiverLoop(); });
  return okStatus();
}

Result<kafka::Handle> ProbeRunner::createProducer() const {
  // A metadata request for a missing topic must not create it with the broker's defaults: kfaild
  // creates probe topics only as configured.
  return kafka::createClient(RD_KAFKA_PRODUCER, client_options_, producer_settings_,
                             [](rd_kafka_conf_t* conf) {
                               rd_kafka_conf_set_events(conf,
                                                        RD_KAFKA_EVENT_DR | RD_KAFKA_EVENT_ERROR);
                             });
}

void ProbeRunner::raiseFatalErrorForTest(const std::string& reason) {
  std::shared_lock lock(producer_mutex_);
  if (producer_) {
    rd_kafka_test_fatal_error(producer_.get(), RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
                              reason.c_str());
  }
}

void ProbeRunner::requestStop() {
  stopping_ = true;
  sender_.requestStop();
}

namespace {

// Wakes whoever waits in a poll of `rk`'s queue that `get` returns (nothing without a client).
void yieldQueue(rd_kafka_t* rk, rd_kafka_queue_t* (*get)(rd_kafka_t*)) {
  if (rk == nullptr) return;
  if (rd_kafka_queue_t* queue = get(rk)) {
    rd_kafka_queue_yield(queue);
    rd_kafka_queue_destroy(queue);
  }
}

}  // namespace

void ProbeRunner::stop() {
  // No recreation of the producer once stopping: the flush below must see the one it flushes.
  stopping_ = true;
  // The sender first, so nothing is sent once the flush below has begun; then the receiver,
  // which has always stopped reading as soon as a stop began (it does not read back what the
  // flush gets acked).
  sender_.stop();
  if (wire_) wire_->stopTicking();
  // The receiver and the reporter block in librdkafka's polls for up to 100 ms: a yield on the
  // queue each one polls ends that wait at once (a probe stopped 100-200 ms late before).
  receiver_.requestStop();
  {
    std::shared_lock lock(consumer_mutex_);
    yieldQueue(consumer_.get(), rd_kafka_queue_get_consumer);
  }
  receiver_.stop();
  if (wire_) {
    // What is outstanding gets its answer for up to 2 s, as the flush below gives librdkafka.
    const auto until = clock_.monoNow() + 2'000'000;
    auto outstanding = [this] {
      std::shared_lock slots_lock(slots_mutex_);
      for (auto& slot : slots_) {
        std::lock_guard lock(slot->mutex);
        if (slot->ledger.status().outstanding > 0) return true;
      }
      return false;
    };
    for (int i = 0; i < 200 && clock_.monoNow() < until && outstanding(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    wire_->stop();
  }
  if (std::shared_lock lock(producer_mutex_); producer_) {
    // Let outstanding messages finish (their samples are recorded) but do not wait out a stall.
    // With the event API, flush waits while the reporter thread serves the reports: the
    // reporter stops only after it.
    rd_kafka_flush(producer_.get(), 2000);
  }
  reporter_.requestStop();
  {
    std::shared_lock lock(producer_mutex_);
    yieldQueue(producer_.get(), rd_kafka_queue_get_main);
  }
  reporter_.stop();
  if (consumer_) rd_kafka_consumer_close(consumer_.get());
  for (auto* t : topic_handles_) rd_kafka_topic_destroy(t);
  topic_handles_.clear();
  consumer_.reset();
  producer_.reset();
  std::lock_guard lock(status_mutex_);
  phase_ = ProbePhase::kStopped;
}

void ProbeRunner::setProblem(std::string problem) {
  std::lock_guard lock(status_mutex_);
  if (problem != problem_ && !problem.empty()) {
    spdlog::warn("probe {}: {}", cluster_.name, problem);
  }
  problem_ = std::move(problem);
}

Status ProbeRunner::setUp() {
  {
    std::lock_guard lock(status_mutex_);
    phase_ = ProbePhase::kSettingUp;
  }
  LedgerOptions ledger_options;
  ledger_options.gap_threshold_us = cluster_.probe.gap_threshold_us;
  ledger_options.loss_timeout_us = cluster_.probe.loss_timeout_us;
  // A report later than librdkafka's own timeout means the report itself was lost.
  ledger_options.unacked_timeout_us = message_timeout_us_ + 30'000'000;
  ledger_options.max_outstanding = cluster_.probe.max_outstanding;
  ledger_options.max_outstanding_age_us = cluster_.probe.max_outstanding_age_us;
  ledger_options.idle_tolerance_us = 2 * cluster_.probe.interval_us;
  ledger_options_ = ledger_options;

  std::vector<std::unique_ptr<Slot>> slots;
  std::vector<rd_kafka_topic_t*> handles;
  auto release = [&handles] {
    for (auto* h : handles) rd_kafka_topic_destroy(h);
  };
  kafka::PartitionListPtr assignment(
      rd_kafka_topic_partition_list_new(16));

  for (std::size_t t = 0; t < cluster_.probe.topics.size(); ++t) {
    const auto& topic = cluster_.probe.topics[t];
    auto md = kafka::fetchMetadata(producer_.get(), {topic.name}, kSetUpRequestTimeoutMs);
    if (!md) {
      release();
      return md.error();
    }
    const auto* info = md->topic(topic.name);
    const bool missing = info == nullptr || info->error == "UNKNOWN_TOPIC_OR_PART" ||
                         info->partitions.empty();
    if (missing) {
      if (!topic.create) {
        release();
        return kafka::kafkaError(kafka::errc::topic_missing,
                                 "probe topic '" + topic.name + "' does not exist and clusters[" +
                                     cluster_.name + "].probe.topics[" + std::to_string(t) +
                                     "] has no 'create' section");
      }
      kafka::NewTopic spec;
      spec.name = topic.name;
      spec.partitions = topic.create->partitions;
      spec.replication_factor = topic.create->replication_factor;
      spec.replica_assignment = topic.create->replica_assignment;
      spec.configs = topic.create->configs;
      auto created = kafka::createTopic(producer_.get(), spec, kSetUpRequestTimeoutMs);
      if (!created) {
        release();
        return created.error();
      }
      spdlog::info("probe {}: {} topic {}", cluster_.name,
                   *created == kafka::CreateOutcome::kCreated ? "created" : "found existing",
                   topic.name);
      md = kafka::fetchMetadata(producer_.get(), {topic.name}, kSetUpRequestTimeoutMs);
      if (!md) {
        release();
        return md.error();
      }
      info = md->topic(topic.name);
      if (info == nullptr || info->partitions.empty()) {
        release();
        return kafka::kafkaError(kafka::errc::topic_error,
                                 "topic " + topic.name + " created but not yet in metadata");
      }
    } else if (!info->error.empty()) {
      release();
      return kafka::kafkaError(kafka::errc::topic_error, topic.name + ": " + info->error);
    }
    // The consumer answers a watermark query from its own metadata cache, which may still hold a
    // topic created moments ago as unknown: asked for it by name, it learns it. Without this,
    // set-up can fail with _UNKNOWN_PARTITION on every retry (88712dd).
    auto seen = kafka::fetchMetadata(consumer_.get(), {topic.name}, kSetUpRequestTimeoutMs);
    if (!seen) {
      release();
      return seen.error();
    }
    if (const auto* known = seen->topic(topic.name);
        known == nullptr || known->partitions.size() < info->partitions.size()) {
      release();
      return kafka::kafkaError(kafka::errc::topic_error,
                               "topic " + topic.name + " not yet in the consumer's metadata");
    }
    rd_kafka_topic_t* handle = rd_kafka_topic_new(producer_.get(), topic.name.c_str(), nullptr);
    handles.push_back(handle);
    for (const auto& p : info->partitions) {
      // Start reading at the current end: everything sent from now on lies beyond it.
      std::int64_t low = 0, high = 0;
      const auto err = rd_kafka_query_watermark_offsets(consumer_.get(), topic.name.c_str(),
                                                        p.partition, &low, &high,
                                                        kSetUpRequestTimeoutMs);
      if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        release();
        return kafka::kafkaError(kafka::errc::consume_failed,
                                 "end offset of " + topic.name + "[" + std::to_string(p.partition) + "]",
                                 err);
      }
      rd_kafka_topic_partition_list_add(assignment.get(), topic.name.c_str(), p.partition)->offset = high;
      auto slot = std::make_unique<Slot>(cluster_id_, topic.name, p.partition, ledger_options);
      slot->topic = handle;
      slot->read_from = high;
      slots.push_back(std::move(slot));
    }
  }
  if (slots.size() >= kMaxSlots) {
    release();
    return kafka::kafkaError(kafka::errc::topic_error, "too many probe partitions");
  }
  if (auto err = wire() ? RD_KAFKA_RESP_ERR_NO_ERROR : rd_kafka_assign(consumer_.get(), assignment.get());
      err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    release();
    return kafka::kafkaError(kafka::errc::consume_failed, "assign probe partitions", err);
  }
  if (wire()) {
    WireClientOptions options;
    for (auto& server : kafka::bootstrapServers(cluster_.bootstrap, nullptr)) {
      options.bootstrap.emplace_back(std::move(server.host), std::move(server.port));
    }
    options.client_id = "kfaild-" + cluster_.name;
    options.request_timeout_ms = kWireRequestTimeoutMs;
    options.fetch_max_wait_ms = kWireFetchWaitMs;
    std::vector<WireTarget> targets;
    for (const auto* e = assignment->elems; e != assignment->elems + assignment->cnt; ++e) {
      targets.push_back({e->topic, e->partition, static_cast<std::size_t>(e - assignment->elems), e->offset});
    }
    wire_ = std::make_unique<WireClient>(
        std::move(options), clock_,
        [this](std::span<const WireAck> acks, common::Instant at) { wireAcks(acks, at); },
        [this](std::span<const WireRecord> records, common::Instant at) { wireRecords(records, at); });
    // The client's discovery of a new leader, as the client-log observer records librdkafka's
    // (source client, kind client_leader_update): the analysis's discovery phase ends at it.
    wire_->onLeaderChange([this](const std::string& topic, std::int32_t partition, std::int32_t from,
                                 std::int32_t to, std::int32_t epoch, common::Instant at) {
      storage::Event e;
      e.cluster = cluster_id_;
      e.t_us = at.wall;
      e.source = "client";
      e.kind = "client_leader_update";
      e.broker = to;
      e.topic = topic;
      e.partition = partition;
      e.detail = common::jsonText(
          nlohmann::json{{"client", "producer"}, {"via", "wire"}, {"from", from}, {"to", to}, {"epoch", epoch}});
      store_.addEvent(std::move(e));
    });
    wire_->start(std::move(targets), std::chrono::milliseconds(kSetUpRequestTimeoutMs));
  }
  std::vector<TopicSlots> topic_slots;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const auto& ledger = slots[i]->ledger;
    auto it = std::find_if(topic_slots.begin(), topic_slots.end(),
                           [&](const TopicSlots& t) { return t.topic == ledger.topic(); });
    if (it == topic_slots.end()) it = topic_slots.insert(topic_slots.end(), TopicSlots{ledger.topic(), {}});
    const auto p = static_cast<std::size_t>(ledger.partition());
    if (it->slot_by_partition.size() <= p) it->slot_by_partition.resize(p + 1, -1);
    it->slot_by_partition[p] = static_cast<std::int32_t>(i);
  }
  {
    std::unique_lock lock(slots_mutex_);
    slots_ = std::move(slots);
    topic_slots_ = std::move(topic_slots);
  }
  topic_handles_ = std::move(handles);
  ready_ = true;
  {
    std::lock_guard lock(status_mutex_);
    phase_ = ProbePhase::kProbing;
    problem_.clear();
  }
  spdlog::info("probe {}: probing {} partition(s) every {} µs, run id {:016x}", cluster_.name,
               slots_.size(), cluster_.probe.interval_us, run_id_);
  return okStatus();
}

void ProbeRunner::senderLoop() {
  for (std::int64_t retry_us = kSetUpRetryFirstUs; !sender_.stopRequested();
       retry_us = std::min(2 * retry_us, kSetUpRetryMaxUs)) {
    std::shared_lock producer_lock(producer_mutex_);
    auto status = setUp();
    producer_lock.unlock();
    if (status) break;
    setProblem(status.error().describe());
    if (!sender_.sleepFor(std::chrono::microseconds(retry_us))) return;
  }
  if (sender_.stopRequested()) return;
  if (wire_) {
    // Set up: the librdkafka clients' threads would only wake for nothing from here on (each
    // broker thread at least once a second).
    std::unique_lock producer_lock(producer_mutex_);
    for (auto* t : topic_handles_) rd_kafka_topic_destroy(t);
    topic_handles_.clear();
    {
      std::unique_lock slots_lock(slots_mutex_);
      for (auto& slot : slots_) slot->topic = nullptr;
    }
    consumer_.reset();
    producer_.reset();
  }
  if (wire_) {
    // The wire client's I/O thread ticks from here on (WireClient::tickOnIoThread), the first
    // tick at once; this thread only waits for the stop.
    pacer_ = std::make_unique<Pacer>(cluster_.probe.interval_us, clock_.monoNow());
    wire_->tickOnIoThread([this](std::vector<WireSend>& sends) { return tickOnWire(sends); },
                          pacer_->deadline());
    while (sender_.sleepFor(std::chrono::hours(1))) {
    }
    return;
  }
  // Only now: the clients this thread created in setUp() have their threads, which would
  // inherit the sender's scheduling.
  takeSenderScheduling();
  pacer_ = std::make_unique<Pacer>(cluster_.probe.interval_us, clock_.monoNow());
  while (!sender_.stopRequested()) {
    const auto wait = pacer_->deadline() - clock_.monoNow();
    if (wait > 0 && !sender_.sleepFor(std::chrono::microseconds(wait))) return;
    const auto skipped = pacer_->fire(clock_.monoNow());
    {
      std::shared_lock producer_lock(producer_mutex_);
      if (seen_changed_.exchange(false)) addSeenPartitions();
      sendTick();
    }
    ticks_ = pacer_->fired();
    if (skipped > 0) skipped_ = pacer_->skipped();
    max_lateness_ = pacer_->maxLateness();
  }
}

void ProbeRunner::takeSenderScheduling() {
  const auto scheduling = common::raiseThisThreadPriority(cluster_.probe.sender_priority);
  {
    std::lock_guard lock(status_mutex_);
    sender_scheduling_ = scheduling;
  }
  if (scheduling.find('(') != std::string::npos) {
    spdlog::warn("probe {}: sender wanted {} priority, has {}: a busy host can make its sends late",
                 cluster_.name, common::toString(cluster_.probe.sender_priority), scheduling);
  } else {
    spdlog::info("probe {}: sender scheduling {}", cluster_.name, scheduling);
  }
}

common::MonoMicros ProbeRunner::tickOnWire(std::vector<WireSend>& sends) {
  if (!wire_ticked_) {
    // The I/O thread is the sender now (it starts no threads of its own to inherit this).
    takeSenderScheduling();
    wire_ticked_ = true;
  }
  // stop() ends the ticks right after the sender; a stop that has begun sends nothing more.
  if (stopping_) return pacer_->deadline() + pacer_->interval();
  const auto skipped = pacer_->fire(clock_.monoNow());
  {
    std::shared_lock producer_lock(producer_mutex_);
    if (seen_changed_.exchange(false)) addSeenPartitions();
    wireTickSends(sends);
  }
  ticks_ = pacer_->fired();
  if (skipped > 0) skipped_ = pacer_->skipped();
  max_lateness_ = pacer_->maxLateness();
  return pacer_->deadline();
}

void ProbeRunner::partitionsSeen(const std::map<std::string, std::int32_t>& counts) {
  std::lock_guard lock(seen_mutex_);
  bool changed = false;
  for (const auto& topic : cluster_.probe.topics) {
    const auto it = counts.find(topic.name);
    if (it == counts.end()) continue;
    auto& known = seen_partitions_[topic.name];
    if (it->second != known) changed = true;
    known = it->second;
  }
  if (changed) seen_changed_ = true;
}

void ProbeRunner::addSeenPartitions() {
  std::map<std::string, std::int32_t> seen;
  {
    std::lock_guard lock(seen_mutex_);
    seen = seen_partitions_;
  }
  struct Added {
    std::string topic;
    std::int32_t partition;
    rd_kafka_topic_t* handle;
  };
  std::vector<Added> added;
  for (const auto& t : topic_slots_) {
    const auto it = seen.find(t.topic);
    if (it == seen.end()) continue;
    rd_kafka_topic_t* handle = nullptr;
    for (const auto index : t.slot_by_partition) {
      if (index >= 0) handle = slots_[static_cast<std::size_t>(index)]->topic;
    }
    for (auto p = static_cast<std::int32_t>(t.slot_by_partition.size()); p < it->second; ++p) {
      added.push_back({t.topic, p, handle});
    }
  }
  if (added.empty()) return;
  if (slots_.size() + added.size() >= kMaxSlots) {
    setProblem("too many probe partitions: partitions added to the probe topics are not probed");
    return;
  }
  // The producer refuses a send to a partition its own metadata does not list yet (it refreshes
  // every topic.metadata.refresh.interval.ms, 5 min by default): one request for the grown topics
  // updates its cache before the first send to them. Rare, and outside any stall the probe is
  // measuring, so it does not shorten a client-discovery time.
  std::vector<std::string> grown;
  for (const auto& a : added) {
    if (std::find(grown.begin(), grown.end(), a.topic) == grown.end()) grown.push_back(a.topic);
  }
  if (wire_) {
    // The wire client asks for the grown topics' metadata itself (WireClient::add).
  } else if (auto md = kafka::fetchMetadata(producer_.get(), grown, kSetUpRequestTimeoutMs); !md) {
    setProblem("partitions added to the probe topics are not probed yet: " + md.error().describe());
    adding_failed_ = true;
    std::lock_guard lock(seen_mutex_);
    seen_partitions_.clear();
    return;
  } else {
    const auto unknown = std::erase_if(added, [&](const Added& a) {
      const auto* info = md->topic(a.topic);
      const auto listed = [&](const kafka::PartitionInfo& p) { return p.partition == a.partition; };
      return info == nullptr ||
             std::none_of(info->partitions.begin(), info->partitions.end(), listed);
    });
    if (unknown > 0) {
      // Not in this broker's answer yet: taken up on a later poll.
      std::lock_guard lock(seen_mutex_);
      seen_partitions_.clear();
    }
    if (added.empty()) return;
  }
  // A partition that was just added holds nothing the probe sent before now: read from its
  // beginning, so the consumer's position needs no request to the cluster and no probe message
  // sent from the next tick on can be skipped.
  kafka::PartitionListPtr assignment(
      rd_kafka_topic_partition_list_new(static_cast<int>(added.size())));
  // A consumer being recreated (receiver thread) is assigned the slots there are: the partitions
  // are assigned and their slots added on a later tick instead of waiting for it here.
  std::shared_lock consumer_lock(consumer_mutex_, std::defer_lock);
  if (!wire_ && !consumer_lock.try_lock()) {
    seen_changed_ = true;
    return;
  }
  for (const auto& a : added) {
    rd_kafka_topic_partition_list_add(assignment.get(), a.topic.c_str(), a.partition)->offset =
        RD_KAFKA_OFFSET_BEGINNING;
  }
  if (rd_kafka_error_t* error = wire_ ? nullptr : rd_kafka_incremental_assign(consumer_.get(), assignment.get())) {
    setProblem(std::string("partitions added to the probe topics are not probed: assigning them "
                           "failed: ") +
               rd_kafka_error_string(error));
    rd_kafka_error_destroy(error);
    adding_failed_ = true;
    // Tried again on the next metadata poll that reports them.
    std::lock_guard lock(seen_mutex_);
    seen_partitions_.clear();
    return;
  }
  if (std::exchange(adding_failed_, false)) setProblem({});
  const auto now = clock_.now();
  std::vector<WireTarget> wire_targets;
  {
    std::unique_lock lock(slots_mutex_);
    for (const auto& a : added) {
      auto slot = std::make_unique<Slot>(cluster_id_, a.topic, a.partition, ledger_options_);
      slot->topic = a.handle;
      slot->read_from = RD_KAFKA_OFFSET_BEGINNING;
      const auto index = static_cast<std::int32_t>(slots_.size());
      slots_.push_back(std::move(slot));
      wire_targets.push_back({a.topic, a.partition, static_cast<std::size_t>(index), 0});
      auto t = std::find_if(topic_slots_.begin(), topic_slots_.end(),
                            [&](const TopicSlots& ts) { return ts.topic == a.topic; });
      if (t->slot_by_partition.size() <= static_cast<std::size_t>(a.partition)) {
        t->slot_by_partition.resize(static_cast<std::size_t>(a.partition) + 1, -1);
      }
      t->slot_by_partition[static_cast<std::size_t>(a.partition)] = index;
    }
  }
  if (wire_) wire_->add(std::move(wire_targets));
  for (const auto& a : added) {
    spdlog::info("probe {}: {}[{}] added to the topic: probing it too", cluster_.name, a.topic,
                 a.partition);
    storage::Event e;
    e.cluster = cluster_id_;
    e.t_us = now.wall;
    e.source = "probe";
    e.kind = "partition_added";
    e.topic = a.topic;
    e.partition = a.partition;
    e.detail = common::jsonText(nlohmann::json{{"partitions", seen[a.topic]}});
    store_.addEvent(std::move(e));
  }
}

void ProbeRunner::sendTick() {
  LedgerOutput out;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    auto& slot = *slots_[i];
    const auto now = clock_.now();
    std::int64_t seq = 0;
    {
      std::lock_guard lock(slot.mutex);
      // At the bound the probe skips the tick: a message queued behind a backlog would measure
      // the backlog. What is outstanding still ends the gap when the cluster answers.
      if (const auto hold = slot.ledger.holdReason(now); hold != HoldReason::kNone) {
        slot.ledger.holdTick(now, hold);
        held_ticks_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      seq = slot.ledger.beginSend(now, out);
    }
    const auto body = encodePayload({run_id_, seq, now.wall},
                                    static_cast<std::size_t>(cluster_.probe.payload_bytes));
    const auto err = rd_kafka_producev(
        producer_.get(), RD_KAFKA_V_RKT(slot.topic), RD_KAFKA_V_PARTITION(slot.ledger.partition()),
        RD_KAFKA_V_VALUE(const_cast<char*>(body.data()), body.size()),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_OPAQUE(packOpaque(i, seq)),
        RD_KAFKA_V_END);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      std::lock_guard lock(slot.mutex);
      slot.ledger.sendRefused(seq, clock_.now(), err, out);
      slot.refusing = true;
    } else if (slot.refusing) {
      std::lock_guard lock(slot.mutex);
      slot.ledger.sendAccepted(now, out);
      slot.refusing = false;
    }
  }
  publish(out);
}

void ProbeRunner::wireTickSends(std::vector<WireSend>& sends) {
  LedgerOutput out;
  sends.reserve(slots_.size());
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    auto& slot = *slots_[i];
    const auto now = clock_.now();
    std::int64_t seq = 0;
    {
      std::lock_guard lock(slot.mutex);
      if (const auto hold = slot.ledger.holdReason(now); hold != HoldReason::kNone) {
        slot.ledger.holdTick(now, hold);
        held_ticks_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      seq = slot.ledger.beginSend(now, out);
    }
    const auto body = encodePayload({run_id_, seq, now.wall},
                                    static_cast<std::size_t>(cluster_.probe.payload_bytes));
    WireSend send;
    send.slot = i;
    send.seq = seq;
    send.value.assign(body.begin(), body.end());
    send.timestamp_ms = now.wall / 1000;
    sends.push_back(std::move(send));
  }
  publish(out);
}

void ProbeRunner::wireAcks(std::span<const WireAck> acks, common::Instant at) {
  LedgerOutput out;
  {
    std::shared_lock slots_lock(slots_mutex_);
    for (const auto& ack : acks) {
      if (ack.slot >= slots_.size()) continue;
      auto& slot = *slots_[ack.slot];
      std::lock_guard lock(slot.mutex);
      slot.ledger.deliveryReport(ack.seq, at, ack.error, ack.offset, out);
    }
  }
  publish(out);
}

void ProbeRunner::wireRecords(std::span<const WireRecord> records, common::Instant at) {
  if (!ready_) return;
  LedgerOutput out;
  {
    std::shared_lock slots_lock(slots_mutex_);
    for (const auto& record : records) {
      if (record.slot >= slots_.size()) continue;
      const auto payload = decodePayload(
          std::string_view(reinterpret_cast<const char*>(record.value.data()), record.value.size()));
      if (!payload || payload->run_id != run_id_) continue;
      auto& slot = *slots_[record.slot];
      std::lock_guard lock(slot.mutex);
      slot.ledger.received(payload->seq, at, out);
    }
  }
  publish(out);
}

void ProbeRunner::serveReports(rd_kafka_event_t* event) {
  const auto now = clock_.now();
  LedgerOutput out;
  std::shared_lock slots_lock(slots_mutex_);
  while (const rd_kafka_message_t* msg = rd_kafka_event_message_next(event)) {
    const auto [index, seq] = unpackOpaque(msg->_private);
    if (index >= slots_.size()) continue;
    auto& slot = *slots_[index];
    std::lock_guard lock(slot.mutex);
    slot.ledger.deliveryReport(seq, now, msg->err,
                               msg->err == RD_KAFKA_RESP_ERR_NO_ERROR
                                   ? std::optional<std::int64_t>(msg->offset)
                                   : std::nullopt,
                               out);
  }
  slots_lock.unlock();
  publish(out);
}

void ProbeRunner::reporterLoop() {
  // The wire client reports on its own I/O thread; the producer only sets up.
  if (wire()) return;
  rd_kafka_queue_t* queue = nullptr;
  {
    std::shared_lock lock(producer_mutex_);
    queue = rd_kafka_queue_get_main(producer_.get());
  }
  std::uint64_t logged_errors = 0;
  while (!reporter_.stopRequested()) {
    rd_kafka_event_t* event = rd_kafka_queue_poll(queue, 100);
    if (event == nullptr) continue;
    if (rd_kafka_event_type(event) == RD_KAFKA_EVENT_DR) {
      serveReports(event);
    } else if (rd_kafka_event_type(event) == RD_KAFKA_EVENT_ERROR) {
      const bool fatal = rd_kafka_event_error_is_fatal(event);
      // Transient errors (a broker went away) are the very thing being measured; log a few.
      if (logged_errors++ < 20 || fatal) {
        spdlog::warn("probe {}: producer: {}", cluster_.name, rd_kafka_event_error_string(event));
      }
      if (fatal && !stopping_) {
        // The idempotent producer cannot go on (its sequence state is lost): every send is
        // refused from here on. Only a new producer, with a new epoch, probes again.
        std::string error;
        {
          std::shared_lock lock(producer_mutex_);
          char reason[512] = "";
          const auto code = rd_kafka_fatal_error(producer_.get(), reason, sizeof reason);
          error = std::string(rd_kafka_err2name(code)) + ": " + reason;
        }
        rd_kafka_event_destroy(event);
        recreateProducer(error, queue);
        continue;
      }
    }
    rd_kafka_event_destroy(event);
  }
  rd_kafka_queue_destroy(queue);
}

void ProbeRunner::recreateProducer(const std::string& error, rd_kafka_queue_t*& queue) {
  const auto failed_at = clock_.now().wall;
  Result<kafka::Handle> fresh = createProducer();
  // Creating a client is local: it fails only on settings that start() accepted already, so a
  // failure here is retried rather than leaving the probe without a producer.
  while (!fresh && !reporter_.stopRequested()) {
    setProblem("producer failed fatally (" + error + ") and cannot be recreated: " +
               fresh.error().describe());
    if (!reporter_.sleepFor(std::chrono::seconds(1))) return;
    fresh = createProducer();
  }
  if (!fresh) return;
  kafka::Handle old;
  std::vector<rd_kafka_topic_t*> old_topics;
  {
    std::shared_lock lock(producer_mutex_);
    // What the old producer still holds fails now, each with its report, so those messages get
    // their fate at once instead of at the ledger's unacked timeout.
    rd_kafka_purge(producer_.get(), RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT |
                                        RD_KAFKA_PURGE_F_NON_BLOCKING);
  }
  const auto drain_until = clock_.monoNow() + 2'000'000;
  for (;;) {
    rd_kafka_event_t* event = rd_kafka_queue_poll(queue, 100);
    if (event != nullptr) {
      if (rd_kafka_event_type(event) == RD_KAFKA_EVENT_DR) serveReports(event);
      rd_kafka_event_destroy(event);
      continue;
    }
    std::shared_lock lock(producer_mutex_);
    if (rd_kafka_outq_len(producer_.get()) == 0 || clock_.monoNow() >= drain_until) break;
  }
  rd_kafka_queue_destroy(queue);
  {
    std::unique_lock lock(producer_mutex_);
    // What is still without a report belongs to the old producer (the sender waits for this
    // lock), whose reports will never come now.
    LedgerOutput out;
    const auto now = clock_.now();
    for (auto& slot : slots_) {
      std::lock_guard slot_lock(slot->mutex);
      slot->ledger.failOutstanding(now, RD_KAFKA_RESP_ERR__FATAL, out);
    }
    publish(out);
    std::vector<rd_kafka_topic_t*> topics;
    for (auto* t : topic_handles_) {
      topics.push_back(rd_kafka_topic_new(fresh->get(), rd_kafka_topic_name(t), nullptr));
    }
    for (auto& slot : slots_) {
      const auto at = std::find(topic_handles_.begin(), topic_handles_.end(), slot->topic);
      if (at != topic_handles_.end()) {
        slot->topic = topics[static_cast<std::size_t>(at - topic_handles_.begin())];
      }
    }
    old_topics = std::exchange(topic_handles_, std::move(topics));
    old = std::exchange(producer_, std::move(*fresh));
    queue = rd_kafka_queue_get_main(producer_.get());
  }
  for (auto* t : old_topics) rd_kafka_topic_destroy(t);
  old.reset();
  const auto recreations = ++producer_recreations_;
  spdlog::warn("probe {}: producer recreated after a fatal error ({}), {} time(s) so far",
               cluster_.name, error, recreations);
  storage::Event e;
  e.cluster = cluster_id_;
  e.t_us = clock_.now().wall;
  e.source = "probe";
  e.kind = "producer_recreated";
  e.detail = common::jsonText(nlohmann::json{{"error", error}, {"failed_at_us", failed_at},
                                             {"recreations", recreations}});
  store_.addEvent(std::move(e));
}

void ProbeRunner::receiverLoop() {
  auto next_expire = clock_.monoNow() + kExpireEveryUs;
  while (!receiver_.stopRequested()) {
    if (wire()) {
      // The wire client's I/O thread reads; this loop only gives up on lost messages.
      if (!receiver_.sleepFor(std::chrono::microseconds(kExpireEveryUs))) break;
      const auto now = clock_.now();
      if (!ready_) continue;
      LedgerOutput out;
      {
        std::shared_lock slots_lock(slots_mutex_);
        for (auto& slot : slots_) {
          std::lock_guard lock(slot->mutex);
          slot->ledger.expire(now, out);
        }
      }
      publish(out);
      continue;
    }
    rd_kafka_message_t* msg = rd_kafka_consumer_poll(consumer_.get(), 100);
    const auto now = clock_.now();
    if (msg != nullptr) {
      if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR && ready_) {
        const auto payload = decodePayload(
            std::string_view(static_cast<const char*>(msg->payload), msg->len));
        LedgerOutput out;
        {
          std::shared_lock slots_lock(slots_mutex_);
          if (Slot* slot = slotFor(rd_kafka_topic_name(msg->rkt), msg->partition)) {
            slot->read_from = msg->offset + 1;
            if (payload && payload->run_id == run_id_) {
              std::lock_guard lock(slot->mutex);
              slot->ledger.received(payload->seq, now, out);
            }
          }
        }
        publish(out);
      } else if (msg->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        spdlog::debug("probe {}: consumer: {}", cluster_.name, rd_kafka_message_errstr(msg));
      }
      rd_kafka_message_destroy(msg);
    }
    if (ready_ && now.mono >= next_expire) {
      next_expire = now.mono + kExpireEveryUs;
      LedgerOutput out;
      std::vector<StuckFetch> stuck;
      {
        std::shared_lock slots_lock(slots_mutex_);
        for (auto& slot : slots_) {
          std::lock_guard lock(slot->mutex);
          noteStuckFetch(*slot, now, stuck);
          slot->ledger.expire(now, out);
        }
      }
      publish(out);
      restartFetches(stuck, now);
    }
  }
}

void ProbeRunner::noteStuckFetch(Slot& slot, common::Instant now, std::vector<StuckFetch>& stuck) {
  const auto after_us = cluster_.probe.consumer_restart_us;
  const auto unread = slot.ledger.unread(now, after_us);
  if (!unread) {
    slot.restarts_in_row = 0;
    slot.next_restart_mono = 0;
    return;
  }
  if (now.mono < slot.next_restart_mono) return;
  // The first restart (a seek) after the wait; when it did not help, the second (a new
  // consumer) after half the wait more, so that with the default wait (half the loss timeout,
  // at most 5 s) the unread messages are read before they count as lost; again after twice the
  // wait, and doubling, while nothing is read, at most every loss timeout.
  const int in_row = ++slot.restarts_in_row;
  const auto wait_us = in_row == 1 ? after_us / 2 : after_us << std::min(in_row - 1, 16);
  slot.next_restart_mono = now.mono + std::min(wait_us, cluster_.probe.loss_timeout_us);
  stuck.push_back({&slot, slot.ledger.topic(), slot.ledger.partition(), *unread, in_row});
}

void ProbeRunner::restartFetches(const std::vector<StuckFetch>& restarts, common::Instant now) {
  if (restarts.empty()) return;
  const auto after_us = cluster_.probe.consumer_restart_us;
  const bool recreate = std::any_of(restarts.begin(), restarts.end(), [](const StuckFetch& r) { return r.in_row > 1; });
  std::string error;
  if (recreate) {
    error = recreateConsumer(restarts);
  } else {
    // A seek puts the partition's fetch at the offset with a new version: whatever state it was
    // waiting in (an offset or leader-epoch validation, a fetch answer that never came) is left.
    kafka::PartitionListPtr positions(rd_kafka_topic_partition_list_new(static_cast<int>(restarts.size())));
    for (const auto& r : restarts) {
      rd_kafka_topic_partition_list_add(positions.get(), r.topic.c_str(), r.partition)->offset = r.unread.offset;
    }
    if (rd_kafka_error_t* failed = rd_kafka_seek_partitions(consumer_.get(), positions.get(), 0)) {
      error = rd_kafka_error_string(failed);
      rd_kafka_error_destroy(failed);
    } else {
      for (const auto& r : restarts) r.slot->read_from = r.unread.offset;
    }
  }
  const char* how = recreate ? "recreated" : "seek";
  for (const auto& r : restarts) {
    spdlog::warn("probe {}: {}[{}]: the consumer has read nothing for {} s or more though the cluster acked offset {} "
                 "{} s ago; {} there{} (restart {} in a row)",
                 cluster_.name, r.topic, r.partition, after_us / 1'000'000, r.unread.offset,
                 r.unread.acked_ago_us / 1'000'000,
                 recreate ? "a new consumer reads from" : "its fetch restarted",
                 error.empty() ? "" : " failed: " + error, r.in_row);
    storage::Event e;
    e.cluster = cluster_id_;
    e.t_us = now.wall;
    e.source = "probe";
    e.kind = "consumer_restarted";
    e.topic = r.topic;
    e.partition = r.partition;
    e.detail = common::jsonText(nlohmann::json{{"offset", r.unread.offset},
                                               {"acked_ago_us", r.unread.acked_ago_us},
                                               {"restart_after_us", after_us},
                                               {"in_row", r.in_row},
                                               {"how", how},
                                               {"error", error}});
    store_.addEvent(std::move(e));
  }
}

std::string ProbeRunner::recreateConsumer(const std::vector<StuckFetch>& stuck) {
  const auto began = clock_.now();
  std::string error;
  std::size_t assigned = 0;
  kafka::Handle old;
  auto fresh = kafka::createClient(RD_KAFKA_CONSUMER, client_options_, consumer_settings_);
  if (!fresh) {
    error = "creating a consumer: " + fresh.error().describe();
  } else {
    rd_kafka_poll_set_consumer(fresh->get());
    std::unique_lock consumer_lock(consumer_mutex_);
    std::shared_lock slots_lock(slots_mutex_);
    kafka::PartitionListPtr assignment(rd_kafka_topic_partition_list_new(static_cast<int>(slots_.size())));
    for (const auto& slot : slots_) {
      auto offset = slot->read_from;
      for (const auto& r : stuck) {
        if (r.slot == slot.get()) offset = r.unread.offset;
      }
      rd_kafka_topic_partition_list_add(assignment.get(), slot->ledger.topic().c_str(), slot->ledger.partition())
          ->offset = offset;
    }
    if (const auto err = rd_kafka_assign(fresh->get(), assignment.get()); err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      error = std::string("assigning the new consumer: ") + rd_kafka_err2str(err);
    } else {
      for (const auto& r : stuck) r.slot->read_from = r.unread.offset;
      assigned = slots_.size();
      old = std::exchange(consumer_, std::move(*fresh));
    }
  }
  // The old consumer (if replaced) or the refused new one is destroyed outside the lock, the old
  // one without closing it (it never joined its group, and whatever it is stuck in need not be
  // waited for); its broker threads end with it.
  if (fresh) fresh->reset();
  if (old) old.get_deleter().flags = RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE;
  old.reset();
  const auto took_us = clock_.monoNow() - began.mono;
  const std::uint64_t recreations = error.empty() ? ++consumer_recreations_ : consumer_recreations_.load();
  if (error.empty()) {
    spdlog::warn("probe {}: consumer recreated ({} so far): {} partition(s) assigned, {} of them stuck, in {} ms",
                 cluster_.name, recreations, assigned, stuck.size(), took_us / 1000);
  } else {
    spdlog::error("probe {}: the consumer could not be recreated, the old one goes on: {}", cluster_.name, error);
  }
  storage::Event e;
  e.cluster = cluster_id_;
  e.t_us = began.wall;
  e.source = "probe";
  e.kind = "consumer_recreated";
  int in_row = 0;
  for (const auto& r : stuck) in_row = std::max(in_row, r.in_row);
  e.detail = common::jsonText(nlohmann::json{{"partitions", assigned},
                                             {"stuck", stuck.size()},
                                             {"in_row", in_row},
                                             {"took_us", took_us},
                                             {"recreations", recreations},
                                             {"error", error}});
  store_.addEvent(std::move(e));
  return error;
}

ProbeRunner::Slot* ProbeRunner::slotFor(const char* topic, std::int32_t partition) const {
  for (const auto& t : topic_slots_) {
    if (t.topic != topic) continue;
    if (partition < 0 || static_cast<std::size_t>(partition) >= t.slot_by_partition.size()) return nullptr;
    const auto index = t.slot_by_partition[static_cast<std::size_t>(partition)];
    return index < 0 ? nullptr : slots_[static_cast<std::size_t>(index)].get();
  }
  return nullptr;
}

void ProbeRunner::publish(LedgerOutput& out) {
  for (auto& gap : out.gaps) {
    spdlog::info("probe {}: {} gap on {}[{}]: {:.3f} s", cluster_.name, storage::toString(gap.kind),
                 gap.topic, gap.partition, static_cast<double>(gap.duration_us) / 1e6);
    store_.addGap(std::move(gap));
  }
  for (auto& sample : out.samples) store_.addSample(std::move(sample));
  for (const auto& stretch : out.stretches) {
    storage::Event e;
    e.cluster = cluster_id_;
    e.t_us = stretch.start;
    e.source = "probe";
    e.kind = stretch.kind;
    e.topic = stretch.topic;
    e.partition = stretch.partition;
    nlohmann::json detail = {{"end_us", stretch.end}};
    const auto kind = common::eventKindFromString(stretch.kind);
    if (kind == common::EventKind::kHeldBack) {
      detail["ticks"] = stretch.ticks;
      detail["reason"] = stretch.reason;
    } else if (kind == common::EventKind::kRefused) {
      detail["sends"] = stretch.ticks;
      detail["error"] = rd_kafka_err2name(static_cast<rd_kafka_resp_err_t>(stretch.error));
    } else {
      detail["kind"] = storage::toString(stretch.gap_kind);
    }
    e.detail = common::jsonText(detail);
    store_.addEvent(std::move(e));
  }
  for (const auto& anomaly : out.anomalies) {
    storage::Event e;
    e.cluster = cluster_id_;
    e.t_us = anomaly.at;
    e.source = "probe";
    e.kind = anomaly.kind;
    e.topic = anomaly.topic;
    e.partition = anomaly.partition;
    e.detail = "{\"seq\":" + std::to_string(anomaly.seq) + "}";
    store_.addEvent(std::move(e));
  }
  out.gaps.clear();
  out.samples.clear();
  out.anomalies.clear();
  out.stretches.clear();
}

void ProbeRunner::steerAround(std::vector<std::int32_t> nodes) const {
  if (control_) control_->steerAround(std::move(nodes));
}

ProbeStatus ProbeRunner::status() const {
  ProbeStatus s;
  {
    std::lock_guard lock(status_mutex_);
    s.phase = phase_;
    s.problem = problem_;
    s.sender_scheduling = sender_scheduling_;
  }
  s.run_id = run_id_;
  s.interval_us = cluster_.probe.interval_us;
  s.ticks = ticks_;
  s.skipped_ticks = skipped_;
  s.max_send_lateness_us = max_lateness_;
  s.held_ticks = held_ticks_;
  s.producer_recreations = producer_recreations_;
  s.consumer_recreations = consumer_recreations_;
  s.client_settings = client_settings_;
  if (control_ != nullptr) s.control = control_->status();
  if (coordinators_ != nullptr) s.coordinators = coordinators_->status();
  if (ready_) {
    std::shared_lock slots_lock(slots_mutex_);
    for (const auto& slot : slots_) {
      std::lock_guard lock(slot->mutex);
      s.partitions.push_back(slot->ledger.status());
    }
  }
  return s;
}

std::vector<storage::ProbeSample> ProbeRunner::pending(common::WallMicros from, common::WallMicros to) const {
  std::vector<storage::ProbeSample> out;
  if (!ready_) return out;
  std::shared_lock slots_lock(slots_mutex_);
  for (const auto& slot : slots_) {
    std::lock_guard lock(slot->mutex);
    auto part = slot->ledger.pending(from, to);
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

}  // namespace kfaild::probe
