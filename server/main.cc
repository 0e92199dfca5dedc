// kfaild: wires the configured parts together and runs until SIGTERM/SIGINT.

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "api/drill_control.h"
#include "api/drill_endpoints.h"
#include "api/endpoints.h"
#include "api/http_server.h"
#include "api/live_state.h"
#include "api/router.h"
#include "api/static_files.h"
#include "server/common/clock.h"
#include "server/config/config.h"
#include "server/drill/drill_runner.h"
#include "server/drill/errc.h"
#include "server/drill/scheduler.h"
#include "server/fault/injector_factory.h"
#include "server/kafka/client.h"
#include "server/observe/client_log.h"
#include "server/drill/live_seams.h"
#include "server/observe/metadata_poller.h"
#include "server/probe/probe_runner.h"
#include "storage/sqlite_drill_store.h"
#include "storage/sqlite_store.h"

namespace {

constexpr const char* kUsage =
    "usage: kfaild --config FILE [--client-log-dir DIR] [--check-config] [--version]\n"
    "  --config FILE         YAML configuration (see deploy/examples/)\n"
    "  --client-log-dir DIR  append every librdkafka log line to DIR/<cluster>-client.log\n"
    "  --check-config        validate the configuration and exit\n"
    "  --version             print versions and exit\n";

struct Options {
  std::string config_path;
  std::string client_log_dir;
  bool check_only = false;
};

struct ClusterParts {
  kfaild::config::ClusterConfig config;
  kfaild::storage::ClusterId id = 0;
  std::unique_ptr<kfaild::observe::ClientLogWatcher> client_log;
  std::unique_ptr<kfaild::observe::MetadataPoller> poller;
  std::unique_ptr<kfaild::probe::ProbeRunner> probe;
  // The drill engine's seams over the poller, the probe and an admin client, and the engine;
  // only with an inventory.
  std::unique_ptr<kfaild::drill::PollerView> view;
  std::unique_ptr<kfaild::drill::RunnerProbeView> probe_view;
  std::unique_ptr<kfaild::drill::KafkaClusterAdmin> admin;
  std::unique_ptr<kfaild::drill::DrillRunner> drills;
};

// What the HTTP API sees of the running clusters: snapshots from the pollers and probes.
class DaemonLiveClusters final : public kfaild::api::LiveClusters {
 public:
  explicit DaemonLiveClusters(const std::vector<ClusterParts>& clusters) : clusters_(clusters) {}
  std::vector<kfaild::api::ClusterLive> clusters() const override {
    std::vector<kfaild::api::ClusterLive> out;
    out.reserve(clusters_.size());
    for (const auto& parts : clusters_) {
      out.push_back({parts.config.name, parts.id, parts.config.bootstrap, parts.poller->latest(),
                     parts.probe->status()});
    }
    return out;
  }

 private:
  const std::vector<ClusterParts>& clusters_;
};

// How the HTTP API starts and aborts drills: through the cluster's DrillRunner.
class DaemonDrillControl final : public kfaild::api::DrillControl {
 public:
  explicit DaemonDrillControl(std::vector<ClusterParts>& clusters) : clusters_(clusters) {}
  bool drillsEnabled(kfaild::storage::ClusterId cluster) const override { return runner(cluster) != nullptr; }
  kfaild::Result<std::int64_t> submit(kfaild::storage::ClusterId cluster,
                                      const kfaild::drill::DrillSpec& spec) override {
    return runner(cluster)->submit(spec);
  }
  kfaild::Status abort(kfaild::storage::ClusterId cluster, std::int64_t drill_id) override {
    auto* r = runner(cluster);
    if (r == nullptr) {
      return kfaild::Error{make_error_code(kfaild::drill::errc::drill_not_found),
                           "drills are not enabled for the drill's cluster"};
    }
    return r->abort(drill_id);
  }

