#pragma once

// A running API for the integration tests: a SqliteStore on a temporary file with a few gaps,
// events and samples, a fixed LiveClusters, the endpoints on a Router, and the HttpServer on an
// ephemeral port. Time is a ManualClock, so ages and default windows are exact.

#include <catch2/catch.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/endpoints.h"
#include "api/http_server.h"
#include "api/live_state.h"
#include "api/router.h"
#include "server/common/clock.h"
#include "storage/sqlite_store.h"
#include "tests/api/http_client.h"
#include "tests/support/manual_clock.h"
#include "tests/support/temp_dir.h"

namespace kfaild::api::testing {

// Wall-clock "now" of the tests: 2023-11-14T22:13:20Z.
inline constexpr std::int64_t kNow = 1'700'000'000'000'000;
inline constexpr std::int64_t kSecond = 1'000'000;
inline constexpr std::int64_t kMinute = 60 * kSecond;
inline constexpr std::int64_t kHour = 60 * kMinute;

// One request on a fresh connection: with "Authorization: Bearer <token>" unless `token` is
// empty, and "Content-Type: application/json" when there is a body.
inline HttpReply sendWithToken(std::uint16_t port, const std::string& method,
                               const std::string& target, const std::string& body,
                               const std::string& token,
                               std::vector<std::pair<std::string, std::string>> headers = {}) {
  HttpConnection connection(port);
  HttpRequestSpec spec;
  spec.method = method;
  spec.target = target;
  spec.body = body;
  if (!body.empty()) spec.headers.emplace_back("Content-Type", "application/json");
  if (!token.empty()) spec.headers.emplace_back("Authorization", "Bearer " + token);
  for (auto& header : headers) spec.headers.push_back(std::move(header));
  return connection.request(spec);
}

// The problem document of a reply, after checking its type, status and the members every
// problem has.
inline nlohmann::json problemOf(const HttpReply& reply, int status, const std::string& slug) {
  INFO(reply.body);
  CHECK(reply.status == status);
  CHECK(reply.header("Content-Type") == "application/problem+json");
  const auto body = reply.json();
  CHECK(body["type"] == "urn:kfaild:problem:" + slug);
  CHECK(body["status"] == status);
  CHECK(body["title"].is_string());
  CHECK(body["detail"].is_string());
  CHECK(body["instance"].is_string());
  return body;
}

class FixedLiveClusters final : public LiveClusters {
 public:
  std::vector<ClusterLive> clusters() const override {
    std::lock_guard lock(mutex_);
    return clusters_;
  }
  void set(std::vector<ClusterLive> clusters) {
    std::lock_guard lock(mutex_);
    clusters_ = std::move(clusters);
  }
  template <typename F>
  void update(F&& change) {
    std::lock_guard lock(mutex_);
    change(clusters_);
  }

