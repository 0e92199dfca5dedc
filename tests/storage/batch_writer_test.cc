#include "storage/batch_writer.h"

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <future>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kfaild::storage::batch_writer_test {
namespace {

using namespace std::chrono_literals;

// A sink the test controls: it can stop the writer inside write() (as a slow disk would) and
// fail chosen batches (as a full one would). It keeps a copy of every batch it committed.
class ControlledSink final : public BatchSink {
 public:
  Result<BatchOutcome> write(const WriteBatch& batch) override {
    std::unique_lock lock(mutex_);
    writer_thread_ = std::this_thread::get_id();
    const int entry = ++entered_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return entry <= allowed_; });
    if (auto failure = fail_on_.find(entry); failure != fail_on_.end()) return failure->second;
    if (failing_) return *failing_;
    committed_.push_back(batch);
    return BatchOutcome{};
  }

  // Lets only the first `count` calls of write() proceed; later ones wait.
  void allowOnly(int count) {
    std::lock_guard lock(mutex_);
    allowed_ = count;
    changed_.notify_all();
  }
  void allowAll() { allowOnly(std::numeric_limits<int>::max()); }
  // Makes the `entry`-th call of write() (counting from 1) fail.
  void failOn(int entry, Error error) {
    std::lock_guard lock(mutex_);
    fail_on_.emplace(entry, std::move(error));
  }
  // Makes every call fail until called with nullopt.
  void setFailing(std::optional<Error> error) {
    std::lock_guard lock(mutex_);
    failing_ = std::move(error);
  }
  // Waits until write() has been entered `count` times in all.
  void awaitEntered(int count) {
    std::unique_lock lock(mutex_);
    REQUIRE(changed_.wait_for(lock, 10s, [&] { return entered_ >= count; }));
  }
  std::vector<WriteBatch> committed() const {
    std::lock_guard lock(mutex_);
    return committed_;
  }
  WriteBatch committedTogether() const {
    WriteBatch all;
    for (const auto& batch : committed()) {
      all.samples.insert(all.samples.end(), batch.samples.begin(), batch.samples.end());
      all.gaps.insert(all.gaps.end(), batch.gaps.begin(), batch.gaps.end());
      all.events.insert(all.events.end(), batch.events.begin(), batch.events.end());
    }
    return all;
  }
  int entered() const {
    std::lock_guard lock(mutex_);
    return entered_;
  }
  std::thread::id writerThread() const {
    std::lock_guard lock(mutex_);
    return writer_thread_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  int allowed_ = std::numeric_limits<int>::max();
  int entered_ = 0;
  std::map<int, Error> fail_on_;
  std::optional<Error> failing_;
  std::vector<WriteBatch> committed_;
  std::thread::id writer_thread_;
};

ProbeSample sample(std::int64_t seq) {
  ProbeSample s;
  s.cluster = 1;
  s.topic = "orders";
  s.seq = seq;
  s.send_us = seq * 20'000;
  return s;
}

Gap gap(std::int64_t seq) {
  Gap g;
  g.cluster = 1;
  g.topic = "orders";
  g.seq_before = seq;
  return g;
}

Event event(std::int64_t t_us) {
  Event e;
  e.cluster = 1;
  e.t_us = t_us;
  e.source = "metadata";
  e.kind = "leader_change";
  return e;
}

std::vector<std::int64_t> seqs(const std::deque<ProbeSample>& samples) {
  std::vector<std::int64_t> out;
  for (const auto& s : samples) out.push_back(s.seq);
  return out;
}

std::vector<std::int64_t> seqs(const std::deque<Gap>& gaps) {
  std::vector<std::int64_t> out;
  for (const auto& g : gaps) out.push_back(g.seq_before);
  return out;
}

std::vector<std::int64_t> times(const std::deque<Event>& events) {
  std::vector<std::int64_t> out;
  for (const auto& e : events) out.push_back(e.t_us);
  return out;
}

const Error kDiskFull{errc::disk_full, "database or disk is full"};

TEST_CASE("a full queue refuses new samples and lets gaps and events push queued samples out",
          "[unit][storage]") {
  ControlledSink sink;
  sink.allowOnly(0);
  BatchWriter writer(sink, {.max_queued_records = 10, .retry_interval = 1h});
  writer.addGap(gap(0));
  sink.awaitEntered(1);  // the writer is now stuck inside its first batch

  for (int seq = 0; seq < 20; ++seq) writer.addSample(sample(seq));
  auto stats = writer.stats();
  CHECK(stats.queued == 10);
  CHECK(stats.dropped_samples == 10);

  for (int seq = 1; seq <= 5; ++seq) writer.addGap(gap(seq));
  for (int t = 1; t <= 5; ++t) writer.addEvent(event(t));
  stats = writer.stats();
  CHECK(stats.queued == 10);
  CHECK(stats.dropped_samples == 20);
  CHECK(stats.dropped_other == 0);

  // Nothing but gaps and events left: now they are refused.
  writer.addGap(gap(6));
  writer.addEvent(event(6));
  writer.addSample(sample(99));
  stats = writer.stats();
  CHECK(stats.queued == 10);
  CHECK(stats.dropped_other == 2);
  CHECK(stats.dropped_samples == 21);

  sink.allowAll();
  writer.flush();
  const auto all = sink.committedTogether();
  CHECK(all.samples.empty());
  CHECK(seqs(all.gaps) == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5});
  CHECK(times(all.events) == std::vector<std::int64_t>{1, 2, 3, 4, 5});
  stats = writer.stats();
  CHECK(stats.written == 11);
  CHECK(stats.queued == 0);
}

