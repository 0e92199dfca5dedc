#include "server/notify/notifier.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "server/analysis/incidents.h"
#include "server/common/json_text.h"
#include "server/common/utf8.h"
#include "server/notify/backoff.h"
#include "server/notify/http_post.h"

namespace kfaild::notify {
namespace {

constexpr std::size_t kClaimBatch = 16;
constexpr std::int64_t kMaxIdleUs = 5'000'000;
constexpr std::int64_t kAfterDrillUs = 1'000'000;  // as GET .../incidents: a drill's own tail
constexpr std::size_t kErrorBodyChars = 200;

bool retryable(int status) {
  return status == 408 || status == 429 || status >= 500;
}

std::string deliveryUrl(const config::ReceiverConfig& r) {
  if (r.type != "alertmanager") return r.url;
  return alertmanagerBase(r.url) + "/api/v2/alerts";
}

}  // namespace

Notifier::Notifier(config::NotificationsConfig config, std::string external_url,
                   common::Redactor redactor, storage::NotificationQueue& queue,
                   const common::Clock& clock)
    : config_(std::move(config)),
      external_url_(std::move(external_url)),
      redactor_(std::move(redactor)),
      queue_(queue),
      clock_(clock),
      worker_(clock) {}

Notifier::~Notifier() {
  stop();
}

void Notifier::watchIncidents(const storage::Store& store, const storage::DrillStore& drills,
                              std::vector<WatchedCluster> clusters,
                              const storage::MaintenanceStore* maintenance) {
  store_ = &store;
  drills_ = &drills;
  maintenance_ = maintenance;
  clusters_ = std::move(clusters);
}

Status Notifier::start() {
  auto requeued = queue_.requeueInterrupted(clock_.wallNow());
  if (!requeued) return requeued.error();
  if (*requeued > 0) {
    spdlog::warn(
        "notifications: {} delivery(ies) interrupted by the last stop are queued again (a receiver "
        "may get one twice)",
        *requeued);
  }
  worker_.start("kfaild:notify", [this] { run(); });
  return okStatus();
}

void Notifier::stop() {
  worker_.stop();
}

void Notifier::drillFinished(const std::string& cluster, const storage::DrillRecord& drill) {
  for (const auto& event : drillEvents(cluster, drill)) {
    if (auto queued = notify(event); !queued) {
      spdlog::error("notifications: cannot queue {} of drill {}: {}", event.kind, drill.id,
                    queued.error().describe());
    }
  }
}

Result<std::size_t> Notifier::notify(const NotificationEvent& event) {
  const auto now = clock_.wallNow();
  const PayloadContext context{external_url_, now, redactor_};
  std::size_t queued = 0;
  for (const auto& r : config_.receivers) {
    if (!wants(r, event)) continue;
    storage::NotificationRecord row;
    row.receiver = r.name;
    row.event = event.kind;
    row.dedup_key = event.dedupKey();
    row.payload = common::jsonText(payloadFor(r, event, context));
    row.next_attempt_us = now;
    row.created_us = now;
    auto id = queue_.enqueue(row);
    if (!id) return id.error();
    if (*id) ++queued;
  }
  if (queued > 0) {
    {
      std::lock_guard lock(wake_mutex_);
      woken_ = true;
    }
    worker_.wake();
  }
  return queued;
}

const config::ReceiverConfig* Notifier::receiver(const std::string& name) const {
  for (const auto& r : config_.receivers) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

void Notifier::count(const std::string& receiver, const std::string& event,
                     const std::string& outcome) {
  std::lock_guard lock(stats_mutex_);
  ++outcomes_[{receiver, event, outcome}];
}

std::size_t Notifier::deliverDue() {
  std::size_t attempts = 0;
  for (;;) {
    auto rows = queue_.claimDue(clock_.wallNow(), kClaimBatch);
    if (!rows) {
      spdlog::error("notifications: cannot read the queue: {}", rows.error().describe());
      return attempts;
    }
    if (rows->empty()) return attempts;
    for (const auto& row : *rows) {
      deliver(row);
      ++attempts;
    }
    if (worker_.stopRequested()) return attempts;
  }
}

void Notifier::deliver(const storage::NotificationRecord& row) {
  const auto* r = receiver(row.receiver);
  if (r == nullptr) {
    (void)queue_.markFailed(row.id, "receiver " + row.receiver + " is not configured");
    count(row.receiver, row.event, "failed");
    return;
  }
  std::string error;
  bool permanent = false;
  const auto started = clock_.monoNow();
  auto url = parseReceiverUrl(deliveryUrl(*r));
  if (!url) {
    error = url.error().describe();
    permanent = true;
  } else {
    auto answer =
        postJson(*url, row.payload, r->headers, r->tls, std::chrono::milliseconds(r->timeout_ms));
    if (!answer) {
      error = answer.error().describe();
    } else if (answer->status >= 200 && answer->status < 300) {
      const auto took = static_cast<double>(clock_.monoNow() - started) / 1e6;
      // The window for a duplicate: the receiver has it, the row does not say so yet.
      if (auto marked = queue_.markDelivered(row.id, clock_.wallNow()); !marked) {
        spdlog::error("notifications: {} was delivered to {} but the queue could not record it: {}",
                      row.dedup_key, row.receiver, marked.error().describe());
      }
      std::lock_guard lock(stats_mutex_);
      ++outcomes_[{row.receiver, row.event, "delivered"}];
      ++attempts_[{row.receiver, "ok"}];
      delivery_seconds_sum_ += took;
      ++delivery_seconds_count_;
      return;
    } else {
      error = "HTTP " + std::to_string(answer->status) + ": " +
              std::string(common::utf8Prefix(answer->body, kErrorBodyChars));
      permanent = !retryable(answer->status);
    }
  }
  {
    std::lock_guard lock(stats_mutex_);
    ++attempts_[{row.receiver, "error"}];
  }
  const auto failed_attempts = row.attempts + 1;
  const auto next =
      clock_.wallNow() + retryDelayUs(config_.retry, failed_attempts,
                                      std::uniform_real_distribution<double>(0, 1)(jitter_));
  if (permanent || giveUp(config_.retry, failed_attempts, row.created_us, next)) {
    spdlog::warn("notifications: giving up {} to {} after {} attempt(s): {}", row.dedup_key,
                 row.receiver, failed_attempts, error);
    (void)queue_.markFailed(row.id, error);
    count(row.receiver, row.event, "failed");
    return;
  }
  spdlog::info("notifications: {} to {} failed (attempt {}), next in {} ms: {}", row.dedup_key,
               row.receiver, failed_attempts, (next - clock_.wallNow()) / 1000, error);
  (void)queue_.markRetry(row.id, next, error);
}

Result<std::size_t> Notifier::scanIncidents() {
  if (store_ == nullptr || drills_ == nullptr) return std::size_t{0};
  const auto now = clock_.wallNow();
  std::size_t queued = 0;
  for (const auto& cluster : clusters_) {
    storage::GapQuery q;
    q.cluster = cluster.id;
    q.min_duration_us = config_.incidents.min_stall_us;
    q.range = {now - config_.incidents.lookback_us, now + 1};
    q.limit = 10'000;
    auto gaps = store_->gaps(q);
    if (!gaps) return gaps.error();
    if (gaps->empty()) continue;
    const auto [first, last] = analysis::extentOf(*gaps);
    std::vector<analysis::MaintenanceSpan> planned;
    if (maintenance_ != nullptr) {
      auto windows =
          maintenance_->windows(cluster.id, std::min(first, now), std::max(last, now) + 1, 10'000);
      if (!windows) return windows.error();
      const bool held = std::any_of(windows->begin(), windows->end(),
                                    [now](const auto& w) { return w.activeAt(now); });
      if (held) continue;
      planned = analysis::spansOf(*windows);
    }
    auto spans = drills_->drillSpans(cluster.id, {first - kAfterDrillUs, last});
    if (!spans) return spans.error();
    std::vector<analysis::DrillWindow> windows;
    for (const auto& d : *spans)
      windows.push_back({d.from_us, d.to_us.value_or(now) + kAfterDrillUs});
    for (const auto& incident : analysis::incidentsOf(std::move(*gaps), windows, planned)) {
      auto n = notify(incidentEvent(cluster.name, incident));
      if (!n) return n.error();
      queued += *n;
    }
  }
  return queued;
}

void Notifier::run() {
  const bool scanning =
      store_ != nullptr && !clusters_.empty() &&
      std::any_of(config_.receivers.begin(), config_.receivers.end(), [](const auto& r) {
        return std::find(r.events.begin(), r.events.end(), kIncident) != r.events.end();
      });
  auto next_scan = clock_.monoNow();
  while (!worker_.stopRequested()) {
    {
      std::lock_guard lock(wake_mutex_);
      woken_ = false;
    }
    deliverDue();
    if (scanning && clock_.monoNow() >= next_scan) {
      if (auto n = scanIncidents(); !n)
        spdlog::error("notifications: incident scan failed: {}", n.error().describe());
      next_scan = clock_.monoNow() + config_.incidents.scan_interval_us;
    }
    std::int64_t wait_us = kMaxIdleUs;
    if (auto due = queue_.nextDue(); due && *due)
      wait_us = std::min(wait_us, **due - clock_.wallNow());
    if (scanning) wait_us = std::min(wait_us, next_scan - clock_.monoNow());
    // Never a busy loop, even when a row's state cannot be written.
    wait_us = std::max<std::int64_t>(wait_us, 10'000);
    std::unique_lock lock(wake_mutex_);
    worker_.waitUntil(lock, clock_.monoNow() + wait_us, [this] { return woken_; });
  }
}

NotificationMetrics Notifier::notificationMetrics() const {
  NotificationMetrics m;
  std::map<std::string, std::int64_t> queued;
  for (const auto& r : config_.receivers) queued[r.name] = 0;
  if (auto counts = queue_.counts(); counts) {
    for (const auto& c : *counts) {
      if (c.state == "queued" || c.state == "delivering") queued[c.receiver] += c.count;
    }
  }
  for (const auto& [name, n] : queued) m.queued.push_back({name, n});
  std::lock_guard lock(stats_mutex_);
  for (const auto& [key, n] : outcomes_)
    m.outcomes.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), n});
  for (const auto& [key, n] : attempts_) m.attempts.push_back({key.first, key.second, n});
  m.delivery_seconds_sum = delivery_seconds_sum_;
  m.delivery_seconds_count = delivery_seconds_count_;
  return m;
}

}  // namespace kfaild::notify
