#pragma once

// Probes one cluster without pause: one producer (acks=all) sends a sequenced message to every
// probe partition every interval; one consumer in the same process, assigned to those partitions
// (no group rebalancing), reads them back. Finished samples and gaps go to the store.
//
// Threads (each a common::Worker owned here, stopped and joined by stop() or the destructor):
//   sender    — resolves the topics (creating them when configured), assigns the consumer, then
//               paces the sends; retries set-up every few seconds while the cluster is away
//   reporter  — serves the producer's delivery reports; after a fatal producer error (the
//               idempotent producer's state is lost for good) it recreates the producer with a
//               new epoch, recording a probe/producer_recreated event with the error
//   receiver  — reads the consumer and gives up on lost messages
// stop() stops the sender first (its waits between ticks and between set-up attempts wake at once;
// a set-up under way finishes first, each of its requests giving up after 5 s), then the
// receiver, then lets what is outstanding be acked for up to 2 s while the reporter serves the
// reports, then the reporter. The reporter and the receiver wait in librdkafka polls of 100 ms,
// so each stops within 100 ms of being asked.
// What the threads do is the probe client's part (probe.client; probe_client.h): librdkafka's
// producer and consumer, or kfaild's wire client, whose own I/O thread then sends and reads.
// status() may be called from any thread.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "server/common/clock.h"
#include "server/common/pi_mutex.h"
#include "server/common/result.h"
#include "server/common/worker.h"
#include "server/config/config.h"
#include "server/kafka/client.h"
#include "server/kafka/cluster_types.h"
#include "server/probe/pacer.h"
#include "server/probe/partition_ledger.h"
#include "server/probe/probe_status.h"
#include "storage/store.h"

namespace kfaild::probe {

class ControlProbe;
class CoordinatorProbe;

class ProbeRunner {
 public:
  // `client_log` receives every librdkafka log line of the producer and consumer (for the
  // client-log observer); it must outlive the runner. `profile` (probe.profiles): the client and
  // its settings, over the cluster's `client` map; without it, the cluster's primary profile.
  // `stream`: where the samples, gaps and probe events go (the cluster's id for the primary, the
  // profile's own stream for another: storage::Store::ensureProfileStream).
  ProbeRunner(const config::ClusterConfig& cluster, storage::ClusterId stream,
              storage::Store& store, const common::Clock& clock, kafka::LogSink client_log,
              std::optional<config::ProbeProfile> profile = std::nullopt);
  ~ProbeRunner();
  ProbeRunner(const ProbeRunner&) = delete;
  ProbeRunner& operator=(const ProbeRunner&) = delete;

  // Creates the clients (a refused client property is an error here) and starts the threads.
  [[nodiscard]] Status start();
  // Raises the sender's stop flag and returns at once (see ClusterParts::stop): a set-up blocked
  // in a request gives up at its end instead of starting another. stop() still joins, flushes
  // and stops the other loops.
  void requestStop();
  void stop();

  // Raises a fatal error on the probe's producer, as librdkafka would after an idempotence
  // failure (rd_kafka_test_fatal_error): for tests of the recovery from one, on a mock cluster
  // or the lab. Does nothing before start().
  void raiseFatalErrorForTest(const std::string& reason);

  // The partition count of each topic as the metadata poller last saw it (any thread; see
  // observe::MetadataPoller::setPartitionCountListener). Partitions added to a probe topic are
  // probed from the sender's next tick on, each recorded as a probe/partition_added event; they
  // are read back from their beginning, so no probe message sent to them is missed.
  void partitionsSeen(const std::map<std::string, std::int32_t>& counts);

  // The cluster's control-plane probe, whose status status() includes. Before start(); it must
  // outlive the runner.
  void attachControl(const ControlProbe* control) { control_ = control; }
  // Passes a drill's targets on to the control probe (ControlProbe::steerAround); nothing
  // without one.
  void steerAround(std::vector<std::int32_t> nodes) const;
  // The same for the coordinator probes.
  void attachCoordinators(const CoordinatorProbe* coordinators) { coordinators_ = coordinators; }