TEST_CASE("a failed batch keeps its records and is retried, at the latest when flush is called",
          "[unit][storage]") {
  ControlledSink sink;
  sink.setFailing(kDiskFull);
  BatchWriter writer(sink, {.max_queued_records = 100, .retry_interval = 1h});
  writer.addSample(sample(1));
  writer.addGap(gap(1));
  writer.addEvent(event(1));
  writer.flush();

  auto stats = writer.stats();
  CHECK(stats.failed_batches >= 1);
  CHECK(stats.queued == 3);
  CHECK(stats.written == 0);
  CHECK(stats.dropped_samples == 0);
  CHECK_THAT(stats.last_error, Catch::StartsWith("database or disk is full"));

  // The retry pause is an hour, so it is flush that makes the writer try again.
  const auto failed_before = stats.failed_batches;
  writer.addGap(gap(2));
  writer.flush();
  stats = writer.stats();
  CHECK(stats.failed_batches > failed_before);
  CHECK(stats.queued == 4);

  sink.setFailing(std::nullopt);
  writer.flush();
  stats = writer.stats();
  CHECK(stats.queued == 0);
  CHECK(stats.written == 4);
  CHECK(stats.dropped_samples == 0);
  CHECK(stats.last_error.empty());
  const auto all = sink.committedTogether();
  CHECK(seqs(all.samples) == std::vector<std::int64_t>{1});
  CHECK(seqs(all.gaps) == std::vector<std::int64_t>{1, 2});  // retried records stay first
  CHECK(times(all.events) == std::vector<std::int64_t>{1});
}

TEST_CASE("a failed batch is retried by itself after the retry interval", "[unit][storage]") {
  ControlledSink sink;
  sink.setFailing(kDiskFull);
  BatchWriter writer(sink, {.max_queued_records = 100, .retry_interval = 20ms});
  writer.addGap(gap(1));
  sink.awaitEntered(1);
  sink.setFailing(std::nullopt);
  sink.awaitEntered(2);  // a retry, without any flush
  writer.flush();
  CHECK(seqs(sink.committedTogether().gaps) == std::vector<std::int64_t>{1});
  CHECK(writer.stats().failed_batches >= 1);
  CHECK(writer.stats().last_error.empty());
}

TEST_CASE("when a failed batch no longer fits, its oldest samples are dropped first",
          "[unit][storage]") {
  ControlledSink sink;
  sink.allowOnly(0);
  sink.failOn(2, kDiskFull);
  BatchWriter writer(sink, {.max_queued_records = 5, .retry_interval = 1h});
  writer.addEvent(event(0));
  sink.awaitEntered(1);  // batch 1: the event alone; the writer waits inside it
  for (int seq = 1; seq <= 4; ++seq) writer.addSample(sample(seq));
  writer.addGap(gap(1));
  sink.allowOnly(1);
  sink.awaitEntered(2);  // batch 2: 4 samples and a gap, about to fail
  writer.addSample(sample(5));
  writer.addSample(sample(6));
  writer.addEvent(event(1));
  sink.allowAll();
  writer.flush();

  const auto stats = writer.stats();
  CHECK(stats.failed_batches == 1);
  CHECK(stats.dropped_samples == 3);  // 5 back from the failed batch + 3 new, bound 5
  CHECK(stats.dropped_other == 0);
  CHECK(stats.queued == 0);
  const auto all = sink.committedTogether();
  CHECK(seqs(all.samples) == std::vector<std::int64_t>{4, 5, 6});
  CHECK(seqs(all.gaps) == std::vector<std::int64_t>{1});
  CHECK(times(all.events) == std::vector<std::int64_t>{0, 1});
}

TEST_CASE("flush waits for the batch being written", "[unit][storage]") {
  ControlledSink sink;
  sink.allowOnly(0);
  BatchWriter writer(sink, {});
  writer.addSample(sample(1));
  sink.awaitEntered(1);
  writer.addSample(sample(2));
  auto flushed = std::async(std::launch::async, [&] { writer.flush(); });
  CHECK(flushed.wait_for(50ms) == std::future_status::timeout);
  sink.allowAll();
  flushed.get();
  CHECK(seqs(sink.committedTogether().samples) == std::vector<std::int64_t>{1, 2});
}