 private:
  kfaild::drill::DrillRunner* runner(kfaild::storage::ClusterId cluster) const {
    for (auto& parts : clusters_) {
      if (parts.id == cluster) return parts.drills.get();
    }
    return nullptr;
  }
  std::vector<ClusterParts>& clusters_;
};

void logStatus(const ClusterParts& parts, const kfaild::common::Clock& clock) {
  const auto observed = parts.poller->latest();
  std::string brokers;
  if (observed.snapshot) {
    for (const auto& b : observed.snapshot->brokers) brokers += (brokers.empty() ? "" : ",") + std::to_string(b.id);
  }
  const auto probe = parts.probe->status();
  std::string partitions;
  const auto now = clock.monoNow();
  for (const auto& p : probe.partitions) {
    const double since_ack =
        p.last_ack ? static_cast<double>(now - p.last_ack->mono) / 1e6 : -1.0;
    partitions += fmt::format(" {}[{}] acked={} recv={} failed={} lost={} gaps={} last_ack={:.3f}s",
                              p.topic, p.partition, p.counters.acked, p.counters.received,
                              p.counters.send_failed, p.counters.lost, p.counters.gaps, since_ack);
  }
  spdlog::info("cluster {}: {} brokers [{}] probe {}{}{}", parts.config.name,
               observed.reachable ? "reachable," : "unreachable,", brokers,
               kfaild::probe::toString(probe.phase),
               probe.problem.empty() ? "" : " (" + probe.problem + ")", partitions);
}

}  // namespace