 private:
  mutable std::mutex mutex_;
  std::vector<ClusterLive> clusters_;  // guarded by mutex_
};

inline storage::Gap makeGap(storage::ClusterId cluster, const std::string& topic,
                            std::int32_t partition, storage::GapKind kind, std::int64_t end_us,
                            std::int64_t duration_us) {
  storage::Gap gap;
  gap.cluster = cluster;
  gap.topic = topic;
  gap.partition = partition;
  gap.kind = kind;
  gap.start_us = end_us - duration_us;
  gap.end_us = end_us;
  gap.duration_us = duration_us;
  gap.seq_before = 100;
  gap.seq_after = 101;
  return gap;
}

// The lab of the design document: brokers 1-3, topic `orders` with replica assignment
// 1:2:3,2:3:1,3:1:2, broker 1 fenced from the ISR of partition 0 whose leader moved to 2.
inline ClusterLive labCluster(storage::ClusterId id, const common::Clock& clock) {
  ClusterLive lab;
  lab.name = "lab";
  lab.id = id;
  lab.bootstrap = "127.0.0.1:19091,127.0.0.1:19092";
  lab.observed.reachable = true;
  lab.observed.snapshot_at = kNow - 50'000;
  lab.observed.polls = 120;
  lab.observed.failures = 1;
  kafka::ClusterSnapshot snapshot;
  snapshot.brokers = {{1, "k1", 19091}, {2, "k2", 19092}, {3, "k3", 19093}};
  snapshot.answered_by = 3;
  kafka::TopicInfo orders;
  orders.name = "orders";
  orders.partitions = {{0, 2, {1, 2, 3}, {2, 3}, ""},
                       {1, 2, {2, 3, 1}, {2, 3, 1}, ""},
                       {2, 3, {3, 1, 2}, {3, 1, 2}, ""}};
  snapshot.topics = {orders};
  lab.observed.snapshot = snapshot;
  // The active controller is node 100, a voter that no metadata answer lists; the brokers
  // replicate the metadata log as observers, broker 1 (fenced) far behind.
  kafka::QuorumInfo quorum;
  quorum.leader_id = 100;
  quorum.leader_epoch = 3;
  quorum.high_watermark = 1234;
  quorum.voters = {{100, 1240, -1, kNow / 1000 - 100}};
  quorum.observers = {{1, 900, kNow / 1000 - 9000, kNow / 1000 - 9500},
                      {2, 1240, kNow / 1000 - 150, kNow / 1000 - 150},
                      {3, -1, -1, -1}};
  lab.observed.quorum = quorum;
  lab.observed.quorum_at = kNow - 1'500'000;

  lab.probe.phase = probe::ProbePhase::kProbing;
  lab.probe.run_id = 0xabcdef0123456789ULL;
  lab.probe.interval_us = 20'000;
  lab.probe.ticks = 5000;
  lab.probe.held_ticks = 40;
  lab.probe.sender_scheduling = "nice -10 (SCHED_FIFO refused: Operation not permitted)";
  lab.probe.client_settings = {{"acks", "-1"}, {"enable.idempotence", "true"}};
  const auto now = clock.now();
  for (std::int32_t p = 0; p < 3; ++p) {
    probe::PartitionStatus status;
    status.topic = "orders";
    status.partition = p;
    status.counters.sent = 1000 + static_cast<std::uint64_t>(p);
    status.counters.acked = 990;
    status.counters.received = 985;
    status.counters.send_failed = 3;
    status.counters.lost = 2;
    status.counters.duplicated = 1;
    status.counters.reordered = 4;
    status.counters.gaps = 7;
    status.in_flight = 5;
    if (p == 0) {
      // Holding back for a second: three messages outstanding, the oldest sent 2 s ago.
      status.counters.held_ticks = 40;
      status.outstanding = 3;
      status.oldest_outstanding_sent = common::Instant{now.wall - 2'000'000, now.mono - 2'000'000};
      status.holding_since = common::Instant{now.wall - 1'000'000, now.mono - 1'000'000};
    }
    // Partition 0 has not been acked for 2.5 s: the stall in progress.
    const std::int64_t ack_age = p == 0 ? 2'500'000 : 20'000;
    status.last_ack = common::Instant{now.wall - ack_age, now.mono - ack_age};
    status.last_receive = common::Instant{now.wall - 3'000'000, now.mono - 3'000'000};
    status.longest_ack_gap_us = p == 0 ? 9'400'000 : 8'500'000;
    status.longest_receive_gap_us = 9'900'000;
    lab.probe.partitions.push_back(status);
  }
  return lab;
}

class ApiHarness {
 public:
  explicit ApiHarness(ServerOptions options = defaultOptions(),
                      std::optional<AccessOptions> access = std::nullopt)
      : clock_(kNow, 5'000'000'000) {
    if (access) router_.setAccess(AccessPolicy(*access));
    storage::SqliteStoreOptions store_options;
    store_options.clock = &clock_;
    auto store = storage::SqliteStore::open((dir_ / "kfaild.db").string(), store_options);
    REQUIRE(store.ok());
    store_ = std::move(*store);
    auto lab = store_->ensureCluster("lab", "127.0.0.1:19091,127.0.0.1:19092");
    REQUIRE(lab.ok());
    lab_id_ = *lab;
    auto old = store_->ensureCluster("retired", "10.0.0.1:9092");
    REQUIRE(old.ok());
    retired_id_ = *old;
    fill();
    live_.set({labCluster(lab_id_, clock_)});

    endpoints_ = std::make_unique<Endpoints>(live_, *store_, clock_);
    endpoints_->registerOn(router_);
    // A mutating route, so the auth hook has something to guard (kfaild's own come later).
    router_.add("POST", "/api/v1/echo",
                [](const Request& request) { return jsonResponse(200, {{"echo", request.body}}); });
    server_ = std::make_unique<HttpServer>(options, router_);
    const auto started = server_->start();
    if (!started.ok()) FAIL(started.error().describe());
  }

