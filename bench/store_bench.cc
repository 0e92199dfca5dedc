// store_bench: how fast SqliteStore writes probe samples and answers the queries kfaild asks of it.
//
//   store_bench write --db PATH [--samples N] [--partitions P] [--interval-us U] [--progress N]
//                     [--direct]
//       Streams N synthetic samples (P partitions in time order, one per partition per interval,
//       like the probe) through Store::addSample and the batch writer, with noise gaps, drill
//       stalls and drill events in the same stream, then flushes. The producer keeps the writer's
//       queue under a high-water mark instead of letting it drop, so the rate printed is what the
//       writer sustains. Appends to an existing database (continuing its timeline).
//       --rate R: produce at R samples/s in ticks, as the probe does, so the writer sees the
//       probe's batch sizes (measures the store's CPU per sample at a given probe rate).
//       --direct: the same rows and SQL straight through one connection, 1M rows per transaction,
//       synchronous=OFF (for building a big database fast; not kfaild's write path).
//   store_bench query --db PATH [--runs R] [--cold-runs C]
//       Latency of Store::samples (one partition, one hour), Store::gaps (min duration 1 s, whole
//       database) and a drill analysis's reads (every partition's samples in the drill window plus
//       the window's events, then analysis::analyse).
//
// Output: one JSON object per line on stdout ("kind" says which). CPU times are getrusage of the
// whole process.

#include <fcntl.h>
#include <pthread.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "server/analysis/drill_analysis.h"
#include "storage/sample_block.h"
#include "storage/sqlite_store.h"

namespace {

using kfaild::storage::ClusterId;
using nlohmann::json;
using Steady = std::chrono::steady_clock;

constexpr const char* kTopic = "orders";
constexpr std::int64_t kSecond = 1'000'000;
constexpr std::int64_t kHour = 3600 * kSecond;
// The synthetic timeline starts here unless the database already has samples.
constexpr std::int64_t kEpochStartUs = 1'760'000'000'000'000;
// A drill (a stall of 8-10 s on every partition, plus its events) once per simulated hour, and a
// noise gap (100-400 ms) on one partition every simulated minute.
constexpr std::int64_t kDrillEveryUs = kHour;
constexpr std::int64_t kNoiseEveryUs = 60 * kSecond;

double cpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

long maxRssKb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// CPU seconds of this process's threads named `name` (the writer thread inherits the name the
// main thread had when it opened the store).
double threadCpu(const std::string& name) {
  double total = 0;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    const auto open = stat.find('(');
    const auto close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    if (stat.substr(open + 1, close - open - 1) != name) continue;
    std::istringstream rest(stat.substr(close + 2));
    std::string field;
    double utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
      if (i == 14) utime = std::stod(field);
      if (i == 15) stime = std::stod(field);
    }
    total += (utime + stime) / tick;
  }
  return total;
}

std::int64_t fileSize(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<std::int64_t>(st.st_size) : 0;
}

double seconds(Steady::duration d) {
  return std::chrono::duration<double>(d).count();
}

