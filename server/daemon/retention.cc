#include "server/daemon/retention.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>
#include <vector>

namespace kfaild::daemon {
namespace {

constexpr std::int64_t kForeverUs = std::numeric_limits<std::int64_t>::max();
// Under the size bound, a pass deletes down to this share of it, so that the writes of the next
// interval fit in the pages it freed instead of growing the file.
constexpr double kLowWater = 0.9;
// Each step of the size bound moves its cutoff at least this far, and takes at most this many
// steps per kind; a step re-measures, so an estimate that freed too little is corrected.
constexpr std::int64_t kMinStepUs = 1'000'000;
constexpr int kMaxSteps = 64;

}  // namespace

// One pass: the steps in order, each logged and counted when it fails. Lives on the thread that
// runs the pass.
class RetentionTask::Pass {
 public:
  Pass(RetentionTask& task, std::int64_t now_us)
      : task_(task), policy_(task.policy_), now_us_(now_us) {}

  RetentionPass run() {
    readDrillWindows();
    if (windows_ && policy_.samples_us) pruneSamples(now_us_ - *policy_.samples_us, false);
    if (windows_ && policy_.drill_samples_us)
      pruneSamples(now_us_ - *policy_.drill_samples_us, true);
    if (policy_.gaps_us) pruneGaps(now_us_ - *policy_.gaps_us);
    if (policy_.events_us) pruneEvents(now_us_ - *policy_.events_us);
    if (task_.audit_ != nullptr) holdAudit();
    if (policy_.max_bytes) holdMaxBytes(*policy_.max_bytes);
    return out_;
  }

  std::uint64_t failures() const { return failures_; }

 private:
  bool stopping() const { return task_.worker_.stopRequested(); }

  void failed(const std::string& what, const Error& error) {
    ++failures_;
    out_.ok = false;
    spdlog::warn("storage: retention could not {}: {}", what, error.describe());
  }

  // Without the drill windows, no sample is deleted: a raw-sample prune would take the drills'
  // samples with it.
  void readDrillWindows() {
    auto spans = task_.drills_.drillSpans(std::nullopt,
                                          {std::numeric_limits<std::int64_t>::min(), kForeverUs});
    if (!spans)
      return failed("read the drill windows (no sample is pruned this pass)", spans.error());
    std::vector<storage::TimeRange> windows;
    windows.reserve(spans->size());
    const auto margin = policy_.drill_margin_us;
    for (const auto& span : *spans) {
      windows.push_back({span.from_us - margin, span.to_us.value_or(now_us_) + margin});
    }
    windows_ = std::move(windows);
  }

  // Calls `call(rows)` until it deletes fewer than `rows` or the task stops; adds to `total`.
  // False when a call failed.
  template <typename Call>
  bool drain(const std::string& what, std::int64_t& total, Call call) {
    const auto rows = policy_.rows_per_call;
    while (!stopping()) {
      auto deleted = call(rows);
      if (!deleted) {
        failed("prune " + what, deleted.error());
        return false;
      }
      total += *deleted;
      if (*deleted < rows) break;
    }
    return true;
  }

  bool pruneSamples(std::int64_t before_us, bool inside_windows) {
    return drain(inside_windows ? "drill-window samples" : "raw samples",
                 inside_windows ? out_.drill_samples : out_.samples, [&](std::int64_t rows) {
                   return task_.store_.pruneSamples({.before_us = before_us,
                                                     .drill_windows = *windows_,
                                                     .inside_windows = inside_windows,
                                                     .max_rows = rows});
                 });
  }
  bool pruneGaps(std::int64_t before_us) {
    return drain("gaps", out_.gaps,
                 [&](std::int64_t rows) { return task_.store_.pruneGaps(before_us, rows); });
  }
  bool pruneEvents(std::int64_t before_us) {
    return drain("events", out_.events,
                 [&](std::int64_t rows) { return task_.store_.pruneEvents(before_us, rows); });
  }

