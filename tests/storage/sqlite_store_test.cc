#include "storage/sqlite_store.h"

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "server/common/clock.h"
#include "tests/storage/store_test_support.h"
#include "tests/support/manual_clock.h"
#include "tests/support/temp_dir.h"

namespace kfaild::storage::sqlite_store_test {
namespace {

using kfaild::testing::TempDir;
using testing::countRows;
using testing::describe;
using testing::sameRecord;

constexpr std::int64_t kBase = 1'760'000'000'000'000;  // a wall-clock time in µs
constexpr std::int64_t kInterval = 20'000;             // the probe's default 20 ms

std::unique_ptr<SqliteStore> openStore(const std::string& path, SqliteStoreOptions options = {}) {
  auto store = SqliteStore::open(path, options);
  if (!store.ok()) FAIL(store.error().describe());
  return std::move(*store);
}

ClusterId cluster(SqliteStore& store, const std::string& name) {
  auto id = store.ensureCluster(name, name + ":9092");
  if (!id.ok()) FAIL(id.error().describe());
  return *id;
}

// The n-th probe message of one partition, with each optional field missing now and then, the
// way failed sends and lost messages look.
ProbeSample probeSample(ClusterId cluster_id, const std::string& topic, std::int32_t partition,
                        std::int64_t n) {
  ProbeSample sample;
  sample.cluster = cluster_id;
  sample.topic = topic;
  sample.partition = partition;
  sample.seq = n;
  sample.send_us = kBase + n * kInterval + partition;
  if (n % 7 == 3) {
    sample.ack_error = -192;  // RD_KAFKA_RESP_ERR__MSG_TIMED_OUT: acked with an error
    sample.ack_us = sample.send_us + 300'000'000;
  } else if (n % 13 != 5) {
    sample.ack_us = sample.send_us + 2'000 + n % 1'000;
    sample.offset = n;
  }
  if (sample.ack_error == 0 && n % 5 != 1) sample.receive_us = sample.send_us + 4'000 + n % 3'000;
  return sample;
}

Gap gap(ClusterId cluster_id, const std::string& topic, std::int32_t partition, GapKind kind,
        std::int64_t end_us, std::int64_t duration_us, std::int64_t seq_before) {
  return Gap{.id = 0,
             .cluster = cluster_id,
             .topic = topic,
             .partition = partition,
             .kind = kind,
             .start_us = end_us - duration_us,
             .end_us = end_us,
             .duration_us = duration_us,
             .seq_before = seq_before,
             .seq_after = seq_before + duration_us / kInterval};
}

Event event(ClusterId cluster_id, std::int64_t t_us, std::string source, std::string kind,
            std::optional<std::int32_t> broker, std::optional<std::string> topic,
            std::optional<std::int32_t> partition, std::string detail) {
  return Event{.id = 0,
               .cluster = cluster_id,
               .t_us = t_us,
               .source = std::move(source),
               .kind = std::move(kind),
               .broker = broker,
               .topic = std::move(topic),
               .partition = partition,
               .detail = std::move(detail)};
}

SampleQuery sampleQuery(ClusterId cluster_id, std::string topic, std::int32_t partition,
                        TimeRange range = {}, std::size_t limit = 1'000'000) {
  SampleQuery query;
  query.cluster = cluster_id;
  query.topic = std::move(topic);
  query.partition = partition;
  query.range = range;
  query.limit = limit;
  return query;
}

GapQuery allGaps() {
  GapQuery query;
  query.limit = 100'000;
  return query;
}

GapQuery gapsLongerThan(std::int64_t duration_us) {
  GapQuery query;
  query.min_duration_us = duration_us;
  return query;
}

EventQuery allEvents() {
  EventQuery query;
  query.limit = 100'000;
  return query;
}

EventQuery eventsFrom(std::string source) {
  EventQuery query;
  query.source = std::move(source);
  return query;
}

std::vector<ProbeSample> querySamples(const SqliteStore& store, const SampleQuery& query) {
  auto found = store.samples(query);
  if (!found.ok()) FAIL(found.error().describe());
  return std::move(*found);
}

std::vector<Gap> queryGaps(const SqliteStore& store, const GapQuery& query) {
  auto found = store.gaps(query);
  if (!found.ok()) FAIL(found.error().describe());
  return std::move(*found);
}

std::vector<Event> queryEvents(const SqliteStore& store, const EventQuery& query) {
  auto found = store.events(query);
  if (!found.ok()) FAIL(found.error().describe());
  return std::move(*found);
}

template <typename T>
void requireSameRecords(const std::vector<T>& got, const std::vector<T>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("record " << i);
    REQUIRE(sameRecord(got[i], want[i]));
  }
}

// The store's contract for gap queries, written the obvious way: filter, order by end, cut.
std::vector<Gap> expectedGaps(const std::vector<Gap>& all, const GapQuery& query) {
  std::vector<Gap> want;
  for (const auto& g : all) {
    if (query.cluster && g.cluster != *query.cluster) continue;
    if (query.topic && g.topic != *query.topic) continue;
    if (query.partition && g.partition != *query.partition) continue;
    if (query.kind && g.kind != *query.kind) continue;
    if (g.duration_us < query.min_duration_us) continue;
    if (g.end_us < query.range.from_us || g.end_us >= query.range.to_us) continue;
    want.push_back(g);
  }
  std::stable_sort(want.begin(), want.end(),
                   [](const Gap& a, const Gap& b) { return a.end_us < b.end_us; });
  if (want.size() > query.limit) want.resize(query.limit);
  return want;
}

std::vector<Event> expectedEvents(const std::vector<Event>& all, const EventQuery& query) {
  std::vector<Event> want;
  for (const auto& e : all) {
    if (query.cluster && e.cluster != *query.cluster) continue;
    if (query.source && e.source != *query.source) continue;
    if (query.kind && e.kind != *query.kind) continue;
    if (query.topic && e.topic != query.topic) continue;
    if (query.partition && e.partition != query.partition) continue;
    if (e.t_us < query.range.from_us || e.t_us >= query.range.to_us) continue;
    want.push_back(e);
  }
  std::stable_sort(want.begin(), want.end(),
                   [](const Event& a, const Event& b) { return a.t_us < b.t_us; });
  if (want.size() > query.limit) want.resize(query.limit);
  return want;
}

// Two clusters, two topics, gaps of both kinds and durations from 50 ms to 12 s, events with and
// without their optional fields. End times repeat, so ordering ties are exercised too.
struct Fixture {
  ClusterId lab = 0;
  ClusterId prod = 0;
  std::vector<ProbeSample> samples;
  std::vector<Gap> gaps;
  std::vector<Event> events;

