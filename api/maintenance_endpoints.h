#pragma once

// Planned-maintenance windows over HTTP (every rule is in openapi.yaml), on the one service the
// drill engine uses too (server/maintenance/maintenance_windows.h):
//
//   POST /api/v1/clusters/{cluster}/maintenance                 open: {reason, until | duration_s}
//                                                               → 201 + Location, the window
//   GET  /api/v1/clusters/{cluster}/maintenance                 windows covering from..to (default:
//                                                               the last 7 days), newest first
//   GET  /api/v1/clusters/{cluster}/maintenance/{id}            one window
//   POST /api/v1/clusters/{cluster}/maintenance/{id}/close      close early → the window
//
// Opening and closing need the operator (mutating routes) and are audited by the router like
// every mutation; `opened_by`/`closed_by` say "operator (api, <peer address>)". Reads are
// redacted for non-operators (a reason may name hosts).
//
// appendMaintenanceMetrics writes kfaild_maintenance_active{cluster}: 1 for each cluster with an
// active window, 0 for every other listed cluster.
//
// Thread-safety: handlers may run concurrently; the service and the stores are thread-safe.

#include <cstdint>
#include <string>
#include <vector>

#include "api/http_message.h"
#include "api/live_state.h"
#include "api/prometheus_text.h"
#include "api/router.h"
#include "server/common/clock.h"
#include "server/maintenance/maintenance_windows.h"
#include "storage/store.h"

namespace kfaild::api {

inline constexpr std::int64_t kMaintenanceDefaultWindowUs = 7LL * 24 * 3600 * 1'000'000;
inline constexpr std::int64_t kMaintenanceMaxLimit = 500;
inline constexpr std::int64_t kMaintenanceDefaultLimit = 100;

class MaintenanceEndpoints {
 public:
  // All must outlive the router the endpoints are registered on.
  MaintenanceEndpoints(const LiveClusters& live, const storage::Store& store,
                       maintenance::MaintenanceWindows& windows, const common::Clock& clock);

  void registerOn(Router& router);

 private:
  Response openWindow(const Request& request);
  Response listWindows(const Request& request) const;
  Response getWindow(const Request& request) const;
  Response closeWindow(const Request& request);
  // The stored window `id` as the answer with `status`.
  Response windowResponse(const Request& request, std::int64_t id, int status) const;

  const LiveClusters& live_;
  const storage::Store& store_;
  maintenance::MaintenanceWindows& windows_;
  const common::Clock& clock_;
};

// The window as the API shows it; `now_us` decides `active`.
nlohmann::json maintenanceWindowJson(const maintenance::MaintenanceWindow& window,
                                     std::int64_t now_us);

struct MaintenanceCluster {
  std::string name;
  bool active = false;
};
void appendMaintenanceMetrics(PrometheusText& out, const std::vector<MaintenanceCluster>& clusters);

}  // namespace kfaild::api
