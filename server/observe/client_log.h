#pragma once

// The client library's own view of leadership. librdkafka 2.14.2, with the `topic` debug context
// on, logs under facility BROKER each time it applies partition metadata:
//   "[thrd:main]: orders [0]: leader 1 epoch 0 -> leader 2 epoch 1"
// (older releases and confluent-kafka builds said "applying leader-id update 1 -> 2 (epoch 1)";
// both forms are recognised). A line whose leader differs is the moment the producer or
// consumer switched that partition to its new leader.

#include <atomic>
#include <cstdint>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>

#include "server/common/clock.h"
#include "server/kafka/client.h"
#include "storage/store.h"

namespace kfaild::observe {

struct ClientLeaderUpdate {
  std::string topic;
  std::int32_t partition = 0;
  std::int32_t from_leader = -1;
  std::int32_t to_leader = -1;
  std::int32_t from_epoch = -1;  // -1 when the line does not say
  std::int32_t to_epoch = -1;
};

// Recognises a leader update line; nullopt for any other line or when the leader is unchanged.
std::optional<ClientLeaderUpdate> parseLeaderUpdate(std::string_view facility,
                                                    std::string_view message);

// librdkafka can forget a partition's leader between two metadata answers: once the leader's
// broker is down it re-queries, and the next line may say "leader -1 epoch -1 -> leader 2 epoch
// 1" though it had named broker 1 (seen on the lab in both the producer and the consumer, each at
// its own moment). This remembers, per client and partition, the last leader each named, and
// gives an update whose `from` is -1 that leader instead (`from_epoch` too), unless it is the new
// leader itself. Thread-safe.
class ClientLeaderMemory {
 public:
  // `update` with its forgotten `from` restored; sets *restored when it was.
  ClientLeaderUpdate apply(std::string_view client, ClientLeaderUpdate update,
                           bool* restored = nullptr);

 private:
  struct Known {
    std::int32_t leader = -1;
    std::int32_t epoch = -1;
  };
  std::mutex mutex_;
  std::map<std::tuple<std::string, std::string, std::int32_t>, Known> last_;  // guarded by mutex_
};

// A request to a broker that timed out on the client's own clock (request.timeout.ms, or
// socket.timeout.ms for a request still queued): librdkafka logs it under facility REQTMOUT at
// NOTICE, whatever the debug contexts, for the first timeouts of each connection:
//   "[thrd:10.77.0.11:9092/1]: 10.77.0.11:9092/1: Timed out ProduceRequest in flight (after
//    30004ms, timeout #0)"
struct ClientRequestTimeout {
  std::int32_t broker = -1;    // the broker's node id (from the handle's name "host:port/ID")
  std::string request;         // "Produce", "Fetch", "Metadata", ...
  std::int64_t after_ms = -1;  // how long it was in flight, -1 when the line does not say
};

// Recognises a request-timeout line of a broker with a node id; nullopt for any other line
// (bootstrap handles, the per-scan summary "Timed out 1+0+0 requests").
std::optional<ClientRequestTimeout> parseRequestTimeout(std::string_view facility,
                                                        std::string_view message);

// "kfaild-lab#producer-1" → "producer"; "consumer"; else the name itself.
std::string clientRole(std::string_view client_name);

// Receives every log line of the probe's clients (thread-safe: librdkafka calls it from its own
// threads). Records request timeouts as `client_request_timeout` events (broker: the node id;
// detail {"client","request","after_ms"}) and leader updates of the watched topics as
// `client_leader_update` events,
// passes warnings and errors to kfaild's log, and appends every line with its wall time to
// `log_file` when one is given (the article's client debug log).
class ClientLogWatcher {
 public:
  ClientLogWatcher(storage::ClusterId cluster, std::set<std::string> topics, storage::Store& store,
                   const common::Clock& clock, std::string log_file = {});

  void onLine(std::string_view client, int level, std::string_view facility,
              std::string_view message);
  kafka::LogSink sink();

  std::uint64_t leaderUpdates() const { return updates_; }

 private:
  storage::ClusterId cluster_;
  std::set<std::string> topics_;
  storage::Store& store_;
  const common::Clock& clock_;
  std::mutex file_mutex_;
  std::ofstream file_;  // guarded by file_mutex_
  ClientLeaderMemory leaders_;
  std::atomic<std::uint64_t> updates_{0};
};

}  // namespace kfaild::observe
