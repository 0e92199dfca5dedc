#pragma once

// probe.client `wire` (probe_client.h): the probe's messages sent and read back by kfaild's own
// protocol client (wire_client.h). The runner's librdkafka clients set up and are then let go
// (their threads would only wake for nothing); the wire client's I/O thread ticks from there on
// (WireClient::tickOnIoThread), taking the sender's scheduling, and serves the acks and records.
// The receiver thread only gives up on lost messages.

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "server/probe/probe_client.h"
#include "server/probe/wire_client.h"

namespace kfaild::probe {

class ProbeRunner::WireProbeClient final : public ProbeRunner::Client {
 public:
  explicit WireProbeClient(ProbeRunner& runner) : runner_(runner) {}

  void describe(std::map<std::string, std::string>& settings,
                std::int64_t& message_timeout_us) override;
  [[nodiscard]] Status beginReading(const rd_kafka_topic_partition_list_t& assignment) override;
  void runSender() override;
  rd_kafka_resp_err_t send(std::size_t index, Slot& slot, std::int64_t seq, const std::string& body,
                           common::Instant now) override;
  [[nodiscard]] bool addPartitions(std::vector<AddedPartition>& added,
                                   const std::vector<std::string>& grown) override;
  void runReporter() override {}
  void runReceiver() override;
  void stopTicking() override;
  void finishOutstanding() override;

 private:
  // What the wire client asks of the brokers, reported with every drill (describe()).
  static constexpr std::int32_t kRequestTimeoutMs = 30'000;
  static constexpr std::int32_t kFetchWaitMs = 500;

  // The sender thread after set-up: the librdkafka clients, and the slots' topic handles of
  // their producer, destroyed.
  void releaseSetUpClients();
  // A tick on the I/O thread (WireClient::Ticker): its sends, and the next one's time.
  common::MonoMicros tickOnIoThread(std::vector<WireSend>& sends);
  void acked(std::span<const WireAck> acks, common::Instant at);
  void read(std::span<const WireRecord> records, common::Instant at);
  // The client's discovery of a new leader, recorded as the client-log observer records
  // librdkafka's (source client, kind client_leader_update): the analysis's discovery phase ends
  // at it.
  void leaderChanged(const std::string& topic, std::int32_t partition, std::int32_t from,
                     std::int32_t to, std::int32_t epoch, common::Instant at);
  bool outstanding() const;

  ProbeRunner& runner_;
  // Made by beginReading() (sender thread); stopped by finishOutstanding().
  std::unique_ptr<WireClient> wire_;
  bool ticked_ = false;                     // the I/O thread only: it took the sender's scheduling
  std::vector<WireSend>* sends_ = nullptr;  // the I/O thread only: the tick's sends, during tick()
  // The I/O thread only: the refusal last reported as the probe's problem (send()), empty when
  // none.
  std::string refusing_why_;
  bool tick_refused_ = false;  // the I/O thread only: a send of this tick was refused
};

}  // namespace kfaild::probe