  void fill(SqliteStore& store, std::int64_t samples_per_partition) {
    lab = cluster(store, "lab");
    prod = cluster(store, "prod");
    for (std::int64_t n = 0; n < samples_per_partition; ++n) {
      for (const auto& [id, topic, partition] :
           {std::tuple{lab, "orders", 0}, std::tuple{lab, "orders", 1},
            std::tuple{lab, "single", 0}, std::tuple{prod, "orders", 0}}) {
        samples.push_back(probeSample(id, topic, partition, n));
      }
    }
    for (std::int64_t i = 0; i < 240; ++i) {
      const ClusterId id = i % 5 == 0 ? prod : lab;
      const std::string topic = i % 3 == 0 ? "single" : "orders";
      const auto partition = static_cast<std::int32_t>(i % 3);
      const auto kind = i % 2 == 0 ? GapKind::kAck : GapKind::kReceive;
      const std::int64_t duration = 50'000 + (i * 7'919 % 120) * 100'000;
      gaps.push_back(gap(id, topic, partition, kind, kBase + (i / 2) * 1'000'000, duration, i));
    }
    const char* sources[] = {"metadata", "client", "broker_log", "injector"};
    const char* kinds[] = {"leader_change", "isr_shrink", "fenced", "broker_gone"};
    for (std::int64_t i = 0; i < 300; ++i) {
      const bool partitioned = i % 4 != 3;
      events.push_back(event(
          i % 6 == 0 ? prod : lab, kBase + (i / 3) * 500'000, sources[i % 4], kinds[(i / 4) % 4],
          i % 5 == 0 ? std::nullopt : std::optional(1 + i % 3),
          partitioned ? std::optional<std::string>(i % 2 ? "orders" : "single") : std::nullopt,
          partitioned ? std::optional<std::int32_t>(i % 3) : std::nullopt,
          "{\"i\":" + std::to_string(i) + "}"));
    }
    // Interleaved, as the daemon produces them.
    std::size_t g = 0, e = 0;
    for (std::size_t s = 0; s < samples.size(); ++s) {
      store.addSample(samples[s]);
      if (s % 400 == 0 && g < gaps.size()) store.addGap(gaps[g++]);
      if (s % 300 == 0 && e < events.size()) store.addEvent(events[e++]);
    }
    while (g < gaps.size()) store.addGap(gaps[g++]);
    while (e < events.size()) store.addEvent(events[e++]);
    store.flush();
  }

  std::vector<ProbeSample> samplesOf(ClusterId id, const std::string& topic,
                                     std::int32_t partition) const {
    std::vector<ProbeSample> want;
    for (const auto& s : samples) {
      if (s.cluster == id && s.topic == topic && s.partition == partition) want.push_back(s);
    }
    return want;
  }
};

