// probe_bench: kfaild's probe path, wired as server/main.cc wires it (SqliteStore, client-log
// watcher, metadata poller, ProbeRunner; no drill runner), measured from inside the process.
//
//   probe_bench --config FILE [--warmup S] [--duration S] [--setup-timeout S]
//
// Starts the parts, waits until the probe is probing and `warmup` seconds more, then measures for
// `duration` seconds and prints one JSON object: acked messages in the window (sum over
// partitions), process CPU seconds (utime+stime from getrusage) and, per thread group, from
// /proc/self/task; RSS now and peak; ticks and skipped ticks in the window; the worst send
// lateness since the probe started (the pacer keeps only a running maximum); the writer's stats.
//
// Thread groups: kfaild's threads name themselves (kfaild:send, kfaild:report, kfaild:receive,
// kfaild:writer, kfaild:poll, kfaild:quorum); librdkafka names its own ("rdk:..."). Threads
// started by something else inherit the name the main thread has when they start (Linux copies
// `comm` to new threads): "b:store", "b:probe", "b:poller".

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "server/common/clock.h"
#include "server/common/worker.h"
#include "server/config/config.h"
#include "server/observe/client_log.h"
#include "server/observe/metadata_poller.h"
#include "server/probe/probe_runner.h"
#include "storage/sqlite_store.h"

namespace {

using kfaild::common::nameThisThread;
using nlohmann::json;
using Steady = std::chrono::steady_clock;

double cpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

long statusKb(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stol(line.substr(key.size() + 1));
  }
  return -1;
}

// CPU seconds per thread name, summed over the threads that bear it.
std::map<std::string, double> threadCpu() {
  std::map<std::string, double> out;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    const auto open = stat.find('(');
    const auto close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    const std::string name = stat.substr(open + 1, close - open - 1);
    std::istringstream rest(stat.substr(close + 2));
    std::string field;
    // Fields after the name: state(3) ... utime(14) stime(15).
    double utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
      if (i == 14) utime = std::stod(field);
      if (i == 15) stime = std::stod(field);
    }
    // librdkafka's broker threads carry the broker's address; group them by kind.
    std::string group = name;
    if (group.rfind("rdk:broker", 0) == 0) group = "rdk:broker*";
    out[group] += (utime + stime) / tick;
  }
  return out;
}

struct Snapshot {
  double cpu = 0;
  std::map<std::string, double> threads;
  std::uint64_t acked = 0, received = 0, failed = 0, lost = 0, gaps = 0;
  std::uint64_t ticks = 0, skipped = 0;
  Steady::time_point at;
};

