#include "api/endpoints.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <type_traits>
#include <string>
#include <utility>

#include "api/drill_metrics.h"
#include "api/maintenance_endpoints.h"
#include "api/errc.h"
#include "api/notification_endpoints.h"
#include "api/prometheus_text.h"
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

double seconds(std::int64_t micros) {
  return static_cast<double>(micros) / 1e6;
}

std::optional<double> ageSeconds(const std::optional<common::Instant>& last,
                                 common::MonoMicros now) {
  if (!last) return std::nullopt;
  return seconds(std::max<std::int64_t>(0, now - last->mono));
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
      {"oldest_outstanding_age_seconds", optionalSeconds(ageSeconds(p.oldest_outstanding_sent, now))},
      {"held_ticks", c.held_ticks},
      {"holding_since_us", intOrNull(p.holding_since ? std::optional(p.holding_since->wall) : std::nullopt)},
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
      {"failing_since_us", intOrNull(c.failing_since ? std::optional(c.failing_since->wall) : std::nullopt)},
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

json coordinatorsJson(const std::optional<probe::CoordinatorStatus>& coordinators, common::MonoMicros now) {
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
    std::string target = request.path + "?from=" + percentEncode(common::formatRfc3339(*next_from)) +
                         "&to=" + percentEncode(common::formatRfc3339(range.to_us));
    for (const auto& [name, value] : request.query) {
      if (name != "from" && name != "to") target += "&" + percentEncode(name) + "=" + percentEncode(value);
    }
    next = target;
  }
  Response response;
  response.body = "{\"items\":" + items + ",\"count\":" + std::to_string(count) +
                  ",\"truncated\":" + (truncated ? "true" : "false") + ",\"next\":" + common::jsonText(next) +
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
  router.add("GET", "/healthz", bind(&Endpoints::healthz), RouteOptions{RouteAccess::kPublic, false});
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

Response Endpoints::metrics(const Request& request, const RequestCounter& responses) const {
  if (auto query = QueryReader::create(request.query, {}); !query) {
    return badRequest(request, query.error());
  }
  const auto clusters = live_.clusters();
  const auto now = clock_.monoNow();
  PrometheusText out;

  // Counters stay integers end to end: a double would round them beyond 2^53.
  struct PartitionCounter {
    const char* name;
    const char* help;
    std::uint64_t (*value)(const probe::PartitionStatus&);
  };
  static constexpr PartitionCounter kCounters[] = {
      {"kfaild_probe_sent_total", "Probe messages sent.",
       [](const probe::PartitionStatus& p) { return p.counters.sent; }},
      {"kfaild_probe_acked_total", "Probe messages acknowledged by the cluster (acks=all).",
       [](const probe::PartitionStatus& p) { return p.counters.acked; }},
      {"kfaild_probe_received_total",
       "Probe messages read back by the probe's consumer (first receipt of each).",
       [](const probe::PartitionStatus& p) { return p.counters.received; }},
      {"kfaild_probe_send_failed_total",
       "Probe messages refused by the client or reported failed by the delivery report.",
       [](const probe::PartitionStatus& p) { return p.counters.send_failed; }},
      {"kfaild_probe_lost_total",
       "Probe messages acknowledged but not received within the loss timeout.",
       [](const probe::PartitionStatus& p) { return p.counters.lost; }},
      {"kfaild_probe_duplicated_total", "Probe messages received more than once.",
       [](const probe::PartitionStatus& p) { return p.counters.duplicated; }},
      {"kfaild_probe_reordered_total",
       "Probe messages received after a message with a higher sequence number.",
       [](const probe::PartitionStatus& p) { return p.counters.reordered; }},
      {"kfaild_probe_gaps_total", "Ack and receive gaps longer than the gap threshold.",
       [](const probe::PartitionStatus& p) { return p.counters.gaps; }},
      {"kfaild_probe_held_ticks_total",
       "Ticks the probe did not send because the partition's bound on outstanding messages was reached.",
       [](const probe::PartitionStatus& p) { return p.counters.held_ticks; }},
  };
  struct PartitionGauge {
    const char* name;
    const char* help;
    std::optional<double> (*value)(const probe::PartitionStatus&, common::MonoMicros);
  };
  static constexpr PartitionGauge kGauges[] = {
      {"kfaild_probe_in_flight", "Probe messages sent whose fate (ack, receipt) is not known yet.",
       [](const probe::PartitionStatus& p, common::MonoMicros) -> std::optional<double> {
         return static_cast<double>(p.in_flight);
       }},
      {"kfaild_probe_outstanding", "Probe messages sent without a delivery report yet.",
       [](const probe::PartitionStatus& p, common::MonoMicros) -> std::optional<double> {
         return static_cast<double>(p.outstanding);
       }},
      {"kfaild_probe_oldest_outstanding_age_seconds",
       "Age of the oldest probe message without a delivery report. Absent when none is outstanding.",
       [](const probe::PartitionStatus& p, common::MonoMicros t) {
         return ageSeconds(p.oldest_outstanding_sent, t);
       }},
      {"kfaild_probe_holding", "1 while the probe holds back sends to the partition, else 0.",
       [](const probe::PartitionStatus& p, common::MonoMicros) -> std::optional<double> {
         return p.holding_since ? 1.0 : 0.0;
       }},
      {"kfaild_probe_current_ack_gap_seconds",
       "Seconds since the last ack: the ack gap open now. Absent before the first ack.",
       [](const probe::PartitionStatus& p, common::MonoMicros t) {
         return ageSeconds(p.last_ack, t);
       }},
      {"kfaild_probe_current_receive_gap_seconds",
       "Seconds since the last receipt: the receive gap open now. Absent before the first.",
       [](const probe::PartitionStatus& p, common::MonoMicros t) {
         return ageSeconds(p.last_receive, t);
       }},
      {"kfaild_probe_longest_ack_gap_seconds",
       "Longest interval between two consecutive acks since the probe started.",
       [](const probe::PartitionStatus& p, common::MonoMicros) -> std::optional<double> {
         return seconds(p.longest_ack_gap_us);
       }},
      {"kfaild_probe_longest_receive_gap_seconds",
       "Longest interval between two consecutive receipts since the probe started.",
       [](const probe::PartitionStatus& p, common::MonoMicros) -> std::optional<double> {
         return seconds(p.longest_receive_gap_us);
       }},
  };
  // Label values outlive the samples that point at them (Labels holds string_views).
  const auto forEachPartition = [&clusters](auto&& emit) {
    for (const auto& cluster : clusters) {
      for (const auto& p : cluster.probe.partitions) {
        const std::string partition = std::to_string(p.partition);
        emit(p, Labels{{"cluster", cluster.name}, {"topic", p.topic}, {"partition", partition}});
      }
    }
  };
  for (const auto& counter : kCounters) {
    out.family(counter.name, "counter", counter.help);
    forEachPartition([&](const probe::PartitionStatus& p, const Labels& labels) {
      out.sample(counter.name, labels, counter.value(p));
    });
  }
  for (const auto& gauge : kGauges) {
    out.family(gauge.name, "gauge", gauge.help);
    forEachPartition([&](const probe::PartitionStatus& p, const Labels& labels) {
      if (const auto value = gauge.value(p, now)) out.sample(gauge.name, labels, *value);
    });
  }

  // Intervals between consecutive acks and receipts, and single messages' latencies, as
  // histograms (cumulative buckets).
  const auto histogram = [&out, &forEachPartition](const std::string& name, const char* help, auto of) {
    out.family(name, "histogram", help);
    const auto& bounds = std::remove_cvref_t<decltype(of(probe::PartitionStatus{}))>::kBounds;
    std::vector<std::string> le;
    for (const auto bound : bounds) le.push_back(fmt::format("{}", seconds(bound)));
    le.push_back("+Inf");
    forEachPartition([&](const probe::PartitionStatus& p, const Labels& labels) {
      const auto& h = of(p);
      std::uint64_t cumulative = 0;
      for (std::size_t i = 0; i < le.size(); ++i) {
        cumulative += h.counts[i];
        Labels with_le = labels;
        with_le.emplace_back("le", le[i]);
        out.sample(name + "_bucket", with_le, cumulative);
      }
      out.sample(name + "_sum", labels, seconds(h.sum_us));
      out.sample(name + "_count", labels, h.count);
    });
  };
  histogram("kfaild_probe_ack_interval_seconds", "Intervals between consecutive acks of a probe partition.",
            [](const probe::PartitionStatus& p) -> const probe::GapHistogram& { return p.ack_intervals; });
  histogram("kfaild_probe_receive_interval_seconds",
            "Intervals between consecutive receipts of a probe partition.",
            [](const probe::PartitionStatus& p) -> const probe::GapHistogram& { return p.receive_intervals; });
  histogram("kfaild_probe_ack_latency_seconds",
            "Time from a probe message's send to its ack (acks=all), per message.",
            [](const probe::PartitionStatus& p) -> const probe::LatencyHistogram& { return p.ack_latency; });
  histogram("kfaild_probe_end_to_end_latency_seconds",
            "Time from a probe message's send to its first receipt by the probe's consumer, per "
            "message (messages given up on as lost are not in it).",
            [](const probe::PartitionStatus& p) -> const probe::LatencyHistogram& { return p.receive_latency; });

  out.family("kfaild_probe_ticks_total", "counter", "Probe ticks (one send to every partition each).");
  for (const auto& cluster : clusters) {
    out.sample("kfaild_probe_ticks_total", {{"cluster", cluster.name}}, cluster.probe.ticks);
  }
  out.family("kfaild_probe_skipped_ticks_total", "counter",
             "Probe ticks not sent at all because the sender fell behind its interval.");
  for (const auto& cluster : clusters) {
    out.sample("kfaild_probe_skipped_ticks_total", {{"cluster", cluster.name}}, cluster.probe.skipped_ticks);
  }
  out.family("kfaild_probe_client_recreations_total", "counter",
             "Probe clients kfaild replaced: the producer after a fatal error, the consumer when a seek did not "
             "free its reading. A gap across one is the probe's, not the cluster's.");
  for (const auto& cluster : clusters) {
    out.sample("kfaild_probe_client_recreations_total", {{"cluster", cluster.name}, {"client", "producer"}},
               cluster.probe.producer_recreations);
    out.sample("kfaild_probe_client_recreations_total", {{"cluster", cluster.name}, {"client", "consumer"}},
               cluster.probe.consumer_recreations);
  }
  out.family("kfaild_probe_max_send_lateness_seconds", "gauge",
             "Longest delay of a probe tick behind its schedule since the probe started.");
  for (const auto& cluster : clusters) {
    out.sample("kfaild_probe_max_send_lateness_seconds", {{"cluster", cluster.name}},
               seconds(cluster.probe.max_send_lateness_us));
  }

  // The control-plane probe (server/probe/control_probe.h), per cluster where it runs.
  const auto perControl = [&clusters, &out](const char* name, const char* type, const char* help, auto value) {
    out.family(name, type, help);
    for (const auto& cluster : clusters) {
      if (!cluster.probe.control) continue;
      if (const std::optional<double> v = value(*cluster.probe.control)) {
        out.sample(name, {{"cluster", cluster.name}}, *v);
      }
    }
  };
  perControl("kfaild_control_operations_total", "counter",
             "Control-plane probe operations (a validate-only CreateTopics only the active controller answers).",
             [](const probe::ControlStatus& c) -> std::optional<double> { return static_cast<double>(c.ops); });
  perControl("kfaild_control_failures_total", "counter", "Control-plane probe operations without an answer.",
             [](const probe::ControlStatus& c) -> std::optional<double> { return static_cast<double>(c.failures); });
  perControl("kfaild_control_current_gap_seconds", "gauge",
             "Time since the control-plane probe's last answered operation.",
             [now](const probe::ControlStatus& c) { return ageSeconds(c.last_ok, now); });
  perControl("kfaild_control_longest_gap_seconds", "gauge",
             "Longest interval between two answered control-plane operations since kfaild started.",
             [](const probe::ControlStatus& c) -> std::optional<double> { return seconds(c.longest_gap_us); });
  // The coordinator probes' streams, per cluster and stream (commit, transaction).
  const auto perStream = [&clusters, &out](const char* name, const char* type, const char* help, auto value) {
    out.family(name, type, help);
    for (const auto& cluster : clusters) {
      if (!cluster.probe.coordinators) continue;
      const auto& c = *cluster.probe.coordinators;
      for (const auto& [stream, status] : {std::pair<const char*, const std::optional<probe::OperationStatus>*>{"commit", &c.commits},
                                           {"transaction", &c.transactions}}) {
        if (!*status) continue;
        if (const std::optional<double> v = value(**status)) out.sample(name, {{"cluster", cluster.name}, {"stream", stream}}, *v);
      }
    }
  };
  perStream("kfaild_coordinator_operations_total", "counter",
            "Coordinator probe operations: offset commits of kfaild's group, transactions of its transactional id.",
            [](const probe::OperationStatus& c) -> std::optional<double> { return static_cast<double>(c.ops); });
  perStream("kfaild_coordinator_failures_total", "counter", "Coordinator probe operations that did not succeed.",
            [](const probe::OperationStatus& c) -> std::optional<double> { return static_cast<double>(c.failures); });
  perStream("kfaild_coordinator_current_gap_seconds", "gauge", "Time since the stream's last successful operation.",
            [now](const probe::OperationStatus& c) { return ageSeconds(c.last_ok, now); });
  perStream("kfaild_coordinator_longest_gap_seconds", "gauge",
            "Longest interval between two successful operations of the stream since kfaild started.",
            [](const probe::OperationStatus& c) -> std::optional<double> { return seconds(c.longest_gap_us); });
  perControl("kfaild_quorum_leader_changes_total", "counter",
             "Changes of the KRaft quorum's leader (or its epoch) the control-plane probe saw.",
             [](const probe::ControlStatus& c) -> std::optional<double> {
               return static_cast<double>(c.leader_changes);
             });

  if (drills_ != nullptr) {
    // Counted by SQL over an index, not by reading every drill on every scrape.
    if (auto rows = drills_->drillCounts(); rows) {
      std::map<storage::ClusterId, std::string> names;
      for (const auto& cluster : clusters) names[cluster.id] = cluster.name;
      std::map<std::tuple<std::string, std::string, std::string>, std::uint64_t> counts;
      for (const auto& d : *rows) {
        const auto name = names.count(d.cluster) ? names[d.cluster] : std::to_string(d.cluster);
        counts[{name, d.fault, d.state}] += static_cast<std::uint64_t>(d.count);
      }
      out.family("kfaild_drills", "gauge", "Drills in the database, by cluster, fault and state (outcome).");
      for (const auto& [key, count] : counts) {
        out.sample("kfaild_drills",
                   {{"cluster", std::get<0>(key)}, {"fault", std::get<1>(key)}, {"state", std::get<2>(key)}},
                   count);
      }
    }
    // The last analysed drill of each cluster and fault: its row found in an index, only those
    // rows' results parsed.
    if (auto last = drills_->lastDrills(kAnalysedDrillState); last) {
      std::vector<std::pair<storage::ClusterId, std::string>> configured;
      for (const auto& cluster : clusters) configured.emplace_back(cluster.id, cluster.name);
      renderLastDrills(out, *last, configured);
    } else {
      spdlog::warn("metrics: last drills not read: {}", last.error().describe());
    }
  }

  out.family("kfaild_probe_probing", "gauge",
             "1 when the cluster's probe is sending and reading, 0 while it starts or sets up.");
  for (const auto& cluster : clusters) {
    out.sample("kfaild_probe_probing", {{"cluster", cluster.name}},
               std::int64_t{cluster.probe.phase == probe::ProbePhase::kProbing ? 1 : 0});
  }
  out.family("kfaild_cluster_reachable", "gauge",
             "1 when the last metadata request to the cluster was answered, else 0.");
  for (const auto& cluster : clusters) {
    out.sample("kfaild_cluster_reachable", {{"cluster", cluster.name}},
               std::int64_t{cluster.observed.reachable ? 1 : 0});
  }
  out.family("kfaild_cluster_brokers", "gauge",
             "Brokers listed in the last metadata answer (registered and unfenced).");
  for (const auto& cluster : clusters) {
    const std::int64_t brokers =
        cluster.observed.snapshot
            ? static_cast<std::int64_t>(cluster.observed.snapshot->brokers.size())
            : 0;
    out.sample("kfaild_cluster_brokers", {{"cluster", cluster.name}}, brokers);
  }

  const auto writer = store_.writerStats();
  out.family("kfaild_store_queued_records", "gauge", "Records waiting for the store's writer.");
  out.sample("kfaild_store_queued_records", {}, writer.queued);
  out.family("kfaild_store_written_total", "counter", "Records committed to the database.");
  out.sample("kfaild_store_written_total", {}, writer.written);
  out.family("kfaild_store_dropped_samples_total", "counter",
             "Raw probe samples dropped because the writer fell behind.");
  out.sample("kfaild_store_dropped_samples_total", {}, writer.dropped_samples);
  out.family("kfaild_store_dropped_other_total", "counter",
             "Gaps and events dropped because the writer's queue was full of them.");
  out.sample("kfaild_store_dropped_other_total", {}, writer.dropped_other);
  out.family("kfaild_store_failed_batches_total", "counter",
             "Write transactions that failed (disk full, read-only, I/O error).");
  out.sample("kfaild_store_failed_batches_total", {}, writer.failed_batches);

  if (const auto size = store_.databaseSize(); size) {
    out.family("kfaild_storage_database_bytes", "gauge",
               "Size of the database file in pages (WAL content included), in bytes.");
    out.sample("kfaild_storage_database_bytes", {}, size->fileBytes());
    out.family("kfaild_storage_used_bytes", "gauge",
               "Bytes of the database's pages in use (the file less SQLite's free pages): what storage.max_bytes bounds.");
    out.sample("kfaild_storage_used_bytes", {}, size->usedBytes());
  }
  if (retention_ != nullptr) {
    const auto report = retention_->retentionReport();
    if (report.max_bytes) {
      out.family("kfaild_storage_max_bytes", "gauge", "storage.max_bytes: the bound on the used bytes.");
      out.sample("kfaild_storage_max_bytes", {}, *report.max_bytes);
    }
    out.family("kfaild_storage_pruned_rows_total", "counter",
               "Rows deleted by retention (age or size bound), by kind: samples (raw, outside drill windows), "
               "drill_samples, gaps, events.");
    for (const auto& [kind, rows] : {std::pair{"samples", report.pruned_samples},
                                     std::pair{"drill_samples", report.pruned_drill_samples},
                                     std::pair{"gaps", report.pruned_gaps},
                                     std::pair{"events", report.pruned_events}}) {
      out.sample("kfaild_storage_pruned_rows_total", {{"kind", kind}}, rows);
    }
    out.family("kfaild_storage_retention_passes_total", "counter", "Retention passes finished.");
    out.sample("kfaild_storage_retention_passes_total", {}, report.passes);
    out.family("kfaild_storage_prune_failures_total", "counter",
               "Retention steps that failed (each logged with the database's error).");
    out.sample("kfaild_storage_prune_failures_total", {}, report.failures);
    if (report.last_success_us) {
      out.family("kfaild_storage_last_prune_timestamp_seconds", "gauge",
                 "When the last retention pass without a failure ended (Unix time).");
      out.sample("kfaild_storage_last_prune_timestamp_seconds", {}, seconds(*report.last_success_us));
    }
  }

  if (notifications_ != nullptr) appendNotificationMetrics(out, notifications_->notificationMetrics());
  if (maintenance_ != nullptr) {
    if (auto active = maintenance_->activeWindows(clock_.wallNow()); active) {
      std::vector<MaintenanceCluster> rows;
      for (const auto& c : clusters) {
        const bool in_window = std::any_of(active->begin(), active->end(), [&c](const auto& w) { return w.cluster == c.id; });
        rows.push_back({c.name, in_window});
      }
      appendMaintenanceMetrics(out, rows);
    } else {
      spdlog::warn("metrics: maintenance windows not read: {}", active.error().describe());
    }
  }
  if (build_) {
    out.family("kfaild_build_info", "gauge", "Always 1; the labels say which kfaild is running.");
    out.sample("kfaild_build_info",
               {{"version", build_->version}, {"commit", build_->commit}, {"librdkafka", build_->librdkafka}},
               std::int64_t{1});
  }

  out.family("kfaild_http_requests_total", "counter",
             "HTTP responses sent, by status code (this scrape not included).");
  for (const auto& [code, count] : responses.snapshot()) {
    const std::string text = std::to_string(code);
    out.sample("kfaild_http_requests_total", {{"code", text}}, count);
  }

  Response response;
  response.status = 200;
  response.content_type = std::string(kPrometheusContentType);
  response.body = out.text();
  return response;
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
  const std::string& name = request.params.at("cluster");
  const auto clusters = live_.clusters();
  const auto found = std::find_if(clusters.begin(), clusters.end(),
                                  [&name](const ClusterLive& c) { return c.name == name; });
  if (found == clusters.end()) {
    std::string known;
    for (const auto& c : clusters) known += (known.empty() ? "" : ", ") + c.name;
    return problem(ProblemType::kUnknownCluster,
                   "no configured cluster is named \"" + printable(name, 100) +
                       "\"; configured: " + (known.empty() ? std::string("none") : known),
                   request.path);
  }
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
          {"controller_id",
           observed.quorum ? brokerIdOrNull(observed.quorum->leader_id) : json()},
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
      });
}