  ProbeStatus status() const;
  const config::ProbeProfile& profile() const { return profile_; }
  // The primary profile probes with the cluster's own client id; the others add their name.
  bool primary() const { return primary_; }
  // Messages sent in [from, to] (wall) whose fate is still open (see PartitionLedger::pending).
  std::vector<storage::ProbeSample> pending(common::WallMicros from, common::WallMicros to) const;

 private:
  struct Slot {
    // The sender (SCHED_FIFO) takes it every tick, the reporter, the consumer and status() too:
    // with priority inheritance an ordinary holder preempted on a busy host does not hold the
    // sender back.
    mutable common::PiMutex mutex;
    PartitionLedger ledger;  // guarded by mutex
    rd_kafka_topic_t* topic = nullptr;
    bool refusing = false;  // sender thread only: the ledger has a refused stretch open
    // The librdkafka client's receiver thread only: the consumer's fetch of this partition
    // restarts no earlier than this (monotonic µs), and how many restarts in a row found nothing
    // read since the last.
    std::int64_t next_restart_mono = 0;
    int restarts_in_row = 0;
    // The librdkafka client's: where the consumer reads this partition from next: the offset it was
    // assigned or sought to, then the offset after the last message it read (any message, the
    // probe's or not). Set before the slot is published, then by the receiver thread only; a
    // recreated consumer is assigned here, so that it reads nothing twice.
    std::int64_t read_from = RD_KAFKA_OFFSET_END;
    Slot(storage::ClusterId cluster, std::string topic_name, std::int32_t partition,
         LedgerOptions options)
        : ledger(cluster, std::move(topic_name), partition, options) {}
  };

  // The probe client's part (probe.client, probe_client.h): its sends, reads and their reports.
  // The runner keeps what every client shares: set-up, slots and ledgers, ticks, events.
  class Client;
  class LibrdkafkaClient;
  class WireProbeClient;
  class JavaProbeClient;
  std::unique_ptr<Client> makeClient();

  // Sets up (retrying while the cluster is away), then runs the client's sender.
  void senderLoop();

  // Set-up (the sender thread, holding producer_mutex_ shared), through the librdkafka clients
  // whichever client probes: each probe topic described (created when configured and missing),
  // its partitions' slots made at their current end offsets, then the client started on them
  // and the slots published.
  [[nodiscard]] Status setUp();
  LedgerOptions ledgerOptions() const;
  // The metadata of probe topic `t`, created first when it is missing and configured so.
  [[nodiscard]] Result<kafka::ClusterSnapshot> describeTopic(std::size_t t);
  [[nodiscard]] Status checkConsumerKnows(const std::string& topic, std::size_t partitions);
  // Appends a slot per partition of `info` to `slots`, and the partition at its end offset to
  // `assignment`.
  [[nodiscard]] Status addTopicSlots(const kafka::TopicInfo& info, rd_kafka_topic_t* handle,
                                     rd_kafka_topic_partition_list_t& assignment,
                                     std::vector<std::unique_ptr<Slot>>& slots) const;
  void publishSlots(std::vector<std::unique_ptr<Slot>> slots,
                    std::vector<rd_kafka_topic_t*> handles);

  // The ticking thread (the sender, or the wire client's I/O thread): one tick, partitions
  // added since the last one first. sendTick() hands each slot that is not held back its next
  // message through the client.
  void tick();
  void sendTick();
  // The ticking thread, holding producer_mutex_ shared: slots for the partitions
  // partitionsSeen() reported beyond those probed.
  void addSeenPartitions();
  struct AddedPartition {
    std::string topic;
    std::int32_t partition = 0;
    rd_kafka_topic_t* handle = nullptr;
  };
  // Slots for `added`, the client having taken them on; the index of the first.
  std::size_t appendSlots(const std::vector<AddedPartition>& added);
  // The partitions added could not be taken on: `problem` in the status until they are, tried
  // again on the next metadata poll that reports them.
  void retryAddingLater(std::string problem);
  // Gives up on lost messages (PartitionLedger::expire) in every slot.
  void expireAll(common::Instant now);
  void publish(LedgerOutput& out);
  [[nodiscard]] Result<kafka::Handle> createProducer() const;
  // The sender's scheduling (probe.sender_priority) for the calling thread, reported in status.
  void takeSenderScheduling();
  void setProblem(std::string problem);

