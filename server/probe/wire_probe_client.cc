#include "server/probe/wire_probe_client.h"

#include <chrono>
#include <nlohmann/json.hpp>
#include <string_view>
#include <thread>
#include <utility>

#include "server/common/event_types.h"
#include "server/common/json_text.h"
#include "server/kafka/quorum.h"
#include "server/probe/payload.h"

namespace kfaild::probe {

void ProbeRunner::WireProbeClient::describe(std::map<std::string, std::string>& settings,
                                            std::int64_t& message_timeout_us) {
  // What decides what the wire client measures (wire_client.h), reported with every drill
  // beside the librdkafka settings, which then only apply to set-up.
  settings["probe.client"] = "wire";
  settings["wire.acks"] = "all";
  settings["wire.retries"] = "0";
  settings["wire.request.timeout.ms"] = std::to_string(kRequestTimeoutMs);
  settings["wire.fetch.min.bytes"] = "1";
  settings["wire.fetch.wait.max.ms"] = std::to_string(kFetchWaitMs);
  settings["wire.metadata.retry.ms"] = "100";
  settings["wire.reconnect.backoff.max.ms"] = "1000";
  // A message has its fate within the request timeout (no retries).
  message_timeout_us = std::int64_t{kRequestTimeoutMs} * 1000 + 5'000'000;
}

Status ProbeRunner::WireProbeClient::beginReading(
    const rd_kafka_topic_partition_list_t& assignment) {
  const auto& cluster = runner_.cluster_;
  WireClientOptions options;
  for (auto& server : kafka::bootstrapServers(cluster.bootstrap, nullptr)) {
    options.bootstrap.emplace_back(std::move(server.host), std::move(server.port));
  }
  options.client_id = "kfaild-" + cluster.name;
  // The cluster's client properties, as its librdkafka clients and the quorum's client take
  // them (config validation refused what the wire client cannot honour).
  auto security = kafka::clientSecurity(cluster.client);
  if (!security) return security.error();
  if (security->tls()) {
    auto tls = kafka::TlsContext::create(*security);
    if (!tls) return tls.error();
    options.tls = std::move(*tls);
  }
  options.security = std::move(*security);
  options.request_timeout_ms = kRequestTimeoutMs;
  options.fetch_max_wait_ms = kFetchWaitMs;
  std::vector<WireTarget> targets;
  for (int i = 0; i < assignment.cnt; ++i) {
    const auto& e = assignment.elems[i];
    targets.push_back({e.topic, e.partition, static_cast<std::size_t>(i), e.offset});
  }
  wire_ = std::make_unique<WireClient>(
      std::move(options), runner_.clock_,
      [this](std::span<const WireAck> acks, common::Instant at) { acked(acks, at); },
      [this](std::span<const WireRecord> records, common::Instant at) { read(records, at); });
  wire_->onLeaderChange([this](const std::string& topic, std::int32_t partition, std::int32_t from,
                               std::int32_t to, std::int32_t epoch, common::Instant at) {
    leaderChanged(topic, partition, from, to, epoch, at);
  });
  wire_->start(std::move(targets), std::chrono::milliseconds(kSetUpRequestTimeoutMs));
  return okStatus();
}

void ProbeRunner::WireProbeClient::leaderChanged(const std::string& topic, std::int32_t partition,
                                                 std::int32_t from, std::int32_t to,
                                                 std::int32_t epoch, common::Instant at) {
  storage::Event e;
  e.cluster = runner_.cluster_id_;
  e.t_us = at.wall;
  e.source = common::toString(common::EventSource::kClient);
  e.kind = common::toString(common::EventKind::kClientLeaderUpdate);
  e.broker = to;
  e.topic = topic;
  e.partition = partition;
  e.detail = common::jsonText(nlohmann::json{
      {"client", "producer"}, {"via", "wire"}, {"from", from}, {"to", to}, {"epoch", epoch}});
  runner_.store_.addEvent(std::move(e));
}

void ProbeRunner::WireProbeClient::runSender() {
  releaseSetUpClients();
  // The I/O thread ticks from here on, the first tick at once; this thread only waits for the
  // stop.
  runner_.pacer_ =
      std::make_unique<Pacer>(runner_.cluster_.probe.interval_us, runner_.clock_.monoNow());
  wire_->tickOnIoThread([this](std::vector<WireSend>& sends) { return tickOnIoThread(sends); },
                        runner_.pacer_->deadline());
  while (runner_.sender_.sleepFor(std::chrono::hours(1))) {
  }
}

void ProbeRunner::WireProbeClient::releaseSetUpClients() {
  std::unique_lock producer_lock(runner_.producer_mutex_);
  for (auto* t : runner_.topic_handles_) rd_kafka_topic_destroy(t);
  runner_.topic_handles_.clear();
  {
    std::unique_lock slots_lock(runner_.slots_mutex_);
    for (auto& slot : runner_.slots_) slot->topic = nullptr;
  }
  runner_.consumer_.reset();
  runner_.producer_.reset();
}

common::MonoMicros ProbeRunner::WireProbeClient::tickOnIoThread(std::vector<WireSend>& sends) {
  if (!ticked_) {
    // The I/O thread is the sender now (it starts no threads of its own to inherit this).
    runner_.takeSenderScheduling();
    ticked_ = true;
  }
  // stop() ends the ticks right after the sender; a stop that has begun sends nothing more.
  if (runner_.stopping_) return runner_.pacer_->deadline() + runner_.pacer_->interval();
  sends.reserve(runner_.slots_.size());
  sends_ = &sends;
  tick_refused_ = false;
  runner_.tick();
  sends_ = nullptr;
  if (!tick_refused_ && !refusing_why_.empty()) {
    refusing_why_.clear();
    runner_.setProblem({});
  }
  return runner_.pacer_->deadline();
}

rd_kafka_resp_err_t ProbeRunner::WireProbeClient::send(std::size_t index, Slot&, std::int64_t seq,
                                                       const std::string& body,
                                                       common::Instant now) {
  // A broker refusing the client's credentials or certificate is not asked: the partition's
  // sends are refused (the probe's own stretch) until it accepts a connection again.
  if (const auto* refused = wire_->authenticationFailure(index)) {
    tick_refused_ = true;
    if (refusing_why_ != *refused) {
      refusing_why_ = *refused;
      runner_.setProblem("wire client: " + *refused);
    }
    return RD_KAFKA_RESP_ERR__AUTHENTICATION;
  }
  WireSend send;
  send.slot = index;
  send.seq = seq;
  send.value.assign(body.begin(), body.end());
  send.timestamp_ms = now.wall / 1000;
  sends_->push_back(std::move(send));
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}

bool ProbeRunner::WireProbeClient::addPartitions(std::vector<AddedPartition>& added,
                                                 const std::vector<std::string>&) {
  // The wire client asks for the grown topics' metadata itself (WireClient::add), and reads a
  // partition just added from its beginning (offset 0): it holds nothing the probe sent before.
  const auto first = runner_.appendSlots(added);
  std::vector<WireTarget> targets;
  for (std::size_t k = 0; k < added.size(); ++k) {
    targets.push_back({added[k].topic, added[k].partition, first + k, 0});
  }
  wire_->add(std::move(targets));
  return true;
}

void ProbeRunner::WireProbeClient::runReceiver() {
  // The I/O thread reads; this thread only gives up on lost messages.
  while (runner_.receiver_.sleepFor(std::chrono::microseconds(kExpireEveryUs))) {
    if (runner_.ready_) runner_.expireAll(runner_.clock_.now());
  }
}

void ProbeRunner::WireProbeClient::stopTicking() {
  if (wire_) wire_->stopTicking();
}

bool ProbeRunner::WireProbeClient::outstanding() const {
  std::shared_lock slots_lock(runner_.slots_mutex_);
  for (auto& slot : runner_.slots_) {
    std::lock_guard lock(slot->mutex);
    if (slot->ledger.status().outstanding > 0) return true;
  }
  return false;
}

void ProbeRunner::WireProbeClient::finishOutstanding() {
  if (!wire_) return;
  const auto until = runner_.clock_.monoNow() + 2'000'000;
  for (int i = 0; i < 200 && runner_.clock_.monoNow() < until && outstanding(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  wire_->stop();
}

void ProbeRunner::WireProbeClient::acked(std::span<const WireAck> acks, common::Instant at) {
  LedgerOutput out;
  {
    std::shared_lock slots_lock(runner_.slots_mutex_);
    for (const auto& ack : acks) {
      if (ack.slot >= runner_.slots_.size()) continue;
      auto& slot = *runner_.slots_[ack.slot];
      std::lock_guard lock(slot.mutex);
      slot.ledger.deliveryReport(ack.seq, at, ack.error, ack.offset, out);
    }
  }
  runner_.publish(out);
}

void ProbeRunner::WireProbeClient::read(std::span<const WireRecord> records, common::Instant at) {
  if (!runner_.ready_) return;
  LedgerOutput out;
  {
    std::shared_lock slots_lock(runner_.slots_mutex_);
    for (const auto& record : records) {
      if (record.slot >= runner_.slots_.size()) continue;
      const auto payload = decodePayload(std::string_view(
          reinterpret_cast<const char*>(record.value.data()), record.value.size()));
      if (!payload || payload->run_id != runner_.run_id_) continue;
      auto& slot = *runner_.slots_[record.slot];
      std::lock_guard lock(slot.mutex);
      slot.ledger.received(payload->seq, at, out);
    }
  }
  runner_.publish(out);
}

}  // namespace kfaild::probe