// Asks the page cache to forget a file, so the next read of it comes from the disk.
void evict(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

struct Args {
  std::string verb;
  std::string db;
  std::int64_t samples = 5'000'000;
  int partitions = 3;
  std::int64_t interval_us = 20'000;
  std::int64_t progress = 10'000'000;
  int runs = 50;
  int cold_runs = 10;
  bool direct = false;
  double rate = 0;  // samples/s; 0: as fast as the writer takes them
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr
      << "store_bench: " << why << "\n"
      << "usage: store_bench write --db PATH [--samples N] [--partitions P] [--interval-us U] "
         "[--progress N] [--direct] [--rate R]\n"
         "       store_bench query --db PATH [--runs R] [--cold-runs C]\n";
  std::exit(2);
}

Args parseArgs(int argc, char** argv) {
  if (argc < 2) usage("missing verb");
  Args a;
  a.verb = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string key = argv[i];
    if (key == "--direct") {
      a.direct = true;
      continue;
    }
    if (i + 1 >= argc) usage("missing value for " + key);
    const std::string value = argv[++i];
    if (key == "--db") {
      a.db = value;
    } else if (key == "--samples") {
      a.samples = std::stoll(value);
    } else if (key == "--partitions") {
      a.partitions = std::stoi(value);
    } else if (key == "--interval-us") {
      a.interval_us = std::stoll(value);
    } else if (key == "--progress") {
      a.progress = std::stoll(value);
    } else if (key == "--rate") {
      a.rate = std::stod(value);
    } else if (key == "--runs") {
      a.runs = std::stoi(value);
    } else if (key == "--cold-runs") {
      a.cold_runs = std::stoi(value);
    } else {
      usage("unknown option " + key);
    }
  }
  if (a.db.empty()) usage("--db is required");
  if (a.verb != "write" && a.verb != "query") usage("unknown verb " + a.verb);
  return a;
}

std::unique_ptr<kfaild::storage::SqliteStore> openStore(const std::string& path) {
  auto store = kfaild::storage::SqliteStore::open(path);
  if (!store) {
    std::cerr << "store_bench: cannot open " << path << ": " << store.error().describe() << "\n";
    std::exit(1);
  }
  return std::move(*store);
}

// Read-only facts about an existing database, straight from SQLite.
struct DbFacts {
  std::int64_t samples = 0;
  std::int64_t gaps = 0;
  std::int64_t events = 0;
  std::int64_t min_send_us = 0;
  std::int64_t max_send_us = 0;
  std::vector<std::int32_t> partitions;
};

std::int64_t scalar(sqlite3* db, const char* sql) {
  sqlite3_stmt* st = nullptr;
  std::int64_t v = 0;
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW) {
    v = sqlite3_column_int64(st, 0);
  }
  sqlite3_finalize(st);
  return v;
}

DbFacts facts(const std::string& path, bool count_samples) {
  DbFacts f;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::cerr << "store_bench: cannot open " << path << "\n";
    std::exit(1);
  }
  // Per partition: min and max are one b-tree descent each on the clustered key.
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(
      db, "SELECT id, partition FROM probe_partitions WHERE topic = 'orders' ORDER BY partition",
      -1, &st, nullptr);
  std::vector<std::int64_t> ids;
  while (sqlite3_step(st) == SQLITE_ROW) {
    ids.push_back(sqlite3_column_int64(st, 0));
    f.partitions.push_back(static_cast<std::int32_t>(sqlite3_column_int64(st, 1)));
  }
  sqlite3_finalize(st);
  f.min_send_us = INT64_MAX;
  f.max_send_us = 0;
  // A block's first_send_us is its oldest sample; the newest is in the blocks that start within
  // one block span of the last start (storage/sample_block.h).
  for (const auto id : ids) {
    const auto lo =
        scalar(db, ("SELECT min(first_send_us) FROM probe_sample_blocks WHERE partition_id = " +
                    std::to_string(id))
                       .c_str());
    const auto last =
        scalar(db, ("SELECT max(first_send_us) FROM probe_sample_blocks WHERE partition_id = " +
                    std::to_string(id))
                       .c_str());
    if (lo > 0) f.min_send_us = std::min(f.min_send_us, lo);
    sqlite3_stmt* blocks = nullptr;
    sqlite3_prepare_v2(db,
                       "SELECT first_send_us, data FROM probe_sample_blocks WHERE partition_id = "
                       "?1 AND first_send_us > ?2",
                       -1, &blocks, nullptr);
    sqlite3_bind_int64(blocks, 1, id);
    sqlite3_bind_int64(blocks, 2, last - kfaild::storage::kSampleBlockSpanUs);
    std::vector<kfaild::storage::BlockSample> decoded;
    while (sqlite3_step(blocks) == SQLITE_ROW) {
      const auto* data = static_cast<const char*>(sqlite3_column_blob(blocks, 1));
      const std::string_view bytes(data == nullptr ? "" : data,
                                   static_cast<std::size_t>(sqlite3_column_bytes(blocks, 1)));
      if (!kfaild::storage::decodeSampleBlock(bytes, sqlite3_column_int64(blocks, 0), decoded)
               .ok()) {
        std::cerr << "store_bench: a corrupt sample block in " << path << "\n";
        std::exit(1);
      }
    }
    sqlite3_finalize(blocks);
    for (const auto& sample : decoded) f.max_send_us = std::max(f.max_send_us, sample.send_us);
  }
  if (f.min_send_us == INT64_MAX) f.min_send_us = 0;
  if (count_samples)
    f.samples = scalar(db, "SELECT coalesce(sum(samples), 0) FROM probe_sample_blocks");
  f.gaps = scalar(db, "SELECT count(*) FROM gaps");
  f.events = scalar(db, "SELECT count(*) FROM events");
  sqlite3_close(db);
  return f;
}

