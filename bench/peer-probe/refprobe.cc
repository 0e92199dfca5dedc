// The broker-failure article's method in C++ on librdkafka: a reference client for kfaild's timing
// checks (docs/PERFORMANCE.md, its section on ack timing), with the same options, CSV and JSON as
// probe.py so that bench/run-all can put it where probe.py goes (`--peer-impl cxx`).
//
// One producer (acks=all) sends one message to every partition of a topic every interval; one
// consumer in the same process, assigned to those partitions from their current end, reads them
// back. What differs from probe.py is only where the times are read:
// - the ack: in the delivery report, served by a thread that does nothing else (probe.py serves
//   them from its send loop, after a tick's produce calls, behind Python's lock);
// - the receive: when rd_kafka_consumer_poll hands the message over, one at a time (probe.py's
//   consume(1000, 0.1) returns after 0.1 s or 1,000 messages, whichever comes first).
// So the method's timestamps carry librdkafka's own path and none of an interpreter's.
//
// Written for kfaild's benchmarks from the article's description; not the article's code.

#include <librdkafka/rdkafka.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

constexpr std::string_view kMagic = "pp1";

std::atomic<bool> g_stop{false};

std::int64_t wallUs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000 + ts.tv_nsec / 1000;
}

std::int64_t monoUs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000 + ts.tv_nsec / 1000;
}

double cpuSeconds() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
         static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

long statusKb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(key) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) return std::strtol(line.c_str() + prefix.size(), nullptr, 10);
  }
  return -1;
}

[[noreturn]] void fail(const std::string& why) {
  std::cerr << "refprobe: " << why << "\n";
  std::exit(2);
}

struct Options {
  std::string bootstrap;
  std::string topic;
  int create_partitions = 0;
  int replication_factor = 3;
  int min_insync = 2;
  double interval_ms = 20.0;
  int payload_bytes = 64;
  double warmup_s = 10.0;
  double duration_s = 0.0;
  std::string csv;
  std::optional<double> linger_ms;
  double status_every_s = 0.0;
};

Options parse(int argc, char** argv) {
  Options o;
  auto value = [&](int& i) -> std::string {
    if (i + 1 >= argc) fail(std::string(argv[i]) + " needs a value");
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--bootstrap")
      o.bootstrap = value(i);
    else if (a == "--topic")
      o.topic = value(i);
    else if (a == "--create-partitions")
      o.create_partitions = std::stoi(value(i));
    else if (a == "--replication-factor")
      o.replication_factor = std::stoi(value(i));
    else if (a == "--min-insync")
      o.min_insync = std::stoi(value(i));
    else if (a == "--interval-ms")
      o.interval_ms = std::stod(value(i));
    else if (a == "--payload-bytes")
      o.payload_bytes = std::stoi(value(i));
    else if (a == "--warmup")
      o.warmup_s = std::stod(value(i));
    else if (a == "--duration")
      o.duration_s = std::stod(value(i));
    else if (a == "--csv")
      o.csv = value(i);
    else if (a == "--linger-ms")
      o.linger_ms = std::stod(value(i));
    else if (a == "--status-every")
      o.status_every_s = std::stod(value(i));
    else
      fail("unknown option " + a + " (the options are probe.py's)");
  }
  if (o.bootstrap.empty() || o.topic.empty()) fail("--bootstrap and --topic are required");
  if (o.interval_ms <= 0) fail("--interval-ms must be positive");
  return o;
}

struct ConfDeleter {
  void operator()(rd_kafka_conf_t* c) const { rd_kafka_conf_destroy(c); }
};
using ConfPtr = std::unique_ptr<rd_kafka_conf_t, ConfDeleter>;