int main(int argc, char* argv[]) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--config" && i + 1 < argc) {
      options.config_path = argv[++i];
    } else if (arg == "--client-log-dir" && i + 1 < argc) {
      options.client_log_dir = argv[++i];
    } else if (arg == "--check-config") {
      options.check_only = true;
    } else if (arg == "--version") {
      std::cout << "kfaild " << KFAILD_VERSION << " (librdkafka "
                << kfaild::kafka::librdkafkaVersion() << ")\n";
      return 0;
    } else if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    } else {
      std::cerr << "kfaild: unknown or incomplete argument '" << arg << "'\n" << kUsage;
      return 2;
    }
  }
  if (options.config_path.empty()) {
    std::cerr << "kfaild: --config is required\n" << kUsage;
    return 2;
  }

  kfaild::config::Config config;
  try {
    config = kfaild::config::loadConfigFile(options.config_path);
  } catch (const kfaild::config::ConfigError& e) {
    std::cerr << "kfaild: configuration error: " << e.what() << '\n';
    return 2;
  }
  if (options.check_only) {
    std::cout << options.config_path << ": ok (" << config.clusters.size() << " cluster(s))\n";
    return 0;
  }

  spdlog::set_default_logger(spdlog::stderr_color_mt("kfaild"));
  spdlog::set_level(spdlog::level::from_str(config.log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%fZ %^%l%$ %v", spdlog::pattern_time_type::utc);
  spdlog::info("kfaild {} starting, librdkafka {}", KFAILD_VERSION,
               kfaild::kafka::librdkafkaVersion());

  // Signals are taken synchronously by the main thread; every thread started after this inherits
  // the blocked mask, so SIGTERM never interrupts a probe or writer thread.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // Everything the configuration decides that can fail is tried before anything starts: a
  // mistake stops kfaild with exit 2 before it opens the database, connects to a cluster or
  // touches a node.
  for (std::size_t i = 0; i < config.clusters.size(); ++i) {
    if (auto s = kfaild::kafka::checkClientProperties(config.clusters[i].client); !s) {
      std::cerr << "kfaild: configuration error: clusters[" << i << "].client: " << s.error().describe() << '\n';
      return 2;
    }
  }
  kfaild::api::StaticFiles web;
  if (!config.http.web_dir.empty()) {
    if (auto s = web.load(config.http.web_dir); !s) {
      std::cerr << "kfaild: configuration error: http." << s.error().message << '\n';
      return 2;
    }
  }
  // The router is filled once the parts it serves exist; the address is claimed now.
  kfaild::api::Router router;
  std::unique_ptr<kfaild::api::HttpServer> http;
  if (config.http.enabled) {
    kfaild::api::ServerOptions server_options;
    server_options.host = config.http.host;
    server_options.port = static_cast<std::uint16_t>(config.http.port);
    server_options.token = config.http.token;
    server_options.max_connections = static_cast<std::size_t>(config.http.max_connections);
    server_options.read_timeout = std::chrono::milliseconds(config.http.read_timeout_ms);
    server_options.max_body_bytes = static_cast<std::size_t>(config.http.max_body_bytes);
    http = std::make_unique<kfaild::api::HttpServer>(server_options, router);
    if (auto s = http->listen(); !s) {
      std::cerr << "kfaild: configuration error: http: " << s.error().message << '\n';
      return 2;
    }
  }

  kfaild::common::SystemClock clock;
  kfaild::storage::SqliteStoreOptions store_options;
  store_options.max_queued_records = config.storage.max_queued_records;
  auto store = kfaild::storage::SqliteStore::open(config.storage.path, store_options);
  if (!store) {
    spdlog::critical("cannot open the database {}: {}", config.storage.path,
                     store.error().describe());
    return 1;
  }
  spdlog::info("database {}", config.storage.path);
  auto drill_store = kfaild::storage::SqliteDrillStore::open(config.storage.path);
  if (!drill_store) {
    spdlog::critical("cannot open the drill tables of {}: {}", config.storage.path,
                     drill_store.error().describe());
    return 1;
  }

  std::vector<ClusterParts> clusters;
  for (std::size_t i = 0; i < config.clusters.size(); ++i) {
    const auto& cc = config.clusters[i];
    auto id = (*store)->ensureCluster(cc.name, cc.bootstrap);
    if (!id) {
      spdlog::critical("cannot register cluster {}: {}", cc.name, id.error().describe());
      return 1;
    }
    ClusterParts parts;
    parts.config = cc;
    parts.id = *id;
    std::set<std::string> topics;
    for (const auto& t : cc.probe.topics) topics.insert(t.name);
    parts.client_log = std::make_unique<kfaild::observe::ClientLogWatcher>(
        *id, topics, **store, clock,
        options.client_log_dir.empty() ? std::string()
                                       : options.client_log_dir + "/" + cc.name + "-client.log");
    parts.poller = std::make_unique<kfaild::observe::MetadataPoller>(cc, *id, **store, clock);
    parts.probe = std::make_unique<kfaild::probe::ProbeRunner>(cc, *id, **store, clock,
                                                               parts.client_log->sink());
    // The poller first: recovering a node left down by an earlier kfaild waits until the
    // metadata shows it back in every ISR.
    if (auto s = parts.poller->start(); !s) {
      std::cerr << "kfaild: configuration error: clusters[" << i << "].client: "
                << s.error().describe() << '\n';
      return 2;
    }
    if (!cc.inventory.empty()) {
      std::map<std::int32_t, std::unique_ptr<kfaild::fault::Injector>> injectors;
      for (const auto& node : cc.inventory) injectors[node.id] = kfaild::fault::makeInjector(node, clock);
      parts.view = std::make_unique<kfaild::drill::PollerView>(*parts.poller);
      parts.probe_view = std::make_unique<kfaild::drill::RunnerProbeView>(*parts.probe);
      parts.admin = std::make_unique<kfaild::drill::KafkaClusterAdmin>(cc);
      if (auto s = parts.admin->connect(); !s) {
        spdlog::critical("cluster {}: cannot start the drill engine: {}", cc.name, s.error().describe());
        return 1;
      }
      parts.drills = std::make_unique<kfaild::drill::DrillRunner>(
          cc, *id, **store, **drill_store, clock,
          kfaild::drill::RunnerSeams{*parts.view, *parts.probe_view, *parts.admin}, std::move(injectors));
      // Before anything else: a node a previous kfaild left down comes back first.
      auto recovered = parts.drills->recoverPending(std::chrono::seconds(600));
      if (!recovered) {
        spdlog::critical("cluster {}: cannot read the recovery journal: {}", cc.name,
                         recovered.error().describe());
        return 1;
      }
      if (*recovered > 0) spdlog::warn("cluster {}: recovered {} node(s) left down by an earlier drill", cc.name, *recovered);
    }
    if (auto s = parts.probe->start(); !s) {
      // A refused client property is a configuration mistake: name the key.
      std::cerr << "kfaild: configuration error: clusters[" << i << "].client: "
                << s.error().describe() << '\n';
      return 2;
    }
    if (parts.drills) parts.drills->start();
    spdlog::info("cluster {}: probing {} topic(s) via {}{}", cc.name, cc.probe.topics.size(), cc.bootstrap,
                 parts.drills ? ", drills enabled for " + std::to_string(cc.inventory.size()) + " node(s)" : "");
    clusters.push_back(std::move(parts));
  }
  std::map<kfaild::storage::ClusterId, kfaild::drill::DrillRunner*> runners;
  for (auto& parts : clusters) {
    if (parts.drills) runners[parts.drills->clusterId()] = parts.drills.get();
  }
  kfaild::drill::Scheduler scheduler(**drill_store, clock, runners);
  scheduler.start();

  // The HTTP API and the dashboard. Handlers only read snapshots and the database, and queue
  // drills; they never wait on the probe, the writer or a drill.
  DaemonLiveClusters live(clusters);
  DaemonDrillControl control(clusters);
  kfaild::api::Endpoints endpoints(live, **store, clock);
  endpoints.setDrillStore(drill_store->get());
  endpoints.registerOn(router);
  kfaild::api::DrillEndpoints drill_endpoints(live, **store, **drill_store, control, clock);
  drill_endpoints.registerOn(router);
  if (!config.http.web_dir.empty()) {
    web.registerOn(router);
    spdlog::info("dashboard: {} files ({} bytes) from {}", web.fileCount(), web.totalBytes(), config.http.web_dir);
  }
  if (http) {
    if (auto s = http->serve(); !s) {
      spdlog::critical("http: {}", s.error().describe());
      return 1;
    }
    spdlog::info("http: listening on http://{}:{}/ ({})", config.http.host, http->port(),
                 config.http.token.empty() ? "no token: mutating routes open to loopback"
                                           : "mutating routes need the bearer token");
  }

  const timespec tick{1, 0};
  int seconds = 0;
  while (true) {
    const int sig = sigtimedwait(&signals, nullptr, &tick);
    if (sig == SIGTERM || sig == SIGINT) {
      spdlog::info("received {}, shutting down", strsignal(sig));
      break;
    }
    ++seconds;
    if (seconds % 10 == 0) {
      for (const auto& parts : clusters) logStatus(parts, clock);
      const auto w = (*store)->writerStats();
      if (w.dropped_samples > 0 || w.failed_batches > 0) {
        spdlog::warn("store: queued={} written={} dropped_samples={} failed_batches={} {}",
                     w.queued, w.written, w.dropped_samples, w.failed_batches, w.last_error);
      }
    }
    if (seconds % 3600 == 0) {
      const auto cutoff = clock.wallNow() - config.storage.sample_retention_us;
      // Samples around drills are kept beyond the retention: their analyses can be redone.
      std::vector<kfaild::storage::TimeRange> keep;
      kfaild::storage::DrillQuery drills;
      drills.limit = 100000;
      if (auto all = (*drill_store)->drills(drills); all) {
        for (const auto& d : *all) {
          const auto from = d.started_us.value_or(d.created_us) - 60'000'000;
          const auto to = d.finished_us.value_or(clock.wallNow()) + 60'000'000;
          keep.push_back({from, to});
        }
      }
      if (auto pruned = (*store)->pruneSamples(cutoff, keep); pruned) {
        spdlog::info("store: pruned {} samples older than the retention", *pruned);
      }
    }
  }

  if (http) http->stop();
  scheduler.stop();
  // A running drill brings its node back before its runner stops, within the grace period;
  // past it kfaild exits anyway and the recovery journal finishes the job at the next start.
  auto drills_stopped = std::async(std::launch::async, [&clusters] {
    for (auto& parts : clusters) {
      if (parts.drills) parts.drills->stop();
    }
  });
  if (drills_stopped.wait_for(std::chrono::seconds(config.shutdown_grace_s)) != std::future_status::ready) {
    spdlog::error("a drill did not recover its node within shutdown_grace_s={} s; exiting anyway, the "
                  "recovery journal will bring the node back when kfaild starts again",
                  config.shutdown_grace_s);
    (*store)->flush();
    std::_Exit(3);
  }
  for (auto& parts : clusters) {
    parts.probe->stop();
    parts.poller->stop();
  }
  (*store)->flush();
  const auto w = (*store)->writerStats();
  spdlog::info("stopped: {} records written, {} samples dropped", w.written, w.dropped_samples);
  return 0;
}
