// GET /metrics (Endpoints::metrics): one function per metric family, or per set of families
// rendered the same way, called in the order the families appear in the scrape.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "api/drill_metrics.h"
#include "api/durations.h"
#include "api/endpoints.h"
#include "api/maintenance_endpoints.h"
#include "api/notification_endpoints.h"
#include "api/prometheus_text.h"
#include "api/query_params.h"
#include "api/resources.h"

namespace kfaild::api {
namespace {

using Clusters = std::vector<ClusterLive>;

// Counters stay integers end to end: a double would round them beyond 2^53.
struct PartitionCounter {
  const char* name;
  const char* help;
  std::uint64_t (*value)(const probe::PartitionStatus&);
};

constexpr PartitionCounter kPartitionCounters[] = {
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
     "Ticks the probe did not send because the partition's bound on outstanding messages was "
     "reached.",
     [](const probe::PartitionStatus& p) { return p.counters.held_ticks; }},
};

struct PartitionGauge {
  const char* name;
  const char* help;
  std::optional<double> (*value)(const probe::PartitionStatus&, common::MonoMicros);
};

constexpr PartitionGauge kPartitionGauges[] = {
    {"kfaild_probe_in_flight", "Probe messages sent whose fate (ack, receipt) is not known yet.",
     [](const probe::PartitionStatus& p, common::MonoMicros) -> std::optional<double> {
       return static_cast<double>(p.in_flight);
     }},
    {"kfaild_probe_outstanding", "Probe messages sent without a delivery report yet.",
     [](const probe::PartitionStatus& p, common::MonoMicros) -> std::optional<double> {
       return static_cast<double>(p.outstanding);
     }},
    {"kfaild_probe_oldest_outstanding_age_seconds",
     "Age of the oldest probe message without a delivery report. Absent when none is "
     "outstanding.",
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

// Calls emit(partition status, labels) for every probe partition of every cluster: the primary
// client profile's without a `profile` label (as before profiles existed), every other profile's
// (probe.profiles) with its name as `profile`. The labels point at strings that live only for the
// call (Labels holds string_views).
template <typename Emit>
void forEachPartition(const Clusters& clusters, Emit&& emit) {
  for (const auto& cluster : clusters) {
    const auto each = [&](const probe::ProbeStatus& probe, const std::string* profile) {
      for (const auto& p : probe.partitions) {
        const std::string partition = std::to_string(p.partition);
        Labels labels{{"cluster", cluster.name}, {"topic", p.topic}, {"partition", partition}};
        if (profile) labels.emplace_back("profile", *profile);
        emit(p, labels);
      }
    };
    each(cluster.probe, nullptr);
    for (std::size_t i = 1; i < cluster.profiles.size(); ++i) {
      each(cluster.profiles[i].probe, &cluster.profiles[i].name);
    }
  }
}

void appendPartitionCounters(PrometheusText& out, const Clusters& clusters) {
  for (const auto& counter : kPartitionCounters) {
    out.family(counter.name, "counter", counter.help);
    forEachPartition(clusters, [&](const probe::PartitionStatus& p, const Labels& labels) {
      out.sample(counter.name, labels, counter.value(p));
    });
  }
}

void appendPartitionGauges(PrometheusText& out, const Clusters& clusters, common::MonoMicros now) {
  for (const auto& gauge : kPartitionGauges) {
    out.family(gauge.name, "gauge", gauge.help);
    forEachPartition(clusters, [&](const probe::PartitionStatus& p, const Labels& labels) {
      if (const auto value = gauge.value(p, now)) out.sample(gauge.name, labels, *value);
    });
  }
}

// One histogram family (cumulative buckets) over every probe partition; `of` picks the
// partition's histogram.
template <typename Of>
void appendPartitionHistogram(PrometheusText& out, const Clusters& clusters,
                              const std::string& name, const char* help, Of of) {
  out.family(name, "histogram", help);
  const auto& bounds = std::remove_cvref_t<decltype(of(probe::PartitionStatus{}))>::kBounds;
  std::vector<std::string> le;
  for (const auto bound : bounds) le.push_back(fmt::format("{}", seconds(bound)));
  le.push_back("+Inf");
  forEachPartition(clusters, [&](const probe::PartitionStatus& p, const Labels& labels) {
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
}

// Intervals between consecutive acks and receipts, and single messages' latencies.
void appendPartitionHistograms(PrometheusText& out, const Clusters& clusters) {
  using probe::PartitionStatus;
  appendPartitionHistogram(
      out, clusters, "kfaild_probe_ack_interval_seconds",
      "Intervals between consecutive acks of a probe partition.",
      [](const PartitionStatus& p) -> const probe::GapHistogram& { return p.ack_intervals; });
  appendPartitionHistogram(
      out, clusters, "kfaild_probe_receive_interval_seconds",
      "Intervals between consecutive receipts of a probe partition.",
      [](const PartitionStatus& p) -> const probe::GapHistogram& { return p.receive_intervals; });
  appendPartitionHistogram(
      out, clusters, "kfaild_probe_ack_latency_seconds",
      "Time from a probe message's send to its ack (acks=all), per message.",
      [](const PartitionStatus& p) -> const probe::LatencyHistogram& { return p.ack_latency; });
  appendPartitionHistogram(
      out, clusters, "kfaild_probe_end_to_end_latency_seconds",
      "Time from a probe message's send to its first receipt by the probe's consumer, per "
      "message (messages given up on as lost are not in it).",
      [](const PartitionStatus& p) -> const probe::LatencyHistogram& { return p.receive_latency; });
}

// The probe's own counts per cluster: ticks, skipped ticks, replaced clients, send lateness.
void appendProbeTotals(PrometheusText& out, const Clusters& clusters) {
  out.family("kfaild_probe_ticks_total", "counter",
             "Probe ticks (one send to every partition each).");
  for (const auto& cluster : clusters) {
    out.sample("kfaild_probe_ticks_total", {{"cluster", cluster.name}}, cluster.probe.ticks);
  }
  out.family("kfaild_probe_skipped_ticks_total", "counter",
             "Probe ticks not sent at all because the sender fell behind its interval.");
  for (const auto& cluster : clusters) {
    out.sample("kfaild_probe_skipped_ticks_total", {{"cluster", cluster.name}},
               cluster.probe.skipped_ticks);
  }
  out.family("kfaild_probe_client_recreations_total", "counter",
             "Probe clients kfaild replaced: the producer after a fatal error, the consumer when "
             "a seek did not free its reading. A gap across one is the probe's, not the "
             "cluster's.");
  for (const auto& cluster : clusters) {
    out.sample("kfaild_probe_client_recreations_total",
               {{"cluster", cluster.name}, {"client", "producer"}},
               cluster.probe.producer_recreations);
    out.sample("kfaild_probe_client_recreations_total",
               {{"cluster", cluster.name}, {"client", "consumer"}},
               cluster.probe.consumer_recreations);
    if (cluster.probe.client_restarts) {
      out.sample("kfaild_probe_client_recreations_total",
                 {{"cluster", cluster.name}, {"client", "java"}}, *cluster.probe.client_restarts);
    }
  }
  out.family("kfaild_probe_max_send_lateness_seconds", "gauge",
             "Longest delay of a probe tick behind its schedule since the probe started.");
  for (const auto& cluster : clusters) {
    out.sample("kfaild_probe_max_send_lateness_seconds", {{"cluster", cluster.name}},
               seconds(cluster.probe.max_send_lateness_us));
  }
}

// One family of the control-plane probe (server/probe/control_probe.h), per cluster where it
// runs; `value` gives nothing to leave a cluster out.
template <typename Value>
void appendPerControl(PrometheusText& out, const Clusters& clusters, const char* name,
                      const char* type, const char* help, Value value) {
  out.family(name, type, help);
  for (const auto& cluster : clusters) {
    if (!cluster.probe.control) continue;
    if (const std::optional<double> v = value(*cluster.probe.control)) {
      out.sample(name, {{"cluster", cluster.name}}, *v);
    }
  }
}

void appendControlProbe(PrometheusText& out, const Clusters& clusters, common::MonoMicros now) {
  using probe::ControlStatus;
  appendPerControl(
      out, clusters, "kfaild_control_operations_total", "counter",
      "Control-plane probe operations (a validate-only CreateTopics only the active "
      "controller answers).",
      [](const ControlStatus& c) -> std::optional<double> { return static_cast<double>(c.ops); });
  appendPerControl(out, clusters, "kfaild_control_failures_total", "counter",
                   "Control-plane probe operations without an answer.",
                   [](const ControlStatus& c) -> std::optional<double> {
                     return static_cast<double>(c.failures);
                   });
  appendPerControl(out, clusters, "kfaild_control_current_gap_seconds", "gauge",
                   "Time since the control-plane probe's last answered operation.",
                   [now](const ControlStatus& c) { return ageSeconds(c.last_ok, now); });
  appendPerControl(
      out, clusters, "kfaild_control_longest_gap_seconds", "gauge",
      "Longest interval between two answered control-plane operations since kfaild "
      "started.",
      [](const ControlStatus& c) -> std::optional<double> { return seconds(c.longest_gap_us); });
}

// One family of the coordinator probes, per cluster and stream (commit, transaction).
template <typename Value>
void appendPerStream(PrometheusText& out, const Clusters& clusters, const char* name,
                     const char* type, const char* help, Value value) {
  using Stream = std::pair<const char*, const std::optional<probe::OperationStatus>*>;
  out.family(name, type, help);
  for (const auto& cluster : clusters) {
    if (!cluster.probe.coordinators) continue;
    const auto& c = *cluster.probe.coordinators;
    for (const auto& [stream, status] :
         {Stream{"commit", &c.commits}, Stream{"transaction", &c.transactions}}) {
      if (!*status) continue;
      if (const std::optional<double> v = value(**status)) {
        out.sample(name, {{"cluster", cluster.name}, {"stream", stream}}, *v);
      }
    }
  }
}

void appendCoordinatorProbes(PrometheusText& out, const Clusters& clusters,
                             common::MonoMicros now) {
  using probe::OperationStatus;
  appendPerStream(
      out, clusters, "kfaild_coordinator_operations_total", "counter",
      "Coordinator probe operations: offset commits of kfaild's group, transactions "
      "of its transactional id.",
      [](const OperationStatus& c) -> std::optional<double> { return static_cast<double>(c.ops); });
  appendPerStream(out, clusters, "kfaild_coordinator_failures_total", "counter",
                  "Coordinator probe operations that did not succeed.",
                  [](const OperationStatus& c) -> std::optional<double> {
                    return static_cast<double>(c.failures);
                  });
  appendPerStream(out, clusters, "kfaild_coordinator_current_gap_seconds", "gauge",
                  "Time since the stream's last successful operation.",
                  [now](const OperationStatus& c) { return ageSeconds(c.last_ok, now); });
  appendPerStream(
      out, clusters, "kfaild_coordinator_longest_gap_seconds", "gauge",
      "Longest interval between two successful operations of the stream since kfaild "
      "started.",
      [](const OperationStatus& c) -> std::optional<double> { return seconds(c.longest_gap_us); });
}

void appendQuorumLeaderChanges(PrometheusText& out, const Clusters& clusters) {
  appendPerControl(out, clusters, "kfaild_quorum_leader_changes_total", "counter",
                   "Changes of the KRaft quorum's leader (or its epoch) the control-plane probe "
                   "saw.",
                   [](const probe::ControlStatus& c) -> std::optional<double> {
                     return static_cast<double>(c.leader_changes);
                   });
}

// Drills by cluster, fault and state: counted by SQL over an index, not by reading every drill
// on every scrape.
void appendDrillCounts(PrometheusText& out, const storage::DrillStore& drills,
                       const Clusters& clusters) {
  auto rows = drills.drillCounts();
  if (!rows) return;
  std::map<storage::ClusterId, std::string> names;
  for (const auto& cluster : clusters) names[cluster.id] = cluster.name;
  std::map<std::tuple<std::string, std::string, std::string>, std::uint64_t> counts;
  for (const auto& d : *rows) {
    const auto name = names.count(d.cluster) ? names[d.cluster] : std::to_string(d.cluster);
    counts[{name, d.fault, d.state}] += static_cast<std::uint64_t>(d.count);
  }
  out.family("kfaild_drills", "gauge",
             "Drills in the database, by cluster, fault and state (outcome).");
  for (const auto& [key, count] : counts) {
    const auto& [cluster, fault, state] = key;
    out.sample("kfaild_drills", {{"cluster", cluster}, {"fault", fault}, {"state", state}}, count);
  }
}

// The last analysed drill of each cluster and fault: its row found in an index, only those rows'
// results parsed.
void appendLastDrills(PrometheusText& out, const storage::DrillStore& drills,
                      const Clusters& clusters) {
  auto last = drills.lastDrills(kAnalysedDrillState);
  if (!last) {
    spdlog::warn("metrics: last drills not read: {}", last.error().describe());
    return;
  }
  std::vector<std::pair<storage::ClusterId, std::string>> configured;
  for (const auto& cluster : clusters) configured.emplace_back(cluster.id, cluster.name);
  renderLastDrills(out, *last, configured);
}

// Whether each cluster's probe probes, and what its metadata poller last saw.
void appendClusterState(PrometheusText& out, const Clusters& clusters) {
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
}

void appendStoreWriter(PrometheusText& out, const storage::WriterStats& writer) {
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
}

void appendDatabaseSize(PrometheusText& out, const storage::Store& store) {
  const auto size = store.databaseSize();
  if (!size) return;
  out.family("kfaild_storage_database_bytes", "gauge",
             "Size of the database file in pages (WAL content included), in bytes.");
  out.sample("kfaild_storage_database_bytes", {}, size->fileBytes());
  out.family("kfaild_storage_used_bytes", "gauge",
             "Bytes of the database's pages in use (the file less SQLite's free pages): what "
             "storage.max_bytes bounds.");
  out.sample("kfaild_storage_used_bytes", {}, size->usedBytes());
}

void appendRetention(PrometheusText& out, const storage::RetentionReport& report) {
  if (report.max_bytes) {
    out.family("kfaild_storage_max_bytes", "gauge",
               "storage.max_bytes: the bound on the used bytes.");
    out.sample("kfaild_storage_max_bytes", {}, *report.max_bytes);
  }
  out.family("kfaild_storage_pruned_rows_total", "counter",
             "Rows deleted by retention (age or size bound), by kind: samples (raw, outside drill "
             "windows), drill_samples, gaps, events.");
  for (const auto& [kind, rows] :
       {std::pair{"samples", report.pruned_samples},
        std::pair{"drill_samples", report.pruned_drill_samples},
        std::pair{"gaps", report.pruned_gaps}, std::pair{"events", report.pruned_events}}) {
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

void appendMaintenance(PrometheusText& out, const maintenance::MaintenanceWindows& maintenance,
                       const Clusters& clusters, common::WallMicros now) {
  auto active = maintenance.activeWindows(now);
  if (!active) {
    spdlog::warn("metrics: maintenance windows not read: {}", active.error().describe());
    return;
  }
  std::vector<MaintenanceCluster> rows;
  for (const auto& c : clusters) {
    const bool in_window = std::any_of(active->begin(), active->end(),
                                       [&c](const auto& w) { return w.cluster == c.id; });
    rows.push_back({c.name, in_window});
  }
  appendMaintenanceMetrics(out, rows);
}

void appendBuildInfo(PrometheusText& out, const BuildInfo& build) {
  out.family("kfaild_build_info", "gauge", "Always 1; the labels say which kfaild is running.");
  out.sample(
      "kfaild_build_info",
      {{"version", build.version}, {"commit", build.commit}, {"librdkafka", build.librdkafka}},
      std::int64_t{1});
}

void appendHttpResponses(PrometheusText& out, const RequestCounter& responses) {
  out.family("kfaild_http_requests_total", "counter",
             "HTTP responses sent, by status code (this scrape not included).");
  for (const auto& [code, count] : responses.snapshot()) {
    const std::string text = std::to_string(code);
    out.sample("kfaild_http_requests_total", {{"code", text}}, count);
  }
}

}  // namespace

Response Endpoints::metrics(const Request& request, const RequestCounter& responses) const {
  if (auto query = QueryReader::create(request.query, {}); !query) {
    return badRequest(request, query.error());
  }
  const auto clusters = live_.clusters();
  const auto now = clock_.monoNow();
  PrometheusText out;
  appendPartitionCounters(out, clusters);
  appendPartitionGauges(out, clusters, now);
  appendPartitionHistograms(out, clusters);
  appendProbeTotals(out, clusters);
  appendControlProbe(out, clusters, now);
  appendCoordinatorProbes(out, clusters, now);
  appendQuorumLeaderChanges(out, clusters);
  if (drills_ != nullptr) {
    appendDrillCounts(out, *drills_, clusters);
    appendLastDrills(out, *drills_, clusters);
  }
  appendClusterState(out, clusters);
  appendStoreWriter(out, store_.writerStats());
  appendDatabaseSize(out, store_);
  if (retention_ != nullptr) appendRetention(out, retention_->retentionReport());
  if (notifications_ != nullptr) {
    appendNotificationMetrics(out, notifications_->notificationMetrics());
  }
  if (maintenance_ != nullptr) appendMaintenance(out, *maintenance_, clusters, clock_.wallNow());
  if (build_) appendBuildInfo(out, *build_);
  appendHttpResponses(out, responses);

  Response response;
  response.status = 200;
  response.content_type = std::string(kPrometheusContentType);
  response.body = out.text();
  return response;
}

}  // namespace kfaild::api
