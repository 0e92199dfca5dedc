#include "server/daemon/daemon.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>

#include "api/access.h"
#include "api/drill_control.h"
#include "api/live_state.h"
#include "server/common/redaction.h"
#include "server/config/token_file.h"
#include "server/drill/errc.h"
#include "server/fault/gray_fault.h"
#include "server/kafka/access_check.h"
#include "server/kafka/client.h"

namespace kfaild::daemon {
namespace {

// What /steady checks each cluster against: its objectives, and the min.insync.replicas of the
// probe topics kfaild creates with one (the only ones it knows without asking the cluster).
std::map<std::string, api::SteadySettings> steadySettings(const config::Config& config) {
  std::map<std::string, api::SteadySettings> out;
  for (const auto& cluster : config.clusters) {
    auto& settings = out[cluster.name];
    settings.objectives = cluster.objectives;
    for (const auto& topic : cluster.probe.topics) {
      if (!topic.create) continue;
      const auto min = topic.create->configs.find("min.insync.replicas");
      if (min == topic.create->configs.end()) continue;
      char* end = nullptr;
      const long value = std::strtol(min->second.c_str(), &end, 10);
      if (end != min->second.c_str() && *end == '\0' && value > 0 && value < 1000) {
        settings.min_insync[topic.name] = static_cast<std::int32_t>(value);
      }
    }
  }
  return out;
}

}  // namespace

// What the HTTP API sees of the running clusters: snapshots from the pollers and probes.
class Daemon::LiveView final : public api::LiveClusters {
 public:
  explicit LiveView(const std::vector<std::unique_ptr<ClusterParts>>& clusters)
      : clusters_(clusters) {}
  std::vector<api::ClusterLive> clusters() const override {
    std::vector<api::ClusterLive> out;
    out.reserve(clusters_.size());
    for (const auto& parts : clusters_) {
      out.push_back({parts->config().name, parts->id(), parts->config().bootstrap,
                     parts->poller().latest(), parts->probe().status()});
      const auto profiles = parts->profiles();
      if (profiles.size() > 1) {
        for (const auto* p : profiles) {
          out.back().profiles.push_back({p->profile().name, config::toString(p->profile().client),
                                         p == profiles.front() ? out.back().probe : p->status()});
        }
      }
    }
    return out;
  }

 private:
  const std::vector<std::unique_ptr<ClusterParts>>& clusters_;
};

// How the HTTP API starts and aborts drills: through the cluster's drill engine.
class Daemon::Control final : public api::DrillControl {
 public:
  explicit Control(const std::vector<std::unique_ptr<ClusterParts>>& clusters)
      : clusters_(clusters) {}
  bool drillsEnabled(storage::ClusterId cluster) const override {
    auto* parts = partsOf(cluster);
    return parts != nullptr && parts->drills() != nullptr && !parts->config().inventory.empty();
  }
  bool observable(storage::ClusterId cluster) const override { return runner(cluster) != nullptr; }
  Result<std::int64_t> submit(storage::ClusterId cluster, const drill::DrillSpec& spec) override {
    return runner(cluster)->submit(spec);
  }
  Status abort(storage::ClusterId cluster, std::int64_t drill_id) override {
    auto* r = runner(cluster);
    if (r == nullptr) {
      return Error{make_error_code(drill::errc::drill_not_found),
                   "drills are not enabled for the drill's cluster"};
    }
    return r->abort(drill_id);
  }
  Result<std::int64_t> mark(storage::ClusterId cluster, std::int64_t drill_id,
                            std::optional<std::int64_t> at_us, std::optional<std::int32_t> broker,
                            const std::string& by) override {
    auto* r = runner(cluster);
    if (r == nullptr) return api::DrillControl::mark(cluster, drill_id, at_us, broker, by);
    auto marked = r->mark(drill_id, at_us, broker, by);
    if (!marked) return marked.error();
    return marked->at_us;
  }

