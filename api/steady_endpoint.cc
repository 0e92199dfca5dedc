#include "api/steady_endpoint.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "api/query_params.h"
#include "api/resources.h"
#include "server/analysis/steady.h"
#include "server/common/event_types.h"
#include "server/common/time_format.h"

namespace kfaild::api {
namespace {

using nlohmann::json;

// More gaps or losses than this in one window are not read: the check has failed long before.
constexpr std::size_t kMaxRowsRead = 10'000;

std::optional<std::int64_t> ageUs(const std::optional<common::Instant>& last,
                                  common::MonoMicros now) {
  if (!last) return std::nullopt;
  return std::max<std::int64_t>(0, now - last->mono);
}

std::optional<std::string> metadataProblem(const observe::ObservedCluster& observed) {
  if (!observed.snapshot) {
    return observed.last_error.empty() ? "no metadata answer yet"
                                       : "no metadata answer yet: " + observed.last_error;
  }
  if (!observed.reachable) return "the last metadata poll failed: " + observed.last_error;
  return std::nullopt;
}

// The live half of the check's input: the probe now and the last metadata answer.
analysis::SteadyInput liveInput(const ClusterLive& cluster, common::Instant now,
                                std::int64_t window_us) {
  analysis::SteadyInput in;
  in.window_us = window_us;
  in.now_us = now.wall;
  const auto& probe = cluster.probe;
  in.probing = probe.phase == probe::ProbePhase::kProbing;
  in.probe_state = probe::toString(probe.phase);
  if (!probe.problem.empty()) in.probe_state += ": " + probe.problem;
  in.probing_for_us =
      static_cast<std::int64_t>(probe.ticks + probe.skipped_ticks) * probe.interval_us;
  in.metadata_problem = metadataProblem(cluster.observed);
  for (const auto& status : probe.partitions) {
    analysis::SteadyPartition p;
    p.topic = status.topic;
    p.partition = status.partition;
    p.ack_age_us = ageUs(status.last_ack, now.mono);
    p.receive_age_us = ageUs(status.last_receive, now.mono);
    if (const auto& snapshot = cluster.observed.snapshot) {
      if (const auto* topic = snapshot->topic(status.topic)) {
        for (const auto& info : topic->partitions) {
          if (info.partition != status.partition) continue;
          p.metadata = analysis::SteadyReplicas{info.leader, info.replicas, info.isr};
        }
      }
    }
    in.partitions.push_back(std::move(p));
  }
  return in;
}

json failureJson(const analysis::SteadyFailure& f) {
  const auto orNull = [](const auto& value) { return value ? json(*value) : json(nullptr); };
  return {
      {"check", analysis::toString(f.check)},
      {"topic", orNull(f.topic)},
      {"partition", orNull(f.partition)},
      {"observed", orNull(f.observed)},
      {"bound", orNull(f.bound)},
      {"objective", f.objective.empty() ? json(nullptr) : json(f.objective)},
      {"reason", f.reason},
  };
}

json resultJson(const std::string& cluster, const analysis::SteadyInput& in,
                const analysis::SteadyResult& result) {
  const auto& b = result.bounds;
  json failures = json::array();
  for (const auto& f : result.failures) failures.push_back(failureJson(f));
  return {
      {"cluster", cluster},
      {"steady", result.steady},
      {"window_s", in.window_us / 1'000'000},
      {"checked_at", common::formatRfc3339(in.now_us)},
      {"checked_at_us", in.now_us},
      {"partitions", in.partitions.size()},
      {"bounds",
       {{"max_ack_stall_s", b.max_ack_stall_s ? json(*b.max_ack_stall_s) : json(nullptr)},
        {"max_receive_stall_s",
         b.max_receive_stall_s ? json(*b.max_receive_stall_s) : json(nullptr)},
        {"max_lost", b.max_lost}}},
      {"failures", std::move(failures)},
  };
}

}  // namespace

SteadyEndpoint::SteadyEndpoint(const LiveClusters& live, const storage::Store& store,
                               const common::Clock& clock,
                               std::map<std::string, SteadySettings> settings)
    : live_(live), store_(store), clock_(clock), settings_(std::move(settings)) {}

void SteadyEndpoint::registerOn(Router& router) const {
  // Reasons may quote the metadata poller's error, which names hosts.
  router.add(
      "GET", "/api/v1/clusters/{cluster}/steady",
      [this](const Request& request) { return steady(request); },
      RouteOptions{RouteAccess::kDefault, true});
}

Response SteadyEndpoint::steady(const Request& request) const {
  auto live = findLiveCluster(request, live_, request.params.at("cluster"));
  if (auto* failure = std::get_if<Response>(&live)) return std::move(*failure);
  const auto* found = &std::get<ClusterLive>(live);
  auto query = QueryReader::create(request.query, {"window_s"});
  if (!query) return badRequest(request, query.error());
  auto window_s =
      query->integer("window_s", analysis::kSteadyMinWindowS, analysis::kSteadyMaxWindowS);
  if (!window_s) return badRequest(request, window_s.error());
  const std::int64_t window_us = window_s->value_or(analysis::kSteadyDefaultWindowS) * 1'000'000;

  const auto now = clock_.now();
  auto in = liveInput(*found, now, window_us);
  const auto configured = settings_.find(found->name);
  const auto settings = configured == settings_.end() ? SteadySettings{} : configured->second;
  in.objectives = settings.objectives;
  in.min_insync = settings.min_insync;
  const storage::TimeRange window{now.wall - window_us, now.wall + 1};
  const auto bounds = analysis::steadyBounds(in.objectives);
  if (bounds.max_ack_stall_s || bounds.max_receive_stall_s) {
    storage::GapQuery gaps;
    gaps.cluster = found->id;
    gaps.range = window;
    const double shortest =
        std::min(bounds.max_ack_stall_s.value_or(1e9), bounds.max_receive_stall_s.value_or(1e9));
    gaps.min_duration_us = static_cast<std::int64_t>(shortest * 1e6);
    gaps.limit = kMaxRowsRead;
    auto rows = store_.gaps(gaps);
    if (!rows) return storeFailure(request, rows.error());
    in.gaps = std::move(*rows);
  }
  storage::EventQuery lost;
  lost.cluster = found->id;
  lost.source = common::toString(common::EventSource::kProbe);
  lost.kind = "lost";
  lost.range = window;
  lost.limit = kMaxRowsRead;
  auto events = store_.events(lost);
  if (!events) return storeFailure(request, events.error());
  for (const auto& event : *events) {
    if (event.topic && event.partition) ++in.lost[{*event.topic, *event.partition}];
  }

  const auto result = analysis::checkSteady(in);
  return jsonResponse(result.steady ? 200 : 503, resultJson(found->name, in, result));
}

}  // namespace kfaild::api