TEST_CASE("100,000 samples with gaps and events are written in batches and read back exactly",
          "[integration][storage]") {
  TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  auto store = openStore(path);
  Fixture fixture;
  fixture.fill(*store, 25'000);
  REQUIRE(fixture.samples.size() == 100'000);

  const auto stats = store->writerStats();
  CHECK(stats.written == fixture.samples.size() + fixture.gaps.size() + fixture.events.size());
  CHECK(stats.queued == 0);
  CHECK(stats.dropped_samples == 0);
  CHECK(stats.dropped_other == 0);
  CHECK(stats.failed_batches == 0);
  CHECK(stats.last_error.empty());
  CHECK(countRows(path, "probe_samples") == 100'000);

  for (const auto& [id, topic, partition] :
       {std::tuple{fixture.lab, "orders", 0}, std::tuple{fixture.lab, "orders", 1},
        std::tuple{fixture.lab, "single", 0}, std::tuple{fixture.prod, "orders", 0}}) {
    INFO(topic << "/" << partition);
    const auto got = querySamples(*store, sampleQuery(id, topic, partition, {}, 1'000'000));
    requireSameRecords(got, fixture.samplesOf(id, topic, partition));
  }

  // The shapes a sample can take, spelled out, in case the builder above ever stops making one.
  const auto lab0 = querySamples(
      *store, sampleQuery(fixture.lab, "orders", 0, {kBase, kBase + 14 * kInterval}, 100));
  REQUIRE(lab0.size() == 14);
  INFO(describe(lab0[3]) << " / " << describe(lab0[5]) << " / " << describe(lab0[1]));
  CHECK(lab0[3].ack_error == -192);
  CHECK(lab0[3].ack_us == lab0[3].send_us + 300'000'000);
  CHECK_FALSE(lab0[3].offset.has_value());
  CHECK_FALSE(lab0[3].receive_us.has_value());
  CHECK_FALSE(lab0[5].ack_us.has_value());
  CHECK_FALSE(lab0[5].offset.has_value());
  CHECK(lab0[1].ack_us == kBase + kInterval + 2'001);
  CHECK(lab0[1].offset == 1);
  CHECK_FALSE(lab0[1].receive_us.has_value());
  CHECK(lab0[2].receive_us == kBase + 2 * kInterval + 4'002);

  requireSameRecords(queryGaps(*store, allGaps()), expectedGaps(fixture.gaps, {}));
  const auto events = queryEvents(*store, allEvents());
  requireSameRecords(events, expectedEvents(fixture.events, {}));
  CHECK(std::adjacent_find(events.begin(), events.end(), [](const Event& a, const Event& b) {
          return a.id == b.id;
        }) == events.end());
}

TEST_CASE("sample queries return exactly the partition, time range and count asked for",
          "[integration][storage]") {
  TempDir dir;
  auto store = openStore((dir / "kfaild.db").string());
  Fixture fixture;
  fixture.fill(*store, 1'000);
  const auto all = fixture.samplesOf(fixture.lab, "orders", 1);

  SECTION("a time range is [from, to) on the send time") {
    const auto from = all[100].send_us;
    const auto to = all[250].send_us;
    const auto got =
        querySamples(*store, sampleQuery(fixture.lab, "orders", 1, {from, to}, 100'000));
    requireSameRecords(got, std::vector(all.begin() + 100, all.begin() + 250));
  }
  SECTION("the limit keeps the earliest samples") {
    const auto got = querySamples(
        *store,
        sampleQuery(fixture.lab, "orders", 1, {all[10].send_us, kBase + 10 * 1'000'000'000LL}, 25));
    requireSameRecords(got, std::vector(all.begin() + 10, all.begin() + 35));
  }
  SECTION("another cluster's partition of the same name stays apart") {
    const auto got = querySamples(*store, sampleQuery(fixture.prod, "orders", 0, {}, 5));
    const auto prod = fixture.samplesOf(fixture.prod, "orders", 0);
    requireSameRecords(got, std::vector(prod.begin(), prod.begin() + 5));
  }
  SECTION("an unknown partition, topic or empty range finds nothing") {
    CHECK(querySamples(*store, sampleQuery(fixture.lab, "orders", 9)).empty());
    CHECK(querySamples(*store, sampleQuery(fixture.lab, "nope", 0)).empty());
    CHECK(querySamples(*store,
                       sampleQuery(fixture.lab, "orders", 1, {all[5].send_us, all[5].send_us}))
              .empty());
    CHECK(querySamples(*store, sampleQuery(fixture.lab, "orders", 1, {}, 0)).empty());
  }
}

TEST_CASE(
    "a client profile's stream keeps its samples, gaps and events apart from its cluster's and "
    "is not listed as a cluster",
    "[integration][storage]") {
  TempDir dir;
  auto store = openStore((dir / "kfaild.db").string());
  const auto lab = cluster(*store, "lab");
  const auto java = store->ensureProfileStream(lab, "java");
  REQUIRE(java.ok());
  CHECK(*java != lab);
  CHECK(*store->ensureProfileStream(lab, "java") == *java);  // idempotent
  const auto other = *store->ensureProfileStream(lab, "app-defaults");
  CHECK(*store->profileStreams(lab) ==
        std::map<std::string, ClusterId>{{"app-defaults", other}, {"java", *java}});
  CHECK(store->profileStreams(*java)->empty());
  CHECK_FALSE(store->ensureProfileStream(9999, "java").ok());
  const auto listed = *store->clusters();
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].name == "lab");

  store->addSample(probeSample(lab, "orders", 0, 1));
  store->addSample(probeSample(*java, "orders", 0, 1));
  store->addSample(probeSample(*java, "orders", 0, 2));
  Gap gap;
  gap.cluster = *java;
  gap.topic = "orders";
  gap.kind = GapKind::kAck;
  gap.start_us = kBase;
  gap.end_us = kBase + 8'000'000;
  gap.duration_us = 8'000'000;
  store->addGap(gap);
  Event event;
  event.cluster = *java;
  event.t_us = kBase;
  event.source = "probe";
  event.kind = "held_back";
  store->addEvent(event);
  store->flush();
  CHECK(querySamples(*store, sampleQuery(lab, "orders", 0)).size() == 1);
  CHECK(querySamples(*store, sampleQuery(*java, "orders", 0)).size() == 2);
  GapQuery gaps;
  gaps.cluster = lab;
  CHECK(store->gaps(gaps)->empty());
  gaps.cluster = *java;
  CHECK(store->gaps(gaps)->size() == 1);
  EventQuery events;
  events.cluster = lab;
  CHECK(store->events(events)->empty());
  events.cluster = *java;
  CHECK(store->events(events)->size() == 1);
}

TEST_CASE(
    "samples written out of send order across batches, or twice, read back in send order "
    "once, the later write winning",
    "[integration][storage]") {
  TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  auto store = openStore(path);
  const auto lab = cluster(*store, "lab");
  // Three batches whose send times interleave (blocks that overlap in time), the way samples
  // arrive by fate: most at once, a few given up on seconds later.
  std::vector<ProbeSample> want;
  for (std::int64_t n = 0; n < 600; ++n) want.push_back(probeSample(lab, "orders", 0, n));
  for (const auto& s : want) {
    if (s.seq % 10 != 0) store->addSample(s);
  }
  store->flush();
  for (const auto& s : want) {
    if (s.seq % 10 == 0 && s.seq % 20 != 0) store->addSample(s);
  }
  store->flush();
  // The last batch also writes seq 7 again with what was learnt later: it replaces the first.
  auto rewritten = want[7];
  rewritten.receive_us = rewritten.send_us + 123'456;
  rewritten.offset = 99'999;
  want[7] = rewritten;
  for (auto it = want.rbegin(); it != want.rend(); ++it) {
    if (it->seq % 20 == 0) store->addSample(*it);
  }
  store->addSample(rewritten);
  store->flush();
  CHECK(countRows(path, "probe_sample_blocks") > 3);

  requireSameRecords(querySamples(*store, sampleQuery(lab, "orders", 0)), want);
  const auto from = want[95].send_us;
  const auto to = want[421].send_us;
  requireSameRecords(querySamples(*store, sampleQuery(lab, "orders", 0, {from, to})),
                     std::vector(want.begin() + 95, want.begin() + 421));
  requireSameRecords(querySamples(*store, sampleQuery(lab, "orders", 0, {from, to}, 30)),
                     std::vector(want.begin() + 95, want.begin() + 125));

  // A prune whose cutoff falls inside blocks rewrites them with the samples after it.
  auto pruned = store->pruneSamples({.before_us = want[333].send_us});
  REQUIRE(pruned.ok());
  CHECK(*pruned == 333 + 1);  // seq 7's first write was a sample too
  requireSameRecords(querySamples(*store, sampleQuery(lab, "orders", 0)),
                     std::vector(want.begin() + 333, want.end()));
  auto spans = store->recordSpans();
  REQUIRE(spans.ok());
  REQUIRE(spans->samples);
  CHECK(spans->samples->oldest_us == want[333].send_us);
  CHECK(spans->samples->newest_us == want.back().send_us);
}

TEST_CASE("gap queries filter by cluster, topic, partition, kind, duration, end time and limit",
          "[integration][storage]") {
  TempDir dir;
  auto store = openStore((dir / "kfaild.db").string());
  Fixture fixture;
  fixture.fill(*store, 10);
  const auto& all = fixture.gaps;

  std::vector<std::pair<std::string, std::function<void(GapQuery&)>>> queries = {
      {"everything", [](GapQuery&) {}},
      {"one cluster", [&](GapQuery& q) { q.cluster = fixture.prod; }},
      {"one topic", [](GapQuery& q) { q.topic = "single"; }},
      {"one partition",
       [&](GapQuery& q) {
         q.cluster = fixture.lab;
         q.topic = "orders";
         q.partition = 2;
       }},
      {"receive gaps", [](GapQuery& q) { q.kind = GapKind::kReceive; }},
      {"over one second", [](GapQuery& q) { q.min_duration_us = 1'000'000; }},
      {"over 8 s since a time",
       [](GapQuery& q) {
         q.min_duration_us = 8'000'000;
         q.range = {kBase + 30'000'000, INT64_MAX};
       }},
      {"a window", [](GapQuery& q) { q.range = {kBase + 10'000'000, kBase + 20'000'000}; }},
      {"ack gaps of one partition over 2 s, first 3",
       [&](GapQuery& q) {
         q.cluster = fixture.lab;
         q.topic = "orders";
         q.partition = 1;
         q.kind = GapKind::kAck;
         q.min_duration_us = 2'000'000;
         q.limit = 3;
       }},
      {"limit", [](GapQuery& q) { q.limit = 17; }},
  };
  for (const auto& [name, setUp] : queries) {
    INFO(name);
    GapQuery query;
    setUp(query);
    const auto want = expectedGaps(all, query);
    CHECK_FALSE(want.empty());
    requireSameRecords(queryGaps(*store, query), want);
  }
  CHECK(queryGaps(*store, gapsLongerThan(100'000'000)).empty());
}

TEST_CASE("event queries filter by cluster, source, kind, topic, partition, time and limit",
          "[integration][storage]") {
  TempDir dir;
  auto store = openStore((dir / "kfaild.db").string());
  Fixture fixture;
  fixture.fill(*store, 10);
  const auto& all = fixture.events;

  std::vector<std::pair<std::string, std::function<void(EventQuery&)>>> queries = {
      {"everything", [](EventQuery&) {}},
      {"one cluster", [&](EventQuery& q) { q.cluster = fixture.prod; }},
      {"one source", [](EventQuery& q) { q.source = "broker_log"; }},
      {"one kind", [](EventQuery& q) { q.kind = "fenced"; }},
      {"one topic", [](EventQuery& q) { q.topic = "orders"; }},
      {"one partition",
       [](EventQuery& q) {
         q.topic = "single";
         q.partition = 2;
       }},
      {"a window of one cluster",
       [&](EventQuery& q) {
         q.cluster = fixture.lab;
         q.range = {kBase + 5'000'000, kBase + 20'000'000};
       }},
      {"metadata events of a cluster, first 4",
       [&](EventQuery& q) {
         q.cluster = fixture.lab;
         q.source = "metadata";
         q.limit = 4;
       }},
  };
  for (const auto& [name, setUp] : queries) {
    INFO(name);
    EventQuery query;
    setUp(query);
    const auto want = expectedEvents(all, query);
    CHECK_FALSE(want.empty());
    requireSameRecords(queryEvents(*store, query), want);
  }
  CHECK(queryEvents(*store, eventsFrom("nobody")).empty());
}

TEST_CASE("an event with an empty detail is stored as an empty JSON object",
          "[integration][storage]") {
  TempDir dir;
  auto store = openStore((dir / "kfaild.db").string());
  const auto id = cluster(*store, "lab");
  store->addEvent(
      event(id, kBase, "kfaild", "started", std::nullopt, std::nullopt, std::nullopt, ""));
  store->flush();
  const auto got = queryEvents(*store, {});
  REQUIRE(got.size() == 1);
  CHECK(got[0].detail == "{}");
}

TEST_CASE("an event of a source or kind this kfaild cannot name reads back as written, unknown",
          "[integration][storage]") {
  TempDir dir;
  auto store = openStore((dir / "kfaild.db").string());
  const auto id = cluster(*store, "lab");
  // As another version of kfaild, or an injector's "<action>_failed", would have written them.
  store->addEvent(event(id, kBase, "broker_log_v2", "fenced", 1, std::nullopt, std::nullopt, "{}"));
  store->addEvent(
      event(id, kBase + 1, "injector", "kill_failed", 1, std::nullopt, std::nullopt, "{}"));
  store->flush();
  const auto got = queryEvents(*store, {});
  REQUIRE(got.size() == 2);
  CHECK(got[0].source == "broker_log_v2");
  CHECK(sourceOf(got[0]) == kfaild::common::EventSource::kUnknown);
  CHECK(kindOf(got[0]) == kfaild::common::EventKind::kFenced);
  CHECK(got[1].kind == "kill_failed");
  CHECK(sourceOf(got[1]) == kfaild::common::EventSource::kInjector);
  CHECK(kindOf(got[1]) == kfaild::common::EventKind::kUnknown);
}

TEST_CASE("a reopened database keeps every sample, gap, event and cluster",
          "[integration][storage]") {
  TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  Fixture fixture;
  {
    auto store = openStore(path);
    fixture.fill(*store, 2'000);
    // No flush before closing: the destructor writes what is queued.
    store->addGap(gap(fixture.lab, "orders", 0, GapKind::kAck, kBase + 999'000'000, 9'400'000, 77));
  }
  fixture.gaps.push_back(
      gap(fixture.lab, "orders", 0, GapKind::kAck, kBase + 999'000'000, 9'400'000, 77));

  auto store = openStore(path);
  auto clusters = store->clusters();
  REQUIRE(clusters.ok());
  REQUIRE(clusters->size() == 2);
  CHECK(clusters->at(0).name == "lab");
  CHECK(clusters->at(1).name == "prod");
  CHECK(cluster(*store, "lab") == fixture.lab);
  CHECK(cluster(*store, "prod") == fixture.prod);

  requireSameRecords(querySamples(*store, sampleQuery(fixture.lab, "single", 0, {}, 1'000'000)),
                     fixture.samplesOf(fixture.lab, "single", 0));
  CHECK(countRows(path, "probe_samples") == static_cast<std::int64_t>(fixture.samples.size()));
  requireSameRecords(queryGaps(*store, allGaps()), expectedGaps(fixture.gaps, {}));
  requireSameRecords(queryEvents(*store, allEvents()), expectedEvents(fixture.events, {}));

  // New records after reopening go to the partitions registered before.
  store->addSample(probeSample(fixture.lab, "single", 0, 2'000));
  store->flush();
  CHECK(countRows(path, "probe_partitions") == 4);
  CHECK(querySamples(*store, sampleQuery(fixture.lab, "single", 0, {}, 1'000'000)).size() == 2'001);
}

TEST_CASE("ensureCluster returns the same id for the same name and follows bootstrap changes",
          "[integration][storage]") {
  TempDir dir;
  kfaild::testing::ManualClock clock(kBase);
  SqliteStoreOptions options;
  options.clock = &clock;
  auto store = openStore((dir / "kfaild.db").string(), options);

  auto first = store->ensureCluster("lab", "k1:9092");
  REQUIRE(first.ok());
  clock.advance(5'000'000);
  auto again = store->ensureCluster("lab", "k1:9092,k2:9092");
  REQUIRE(again.ok());
  CHECK(*again == *first);
  auto other = store->ensureCluster("prod", "p1:9092");
  REQUIRE(other.ok());
  CHECK(*other != *first);

  auto clusters = store->clusters();
  REQUIRE(clusters.ok());
  REQUIRE(clusters->size() == 2);
  CHECK(clusters->at(0).id == *first);
  CHECK(clusters->at(0).name == "lab");
  CHECK(clusters->at(0).bootstrap == "k1:9092,k2:9092");
  CHECK(clusters->at(0).created_us == kBase);  // the first registration's time
  CHECK(clusters->at(1).created_us == kBase + 5'000'000);
}

TEST_CASE(
    "records of an unregistered cluster are dropped and counted, the rest of their batch "
    "is written",
    "[integration][storage]") {
  TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  auto store = openStore(path);
  const auto lab = cluster(*store, "lab");
  const ClusterId unknown = lab + 100;
  store->addSample(probeSample(lab, "orders", 0, 1));
  store->addSample(probeSample(unknown, "orders", 0, 1));
  store->addGap(gap(unknown, "orders", 0, GapKind::kAck, kBase, 1'000'000, 1));
  store->addEvent(event(unknown, kBase, "metadata", "leader_change", 1, "orders", 0, "{}"));
  store->addGap(gap(lab, "orders", 0, GapKind::kAck, kBase, 1'000'000, 1));
  store->flush();

  const auto stats = store->writerStats();
  CHECK(stats.written == 2);
  CHECK(stats.dropped_samples == 1);
  CHECK(stats.dropped_other == 2);
  CHECK(stats.failed_batches == 0);
  CHECK(countRows(path, "probe_samples") == 1);
  CHECK(countRows(path, "gaps") == 1);
  CHECK(countRows(path, "events") == 0);
}

TEST_CASE(
    "a raw-sample prune deletes old samples except inside drill windows and never touches gaps "
    "or events",
    "[integration][storage]") {
  TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  SqliteStoreOptions options;
  options.prune_chunk_rows = 37;  // many chunks, and chunk ends that fall inside keep ranges
  auto store = openStore(path, options);
  Fixture fixture;
  fixture.fill(*store, 3'000);
  const auto gaps_before = countRows(path, "gaps");
  const auto events_before = countRows(path, "events");

  const std::int64_t cutoff = kBase + 2'000 * kInterval;
  const std::vector<TimeRange> keep = {
      {kBase + 500 * kInterval, kBase + 600 * kInterval},
      {kBase + 1'900 * kInterval, kBase + 2'500 * kInterval},  // reaches past the cutoff
      {kBase + 550 * kInterval, kBase + 700 * kInterval},      // overlaps the first
      {kBase + 100 * kInterval, kBase + 100 * kInterval},      // empty
  };
  const auto kept = [&](const ProbeSample& s) {
    if (s.send_us >= cutoff) return true;
    return std::any_of(keep.begin(), keep.end(), [&](const TimeRange& r) {
      return s.send_us >= r.from_us && s.send_us < r.to_us;
    });
  };
  std::int64_t want_deleted = 0;
  for (const auto& s : fixture.samples) want_deleted += kept(s) ? 0 : 1;
  REQUIRE(want_deleted > 1'000);

  auto deleted = store->pruneSamples({.before_us = cutoff, .drill_windows = keep});
  REQUIRE(deleted.ok());
  CHECK(*deleted == want_deleted);
  CHECK(countRows(path, "probe_samples") ==
        static_cast<std::int64_t>(fixture.samples.size()) - want_deleted);

  for (const auto& [id, topic, partition] :
       {std::tuple{fixture.lab, "orders", 0}, std::tuple{fixture.lab, "single", 0},
        std::tuple{fixture.prod, "orders", 0}}) {
    INFO(topic << "/" << partition);
    std::vector<ProbeSample> want;
    for (const auto& s : fixture.samplesOf(id, topic, partition)) {
      if (kept(s)) want.push_back(s);
    }
    requireSameRecords(querySamples(*store, sampleQuery(id, topic, partition, {}, 1'000'000)),
                       want);
  }
  CHECK(countRows(path, "gaps") == gaps_before);
  CHECK(countRows(path, "events") == events_before);

  auto again = store->pruneSamples({.before_us = cutoff, .drill_windows = keep});
  REQUIRE(again.ok());
  CHECK(*again == 0);
}

TEST_CASE("pruning interleaves with writes that keep arriving", "[integration][storage]") {
  TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  SqliteStoreOptions options;
  options.prune_chunk_rows = 100;
  auto store = openStore(path, options);
  const auto lab = cluster(*store, "lab");
  for (std::int64_t n = 0; n < 20'000; ++n) store->addSample(probeSample(lab, "orders", 0, n));
  store->flush();

  std::atomic<bool> done = false;
  std::thread producer([&] {
    for (std::int64_t n = 20'000; n < 40'000; ++n) {
      store->addSample(probeSample(lab, "orders", 0, n));
      if (n % 1'000 == 0) std::this_thread::yield();
    }
    done = true;
  });
  auto deleted = store->pruneSamples({.before_us = kBase + 10'000 * kInterval});
  producer.join();
  store->flush();
  REQUIRE(deleted.ok());
  CHECK(*deleted == 10'000);
  CHECK(countRows(path, "probe_samples") == 30'000);
  CHECK(store->writerStats().failed_batches == 0);
}

TEST_CASE("queries from many threads run while the writer writes", "[integration][storage]") {
  TempDir dir;
  auto store = openStore((dir / "kfaild.db").string());
  const auto lab = cluster(*store, "lab");
  for (std::int64_t n = 0; n < 1'000; ++n) store->addSample(probeSample(lab, "orders", 0, n));
  store->flush();

  std::atomic<int> failures = 0;
  std::atomic<int> short_reads = 0;
  std::vector<std::thread> readers;
  for (int t = 0; t < 6; ++t) {
    readers.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        auto found = store->samples(sampleQuery(lab, "orders", 0, {}, 1'000'000));
        if (!found.ok())
          ++failures;
        else if (found->size() < 1'000)
          ++short_reads;
      }
    });
  }
  for (std::int64_t n = 1'000; n < 30'000; ++n) store->addSample(probeSample(lab, "orders", 0, n));
  for (auto& reader : readers) reader.join();
  store->flush();
  CHECK(failures == 0);
  CHECK(short_reads == 0);
  CHECK(store->samples(sampleQuery(lab, "orders", 0, {}, 1'000'000))->size() == 30'000);
}

TEST_CASE("a drill-window prune deletes only samples inside drill windows sent before its cutoff",
          "[integration][storage]") {
  TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  SqliteStoreOptions options;
  options.prune_chunk_rows = 37;
  auto store = openStore(path, options);
  Fixture fixture;
  fixture.fill(*store, 3'000);
  const auto gaps_before = countRows(path, "gaps");
  const auto events_before = countRows(path, "events");

  const std::int64_t cutoff = kBase + 2'000 * kInterval;
  const std::vector<TimeRange> windows = {
      {kBase + 500 * kInterval, kBase + 600 * kInterval},
      {kBase + 1'900 * kInterval, kBase + 2'500 * kInterval},  // reaches past the cutoff
      {kBase + 550 * kInterval, kBase + 700 * kInterval},      // overlaps the first
      {kBase + 100 * kInterval, kBase + 100 * kInterval},      // empty
  };
  const auto deleted_by_prune = [&](const ProbeSample& s) {
    return s.send_us < cutoff &&
           std::any_of(
               windows.begin(), windows.end(),
               [&](const TimeRange& r) { return s.send_us >= r.from_us && s.send_us < r.to_us; });
  };
  std::int64_t want_deleted = 0;
  for (const auto& s : fixture.samples) want_deleted += deleted_by_prune(s) ? 1 : 0;
  REQUIRE(want_deleted > 1'000);

  auto deleted =
      store->pruneSamples({.before_us = cutoff, .drill_windows = windows, .inside_windows = true});
  REQUIRE(deleted.ok());
  CHECK(*deleted == want_deleted);
  for (const auto& [id, topic, partition] :
       {std::tuple{fixture.lab, "orders", 0}, std::tuple{fixture.lab, "orders", 1},
        std::tuple{fixture.lab, "single", 0}, std::tuple{fixture.prod, "orders", 0}}) {
    INFO(topic << "/" << partition);
    std::vector<ProbeSample> want;
    for (const auto& s : fixture.samplesOf(id, topic, partition)) {
      if (!deleted_by_prune(s)) want.push_back(s);
    }
    requireSameRecords(querySamples(*store, sampleQuery(id, topic, partition, {}, 1'000'000)),
                       want);
  }
  CHECK(countRows(path, "gaps") == gaps_before);
  CHECK(countRows(path, "events") == events_before);
}

TEST_CASE("a sample prune with max_rows stops there and the next call goes on from there",
          "[integration][storage]") {
  TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  SqliteStoreOptions options;
  options.prune_chunk_rows = 100;
  auto store = openStore(path, options);
  Fixture fixture;
  fixture.fill(*store, 3'000);
  const std::int64_t cutoff = kBase + 2'000 * kInterval;
  std::int64_t want_deleted = 0;
  for (const auto& s : fixture.samples) want_deleted += s.send_us < cutoff ? 1 : 0;

  std::vector<std::int64_t> calls;
  for (int i = 0; i < 10; ++i) {
    auto deleted = store->pruneSamples({.before_us = cutoff, .max_rows = 2'500});
    REQUIRE(deleted.ok());
    calls.push_back(*deleted);
    if (*deleted < 2'500) break;
  }
  // 8,000 rows: three full calls and the rest.
  REQUIRE(want_deleted == 8'000);
  CHECK(calls == std::vector<std::int64_t>{2'500, 2'500, 2'500, 500});
  CHECK(countRows(path, "probe_samples") ==
        static_cast<std::int64_t>(fixture.samples.size()) - want_deleted);
  auto left = store->recordSpans();
  REQUIRE(left.ok());
  REQUIRE(left->samples);
  CHECK(left->samples->oldest_us == kBase + 2'000 * kInterval);
}

TEST_CASE(
    "gaps and events are pruned oldest first before their cutoff, in chunks, and nothing else",
    "[integration][storage]") {
  TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  SqliteStoreOptions options;
  options.prune_chunk_rows = 7;
  auto store = openStore(path, options);
  Fixture fixture;
  fixture.fill(*store, 100);
  const auto samples_before = countRows(path, "probe_samples");

  // Gaps end every half second in pairs: the ten oldest are exactly the five first end times.
  auto first_ten = store->pruneGaps(kBase + 60 * 1'000'000, 10);
  REQUIRE(first_ten.ok());
  CHECK(*first_ten == 10);
  std::vector<Gap> by_end = fixture.gaps;
  std::stable_sort(by_end.begin(), by_end.end(),
                   [](const Gap& a, const Gap& b) { return a.end_us < b.end_us; });
  auto left = queryGaps(*store, allGaps());
  REQUIRE(left.size() == fixture.gaps.size() - 10);
  CHECK(left.front().end_us == by_end[10].end_us);

  const std::int64_t gap_cutoff = kBase + 60 * 1'000'000;
  auto gaps = store->pruneGaps(gap_cutoff, std::numeric_limits<std::int64_t>::max());
  REQUIRE(gaps.ok());
  std::vector<Gap> want_gaps;
  for (const auto& g : fixture.gaps) {
    if (g.end_us >= gap_cutoff) want_gaps.push_back(g);
  }
  CHECK(*gaps == static_cast<std::int64_t>(fixture.gaps.size() - want_gaps.size()) - 10);
  requireSameRecords(queryGaps(*store, allGaps()), expectedGaps(want_gaps, allGaps()));

  const std::int64_t event_cutoff = kBase + 30 * 1'000'000;
  auto events = store->pruneEvents(event_cutoff, std::numeric_limits<std::int64_t>::max());
  REQUIRE(events.ok());
  std::vector<Event> want_events;
  for (const auto& e : fixture.events) {
    if (e.t_us >= event_cutoff) want_events.push_back(e);
  }
  CHECK(*events == static_cast<std::int64_t>(fixture.events.size() - want_events.size()));
  const auto got_events = queryEvents(*store, allEvents());
  const auto expected = expectedEvents(want_events, allEvents());
  REQUIRE(got_events.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) CHECK(sameRecord(got_events[i], expected[i]));
  CHECK(countRows(path, "probe_samples") == samples_before);
  CHECK(countRows(path, "clusters") == 2);
}

TEST_CASE(
    "events of many windows come from one query with the rows, order and limit of one query "
    "per window",
    "[integration][storage]") {
  TempDir dir;
  auto store = openStore((dir / "kfaild.db").string());
  Fixture fixture;
  fixture.fill(*store, 10);
  const std::vector<TimeRange> windows = {
      {kBase + 40'000'000, kBase + 60'000'000},  // more events than the limit
      {kBase, kBase + 2'000'000},
      {kBase + 45'000'000, kBase + 46'000'000},    // inside the first
      {kBase + 500'000'000, kBase + 600'000'000},  // no events
      {kBase + 1'000'000, kBase + 1'000'000},      // empty
      {kBase - 1'000'000, kBase + 300'000'000},    // all of them, cut by the limit
  };
  for (const std::size_t limit : {std::size_t{5}, std::size_t{1'000}}) {
    INFO("limit " << limit);
    auto found = store->eventsInWindows(fixture.lab, windows, limit);
    REQUIRE(found.ok());
    REQUIRE(found->size() == windows.size());
    for (std::size_t w = 0; w < windows.size(); ++w) {
      INFO("window " << w);
      EventQuery one;
      one.cluster = fixture.lab;
      one.range = windows[w];
      one.limit = limit;
      const auto want = queryEvents(*store, one);
      REQUIRE((*found)[w].size() == want.size());
      for (std::size_t i = 0; i < want.size(); ++i) {
        CHECK((*found)[w][i].id == want[i].id);
        CHECK(sameRecord((*found)[w][i], want[i]));
      }
    }
    CHECK((*found)[0].size() == std::min<std::size_t>(limit, 50));  // lab's events in it
    CHECK((*found)[3].empty());
  }
  auto none = store->eventsInWindows(fixture.lab, {}, 10);
  REQUIRE(none.ok());
  CHECK(none->empty());
}

TEST_CASE("a new database gives the pages retention freed back to the file system on request",
          "[integration][storage]") {
  TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  auto store = openStore(path);
  const auto lab = cluster(*store, "lab");
  // 300,000 samples: over 2 MB even in blocks (about 7 bytes a sample).
  for (std::int64_t n = 0; n < 300'000; ++n) store->addSample(probeSample(lab, "orders", n % 3, n));
  store->flush();
  auto full = store->databaseSize();
  REQUIRE(full.ok());
  CHECK(full->incremental_vacuum);
  CHECK(full->page_size == 4096);
  CHECK(full->free_pages == 0);
  CHECK(full->usedBytes() > 2'000'000);

  auto deleted = store->pruneSamples({.before_us = kBase + 270'000 * kInterval});
  REQUIRE(deleted.ok());
  CHECK(*deleted == 270'000);
  auto pruned = store->databaseSize();
  REQUIRE(pruned.ok());
  CHECK(pruned->pages == full->pages);  // freed pages stay in the file, for reuse
  CHECK(pruned->free_pages > full->pages * 7 / 10);

  auto released = store->releaseFreePages(pruned->free_pages);
  REQUIRE(released.ok());
  CHECK(*released == pruned->free_pages);
  auto shrunk = store->databaseSize();
  REQUIRE(shrunk.ok());
  CHECK(shrunk->free_pages == 0);
  // Pointer-map pages that are no longer needed go too.
  CHECK(shrunk->pages <= pruned->pages - *released);
  CHECK(shrunk->pages >= pruned->pages - *released - 4);
  CHECK(querySamples(*store, sampleQuery(lab, "orders", 1)).size() == 10'000);
  store.reset();
  CHECK(std::filesystem::file_size(path) == static_cast<std::uintmax_t>(shrunk->fileBytes()));
  auto db = sqlite::Database::open(path);
  REQUIRE(db.ok());
  auto check = (*db)->prepare("PRAGMA integrity_check");
  REQUIRE(check.ok());
  REQUIRE(check->step().ok());
  CHECK(check->columnText(0) == "ok");
}

TEST_CASE("a database created without auto-vacuum keeps its mode and gives no pages back",
          "[integration][storage]") {
  TempDir dir;
  const auto path = (dir / "kfaild.db").string();
  {
    // As kfaild before this version left its files.
    auto db = sqlite::Database::open(path);
    REQUIRE(db.ok());
    REQUIRE((*db)->exec("PRAGMA journal_mode = WAL; CREATE TABLE t (x); DROP TABLE t;").ok());
  }
  auto store = openStore(path);
  const auto lab = cluster(*store, "lab");
  for (std::int64_t n = 0; n < 20'000; ++n) store->addSample(probeSample(lab, "orders", 0, n));
  store->flush();
  REQUIRE(store->pruneSamples({.before_us = kBase + 20'000 * kInterval}).ok());
  auto size = store->databaseSize();
  REQUIRE(size.ok());
  CHECK_FALSE(size->incremental_vacuum);
  CHECK(size->free_pages > 0);
  auto released = store->releaseFreePages(size->free_pages);
  REQUIRE(released.ok());
  CHECK(*released == 0);
  CHECK(store->databaseSize()->pages == size->pages);
}

TEST_CASE(
    "recordSpans finds the oldest and newest sample, gap and event, and none in an empty "
    "database",
    "[integration][storage]") {
  TempDir dir;
  auto store = openStore((dir / "kfaild.db").string());
  auto empty = store->recordSpans();
  REQUIRE(empty.ok());
  CHECK_FALSE(empty->samples);
  CHECK_FALSE(empty->gaps);
  CHECK_FALSE(empty->events);
  Fixture fixture;
  fixture.fill(*store, 50);
  // A partition whose one sample is newer than all the others'.
  store->addSample(probeSample(fixture.prod, "late", 0, 1'000));
  store->flush();
  auto spans = store->recordSpans();
  REQUIRE(spans.ok());
  REQUIRE(spans->samples);
  CHECK(spans->samples->oldest_us == kBase);
  CHECK(spans->samples->newest_us == kBase + 1'000 * kInterval);
  REQUIRE(spans->gaps);
  CHECK(spans->gaps->oldest_us == kBase);
  CHECK(spans->gaps->newest_us == kBase + 119 * 1'000'000);
  REQUIRE(spans->events);
  CHECK(spans->events->oldest_us == kBase);
  CHECK(spans->events->newest_us == kBase + 99 * 500'000);
}

}  // namespace
}  // namespace kfaild::storage::sqlite_store_test