std::variant<storage::ClusterId, Response> Endpoints::resolveCluster(const Request& request) const {
  return findCluster(request, live_, store_, request.params.at("cluster"), ProblemType::kUnknownCluster);
}

Response Endpoints::gaps(const Request& request) const {
  auto cluster = resolveCluster(request);
  if (auto* failure = std::get_if<Response>(&cluster)) return std::move(*failure);
  auto query = QueryReader::create(request.query,
                                   {"topic", "partition", "kind", "min_ms", "from", "to", "limit"});
  if (!query) return badRequest(request, query.error());

  storage::GapQuery gap_query;
  gap_query.cluster = std::get<storage::ClusterId>(cluster);
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
    auto windows = maintenance_->windows(std::get<storage::ClusterId>(cluster), extent.from_us, extent.to_us + 1, 10'000);
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
  auto source =
      query->oneOf("source", {"metadata", "client", "broker_log", "injector", "probe", "control", "coordinator", "kfaild"});
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
  auto query = QueryReader::create(request.query, {"from", "to", "limit"});
  if (!query) return badRequest(request, query.error());

  storage::SampleQuery sample_query;
  sample_query.cluster = std::get<storage::ClusterId>(cluster);
  sample_query.topic = topic;
  sample_query.partition = static_cast<std::int32_t>(*partition);
  auto range = query->range(clock_.wallNow(), kSamplesDefaultWindowUs, kSamplesMaxWindowUs);
  if (!range) return badRequest(request, range.error());
  sample_query.range = *range;
  auto limit = query->integer("limit", 1, kSamplesMaxLimit);
  if (!limit) return badRequest(request, limit.error());
  // More than this many samples never fit in kMaxResponseBytes: the rest is not read either.
  const auto wanted = std::min<std::size_t>(static_cast<std::size_t>(limit->value_or(kSamplesDefaultLimit)),
                                            kSamplesPerResponse);
  sample_query.limit = wanted + 1;

  auto rows = store_.samples(sample_query);
  if (!rows) return storeFailure(request, rows.error());
  return listResponse(request, std::move(*rows), wanted, *range, sampleJson,
                      [](const storage::ProbeSample& s) { return s.send_us; });
}

}  // namespace kfaild::api
