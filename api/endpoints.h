#pragma once

// The read endpoints of the HTTP API (described, with every parameter rule, in openapi.yaml):
//
//   GET /healthz                      the process answers
//   GET /readyz                       the store writes and every probe is probing, else 503
//   GET /metrics                      Prometheus text format 0.0.4
//   GET /api/v1/clusters              configured clusters, live
//   GET /api/v1/clusters/{cluster}    brokers, probe partitions' replicas and probe counters
//   GET /api/v1/clusters/{cluster}/gaps
//   GET /api/v1/clusters/{cluster}/events
//   GET /api/v1/clusters/{cluster}/partitions/{topic}/{partition}/samples
//
// Live data comes from LiveClusters; history from the Store (clusters that are no longer
// configured but have history in the store are still found by the history endpoints). Handlers
// only copy snapshots and run SQLite reads: they never wait on the probe or the writer.
//
// Thread-safety: handlers may run concurrently; LiveClusters and Store must be thread-safe.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "api/http_message.h"
#include "api/live_state.h"
#include "api/query_params.h"
#include "api/router.h"
#include "server/common/clock.h"
#include "server/maintenance/maintenance_windows.h"
#include "server/notify/notification_status.h"
#include "storage/drill_store.h"
#include "storage/retention_status.h"
#include "storage/store.h"

namespace kfaild::api {

inline constexpr std::int64_t kGapsDefaultWindowUs = 24LL * 3600 * 1'000'000;
inline constexpr std::int64_t kGapsMaxLimit = 10'000;
inline constexpr std::int64_t kGapsDefaultLimit = 1'000;
inline constexpr std::int64_t kEventsDefaultWindowUs = 24LL * 3600 * 1'000'000;
inline constexpr std::int64_t kEventsMaxLimit = 10'000;
inline constexpr std::int64_t kEventsDefaultLimit = 1'000;
inline constexpr std::int64_t kSamplesDefaultWindowUs = 5LL * 60 * 1'000'000;
inline constexpr std::int64_t kSamplesMaxWindowUs = 24LL * 3600 * 1'000'000;
inline constexpr std::int64_t kSamplesMaxLimit = 100'000;
inline constexpr std::int64_t kSamplesDefaultLimit = 100'000;
// A sample's JSON is over 200 bytes: more never fit in one answer.
inline constexpr std::size_t kSamplesPerResponse = 20'000;
inline constexpr std::int64_t kMaxMinGapMs = 31'536'000'000;  // a year

// What /metrics reports as kfaild_build_info.
struct BuildInfo {
  std::string version;
  std::string commit;      // the checkout's commit when the build was configured; may be empty
  std::string librdkafka;  // the librdkafka version linked
};

class Endpoints {
 public:
  // `clock` must be the one that stamped the probe's Instants (see live_state.h). All three
  // must outlive the router the endpoints are registered on.
  Endpoints(const LiveClusters& live, const storage::Store& store, const common::Clock& clock);

  // Registers every endpoint above; /metrics reports router.responses() as well.
  void registerOn(Router& router);

  // With drills: /metrics also counts drills by cluster, fault and state. Set before serving.
  void setDrillStore(const storage::DrillStore* drills) { drills_ = drills; }
  // With retention: /metrics also reports what it pruned and when. Set before serving.
  void setRetentionStatus(const storage::RetentionStatus* retention) { retention_ = retention; }
  // With notifications: /metrics also reports deliveries and the queue. Set before serving.
  void setNotificationStatus(const notify::NotificationStatus* notifications) {
    notifications_ = notifications;
  }
  // With maintenance windows: gaps say whether they are planned, and /metrics reports
  // kfaild_maintenance_active per cluster. Set before serving.
  void setMaintenance(const maintenance::MaintenanceWindows* windows) { maintenance_ = windows; }
  // /metrics reports it as kfaild_build_info. Set before serving.
  void setBuildInfo(BuildInfo build) { build_ = std::move(build); }

 private:
  Response healthz(const Request& request) const;
  Response readyz(const Request& request) const;
  Response metrics(const Request& request, const RequestCounter& responses) const;
  Response clusterList(const Request& request) const;
  Response clusterDetail(const Request& request) const;
  Response gaps(const Request& request) const;
  Response events(const Request& request) const;
  Response samples(const Request& request) const;

  // The cluster named in the path, by live state first and then by the store; or the 404/503.
  std::variant<storage::ClusterId, Response> resolveCluster(const Request& request) const;
  // The stream the query's `profile` names (a client profile of `cluster`): the cluster's own
  // for none or the primary, 404 for a name the cluster has no profile of (400 for one no profile
  // could have).
  std::variant<storage::ClusterId, Response> resolveProfile(const Request& request,
                                                            storage::ClusterId cluster,
                                                            const QueryReader& query) const;

  const LiveClusters& live_;
  const storage::Store& store_;
  const common::Clock& clock_;
  const storage::DrillStore* drills_ = nullptr;
  const storage::RetentionStatus* retention_ = nullptr;
  const notify::NotificationStatus* notifications_ = nullptr;
  const maintenance::MaintenanceWindows* maintenance_ = nullptr;
  std::optional<BuildInfo> build_;
};

}  // namespace kfaild::api
