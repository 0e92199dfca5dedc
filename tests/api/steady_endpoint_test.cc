#include "api/steady_endpoint.h"

#include <catch2/catch.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "api/http_server.h"
#include "tests/api/api_test_support.h"

namespace kfaild::api::steady_endpoint_test {
namespace {

using nlohmann::json;
using testing::HttpReply;
using testing::kNow;
using testing::kSecond;
using testing::problemOf;

constexpr const char* kToken = "steady-endpoint-test-token-1234";
constexpr const char* kViewerToken = "steady-endpoint-viewer-token-5678";

// The design document's lab twice: `lab` with the default objectives (15 s stalls) and `tight`
// with 2 s ones, each probe partition 0 without an ack for 2.5 s (testing::labCluster), behind a
// server that needs a token to read.
class SteadyApi {
 public:
  SteadyApi() : clock_(kNow, 5'000'000'000) {
    storage::SqliteStoreOptions store_options;
    store_options.clock = &clock_;
    auto store = storage::SqliteStore::open((dir_ / "kfaild.db").string(), store_options);
    REQUIRE(store.ok());
    store_ = std::move(*store);
    lab_ = *store_->ensureCluster("lab", "127.0.0.1:19091");
    tight_ = *store_->ensureCluster("tight", "127.0.0.1:19091");
    auto tight = testing::labCluster(tight_, clock_);
    tight.name = "tight";
    live_.set({testing::labCluster(lab_, clock_), tight});
    SteadySettings strict;
    strict.objectives = analysis::Objectives{};
    strict.objectives.stall = {2.0, 2.0};
    strict.min_insync["orders"] = 2;
    endpoint_ = std::make_unique<SteadyEndpoint>(
        live_, *store_, clock_, std::map<std::string, SteadySettings>{{"tight", strict}});
    endpoint_->registerOn(router_);
    AccessOptions access;
    access.operator_token = kToken;
    access.viewer_token = kViewerToken;
    access.read_auth = true;
    router_.setAccess(AccessPolicy(access));
    ServerOptions options;
    options.port = 0;
    server_ = std::make_unique<HttpServer>(options, router_);
    const auto started = server_->start();
    if (!started.ok()) FAIL(started.error().describe());
  }

  HttpReply get(const std::string& target, const std::string& token = kViewerToken) {
    return testing::sendWithToken(server_->port(), "GET", target, "", token);
  }

  void addLost(std::int64_t at_us, std::int32_t partition) {
    storage::Event lost;
    lost.cluster = lab_;
    lost.t_us = at_us;
    lost.source = "probe";
    lost.kind = "lost";
    lost.topic = "orders";
    lost.partition = partition;
    lost.detail = R"({"seq":42})";
    store_->addEvent(lost);
    store_->flush();
  }

  testing::FixedLiveClusters& live() { return live_; }