Snapshot snapshot(const kfaild::probe::ProbeRunner& probe) {
  Snapshot s;
  const auto status = probe.status();
  for (const auto& p : status.partitions) {
    s.acked += p.counters.acked;
    s.received += p.counters.received;
    s.failed += p.counters.send_failed;
    s.lost += p.counters.lost;
    s.gaps += p.counters.gaps;
  }
  s.ticks = status.ticks;
  s.skipped = status.skipped_ticks;
  s.cpu = cpuSeconds();
  s.threads = threadCpu();
  s.at = Steady::now();
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path;
  int warmup_s = 20, duration_s = 60, setup_timeout_s = 120;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    if (key == "--config")
      config_path = argv[i + 1];
    else if (key == "--warmup")
      warmup_s = std::stoi(argv[i + 1]);
    else if (key == "--duration")
      duration_s = std::stoi(argv[i + 1]);
    else if (key == "--setup-timeout")
      setup_timeout_s = std::stoi(argv[i + 1]);
    else {
      std::cerr
          << "usage: probe_bench --config FILE [--warmup S] [--duration S] [--setup-timeout S]\n";
      return 2;
    }
  }
  if (config_path.empty()) {
    std::cerr
        << "usage: probe_bench --config FILE [--warmup S] [--duration S] [--setup-timeout S]\n";
    return 2;
  }
  kfaild::config::Config config;
  try {
    config = kfaild::config::loadConfigFile(config_path);
  } catch (const kfaild::config::ConfigError& e) {
    std::cerr << "probe_bench: configuration error: " << e.what() << "\n";
    return 2;
  }
  if (config.clusters.size() != 1) {
    std::cerr << "probe_bench: the configuration must have exactly one cluster\n";
    return 2;
  }
  // stdout carries the JSON result only.
  spdlog::set_default_logger(spdlog::stderr_color_mt("probe_bench"));
  spdlog::set_level(spdlog::level::from_str(config.log_level));
  const auto& cc = config.clusters.front();

  kfaild::common::SystemClock clock;
  kfaild::storage::SqliteStoreOptions store_options;
  store_options.max_queued_records = config.storage.max_queued_records;
  nameThisThread("b:store");
  auto store = kfaild::storage::SqliteStore::open(config.storage.path, store_options);
  if (!store) {
    std::cerr << "probe_bench: " << store.error().describe() << "\n";
    return 1;
  }
  auto id = (*store)->ensureCluster(cc.name, cc.bootstrap);
  if (!id) return 1;
  std::set<std::string> topics;
  for (const auto& t : cc.probe.topics) topics.insert(t.name);
  kfaild::observe::ClientLogWatcher client_log(*id, topics, **store, clock);
  kfaild::observe::MetadataPoller poller(cc, *id, **store, clock);
  kfaild::probe::ProbeRunner probe(cc, *id, **store, clock, client_log.sink());
  nameThisThread("b:probe");
  const auto started = Steady::now();
  if (auto s = probe.start(); !s) {
    std::cerr << "probe_bench: " << s.error().describe() << "\n";
    return 1;
  }
  nameThisThread("b:poller");
  if (auto s = poller.start(); !s) {
    std::cerr << "probe_bench: " << s.error().describe() << "\n";
    return 1;
  }
  nameThisThread("b:main");

  const auto setup_deadline = Steady::now() + std::chrono::seconds(setup_timeout_s);
  while (probe.status().phase != kfaild::probe::ProbePhase::kProbing) {
    if (Steady::now() > setup_deadline) {
      std::cerr << "probe_bench: probe not set up after " << setup_timeout_s
                << " s: " << probe.status().problem << "\n";
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const auto probing_at = Steady::now();
  std::this_thread::sleep_for(std::chrono::seconds(warmup_s));
  const auto a = snapshot(probe);
  const auto w0 = (*store)->writerStats();
  std::this_thread::sleep_for(std::chrono::seconds(duration_s));
  const auto b = snapshot(probe);
  const auto status = probe.status();
  const auto w1 = (*store)->writerStats();
  const long rss_kb = statusKb("VmRSS");
  const long hwm_kb = statusKb("VmHWM");

  probe.stop();
  poller.stop();
  (*store)->flush();
  const auto w2 = (*store)->writerStats();

  const double window = std::chrono::duration<double>(b.at - a.at).count();
  const auto acked = static_cast<double>(b.acked - a.acked);
  json threads = json::object();
  for (const auto& [name, cpu] : b.threads) {
    const auto before = a.threads.count(name) ? a.threads.at(name) : 0.0;
    threads[name] = cpu - before;
  }
  json out{
      {"kind", "probe"},
      {"partitions", status.partitions.size()},
      {"interval_us", status.interval_us},
      {"setup_s", std::chrono::duration<double>(probing_at - started).count()},
      {"window_s", window},
      {"acked", b.acked - a.acked},
      {"received", b.received - a.received},
      {"expected", static_cast<double>(status.partitions.size()) * window * 1e6 /
                       static_cast<double>(status.interval_us)},
      {"send_failed", b.failed - a.failed},
      {"lost", b.lost - a.lost},
      {"gaps", b.gaps - a.gaps},
      {"ticks", b.ticks - a.ticks},
      {"skipped_ticks", b.skipped - a.skipped},
      {"skipped_ticks_total", status.skipped_ticks},
      {"max_send_lateness_us", status.max_send_lateness_us},
      {"cpu_s", b.cpu - a.cpu},
      {"cpu_cores", (b.cpu - a.cpu) / window},
      {"cpu_ms_per_1000_acked", acked > 0 ? (b.cpu - a.cpu) * 1e6 / acked : 0.0},
      {"rss_kb", rss_kb},
      {"peak_rss_kb", hwm_kb},
      {"rss_kb_per_1000_msgs_per_s",
       acked > 0 ? static_cast<double>(rss_kb) / (acked / window / 1000.0) : 0.0},
      {"thread_cpu_s", threads},
      {"writer_queued_max_seen", std::max(w0.queued, w1.queued)},
      {"writer_written_in_window", w1.written - w0.written},
      {"dropped_samples", w2.dropped_samples},
      {"dropped_other", w2.dropped_other},
      {"failed_batches", w2.failed_batches},
  };
  std::cout << out.dump() << std::endl;
  return 0;
}