// The same rows as SqliteStore writes, with the same SQL, but straight through one connection in
// transactions of `rows_per_commit` samples and synchronous=OFF: for building a large database
// faster than the batch writer would. Not what kfaild does at run time. Blocks are cut as the
// writer cuts them at the probe's own rate: a partition's samples of one linger (1 s of send
// time) per block, or kMaxSamplesPerBlock.
class DirectWriter {
 public:
  DirectWriter(const std::string& path, std::int64_t rows_per_commit)
      : rows_per_commit_(rows_per_commit) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) fail("open");
    exec("PRAGMA synchronous=OFF");
    exec("PRAGMA cache_size=-262144");
    exec("PRAGMA foreign_keys=ON");
    prepare(&partition_, R"sql(
INSERT INTO probe_partitions (cluster_id, topic, partition) VALUES (?1, ?2, ?3)
ON CONFLICT (cluster_id, topic, partition) DO UPDATE SET topic = excluded.topic
RETURNING id)sql");
    prepare(&sample_, R"sql(
INSERT INTO probe_sample_blocks (partition_id, first_send_us, samples, data)
VALUES (?1, ?2, ?3, ?4))sql");
    prepare(&gap_, R"sql(
INSERT INTO gaps (cluster_id, topic, partition, kind, start_us, end_us, duration_us, seq_before,
                  seq_after)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9))sql");
    prepare(&event_, R"sql(
INSERT INTO events (cluster_id, t_us, source, kind, broker, topic, partition, detail)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8))sql");
    exec("BEGIN");
  }
  ~DirectWriter() {
    for (auto& [id, run] : runs_) writeRun(id, run);
    sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
    for (auto* st : {partition_, sample_, gap_, event_}) sqlite3_finalize(st);
    sqlite3_close(db_);
  }
  DirectWriter(const DirectWriter&) = delete;
  DirectWriter& operator=(const DirectWriter&) = delete;

  void addSample(kfaild::storage::ProbeSample s) {
    const auto id = partitionId(s.cluster, s.topic, s.partition);
    auto& run = runs_[id];
    if (!run.empty() && s.send_us - run.front().send_us >= kLingerUs) writeRun(id, run);
    run.push_back({.seq = s.seq,
                   .send_us = s.send_us,
                   .ack_us = s.ack_us,
                   .ack_error = s.ack_error,
                   .offset = s.offset,
                   .receive_us = s.receive_us});
    if (++rows_ % rows_per_commit_ == 0) {
      exec("COMMIT");
      exec("BEGIN");
    }
  }
  void addGap(kfaild::storage::Gap g) {
    sqlite3_bind_int64(gap_, 1, g.cluster);
    sqlite3_bind_text(gap_, 2, g.topic.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(gap_, 3, g.partition);
    sqlite3_bind_text(gap_, 4, kfaild::storage::toString(g.kind), -1, SQLITE_STATIC);
    sqlite3_bind_int64(gap_, 5, g.start_us);
    sqlite3_bind_int64(gap_, 6, g.end_us);
    sqlite3_bind_int64(gap_, 7, g.duration_us);
    sqlite3_bind_int64(gap_, 8, g.seq_before);
    sqlite3_bind_int64(gap_, 9, g.seq_after);
    step(gap_);
  }
  void addEvent(kfaild::storage::Event e) {
    sqlite3_bind_int64(event_, 1, e.cluster);
    sqlite3_bind_int64(event_, 2, e.t_us);
    sqlite3_bind_text(event_, 3, e.source.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(event_, 4, e.kind.c_str(), -1, SQLITE_TRANSIENT);
    bindOptional(event_, 5, e.broker ? std::optional<std::int64_t>(*e.broker) : std::nullopt);
    if (e.topic)
      sqlite3_bind_text(event_, 6, e.topic->c_str(), -1, SQLITE_TRANSIENT);
    else
      sqlite3_bind_null(event_, 6);
    bindOptional(event_, 7, e.partition ? std::optional<std::int64_t>(*e.partition) : std::nullopt);
    sqlite3_bind_text(event_, 8, e.detail.c_str(), -1, SQLITE_TRANSIENT);
    step(event_);
  }
  void flush() {
    for (auto& [id, run] : runs_) writeRun(id, run);
    exec("COMMIT");
    exec("BEGIN");
  }
  kfaild::storage::WriterStats writerStats() const { return {}; }

 private:
  [[noreturn]] void fail(const std::string& what) {
    std::cerr << "store_bench: direct " << what << ": " << sqlite3_errmsg(db_) << "\n";
    std::exit(1);
  }
  void exec(const char* sql) {
    if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail(sql);
  }
  void prepare(sqlite3_stmt** st, const char* sql) {
    if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, st, nullptr) != SQLITE_OK) {
      fail("prepare");
    }
  }
  void step(sqlite3_stmt* st) {
    const int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) fail("step");
    sqlite3_reset(st);
  }
  static constexpr std::int64_t kLingerUs = 1'000'000;
  void writeRun(std::int64_t partition_id, std::vector<kfaild::storage::BlockSample>& run) {
    for (const auto& block : kfaild::storage::packSampleBlocks(run)) {
      sqlite3_bind_int64(sample_, 1, partition_id);
      sqlite3_bind_int64(sample_, 2, block.first_send_us);
      sqlite3_bind_int64(sample_, 3, static_cast<std::int64_t>(block.samples));
      sqlite3_bind_blob64(sample_, 4, block.data.data(), block.data.size(), SQLITE_TRANSIENT);
      step(sample_);
    }
    run.clear();
  }
  static void bindOptional(sqlite3_stmt* st, int i, std::optional<std::int64_t> v) {
    if (v)
      sqlite3_bind_int64(st, i, *v);
    else
      sqlite3_bind_null(st, i);
  }
  std::int64_t partitionId(ClusterId cluster, const std::string& topic, std::int32_t partition) {
    const auto it = ids_.find(partition);
    if (it != ids_.end()) return it->second;
    sqlite3_bind_int64(partition_, 1, cluster);
    sqlite3_bind_text(partition_, 2, topic.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(partition_, 3, partition);
    if (sqlite3_step(partition_) != SQLITE_ROW) fail("partition");
    const auto id = sqlite3_column_int64(partition_, 0);
    sqlite3_reset(partition_);
    ids_[partition] = id;
    return id;
  }

  sqlite3* db_ = nullptr;
  sqlite3_stmt* partition_ = nullptr;
  sqlite3_stmt* sample_ = nullptr;
  sqlite3_stmt* gap_ = nullptr;
  sqlite3_stmt* event_ = nullptr;
  std::int64_t rows_per_commit_;
  std::int64_t rows_ = 0;
  std::map<std::int32_t, std::int64_t> ids_;                                // one topic only
  std::map<std::int64_t, std::vector<kfaild::storage::BlockSample>> runs_;  // by partition id
};

