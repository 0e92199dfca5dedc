#include "server/observe/metadata_poller.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "server/observe/metadata_diff.h"

namespace kfaild::observe {

MetadataPoller::MetadataPoller(const config::ClusterConfig& cluster, storage::ClusterId cluster_id,
                               storage::Store& store, const common::Clock& clock)
    : cluster_(cluster), cluster_id_(cluster_id), store_(store), clock_(clock) {
  for (const auto& t : cluster_.probe.topics) topics_.push_back(t.name);
}

MetadataPoller::~MetadataPoller() { stop(); }

Status MetadataPoller::ensureHandle() {
  if (handle_) return okStatus();
  kafka::ClientOptions options;
  options.bootstrap = cluster_.bootstrap;
  options.properties = cluster_.client;
  options.client_id = "kfaild-" + cluster_.name + "-observer";
  auto handle =
      kafka::createClient(RD_KAFKA_PRODUCER, options, {{"allow.auto.create.topics", "false"}});
  if (!handle) return handle.error();
  handle_ = std::move(*handle);
  return okStatus();
}

Status MetadataPoller::start() {
  if (auto status = ensureHandle(); !status) return status;
  stopping_ = false;
  thread_ = std::thread([this] { run(); });
  return okStatus();
}

void MetadataPoller::stop() {
  stopping_ = true;
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MetadataPoller::run() {
  while (!stopping_) {
    const auto started = clock_.monoNow();
    pollOnce();
    const auto wait = cluster_.observe.metadata_interval_us - (clock_.monoNow() - started);
    if (wait > 0) {
      std::unique_lock lock(wait_mutex_);
      wake_.wait_for(lock, std::chrono::microseconds(wait), [this] { return stopping_.load(); });
    }
  }
}

void MetadataPoller::record(storage::Event event) { store_.addEvent(std::move(event)); }

void MetadataPoller::pollOnce() {
  if (!ensureHandle()) return;
  // A request to a dead broker must not hold the poll for long: the client tries another.
  const int timeout_ms = static_cast<int>(std::max<std::int64_t>(
      1000, 10 * cluster_.observe.metadata_interval_us / 1000));
  auto snapshot = kafka::fetchMetadata(handle_.get(), topics_, timeout_ms);
  const auto now = clock_.wallNow();
  std::lock_guard lock(mutex_);
  ++state_.polls;
  if (!snapshot) {
    ++state_.failures;
    if (state_.reachable || state_.polls == 1) {
      storage::Event e;
      e.cluster = cluster_id_;
      e.t_us = now;
      e.source = "metadata";
      e.kind = "metadata_unavailable";
      e.detail = nlohmann::json{{"error", snapshot.error().describe()}}.dump();
      record(std::move(e));
      spdlog::warn("cluster {}: metadata unavailable: {}", cluster_.name, snapshot.error().describe());
    }
    state_.reachable = false;
    state_.last_error = snapshot.error().describe();
    return;
  }
  if (!state_.reachable) {
    storage::Event e;
    e.cluster = cluster_id_;
    e.t_us = now;
    e.source = "metadata";
    e.kind = "metadata_available";
    nlohmann::json brokers = nlohmann::json::array();
    for (const auto& b : snapshot->brokers) brokers.push_back(b.id);
    e.detail = nlohmann::json{{"brokers", brokers}}.dump();
    record(std::move(e));
  }
  if (state_.snapshot) {
    for (auto& e : diffSnapshots(*state_.snapshot, *snapshot, cluster_id_, now)) {
      spdlog::info("cluster {}: {}{}{} {}", cluster_.name, e.kind,
                   e.topic ? " " + *e.topic : std::string(),
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
}

ObservedCluster MetadataPoller::latest() const {
  std::lock_guard lock(mutex_);
  return state_;
}

}  // namespace kfaild::observe
