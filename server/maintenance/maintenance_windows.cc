#include "server/maintenance/maintenance_windows.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "server/common/time_format.h"
#include "server/maintenance/errc.h"
#include "server/notify/backoff.h"

namespace kfaild::maintenance {
namespace {

constexpr std::int64_t kMaxIdleUs = 5'000'000;

}  // namespace

MaintenanceWindows::MaintenanceWindows(storage::MaintenanceStore& store, const common::Clock& clock,
                                       std::vector<std::unique_ptr<AlertSilences>> silences,
                                       config::RetryConfig retry)
    : store_(store), clock_(clock), silences_(std::move(silences)), retry_(retry), worker_(clock) {}

MaintenanceWindows::~MaintenanceWindows() {
  stop();
}

void MaintenanceWindows::start() {
  if (silences_.empty()) return;
  worker_.start("kfaild:maintain", [this] { run(); });
}

void MaintenanceWindows::stop() {
  worker_.stop();
}

Result<std::int64_t> MaintenanceWindows::open(storage::ClusterId cluster, const std::string& reason,
                                              std::int64_t until_us, const std::string& opened_by) {
  const auto now = clock_.wallNow();
  if (reason.empty() || reason.size() > kMaxReasonChars) {
    return Error{errc::invalid_window, "reason: must be 1 to " + std::to_string(kMaxReasonChars) +
                                           " characters, got " + std::to_string(reason.size())};
  }
  if (until_us <= now) {
    return Error{errc::invalid_window, "the end " + common::formatRfc3339(until_us) +
                                           " is not in the future (now " +
                                           common::formatRfc3339(now) + ")"};
  }
  if (until_us - now > kMaxWindowUs) {
    return Error{errc::invalid_window, "the end " + common::formatRfc3339(until_us) +
                                           " is more than " +
                                           std::to_string(kMaxWindowUs / 3'600'000'000) +
                                           " h away (now " + common::formatRfc3339(now) + ")"};
  }
  storage::MaintenanceWindowRecord w;
  w.cluster = cluster;
  w.reason = reason;
  w.opened_by = opened_by;
  w.started_us = now;
  w.ends_us = until_us;
  std::vector<std::string> receivers;
  for (const auto& s : silences_) receivers.push_back(s->receiver());
  auto id = store_.insert(w, receivers);
  if (!id) return id.error();
  spdlog::info("maintenance: window {} on cluster {} opened by {} until {}: {}", *id, cluster,
               opened_by, common::formatRfc3339(until_us), reason);
  if (!silences_.empty()) {
    {
      std::lock_guard lock(wake_mutex_);
      woken_ = true;
    }
    worker_.wake();
  }
  return *id;
}

Status MaintenanceWindows::close(std::int64_t id, const std::string& closed_by) {
  std::lock_guard serial(close_mutex_);
  auto found = store_.window(id);
  if (!found) return found.error();
  if (!*found)
    return Error{errc::unknown_window, "no maintenance window has id " + std::to_string(id)};
  const auto now = clock_.wallNow();
  auto closed = store_.close(id, now, closed_by);
  if (!closed) return closed.error();
  if (!*closed) {
    const auto& w = **found;
    return Error{
        errc::window_over,
        "maintenance window " + std::to_string(id) + " is over: " +
            (w.closed_us ? "closed by " + w.closed_by + " at " + common::formatRfc3339(*w.closed_us)
                         : "it ended at " + common::formatRfc3339(w.ends_us))};
  }
  spdlog::info("maintenance: window {} closed by {}", id, closed_by);
  if (!silences_.empty()) {
    {
      std::lock_guard lock(wake_mutex_);
      woken_ = true;
    }
    worker_.wake();
  }
  return okStatus();
}

Result<std::optional<MaintenanceWindow>> MaintenanceWindows::active(storage::ClusterId cluster,
                                                                    std::int64_t at_us) const {
  auto covering = store_.windows(cluster, at_us, at_us + 1, 1);
  if (!covering) return covering.error();
  if (covering->empty()) return std::optional<MaintenanceWindow>{};
  return std::optional<MaintenanceWindow>{std::move(covering->front())};
}

Result<std::optional<MaintenanceWindow>> MaintenanceWindows::window(std::int64_t id) const {
  return store_.window(id);
}

Result<std::vector<MaintenanceWindow>> MaintenanceWindows::windows(storage::ClusterId cluster,
                                                                   std::int64_t from_us,
                                                                   std::int64_t to_us,
                                                                   std::size_t limit) const {
  return store_.windows(cluster, from_us, to_us, limit);
}

Result<std::vector<MaintenanceWindow>> MaintenanceWindows::activeWindows(std::int64_t at_us) const {
  return store_.activeAt(at_us);
}

AlertSilences* MaintenanceWindows::silencesOf(const std::string& receiver) const {
  for (const auto& s : silences_) {
    if (s->receiver() == receiver) return s.get();
  }
  return nullptr;
}

std::size_t MaintenanceWindows::reconcileSilences() {
  const auto now = clock_.wallNow();
  if (auto ended = store_.endRunOutSilences(now); !ended) {
    spdlog::error("maintenance: cannot update silences of windows that ran out: {}",
                  ended.error().describe());
  }
  auto due = store_.silencesDue(now);
  if (!due) {
    spdlog::error("maintenance: cannot read the silences due: {}", due.error().describe());
    return 0;
  }
  for (auto& row : *due) {
    attempt(std::move(row));
    if (worker_.stopRequested()) break;
  }
  return due->size();
}

void MaintenanceWindows::retryOrGiveUp(storage::MaintenanceSilenceRecord& row, const Error& error) {
  row.attempts += 1;
  row.last_error = error.describe();
  row.next_attempt_us = clock_.wallNow() +
                        notify::retryDelayUs(retry_, row.attempts,
                                             std::uniform_real_distribution<double>(0, 1)(jitter_));
  if (notify::giveUp(retry_, row.attempts, row.created_us, row.next_attempt_us)) {
    spdlog::warn(
        "maintenance: giving up the silence of window {} on {} ({}) after {} attempt(s): {}",
        row.window_id, row.receiver, row.state, row.attempts, row.last_error);
    row.state = "failed";
  } else {
    spdlog::info(
        "maintenance: silence of window {} on {} ({}) failed (attempt {}), next in {} ms: {}",
        row.window_id, row.receiver, row.state, row.attempts,
        (row.next_attempt_us - clock_.wallNow()) / 1000, row.last_error);
  }
}

void MaintenanceWindows::attempt(storage::MaintenanceSilenceRecord row) {
  auto* silences = silencesOf(row.receiver);
  const auto save = [this](const storage::MaintenanceSilenceRecord& r) {
    if (auto saved = store_.updateSilence(r); !saved) {
      spdlog::error("maintenance: cannot record the silence of window {} on {}: {}", r.window_id,
                    r.receiver, saved.error().describe());
    }
  };
  if (silences == nullptr) {
    row.state = "failed";
    row.last_error = "receiver " + row.receiver + " is not configured";
    save(row);
    return;
  }
  auto window = store_.window(row.window_id);
  if (!window || !*window) {
    spdlog::error("maintenance: cannot read window {}: {}", row.window_id,
                  window ? std::string("gone") : window.error().describe());
    return;
  }
  const auto& w = **window;
  if (row.state == "expiring") {
    if (auto expired = silences->expire(row.silence_id); !expired) {
      retryOrGiveUp(row, expired.error());
    } else {
      spdlog::info("maintenance: silence {} of window {} on {} expired", row.silence_id,
                   row.window_id, row.receiver);
      row.state = "ended";
      row.last_error.clear();
    }
    save(row);
    return;
  }
  // creating
  if (w.endUs() <= clock_.wallNow()) {
    row.state = "ended";  // nothing left to silence
    save(row);
    return;
  }
  auto made = silences->create({w.cluster_name, w.id, w.reason, w.started_us, w.ends_us});
  std::lock_guard serial(close_mutex_);
  if (!made) {
    retryOrGiveUp(row, made.error());
    // Closed while this attempt ran: there is nothing to retry.
    if (auto now = store_.window(row.window_id); now && *now && (*now)->closed_us)
      row.state = "ended";
    save(row);
    return;
  }
  spdlog::info("maintenance: silence {} on {} for window {} of {} until {}", *made, row.receiver,
               w.id, w.cluster_name, common::formatRfc3339(w.ends_us));
  row.silence_id = *made;
  row.attempts = 0;
  row.last_error.clear();
  row.state = "active";
  // Closed while the silence was being made: expire it at once.
  if (auto now = store_.window(row.window_id); now && *now && (*now)->closed_us) {
    row.state = "expiring";
    row.created_us = clock_.wallNow();
    row.next_attempt_us = row.created_us;
  }
  save(row);
}

void MaintenanceWindows::run() {
  while (!worker_.stopRequested()) {
    {
      std::lock_guard lock(wake_mutex_);
      woken_ = false;
    }
    reconcileSilences();
    std::int64_t wait_us = kMaxIdleUs;
    if (auto due = store_.nextSilenceDue(); due && *due)
      wait_us = std::min(wait_us, **due - clock_.wallNow());
    // Never a busy loop, even when a row's state cannot be written.
    wait_us = std::max<std::int64_t>(wait_us, 10'000);
    std::unique_lock lock(wake_mutex_);
    worker_.waitUntil(lock, clock_.monoNow() + wait_us, [this] { return woken_; });
  }
}

}  // namespace kfaild::maintenance
