#pragma once

// The notifier: turns finished drills and incidents into rows of the notification queue
// (storage/notification_queue.h), one per receiver that wants the event, and delivers them on its
// own worker thread.
//
// Delivery is at-least-once with dedup: a row is claimed (delivering), POSTed, then marked
// delivered. The same (receiver, dedup key) is never queued twice, so a repeated listener call,
// an incident seen by two scans, or a restart sends nothing again. The one window for a
// duplicate: kfaild dies (or the database write fails) after the receiver answered 2xx and
// before the row says delivered; at the next start the row is queued again and sent again.
// Alertmanager folds such a duplicate into the same alert (same labels); a webhook receiver can
// drop it by the payload's (event, drill.id / incident.id).
//
// Retries: 2xx is delivered; 408, 429, 5xx and transport failures are retried on the schedule of
// backoff.h; any other status (a 4xx: the receiver will refuse it again) fails at once. The
// last error is kept in the row. Rows of a receiver no longer configured fail ("not configured").
//
// Incidents: every incidents.scan_interval_s the worker reads the gaps of each cluster that ended
// within the last incidents.lookback_h and are at least incidents.min_stall_s long, drops those a
// drill window covers (analysis/incidents.h) and those a planned-maintenance window overlaps
// (storage/maintenance_store.h: planned, never incidents), and queues one incident event per
// merged stall. A stall is seen once its gap is stored, i.e. after it ended. While a cluster has
// an active maintenance window its incident notifications are held: the scan queues none for it;
// the first scan after the window ends queues those of its unplanned stalls still within the
// lookback.
//
// Threading: drillFinished() runs on the drill engine's thread and only inserts rows (a few
// SQLite statements) and wakes the worker. deliverDue() and scanIncidents() are the worker's, and
// are public so that tests can drive them without the thread. Deliveries are sequential: a
// receiver that hangs delays the others by at most its timeout_s per attempt.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "server/common/clock.h"
#include "server/common/result.h"
#include "server/common/worker.h"
#include "server/config/config.h"
#include "server/drill/drill_listener.h"
#include "server/notify/events.h"
#include "server/notify/notification_status.h"
#include "storage/drill_store.h"
#include "storage/maintenance_store.h"
#include "storage/notification_queue.h"
#include "storage/store.h"

namespace kfaild::notify {

struct WatchedCluster {
  storage::ClusterId id = 0;
  std::string name;
};

class Notifier final : public drill::DrillListener, public NotificationStatus {
 public:
  // `external_url`: the base of links in payloads; `redactor`: what a reader without the operator
  // token may see (the API's), applied to the payloads of receivers without
  // include_operator_details (events.h). Everything passed by reference must outlive the notifier.
  Notifier(config::NotificationsConfig config, std::string external_url, common::Redactor redactor,
           storage::NotificationQueue& queue, const common::Clock& clock);
  ~Notifier() override;
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;

  // Clusters whose stored gaps are scanned for incidents, and where their maintenance windows are
  // (none: no window is known). Set before start().
  void watchIncidents(const storage::Store& store, const storage::DrillStore& drills,
                      std::vector<WatchedCluster> clusters,
                      const storage::MaintenanceStore* maintenance = nullptr);

  // Queues again the rows an earlier kfaild left delivering, then starts the worker.
  Status start();
  void stop();

  void drillFinished(const std::string& cluster, const storage::DrillRecord& drill) override;
  // Queues `event` for every receiver that wants it; the number of rows queued (duplicates not
  // counted).
  Result<std::size_t> notify(const NotificationEvent& event);

  // One pass: delivers every row due now (oldest first); the number of attempts made.
  std::size_t deliverDue();
  // One incident scan over the watched clusters; the number of rows queued.
  Result<std::size_t> scanIncidents();

  NotificationMetrics notificationMetrics() const override;

 private:
  void run();
  void deliver(const storage::NotificationRecord& row);
  void count(const std::string& receiver, const std::string& event, const std::string& outcome);
  const config::ReceiverConfig* receiver(const std::string& name) const;

  const config::NotificationsConfig config_;
  const std::string external_url_;
  const common::Redactor redactor_;
  storage::NotificationQueue& queue_;
  const common::Clock& clock_;
  const storage::Store* store_ = nullptr;
  const storage::DrillStore* drills_ = nullptr;
  const storage::MaintenanceStore* maintenance_ = nullptr;
  std::vector<WatchedCluster> clusters_;
  std::mt19937_64 jitter_{std::random_device{}()};  // the worker's

  mutable std::mutex stats_mutex_;
  std::map<std::tuple<std::string, std::string, std::string>, std::uint64_t> outcomes_;  // guarded
  std::map<std::pair<std::string, std::string>, std::uint64_t> attempts_;                // guarded
  double delivery_seconds_sum_ = 0;                                                      // guarded
  std::uint64_t delivery_seconds_count_ = 0;                                             // guarded

  std::mutex wake_mutex_;
  bool woken_ = false;     // guarded by wake_mutex_: a row was queued since the worker last looked
  common::Worker worker_;  // last: stopped before the members above go
};

}  // namespace kfaild::notify
