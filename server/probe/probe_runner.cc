#include "server/probe/probe_runner.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <utility>

#include "server/common/event_types.h"
#include "server/common/json_text.h"
#include "server/common/thread_priority.h"
#include "server/kafka/admin.h"
#include "server/kafka/errc.h"
#include "server/kafka/metadata.h"
#include "server/kafka/quorum.h"
#include "server/kafka/rdkafka_ptr.h"
#include "server/probe/control_probe.h"
#include "server/probe/coordinator_probe.h"
#include "server/probe/java_probe_client.h"
#include "server/probe/librdkafka_probe_client.h"
#include "server/probe/payload.h"
#include "server/probe/wire_probe_client.h"

namespace kfaild::probe {
namespace {

// A failed set-up is tried again after 250 ms, doubling up to 3 s: a topic created moments ago is
// in the brokers' metadata within a few hundred ms (it took a fixed 3 s wait before), while a
// cluster that is down is not asked more than once every 3 s for long.
constexpr std::int64_t kSetUpRetryFirstUs = 250'000;
constexpr std::int64_t kSetUpRetryMaxUs = 3'000'000;

// The producer settings that decide what the probe measures, reported with every drill.
constexpr const char* kReportedSettings[] = {"acks",
                                             "enable.idempotence",
                                             "message.timeout.ms",
                                             "max.in.flight.requests.per.connection",
                                             "retries",
                                             "retry.backoff.ms",
                                             "retry.backoff.max.ms",
                                             "linger.ms",
                                             "request.timeout.ms",
                                             "queue.buffering.max.messages",
                                             "reconnect.backoff.ms",
                                             "reconnect.backoff.max.ms",
                                             "socket.timeout.ms",
                                             "topic.metadata.refresh.interval.ms",
                                             "metadata.max.age.ms"};

// The consumer settings that decide when a message is read back, reported as "consumer.KEY".
// With fetch.min.bytes above 1 the broker may hold a fetch for up to fetch.wait.max.ms to fill
// it: every receive time is then late by up to that long.
constexpr const char* kReportedConsumerSettings[] = {
    "fetch.min.bytes", "fetch.wait.max.ms", "fetch.max.bytes", "queued.max.messages.kbytes"};
constexpr const char* kConsumerPrefix = "consumer.";

}  // namespace

ProbeRunner::ProbeRunner(const config::ClusterConfig& cluster, storage::ClusterId stream,
                         storage::Store& store, const common::Clock& clock,
                         kafka::LogSink client_log, std::optional<config::ProbeProfile> profile)
    : cluster_(cluster),
      profile_(profile ? std::move(*profile)
                       : config::ProbeProfile{config::toString(cluster.probe.client),
                                              cluster.probe.client,
                                              {}}),
      primary_(!profile || cluster.probe.profiles.empty() ||
               profile_.name == cluster.probe.profiles.front().name),
      label_(primary_ ? cluster.name : cluster.name + "/" + profile_.name),
      cluster_id_(stream),
      store_(store),
      clock_(clock),
      client_log_(std::move(client_log)),
      run_id_(std::random_device{}() | (std::uint64_t{std::random_device{}()} << 32)) {}

ProbeRunner::~ProbeRunner() {
  stop();
}

std::unique_ptr<ProbeRunner::Client> ProbeRunner::makeClient() {
  if (profile_.client == config::ProbeClient::kWire) {
    return std::make_unique<WireProbeClient>(*this);
  }
  if (profile_.client == config::ProbeClient::kJava) {
    return std::make_unique<JavaProbeClient>(*this);
  }
  return std::make_unique<LibrdkafkaClient>(*this);
}

Status ProbeRunner::start() {
  kafka::ClientOptions options;
  options.bootstrap = cluster_.bootstrap;
  options.properties = cluster_.client;
  // A librdkafka profile's settings are its clients'; another client's are its own (the
  // librdkafka clients then only set up, with the cluster's map).
  if (profile_.client == config::ProbeClient::kLibrdkafka) {
    for (const auto& [key, value] : profile_.settings) options.properties[key] = value;
  }
  options.client_id = "kfaild-" + cluster_.name + (primary_ ? "" : "-" + profile_.name);
  options.debug = cluster_.observe.client_debug;
  options.log = client_log_;
  // The ledger bounds what each partition may have outstanding (probe.max_outstanding*), so the
  // local queue holds at most partitions × max_outstanding messages; librdkafka's default of
  // 100,000 would refuse the probe's own sends from 1,000 partitions at the default bound on.
  // The producer is idempotent (the Java client's default since Kafka 3.0), so its own retries
  // neither duplicate nor reorder what it measures, and every message has a fate within
  // message.timeout.ms. A user who runs their applications otherwise sets `client`; the
  // settings in force are reported with every drill (clientSettings()).
  std::map<std::string, std::string> producer_settings = {{"acks", "all"},
                                                          {"allow.auto.create.topics", "false"}};
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
  std::map<std::string, std::string> consumer_settings = {
      {"group.id", "kfaild-probe-" + cluster_.name},
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
  if (!options.properties.contains("fetch.max.bytes") &&
      !options.properties.contains("message.max.bytes")) {
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
    spdlog::warn(
        "probe {}: client sets fetch.min.bytes {}: the broker may hold a fetch for up to "
        "fetch.wait.max.ms ({} ms), and every receive time is late by up to that long",
        label_, min_bytes, consumer_setting("fetch.wait.max.ms"));
  }
  if (auto it = client_settings_.find("message.timeout.ms"); it != client_settings_.end()) {
    message_timeout_us_ = std::stoll(it->second) * 1000;
  }
  rd_kafka_poll_set_consumer(consumer_.get());
  client_ = makeClient();
  if (auto prepared = client_->prepare(); !prepared) return prepared.error();
  client_->describe(client_settings_, message_timeout_us_);

  sender_.start("kfaild:send", [this] { senderLoop(); });
  reporter_.start("kfaild:report", [this] { client_->runReporter(); });
  receiver_.start("kfaild:receive", [this] { client_->runReceiver(); });
  return okStatus();
}

Result<kafka::Handle> ProbeRunner::createProducer() const {
  // A metadata request for a missing topic must not create it with the broker's defaults: kfaild
  // creates probe topics only as configured.
  return kafka::createClient(
      RD_KAFKA_PRODUCER, client_options_, producer_settings_, [](rd_kafka_conf_t* conf) {
        rd_kafka_conf_set_events(conf, RD_KAFKA_EVENT_DR | RD_KAFKA_EVENT_ERROR);
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
  if (client_) client_->stopTicking();
  // The receiver and the reporter block in librdkafka's polls for up to 100 ms: a yield on the
  // queue each one polls ends that wait at once (a probe stopped 100-200 ms late before).
  receiver_.requestStop();
  {
    std::shared_lock lock(consumer_mutex_);
    yieldQueue(consumer_.get(), rd_kafka_queue_get_consumer);
  }
  receiver_.stop();
  if (client_) client_->finishOutstanding();
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
    spdlog::warn("probe {}: {}", label_, problem);
  }
  problem_ = std::move(problem);
}

Status ProbeRunner::setUp() {
  {
    std::lock_guard lock(status_mutex_);
    phase_ = ProbePhase::kSettingUp;
  }
  ledger_options_ = ledgerOptions();
  std::vector<std::unique_ptr<Slot>> slots;
  std::vector<rd_kafka_topic_t*> handles;
  // A set-up that fails destroys the topic handles it made (the slots pointing at them go too).
  const auto fail = [&handles](Error error) -> Status {
    for (auto* h : handles) rd_kafka_topic_destroy(h);
    return error;
  };
  kafka::PartitionListPtr assignment(rd_kafka_topic_partition_list_new(16));
  for (std::size_t t = 0; t < cluster_.probe.topics.size(); ++t) {
    const auto& name = cluster_.probe.topics[t].name;
    auto md = describeTopic(t);
    if (!md) return fail(md.error());
    const auto& info = *md->topic(name);
    if (auto known = checkConsumerKnows(name, info.partitions.size()); !known) {
      return fail(known.error());
    }
    rd_kafka_topic_t* handle = rd_kafka_topic_new(producer_.get(), name.c_str(), nullptr);
    handles.push_back(handle);
    if (auto added = addTopicSlots(info, handle, *assignment, slots); !added) {
      return fail(added.error());
    }
  }
  if (slots.size() >= Client::kMaxSlots) {
    return fail(kafka::kafkaError(kafka::errc::topic_error, "too many probe partitions"));
  }
  if (auto begun = client_->beginReading(*assignment); !begun) return fail(begun.error());
  publishSlots(std::move(slots), std::move(handles));
  return okStatus();
}

LedgerOptions ProbeRunner::ledgerOptions() const {
  LedgerOptions options;
  options.gap_threshold_us = cluster_.probe.gap_threshold_us;
  options.loss_timeout_us = cluster_.probe.loss_timeout_us;
  // A report later than librdkafka's own timeout means the report itself was lost.
  options.unacked_timeout_us = message_timeout_us_ + 30'000'000;
  options.max_outstanding = cluster_.probe.max_outstanding;
  options.max_outstanding_age_us = cluster_.probe.max_outstanding_age_us;
  options.idle_tolerance_us = 2 * cluster_.probe.interval_us;
  return options;
}

Result<kafka::ClusterSnapshot> ProbeRunner::describeTopic(std::size_t t) {
  const auto& topic = cluster_.probe.topics[t];
  const auto timeout_ms = Client::kSetUpRequestTimeoutMs;
  auto md = kafka::fetchMetadata(producer_.get(), {topic.name}, timeout_ms);
  if (!md) return md.error();
  const auto* info = md->topic(topic.name);
  const bool missing =
      info == nullptr || info->error == "UNKNOWN_TOPIC_OR_PART" || info->partitions.empty();
  if (!missing) {
    if (!info->error.empty()) {
      return kafka::kafkaError(kafka::errc::topic_error, topic.name + ": " + info->error);
    }
    return md;
  }
  if (!topic.create) {
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
  auto created = kafka::createTopic(producer_.get(), spec, timeout_ms);
  if (!created) return created.error();
  spdlog::info("probe {}: {} topic {}", label_,
               *created == kafka::CreateOutcome::kCreated ? "created" : "found existing",
               topic.name);
  md = kafka::fetchMetadata(producer_.get(), {topic.name}, timeout_ms);
  if (!md) return md.error();
  info = md->topic(topic.name);
  if (info == nullptr || info->partitions.empty()) {
    return kafka::kafkaError(kafka::errc::topic_error,
                             "topic " + topic.name + " created but not yet in metadata");
  }
  return md;
}

Status ProbeRunner::checkConsumerKnows(const std::string& topic, std::size_t partitions) {
  // The consumer answers a watermark query from its own metadata cache, which may still hold a
  // topic created moments ago as unknown: asked for it by name, it learns it. Without this,
  // set-up can fail with _UNKNOWN_PARTITION on every retry (88712dd).
  auto seen = kafka::fetchMetadata(consumer_.get(), {topic}, Client::kSetUpRequestTimeoutMs);
  if (!seen) return seen.error();
  if (const auto* known = seen->topic(topic);
      known == nullptr || known->partitions.size() < partitions) {
    return kafka::kafkaError(kafka::errc::topic_error,
                             "topic " + topic + " not yet in the consumer's metadata");
  }
  return okStatus();
}

Status ProbeRunner::addTopicSlots(const kafka::TopicInfo& info, rd_kafka_topic_t* handle,
                                  rd_kafka_topic_partition_list_t& assignment,
                                  std::vector<std::unique_ptr<Slot>>& slots) const {
  const auto& topic = info.name;
  for (const auto& p : info.partitions) {
    // Start reading at the current end: everything sent from now on lies beyond it.
    std::int64_t low = 0, high = 0;
    const auto err = rd_kafka_query_watermark_offsets(consumer_.get(), topic.c_str(), p.partition,
                                                      &low, &high, Client::kSetUpRequestTimeoutMs);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return kafka::kafkaError(kafka::errc::consume_failed,
                               "end offset of " + topic + "[" + std::to_string(p.partition) + "]",
                               err);
    }
    rd_kafka_topic_partition_list_add(&assignment, topic.c_str(), p.partition)->offset = high;
    auto slot = std::make_unique<Slot>(cluster_id_, topic, p.partition, ledger_options_);
    slot->topic = handle;
    slot->read_from = high;
    slots.push_back(std::move(slot));
  }
  return okStatus();
}

void ProbeRunner::publishSlots(std::vector<std::unique_ptr<Slot>> slots,
                               std::vector<rd_kafka_topic_t*> handles) {
  std::vector<TopicSlots> topic_slots;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const auto& ledger = slots[i]->ledger;
    auto it = std::find_if(topic_slots.begin(), topic_slots.end(),
                           [&](const TopicSlots& t) { return t.topic == ledger.topic(); });
    if (it == topic_slots.end()) {
      it = topic_slots.insert(topic_slots.end(), TopicSlots{ledger.topic(), {}});
    }
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
  spdlog::info("probe {}: probing {} partition(s) every {} µs, run id {:016x}", label_,
               slots_.size(), cluster_.probe.interval_us, run_id_);
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
  client_->runSender();
}

void ProbeRunner::takeSenderScheduling() {
  const auto scheduling = common::raiseThisThreadPriority(cluster_.probe.sender_priority);
  {
    std::lock_guard lock(status_mutex_);
    sender_scheduling_ = scheduling;
  }
  if (scheduling.find('(') != std::string::npos) {
    spdlog::warn("probe {}: sender wanted {} priority, has {}: a busy host can make its sends late",
                 label_, common::toString(cluster_.probe.sender_priority), scheduling);
  } else {
    spdlog::info("probe {}: sender scheduling {}", label_, scheduling);
  }
}

void ProbeRunner::tick() {
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
  std::vector<AddedPartition> added;
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
  if (slots_.size() + added.size() >= Client::kMaxSlots) {
    setProblem("too many probe partitions: partitions added to the probe topics are not probed");
    return;
  }
  std::vector<std::string> grown;
  for (const auto& a : added) {
    if (std::find(grown.begin(), grown.end(), a.topic) == grown.end()) grown.push_back(a.topic);
  }
  if (!client_->addPartitions(added, grown)) return;
  const auto now = clock_.now();
  for (const auto& a : added) {
    spdlog::info("probe {}: {}[{}] added to the topic: probing it too", label_, a.topic,
                 a.partition);
    storage::Event e;
    e.cluster = cluster_id_;
    e.t_us = now.wall;
    e.source = common::toString(common::EventSource::kProbe);
    e.kind = common::toString(common::EventKind::kPartitionAdded);
    e.topic = a.topic;
    e.partition = a.partition;
    e.detail = common::jsonText(nlohmann::json{{"partitions", seen[a.topic]}});
    store_.addEvent(std::move(e));
  }
}

std::size_t ProbeRunner::appendSlots(const std::vector<AddedPartition>& added) {
  if (std::exchange(adding_failed_, false)) setProblem({});
  std::unique_lock lock(slots_mutex_);
  const auto first = slots_.size();
  for (const auto& a : added) {
    auto slot = std::make_unique<Slot>(cluster_id_, a.topic, a.partition, ledger_options_);
    slot->topic = a.handle;
    slot->read_from = RD_KAFKA_OFFSET_BEGINNING;
    const auto index = static_cast<std::int32_t>(slots_.size());
    slots_.push_back(std::move(slot));
    auto t = std::find_if(topic_slots_.begin(), topic_slots_.end(),
                          [&](const TopicSlots& ts) { return ts.topic == a.topic; });
    if (t->slot_by_partition.size() <= static_cast<std::size_t>(a.partition)) {
      t->slot_by_partition.resize(static_cast<std::size_t>(a.partition) + 1, -1);
    }
    t->slot_by_partition[static_cast<std::size_t>(a.partition)] = index;
  }
  return first;
}

void ProbeRunner::retryAddingLater(std::string problem) {
  setProblem(std::move(problem));
  adding_failed_ = true;
  std::lock_guard lock(seen_mutex_);
  seen_partitions_.clear();
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
    const auto err = client_->send(i, slot, seq, body, now);
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

void ProbeRunner::expireAll(common::Instant now) {
  LedgerOutput out;
  {
    std::shared_lock slots_lock(slots_mutex_);
    for (auto& slot : slots_) {
      std::lock_guard lock(slot->mutex);
      slot->ledger.expire(now, out);
    }
  }
  publish(out);
}

ProbeRunner::Slot* ProbeRunner::slotFor(const char* topic, std::int32_t partition) const {
  for (const auto& t : topic_slots_) {
    if (t.topic != topic) continue;
    if (partition < 0 || static_cast<std::size_t>(partition) >= t.slot_by_partition.size())
      return nullptr;
    const auto index = t.slot_by_partition[static_cast<std::size_t>(partition)];
    return index < 0 ? nullptr : slots_[static_cast<std::size_t>(index)].get();
  }
  return nullptr;
}

void ProbeRunner::publish(LedgerOutput& out) {
  for (auto& gap : out.gaps) {
    spdlog::info("probe {}: {} gap on {}[{}]: {:.3f} s", label_, storage::toString(gap.kind),
                 gap.topic, gap.partition, static_cast<double>(gap.duration_us) / 1e6);
    store_.addGap(std::move(gap));
  }
  for (auto& sample : out.samples) store_.addSample(std::move(sample));
  for (const auto& stretch : out.stretches) {
    storage::Event e;
    e.cluster = cluster_id_;
    e.t_us = stretch.start;
    e.source = common::toString(common::EventSource::kProbe);
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
      detail["error"] = stretch.error == kClientDown
                            ? "client_down"
                            : rd_kafka_err2name(static_cast<rd_kafka_resp_err_t>(stretch.error));
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
    e.source = common::toString(common::EventSource::kProbe);
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
  if (profile_.client == config::ProbeClient::kJava) s.client_restarts = client_restarts_;
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

std::vector<storage::ProbeSample> ProbeRunner::pending(common::WallMicros from,
                                                       common::WallMicros to) const {
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
