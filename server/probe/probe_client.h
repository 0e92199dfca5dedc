#pragma once

// The probe client (probe.client) behind ProbeRunner: how the probe's messages are sent, read
// back and reported. ProbeRunner keeps what every client shares (set-up through librdkafka, the
// slots and their ledgers, the pacing of ticks, held ticks, gaps and events) and calls the
// client at these points only. One implementation per client:
//
//   LibrdkafkaClient (librdkafka_probe_client.h)  librdkafka's producer and consumer, the ones
//       set-up used: sends on the sender thread, delivery reports on the reporter thread
//       (recreating the producer after a fatal error), reads on the receiver thread (restarting
//       a stuck fetch, recreating the consumer).
//   WireProbeClient (wire_probe_client.h)  kfaild's own protocol client (wire_client.h): the
//       librdkafka clients are let go after set-up; ticks, sends, acks and reads run on its I/O
//       thread; the receiver thread only gives up on lost messages.
//   JavaProbeClient (java_probe_client.h)  the Java client (kafka-clients) in a child process
//       kfaild supervises: the librdkafka clients are let go after set-up; sends go to the
//       child's stdin on the sender thread, its reports are read on the reporter thread.
//
// Nested in ProbeRunner: an implementation works on the runner's slots and its librdkafka
// clients under the runner's locks (probe_runner.h says which thread holds which).

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "server/common/result.h"
#include "server/probe/probe_runner.h"

namespace kfaild::probe {

class ProbeRunner::Client {
 public:
  // A librdkafka delivery report carries back which slot and sequence it belongs to in its
  // opaque pointer: 20 bits of slot index (a million partitions), 44 bits of sequence (centuries
  // at 1 ms). The bound on the slots holds for every client.
  static constexpr int kSeqBits = 44;
  static constexpr std::size_t kMaxSlots = std::size_t{1} << (64 - kSeqBits);
  // Each set-up request (metadata, topic creation, end offsets) gives up after this long.
  static constexpr int kSetUpRequestTimeoutMs = 5000;
  // How often the receiver thread gives up on lost messages.
  static constexpr std::int64_t kExpireEveryUs = 1'000'000;

  virtual ~Client() = default;

  // start(), before describe(): what the client needs before it may probe (its runtime, its
  // settings checked); an error is a configuration error naming the key.
  [[nodiscard]] virtual Status prepare() { return okStatus(); }

  // start(), after the librdkafka settings: what decides what this client measures, reported
  // with every drill, and the time within which a message has its fate.
  virtual void describe(std::map<std::string, std::string>& settings,
                        std::int64_t& message_timeout_us) = 0;
  // setUp() (sender thread), the slots made but not yet published: start reading each partition
  // of `assignment` at its offset; `assignment`'s n-th element is slot n.
  [[nodiscard]] virtual Status beginReading(const rd_kafka_topic_partition_list_t& assignment) = 0;
  // The sender thread after set-up: tick (ProbeRunner::tick) until the sender is stopped.
  virtual void runSender() = 0;
  // The ticking thread, in ProbeRunner::sendTick: hands the message `seq` of slot `index` to the
  // client; the client's refusal, RD_KAFKA_RESP_ERR_NO_ERROR when it took it.
  virtual rd_kafka_resp_err_t send(std::size_t index, Slot& slot, std::int64_t seq,
                                   const std::string& body, common::Instant now) = 0;
  // The ticking thread, holding producer_mutex_ shared: takes on the partitions added to the
  // probe topics (`grown`: their topics), calling ProbeRunner::appendSlots for those it can
  // probe now; false when none (ProbeRunner::retryAddingLater says why, where it matters).
  [[nodiscard]] virtual bool addPartitions(std::vector<AddedPartition>& added,
                                           const std::vector<std::string>& grown) = 0;
  // The reporter and receiver threads' loops, until their worker is stopped.
  virtual void runReporter() = 0;
  virtual void runReceiver() = 0;
  // stop(), after the sender stopped: no tick from here on.
  virtual void stopTicking() = 0;
  // stop(), after the receiver stopped: what is outstanding gets its answer for up to 2 s (the
  // librdkafka producer's flush, which the runner does for both, gives the same).
  virtual void finishOutstanding() = 0;
};

}  // namespace kfaild::probe
