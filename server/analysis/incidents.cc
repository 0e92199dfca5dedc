#include "server/analysis/incidents.h"

#include <algorithm>

namespace kfaild::analysis {

std::vector<Incident> incidentsOf(std::vector<storage::Gap> gaps, const std::vector<DrillWindow>& drills) {
  const auto inDrill = [&drills](const storage::Gap& g) {
    return std::any_of(drills.begin(), drills.end(),
                       [&g](const DrillWindow& w) { return g.start_us < w.to_us && g.end_us > w.from_us; });
  };
  gaps.erase(std::remove_if(gaps.begin(), gaps.end(), inDrill), gaps.end());
  std::stable_sort(gaps.begin(), gaps.end(),
                   [](const storage::Gap& a, const storage::Gap& b) { return a.start_us < b.start_us; });
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
