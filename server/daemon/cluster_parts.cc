#include "server/daemon/cluster_parts.h"

#include <spdlog/spdlog.h>

#include <set>

#include "server/fault/injector_factory.h"

namespace kfaild::daemon {
namespace {

// How long the replay at start tries each journal entry before leaving it to the retries.
constexpr std::chrono::seconds kReplayTimeout{600};

}  // namespace

ClusterParts::ClusterParts(const config::ClusterConfig& config, storage::ClusterId id,
                           storage::Store& store, storage::DrillStore& drills,
                           const common::Clock& clock, const std::string& client_log_dir,
                           drill::DrillListener* listener,
                           maintenance::MaintenanceWindows* maintenance,
                           const std::string& gray_instance,
                           const std::map<std::string, storage::ClusterId>& profile_streams)
    : config_(config), id_(id), clock_(clock) {
  std::set<std::string> topics;
  for (const auto& t : config.probe.topics) topics.insert(t.name);
  client_log_ = std::make_unique<observe::ClientLogWatcher>(
      id, topics, store, clock,
      client_log_dir.empty() ? std::string() : client_log_dir + "/" + config.name + "-client.log");
  observer_ = observe::makeObserverClient(config_);
  poller_ = std::make_unique<observe::MetadataPoller>(config_, id, store, clock, observer_.get());
  const auto& profiles = config_.probe.profiles;
  probe_ = std::make_unique<probe::ProbeRunner>(
      config_, id, store, clock, client_log_->sink(),
      profiles.empty() ? std::nullopt : std::optional(profiles.front()));
  for (std::size_t i = 1; i < profiles.size(); ++i) {
    Profile p;
    p.stream = profile_streams.at(profiles[i].name);
    p.client_log = std::make_unique<observe::ClientLogWatcher>(
        p.stream, topics, store, clock,
        client_log_dir.empty()
            ? std::string()
            : client_log_dir + "/" + config.name + "-" + profiles[i].name + "-client.log");
    p.probe = std::make_unique<probe::ProbeRunner>(config_, p.stream, store, clock,
                                                   p.client_log->sink(), profiles[i]);
    p.view = std::make_unique<drill::RunnerProbeView>(*p.probe);
    profiles_.push_back(std::move(p));
  }
  if (config_.probe.control.enabled) {
    control_ = std::make_unique<probe::ControlProbe>(config_, id, store, clock);
    probe_->attachControl(control_.get());
  }
  if (config_.probe.coordinators.enabled) {
    coordinators_ = std::make_unique<probe::CoordinatorProbe>(config_, id, store, clock);
    probe_->attachCoordinators(coordinators_.get());
  }
  poller_->setPartitionCountListener([this](const std::map<std::string, std::int32_t>& counts) {
    probe_->partitionsSeen(counts);
    for (auto& p : profiles_) p.probe->partitionsSeen(counts);
  });
  // A drill engine for every cluster: one without an inventory (a managed service) runs observed
  // drills only, refused any other at the API (DrillControl::drillsEnabled).
  {
    std::map<std::int32_t, std::unique_ptr<fault::Injector>> injectors;
    for (const auto& node : config.inventory)
      injectors[node.id] = fault::makeInjector(node, clock, gray_instance);
    view_ = std::make_unique<drill::PollerView>(*poller_);
    probe_view_ = std::make_unique<drill::RunnerProbeView>(*probe_);
    admin_client_ = observe::makeObserverClient(config_);
    admin_ = std::make_unique<drill::KafkaClusterAdmin>(config_, *admin_client_);
    drill::RunnerSeams seams{*view_, *probe_view_, *admin_, listener, maintenance};
    for (std::size_t i = 0; i < profiles_.size(); ++i) {
      seams.profiles.push_back({profiles[i + 1], profiles_[i].stream, profiles_[i].view.get()});
    }
    drills_ = std::make_unique<drill::DrillRunner>(config_, id, store, drills, clock,
                                                   std::move(seams), std::move(injectors));
  }
}

std::optional<StartFailure> ClusterParts::start(std::size_t index) {
  const auto where = "clusters[" + std::to_string(index) + "].client: ";
  if (auto s = poller_->start(); !s) return StartFailure{2, where + s.error().describe()};
  if (drills_) {
    if (auto s = admin_->connect(); !s)
      return StartFailure{1, "cluster " + config_.name + ": " + s.error().describe()};
  }
  // A refused client property is a configuration mistake: name the key.
  if (auto s = probe_->start(); !s) return StartFailure{2, where + s.error().describe()};
  for (std::size_t i = 0; i < profiles_.size(); ++i) {
    if (auto s = profiles_[i].probe->start(); !s) {
      return StartFailure{2, "clusters[" + std::to_string(index) + "].probe.profiles[" +
                                 std::to_string(i + 1) + "].settings: " + s.error().describe()};
    }
  }
  if (control_) {
    if (auto s = control_->start(); !s) return StartFailure{2, where + s.error().describe()};
  }
  if (coordinators_) {
    if (auto s = coordinators_->start(); !s) return StartFailure{2, where + s.error().describe()};
  }
  // A node a previous kfaild left down is brought back on the engine's thread, before its first
  // drill but beside the probe and the HTTP server: an operator reads GET /api/v1/recoveries and
  // may resolve an entry while kfaild retries it (drills are refused while one is open).
  if (drills_) drills_->start(kReplayTimeout);
  std::string names;
  for (const auto& p : config_.probe.profiles) {
    names += (names.empty() ? "" : ", ") + p.name + " (" + config::toString(p.client) + ")";
  }
  spdlog::info("cluster {}: probing {} topic(s) via {} with client profile(s) {}{}", config_.name,
               config_.probe.topics.size(), config_.bootstrap, names,
               !config_.inventory.empty()
                   ? ", drills enabled for " + std::to_string(config_.inventory.size()) + " node(s)"
                   : ", observed drills only (no inventory)");
  return std::nullopt;
}

void ClusterParts::stopDrills() {
  if (drills_) drills_->stop();
}

void ClusterParts::requestStop() {
  if (coordinators_) coordinators_->requestStop();
  if (control_) control_->requestStop();
  for (auto& p : profiles_) p.probe->requestStop();
  probe_->requestStop();
  poller_->requestStop();
}

void ClusterParts::stop() {
  stopDrills();
  requestStop();
  if (coordinators_) coordinators_->stop();
  if (control_) control_->stop();
  for (auto& p : profiles_) p.probe->stop();
  probe_->stop();
  poller_->stop();
}

std::vector<const probe::ProbeRunner*> ClusterParts::profiles() const {
  std::vector<const probe::ProbeRunner*> out{probe_.get()};
  for (const auto& p : profiles_) out.push_back(p.probe.get());
  return out;
}

std::string ClusterParts::statusLine() const {
  const auto observed = poller_->latest();
  std::string brokers;
  if (observed.snapshot) {
    for (const auto& b : observed.snapshot->brokers)
      brokers += (brokers.empty() ? "" : ",") + std::to_string(b.id);
  }
  const auto probe = probe_->status();
  std::string partitions;
  const auto now = clock_.monoNow();
  for (const auto& p : probe.partitions) {
    const double since_ack = p.last_ack ? static_cast<double>(now - p.last_ack->mono) / 1e6 : -1.0;
    partitions += fmt::format(" {}[{}] acked={} recv={} failed={} lost={} gaps={} last_ack={:.3f}s",
                              p.topic, p.partition, p.counters.acked, p.counters.received,
                              p.counters.send_failed, p.counters.lost, p.counters.gaps, since_ack);
  }
  return fmt::format("cluster {}: {} brokers [{}] probe {}{}{}", config_.name,
                     observed.reachable ? "reachable," : "unreachable,", brokers,
                     probe::toString(probe.phase),
                     probe.problem.empty() ? "" : " (" + probe.problem + ")", partitions);
}

}  // namespace kfaild::daemon