 private:
  kfaild::testing::TempDir dir_;
  kfaild::testing::ManualClock clock_;
  std::unique_ptr<storage::SqliteStore> store_;
  storage::ClusterId lab_ = 0;
  storage::ClusterId tight_ = 0;
  testing::FixedLiveClusters live_;
  Router router_;
  std::unique_ptr<SteadyEndpoint> endpoint_;
  std::unique_ptr<HttpServer> server_;  // last: stopped before the parts its handlers use
};

}  // namespace

TEST_CASE("/steady answers 200 to a viewer when every probe partition is within the objectives",
          "[integration][api]") {
  SteadyApi api;
  const auto reply = api.get("/api/v1/clusters/lab/steady");
  INFO(reply.body);
  REQUIRE(reply.status == 200);
  CHECK(reply.header("Content-Type") == "application/json");
  const auto body = reply.json();
  CHECK(body["cluster"] == "lab");
  CHECK(body["steady"] == true);
  CHECK(body["window_s"] == 30);
  CHECK(body["checked_at"] == "2023-11-14T22:13:20.000000Z");
  CHECK(body["checked_at_us"] == kNow);
  CHECK(body["partitions"] == 3);
  CHECK(body["bounds"] ==
        json{{"max_ack_stall_s", 15.0}, {"max_receive_stall_s", 15.0}, {"max_lost", 0}});
  CHECK(body["failures"] == json::array());
  // Without a token the read is refused like every other.
  CHECK(api.get("/api/v1/clusters/lab/steady", "").status == 401);
}

TEST_CASE("/steady answers 503 naming every failing partition and objective",
          "[integration][api]") {
  SteadyApi api;
  auto reply = api.get("/api/v1/clusters/tight/steady?window_s=60");
  INFO(reply.body);
  REQUIRE(reply.status == 503);
  CHECK(reply.header("Content-Type") == "application/json");
  auto body = reply.json();
  CHECK(body["steady"] == false);
  CHECK(body["window_s"] == 60);
  // Partition 0: no ack for 2.5 s, and its receipts 3 s old on every partition; ISR {2, 3} is
  // still min.insync.replicas 2.
  REQUIRE(body["failures"].size() == 4);
  const auto& ack = body["failures"][0];
  CHECK(ack ==
        json{{"check", "ack_stall"},
             {"topic", "orders"},
             {"partition", 0},
             {"observed", 2.5},
             {"bound", 2.0},
             {"objective", "max_ack_stall_s"},
             {"reason", "orders-0 has had no ack for 2.5 s now, above max_ack_stall_s 2 s"}});
  for (int p = 0; p < 3; ++p) {
    CHECK(body["failures"][p + 1]["check"] == "receive_stall");
    CHECK(body["failures"][p + 1]["partition"] == p);
  }

  // Lost messages inside the window fail the default objectives too; outside it, they do not.
  api.addLost(kNow - 10 * kSecond, 1);
  reply = api.get("/api/v1/clusters/lab/steady");
  REQUIRE(reply.status == 503);
  body = reply.json();
  REQUIRE(body["failures"].size() == 1);
  CHECK(body["failures"][0]["check"] == "lost");
  CHECK(body["failures"][0]["partition"] == 1);
  CHECK(body["failures"][0]["observed"] == 1.0);
  CHECK(api.get("/api/v1/clusters/lab/steady?window_s=5").status == 200);
}

TEST_CASE("/steady answers 503 while the probe is not probing, never 200", "[integration][api]") {
  SteadyApi api;
  api.live().update([](std::vector<ClusterLive>& clusters) {
    clusters[0].probe.phase = probe::ProbePhase::kSettingUp;
    clusters[0].probe.problem = "topic orders missing";
  });
  auto reply = api.get("/api/v1/clusters/lab/steady");
  INFO(reply.body);
  REQUIRE(reply.status == 503);
  auto failures = reply.json()["failures"];
  REQUIRE(failures.size() == 1);
  CHECK(failures[0]["check"] == "probe");
  CHECK(failures[0]["topic"] == nullptr);
  CHECK(failures[0]["reason"].get<std::string>().find("setting_up: topic orders missing") !=
        std::string::npos);

  // Probing for 100 s (5000 ticks of 20 ms): a longer window is not measured yet.
  api.live().update([](std::vector<ClusterLive>& clusters) {
    clusters[0].probe.phase = probe::ProbePhase::kProbing;
  });
  reply = api.get("/api/v1/clusters/lab/steady?window_s=120");
  REQUIRE(reply.status == 503);
  failures = reply.json()["failures"];
  REQUIRE(failures.size() == 1);
  CHECK(failures[0]["check"] == "probe");
  CHECK(failures[0]["observed"] == 100.0);
  CHECK(failures[0]["bound"] == 120.0);
  CHECK(api.get("/api/v1/clusters/lab/steady?window_s=100").status == 200);
}

TEST_CASE("/steady refuses a window out of range with 400 and an unknown cluster with 404",
          "[integration][api]") {
  SteadyApi api;
  for (const auto* window : {"0", "3601", "-5", "30s", "1e3"}) {
    INFO(window);
    const auto body =
        problemOf(api.get(std::string("/api/v1/clusters/lab/steady?window_s=") + window), 400,
                  "invalid-parameter");
    CHECK(body["detail"].get<std::string>().find("window_s") != std::string::npos);
  }
  CHECK(api.get("/api/v1/clusters/lab/steady?window_s=1").status == 200);
  CHECK(api.get("/api/v1/clusters/lab/steady?window_s=3600").status == 503);  // probed 100 s
  problemOf(api.get("/api/v1/clusters/lab/steady?window=30"), 400, "unknown-parameter");
  problemOf(api.get("/api/v1/clusters/nowhere/steady"), 404, "unknown-cluster");
}

}  // namespace kfaild::api::steady_endpoint_test
