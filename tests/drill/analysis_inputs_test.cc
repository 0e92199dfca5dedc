#include "server/drill/analysis_inputs.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>

#include "server/drill/errc.h"
#include "server/drill/run_execution.h"
#include "storage/sqlite_store.h"
#include "tests/support/temp_dir.h"

namespace kfaild::drill::analysis_inputs_test {
namespace {

constexpr std::int64_t kBase = 1'760'000'000'000'000;
constexpr std::int64_t kInterval = 20'000;

struct StoreFixture {
  kfaild::testing::TempDir dir;
  std::unique_ptr<storage::SqliteStore> store;
  storage::ClusterId cluster = 0;

  StoreFixture() {
    auto s = storage::SqliteStore::open((dir / "kfaild.db").string());
    if (!s.ok()) FAIL(s.error().describe());
    store = std::move(*s);
    auto id = store->ensureCluster("lab", "lab:9092");
    if (!id.ok()) FAIL(id.error().describe());
    cluster = *id;
  }

  void addSamples(const std::string& topic, std::int32_t partition, std::int64_t count,
                  std::int64_t spacing_us = kInterval) {
    for (std::int64_t seq = 0; seq < count; ++seq) {
      storage::ProbeSample s;
      s.cluster = cluster;
      s.topic = topic;
      s.partition = partition;
      s.seq = seq;
      s.send_us = kBase + seq * spacing_us;
      s.ack_us = s.send_us + 2'000;
      s.offset = seq;
      s.receive_us = s.send_us + 4'000;
      store->addSample(std::move(s));
      if (seq % 10'000 == 9'999) store->flush();
    }
    store->flush();
  }

  void addEvent(std::int64_t t_us, std::string kind) {
    storage::Event e;
    e.cluster = cluster;
    e.t_us = t_us;
    e.source = "metadata";
    e.kind = std::move(kind);
    e.broker = 1;
    e.detail = "{}";
    store->addEvent(std::move(e));
  }

  AnalysisWindow window(std::vector<std::pair<std::string, std::int32_t>> partitions) const {
    return {.cluster = cluster,
            .partitions = std::move(partitions),
            .samples = {kBase - 1'000'000, kBase + 100'000'000'000},
            .events = {kBase - 1'000'000, kBase + 100'000'000'000}};
  }
};

TEST_CASE("a run's analysis reads every event of its window past the store's default of 10,000",
          "[integration][drill]") {
  StoreFixture f;
  // A busy drill at 1,000 partitions: 12,000 metadata changes, the node's return last.
  for (std::int64_t i = 0; i < 12'000; ++i) {
    f.addEvent(kBase + i * 1'000, "leader_change");
    if (i % 10'000 == 9'999) f.store->flush();
  }
  f.addEvent(kBase + 12'000 * 1'000, "broker_back");
  f.store->flush();

  // What the analysis read before: one query with the store's default limit stops short.
  storage::EventQuery one_query;
  one_query.cluster = f.cluster;
  one_query.range = f.window({}).events;
  auto cut = f.store->events(one_query);
  REQUIRE(cut.ok());
  CHECK(cut->size() == 10'000);

  auto loaded = loadAnalysisInputs(*f.store, f.window({}));
  REQUIRE(loaded.ok());
  REQUIRE(loaded->events.size() == 12'001);
  CHECK(loaded->events.back().kind == "broker_back");
  CHECK(std::is_sorted(loaded->events.begin(), loaded->events.end(),
                       [](const storage::Event& a, const storage::Event& b) {
                         return a.t_us != b.t_us ? a.t_us < b.t_us : a.id < b.id;
                       }));
}

TEST_CASE("a run's analysis reads every sample of a partition beyond one query's limit",
          "[integration][drill]") {
  StoreFixture f;
  f.addSamples("orders", 0, 2'500);
  f.addSamples("orders", 1, 40);

  auto loaded = loadAnalysisInputs(*f.store, f.window({{"orders", 0}, {"orders", 1}}),
                                   PageSizes{.samples = 300, .events = 10});
  REQUIRE(loaded.ok());
  REQUIRE(loaded->samples.size() == 2'540);
  for (std::int64_t seq = 0; seq < 2'500; ++seq) {
    INFO("seq " << seq);
    REQUIRE(loaded->samples[static_cast<std::size_t>(seq)].seq == seq);
    REQUIRE(loaded->samples[static_cast<std::size_t>(seq)].partition == 0);
  }
  CHECK(loaded->samples.back().partition == 1);
  CHECK(loaded->samples.back().seq == 39);
}

TEST_CASE("events that share one time are paged without a repeat or a loss",
          "[integration][drill]") {
  StoreFixture f;
  // One metadata poll records many changes at the same instant: pages end inside it.
  for (int i = 0; i < 23; ++i) f.addEvent(kBase, "leader_change");
  for (int i = 0; i < 5; ++i) f.addEvent(kBase + 1'000, "isr_shrink");
  f.store->flush();

  auto loaded = loadAnalysisInputs(*f.store, f.window({}), PageSizes{.samples = 10, .events = 4});
  REQUIRE(loaded.ok());
  REQUIRE(loaded->events.size() == 28);
  for (std::size_t i = 1; i < loaded->events.size(); ++i) {
    CHECK(loaded->events[i].id > loaded->events[i - 1].id);
  }
  CHECK(loaded->events.back().kind == "isr_shrink");
}

TEST_CASE("a window whose samples cannot be paged fails with the reason instead of being cut",
          "[integration][drill]") {
  StoreFixture f;
  // More samples sent at one microsecond than a page holds: no page can move past them.
  f.addSamples("orders", 0, 6, 0);

  auto loaded = loadAnalysisInputs(*f.store, f.window({{"orders", 0}}),
                                   PageSizes{.samples = 4, .events = 10});
  REQUIRE_FALSE(loaded.ok());
  CHECK(loaded.error().code == make_error_code(errc::analysis_window));
  CHECK(loaded.error().message.find("orders-0") != std::string::npos);
}

}  // namespace
TEST_CASE(
    "a client profile's events are its stream's probe and client events with the cluster's others",
    "[unit][drill]") {
  const auto event = [](std::int64_t id, std::int64_t t, const char* source, const char* kind) {
    storage::Event e;
    e.id = id;
    e.t_us = t;
    e.source = source;
    e.kind = kind;
    return e;
  };
  // The cluster's stream: the primary profile's probe and client events among the others.
  const std::vector<storage::Event> cluster = {
      event(1, 100, "metadata", "isr_shrink"), event(2, 150, "probe", "held_back"),
      event(3, 200, "client", "leader_update"), event(6, 300, "broker_log", "fenced"),
      event(7, 300, "injector", "fault")};
  // The profile's own stream.
  const std::vector<storage::Event> stream = {event(4, 250, "client", "leader_update"),
                                              event(5, 300, "probe", "idle")};
  const auto merged = profileEvents(cluster, stream);
  std::vector<std::int64_t> ids;
  for (const auto& e : merged) ids.push_back(e.id);
  CHECK(ids == std::vector<std::int64_t>{1, 4, 5, 6, 7});
}

}  // namespace kfaild::drill::analysis_inputs_test
