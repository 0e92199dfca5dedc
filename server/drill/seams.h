#pragma once

// What the drill engine depends on, each a small interface with one real implementation
// (live_seams.h: the metadata poller, the probe runner, librdkafka's admin API) and fakes in the
// unit tests (tests/drill/fake_cluster.h). The other seams are existing interfaces: the fault
// injectors (fault::Injector), the stores (storage::Store, storage::DrillStore) and the clock,
// which also does the waiting (common::Clock).

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "server/common/clock.h"
#include "server/common/result.h"
#include "server/config/config.h"
#include "server/drill/drill_listener.h"
#include "server/fault/injector.h"
#include "server/kafka/admin.h"
#include "server/kafka/cluster_types.h"
#include "server/kafka/metadata.h"
#include "server/observe/metadata_poller.h"
#include "server/probe/probe_runner.h"
#include "storage/drill_store.h"
#include "storage/records.h"
#include "storage/store.h"

namespace kfaild::drill {

// The cluster as kfaild last observed it (the probe topics' metadata, polled continuously).
// Thread-safe, never blocks on I/O.
class ClusterView {
 public:
  virtual ~ClusterView() = default;
  virtual observe::ObservedCluster latest() const = 0;
};

// The probe's health and its open messages. Thread-safe, never blocks on I/O.
class ProbeView {
 public:
  virtual ~ProbeView() = default;
  virtual probe::ProbeStatus status() const = 0;
  // Messages sent in [from, to] (wall) whose fate is still open.
  virtual std::vector<storage::ProbeSample> pending(common::WallMicros from,
                                                    common::WallMicros to) const = 0;
  // The nodes a drill is about to take down, or has down, until they are back (empty: none): the
  // probe routes no control-plane check through them (probe::ControlProbe::steerAround).
  virtual void steerAround(std::vector<std::int32_t> nodes) const = 0;
};

// The admin calls a drill makes. Each call blocks for at most its own timeout; thread-safe.
class ClusterAdmin {
 public:
  virtual ~ClusterAdmin() = default;
  // Every topic's metadata.
  virtual Result<kafka::ClusterSnapshot> describeCluster() = 0;
  // A validate-only topic creation, which only the KRaft controller answers.
  virtual Status controllerAnswers() = 0;
  // One config value of each topic (topic → value).
  virtual Result<std::map<std::string, std::string>> topicConfig(
      const std::vector<std::string>& topics, const std::string& key) = 0;
  virtual Status electPreferredLeaders(const std::vector<kafka::TopicPartition>& partitions) = 0;
  // The KRaft quorum (DescribeQuorum through a broker, answered by the active controller); blocks
  // up to its timeout per bootstrap broker tried. Used by a controller's recovery.
  virtual Result<kafka::QuorumInfo> describeQuorum() = 0;
  // The broker that coordinates a consumer group (or a transactional id): FindCoordinator through
  // the bootstrap brokers, up to a second per broker tried.
  virtual Result<kafka::Coordinator> findCoordinator(kafka::CoordinatorType type,
                                                     const std::string& key) = 0;
  // `keys` of one broker's own configuration, as that broker reports it.
  virtual Result<std::map<std::string, kafka::NodeConfigValue>> brokerConfig(
      std::int32_t broker, const std::vector<std::string>& keys) = 0;
  // `keys` of the active KRaft controller's own configuration (on its listener, which
  // DescribeQuorum v2 names).
  virtual Result<std::map<std::string, kafka::NodeConfigValue>> controllerConfig(
      const std::vector<std::string>& keys) = 0;
};

// A client profile other than the primary (config::ProbeProfile, probe.profiles[1..]): its probe
// and the stream its samples, gaps and probe events are stored under. A run analyses each as it
// analyses the primary's; the primary alone gates drills (guards, settle).
struct ProfileProbe {
  config::ProbeProfile profile;
  storage::ClusterId stream = 0;
  const ProbeView* probe = nullptr;
};

// Everything one cluster's drill engine works with. The references outlive the engine; the
// injectors (one per inventory node) are used by the engine's thread only.
struct EngineDeps {
  const config::ClusterConfig& cluster;
  storage::ClusterId cluster_id;
  storage::Store& store;
  storage::DrillStore& drills;
  const common::Clock& clock;
  const ClusterView& view;
  const ProbeView& probe;
  ClusterAdmin& admin;
  std::map<std::int32_t, std::unique_ptr<fault::Injector>>& injectors;
  DrillListener* listener = nullptr;  // told of every terminal state; may be null
  std::vector<ProfileProbe> profiles{};
};

}  // namespace kfaild::drill