 private:
  ClusterParts* partsOf(storage::ClusterId cluster) const {
    for (const auto& parts : clusters_) {
      if (parts->id() == cluster) return parts.get();
    }
    return nullptr;
  }
  drill::DrillRunner* runner(storage::ClusterId cluster) const {
    auto* parts = partsOf(cluster);
    return parts != nullptr ? parts->drills() : nullptr;
  }
  const std::vector<std::unique_ptr<ClusterParts>>& clusters_;
};

// What a reader without the operator token must not see in drill reasons, events and cluster
// descriptions (server/common/redaction.h): how kfaild reaches each node and each cluster.
std::vector<std::string> sensitiveLiterals(const config::Config& config) {
  std::vector<std::string> out;
  for (const auto& cluster : config.clusters) {
    std::size_t start = 0;
    while (start <= cluster.bootstrap.size()) {
      const auto comma = cluster.bootstrap.find(',', start);
      const auto server = cluster.bootstrap.substr(start, comma - start);
      out.push_back(server);
      out.push_back(server.substr(0, server.rfind(':')));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    for (const auto& node : cluster.inventory) {
      // Where gray faults go: an isolate's nft script (and nft's errors) name the peers' addresses.
      out.insert(out.end(), {node.address, node.netns, node.fill_dir});
      if (node.docker) out.insert(out.end(), {node.docker->endpoint});
      if (node.ssh) {
        const auto& ssh = *node.ssh;
        out.insert(out.end(), {ssh.host, ssh.user.empty() ? ssh.host : ssh.user + "@" + ssh.host,
                               ssh.identity_file, ssh.pid_command, ssh.start_command, ssh.log_dir});
        out.insert(out.end(), ssh.options.begin(), ssh.options.end());
      }
      if (node.local) {
        // The command as one line, not its words: "start" is an argument and an English word.
        std::string command;
        for (const auto& word : node.local->start_command)
          command += (command.empty() ? "" : " ") + word;
        out.insert(out.end(), {node.local->pid_file, node.local->log_dir, command});
      }
      if (node.command) {
        const auto& c = *node.command;
        out.push_back(c.log_dir);
        for (const auto* step : {&c.kill, &c.stop, &c.pause, &c.resume, &c.start, &c.alive}) {
          std::string command;
          for (const auto& word : step->argv) command += (command.empty() ? "" : " ") + word;
          // One word alone ("true") would hide that word everywhere.
          if (step->argv.size() > 1) out.push_back(command);
        }
      }
    }
  }
  // A receiver's URL may carry its secret (a Slack webhook's path is its credential); its host
  // says where kfaild reaches.
  for (const auto& receiver : config.notifications.receivers) {
    out.push_back(receiver.url);
    const auto scheme_end = receiver.url.find("://");
    if (scheme_end != std::string::npos) {
      const auto host_start = scheme_end + 3;
      const auto host_end = receiver.url.find_first_of("/?", host_start);
      const auto authority = receiver.url.substr(host_start, host_end - host_start);
      out.push_back(authority);
      out.push_back(authority.substr(0, authority.rfind(':')));
    }
  }
  return out;
}

Daemon::Daemon(const config::Config& config, const DaemonOptions& options)
    : config_(config), options_(options) {}

Daemon::~Daemon() {
  stop();
}

std::variant<std::unique_ptr<Daemon>, StartFailure> Daemon::start(const config::Config& config,
                                                                  const DaemonOptions& options) {
  std::unique_ptr<Daemon> daemon(new Daemon(config, options));
  if (auto failure = daemon->startAll()) return *failure;
  return daemon;
}

std::optional<StartFailure> Daemon::startAll() {
  if (auto failure = checkClusterSettings()) return failure;
  if (auto failure = loadDashboard()) return failure;
  if (auto failure = claimHttpAddress()) return failure;
  if (auto failure = openDatabase()) return failure;
  startMaintenance();
  createNotifier();
  if (auto failure = startClusters()) return failure;
  if (auto failure = startNotifier()) return failure;
  startScheduler();
  startRetention();
  registerRoutes();
  return serveHttp();
}

std::optional<StartFailure> Daemon::checkClusterSettings() {
  // Everything the configuration decides that can fail is tried before anything starts: a
  // mistake stops kfaild with exit 2 before it opens the database, connects to a cluster or
  // touches a node.
  for (std::size_t i = 0; i < config_.clusters.size(); ++i) {
    if (auto s = kafka::checkClientProperties(config_.clusters[i].client); !s) {
      return StartFailure{kConfigError,
                          "clusters[" + std::to_string(i) + "].client: " + s.error().describe()};
    }
  }
  // Credentials and certificates are checked against each cluster now, a few seconds at most: a
  // refusal is the configuration's mistake, a cluster that does not answer is not (kfaild probes
  // clusters that may be down).
  for (std::size_t i = 0; i < config_.clusters.size(); ++i) {
    const auto& cluster = config_.clusters[i];
    const auto access =
        kafka::checkClusterAccess(cluster.bootstrap, cluster.client, kAccessCheckTimeoutMs);
    if (access.outcome == kafka::AccessCheck::Outcome::kRefused) {
      return StartFailure{kConfigError, "clusters[" + std::to_string(i) + "].client." + access.key +
                                            ": " + access.reason};
    }
    if (access.outcome == kafka::AccessCheck::Outcome::kUnreachable) {
      spdlog::warn("cluster {}: no broker answered at start ({}); probing it anyway", cluster.name,
                   access.reason);
    }
  }
  return std::nullopt;
}

std::optional<StartFailure> Daemon::loadDashboard() {
  if (config_.http.web_dir.empty()) {
    // Without one configured, the dashboard installed beside the binary (share/kfaild/web).
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) config_.http.web_dir = api::installedWebDir(self);
  }
  if (!config_.http.web_dir.empty()) {
    if (auto s = web_.load(config_.http.web_dir); !s)
      return StartFailure{kConfigError, "http." + s.error().message};
  }
  return std::nullopt;
}

std::optional<StartFailure> Daemon::claimHttpAddress() {
  if (!config_.http.enabled) return std::nullopt;
  if (auto failure = setUpAccess()) return failure;
  api::ServerOptions server_options;
  server_options.host = config_.http.host;
  server_options.port = static_cast<std::uint16_t>(config_.http.port);
  server_options.max_connections = static_cast<std::size_t>(config_.http.max_connections);
  server_options.max_connections_per_peer =
      static_cast<std::size_t>(config_.http.max_connections_per_peer);
  server_options.read_timeout = std::chrono::milliseconds(config_.http.read_timeout_ms);
  server_options.max_body_bytes = static_cast<std::size_t>(config_.http.max_body_bytes);
  server_options.tls.cert_file = config_.http.tls.cert_file;
  server_options.tls.key_file = config_.http.tls.key_file;
  server_options.tls.client_ca_file = config_.http.tls.client_ca_file;
  http_ = std::make_unique<api::HttpServer>(server_options, router_);
  if (auto s = http_->listen(); !s) return StartFailure{kConfigError, "http: " + s.error().message};
  return std::nullopt;
}

std::optional<StartFailure> Daemon::openDatabase() {
  storage::SqliteStoreOptions store_options;
  store_options.max_queued_records = config_.storage.max_queued_records;
  auto store = storage::SqliteStore::open(config_.storage.path, store_options);
  if (!store)
    return StartFailure{
        1, "cannot open the database " + config_.storage.path + ": " + store.error().describe()};
  store_ = std::move(*store);
  spdlog::info("database {}", config_.storage.path);
  auto drill_store = storage::SqliteDrillStore::open(config_.storage.path);
  if (!drill_store) {
    return StartFailure{1, "cannot open the drill tables of " + config_.storage.path + ": " +
                               drill_store.error().describe()};
  }
  drill_store_ = std::move(*drill_store);
  auto audit_log = storage::AuditLog::open(config_.storage.path);
  if (!audit_log) {
    return StartFailure{1, "cannot open the audit log of " + config_.storage.path + ": " +
                               audit_log.error().describe()};
  }
  audit_log_ = std::move(*audit_log);
  audit_recorder_ = std::make_unique<api::AuditRecorder>(*audit_log_, clock_);
  audit_recorder_->start();
  router_.setAuditSink(
      [recorder = audit_recorder_.get()](const api::AuditEntry& entry) { (*recorder)(entry); });
  auto notification_queue = storage::NotificationQueue::open(config_.storage.path);
  if (!notification_queue) {
    return StartFailure{1, "cannot open the notification queue of " + config_.storage.path + ": " +
                               notification_queue.error().describe()};
  }
  notification_queue_ = std::move(*notification_queue);
  auto maintenance_store = storage::MaintenanceStore::open(config_.storage.path);
  if (!maintenance_store) {
    return StartFailure{1, "cannot open the maintenance windows of " + config_.storage.path + ": " +
                               maintenance_store.error().describe()};
  }
  maintenance_store_ = std::move(*maintenance_store);
  return std::nullopt;
}

void Daemon::startMaintenance() {
  std::vector<std::unique_ptr<maintenance::AlertSilences>> silences;
  for (const auto& r : config_.notifications.receivers) {
    if (r.type == "alertmanager")
      silences.push_back(std::make_unique<maintenance::AlertmanagerSilences>(r));
  }
  maintenance_ = std::make_unique<maintenance::MaintenanceWindows>(
      *maintenance_store_, clock_, std::move(silences), config_.notifications.retry);
  maintenance_->start();
}

void Daemon::createNotifier() {
  if (config_.notifications.receivers.empty()) return;
  // Links in payloads point at kfaild's API and dashboard as the receivers' readers reach it.
  auto external_url = config_.notifications.external_url;
  if (external_url.empty()) {
    const auto port = http_ ? http_->port() : static_cast<std::uint16_t>(config_.http.port);
    external_url = std::string(config_.http.tls.enabled() ? "https" : "http") + "://" +
                   config_.http.host + ":" + std::to_string(port);
  }
  notifier_ = std::make_unique<notify::Notifier>(config_.notifications, external_url,
                                                 common::Redactor(sensitiveLiterals(config_)),
                                                 *notification_queue_, clock_);
}

std::optional<StartFailure> Daemon::startClusters() {
  for (std::size_t i = 0; i < config_.clusters.size(); ++i) {
    const auto& cc = config_.clusters[i];
    auto id = store_->ensureCluster(cc.name, cc.bootstrap);
    if (!id)
      return StartFailure{1, "cannot register cluster " + cc.name + ": " + id.error().describe()};
    std::map<std::string, storage::ClusterId> streams;
    for (std::size_t p = 1; p < cc.probe.profiles.size(); ++p) {
      const auto& name = cc.probe.profiles[p].name;
      auto stream = store_->ensureProfileStream(*id, name);
      if (!stream) {
        return StartFailure{1, "cannot register profile " + name + " of cluster " + cc.name + ": " +
                                   stream.error().describe()};
      }
      streams[name] = *stream;
    }
    clusters_.push_back(std::make_unique<ClusterParts>(
        cc, *id, *store_, *drill_store_, clock_, options_.client_log_dir, notifier_.get(),
        maintenance_.get(), fault::grayInstanceHere(config_.storage.path), streams));
    if (auto failure = clusters_.back()->start(i)) return failure;
  }
  return std::nullopt;
}

std::optional<StartFailure> Daemon::startNotifier() {
  if (!notifier_) return std::nullopt;
  std::vector<notify::WatchedCluster> watched;
  for (const auto& parts : clusters_) watched.push_back({parts->id(), parts->config().name});
  notifier_->watchIncidents(*store_, *drill_store_, std::move(watched), maintenance_store_.get());
  if (auto s = notifier_->start(); !s)
    return StartFailure{1, "notifications: " + s.error().describe()};
  spdlog::info("notifications: {} receiver(s)", config_.notifications.receivers.size());
  return std::nullopt;
}

void Daemon::startScheduler() {
  std::map<storage::ClusterId, drill::DrillRunner*> runners;
  for (auto& parts : clusters_) {
    // Schedules inject: only a cluster with an inventory runs them.
    if (parts->drills() && !parts->config().inventory.empty())
      runners[parts->id()] = parts->drills();
  }
  scheduler_ = std::make_unique<drill::Scheduler>(*drill_store_, clock_, runners);
  scheduler_->start();
}

void Daemon::startRetention() {
  const auto& kept = config_.storage.retention;
  retention_ = std::make_unique<RetentionTask>(
      *store_, *drill_store_, audit_log_.get(), clock_,
      RetentionPolicy{.samples_us = kept.samples_us,
                      .drill_samples_us = kept.drill_samples_us,
                      .gaps_us = kept.gaps_us,
                      .events_us = kept.events_us,
                      .audit_us = kept.audit_us,
                      .max_bytes = config_.storage.max_bytes,
                      .audit_max_bytes = config_.storage.audit_max_bytes,
                      .interval_us = config_.storage.retention_interval_us});
  retention_->start();
}

void Daemon::registerRoutes() {
  live_ = std::make_unique<LiveView>(clusters_);
  control_ = std::make_unique<Control>(clusters_);
  endpoints_ = std::make_unique<api::Endpoints>(*live_, *store_, clock_);
  endpoints_->setDrillStore(drill_store_.get());
  endpoints_->setRetentionStatus(retention_.get());
  endpoints_->setNotificationStatus(notifier_.get());
  endpoints_->setMaintenance(maintenance_.get());
  endpoints_->setBuildInfo({KFAILD_VERSION, KFAILD_COMMIT, kafka::librdkafkaVersion()});
  endpoints_->registerOn(router_);
  drill_endpoints_ =
      std::make_unique<api::DrillEndpoints>(*live_, *store_, *drill_store_, *control_, clock_);
  drill_endpoints_->setMaintenance(maintenance_.get());
  drill_endpoints_->registerOn(router_);
  maintenance_endpoints_ =
      std::make_unique<api::MaintenanceEndpoints>(*live_, *store_, *maintenance_, clock_);
  maintenance_endpoints_->registerOn(router_);
  steady_endpoint_ =
      std::make_unique<api::SteadyEndpoint>(*live_, *store_, clock_, steadySettings(config_));
  steady_endpoint_->registerOn(router_);
  audit_endpoints_ = std::make_unique<api::AuditEndpoints>(*audit_log_);
  audit_endpoints_->registerOn(router_);
  notification_endpoints_ = std::make_unique<api::NotificationEndpoints>(*notification_queue_);
  notification_endpoints_->registerOn(router_);
  if (!config_.http.web_dir.empty()) {
    web_.registerOn(router_);
    spdlog::info("dashboard: {} files ({} bytes) from {}", web_.fileCount(), web_.totalBytes(),
                 config_.http.web_dir);
  }
}

std::optional<StartFailure> Daemon::serveHttp() {
  if (!http_) return std::nullopt;
  if (auto s = http_->serve(); !s) return StartFailure{1, "http: " + s.error().describe()};
  spdlog::info("http: listening on {}://{}:{}/ ({})", config_.http.tls.enabled() ? "https" : "http",
               config_.http.host, http_->port(),
               config_.http.auth_none ? "http.auth none: no token, loopback only"
               : config_.http.read_auth
                   ? "every route but health and the dashboard's files needs a token"
                   : "changes need the operator token");
  return std::nullopt;
}

std::optional<StartFailure> Daemon::setUpAccess() {
  api::AccessOptions access;
  access.auth = !config_.http.auth_none;
  access.operator_token = config_.http.token;
  access.viewer_token = config_.http.viewer_token;
  access.read_auth = config_.http.read_auth;
  access.listen_host = config_.http.host;
  access.allowed_hosts = config_.http.allowed_hosts;
  if (access.auth && access.operator_token.empty()) {
    auto generated = config::ensureGeneratedToken(config_.storage.path);
    if (!generated)
      return StartFailure{kConfigError,
                          "http.token_file: not set, and " + generated.error().message};
    access.operator_token = generated->token;
    spdlog::info("http: no http.token_file configured; the operator token is in {} ({})",
                 generated->path,
                 generated->created ? "created now, mode 0600" : "made at an earlier start");
  }
  router_.setAccess(api::AccessPolicy(access));
  router_.setRedactor(common::Redactor(sensitiveLiterals(config_)));
  return std::nullopt;
}

void Daemon::runUntil(const sigset_t& signals) {
  const timespec tick{10, 0};
  while (true) {
    const int sig = sigtimedwait(&signals, nullptr, &tick);
    if (sig > 0) {
      spdlog::info("received {}, shutting down", strsignal(sig));
      return;
    }
    for (const auto& parts : clusters_) spdlog::info("{}", parts->statusLine());
    const auto w = store_->writerStats();
    if (w.dropped_samples > 0 || w.failed_batches > 0) {
      spdlog::warn("store: queued={} written={} dropped_samples={} failed_batches={} {}", w.queued,
                   w.written, w.dropped_samples, w.failed_batches, w.last_error);
    }
  }
}

int Daemon::stop() {
  if (stopped_) return 0;
  stopped_ = true;
  if (http_) http_->stop();
  // After the server: every refused request it answered is committed.
  if (audit_recorder_) audit_recorder_->stop();
  if (retention_) retention_->stop();
  if (scheduler_) scheduler_->stop();
  // A running drill brings its node back before its engine stops, within the grace period; past
  // it kfaild exits anyway and the recovery journal finishes the job at the next start.
  auto drills_stopped = std::async(std::launch::async, [this] {
    for (auto& parts : clusters_) parts->stopDrills();
  });
  if (drills_stopped.wait_for(std::chrono::seconds(config_.shutdown_grace_s)) !=
      std::future_status::ready) {
    spdlog::error(
        "a drill did not recover its node within shutdown_grace_s={} s; exiting anyway, the "
        "recovery "
        "journal will bring the node back when kfaild starts again",
        config_.shutdown_grace_s);
    if (store_) store_->flush();
    std::_Exit(kDrillNotRecovered);
  }
  for (auto& parts : clusters_) parts->requestStop();
  for (auto& parts : clusters_) parts->stop();
  // After the drill engines: a drill that ended while they stopped is queued, and sent at the
  // next start if not now.
  if (notifier_) notifier_->stop();
  if (maintenance_) maintenance_->stop();
  if (store_) {
    store_->flush();
    const auto w = store_->writerStats();
    spdlog::info("stopped: {} records written, {} samples dropped", w.written, w.dropped_samples);
  }
  return 0;
}

}  // namespace kfaild::daemon
