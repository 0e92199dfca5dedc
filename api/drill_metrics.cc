#include "api/drill_metrics.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <optional>

#include "server/common/event_types.h"

namespace kfaild::api {
namespace {

using nlohmann::json;

constexpr std::array<const char*, 4> kPhases = {"detection", "election", "discovery", "resume"};
constexpr std::array<const char*, 4> kFates = {"lost", "failed", "duplicated", "unresolved"};

struct PartitionKey {
  std::string topic;
  std::string partition;
  std::string role;
  auto operator<=>(const PartitionKey&) const = default;
};

// What one drill row says, typed; read once from its JSON.
struct LastDrill {
  std::string cluster;
  std::string fault;
  std::int64_t id = 0;
  std::optional<std::int64_t> finished_us;
  std::string verdict = "none";
  bool regressed = false;
  std::map<PartitionKey, double> ack_stall_s;
  std::map<PartitionKey, double> receive_stall_s;
  std::array<std::optional<double>, kPhases.size()> phase_s{};
  std::array<std::uint64_t, kFates.size()> fates{};
};

double seconds(std::int64_t micros) {
  return static_cast<double>(micros) / 1e6;
}

const json& member(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  const auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

// The stall of one kind (ack or receive) in seconds: its duration when the analysis found one, 0
// when it found none, nothing when it could not tell.
std::optional<double> stallSeconds(const json& kind) {
  const auto& text = member(kind, "outcome");
  const auto outcome =
      text.is_string() ? common::outcomeFromString(text.get<std::string>()) : std::nullopt;
  if (outcome == common::Outcome::kNone) return 0.0;
  if (outcome != common::Outcome::kStall) return std::nullopt;
  const auto& duration = member(member(kind, "stall"), "duration_us");
  if (!duration.is_number_integer()) return std::nullopt;
  return seconds(duration.get<std::int64_t>());
}

void keepMax(std::map<PartitionKey, double>& into, const PartitionKey& key,
             std::optional<double> value) {
  if (!value) return;
  const auto [it, inserted] = into.emplace(key, *value);
  if (!inserted) it->second = std::max(it->second, *value);
}

LastDrill readDrill(const storage::DrillRecord& row, std::string cluster) {
  LastDrill d;
  d.cluster = std::move(cluster);
  d.fault = row.fault;
  d.id = row.id;
  d.finished_us = row.finished_us;
  // A result that does not parse is reported as a drill without figures, not as a failed scrape.
  const auto result = json::parse(row.result, nullptr, false);
  if (result.is_discarded()) return d;

  const auto& verdict = member(result, "verdict");
  if (const auto& value = member(verdict, "verdict"); value.is_string()) {
    const auto text = value.get<std::string>();
    if (std::find(std::begin(kDrillVerdicts), std::end(kDrillVerdicts), text) !=
        std::end(kDrillVerdicts)) {
      d.verdict = text;
    }
  }
  const auto& regressions = member(verdict, "regressions");
  d.regressed = regressions.is_array() && !regressions.empty();

  const auto& runs = member(result, "runs");
  if (!runs.is_array()) return d;
  for (const auto& run : runs) {
    const auto& partitions = member(member(run, "analysis"), "partitions");
    if (!partitions.is_array()) continue;
    for (const auto& p : partitions) {
      const auto& topic = member(p, "topic");
      const auto& partition = member(p, "partition");
      const auto& role = member(p, "role");
      if (!topic.is_string() || !partition.is_number_integer() || !role.is_string()) continue;
      const PartitionKey key{topic.get<std::string>(),
                             std::to_string(partition.get<std::int64_t>()),
                             role.get<std::string>()};
      keepMax(d.ack_stall_s, key, stallSeconds(member(p, "ack")));
      keepMax(d.receive_stall_s, key, stallSeconds(member(p, "receive")));
      const auto& phases = member(p, "phases");
      for (std::size_t i = 0; i < kPhases.size(); ++i) {
        const auto& us = member(phases, (std::string(kPhases[i]) + "_us").c_str());
        if (!us.is_number_integer()) continue;
        const double s = seconds(us.get<std::int64_t>());
        d.phase_s[i] = d.phase_s[i] ? std::max(*d.phase_s[i], s) : s;
      }
      for (std::size_t i = 0; i < kFates.size(); ++i) {
        const auto& count = member(p, kFates[i]);
        if (count.is_number_integer() && count.get<std::int64_t>() > 0) {
          d.fates[i] += static_cast<std::uint64_t>(count.get<std::int64_t>());
        }
      }
    }
  }
  return d;
}

}  // namespace

void renderLastDrills(PrometheusText& out, const std::vector<storage::DrillRecord>& drills,
                      const std::vector<std::pair<storage::ClusterId, std::string>>& configured) {
  std::map<storage::ClusterId, std::string> names(configured.begin(), configured.end());
  std::vector<LastDrill> last;
  last.reserve(drills.size());
  for (const auto& row : drills) {
    const auto name = names.find(row.cluster);
    last.push_back(
        readDrill(row, name != names.end() ? name->second : std::to_string(row.cluster)));
  }

  out.family("kfaild_last_drill_verdict", "gauge",
             "1 for the verdict of the last analysed drill of the cluster and fault, 0 for the "
             "others; verdict=\"none\" when the drill carries no verdict.");
  for (const auto& d : last) {
    for (const char* verdict : kDrillVerdicts) {
      out.sample("kfaild_last_drill_verdict",
                 {{"cluster", d.cluster}, {"fault", d.fault}, {"verdict", verdict}},
                 std::int64_t{d.verdict == verdict ? 1 : 0});
    }
  }
  out.family("kfaild_last_drill_id", "gauge",
             "Id of the last analysed drill (GET /api/v1/drills/{id}).");
  for (const auto& d : last) {
    out.sample("kfaild_last_drill_id", {{"cluster", d.cluster}, {"fault", d.fault}}, d.id);
  }
  out.family("kfaild_last_drill_timestamp_seconds", "gauge",
             "When the last analysed drill of the cluster and fault finished (Unix time).");
  for (const auto& d : last) {
    if (!d.finished_us) continue;
    out.sample("kfaild_last_drill_timestamp_seconds", {{"cluster", d.cluster}, {"fault", d.fault}},
               seconds(*d.finished_us));
  }
  out.family("kfaild_drill_last_done_timestamp_seconds", "gauge",
             "When the cluster's last analysed drill (any fault) finished (Unix time); 0 when it "
             "never had one.");
  std::map<std::string, std::int64_t> last_done;
  for (const auto& [id, name] : configured) last_done[name] = 0;
  for (const auto& d : last) {
    auto& at = last_done[d.cluster];
    at = std::max(at, d.finished_us.value_or(0));
  }
  for (const auto& [cluster, at] : last_done) {
    out.sample("kfaild_drill_last_done_timestamp_seconds", {{"cluster", cluster}}, seconds(at));
  }
  out.family("kfaild_last_drill_regressed", "gauge",
             "1 when the last analysed drill flagged a regression against earlier drills, else 0.");
  for (const auto& d : last) {
    out.sample("kfaild_last_drill_regressed", {{"cluster", d.cluster}, {"fault", d.fault}},
               std::int64_t{d.regressed ? 1 : 0});
  }
  const auto stalls = [&out, &last](const char* name, const char* help,
                                    std::map<PartitionKey, double> LastDrill::* of) {
    out.family(name, "gauge", help);
    for (const auto& d : last) {
      for (const auto& [key, value] : d.*of) {
        out.sample(name,
                   {{"cluster", d.cluster},
                    {"fault", d.fault},
                    {"topic", key.topic},
                    {"partition", key.partition},
                    {"role", key.role}},
                   value);
      }
    }
  };
  stalls("kfaild_last_drill_ack_stall_seconds",
         "Ack stall of the partition in the last analysed drill (longest over its runs), by the "
         "partition's role for the target; 0 when no stall stood out, absent when inconclusive.",
         &LastDrill::ack_stall_s);
  stalls(
      "kfaild_last_drill_receive_stall_seconds",
      "Receive stall of the partition in the last analysed drill (longest over its runs), by "
      "the partition's role for the target; 0 when no stall stood out, absent when inconclusive.",
      &LastDrill::receive_stall_s);
  out.family("kfaild_last_drill_phase_seconds", "gauge",
             "Phases of the last analysed drill's stalls (detection: fault to fenced; election: to "
             "new leader; discovery: to the client's update; resume: to the first ack), longest "
             "over partitions and runs; absent when not observed.");
  for (const auto& d : last) {
    for (std::size_t i = 0; i < kPhases.size(); ++i) {
      if (!d.phase_s[i]) continue;
      out.sample("kfaild_last_drill_phase_seconds",
                 {{"cluster", d.cluster}, {"fault", d.fault}, {"phase", kPhases[i]}},
                 *d.phase_s[i]);
    }
  }
  out.family("kfaild_last_drill_messages", "gauge",
             "Probe messages of the last analysed drill's windows by fate (lost, failed, "
             "duplicated, unresolved), summed over partitions and runs.");
  for (const auto& d : last) {
    for (std::size_t i = 0; i < kFates.size(); ++i) {
      out.sample("kfaild_last_drill_messages",
                 {{"cluster", d.cluster}, {"fault", d.fault}, {"fate", kFates[i]}}, d.fates[i]);
    }
  }
}

}  // namespace kfaild::api