template <typename Target>
int writeTo(const Args& a, Target& target, ClusterId id, std::int64_t start_us);

int write(const Args& a) {
  const auto before = fileSize(a.db) > 0 ? facts(a.db, false) : DbFacts{};
  const std::int64_t start_us =
      before.max_send_us > 0 ? before.max_send_us + a.interval_us : kEpochStartUs;
  // Opening the store creates (or upgrades) the schema in either mode. The writer thread it
  // starts inherits this name.
  pthread_setname_np(pthread_self(), "sb:writer");
  auto store = openStore(a.db);
  pthread_setname_np(pthread_self(), "sb:producer");
  auto cluster = store->ensureCluster("bench", "127.0.0.1:29091");
  if (!cluster) {
    std::cerr << "store_bench: ensureCluster: " << cluster.error().describe() << "\n";
    return 1;
  }
  if (!a.direct) return writeTo(a, store, *cluster, start_us);
  store.reset();
  auto direct = std::make_unique<DirectWriter>(a.db, 1'000'000);
  return writeTo(a, direct, *cluster, start_us);
}

template <typename Target>
int writeTo(const Args& a, Target& store, ClusterId id, std::int64_t start_us) {
  // The queue may hold a million records; stay well under it so nothing is dropped, and well
  // over one batch so the writer never waits for the producer.
  constexpr std::uint64_t kHighWater = 400'000;
  constexpr std::uint64_t kLowWater = 200'000;
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<std::int64_t> ack_delay(1'500, 9'000);
  std::uniform_int_distribution<std::int64_t> receive_extra(300, 4'000);
  std::uniform_int_distribution<std::int64_t> noise(100'000, 400'000);
  std::uniform_int_distribution<std::int64_t> stall(8'000'000, 10'000'000);

  const double cpu0 = cpuSeconds();
  const auto t0 = Steady::now();
  auto chunk_t = t0;
  double chunk_cpu = cpu0;
  std::int64_t written = 0, chunk_start = 0, gaps = 0, events = 0;
  std::uint64_t waits = 0;
  std::int64_t tick = 0;
  std::int64_t next_drill = start_us + kDrillEveryUs / 2;
  std::int64_t next_noise = start_us + kNoiseEveryUs;
  while (written < a.samples) {
    const std::int64_t send_base = start_us + tick * a.interval_us;
    for (int p = 0; p < a.partitions && written < a.samples; ++p) {
      kfaild::storage::ProbeSample s;
      s.cluster = id;
      s.topic = kTopic;
      s.partition = p;
      s.seq = tick;
      s.send_us = send_base + p * 7;  // sends of one tick are a few µs apart
      s.ack_us = s.send_us + ack_delay(rng);
      s.offset = tick;
      s.receive_us = *s.ack_us + receive_extra(rng);
      store->addSample(std::move(s));
      ++written;
    }
    if (send_base >= next_noise) {
      next_noise += kNoiseEveryUs;
      kfaild::storage::Gap g;
      g.cluster = id;
      g.topic = kTopic;
      g.partition = static_cast<std::int32_t>(tick % a.partitions);
      g.kind = tick % 2 == 0 ? kfaild::storage::GapKind::kAck : kfaild::storage::GapKind::kReceive;
      g.duration_us = noise(rng);
      g.end_us = send_base;
      g.start_us = send_base - g.duration_us;
      g.seq_before = tick - g.duration_us / a.interval_us;
      g.seq_after = tick;
      store->addGap(std::move(g));
      ++gaps;
    }
    if (send_base >= next_drill) {
      next_drill += kDrillEveryUs;
      // What a kill drill leaves: a stall per partition and kind, and the events around it.
      for (int p = 0; p < a.partitions; ++p) {
        for (auto kind : {kfaild::storage::GapKind::kAck, kfaild::storage::GapKind::kReceive}) {
          kfaild::storage::Gap g;
          g.cluster = id;
          g.topic = kTopic;
          g.partition = p;
          g.kind = kind;
          g.duration_us = stall(rng);
          g.end_us = send_base;
          g.start_us = send_base - g.duration_us;
          g.seq_before = tick - g.duration_us / a.interval_us;
          g.seq_after = tick;
          store->addGap(std::move(g));
          ++gaps;
        }
      }
      const std::int64_t fault = send_base - 9'500'000;
      const auto event = [&](std::int64_t t, const char* source, const char* kind,
                             std::optional<std::int32_t> partition) {
        kfaild::storage::Event e;
        e.cluster = id;
        e.t_us = t;
        e.source = source;
        e.kind = kind;
        e.broker = 1;
        if (partition) {
          e.topic = kTopic;
          e.partition = partition;
        }
        e.detail = "{\"bench\":true}";
        store->addEvent(std::move(e));
        ++events;
      };
      event(fault, "injector", "kill", std::nullopt);
      event(fault + 8'600'000, "broker_log", "fenced", std::nullopt);
      event(fault + 8'700'000, "metadata", "broker_gone", std::nullopt);
      for (int p = 0; p < a.partitions; ++p) {
        event(fault + 8'700'000, "metadata", "leader_change", p);
        event(fault + 8'700'000, "metadata", "isr_shrink", p);
        event(fault + 8'900'000, "client", "client_leader_update", p);
      }
      event(fault + 30'000'000, "metadata", "broker_back", std::nullopt);
    }
    ++tick;
    if (a.rate > 0) {
      const auto due =
          t0 + std::chrono::duration_cast<Steady::duration>(
                   std::chrono::duration<double>(static_cast<double>(written) / a.rate));
      std::this_thread::sleep_until(due);
    }
    if ((tick & 0x3ff) == 0) {
      while (store->writerStats().queued > kHighWater) {
        ++waits;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        if (store->writerStats().queued < kLowWater) break;
      }
    }
    if (a.progress > 0 && written - chunk_start >= a.progress) {
      const auto now = Steady::now();
      const double cpu = cpuSeconds();
      json line{
          {"kind", "write_progress"},
          {"written", written},
          {"elapsed_s", seconds(now - t0)},
          {"chunk_rate_per_s", static_cast<double>(written - chunk_start) / seconds(now - chunk_t)},
          {"chunk_cpu_s", cpu - chunk_cpu},
          {"db_bytes", fileSize(a.db)}};
      std::cout << line.dump() << std::endl;
      chunk_start = written;
      chunk_t = now;
      chunk_cpu = cpu;
    }
  }
  store->flush();
  const auto t1 = Steady::now();
  const double cpu1 = cpuSeconds();
  const double writer_cpu = threadCpu("sb:writer");
  const auto stats = store->writerStats();
  store.reset();  // closes connections; the last one checkpoints the WAL
  const auto after_close = Steady::now();
  const auto total = facts(a.db, false);
  const std::int64_t db_bytes = fileSize(a.db) + fileSize(a.db + "-wal");
  json out{{"kind", "write"},
           {"samples", written},
           {"partitions", a.partitions},
           {"gaps_added", gaps},
           {"events_added", events},
           {"elapsed_s", seconds(t1 - t0)},
           {"close_s", seconds(after_close - t1)},
           {"rate_per_s", static_cast<double>(written) / seconds(t1 - t0)},
           {"cpu_s", cpu1 - cpu0},
           {"cpu_s_per_million", (cpu1 - cpu0) / (static_cast<double>(written) / 1e6)},
           {"max_rss_kb", maxRssKb()},
           {"producer_waits", waits},
           {"dropped_samples", stats.dropped_samples},
           {"dropped_other", stats.dropped_other},
           {"failed_batches", stats.failed_batches},
           {"db_bytes", db_bytes},
           {"simulated_hours", static_cast<double>(total.max_send_us - total.min_send_us) / kHour},
           {"mode", a.direct ? "direct" : "batch_writer"},
           {"paced_rate_per_s", a.rate},
           {"writer_thread_cpu_s", writer_cpu},
           {"writer_cpu_us_per_sample", writer_cpu * 1e6 / static_cast<double>(written)}};
  std::cout << out.dump() << std::endl;
  return stats.dropped_samples == 0 && stats.failed_batches == 0 ? 0 : 1;
}

struct Latency {
  std::vector<double> ms;
  void add(Steady::duration d) { ms.push_back(seconds(d) * 1e3); }
  double pct(double p) const {
    if (ms.empty()) return 0;
    auto v = ms;
    std::sort(v.begin(), v.end());
    const auto i =
        static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size()))) - 1;
    return v[std::min(i, v.size() - 1)];
  }
  json toJson() const {
    return {{"n", ms.size()},
            {"p50_ms", pct(50)},
            {"p99_ms", pct(99)},
            {"max_ms", ms.empty() ? 0 : *std::max_element(ms.begin(), ms.end())}};
  }
};

