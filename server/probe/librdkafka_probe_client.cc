#include "server/probe/librdkafka_probe_client.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>

#include "server/common/event_types.h"
#include "server/common/json_text.h"
#include "server/kafka/errc.h"
#include "server/kafka/metadata.h"
#include "server/kafka/rdkafka_ptr.h"
#include "server/probe/payload.h"

namespace kfaild::probe {

void* ProbeRunner::LibrdkafkaClient::packOpaque(std::size_t slot, std::int64_t seq) {
  return reinterpret_cast<void*>((static_cast<std::uint64_t>(slot) << kSeqBits) |
                                 (static_cast<std::uint64_t>(seq) & kSeqMask));
}

std::pair<std::size_t, std::int64_t> ProbeRunner::LibrdkafkaClient::unpackOpaque(void* opaque) {
  const auto bits = reinterpret_cast<std::uint64_t>(opaque);
  return {static_cast<std::size_t>(bits >> kSeqBits), static_cast<std::int64_t>(bits & kSeqMask)};
}

void ProbeRunner::LibrdkafkaClient::describe(std::map<std::string, std::string>&, std::int64_t&) {}

Status ProbeRunner::LibrdkafkaClient::beginReading(
    const rd_kafka_topic_partition_list_t& assignment) {
  if (const auto err = rd_kafka_assign(runner_.consumer_.get(), &assignment);
      err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return kafka::kafkaError(kafka::errc::consume_failed, "assign probe partitions", err);
  }
  return okStatus();
}

void ProbeRunner::LibrdkafkaClient::runSender() {
  // Only now: the clients this thread created in setUp() have their threads, which would
  // inherit the sender's scheduling.
  runner_.takeSenderScheduling();
  runner_.pacer_ =
      std::make_unique<Pacer>(runner_.cluster_.probe.interval_us, runner_.clock_.monoNow());
  while (!runner_.sender_.stopRequested()) {
    const auto wait = runner_.pacer_->deadline() - runner_.clock_.monoNow();
    if (wait > 0 && !runner_.sender_.sleepFor(std::chrono::microseconds(wait))) return;
    runner_.tick();
  }
}

rd_kafka_resp_err_t ProbeRunner::LibrdkafkaClient::send(std::size_t index, Slot& slot,
                                                        std::int64_t seq, const std::string& body,
                                                        common::Instant) {
  return rd_kafka_producev(runner_.producer_.get(), RD_KAFKA_V_RKT(slot.topic),
                           RD_KAFKA_V_PARTITION(slot.ledger.partition()),
                           RD_KAFKA_V_VALUE(const_cast<char*>(body.data()), body.size()),
                           RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                           RD_KAFKA_V_OPAQUE(packOpaque(index, seq)), RD_KAFKA_V_END);
}

bool ProbeRunner::LibrdkafkaClient::addPartitions(std::vector<AddedPartition>& added,
                                                  const std::vector<std::string>& grown) {
  // The producer refuses a send to a partition its own metadata does not list yet (it refreshes
  // every topic.metadata.refresh.interval.ms, 5 min by default): one request for the grown topics
  // updates its cache before the first send to them. Rare, and outside any stall the probe is
  // measuring, so it does not shorten a client-discovery time.
  auto md = kafka::fetchMetadata(runner_.producer_.get(), grown, kSetUpRequestTimeoutMs);
  if (!md) {
    runner_.retryAddingLater("partitions added to the probe topics are not probed yet: " +
                             md.error().describe());
    return false;
  }
  const auto unknown = std::erase_if(added, [&](const AddedPartition& a) {
    const auto* info = md->topic(a.topic);
    const auto listed = [&](const kafka::PartitionInfo& p) { return p.partition == a.partition; };
    return info == nullptr ||
           std::none_of(info->partitions.begin(), info->partitions.end(), listed);
  });
  if (unknown > 0) {
    // Not in this broker's answer yet: taken up on a later poll.
    std::lock_guard lock(runner_.seen_mutex_);
    runner_.seen_partitions_.clear();
  }
  if (added.empty()) return false;
  // A partition that was just added holds nothing the probe sent before now: read from its
  // beginning, so the consumer's position needs no request to the cluster and no probe message
  // sent from the next tick on can be skipped.
  kafka::PartitionListPtr assignment(
      rd_kafka_topic_partition_list_new(static_cast<int>(added.size())));
  // A consumer being recreated (receiver thread) is assigned the slots there are: the partitions
  // are assigned and their slots added on a later tick instead of waiting for it here. The lock
  // is held until the slots are added, so that no recreation misses them.
  std::shared_lock consumer_lock(runner_.consumer_mutex_, std::defer_lock);
  if (!consumer_lock.try_lock()) {
    runner_.seen_changed_ = true;
    return false;
  }
  for (const auto& a : added) {
    rd_kafka_topic_partition_list_add(assignment.get(), a.topic.c_str(), a.partition)->offset =
        RD_KAFKA_OFFSET_BEGINNING;
  }
  if (rd_kafka_error_t* error =
          rd_kafka_incremental_assign(runner_.consumer_.get(), assignment.get())) {
    std::string problem =
        "partitions added to the probe topics are not probed: assigning them failed: ";
    problem += rd_kafka_error_string(error);
    rd_kafka_error_destroy(error);
    runner_.retryAddingLater(std::move(problem));
    return false;
  }
  runner_.appendSlots(added);
  return true;
}

void ProbeRunner::LibrdkafkaClient::serveReports(rd_kafka_event_t* event) {
  const auto now = runner_.clock_.now();
  LedgerOutput out;
  std::shared_lock slots_lock(runner_.slots_mutex_);
  while (const rd_kafka_message_t* msg = rd_kafka_event_message_next(event)) {
    const auto [index, seq] = unpackOpaque(msg->_private);
    if (index >= runner_.slots_.size()) continue;
    auto& slot = *runner_.slots_[index];
    std::lock_guard lock(slot.mutex);
    slot.ledger.deliveryReport(seq, now, msg->err,
                               msg->err == RD_KAFKA_RESP_ERR_NO_ERROR
                                   ? std::optional<std::int64_t>(msg->offset)
                                   : std::nullopt,
                               out);
  }
  slots_lock.unlock();
  runner_.publish(out);
}

void ProbeRunner::LibrdkafkaClient::runReporter() {
  rd_kafka_queue_t* queue = nullptr;
  {
    std::shared_lock lock(runner_.producer_mutex_);
    queue = rd_kafka_queue_get_main(runner_.producer_.get());
  }
  std::uint64_t logged_errors = 0;
  while (!runner_.reporter_.stopRequested()) {
    rd_kafka_event_t* event = rd_kafka_queue_poll(queue, 100);
    if (event == nullptr) continue;
    if (rd_kafka_event_type(event) == RD_KAFKA_EVENT_DR) {
      serveReports(event);
    } else if (rd_kafka_event_type(event) == RD_KAFKA_EVENT_ERROR) {
      const bool fatal = rd_kafka_event_error_is_fatal(event);
      // Transient errors (a broker went away) are the very thing being measured; log a few.
      if (logged_errors++ < 20 || fatal) {
        spdlog::warn("probe {}: producer: {}", runner_.label_, rd_kafka_event_error_string(event));
      }
      if (fatal && !runner_.stopping_) {
        // The idempotent producer cannot go on (its sequence state is lost): every send is
        // refused from here on. Only a new producer, with a new epoch, probes again.
        std::string error;
        {
          std::shared_lock lock(runner_.producer_mutex_);
          char reason[512] = "";
          const auto code = rd_kafka_fatal_error(runner_.producer_.get(), reason, sizeof reason);
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

void ProbeRunner::LibrdkafkaClient::recreateProducer(const std::string& error,
                                                     rd_kafka_queue_t*& queue) {
  const auto failed_at = runner_.clock_.now().wall;
  Result<kafka::Handle> fresh = runner_.createProducer();
  // Creating a client is local: it fails only on settings that start() accepted already, so a
  // failure here is retried rather than leaving the probe without a producer.
  while (!fresh && !runner_.reporter_.stopRequested()) {
    runner_.setProblem("producer failed fatally (" + error +
                       ") and cannot be recreated: " + fresh.error().describe());
    if (!runner_.reporter_.sleepFor(std::chrono::seconds(1))) return;
    fresh = runner_.createProducer();
  }
  if (!fresh) return;
  kafka::Handle old;
  std::vector<rd_kafka_topic_t*> old_topics;
  {
    std::shared_lock lock(runner_.producer_mutex_);
    // What the old producer still holds fails now, each with its report, so those messages get
    // their fate at once instead of at the ledger's unacked timeout.
    rd_kafka_purge(runner_.producer_.get(), RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT |
                                                RD_KAFKA_PURGE_F_NON_BLOCKING);
  }
  const auto drain_until = runner_.clock_.monoNow() + 2'000'000;
  for (;;) {
    rd_kafka_event_t* event = rd_kafka_queue_poll(queue, 100);
    if (event != nullptr) {
      if (rd_kafka_event_type(event) == RD_KAFKA_EVENT_DR) serveReports(event);
      rd_kafka_event_destroy(event);
      continue;
    }
    std::shared_lock lock(runner_.producer_mutex_);
    if (rd_kafka_outq_len(runner_.producer_.get()) == 0 || runner_.clock_.monoNow() >= drain_until)
      break;
  }
  rd_kafka_queue_destroy(queue);
  {
    std::unique_lock lock(runner_.producer_mutex_);
    // What is still without a report belongs to the old producer (the sender waits for this
    // lock), whose reports will never come now.
    LedgerOutput out;
    const auto now = runner_.clock_.now();
    for (auto& slot : runner_.slots_) {
      std::lock_guard slot_lock(slot->mutex);
      slot->ledger.failOutstanding(now, RD_KAFKA_RESP_ERR__FATAL, out);
    }
    runner_.publish(out);
    std::vector<rd_kafka_topic_t*> topics;
    for (auto* t : runner_.topic_handles_) {
      topics.push_back(rd_kafka_topic_new(fresh->get(), rd_kafka_topic_name(t), nullptr));
    }
    for (auto& slot : runner_.slots_) {
      const auto at =
          std::find(runner_.topic_handles_.begin(), runner_.topic_handles_.end(), slot->topic);
      if (at != runner_.topic_handles_.end()) {
        slot->topic = topics[static_cast<std::size_t>(at - runner_.topic_handles_.begin())];
      }
    }
    old_topics = std::exchange(runner_.topic_handles_, std::move(topics));
    old = std::exchange(runner_.producer_, std::move(*fresh));
    queue = rd_kafka_queue_get_main(runner_.producer_.get());
  }
  for (auto* t : old_topics) rd_kafka_topic_destroy(t);
  old.reset();
  const auto recreations = ++runner_.producer_recreations_;
  spdlog::warn("probe {}: producer recreated after a fatal error ({}), {} time(s) so far",
               runner_.label_, error, recreations);
  storage::Event e;
  e.cluster = runner_.cluster_id_;
  e.t_us = runner_.clock_.now().wall;
  e.source = common::toString(common::EventSource::kProbe);
  e.kind = common::toString(common::EventKind::kProducerRecreated);
  e.detail = common::jsonText(
      nlohmann::json{{"error", error}, {"failed_at_us", failed_at}, {"recreations", recreations}});
  runner_.store_.addEvent(std::move(e));
}

void ProbeRunner::LibrdkafkaClient::runReceiver() {
  auto next_expire = runner_.clock_.monoNow() + kExpireEveryUs;
  while (!runner_.receiver_.stopRequested()) {
    rd_kafka_message_t* msg = rd_kafka_consumer_poll(runner_.consumer_.get(), 100);
    const auto now = runner_.clock_.now();
    if (msg != nullptr) {
      if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR && runner_.ready_) {
        received(*msg, now);
      } else if (msg->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        spdlog::debug("probe {}: consumer: {}", runner_.label_, rd_kafka_message_errstr(msg));
      }
      rd_kafka_message_destroy(msg);
    }
    if (runner_.ready_ && now.mono >= next_expire) {
      next_expire = now.mono + kExpireEveryUs;
      expireAndRestart(now);
    }
  }
}

void ProbeRunner::LibrdkafkaClient::received(const rd_kafka_message_t& msg, common::Instant now) {
  const auto payload =
      decodePayload(std::string_view(static_cast<const char*>(msg.payload), msg.len));
  LedgerOutput out;
  {
    std::shared_lock slots_lock(runner_.slots_mutex_);
    if (Slot* slot = runner_.slotFor(rd_kafka_topic_name(msg.rkt), msg.partition)) {
      slot->read_from = msg.offset + 1;
      if (payload && payload->run_id == runner_.run_id_) {
        std::lock_guard lock(slot->mutex);
        slot->ledger.received(payload->seq, now, out);
      }
    }
  }
  runner_.publish(out);
}

void ProbeRunner::LibrdkafkaClient::expireAndRestart(common::Instant now) {
  LedgerOutput out;
  std::vector<StuckFetch> stuck;
  {
    std::shared_lock slots_lock(runner_.slots_mutex_);
    for (auto& slot : runner_.slots_) {
      std::lock_guard lock(slot->mutex);
      noteStuckFetch(*slot, now, stuck);
      slot->ledger.expire(now, out);
    }
  }
  runner_.publish(out);
  restartFetches(stuck, now);
}

void ProbeRunner::LibrdkafkaClient::noteStuckFetch(Slot& slot, common::Instant now,
                                                   std::vector<StuckFetch>& stuck) {
  const auto after_us = runner_.cluster_.probe.consumer_restart_us;
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
  slot.next_restart_mono = now.mono + std::min(wait_us, runner_.cluster_.probe.loss_timeout_us);
  stuck.push_back({&slot, slot.ledger.topic(), slot.ledger.partition(), *unread, in_row});
}

void ProbeRunner::LibrdkafkaClient::restartFetches(const std::vector<StuckFetch>& restarts,
                                                   common::Instant now) {
  if (restarts.empty()) return;
  const auto after_us = runner_.cluster_.probe.consumer_restart_us;
  const bool recreate = std::any_of(restarts.begin(), restarts.end(),
                                    [](const StuckFetch& r) { return r.in_row > 1; });
  std::string error;
  if (recreate) {
    error = recreateConsumer(restarts);
  } else {
    // A seek puts the partition's fetch at the offset with a new version: whatever state it was
    // waiting in (an offset or leader-epoch validation, a fetch answer that never came) is left.
    kafka::PartitionListPtr positions(
        rd_kafka_topic_partition_list_new(static_cast<int>(restarts.size())));
    for (const auto& r : restarts) {
      rd_kafka_topic_partition_list_add(positions.get(), r.topic.c_str(), r.partition)->offset =
          r.unread.offset;
    }
    if (rd_kafka_error_t* failed =
            rd_kafka_seek_partitions(runner_.consumer_.get(), positions.get(), 0)) {
      error = rd_kafka_error_string(failed);
      rd_kafka_error_destroy(failed);
    } else {
      for (const auto& r : restarts) r.slot->read_from = r.unread.offset;
    }
  }
  const char* how = recreate ? "recreated" : "seek";
  for (const auto& r : restarts) {
    spdlog::warn(
        "probe {}: {}[{}]: the consumer has read nothing for {} s or more though the cluster acked "
        "offset {} "
        "{} s ago; {} there{} (restart {} in a row)",
        runner_.label_, r.topic, r.partition, after_us / 1'000'000, r.unread.offset,
        r.unread.acked_ago_us / 1'000'000,
        recreate ? "a new consumer reads from" : "its fetch restarted",
        error.empty() ? "" : " failed: " + error, r.in_row);
    storage::Event e;
    e.cluster = runner_.cluster_id_;
    e.t_us = now.wall;
    e.source = common::toString(common::EventSource::kProbe);
    e.kind = common::toString(common::EventKind::kConsumerRestarted);
    e.topic = r.topic;
    e.partition = r.partition;
    e.detail = common::jsonText(nlohmann::json{{"offset", r.unread.offset},
                                               {"acked_ago_us", r.unread.acked_ago_us},
                                               {"restart_after_us", after_us},
                                               {"in_row", r.in_row},
                                               {"how", how},
                                               {"error", error}});
    runner_.store_.addEvent(std::move(e));
  }
}

std::string ProbeRunner::LibrdkafkaClient::recreateConsumer(const std::vector<StuckFetch>& stuck) {
  const auto began = runner_.clock_.now();
  std::string error;
  std::size_t assigned = 0;
  kafka::Handle old;
  auto fresh =
      kafka::createClient(RD_KAFKA_CONSUMER, runner_.client_options_, runner_.consumer_settings_);
  if (!fresh) {
    error = "creating a consumer: " + fresh.error().describe();
  } else {
    rd_kafka_poll_set_consumer(fresh->get());
    std::unique_lock consumer_lock(runner_.consumer_mutex_);
    std::shared_lock slots_lock(runner_.slots_mutex_);
    kafka::PartitionListPtr assignment(
        rd_kafka_topic_partition_list_new(static_cast<int>(runner_.slots_.size())));
    for (const auto& slot : runner_.slots_) {
      auto offset = slot->read_from;
      for (const auto& r : stuck) {
        if (r.slot == slot.get()) offset = r.unread.offset;
      }
      rd_kafka_topic_partition_list_add(assignment.get(), slot->ledger.topic().c_str(),
                                        slot->ledger.partition())
          ->offset = offset;
    }
    if (const auto err = rd_kafka_assign(fresh->get(), assignment.get());
        err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      error = std::string("assigning the new consumer: ") + rd_kafka_err2str(err);
    } else {
      for (const auto& r : stuck) r.slot->read_from = r.unread.offset;
      assigned = runner_.slots_.size();
      old = std::exchange(runner_.consumer_, std::move(*fresh));
    }
  }
  // The old consumer (if replaced) or the refused new one is destroyed outside the lock, the old
  // one without closing it (it never joined its group, and whatever it is stuck in need not be
  // waited for); its broker threads end with it.
  if (fresh) fresh->reset();
  if (old) old.get_deleter().flags = RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE;
  old.reset();
  const auto took_us = runner_.clock_.monoNow() - began.mono;
  const std::uint64_t recreations =
      error.empty() ? ++runner_.consumer_recreations_ : runner_.consumer_recreations_.load();
  if (error.empty()) {
    spdlog::warn(
        "probe {}: consumer recreated ({} so far): {} partition(s) assigned, {} of them stuck, in "
        "{} ms",
        runner_.label_, recreations, assigned, stuck.size(), took_us / 1000);
  } else {
    spdlog::error("probe {}: the consumer could not be recreated, the old one goes on: {}",
                  runner_.label_, error);
  }
  storage::Event e;
  e.cluster = runner_.cluster_id_;
  e.t_us = began.wall;
  e.source = common::toString(common::EventSource::kProbe);
  e.kind = common::toString(common::EventKind::kConsumerRecreated);
  int in_row = 0;
  for (const auto& r : stuck) in_row = std::max(in_row, r.in_row);
  e.detail = common::jsonText(nlohmann::json{{"partitions", assigned},
                                             {"stuck", stuck.size()},
                                             {"in_row", in_row},
                                             {"took_us", took_us},
                                             {"recreations", recreations},
                                             {"error", error}});
  runner_.store_.addEvent(std::move(e));
  return error;
}

}  // namespace kfaild::probe