void set(rd_kafka_conf_t* conf, const char* key, const std::string& value) {
  char err[512];
  if (rd_kafka_conf_set(conf, key, value.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
    fail(std::string(key) + ": " + err);
  }
}

rd_kafka_t* newClient(rd_kafka_type_t type, ConfPtr conf) {
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(type, conf.get(), err, sizeof err);
  if (!rk) fail(std::string("rd_kafka_new: ") + err);
  conf.release();  // rd_kafka_new took it
  return rk;
}

// The topic's partition count from the cluster's metadata; 0 when it is not (yet) there. All
// topics are asked for: a request naming a missing topic would have the broker create it with its
// default partition count (auto.create.topics.enable is Kafka's default).
int partitionCount(rd_kafka_t* rk, const std::string& topic) {
  const rd_kafka_metadata_t* md = nullptr;
  int n = 0;
  if (rd_kafka_metadata(rk, 1, nullptr, &md, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    for (int i = 0; i < md->topic_cnt; ++i) {
      if (topic == md->topics[i].topic && md->topics[i].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        n = md->topics[i].partition_cnt;
      }
    }
    rd_kafka_metadata_destroy(md);
  }
  return n;
}

int ensureTopic(rd_kafka_t* rk, const Options& o) {
  if (const int n = partitionCount(rk, o.topic); n > 0) return n;
  if (o.create_partitions <= 0)
    fail("topic " + o.topic + " does not exist and --create-partitions is not set");
  char err[512];
  rd_kafka_NewTopic_t* nt = rd_kafka_NewTopic_new(o.topic.c_str(), o.create_partitions,
                                                  o.replication_factor, err, sizeof err);
  if (!nt) fail(std::string("NewTopic: ") + err);
  if (o.min_insync > 0) {
    rd_kafka_NewTopic_set_config(nt, "min.insync.replicas", std::to_string(o.min_insync).c_str());
  }
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  rd_kafka_CreateTopics(rk, &nt, 1, nullptr, q);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 30000);
  if (ev) {
    const rd_kafka_CreateTopics_result_t* res = rd_kafka_event_CreateTopics_result(ev);
    std::size_t cnt = 0;
    const rd_kafka_topic_result_t** results =
        res ? rd_kafka_CreateTopics_result_topics(res, &cnt) : nullptr;
    for (std::size_t i = 0; i < cnt; ++i) {
      const auto e = rd_kafka_topic_result_error(results[i]);
      if (e != RD_KAFKA_RESP_ERR_NO_ERROR && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
        fail(std::string("CreateTopics: ") + rd_kafka_err2str(e));
      }
    }
    rd_kafka_event_destroy(ev);
  }
  rd_kafka_queue_destroy(q);
  rd_kafka_NewTopic_destroy(nt);
  for (const auto deadline = monoUs() + 30'000'000; monoUs() < deadline;) {
    if (const int n = partitionCount(rk, o.topic); n > 0) return n;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  fail("topic " + o.topic + " not in metadata after creation");
}

struct Record {
  std::int64_t send_us = 0;
  std::int64_t ack_us = -1;
  int ack_error = 0;
  std::int64_t receive_us = -1;
};

struct Counters {
  std::int64_t acked = 0, failed = 0, received = 0, ticks = 0, skipped = 0;
};

class Probe {
 public:
  explicit Probe(Options o)
      : opts_(std::move(o)), interval_us_(static_cast<std::int64_t>(opts_.interval_ms * 1000)) {
    char run[9];
    std::snprintf(run, sizeof run, "%08x", static_cast<unsigned>(std::random_device{}()));
    run_ = run;
    if (!opts_.csv.empty()) {
      csv_ = std::fopen(opts_.csv.c_str(), "w");
      if (!csv_) fail("cannot write " + opts_.csv);
      std::fputs("partition,seq,send_us,ack_us,ack_error,receive_us\n", csv_);
    }
    ConfPtr pc(rd_kafka_conf_new());
    set(pc.get(), "bootstrap.servers", opts_.bootstrap);
    set(pc.get(), "acks", "all");
    set(pc.get(), "client.id", "ref-probe");
    if (opts_.linger_ms) set(pc.get(), "linger.ms", std::to_string(*opts_.linger_ms));
    rd_kafka_conf_set_opaque(pc.get(), this);
    rd_kafka_conf_set_dr_msg_cb(pc.get(),
                                [](rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
                                  static_cast<Probe*>(opaque)->onDelivery(m);
                                });
    producer_ = newClient(RD_KAFKA_PRODUCER, std::move(pc));
    ConfPtr cc(rd_kafka_conf_new());
    set(cc.get(), "bootstrap.servers", opts_.bootstrap);
    set(cc.get(), "group.id", "ref-probe-" + run_);
    set(cc.get(), "enable.auto.commit", "false");
    set(cc.get(), "auto.offset.reset", "latest");
    set(cc.get(), "client.id", "ref-probe-consumer");
    consumer_ = newClient(RD_KAFKA_CONSUMER, std::move(cc));
  }

  ~Probe() {
    rd_kafka_consumer_close(consumer_);
    rd_kafka_destroy(consumer_);
    rd_kafka_destroy(producer_);
  }

  rd_kafka_t* producer() { return producer_; }

  struct Snapshot {
    std::int64_t t_us;
    double cpu;
    Counters c;
  };

  Snapshot snapshot() {
    std::lock_guard lock(mutex_);
    return {monoUs(), cpuSeconds(), counters_};
  }

  std::int64_t maxLateUs() const { return max_late_us_; }
  std::int64_t intervalUs() const { return interval_us_; }

  // Runs until --duration ends or a signal; returns the snapshots at the window's two ends.
  std::pair<Snapshot, Snapshot> run(int partitions) {
    assign(partitions);
    std::thread acks([this] {
      while (!acks_stop_.load()) rd_kafka_poll(producer_, 100);
    });
    std::thread receiver([this] { consumeLoop(); });
    const std::string pad(static_cast<std::size_t>(std::max(0, opts_.payload_bytes - 40)), 'x');
    const auto start = monoUs();
    auto deadline = start;
    const auto warm_end = start + static_cast<std::int64_t>(opts_.warmup_s * 1e6);
    // 0: until a signal.
    const std::int64_t end =
        opts_.duration_s > 0 ? warm_end + static_cast<std::int64_t>(opts_.duration_s * 1e6) : 0;
    std::optional<Snapshot> window;
    std::int64_t seq = 0;
    std::string value;
    while (!g_stop.load()) {
      const auto now = monoUs();
      if (end > 0 && now >= end) break;
      if (!window && now >= warm_end) window = snapshot();
      if (deadline > now) {
        const timespec at{static_cast<time_t>(deadline / 1'000'000),
                          static_cast<long>(deadline % 1'000'000) * 1000};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, nullptr);
        continue;
      }
      // As probe.py: a late tick is sent at once, and the ticks it overran are skipped.
      const auto late = now - deadline;
      const auto missed = late / interval_us_;
      max_late_us_ = std::max(max_late_us_, late - missed * interval_us_);
      deadline += (missed + 1) * interval_us_;
      ++seq;
      {
        std::lock_guard lock(mutex_);
        counters_.ticks += 1;
        counters_.skipped += missed;
      }
      for (int p = 0; p < partitions; ++p) {
        const auto send = wallUs();
        {
          std::lock_guard lock(mutex_);
          pending_[key(p, seq)] = Record{send};
        }
        value.assign(kMagic)
            .append(":")
            .append(run_)
            .append(":")
            .append(std::to_string(seq))
            .append(":")
            .append(std::to_string(send))
            .append(":")
            .append(pad);
        const auto err =
            rd_kafka_producev(producer_, RD_KAFKA_V_TOPIC(opts_.topic.c_str()),
                              RD_KAFKA_V_PARTITION(p), RD_KAFKA_V_VALUE(value.data(), value.size()),
                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
          std::lock_guard lock(mutex_);
          pending_[key(p, seq)].ack_error =
              err == RD_KAFKA_RESP_ERR__QUEUE_FULL ? -184 : static_cast<int>(err);
          counters_.failed += 1;
        }
      }
    }
    const auto final_snap = snapshot();
    rd_kafka_flush(producer_, 5000);
    acks_stop_ = true;
    receiver_stop_ = true;
    acks.join();
    receiver.join();
    if (csv_) {
      std::map<std::pair<int, std::int64_t>, Record> rest;
      {
        std::lock_guard lock(mutex_);
        for (const auto& [k, r] : pending_)
          rest.emplace(std::pair{static_cast<int>(k >> 40),
                                 static_cast<std::int64_t>(k & ((std::uint64_t{1} << 40) - 1))},
                       r);
      }
      for (const auto& [k, r] : rest) writeRow(k.first, k.second, r);
      std::fclose(csv_);
      csv_ = nullptr;
    }
    return {window.value_or(final_snap), final_snap};
  }

 private:
  static std::uint64_t key(int partition, std::int64_t seq) {
    return (static_cast<std::uint64_t>(partition) << 40) | static_cast<std::uint64_t>(seq);
  }

  // "pp1:<run>:<seq>:..." → seq, when the message is this run's.
  std::optional<std::int64_t> seqOf(const void* payload, std::size_t len) const {
    const std::string_view v(static_cast<const char*>(payload), len);
    if (v.size() < kMagic.size() + run_.size() + 3 || v.substr(0, kMagic.size()) != kMagic ||
        v[kMagic.size()] != ':' || v.substr(kMagic.size() + 1, run_.size()) != run_) {
      return std::nullopt;  // another probe's message on a shared topic
    }
    std::int64_t seq = 0;
    for (std::size_t i = kMagic.size() + run_.size() + 2; i < v.size() && v[i] != ':'; ++i) {
      if (v[i] < '0' || v[i] > '9') return std::nullopt;
      seq = seq * 10 + (v[i] - '0');
    }
    return seq;
  }

  void writeRow(int partition, std::int64_t seq, const Record& r) {
    auto opt = [](std::int64_t v) { return v < 0 ? std::string() : std::to_string(v); };
    std::fprintf(csv_, "%d,%lld,%lld,%s,%d,%s\n", partition, static_cast<long long>(seq),
                 static_cast<long long>(r.send_us), opt(r.ack_us).c_str(), r.ack_error,
                 opt(r.receive_us).c_str());
  }

  // Called with mutex_ held once a message is both acked and received.
  void finish(std::unordered_map<std::uint64_t, Record>::iterator it, int partition,
              std::int64_t seq) {
    if (csv_) writeRow(partition, seq, it->second);
    pending_.erase(it);
  }

  void onDelivery(const rd_kafka_message_t* m) {
    const auto now = wallUs();
    const auto seq = seqOf(m->payload, m->len);
    if (!seq) return;
    std::lock_guard lock(mutex_);
    auto it = pending_.find(key(m->partition, *seq));
    if (it == pending_.end()) return;
    it->second.ack_us = now;
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      it->second.ack_error = static_cast<int>(m->err);
      counters_.failed += 1;
    } else {
      counters_.acked += 1;
    }
    if (it->second.receive_us >= 0) finish(it, m->partition, *seq);
  }

  void consumeLoop() {
    while (!receiver_stop_.load()) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer_, 100);
      if (!m) continue;
      const auto now = wallUs();
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (const auto seq = seqOf(m->payload, m->len)) {
          std::lock_guard lock(mutex_);
          auto it = pending_.find(key(m->partition, *seq));
          if (it != pending_.end() && it->second.receive_us < 0) {
            it->second.receive_us = now;
            counters_.received += 1;
            if (it->second.ack_us >= 0) finish(it, m->partition, *seq);
          }
        }
      }
      rd_kafka_message_destroy(m);
    }
  }

  // Each partition from its current end, retried while a new topic's leaders settle.
  void assign(int partitions) {
    rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
    for (int p = 0; p < partitions; ++p) {
      std::int64_t low = 0, high = 0;
      for (const auto deadline = monoUs() + 60'000'000;;) {
        const auto err =
            rd_kafka_query_watermark_offsets(consumer_, opts_.topic.c_str(), p, &low, &high, 10000);
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR) break;
        if (monoUs() > deadline)
          fail("watermarks of partition " + std::to_string(p) + ": " + rd_kafka_err2str(err));
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
      }
      rd_kafka_topic_partition_list_add(list, opts_.topic.c_str(), p)->offset = high;
    }
    if (const auto err = rd_kafka_assign(consumer_, list); err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      fail(std::string("assign: ") + rd_kafka_err2str(err));
    }
    rd_kafka_topic_partition_list_destroy(list);
  }

  Options opts_;
  std::int64_t interval_us_;
  std::string run_;
  std::FILE* csv_ = nullptr;
  rd_kafka_t* producer_ = nullptr;
  rd_kafka_t* consumer_ = nullptr;
  std::mutex mutex_;
  std::unordered_map<std::uint64_t, Record> pending_;  // by key(partition, seq)
  Counters counters_;
  std::int64_t max_late_us_ = 0;
  std::atomic<bool> acks_stop_{false};
  std::atomic<bool> receiver_stop_{false};
};

}  // namespace