int query(const Args& a) {
  const auto f = facts(a.db, true);
  if (f.partitions.empty() || f.max_send_us - f.min_send_us <= kHour) {
    std::cerr << "store_bench: " << a.db << " needs more than an hour of samples\n";
    return 1;
  }
  auto store = openStore(a.db);
  auto clusters = store->clusters();
  if (!clusters || clusters->empty()) {
    std::cerr << "store_bench: no cluster in " << a.db << "\n";
    return 1;
  }
  const ClusterId id = clusters->front().id;
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::size_t> pick_partition(0, f.partitions.size() - 1);
  std::uniform_int_distribution<std::int64_t> pick_hour(f.min_send_us, f.max_send_us - kHour);
  const std::int64_t db_bytes = fileSize(a.db) + fileSize(a.db + "-wal");

  json out{{"kind", "query"},
           {"samples", f.samples},
           {"partitions", f.partitions.size()},
           {"gaps", f.gaps},
           {"events", f.events},
           {"db_bytes", db_bytes},
           {"bytes_per_sample", static_cast<double>(db_bytes) / static_cast<double>(f.samples)}};

  const auto hourOfSamples = [&](Latency& lat) -> std::size_t {
    kfaild::storage::SampleQuery q;
    q.cluster = id;
    q.topic = kTopic;
    q.partition = f.partitions[pick_partition(rng)];
    q.range.from_us = pick_hour(rng);
    q.range.to_us = q.range.from_us + kHour;
    q.limit = 10'000'000;  // the default (100,000) is less than an hour at 20 ms
    const auto t = Steady::now();
    auto rows = store->samples(q);
    lat.add(Steady::now() - t);
    if (!rows) {
      std::cerr << "store_bench: samples: " << rows.error().describe() << "\n";
      std::exit(1);
    }
    return rows->size();
  };

  // Cold: the database's pages evicted from the page cache before each query.
  Latency cold_hour;
  std::size_t rows_per_hour = 0;
  for (int i = 0; i < a.cold_runs; ++i) {
    evict(a.db);
    rows_per_hour = hourOfSamples(cold_hour);
  }
  Latency hour;
  for (int i = 0; i < a.runs; ++i) rows_per_hour = hourOfSamples(hour);
  out["samples_hour"] = hour.toJson();
  out["samples_hour"]["rows"] = rows_per_hour;
  out["samples_hour_cold"] = cold_hour.toJson();

  const auto longGaps = [&](Latency& lat) -> std::vector<kfaild::storage::Gap> {
    kfaild::storage::GapQuery q;
    q.min_duration_us = kSecond;
    q.limit = 1'000'000;
    const auto t = Steady::now();
    auto rows = store->gaps(q);
    lat.add(Steady::now() - t);
    if (!rows) {
      std::cerr << "store_bench: gaps: " << rows.error().describe() << "\n";
      std::exit(1);
    }
    return std::move(*rows);
  };
  Latency gaps_cold;
  for (int i = 0; i < a.cold_runs; ++i) {
    evict(a.db);
    longGaps(gaps_cold);
  }
  Latency gaps_lat;
  std::vector<kfaild::storage::Gap> long_gaps;
  for (int i = 0; i < a.runs; ++i) long_gaps = longGaps(gaps_lat);
  out["gaps_over_1s"] = gaps_lat.toJson();
  out["gaps_over_1s"]["rows"] = long_gaps.size();
  out["gaps_over_1s_cold"] = gaps_cold.toJson();

  // Drill windows: the ends of the synthetic drill stalls found above, as the drill runner reads
  // them (drill_runner.cc: baseline 5 s before the fault, observation until the probes resume).
  std::vector<std::int64_t> drill_ends;
  for (const auto& g : long_gaps) {
    if (drill_ends.empty() || g.end_us != drill_ends.back()) drill_ends.push_back(g.end_us);
  }
  if (drill_ends.empty()) {
    std::cerr << "store_bench: no drill stalls in the database\n";
    return 1;
  }
  std::uniform_int_distribution<std::size_t> pick_drill(0, drill_ends.size() - 1);
  Latency reads_lat, analyse_lat, reads_cold;
  std::size_t samples_read = 0;
  const auto drillReads = [&](Latency& reads, Latency* analysis) {
    const std::int64_t end = drill_ends[pick_drill(rng)];
    kfaild::analysis::AnalysisInput input;
    input.fault = "kill";
    input.target = 1;
    input.fault_us = end - 9'500'000;
    input.window_start_us = input.fault_us - 5 * kSecond;
    input.observe_end_us = end + 5 * kSecond;
    input.interval_us = a.interval_us;
    const auto t = Steady::now();
    for (const auto p : f.partitions) {
      kfaild::analysis::PartitionAtFault at;
      at.topic = kTopic;
      at.partition = p;
      at.leader = 1 + p % 3;
      at.replicas = {1, 2, 3};
      at.isr = {1, 2, 3};
      input.partitions.push_back(at);
      kfaild::storage::SampleQuery q;
      q.cluster = id;
      q.topic = kTopic;
      q.partition = p;
      q.range = {input.window_start_us, input.observe_end_us};
      auto rows = store->samples(q);
      if (!rows) std::exit(1);
      input.samples.insert(input.samples.end(), rows->begin(), rows->end());
    }
    kfaild::storage::EventQuery eq;
    eq.cluster = id;
    eq.range = {input.window_start_us - kSecond, input.observe_end_us + 5 * kSecond};
    auto events = store->events(eq);
    if (!events) std::exit(1);
    input.events = std::move(*events);
    reads.add(Steady::now() - t);
    samples_read = input.samples.size();
    if (analysis != nullptr) {
      const auto t2 = Steady::now();
      const auto result = kfaild::analysis::analyse(input);
      analysis->add(Steady::now() - t2);
      if (result.partitions.size() != f.partitions.size()) std::exit(1);
    }
  };
  for (int i = 0; i < a.cold_runs; ++i) {
    evict(a.db);
    drillReads(reads_cold, nullptr);
  }
  for (int i = 0; i < a.runs; ++i) drillReads(reads_lat, &analyse_lat);
  out["drill_reads"] = reads_lat.toJson();
  out["drill_reads"]["samples"] = samples_read;
  out["drill_reads_cold"] = reads_cold.toJson();
  out["drill_analyse"] = analyse_lat.toJson();
  out["max_rss_kb"] = maxRssKb();
  std::cout << out.dump() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parseArgs(argc, argv);
  // stdout carries the JSON results only.
  spdlog::set_default_logger(spdlog::stderr_color_mt("store_bench"));
  return a.verb == "write" ? write(a) : query(a);
}
