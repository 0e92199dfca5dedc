#pragma once

// The drill, statistics, incident and schedule endpoints of the HTTP API (every parameter rule
// is in openapi.yaml):
//
//   POST   /api/v1/clusters/{cluster}/drills        start a drill → 202 + Location
//   GET    /api/v1/clusters/{cluster}/drills/last   the last completed drill (the on-call view)
//   GET    /api/v1/clusters/{cluster}/incidents     stalls outside any drill and maintenance
//   window,
//                                                   with their events
//   GET    /api/v1/drills                           filters + cursor pagination, newest first
//   GET    /api/v1/drills/{id}                      one drill with its runs' analyses
//   GET    /api/v1/drills/{id}/timeline             every event of the drill's window
//   POST   /api/v1/drills/{id}/abort                abort: a running drill recovers at once
//   POST   /api/v1/drills/{id}/mark                 an observed drill's fault, injected by another
//   GET    /api/v1/statistics                       stall and phase distributions across drills
//   GET    /api/v1/schedules, POST /api/v1/schedules
//   GET    /api/v1/schedules/{id}, PATCH, DELETE
//   GET    /api/v1/recoveries                       nodes drills left down and not back yet
//   POST   /api/v1/recoveries/{id}/resolve          an operator closes one (node back or retired)
//
// Reads go to the DrillStore and the Store; starts and aborts to the DrillControl. Nothing here
// waits for a drill to run.
//
// Thread-safety: handlers may run concurrently; the stores and the DrillControl must be
// thread-safe.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>

#include "api/drill_control.h"
#include "api/http_message.h"
#include "api/live_state.h"
#include "api/router.h"
#include "server/common/clock.h"
#include "server/maintenance/maintenance_windows.h"
#include "storage/drill_store.h"
#include "storage/store.h"

namespace kfaild::api {

inline constexpr std::int64_t kDrillsMaxLimit = 500;
// The most characters a mark's `by` (who or what injected the fault) may have.
inline constexpr std::size_t kMarkByMax = 200;
inline constexpr std::int64_t kDrillsDefaultLimit = 50;
inline constexpr std::int64_t kStatisticsMaxDrills = 10'000;
inline constexpr std::int64_t kIncidentsDefaultWindowUs = 7LL * 24 * 3600 * 1'000'000;
inline constexpr std::int64_t kIncidentsDefaultMinMs = 1'000;
inline constexpr std::int64_t kIncidentsMaxGaps = 10'000;
inline constexpr std::int64_t kIncidentEventsBeforeUs = 30'000'000;
inline constexpr std::int64_t kIncidentEventsAfterUs = 10'000'000;
inline constexpr std::int64_t kTimelineMaxEvents = 10'000;
inline constexpr std::size_t kScheduleNameMax = 100;
inline constexpr std::size_t kRecoveryNoteMax = 500;
inline constexpr std::int64_t kScheduleMaxJitterS = 86'400;

class DrillEndpoints {
 public:
  // All must outlive the router the endpoints are registered on.
  DrillEndpoints(const LiveClusters& live, const storage::Store& store, storage::DrillStore& drills,
                 DrillControl& control, const common::Clock& clock);

  void registerOn(Router& router);
  // With maintenance windows: gaps they overlap are planned, never incidents. Set before serving.
  void setMaintenance(const maintenance::MaintenanceWindows* windows) { maintenance_ = windows; }

 private:
  Response startDrill(const Request& request);
  Response listRecoveries(const Request& request) const;
  Response resolveRecovery(const Request& request);
  Response lastDrill(const Request& request) const;
  Response incidents(const Request& request) const;
  Response listDrills(const Request& request) const;
  Response getDrill(const Request& request) const;
  Response timeline(const Request& request) const;
  Response abortDrill(const Request& request);
  Response markDrill(const Request& request);
  Response statistics(const Request& request) const;
  Response listSchedules(const Request& request) const;
  Response createSchedule(const Request& request);
  Response getSchedule(const Request& request) const;
  Response updateSchedule(const Request& request);
  Response deleteSchedule(const Request& request);

  // Cluster names by id: configured clusters and those with history in the store.
  std::variant<std::map<storage::ClusterId, std::string>, Response> clusterNames(
      const Request& request) const;
  std::variant<storage::DrillRecord, Response> drillOfPath(const Request& request) const;
  std::variant<storage::ScheduleRecord, Response> scheduleOfPath(const Request& request) const;

  const LiveClusters& live_;
  const storage::Store& store_;
  storage::DrillStore& drills_;
  DrillControl& control_;
  const common::Clock& clock_;
  const maintenance::MaintenanceWindows* maintenance_ = nullptr;
};

}  // namespace kfaild::api
