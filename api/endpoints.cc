#include "api/endpoints.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "api/durations.h"
#include "api/errc.h"
#include "api/query_params.h"
#include "api/resources.h"
#include "server/analysis/incidents.h"
#include "server/common/json_text.h"
#include "server/common/sensitive.h"
#include "server/common/time_format.h"

namespace kfaild::api {
namespace {

using nlohmann::json;

constexpr std::int64_t kMaxPartition = std::numeric_limits<std::int32_t>::max();

json brokerIdOrNull(std::int32_t id) {
  return id < 0 ? json(nullptr) : json(id);
}

// The KRaft quorum as last described; null when it is unknown. Replica times are the active
// controller's wall clock (it reports milliseconds), -1 from Kafka becomes null.
json quorumJson(const observe::ObservedCluster& observed) {
  if (!observed.quorum) return nullptr;
  const auto& quorum = *observed.quorum;
  auto replicas = [&quorum](const std::vector<kafka::QuorumReplica>& list) {
    json out = json::array();
    for (const auto& r : list) {
      const auto lag = quorum.lagOf(r);
      out.push_back({
          {"id", r.replica_id},
          {"log_end_offset", r.log_end_offset < 0 ? json() : json(r.log_end_offset)},
          {"lag", lag ? json(*lag) : json()},
          {"last_caught_up_at_us",
           r.last_caught_up_timestamp_ms < 0 ? json() : json(r.last_caught_up_timestamp_ms * 1000)},
      });
    }
    return out;
  };
  json out = json::object();
  out["leader_id"] = brokerIdOrNull(quorum.leader_id);
  out["leader_epoch"] = quorum.leader_epoch;
  out["high_watermark"] = quorum.high_watermark;
  out["voters"] = replicas(quorum.voters);
  out["observers"] = replicas(quorum.observers);
  out["described_at_us"] = observed.quorum_at;
  return out;
}

json textOrNull(const std::string& text) {
  return text.empty() ? json(nullptr) : json(text);
}

json optionalSeconds(std::optional<double> value) {
  return value ? json(*value) : json(nullptr);
}

std::string runId(std::uint64_t id) {
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016" PRIx64, id);
  return buffer;
}

json brokerIds(const observe::ObservedCluster& observed) {
  json ids = json::array();
  if (observed.snapshot) {
    for (const auto& broker : observed.snapshot->brokers) ids.push_back(broker.id);
  }
  return ids;
}

json probeOfPartition(const probe::PartitionStatus& p, common::MonoMicros now) {
  const auto& c = p.counters;
  return {
      {"sent", c.sent},
      {"acked", c.acked},
      {"received", c.received},
      {"send_failed", c.send_failed},
      {"lost", c.lost},
      {"duplicated", c.duplicated},
      {"reordered", c.reordered},
      {"late", c.late},
      {"gaps", c.gaps},
      {"in_flight", p.in_flight},
      {"outstanding", p.outstanding},
      {"oldest_outstanding_age_seconds",
       optionalSeconds(ageSeconds(p.oldest_outstanding_sent, now))},
      {"held_ticks", c.held_ticks},
      {"holding_since_us",
       intOrNull(p.holding_since ? std::optional(p.holding_since->wall) : std::nullopt)},
      {"last_ack", timeOrNull(p.last_ack ? std::optional(p.last_ack->wall) : std::nullopt)},
      {"last_ack_us", intOrNull(p.last_ack ? std::optional(p.last_ack->wall) : std::nullopt)},
      {"current_ack_gap_seconds", optionalSeconds(ageSeconds(p.last_ack, now))},
      {"longest_ack_gap_seconds", seconds(p.longest_ack_gap_us)},
      {"last_receive",
       timeOrNull(p.last_receive ? std::optional(p.last_receive->wall) : std::nullopt)},
      {"last_receive_us",
       intOrNull(p.last_receive ? std::optional(p.last_receive->wall) : std::nullopt)},
      {"current_receive_gap_seconds", optionalSeconds(ageSeconds(p.last_receive, now))},
      {"longest_receive_gap_seconds", seconds(p.longest_receive_gap_us)},
  };
}

json operationsJson(const probe::OperationStatus& c, common::MonoMicros now) {
  return {
      {"interval_us", c.interval_us},
      {"operations", c.ops},
      {"failures", c.failures},
      {"gaps", c.gaps},
      {"last_ok_us", intOrNull(c.last_ok ? std::optional(c.last_ok->wall) : std::nullopt)},
      {"current_gap_seconds", optionalSeconds(ageSeconds(c.last_ok, now))},
      {"failing_since_us",
       intOrNull(c.failing_since ? std::optional(c.failing_since->wall) : std::nullopt)},
      {"last_latency_seconds", c.last_ok ? json(seconds(c.last_latency_us)) : json(nullptr)},
      {"longest_gap_seconds", seconds(c.longest_gap_us)},
      {"last_error", textOrNull(c.last_error)},
  };
}

json coordinatorJson(const std::optional<probe::CoordinatorSeen>& seen) {
  if (!seen) return nullptr;
  return {{"node", seen->node},
          {"partition", seen->partition.empty() ? json(nullptr) : json(seen->partition)},
          {"since_us", seen->since_us},
          {"last_answer_us", seen->last_us}};
}

json coordinatorsJson(const std::optional<probe::CoordinatorStatus>& coordinators,
                      common::MonoMicros now) {
  if (!coordinators) return nullptr;
  const auto& c = *coordinators;
  return {
      {"group", c.group},
      {"commits", c.commits ? operationsJson(*c.commits, now) : json(nullptr)},
      {"group_coordinator", coordinatorJson(c.group_coordinator)},
      {"transactional_id", textOrNull(c.transactional_id)},
      {"transactions", c.transactions ? operationsJson(*c.transactions, now) : json(nullptr)},
      {"transaction_coordinator", coordinatorJson(c.transaction_coordinator)},
      {"watch_error", textOrNull(c.watch_error)},
      {"moves", c.moves},
  };
}

json controlPlaneJson(const std::optional<probe::ControlStatus>& control, common::MonoMicros now) {
  if (!control) return nullptr;
  const auto& c = *control;
  json quorum = nullptr;
  if (c.quorum) {
    quorum = {{"leader_id", c.quorum->leader},
              {"leader_epoch", c.quorum->epoch},
              {"leader_since_us", c.quorum->first_us},
              {"last_answer_us", c.quorum->last_us},
              {"answered_by", c.quorum->answered_by}};
  }
  auto out = operationsJson(c, now);
  out["quorum"] = std::move(quorum);
  out["quorum_error"] = textOrNull(c.quorum_error);
  out["leader_changes"] = c.leader_changes;
  out["requests_via"] = brokerIdOrNull(c.requests_via);
  return out;
}

json partitionJson(std::int32_t partition, const kafka::PartitionInfo* info,
                   const probe::PartitionStatus* status, common::MonoMicros now) {
  return {
      {"partition", partition},
      {"leader", info ? brokerIdOrNull(info->leader) : json(nullptr)},
      {"replicas", info ? json(info->replicas) : json::array()},
      {"isr", info ? json(info->isr) : json::array()},
      {"error", info ? textOrNull(info->error) : json(nullptr)},
      {"probe", status ? probeOfPartition(*status, now) : json(nullptr)},
  };
}

// Each client profile's probe, the primary first, with its partitions (as `probe` of each
// partition in topics); empty without probe.profiles.
json profilesJson(const ClusterLive& cluster, common::MonoMicros now) {
  json out = json::array();
  for (const auto& p : cluster.profiles) {
    json partitions = json::array();
    for (const auto& status : p.probe.partitions) {
      partitions.push_back({{"topic", status.topic},
                            {"partition", status.partition},
                            {"probe", probeOfPartition(status, now)}});
    }
    out.push_back({{"profile", p.name},
                   {"client", p.client},
                   {"phase", probe::toString(p.probe.phase)},
                   {"problem", textOrNull(p.probe.problem)},
                   {"run_id", runId(p.probe.run_id)},
                   {"ticks", p.probe.ticks},
                   {"held_ticks", p.probe.held_ticks},
                   {"client_settings", p.probe.client_settings},
                   {"partitions", std::move(partitions)}});
  }
  return out;
}

// The snapshot's topics and partitions, joined with the probe's partitions; partitions the
// probe knows but the last metadata answer lacks still appear, without replicas.
json topicsJson(const ClusterLive& cluster, common::MonoMicros now) {
  json topics = json::array();
  std::set<std::pair<std::string, std::int32_t>> shown;
  const auto findStatus = [&cluster](const std::string& topic, std::int32_t partition) {
    for (const auto& status : cluster.probe.partitions) {
      if (status.topic == topic && status.partition == partition) return &status;
    }
    return static_cast<const probe::PartitionStatus*>(nullptr);
  };
  std::vector<std::string> order;
  std::map<std::string, json> by_topic;
  if (cluster.observed.snapshot) {
    for (const auto& topic : cluster.observed.snapshot->topics) {
      json partitions = json::array();
      for (const auto& info : topic.partitions) {
        partitions.push_back(
            partitionJson(info.partition, &info, findStatus(topic.name, info.partition), now));
        shown.emplace(topic.name, info.partition);
      }
      if (!by_topic.contains(topic.name)) order.push_back(topic.name);
      by_topic[topic.name] = {
          {"name", topic.name}, {"error", textOrNull(topic.error)}, {"partitions", partitions}};
    }
  }
  for (const auto& status : cluster.probe.partitions) {
    if (shown.contains({status.topic, status.partition})) continue;
    if (!by_topic.contains(status.topic)) {
      order.push_back(status.topic);
      by_topic[status.topic] = {
          {"name", status.topic}, {"error", nullptr}, {"partitions", json::array()}};
    }
    by_topic[status.topic]["partitions"].push_back(
        partitionJson(status.partition, nullptr, &status, now));
    shown.emplace(status.topic, status.partition);
  }
  for (const auto& name : order) topics.push_back(std::move(by_topic[name]));
  return topics;
}

json sampleJson(const storage::ProbeSample& sample) {
  const auto latency = [&sample](std::optional<std::int64_t> at) {
    return at ? json(*at - sample.send_us) : json(nullptr);
  };
  return {
      {"seq", sample.seq},
      {"send", common::formatRfc3339(sample.send_us)},
      {"send_us", sample.send_us},
      {"ack", timeOrNull(sample.ack_us)},
      {"ack_us", intOrNull(sample.ack_us)},
      {"ack_error", sample.ack_error},
      {"ack_latency_us", latency(sample.ack_us)},
      {"offset", intOrNull(sample.offset)},
      {"receive", timeOrNull(sample.receive_us)},
      {"receive_us", intOrNull(sample.receive_us)},
      {"receive_latency_us", latency(sample.receive_us)},
  };
}

// A list with the range it covers, in ascending order of `keyOf` (a time the range selects on),
// at most `limit` rows and kMaxResponseBytes. The store is asked for one row more than `limit`,
// so `truncated` says for certain whether rows were left out; `next` is then the target of the
// rest: the same query from the first row left out. The rows with that row's key are left out
// of this page too (when others remain), so `next` repeats none and skips none.
// Each row is serialised on its own: the answer is never held as a JSON tree.
template <typename Row, typename ToJson, typename KeyOf>
Response listResponse(const Request& request, std::vector<Row> rows, std::size_t limit,
                      const storage::TimeRange& range, ToJson&& toJson, KeyOf&& keyOf) {
  constexpr std::size_t kEnvelopeBytes = 4096;  // count, truncated, next, from, to
  std::string items = "[";
  std::size_t count = 0;
  std::vector<std::size_t> ends;  // where each row's text ends in `items`
  while (count < rows.size() && count < limit) {
    std::string item = jsonBody(toJson(rows[count]));
    if (items.size() + item.size() + 2 + kEnvelopeBytes > kMaxResponseBytes) break;
    if (count > 0) items += ',';
    items += item;
    ends.push_back(items.size());
    ++count;
  }
  const bool truncated = count < rows.size();
  std::optional<std::int64_t> next_from;
  if (truncated && count == 0) {
    // One row alone over the cap: it is skipped, not sent, or `next` would ask for it forever.
    next_from = keyOf(rows[0]) + 1;
  } else if (truncated) {
    next_from = keyOf(rows[count]);
    while (count > 1 && keyOf(rows[count - 1]) == *next_from) --count;
    items.resize(ends[count - 1]);
  }
  items += ']';
  json next = nullptr;
  if (next_from) {
    std::string target = request.path +
                         "?from=" + percentEncode(common::formatRfc3339(*next_from)) +
                         "&to=" + percentEncode(common::formatRfc3339(range.to_us));
    for (const auto& [name, value] : request.query) {
      if (name != "from" && name != "to")
        target += "&" + percentEncode(name) + "=" + percentEncode(value);
    }
    next = target;
  }
  Response response;
  response.body = "{\"items\":" + items + ",\"count\":" + std::to_string(count) +
                  ",\"truncated\":" + (truncated ? "true" : "false") +
                  ",\"next\":" + common::jsonText(next) +
                  ",\"from\":" + common::jsonText(json(common::formatRfc3339(range.from_us))) +
                  ",\"to\":" + common::jsonText(json(common::formatRfc3339(range.to_us))) + "}";
  return response;
}

}  // namespace

Endpoints::Endpoints(const LiveClusters& live, const storage::Store& store,
                     const common::Clock& clock)
    : live_(live), store_(store), clock_(clock) {}

void Endpoints::registerOn(Router& router) {
  const auto bind = [this](Response (Endpoints::*handler)(const Request&) const) {
    return [this, handler](const Request& request) { return (this->*handler)(request); };
  };
  // Health probes need no token; what readyz says about a cluster is redacted for them.
  router.add("GET", "/healthz", bind(&Endpoints::healthz),
             RouteOptions{RouteAccess::kPublic, false});
  router.add("GET", "/readyz", bind(&Endpoints::readyz), RouteOptions{RouteAccess::kPublic, true});
  const RequestCounter& responses = router.responses();
  router.add("GET", "/metrics",
             [this, &responses](const Request& request) { return metrics(request, responses); });
  // Cluster descriptions name hosts, and events carry command lines: operators only in full.
  const RouteOptions redacted{RouteAccess::kDefault, true};
  router.add("GET", "/api/v1/clusters", bind(&Endpoints::clusterList), redacted);
  router.add("GET", "/api/v1/clusters/{cluster}", bind(&Endpoints::clusterDetail), redacted);
  router.add("GET", "/api/v1/clusters/{cluster}/gaps", bind(&Endpoints::gaps));
  router.add("GET", "/api/v1/clusters/{cluster}/events", bind(&Endpoints::events), redacted);
  router.add("GET", "/api/v1/clusters/{cluster}/partitions/{topic}/{partition}/samples",
             bind(&Endpoints::samples));
}

Response Endpoints::healthz(const Request& request) const {
  if (auto query = QueryReader::create(request.query, {}); !query) {
    return badRequest(request, query.error());
  }
  return jsonResponse(200, {{"status", "ok"}});
}

Response Endpoints::readyz(const Request& request) const {
  if (auto query = QueryReader::create(request.query, {}); !query) {
    return badRequest(request, query.error());
  }
  std::vector<std::string> reasons;
  const auto writer = store_.writerStats();
  if (!writer.last_error.empty()) {
    reasons.push_back("store: the last write failed: " + common::sensitive(writer.last_error));
  }
  for (const auto& cluster : live_.clusters()) {
    if (cluster.probe.phase == probe::ProbePhase::kProbing) continue;
    reasons.push_back("cluster " + cluster.name + ": probe is " +
                      probe::toString(cluster.probe.phase) +
                      (cluster.probe.problem.empty() ? "" : " (" + cluster.probe.problem + ")"));
  }
  if (reasons.empty()) return jsonResponse(200, {{"status", "ready"}});
  std::string detail;
  for (const auto& reason : reasons) detail += (detail.empty() ? "" : "; ") + reason;
  return problem(ProblemType::kNotReady, detail, request.path, {{"reasons", reasons}});
}

Response Endpoints::clusterList(const Request& request) const {
  if (auto query = QueryReader::create(request.query, {}); !query) {
    return badRequest(request, query.error());
  }
  json items = json::array();
  for (const auto& cluster : live_.clusters()) {
    items.push_back({
        {"name", cluster.name},
        {"id", cluster.id},
        {"bootstrap", cluster.bootstrap},
        {"reachable", cluster.observed.reachable},
        {"brokers", brokerIds(cluster.observed)},
        {"probe_phase", probe::toString(cluster.probe.phase)},
        {"probe_problem", textOrNull(cluster.probe.problem)},
    });
  }
  const auto count = items.size();
  return jsonResponse(200, {{"items", std::move(items)}, {"count", count}});
}

Response Endpoints::clusterDetail(const Request& request) const {
  auto live = findLiveCluster(request, live_, request.params.at("cluster"));
  if (auto* failure = std::get_if<Response>(&live)) return std::move(*failure);
  const auto* found = &std::get<ClusterLive>(live);
  if (auto query = QueryReader::create(request.query, {}); !query) {
    return badRequest(request, query.error());
  }
  const ClusterLive& cluster = *found;
  const auto& observed = cluster.observed;
  json brokers = json::array();
  if (observed.snapshot) {
    for (const auto& broker : observed.snapshot->brokers) {
      brokers.push_back({{"id", broker.id}, {"host", broker.host}, {"port", broker.port}});
    }
  }
  const bool has_snapshot = observed.snapshot.has_value();
  const auto& probe = cluster.probe;
  return jsonResponse(
      200,
      {
          {"name", cluster.name},
          {"id", cluster.id},
          {"bootstrap", cluster.bootstrap},
          {"reachable", observed.reachable},
          {"metadata",
           {
               {"at", has_snapshot ? json(common::formatRfc3339(observed.snapshot_at)) : json()},
               {"at_us", has_snapshot ? json(observed.snapshot_at) : json()},
               {"answered_by",
                has_snapshot ? brokerIdOrNull(observed.snapshot->answered_by) : json()},
               {"polls", observed.polls},
               {"failures", observed.failures},
               {"last_error", textOrNull(observed.last_error)},
           }},
          {"controller_id", observed.quorum ? brokerIdOrNull(observed.quorum->leader_id) : json()},
          {"quorum", quorumJson(observed)},
          {"brokers", std::move(brokers)},
          {"topics", topicsJson(cluster, clock_.monoNow())},
          {"control_plane", controlPlaneJson(probe.control, clock_.monoNow())},
          {"coordinators", coordinatorsJson(probe.coordinators, clock_.monoNow())},
          {"probe",
           {
               {"phase", probe::toString(probe.phase)},
               {"problem", textOrNull(probe.problem)},
               {"run_id", runId(probe.run_id)},
               {"interval_us", probe.interval_us},
               {"ticks", probe.ticks},
               {"skipped_ticks", probe.skipped_ticks},
               {"held_ticks", probe.held_ticks},
               {"max_send_lateness_us", probe.max_send_lateness_us},
               {"sender_scheduling", textOrNull(probe.sender_scheduling)},
               {"client_settings", probe.client_settings},
           }},
          {"profiles", profilesJson(cluster, clock_.monoNow())},
      });
}

std::variant<storage::ClusterId, Response> Endpoints::resolveCluster(const Request& request) const {
  return findCluster(request, live_, store_, request.params.at("cluster"),
                     ProblemType::kUnknownCluster);
}

std::variant<storage::ClusterId, Response> Endpoints::resolveProfile(
    const Request& request, storage::ClusterId cluster, const QueryReader& query) const {
  // A profile's name as the configuration allows it (config::ProbeProfile): 1-32 of a-z 0-9 _ -.
  const auto given = query.raw("profile");
  if (!given) return cluster;
  const std::optional<std::string> name{std::string(*given)};
  if (name->empty() || name->size() > 32 ||
      name->find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") != std::string::npos) {
    return problem(ProblemType::kInvalidParameter,
                   "profile: must be 1-32 characters of a-z, 0-9, '_' and '-', got \"" +
                       printable(*name, 100) + "\"",
                   request.path);
  }
  std::string known;
  for (const auto& live : live_.clusters()) {
    if (live.id != cluster) continue;
    for (const auto& p : live.profiles) known += (known.empty() ? "" : ", ") + p.name;
    if (!live.profiles.empty() && live.profiles.front().name == *name) return cluster;
  }
  auto streams = store_.profileStreams(cluster);
  if (!streams) return storeFailure(request, streams.error());
  if (auto it = streams->find(*name); it != streams->end()) return it->second;
  return problem(ProblemType::kNotFound,
                 "profile: the cluster has no client profile named \"" + printable(*name, 100) +
                     "\"; configured: " + (known.empty() ? std::string("one, unnamed") : known),
                 request.path);
}

Response Endpoints::gaps(const Request& request) const {
  auto cluster = resolveCluster(request);
  if (auto* failure = std::get_if<Response>(&cluster)) return std::move(*failure);
  auto query = QueryReader::create(
      request.query, {"topic", "partition", "kind", "min_ms", "from", "to", "limit", "profile"});
  if (!query) return badRequest(request, query.error());
  auto stream = resolveProfile(request, std::get<storage::ClusterId>(cluster), *query);
  if (auto* failure = std::get_if<Response>(&stream)) return std::move(*failure);

  storage::GapQuery gap_query;
  gap_query.cluster = std::get<storage::ClusterId>(stream);
  auto topic = query->topic("topic");
  if (!topic) return badRequest(request, topic.error());
  gap_query.topic = *topic;
  auto partition = query->integer("partition", 0, kMaxPartition);
  if (!partition) return badRequest(request, partition.error());
  if (*partition) gap_query.partition = static_cast<std::int32_t>(**partition);
  auto kind = query->oneOf("kind", {"ack", "receive"});
  if (!kind) return badRequest(request, kind.error());
  if (*kind) gap_query.kind = storage::gapKindFromString(**kind);
  auto min_ms = query->integer("min_ms", 0, kMaxMinGapMs);
  if (!min_ms) return badRequest(request, min_ms.error());
  gap_query.min_duration_us = min_ms->value_or(0) * 1000;
  auto range = query->range(clock_.wallNow(), kGapsDefaultWindowUs, std::nullopt);
  if (!range) return badRequest(request, range.error());
  gap_query.range = *range;
  auto limit = query->integer("limit", 1, kGapsMaxLimit);
  if (!limit) return badRequest(request, limit.error());
  const auto wanted = static_cast<std::size_t>(limit->value_or(kGapsDefaultLimit));
  gap_query.limit = wanted + 1;

  auto rows = store_.gaps(gap_query);
  if (!rows) return storeFailure(request, rows.error());
  std::vector<analysis::MaintenanceSpan> planned;
  if (maintenance_ != nullptr && !rows->empty()) {
    const auto extent = analysis::extentOf(*rows);
    auto windows = maintenance_->windows(std::get<storage::ClusterId>(cluster), extent.from_us,
                                         extent.to_us + 1, 10'000);
    if (!windows) return storeFailure(request, windows.error());
    planned = analysis::spansOf(*windows);
  }
  return listResponse(
      request, std::move(*rows), wanted, *range,
      [&planned](const storage::Gap& g) { return gapJson(g, analysis::plannedBy(g, planned)); },
      [](const storage::Gap& g) { return g.end_us; });
}

Response Endpoints::events(const Request& request) const {
  auto cluster = resolveCluster(request);
  if (auto* failure = std::get_if<Response>(&cluster)) return std::move(*failure);
  auto query = QueryReader::create(request.query,
                                   {"source", "kind", "topic", "partition", "from", "to", "limit"});
  if (!query) return badRequest(request, query.error());

  storage::EventQuery event_query;
  event_query.cluster = std::get<storage::ClusterId>(cluster);
  auto source = query->oneOf("source", {"metadata", "client", "broker_log", "injector", "probe",
                                        "control", "coordinator", "kfaild"});
  if (!source) return badRequest(request, source.error());
  event_query.source = *source;
  auto kind = query->identifier("kind");
  if (!kind) return badRequest(request, kind.error());
  event_query.kind = *kind;
  auto topic = query->topic("topic");
  if (!topic) return badRequest(request, topic.error());
  event_query.topic = *topic;
  auto partition = query->integer("partition", 0, kMaxPartition);
  if (!partition) return badRequest(request, partition.error());
  if (*partition) event_query.partition = static_cast<std::int32_t>(**partition);
  auto range = query->range(clock_.wallNow(), kEventsDefaultWindowUs, std::nullopt);
  if (!range) return badRequest(request, range.error());
  event_query.range = *range;
  auto limit = query->integer("limit", 1, kEventsMaxLimit);
  if (!limit) return badRequest(request, limit.error());
  const auto wanted = static_cast<std::size_t>(limit->value_or(kEventsDefaultLimit));
  event_query.limit = wanted + 1;

  auto rows = store_.events(event_query);
  if (!rows) return storeFailure(request, rows.error());
  return listResponse(request, std::move(*rows), wanted, *range, eventJson,
                      [](const storage::Event& e) { return e.t_us; });
}

Response Endpoints::samples(const Request& request) const {
  auto cluster = resolveCluster(request);
  if (auto* failure = std::get_if<Response>(&cluster)) return std::move(*failure);
  const std::string& topic = request.params.at("topic");
  if (!isTopicName(topic) && !probe::isOwnStream(topic)) {
    return problem(ProblemType::kInvalidParameter,
                   "topic: must be a Kafka topic name (1 to 249 of a-z A-Z 0-9 . _ -, not \".\" "
                   "or \"..\") or kfaild:control, kfaild:commit, kfaild:txn, got \"" +
                       printable(topic, 100) + "\"",
                   request.path);
  }
  auto partition = parseInteger("partition", request.params.at("partition"), 0, kMaxPartition);
  if (!partition) return badRequest(request, partition.error());
  auto query = QueryReader::create(request.query, {"from", "to", "limit", "profile"});
  if (!query) return badRequest(request, query.error());
  auto stream = resolveProfile(request, std::get<storage::ClusterId>(cluster), *query);
  if (auto* failure = std::get_if<Response>(&stream)) return std::move(*failure);

  storage::SampleQuery sample_query;
  sample_query.cluster = std::get<storage::ClusterId>(stream);
  sample_query.topic = topic;
  sample_query.partition = static_cast<std::int32_t>(*partition);
  auto range = query->range(clock_.wallNow(), kSamplesDefaultWindowUs, kSamplesMaxWindowUs);
  if (!range) return badRequest(request, range.error());
  sample_query.range = *range;
  auto limit = query->integer("limit", 1, kSamplesMaxLimit);
  if (!limit) return badRequest(request, limit.error());
  // More than this many samples never fit in kMaxResponseBytes: the rest is not read either.
  const auto wanted = std::min<std::size_t>(
      static_cast<std::size_t>(limit->value_or(kSamplesDefaultLimit)), kSamplesPerResponse);
  sample_query.limit = wanted + 1;

  auto rows = store_.samples(sample_query);
  if (!rows) return storeFailure(request, rows.error());
  return listResponse(request, std::move(*rows), wanted, *range, sampleJson,
                      [](const storage::ProbeSample& s) { return s.send_us; });
}

}  // namespace kfaild::api