  // Its own retention, then its own budget: before any measurement data is looked at.
  void holdAudit() {
    auto& audit = *task_.audit_;
    if (policy_.audit_us) {
      drain("audit records", out_.audit,
            [&](std::int64_t rows) { return audit.prune(now_us_ - *policy_.audit_us, rows); });
    }
    auto bytes = audit.bytes();
    if (!bytes) return failed("measure the audit log", bytes.error());
    const auto budget = policy_.auditBudget();
    if (*bytes <= budget) return;
    const auto target = static_cast<std::int64_t>(static_cast<double>(budget) * kLowWater);
    std::int64_t deleted = 0;
    auto left = bytes;
    // pruneOldest estimates from an average row; a step re-measures.
    for (int step = 0; step < kMaxSteps && *left > target && !stopping(); ++step) {
      auto step_deleted = audit.pruneOldest(target);
      if (!step_deleted) return failed("hold the audit log to its budget", step_deleted.error());
      left = audit.bytes();
      if (!left) return failed("measure the audit log", left.error());
      deleted += *step_deleted;
      if (*step_deleted == 0) break;
    }
    out_.audit += deleted;
    spdlog::info(
        "storage: the audit log took {} bytes, over its budget of {}; deleted its {} oldest "
        "refusals",
        *bytes, budget, deleted);
    // Accepted changes go by retention only: a budget they fill alone is a failure to see.
    if (*left > budget && !stopping()) {
      ++failures_;
      out_.ok = false;
      spdlog::warn(
          "storage: the audit log's accepted changes alone take {} bytes, over "
          "storage.audit_max_bytes={}; "
          "they are kept for storage.retention.audit_hours",
          *left, budget);
    }
  }

  std::optional<storage::DatabaseSize> measure() {
    auto size = task_.store_.databaseSize();
    if (!size) {
      failed("measure the database", size.error());
      return std::nullopt;
    }
    return *size;
  }

  enum class Kind { kRawSamples, kDrillSamples, kGapsAndEvents };

  // Oldest first within a kind: the cutoff starts at the kind's oldest record and moves towards
  // its newest by the share of the used size that is over the target (records come at a roughly
  // steady rate, so a share of the time span is about that share of the rows), at most half of
  // what is left per step, re-measuring after every step: a span with a hole in it (kfaild was
  // down for days) or a kind that is a small part of the database costs steps, never more
  // records than needed. False when a step failed.
  bool shrinkKind(Kind kind, std::int64_t target, storage::DatabaseSize& size) {
    auto spans = task_.store_.recordSpans();
    if (!spans) {
      failed("find the oldest records", spans.error());
      return false;
    }
    std::optional<storage::TimeSpan> span = spans->samples;
    if (kind == Kind::kGapsAndEvents) {
      span = spans->gaps;
      if (spans->events) {
        span = span ? storage::TimeSpan{std::min(span->oldest_us, spans->events->oldest_us),
                                        std::max(span->newest_us, spans->events->newest_us)}
                    : spans->events;
      }
    }
    if (!span) return true;
    std::int64_t cutoff = span->oldest_us;
    for (int step = 0; step < kMaxSteps && size.usedBytes() > target && !stopping(); ++step) {
      const auto used = static_cast<double>(size.usedBytes());
      const double share = std::min(0.5, (used - static_cast<double>(target)) / used);
      const auto left = span->newest_us - cutoff;
      const auto advance = std::max<std::int64_t>(
          kMinStepUs, static_cast<std::int64_t>(static_cast<double>(left) * share));
      cutoff = advance >= left ? kForeverUs : cutoff + advance;
      bool done = true;
      switch (kind) {
        case Kind::kRawSamples:
          done = pruneSamples(cutoff, false);
          break;
        case Kind::kDrillSamples:
          done = pruneSamples(cutoff, true);
          break;
        case Kind::kGapsAndEvents:
          done = pruneGaps(cutoff) && pruneEvents(cutoff);
          break;
      }
      if (!done) return false;
      auto measured = measure();
      if (!measured) return false;
      size = *measured;
      if (cutoff == kForeverUs) break;
    }
    return true;
  }