int main(int argc, char** argv) {
  const Options opts = parse(argc, argv);
  struct sigaction sa{};
  sa.sa_handler = [](int) { g_stop = true; };  // no SA_RESTART: the tick's sleep ends at once
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  Probe probe(opts);
  const int partitions = ensureTopic(probe.producer(), opts);
  std::atomic<bool> reporting{true};
  std::thread status;
  if (opts.status_every_s > 0) {
    status = std::thread([&] {
      const auto every =
          std::chrono::microseconds(static_cast<std::int64_t>(opts.status_every_s * 1e6));
      while (reporting.load()) {
        std::this_thread::sleep_for(every);
        const auto s = probe.snapshot();
        const nlohmann::json line{{"kind", "status"},       {"t_us", wallUs()},
                                  {"acked", s.c.acked},     {"received", s.c.received},
                                  {"failed", s.c.failed},   {"ticks", s.c.ticks},
                                  {"skipped", s.c.skipped}, {"cpu_s", s.cpu}};
        std::cout << line.dump() << std::endl;
      }
    });
  }
  const auto [a, b] = probe.run(partitions);
  reporting = false;
  if (status.joinable()) status.join();
  const double window = static_cast<double>(b.t_us - a.t_us) / 1e6;
  const auto acked = b.c.acked - a.c.acked;
  const double cpu = b.cpu - a.cpu;
  const nlohmann::json out{
      {"kind", "peer_probe"},
      {"impl", "cxx"},
      {"librdkafka", rd_kafka_version_str()},
      {"partitions", partitions},
      {"interval_us", probe.intervalUs()},
      {"window_s", window},
      {"acked", acked},
      {"received", b.c.received - a.c.received},
      {"expected", partitions * window * 1e6 / static_cast<double>(probe.intervalUs())},
      {"send_failed", b.c.failed - a.c.failed},
      {"ticks", b.c.ticks - a.c.ticks},
      {"skipped_ticks", b.c.skipped - a.c.skipped},
      {"max_send_lateness_us", probe.maxLateUs()},
      {"cpu_s", cpu},
      {"cpu_cores", window > 0 ? cpu / window : 0.0},
      {"cpu_ms_per_1000_acked", acked ? cpu * 1e6 / static_cast<double>(acked) : 0.0},
      {"rss_kb", statusKb("VmRSS")},
      {"peak_rss_kb", statusKb("VmHWM")},
      {"csv", opts.csv}};
  std::cout << out.dump() << std::endl;
  return 0;
}
