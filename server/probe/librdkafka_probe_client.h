#pragma once

// probe.client `librdkafka` (probe_client.h): the probe's messages sent by the runner's
// librdkafka producer on the sender thread, their delivery reports served on the reporter
// thread, and read back by its consumer on the receiver thread.
//
// After a fatal producer error (the idempotent producer's state is lost for good) the reporter
// recreates the producer with a new epoch. A partition whose acked messages the consumer has not
// read for probe.consumer_restart_ms has its fetch restarted: the first time in a row by a seek,
// after that by a new consumer (after a whole-cluster restart a consumer can stay stuck through
// every seek: 2b11736).

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "server/probe/probe_client.h"

namespace kfaild::probe {

class ProbeRunner::LibrdkafkaClient final : public ProbeRunner::Client {
 public:
  explicit LibrdkafkaClient(ProbeRunner& runner) : runner_(runner) {}

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
  void finishOutstanding() override {}

 private:
  // A partition noted in the receiver's once-a-second pass over the ledgers, with the slot's
  // lock held: its acked messages unread for probe.consumer_restart_ms
  // (PartitionLedger::unread), its backoff allowing a restart.
  struct StuckFetch {
    Slot* slot = nullptr;
    std::string topic;
    std::int32_t partition = 0;
    PartitionLedger::Unread unread;
    int in_row = 0;
  };

  static constexpr std::uint64_t kSeqMask = (std::uint64_t{1} << kSeqBits) - 1;
  // A send's opaque pointer (kSeqBits): its slot index and sequence number.
  static void* packOpaque(std::size_t slot, std::int64_t seq);
  static std::pair<std::size_t, std::int64_t> unpackOpaque(void* opaque);

  void serveReports(rd_kafka_event_t* event);
  // Replaces the producer that failed fatally with a new one (reporter thread). `queue` is the
  // reporter's queue of the old producer, replaced by the new one's.
  void recreateProducer(const std::string& error, rd_kafka_queue_t*& queue);
  // A message read (receiver thread): its slot's read position, and its receipt when it is the
  // probe's.
  void received(const rd_kafka_message_t& msg, common::Instant now);
  // The receiver's pass over the ledgers: lost messages given up on, stuck fetches restarted.
  void expireAndRestart(common::Instant now);
  void noteStuckFetch(Slot& slot, common::Instant now, std::vector<StuckFetch>& stuck);
  // The noted partitions' fetches restarted at their oldest unread offset, with an event each.
  void restartFetches(const std::vector<StuckFetch>& restarts, common::Instant now);
  // Replaces the consumer with a new one assigned every probe partition at its Slot::read_from,
  // the stuck ones at their oldest unread offset; the old one is destroyed after. Records a
  // probe/consumer_restarted event per stuck partition and one probe/consumer_recreated event
  // (every partition's reading started over). On failure the old consumer stays; the error is in
  // the events. Returns the error, empty on success.
  std::string recreateConsumer(const std::vector<StuckFetch>& stuck);

  ProbeRunner& runner_;
};

}  // namespace kfaild::probe
