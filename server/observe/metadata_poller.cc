#include "server/observe/metadata_poller.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>

#include "server/common/json_text.h"
#include "server/observe/metadata_diff.h"

namespace kfaild::observe {

std::unique_ptr<kafka::SharedHandle> makeObserverClient(const config::ClusterConfig& cluster) {
  kafka::ClientOptions options;
  options.bootstrap = cluster.bootstrap;
  options.properties = cluster.client;
  options.client_id = "kfaild-" + cluster.name + "-observer";
  // A metadata request for a missing topic must not create it (producers default to true).
  // socket.timeout.ms is the observer's own, whatever `client` says: a metadata request is sent
  // with it as its timeout, and librdkafka keeps sending to a broker whose requests are still in
  // flight. With librdkafka's default of 60 s a broker whose packets vanish (isolate with drop)
  // holds every poll for 60 s, and the poller sees an ISR shrink of 9 s only at 60 s. After 3 s
  // the request times out, librdkafka drops that connection and asks another broker.
  // reconnect.backoff.max.ms 1000, as the probe's clients: with librdkafka's default (10 s, plus
  // jitter, per broker) the poller stays without a connection, so "unreachable", for that long
  // after the brokers are back, and a drill then is refused for want of fresh metadata (bf81fe6).
  // The other properties stay librdkafka's defaults: this client sends one small request per
  // poll and nothing else, so its timers cost next to nothing (docs/PERFORMANCE.md, "librdkafka
  // clients per cluster").
  return std::make_unique<kafka::SharedHandle>(
      RD_KAFKA_PRODUCER, std::move(options),
      std::map<std::string, std::string>{{"allow.auto.create.topics", "false"},
                                         {"socket.timeout.ms", "3000"},
                                         {"reconnect.backoff.max.ms", "1000"}});
}

MetadataPoller::MetadataPoller(const config::ClusterConfig& cluster, storage::ClusterId cluster_id,
                               storage::Store& store, const common::Clock& clock,
                               kafka::SharedHandle* observer)
    : cluster_(cluster),
      cluster_id_(cluster_id),
      store_(store),
      clock_(clock),
      own_observer_(observer == nullptr ? makeObserverClient(cluster) : nullptr),
      observer_(observer == nullptr ? own_observer_.get() : observer) {
  for (const auto& t : cluster_.probe.topics) topics_.push_back(t.name);
  if (auto problem = kafka::quorumClientProblem(cluster_.client); !problem.empty()) {
    state_.quorum_error = std::move(problem);
  } else {
    kafka::QuorumClientOptions options;
    options.bootstrap = cluster_.bootstrap;
    options.properties = cluster_.client;
    options.client_id = "kfaild-" + cluster_.name + "-observer";
    options.timeout_ms = kQuorumTimeoutMs;
    quorum_describer_.emplace(std::move(options));
  }
}

MetadataPoller::~MetadataPoller() {
  stop();
}

Status MetadataPoller::ensureHandle() {
  if (handle_ != nullptr) return okStatus();
  auto handle = observer_->get();
  if (!handle) return handle.error();
  handle_ = *handle;
  return okStatus();
}

Status MetadataPoller::start() {
  if (auto status = ensureHandle(); !status) return status;
  cancel_describe_ = false;
  metadata_poller_.start("kfaild:poll", [this] { run(); });
  if (quorum_describer_) {
    quorum_poller_.start("kfaild:quorum", [this] { runQuorum(); });
  } else {
    spdlog::warn("cluster {}: {}", cluster_.name, state_.quorum_error);
  }
  return okStatus();
}

void MetadataPoller::requestStop() {
  cancel_describe_ = true;
  metadata_poller_.requestStop();
  quorum_poller_.requestStop();
}

void MetadataPoller::stop() {
  // Both flags before either join, so a describe under way gives up while the metadata poll ends.
  requestStop();
  metadata_poller_.stop();
  quorum_poller_.stop();
}

void MetadataPoller::run() {
  while (!metadata_poller_.stopRequested()) {
    const auto started = clock_.monoNow();
    pollOnce();
    const auto wait = cluster_.observe.metadata_interval_us - (clock_.monoNow() - started);
    if (wait > 0) metadata_poller_.sleepFor(std::chrono::microseconds(wait));
  }
}

void MetadataPoller::runQuorum() {
  while (!quorum_poller_.stopRequested()) {
    const auto started = clock_.monoNow();
    describeQuorumOnce();
    const auto wait = kQuorumIntervalUs - (clock_.monoNow() - started);
    if (wait > 0) quorum_poller_.sleepFor(std::chrono::microseconds(wait));
  }
}

void MetadataPoller::record(storage::Event event) {
  store_.addEvent(std::move(event));
}

void MetadataPoller::describeQuorumOnce() {
  if (!quorum_describer_) return;
  auto quorum = quorum_describer_->describe(cancel_describe_);
  if (cancel_describe_) return;
  const auto now = clock_.wallNow();
  std::lock_guard lock(mutex_);
  if (!quorum) {
    if (state_.quorum || state_.quorum_error.empty()) {
      spdlog::warn("cluster {}: {}", cluster_.name, quorum.error().describe());
    }
    state_.quorum.reset();
    state_.quorum_error = quorum.error().describe();
    return;
  }
  if (last_quorum_ && !state_.quorum_error.empty()) {
    spdlog::info("cluster {}: quorum described again via {}", cluster_.name, quorum->answered_by);
  }
  if (last_quorum_) {
    if (auto e = diffQuorum(*last_quorum_, *quorum, cluster_id_, now)) {
      spdlog::info("cluster {}: {} {}", cluster_.name, e->kind, e->detail);
      record(std::move(*e));
    }
  } else {
    std::string voters;
    for (const auto& v : quorum->voters) {
      voters += (voters.empty() ? "" : ", ") + std::to_string(v.replica_id);
    }
    spdlog::info(
        "cluster {}: active controller {} (epoch {}), voters {} (DescribeQuorum v{} via {})",
        cluster_.name, quorum->leader_id, quorum->leader_epoch, voters, quorum->api_version,
        quorum->answered_by);
  }
  last_quorum_ = *quorum;
  state_.quorum = std::move(*quorum);
  state_.quorum_at = now;
  state_.quorum_error.clear();
}

void MetadataPoller::pollOnce() {
  if (!ensureHandle()) return;
  // A request to a dead broker must not hold the poll for long: the client tries another.
  const int timeout_ms = static_cast<int>(
      std::max<std::int64_t>(1000, 10 * cluster_.observe.metadata_interval_us / 1000));
  auto snapshot = kafka::fetchMetadata(handle_, topics_, timeout_ms, clock_);
  const auto now = clock_.wallNow();
  std::map<std::string, std::int32_t> partition_counts;
  if (snapshot) {
    for (const auto& t : snapshot->topics) {
      if (!t.error.empty() || t.partitions.empty()) continue;
      std::int32_t count = 0;
      for (const auto& p : t.partitions) count = std::max(count, p.partition + 1);
      partition_counts[t.name] = count;
    }
  }
  // Metadata that named no broker (kafka::addBootstrapAgain): every client of the cluster may have
  // dropped every broker it knew. Given the bootstrap servers again, at most once a second, until
  // a poll names a broker.
  const bool no_broker = snapshot ? snapshot->brokers.empty() : nobroker_since_last_answer_;
  if (snapshot) nobroker_since_last_answer_ = snapshot->brokers.empty();
  if (no_broker && clock_.monoNow() - bootstrap_added_at_ >= 1'000'000) {
    bootstrap_added_at_ = clock_.monoNow();
    const int handles = kafka::addBootstrapAgain(cluster_.bootstrap);
    spdlog::warn(
        "cluster {}: the metadata named no broker: bootstrap servers given again to {} client(s)",
        cluster_.name, handles);
  }
  std::unique_lock lock(mutex_);
  ++state_.polls;
  if (!snapshot) {
    ++state_.failures;
    if (state_.reachable || state_.polls == 1) {
      storage::Event e;
      e.cluster = cluster_id_;
      e.t_us = now;
      e.source = toString(common::EventSource::kMetadata);
      e.kind = toString(common::EventKind::kMetadataUnavailable);
      e.detail = common::jsonText(nlohmann::json{{"error", snapshot.error().describe()}});
      record(std::move(e));
      spdlog::warn("cluster {}: metadata unavailable: {}", cluster_.name,
                   snapshot.error().describe());
    }
    state_.reachable = false;
    state_.last_error = snapshot.error().describe();
    return;
  }
  if (!state_.reachable) {
    storage::Event e;
    e.cluster = cluster_id_;
    // The first answer of this poll is when the cluster was seen answering again.
    e.t_us = snapshot->topics.empty() ? snapshot->brokers_at_us
                                      : snapshot->topics.front().answered_at_us;
    e.source = toString(common::EventSource::kMetadata);
    e.kind = toString(common::EventKind::kMetadataAvailable);
    nlohmann::json brokers = nlohmann::json::array();
    for (const auto& b : snapshot->brokers) brokers.push_back(b.id);
    e.detail = common::jsonText(nlohmann::json{{"brokers", brokers}});
    record(std::move(e));
  }
  if (state_.snapshot) {
    for (auto& e : diffSnapshots(*state_.snapshot, *snapshot, cluster_id_)) {
      spdlog::info(
          "cluster {}: {}{}{} {}", cluster_.name, e.kind, e.topic ? " " + *e.topic : std::string(),
          e.partition ? "[" + std::to_string(*e.partition) + "]" : std::string(), e.detail);
      record(std::move(e));
    }
  }
  if (!state_.snapshot || state_.snapshot->brokers != snapshot->brokers) {
    std::string ids;
    for (const auto& b : snapshot->brokers) {
      ids += (ids.empty() ? "" : ", ") + std::to_string(b.id) + " (" + b.host + ":" +
             std::to_string(b.port) + ")";
    }
    spdlog::info("cluster {}: brokers in metadata: {}", cluster_.name, ids.empty() ? "none" : ids);
  }
  state_.snapshot = std::move(*snapshot);
  state_.snapshot_at = now;
  state_.reachable = true;
  state_.last_error.clear();
  lock.unlock();
  if (partition_count_listener_) partition_count_listener_(partition_counts);
}

ObservedCluster MetadataPoller::latest() const {
  std::lock_guard lock(mutex_);
  return state_;
}

}  // namespace kfaild::observe
