#pragma once

// Planned-maintenance windows: the one service that opens, closes and answers for them. The HTTP
// API (api/maintenance_endpoints.h) and the drill engine (a rolling-restart rehearsal opens one
// for itself) both call it.
//
// A window covers one cluster from the moment it is opened until its end (`until_us`), or until
// it is closed early; an expired window is simply no longer active. Windows are stored in SQLite
// (storage/maintenance_store.h) and survive restarts. While a window is active:
//   - gaps are recorded as always but are planned (analysis::plannedBy): the incident scan and
//     GET .../incidents do not make incidents of them, GET .../gaps marks them;
//   - the notifier holds the cluster's `incident` notifications (server/notify/notifier.h);
//   - /metrics reports kfaild_maintenance_active{cluster} 1, which the shipped alert rules honour;
//   - with Alertmanager receivers configured, each holds a silence of the cluster's kfaild alerts
//     (alert_silences.h) ending at the window's end, expired when the window is closed early.
// Silences are made on the service's worker thread (kfaild:maintain), not in open()/close():
// Alertmanager being down never fails or delays a window. A failed attempt is retried on the
// notifications' backoff (notify/backoff.h, notifications.retry), its error kept in the silence
// row (the window's JSON shows it); given up, the row is `failed`.
//
// Time: wall-clock microseconds (the Clock's wallNow()), as every stored time.
// Thread-safety: every public method may be called from any thread (HTTP threads, the drill
// engine's thread); start()/stop() by the owner. The store must outlive the service.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "server/common/clock.h"
#include "server/common/result.h"
#include "server/common/worker.h"
#include "server/config/config.h"
#include "server/maintenance/alert_silences.h"
#include "storage/maintenance_store.h"

namespace kfaild::maintenance {

using MaintenanceWindow = storage::MaintenanceWindowRecord;

// The longest window open() accepts: planned work that outlasts a day is an outage to alert on.
inline constexpr std::int64_t kMaxWindowUs = 24LL * 3600 * 1'000'000;
inline constexpr std::size_t kMaxReasonChars = 500;

class MaintenanceWindows {
 public:
  // `silences`: one per configured Alertmanager receiver (none: no silences are made).
  MaintenanceWindows(storage::MaintenanceStore& store, const common::Clock& clock,
                     std::vector<std::unique_ptr<AlertSilences>> silences,
                     config::RetryConfig retry);
  ~MaintenanceWindows();
  MaintenanceWindows(const MaintenanceWindows&) = delete;
  MaintenanceWindows& operator=(const MaintenanceWindows&) = delete;

  // Starts the worker that creates and expires silences (without it, reconcileSilences() does).
  void start();
  void stop();

  // Opens a window on `cluster` from now until `until_us` (wall µs) because of `reason`, by
  // `opened_by` (who: "operator (api, 10.0.0.5)", "drill 42"); the window's id.
  // errc::invalid_window when the reason is empty or over kMaxReasonChars, or `until_us` is not
  // after now or more than kMaxWindowUs after it; a storage error when it cannot be written.
  Result<std::int64_t> open(storage::ClusterId cluster, const std::string& reason,
                            std::int64_t until_us, const std::string& opened_by);
  // Closes window `id` now: it stops covering at once and its silences are expired.
  // errc::unknown_window, errc::window_over (closed already or run out), or a storage error.
  Status close(std::int64_t id, const std::string& closed_by);

  // The window of `cluster` that covers `at_us` (the earliest opened when several do), if any.
  Result<std::optional<MaintenanceWindow>> active(storage::ClusterId cluster,
                                                  std::int64_t at_us) const;
  // One window with its silences, if it exists.
  Result<std::optional<MaintenanceWindow>> window(std::int64_t id) const;
  // The cluster's windows that cover any instant of [from_us, to_us), oldest first, at most
  // `limit`.
  Result<std::vector<MaintenanceWindow>> windows(storage::ClusterId cluster, std::int64_t from_us,
                                                 std::int64_t to_us, std::size_t limit) const;
  // Every cluster's windows active at `at_us` (for /metrics).
  Result<std::vector<MaintenanceWindow>> activeWindows(std::int64_t at_us) const;

  // One pass over the silences due now: creates, expires, retries; the number of attempts made.
  // The worker's; public so that tests drive it without the thread.
  std::size_t reconcileSilences();

 private:
  void run();
  void attempt(storage::MaintenanceSilenceRecord row);
  void retryOrGiveUp(storage::MaintenanceSilenceRecord& row, const Error& error);
  AlertSilences* silencesOf(const std::string& receiver) const;

  storage::MaintenanceStore& store_;
  const common::Clock& clock_;
  const std::vector<std::unique_ptr<AlertSilences>> silences_;
  const config::RetryConfig retry_;
  std::mt19937_64 jitter_{std::random_device{}()};  // the worker's
  // Serialises close() with the worker's write of a silence it just made, so a window closed
  // meanwhile has that silence expired rather than left to run to its end.
  std::mutex close_mutex_;
  std::mutex wake_mutex_;
  bool woken_ = false;     // guarded by wake_mutex_
  common::Worker worker_;  // last: stopped before the members above go
};

}  // namespace kfaild::maintenance