  config::ClusterConfig cluster_;
  config::ProbeProfile profile_;
  bool primary_ = true;
  std::string label_;  // for the log: the cluster's name, "/profile" after it but for the primary
  const ControlProbe* control_ = nullptr;
  const CoordinatorProbe* coordinators_ = nullptr;
  storage::ClusterId cluster_id_;
  storage::Store& store_;
  const common::Clock& clock_;
  kafka::LogSink client_log_;
  std::uint64_t run_id_;

  // The producer, its topic handles and every Slot::topic are replaced only by a recreation
  // (reporter thread, holding producer_mutex_ exclusively); the sender holds it shared while it
  // sets up or ticks, and stop() while it flushes.
  mutable std::shared_mutex producer_mutex_;
  kafka::Handle producer_;
  // Replaced after set-up only by the receiver thread (recreateConsumer), holding
  // consumer_mutex_ exclusively; every other thread that uses it after set-up holds it shared
  // (the ticking thread without waiting: it assigns added partitions on a later tick instead).
  kafka::Handle consumer_;
  mutable std::shared_mutex consumer_mutex_;
  std::atomic<std::uint64_t> consumer_recreations_{0};
  // Made by start(); stop() stops it last.
  std::unique_ptr<Client> client_;
  std::vector<rd_kafka_topic_t*> topic_handles_;
  kafka::ClientOptions client_options_;                   // written by start() only
  std::map<std::string, std::string> producer_settings_;  // written by start() only
  std::map<std::string, std::string> consumer_settings_;  // written by start() only
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> producer_recreations_{0};
  std::atomic<std::uint64_t> client_restarts_{0};  // the java client's child started again

  // Slots are created by the sender during set-up (ready_ publishes them) and appended by the
  // ticking thread when a probe topic grows ("the sender" below: with the wire client its I/O
  // thread, from its first tick on). slots_mutex_ guards slots_ and topic_slots_: the sender
  // holds it exclusively while it appends, every other thread shared while it reads them (the
  // sender, the only writer, reads them without it). A Slot never moves once created.
  mutable std::shared_mutex slots_mutex_;
  std::vector<std::unique_ptr<Slot>> slots_;
  // The receiver's way from a consumed message to its slot without comparing it with every slot
  // (at 1,000 partitions that scan was 500 string comparisons per message): per probe topic, the
  // slot index by partition id (-1: not probed). Written with slots_, under slots_mutex_.
  struct TopicSlots {
    std::string topic;
    std::vector<std::int32_t> slot_by_partition;
  };
  std::vector<TopicSlots> topic_slots_;
  Slot* slotFor(const char* topic, std::int32_t partition) const;
  std::atomic<bool> ready_{false};
  // The sender thread's only; with the wire client handed to its I/O thread after set-up.
  std::unique_ptr<Pacer> pacer_;
  LedgerOptions ledger_options_;  // written by the sender's set-up, then read by it only
  bool adding_failed_ = false;    // sender only: the last partitions added could not be assigned

  std::mutex seen_mutex_;
  std::map<std::string, std::int32_t> seen_partitions_;  // guarded by seen_mutex_
  std::atomic<bool> seen_changed_{false};

  mutable std::mutex status_mutex_;
  ProbePhase phase_ = ProbePhase::kStarting;  // guarded by status_mutex_
  std::string problem_;                       // guarded by status_mutex_
  std::string sender_scheduling_;             // guarded by status_mutex_
  std::atomic<std::uint64_t> ticks_{0};
  std::atomic<std::uint64_t> skipped_{0};
  std::atomic<std::int64_t> max_lateness_{0};
  std::atomic<std::uint64_t> held_ticks_{0};
  std::map<std::string, std::string> client_settings_;  // written by start() only
  std::int64_t message_timeout_us_ = 300'000'000;       // written by start() only

  // Last, so they stop before anything they use goes; stop() stops them in its own order (the
  // sender first, the reporter last), which the reverse of this order matches.
  common::Worker reporter_;
  common::Worker receiver_;
  common::Worker sender_;
};

}  // namespace kfaild::probe
