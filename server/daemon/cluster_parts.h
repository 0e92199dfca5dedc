#pragma once

// Everything kfaild runs for one configured cluster. Members are declared in the order they
// start; stop() stops them in the reverse order (the drill engine first, so a running drill
// still has its probe and poller while it brings its node back).

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "server/common/clock.h"
#include "server/common/result.h"
#include "server/config/config.h"
#include "server/drill/drill_runner.h"
#include "server/drill/live_seams.h"
#include "server/observe/client_log.h"
#include "server/observe/metadata_poller.h"
#include "server/probe/control_probe.h"
#include "server/probe/coordinator_probe.h"
#include "server/probe/probe_runner.h"
#include "storage/drill_store.h"
#include "storage/store.h"

namespace kfaild::daemon {

// Why start-up stopped, and the exit status it means: 2 a configuration mistake, 1 anything else.
struct StartFailure {
  int exit_status = 1;
  std::string message;
};

class ClusterParts {
 public:
  ClusterParts(const config::ClusterConfig& config, storage::ClusterId id, storage::Store& store,
               storage::DrillStore& drills, const common::Clock& clock,
               const std::string& client_log_dir, drill::DrillListener* listener = nullptr,
               maintenance::MaintenanceWindows* maintenance = nullptr,
               const std::string& gray_instance = {},
               const std::map<std::string, storage::ClusterId>& profile_streams = {});
  ~ClusterParts() { stop(); }
  ClusterParts(const ClusterParts&) = delete;
  ClusterParts& operator=(const ClusterParts&) = delete;

  // The poller first: recovering a node left down by an earlier kfaild waits until the metadata
  // shows it back in every ISR. Then the probe, and the drill engine, whose thread begins with
  // that recovery (returns without waiting for it).
  std::optional<StartFailure> start(std::size_t index);
  // Stops the drill engine (a running drill brings its node back first).
  void stopDrills();
  // Raises every loop's stop flag and returns at once (after stopDrills: a drill's recovery
  // still uses the probe). With the cluster unreachable each loop may be blocked in a request of
  // up to 5 s; told one after another as they were joined, their waits added up (12 s measured
  // on a cluster that refused every connection), told together they overlap.
  void requestStop();
  // Stops the rest.
  void stop();

  const config::ClusterConfig& config() const { return config_; }
  storage::ClusterId id() const { return id_; }
  const observe::MetadataPoller& poller() const { return *poller_; }
  const probe::ProbeRunner& probe() const { return *probe_; }
  // Every client profile's probe, the primary's (probe()) first.
  std::vector<const probe::ProbeRunner*> profiles() const;
  drill::DrillRunner* drills() { return drills_.get(); }
  // One line of what the cluster and its probe look like now, for the log.
  std::string statusLine() const;

 private:
  config::ClusterConfig config_;
  storage::ClusterId id_;
  const common::Clock& clock_;
  std::unique_ptr<observe::ClientLogWatcher> client_log_;
  // The metadata poller's librdkafka client, and the drill engine's own: not shared, because a
  // broker answers one connection's requests in order, and admin calls forwarded to a controller
  // that is down (seconds each) would hold the poller's polls behind them.
  std::unique_ptr<kafka::SharedHandle> observer_;
  std::unique_ptr<kafka::SharedHandle> admin_client_;
  std::unique_ptr<observe::MetadataPoller> poller_;
  std::unique_ptr<probe::ControlProbe> control_;           // null with probe.control: off
  std::unique_ptr<probe::CoordinatorProbe> coordinators_;  // null with probe.coordinators: off
  std::unique_ptr<probe::ProbeRunner> probe_;
  // The other client profiles (probe.profiles[1..]): each its own probe, stream and client log.
  struct Profile {
    storage::ClusterId stream = 0;
    std::unique_ptr<observe::ClientLogWatcher> client_log;
    std::unique_ptr<probe::ProbeRunner> probe;
    std::unique_ptr<drill::RunnerProbeView> view;
  };
  std::vector<Profile> profiles_;
  // The drill engine and its seams, only with an inventory.
  std::unique_ptr<drill::PollerView> view_;
  std::unique_ptr<drill::RunnerProbeView> probe_view_;
  std::unique_ptr<drill::KafkaClusterAdmin> admin_;
  std::unique_ptr<drill::DrillRunner> drills_;
};

}  // namespace kfaild::daemon