  static ServerOptions defaultOptions() {
    ServerOptions options;
    options.port = 0;
    return options;
  }

  std::uint16_t port() const { return server_->port(); }
  HttpServer& server() { return *server_; }
  Router& router() { return router_; }
  FixedLiveClusters& live() { return live_; }
  storage::SqliteStore& store() { return *store_; }
  kfaild::testing::ManualClock& clock() { return clock_; }
  storage::ClusterId labId() const { return lab_id_; }

  HttpReply get(const std::string& target) { return httpGet(port(), target); }

 private:
  void fill() {
    using storage::GapKind;
    // Ack gaps of the kill: p0 led by the dead broker stalls longest.
    store_->addGap(makeGap(lab_id_, "orders", 0, GapKind::kAck, kNow - 2 * kHour, 9'400'000));
    store_->addGap(makeGap(lab_id_, "orders", 1, GapKind::kAck, kNow - 2 * kHour, 8'500'000));
    store_->addGap(makeGap(lab_id_, "orders", 2, GapKind::kAck, kNow - 2 * kHour + 1, 8'400'000));
    store_->addGap(
        makeGap(lab_id_, "orders", 0, GapKind::kReceive, kNow - 2 * kHour + 5, 9'900'000));
    // Noise: a short gap on p0 an hour ago, and one from two days ago (outside the default).
    store_->addGap(makeGap(lab_id_, "orders", 0, GapKind::kAck, kNow - kHour, 150'000));
    store_->addGap(makeGap(lab_id_, "orders", 0, GapKind::kAck, kNow - 48 * kHour, 12'000'000));
    // Another cluster's gap must never show up under lab.
    store_->addGap(makeGap(retired_id_, "orders", 0, GapKind::kAck, kNow - kHour, 5'000'000));

    storage::Event fenced;
    fenced.cluster = lab_id_;
    fenced.t_us = kNow - 2 * kHour - 500'000;
    fenced.source = "broker_log";
    fenced.kind = "fenced";
    fenced.broker = 1;
    fenced.detail = R"({"line":"Fencing broker 1"})";
    store_->addEvent(fenced);
    storage::Event leader;
    leader.cluster = lab_id_;
    leader.t_us = kNow - 2 * kHour - 400'000;
    leader.source = "metadata";
    leader.kind = "leader_change";
    leader.topic = "orders";
    leader.partition = 0;
    leader.detail = R"({"from":1,"to":2})";
    store_->addEvent(leader);
    storage::Event odd;
    odd.cluster = lab_id_;
    odd.t_us = kNow - kHour;
    odd.source = "kfaild";
    odd.kind = "note";
    odd.detail = "not json";
    store_->addEvent(odd);

    for (std::int64_t seq = 0; seq < 10; ++seq) {
      storage::ProbeSample sample;
      sample.cluster = lab_id_;
      sample.topic = "orders";
      sample.partition = 0;
      sample.seq = seq;
      sample.send_us = kNow - kMinute + seq * 20'000;
      if (seq != 7) {
        sample.ack_us = sample.send_us + 3'000 + seq;
        sample.offset = 500 + seq;
        sample.receive_us = sample.send_us + 4'000;
      } else {
        sample.ack_error = -185;
      }
      store_->addSample(sample);
    }
    store_->flush();
  }

  kfaild::testing::TempDir dir_;
  kfaild::testing::ManualClock clock_;
  std::unique_ptr<storage::SqliteStore> store_;
  storage::ClusterId lab_id_ = 0;
  storage::ClusterId retired_id_ = 0;
  FixedLiveClusters live_;
  Router router_;
  std::unique_ptr<Endpoints> endpoints_;
  std::unique_ptr<HttpServer> server_;
};

}  // namespace kfaild::api::testing