TEST_CASE("destroying the writer writes what is still queued", "[unit][storage]") {
  ControlledSink sink;
  {
    BatchWriter writer(sink, {});
    for (int seq = 0; seq < 1'000; ++seq) writer.addSample(sample(seq));
    writer.addGap(gap(7));
  }
  const auto all = sink.committedTogether();
  CHECK(all.samples.size() == 1'000);
  CHECK(seqs(all.gaps) == std::vector<std::int64_t>{7});
}

TEST_CASE("tasks run on the writer thread, between batches", "[unit][storage]") {
  ControlledSink sink;
  BatchWriter writer(sink, {});
  writer.addSample(sample(1));
  writer.flush();
  auto thread = writer.runOnWriter<std::thread::id>(
      []() -> Result<std::thread::id> { return std::this_thread::get_id(); });
  REQUIRE(thread.ok());
  CHECK(*thread == sink.writerThread());
  CHECK(*thread != std::this_thread::get_id());

  auto failed =
      writer.runOnWriter<int>([]() -> Result<int> { return Error{errc::query_failed, "no"}; });
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().code == errc::query_failed);
}

TEST_CASE("a task on the writer does not cut a retry pause short", "[unit][storage]") {
  ControlledSink sink;
  sink.setFailing(kDiskFull);
  BatchWriter writer(sink, {.max_queued_records = 100, .retry_interval = 1h});
  writer.addGap(gap(1));
  writer.flush();
  const int attempts = sink.entered();
  REQUIRE(attempts >= 1);
  for (int i = 0; i < 3; ++i) {
    auto ran = writer.runOnWriter<int>([]() -> Result<int> { return 1; });
    REQUIRE(ran.ok());
  }
  CHECK(sink.entered() == attempts);
  CHECK(writer.stats().queued == 1);
}

TEST_CASE("a failure that repeats is logged once, and again when it changes", "[unit][storage]") {
  auto ring = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100);
  auto previous = spdlog::default_logger();
  const auto previous_level = spdlog::get_level();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("storage-test", ring));
  spdlog::set_level(spdlog::level::info);

  ControlledSink sink;
  for (int entry = 1; entry <= 3; ++entry) sink.failOn(entry, kDiskFull);
  sink.failOn(4, Error{errc::read_only, "attempt to write a readonly database"});
  {
    BatchWriter writer(sink, {.max_queued_records = 100, .retry_interval = 1h});
    writer.addGap(gap(1));
    for (int i = 0; i < 5; ++i) writer.flush();
  }
  spdlog::set_default_logger(previous);
  spdlog::set_level(previous_level);

  int full = 0;
  int read_only = 0;
  int resumed = 0;
  for (const auto& line : ring->last_formatted()) {
    if (line.find("disk is full") != std::string::npos) ++full;
    if (line.find("read-only") != std::string::npos) ++read_only;
    if (line.find("writing again after 4 failed batches") != std::string::npos) ++resumed;
  }
  CHECK(full == 1);
  CHECK(read_only == 1);
  CHECK(resumed == 1);
}

TEST_CASE("a record is written by itself once its linger ends, without a flush",
          "[unit][storage]") {
  ControlledSink sink;
  BatchWriter writer(sink, {.linger = 20ms});
  // The writer was waiting with nothing queued: the first record must start its linger.
  writer.addSample(sample(1));
  sink.awaitEntered(1);
  writer.addGap(gap(2));  // the same again, now that the writer has written and waits anew
  sink.awaitEntered(2);
  const auto all = sink.committedTogether();
  CHECK(seqs(all.samples) == std::vector<std::int64_t>{1});
  CHECK(seqs(all.gaps) == std::vector<std::int64_t>{2});
}

// Each wait here would last a minute (or for ever, when idle) without the wake; the bound of 30 s
// leaves room for a loaded machine and still tells the two apart.
TEST_CASE(
    "flushing or destroying the writer wakes it wherever it waits and writes what is queued, "
    "every time",
    "[unit][storage]") {
  enum Waiting { kIdle, kLingering, kFlushedInLinger, kInRetryPause };
  for (int i = 0; i < 200; ++i) {
    INFO("iteration " << i);
    const auto waiting = static_cast<Waiting>(i % 4);
    ControlledSink sink;
    if (waiting == kInRetryPause) sink.failOn(1, kDiskFull);
    auto writer = std::make_unique<BatchWriter>(
        sink, BatchWriterOptions{.retry_interval = 60s, .linger = 60s});
    if (waiting != kIdle) writer->addSample(sample(i));
    if (waiting == kFlushedInLinger || waiting == kInRetryPause) {
      // Cuts the linger short; in the retry case the write fails and a minute's pause begins.
      auto flushed = std::async(std::launch::async, [&writer] { writer->flush(); });
      REQUIRE(flushed.wait_for(30s) == std::future_status::ready);
      CHECK(sink.entered() == 1);
    }
    if (i % 8 >= 4) std::this_thread::sleep_for(std::chrono::microseconds(i * 10));
    auto destroyed = std::async(std::launch::async, [&writer] { writer.reset(); });
    REQUIRE(destroyed.wait_for(30s) == std::future_status::ready);
    const auto expected =
        waiting == kIdle ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{i};
    CHECK(seqs(sink.committedTogether().samples) == expected);
    CHECK(sink.entered() == (waiting == kIdle ? 0 : waiting == kInRetryPause ? 2 : 1));
  }
}

}  // namespace
}  // namespace kfaild::storage::batch_writer_test
