#pragma once

// kfaild as one object. The members are declared in the order they start: the HTTP address is
// claimed first (a taken port stops kfaild before it touches anything), then the database, the
// clusters (poller, probe, drill engine, whose thread first recovers nodes an earlier kfaild left
// down, beside everything else), the
// scheduler and the retention task, and last the API, which starts serving once all it serves
// exists. stop() goes the other way: the API stops taking requests, the scheduler stops firing,
// every drill brings its node back (within shutdown_grace_s), then the probes, pollers and the
// database writer stop.

#include <csignal>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "api/audit_endpoints.h"
#include "api/drill_endpoints.h"
#include "api/endpoints.h"
#include "api/http_server.h"
#include "api/maintenance_endpoints.h"
#include "api/notification_endpoints.h"
#include "api/router.h"
#include "api/static_files.h"
#include "api/steady_endpoint.h"
#include "server/common/clock.h"
#include "server/config/config.h"
#include "server/daemon/cluster_parts.h"
#include "server/daemon/retention.h"
#include "server/drill/scheduler.h"
#include "server/maintenance/maintenance_windows.h"
#include "server/notify/notifier.h"
#include "storage/audit_log.h"
#include "storage/notification_queue.h"
#include "storage/sqlite_drill_store.h"
#include "storage/sqlite_store.h"

namespace kfaild::daemon {

// The literals the API hides from readers without the operator token (api::Redactor): how
// kfaild reaches each node (its address, netns, fill_dir, endpoint, ssh destination, commands,
// files), each cluster's bootstrap servers and each receiver's URL.
std::vector<std::string> sensitiveLiterals(const config::Config& config);

struct DaemonOptions {
  std::string
      client_log_dir;  // append each cluster's librdkafka log lines to DIR/<cluster>-client.log
};

class Daemon {
 public:
  // Exit statuses of kfaild.
  static constexpr int kConfigError = 2;
  // How long start() waits for a cluster to answer its access check (AccessCheck).
  static constexpr int kAccessCheckTimeoutMs = 5000;
  static constexpr int kDrillNotRecovered = 3;

  // Starts everything; on a failure, what was started is stopped again.
  static std::variant<std::unique_ptr<Daemon>, StartFailure> start(const config::Config& config,
                                                                   const DaemonOptions& options);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Logs each cluster's state every 10 s until one of `signals` (blocked in every thread) arrives.
  void runUntil(const sigset_t& signals);
  // Stops everything; the exit status: 0, or kDrillNotRecovered when a drill did not bring its
  // node back within shutdown_grace_s (the recovery journal finishes that at the next start).
  int stop();

 private:
  class LiveView;
  class Control;

  Daemon(const config::Config& config, const DaemonOptions& options);
  // The steps of start(), in their order; each step that can fail says why.
  std::optional<StartFailure> startAll();
  // Every cluster's client properties, then its credentials against the cluster (a cluster that
  // does not answer is no failure: kfaild probes clusters that may be down).
  std::optional<StartFailure> checkClusterSettings();
  // The dashboard's files: http.web_dir, else the ones installed beside the binary.
  std::optional<StartFailure> loadDashboard();
  // With http.enabled: the access policy and the listening socket. The routes are filled once
  // the parts they serve exist (registerRoutes), and served last (serveHttp).
  std::optional<StartFailure> claimHttpAddress();
  // The store, drill tables, audit log (and its recorder), notification queue and maintenance
  // windows, all in the one database file.
  std::optional<StartFailure> openDatabase();
  void startMaintenance();
  // With receivers configured; it starts after the clusters (startNotifier).
  void createNotifier();
  std::optional<StartFailure> startClusters();
  std::optional<StartFailure> startNotifier();
  void startScheduler();
  void startRetention();
  void registerRoutes();
  std::optional<StartFailure> serveHttp();
  // The router's access policy and redactor; makes the operator token when none is configured.
  std::optional<StartFailure> setUpAccess();

  config::Config config_;
  DaemonOptions options_;
  common::SystemClock clock_;
  api::StaticFiles web_;
  api::Router router_;
  std::unique_ptr<api::HttpServer> http_;  // listening from the start, serving last, stopped first
  std::unique_ptr<storage::SqliteStore> store_;
  std::unique_ptr<storage::SqliteDrillStore> drill_store_;
  std::unique_ptr<storage::AuditLog> audit_log_;
  std::unique_ptr<api::AuditRecorder> audit_recorder_;  // the router's audit sink
  // Before the clusters: their drill engines tell it of every finished drill.
  std::unique_ptr<storage::NotificationQueue> notification_queue_;
  std::unique_ptr<notify::Notifier> notifier_;
  // Planned-maintenance windows: the API opens and closes them, the notifier and /metrics read
  // them.
  std::unique_ptr<storage::MaintenanceStore> maintenance_store_;
  std::unique_ptr<maintenance::MaintenanceWindows> maintenance_;
  std::vector<std::unique_ptr<ClusterParts>> clusters_;
  std::unique_ptr<drill::Scheduler> scheduler_;
  std::unique_ptr<RetentionTask> retention_;
  std::unique_ptr<LiveView> live_;
  std::unique_ptr<Control> control_;
  std::unique_ptr<api::Endpoints> endpoints_;
  std::unique_ptr<api::DrillEndpoints> drill_endpoints_;
  std::unique_ptr<api::AuditEndpoints> audit_endpoints_;
  std::unique_ptr<api::NotificationEndpoints> notification_endpoints_;
  std::unique_ptr<api::MaintenanceEndpoints> maintenance_endpoints_;
  std::unique_ptr<api::SteadyEndpoint> steady_endpoint_;
  bool stopped_ = false;
};

}  // namespace kfaild::daemon
