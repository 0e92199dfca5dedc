#include "server/analysis/incidents.h"

#include <algorithm>

namespace kfaild::analysis {

storage::TimeRange extentOf(const std::vector<storage::Gap>& gaps) {
  storage::TimeRange out{gaps.front().start_us, gaps.front().end_us};
  for (const auto& g : gaps) {
    out.from_us = std::min(out.from_us, g.start_us);
    out.to_us = std::max(out.to_us, g.end_us);
  }
  return out;
}

std::vector<MaintenanceSpan> spansOf(const std::vector<storage::MaintenanceWindowRecord>& windows) {
  std::vector<MaintenanceSpan> out;
  out.reserve(windows.size());
  for (const auto& w : windows) out.push_back({w.id, w.started_us, w.endUs()});
  return out;
}

std::optional<std::int64_t> plannedBy(const storage::Gap& gap,
                                      const std::vector<MaintenanceSpan>& windows) {
  for (const auto& w : windows) {
    if (gap.start_us < w.to_us && gap.end_us > w.from_us) return w.id;
  }
  return std::nullopt;
}

std::vector<Incident> incidentsOf(std::vector<storage::Gap> gaps,
                                  const std::vector<DrillWindow>& drills,
                                  const std::vector<MaintenanceSpan>& maintenance) {
  const auto excluded = [&drills, &maintenance](const storage::Gap& g) {
    return plannedBy(g, maintenance).has_value() ||
           std::any_of(drills.begin(), drills.end(), [&g](const DrillWindow& w) {
             return g.start_us < w.to_us && g.end_us > w.from_us;
           });
  };
  gaps.erase(std::remove_if(gaps.begin(), gaps.end(), excluded), gaps.end());
  std::stable_sort(gaps.begin(), gaps.end(), [](const storage::Gap& a, const storage::Gap& b) {
    return a.start_us < b.start_us;
  });
  std::vector<Incident> merged;
  for (auto& g : gaps) {
    if (!merged.empty() && g.start_us <= merged.back().end_us) {
      merged.back().end_us = std::max(merged.back().end_us, g.end_us);
      merged.back().gaps.push_back(std::move(g));
    } else {
      const auto start = g.start_us, end = g.end_us;
      merged.push_back({start, end, {std::move(g)}});
    }
  }
  return merged;
}

}  // namespace kfaild::analysis
