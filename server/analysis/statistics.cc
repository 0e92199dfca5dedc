#include "server/analysis/statistics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace kfaild::analysis {
namespace {

using nlohmann::json;

std::optional<std::int64_t> intAt(const json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_number_integer()) {
    return std::nullopt;
  }
  return object[key].get<std::int64_t>();
}

std::optional<std::int64_t> stallOf(const json& partition, const char* kind) {
  if (!partition.contains(kind) || !partition[kind].is_object()) return std::nullopt;
  const auto& stall = partition[kind].value("stall", json());
  if (stall.is_object() && stall.value("open", false)) return std::nullopt;
  return intAt(stall, "duration_us");
}

std::string textAt(const json& object, const char* key) {
  return object.contains(key) && object[key].is_string() ? object[key].get<std::string>()
                                                         : std::string();
}

}  // namespace

std::optional<Distribution> distributionOf(std::vector<std::int64_t> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const auto rank = [&values](double q) {
    const auto n = static_cast<double>(values.size());
    const auto index = static_cast<std::size_t>(std::max(1.0, std::ceil(q * n))) - 1;
    return values[std::min(index, values.size() - 1)];
  };
  return Distribution{values.front(), rank(0.5), rank(0.95), values.back(), values.size()};
}

namespace {

using GroupKey =
    std::tuple<std::string, std::string, std::string, std::int32_t, std::string, std::string>;

// One profile's analysis of one run into its groups; whether any partition passed the filter.
// The verdict's regressions are the primary profile's.
bool addRun(const StoredDrill& drill, const json& run, const std::string& profile, bool primary,
            const json& analysis, const StatisticsFilter& filter,
            std::map<GroupKey, StatisticsGroup>& groups) {
  const auto& partitions = analysis.is_object() ? analysis.value("partitions", json()) : json();
  if (!partitions.is_array()) return false;
  bool used = false;
  for (const auto& p : partitions) {
    if (!p.is_object()) continue;
    const auto topic = textAt(p, "topic");
    const auto partition = static_cast<std::int32_t>(intAt(p, "partition").value_or(0));
    const auto role = textAt(p, "role");
    if (filter.topic && *filter.topic != topic) continue;
    if (filter.partition && *filter.partition != partition) continue;
    if (filter.role && *filter.role != role) continue;
    used = true;
    auto& g = groups[{drill.cluster, profile, topic, partition, role, drill.fault}];
    g.cluster = drill.cluster;
    g.profile = profile;
    g.topic = topic;
    g.partition = partition;
    g.role = role;
    g.fault = drill.fault;
    const auto ack = stallOf(p, "ack");
    const auto receive = stallOf(p, "receive");
    if (ack) g.ack.push_back(*ack);
    if (receive) g.receive.push_back(*receive);
    const json phases = p.value("phases", json::object());
    // A phase is never negative; results stored before that rule may say so (below their
    // resolution). One the fault time's uncertainty hides is no figure.
    const json& hidden = phases.contains("inconclusive") ? phases["inconclusive"] : json::object();
    const auto phase = [&](const char* name, std::vector<std::int64_t>& into) {
      const auto v = intAt(phases, (std::string(name) + "_us").c_str());
      if (v && !(hidden.is_object() && hidden.contains(name)))
        into.push_back(std::max<std::int64_t>(*v, 0));
    };
    phase("detection", g.detection);
    phase("election", g.election);
    phase("discovery", g.discovery);
    phase("resume", g.resume);
    const auto run_number = static_cast<std::int32_t>(intAt(run, "run").value_or(0));
    TrendPoint point{drill.id, run_number, intAt(run, "fault_us").value_or(drill.created_us), ack,
                     receive};
    const auto& verdict = drill.result.is_object() ? drill.result.value("verdict", json()) : json();
    const auto& regressions = verdict.is_object() ? verdict.value("regressions", json()) : json();
    if (primary && regressions.is_array()) {
      for (const auto& r : regressions) {
        if (!r.is_object() || intAt(r, "run") != run_number || textAt(r, "topic") != topic ||
            intAt(r, "partition") != partition) {
          continue;
        }
        (textAt(r, "kind") == "ack" ? point.ack_regressed : point.receive_regressed) = true;
      }
    }
    if (point.ack_regressed || point.receive_regressed) ++g.regressions;
    g.trend.push_back(point);
  }
  return used;
}

}  // namespace

Statistics statisticsOf(const std::vector<StoredDrill>& drills, const StatisticsFilter& filter) {
  std::map<GroupKey, StatisticsGroup> groups;
  Statistics out;
  for (const auto& drill : drills) {
    const auto& runs = drill.result.is_object() ? drill.result.value("runs", json()) : json();
    if (!runs.is_array()) continue;
    for (const auto& run : runs) {
      if (!run.is_object() || textAt(run, "state") != "done" || !run.contains("analysis")) continue;
      // The primary profile's view, then each other profile's (RunOutcome::profiles).
      bool used = addRun(drill, run, textAt(run, "profile"), true, run["analysis"], filter, groups);
      const auto& profiles = run.value("profiles", json());
      if (profiles.is_array()) {
        for (const auto& p : profiles) {
          if (!p.is_object() || !p.contains("analysis")) continue;
          used = addRun(drill, run, textAt(p, "profile"), false, p["analysis"], filter, groups) ||
                 used;
        }
      }
      if (used) ++out.runs_used;
    }
  }
  for (auto& [key, g] : groups) out.groups.push_back(std::move(g));
  return out;
}

}  // namespace kfaild::analysis
