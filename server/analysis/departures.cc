#include "server/analysis/departures.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "server/analysis/drill_analysis.h"

namespace kfaild::analysis {

using common::EventKind;
using common::EventSource;

const char* toString(DepartureKind kind) {
  switch (kind) {
    case DepartureKind::kFenced:
      return "fenced";
    case DepartureKind::kControlledShutdown:
      return "controlled_shutdown";
    case DepartureKind::kUnregistered:
      return "unregistered";
    case DepartureKind::kLeaderLost:
      return "leader_lost";
  }
  return "unknown";
}

namespace {

// A sign this long after a departure's first, beyond that sign's resolution, is not how the
// broker left.
constexpr std::int64_t kLateSignUs = 1'000'000;

// How telling a sign is: a log line names the way the broker left, the metadata only that it did.
int rankOf(DepartureKind kind) {
  switch (kind) {
    case DepartureKind::kFenced:
    case DepartureKind::kControlledShutdown:
      return 2;
    case DepartureKind::kUnregistered:
      return 1;
    case DepartureKind::kLeaderLost:
      return 0;
  }
  return 0;
}

nlohmann::json detailOf(const storage::Event& e) {
  auto detail = nlohmann::json::parse(e.detail, nullptr, false);
  return detail.is_object() ? detail : nlohmann::json::object();
}

// The sign `e` is of a departure, and of which broker; nullopt when it is none.
struct Sign {
  std::int32_t broker = -1;
  DepartureKind kind = DepartureKind::kUnregistered;
  std::int64_t resolution_us = 0;
};

std::int64_t metadataResolution(const storage::Event& e, const nlohmann::json& detail,
                                const DepartureRules& rules) {
  const auto since = detail.value("since_us", std::int64_t{0});
  return since > 0 && since < e.t_us ? e.t_us - since : rules.metadata_interval_us;
}

std::optional<Sign> signOf(const storage::Event& e, const DepartureRules& rules) {
  const auto source = common::eventSourceFromString(e.source);
  const auto kind = common::eventKindFromString(e.kind);
  if (source == EventSource::kBrokerLog && e.broker &&
      (kind == EventKind::kFenced || kind == EventKind::kControlledShutdown)) {
    return Sign{
        *e.broker,
        kind == EventKind::kFenced ? DepartureKind::kFenced : DepartureKind::kControlledShutdown,
        logResolutionUs(e)};
  }
  if (source != EventSource::kMetadata) return std::nullopt;
  const auto detail = detailOf(e);
  if (kind == EventKind::kBrokerGone && e.broker) {
    return Sign{*e.broker, DepartureKind::kUnregistered, metadataResolution(e, detail, rules)};
  }
  if (kind != EventKind::kLeaderChange || !e.topic || !e.partition) return std::nullopt;
  const auto preferred =
      rules.preferred_leaders.find(*e.topic + "-" + std::to_string(*e.partition));
  if (preferred == rules.preferred_leaders.end()) return std::nullopt;  // not a probe partition
  const auto from = detail.value("from", -1);
  const auto to = detail.value("to", -1);
  if (from < 0 || from == to || to == preferred->second) return std::nullopt;
  return Sign{from, DepartureKind::kLeaderLost, metadataResolution(e, detail, rules)};
}

}  // namespace

std::vector<DepartureFound> findDepartures(const std::vector<storage::Event>& events,
                                           const DepartureRules& rules) {
  std::vector<const storage::Event*> ordered;
  for (const auto& e : events) {
    if (e.t_us >= rules.from_us && e.t_us <= rules.to_us) ordered.push_back(&e);
  }
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto* a, const auto* b) { return a->t_us < b->t_us; });
  std::vector<DepartureFound> found;
  std::map<std::int32_t, std::size_t> open;  // broker → its departure in `found`
  const auto counts = [&rules](std::int32_t broker) {
    return rules.brokers.empty() || rules.brokers.count(broker) > 0;
  };
  for (const auto* e : ordered) {
    if (common::eventSourceFromString(e->source) == EventSource::kMetadata &&
        common::eventKindFromString(e->kind) == EventKind::kBrokerBack && e->broker) {
      if (const auto it = open.find(*e->broker); it != open.end()) {
        found[it->second].back_at_us = e->t_us;
        open.erase(it);
      }
      continue;
    }
    const auto sign = signOf(*e, rules);
    if (!sign || !counts(sign->broker)) continue;
    if (const auto it = open.find(sign->broker); it != open.end()) {
      auto& d = found[it->second];
      // A log line well after the broker had gone names nothing: the controller fences a broker
      // that shut down at once (leading nothing) a session timeout later, for its bookkeeping.
      const bool late = e->t_us > d.at_us + d.resolution_us + kLateSignUs;
      if (rankOf(sign->kind) > rankOf(d.kind) && !late) {
        d.kind = sign->kind;
        d.kind_at_us = e->t_us;
        d.kind_resolution_us = sign->resolution_us;
      }
      continue;
    }
    DepartureFound d;
    d.broker = sign->broker;
    d.kind = sign->kind;
    d.at_us = e->t_us;
    d.resolution_us = sign->resolution_us;
    d.kind_at_us = e->t_us;
    d.kind_resolution_us = sign->resolution_us;
    d.source = common::eventSourceFromString(e->source);
    d.event = common::eventKindFromString(e->kind);
    if (sign->kind == DepartureKind::kLeaderLost) {
      d.topic = e->topic;
      d.partition = e->partition;
    }
    open[sign->broker] = found.size();
    found.push_back(std::move(d));
  }
  return found;
}

}  // namespace kfaild::analysis