  void holdMaxBytes(std::int64_t max_bytes) {
    auto size = measure();
    if (!size) return;
    if (size->usedBytes() > max_bytes) {
      const auto target = static_cast<std::int64_t>(static_cast<double>(max_bytes) * kLowWater);
      spdlog::info(
          "storage: {} bytes in use, over storage.max_bytes={}; pruning the oldest records down to "
          "{}",
          size->usedBytes(), max_bytes, target);
      for (const auto kind : {Kind::kRawSamples, Kind::kDrillSamples, Kind::kGapsAndEvents}) {
        if (size->usedBytes() <= target || stopping()) break;
        if (kind != Kind::kGapsAndEvents && !windows_) continue;
        if (!shrinkKind(kind, target, *size)) return;
      }
      if (size->usedBytes() > max_bytes && !stopping()) {
        ++failures_;
        out_.ok = false;
        spdlog::warn(
            "storage: retention cannot hold storage.max_bytes={}: {} bytes are still in use with "
            "no sample, "
            "gap or event left to prune (drills, clusters and the recovery journal are never "
            "pruned)",
            max_bytes, size->usedBytes());
      }
    }
    // The file outgrew the bound (it was lowered, or a burst came between two passes): give the
    // free pages beyond it back. In steady state the file stays at the bound and the freed pages
    // are reused, so nothing is moved.
    if (size->incremental_vacuum && size->fileBytes() > max_bytes && !stopping()) {
      const auto excess = (size->fileBytes() - max_bytes + size->page_size - 1) / size->page_size;
      const auto pages = std::min(excess, size->free_pages);
      if (pages <= 0) return;
      auto released = task_.store_.releaseFreePages(pages);
      if (!released) return failed("give free pages back to the file system", released.error());
      spdlog::info("storage: gave {} free pages ({} bytes) back to the file system", *released,
                   *released * size->page_size);
    }
  }

  RetentionTask& task_;
  const RetentionPolicy& policy_;
  const std::int64_t now_us_;
  std::optional<std::vector<storage::TimeRange>> windows_;
  RetentionPass out_;
  std::uint64_t failures_ = 0;
};

RetentionTask::RetentionTask(storage::Store& store, const storage::DrillStore& drills,
                             storage::AuditLog* audit, const common::Clock& clock,
                             RetentionPolicy policy)
    : store_(store),
      drills_(drills),
      audit_(audit),
      clock_(clock),
      policy_(policy),
      worker_(clock) {
  report_.max_bytes = policy_.max_bytes;
}

void RetentionTask::start() {
  worker_.start("kfaild:retain", [this] {
    // On a schedule from start, not from the end of the last pass; a pass that overran its
    // interval is followed by the next slot, not by a burst of passes.
    auto next = clock_.monoNow();
    while (!worker_.stopRequested()) {
      prune();
      const auto now = clock_.monoNow();
      while (next <= now) next += policy_.interval_us;
      if (!worker_.sleepFor(std::chrono::microseconds(next - now))) return;
    }
  });
}

RetentionPass RetentionTask::prune() {
  std::lock_guard pass_lock(pass_mutex_);
  const auto started = clock_.now();
  Pass pass(*this, started.wall);
  const auto out = pass.run();
  const auto deleted = out.samples + out.drill_samples + out.gaps + out.events + out.audit;
  if (deleted > 0) {
    const auto seconds = static_cast<double>(clock_.monoNow() - started.mono) / 1e6;
    spdlog::info(
        "storage: retention deleted {} raw samples, {} drill-window samples, {} gaps, {} events, "
        "{} audit "
        "records in {:.1f} s",
        out.samples, out.drill_samples, out.gaps, out.events, out.audit, seconds);
  }
  std::lock_guard report_lock(report_mutex_);
  report_.pruned_samples += static_cast<std::uint64_t>(out.samples);
  report_.pruned_drill_samples += static_cast<std::uint64_t>(out.drill_samples);
  report_.pruned_gaps += static_cast<std::uint64_t>(out.gaps);
  report_.pruned_events += static_cast<std::uint64_t>(out.events);
  report_.failures += pass.failures();
  ++report_.passes;
  // A pass cut short by stop() did not finish its work.
  if (out.ok && !worker_.stopRequested()) report_.last_success_us = clock_.wallNow();
  return out;
}

storage::RetentionReport RetentionTask::retentionReport() const {
  std::lock_guard lock(report_mutex_);
  return report_;
}

}  // namespace kfaild::daemon
