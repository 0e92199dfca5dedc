#include "api/endpoints.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/common/time_format.h"
#include "tests/api/api_test_support.h"

namespace kfaild::api::endpoints_test {
namespace {

using nlohmann::json;
using testing::ApiHarness;
using testing::kHour;
using testing::kNow;

std::string at(std::int64_t wall_us) {
  return common::formatRfc3339(wall_us);
}

using testing::problemOf;

std::vector<std::int64_t> gapDurations(const json& body) {
  std::vector<std::int64_t> out;
  for (const auto& item : body["items"]) out.push_back(item["duration_us"].get<std::int64_t>());
  return out;
}

TEST_CASE("healthz says ok and readyz is ready while every probe probes and the store writes",
          "[integration][api]") {
  ApiHarness api;
  CHECK(api.get("/healthz").json() == json{{"status", "ok"}});
  const auto ready = api.get("/readyz");
  CHECK(ready.status == 200);
  CHECK(ready.json() == json{{"status", "ready"}});

  SECTION("a probe still setting up makes it 503 with the reason") {
    api.live().update([](std::vector<ClusterLive>& clusters) {
      clusters[0].probe.phase = probe::ProbePhase::kSettingUp;
      clusters[0].probe.problem = "topic orders does not exist";
    });
    const auto body = problemOf(api.get("/readyz"), 503, "not-ready");
    CHECK(body["reasons"] ==
          json{"cluster lab: probe is setting_up (topic orders does not exist)"});
    CHECK(body["detail"] == "cluster lab: probe is setting_up (topic orders does not exist)");
  }
  SECTION("a failing store makes it 503 with the store's error") {
    // Capped at its current size (SQLite never caps below it), the file cannot grow.
    api.store().setMaxPageCount(1);
    for (std::int64_t seq = 0; seq < 20'000; ++seq) {
      storage::ProbeSample sample;
      sample.cluster = api.labId();
      sample.topic = "orders";
      sample.partition = 2;
      sample.seq = seq;
      sample.send_us = kNow - kHour + seq;
      api.store().addSample(sample);
    }
    api.store().flush();
    const auto body = problemOf(api.get("/readyz"), 503, "not-ready");
    REQUIRE(body["reasons"].size() == 1);
    CHECK(body["reasons"][0].get<std::string>().rfind("store: the last write failed: ", 0) == 0);
    api.store().setMaxPageCount(std::nullopt);
  }
}

TEST_CASE("the cluster list shows each configured cluster's state", "[integration][api]") {
  ApiHarness api;
  const auto reply = api.get("/api/v1/clusters");
  CHECK(reply.status == 200);
  CHECK(reply.json() == json{{"items",
                              {{{"name", "lab"},
                                {"id", api.labId()},
                                {"bootstrap", "127.0.0.1:19091,127.0.0.1:19092"},
                                {"reachable", true},
                                {"brokers", {1, 2, 3}},
                                {"probe_phase", "probing"},
                                {"probe_problem", nullptr}}}},
                             {"count", 1}});
}

TEST_CASE("a cluster's detail has its brokers and replicas and the probe state of each partition",
          "[integration][api]") {
  ApiHarness api;
  // Two more seconds pass: the stall of partition 0 grows from 2.5 s to 4.5 s.
  api.clock().advance(2'000'000);
  const auto reply = api.get("/api/v1/clusters/lab");
  REQUIRE(reply.status == 200);
  const auto body = reply.json();
  CHECK(body["name"] == "lab");
  CHECK(body["reachable"] == true);
  CHECK(body["controller_id"] == 100);
  CHECK(body["quorum"] == json{{"leader_id", 100},
                               {"leader_epoch", 3},
                               {"high_watermark", 1234},
                               {"voters",
                                {{{"id", 100},
                                  {"log_end_offset", 1240},
                                  {"lag", 0},
                                  {"last_caught_up_at_us", kNow - 100'000}}}},
                               {"observers",
                                {{{"id", 1},
                                  {"log_end_offset", 900},
                                  {"lag", 340},
                                  {"last_caught_up_at_us", kNow - 9'500'000}},
                                 {{"id", 2},
                                  {"log_end_offset", 1240},
                                  {"lag", 0},
                                  {"last_caught_up_at_us", kNow - 150'000}},
                                 {{"id", 3},
                                  {"log_end_offset", nullptr},
                                  {"lag", nullptr},
                                  {"last_caught_up_at_us", nullptr}}}},
                               {"described_at_us", kNow - 1'500'000}});
  CHECK(body["brokers"] == json{{{"id", 1}, {"host", "k1"}, {"port", 19091}},
                                {{"id", 2}, {"host", "k2"}, {"port", 19092}},
                                {{"id", 3}, {"host", "k3"}, {"port", 19093}}});
  CHECK(body["metadata"] == json{{"at", at(kNow - 50'000)},
                                 {"at_us", kNow - 50'000},
                                 {"answered_by", 3},
                                 {"polls", 120},
                                 {"failures", 1},
                                 {"last_error", nullptr}});
  CHECK(body["probe"] ==
        json{{"phase", "probing"},
             {"problem", nullptr},
             {"run_id", "abcdef0123456789"},
             {"interval_us", 20'000},
             {"ticks", 5000},
             {"skipped_ticks", 0},
             {"held_ticks", 40},
             {"max_send_lateness_us", 0},
             {"sender_scheduling", "nice -10 (SCHED_FIFO refused: Operation not permitted)"},
             {"client_settings", {{"acks", "-1"}, {"enable.idempotence", "true"}}}});
  REQUIRE(body["topics"].size() == 1);
  const auto& orders = body["topics"][0];
  CHECK(orders["name"] == "orders");
  CHECK(orders["error"] == nullptr);
  REQUIRE(orders["partitions"].size() == 3);
  const auto& p0 = orders["partitions"][0];
  CHECK(p0["partition"] == 0);
  CHECK(p0["leader"] == 2);
  CHECK(p0["replicas"] == json{1, 2, 3});
  CHECK(p0["isr"] == json{2, 3});
  CHECK(p0["probe"] == json{{"sent", 1000},
                            {"acked", 990},
                            {"received", 985},
                            {"send_failed", 3},
                            {"lost", 2},
                            {"duplicated", 1},
                            {"reordered", 4},
                            {"late", 0},
                            {"gaps", 7},
                            {"in_flight", 5},
                            {"outstanding", 3},
                            {"oldest_outstanding_age_seconds", 4.0},
                            {"held_ticks", 40},
                            {"holding_since_us", kNow - 1'000'000},
                            {"last_ack", at(kNow - 2'500'000)},
                            {"last_ack_us", kNow - 2'500'000},
                            {"current_ack_gap_seconds", 4.5},
                            {"longest_ack_gap_seconds", 9.4},
                            {"last_receive", at(kNow - 3'000'000)},
                            {"last_receive_us", kNow - 3'000'000},
                            {"current_receive_gap_seconds", 5.0},
                            {"longest_receive_gap_seconds", 9.9}});
  CHECK(orders["partitions"][2]["leader"] == 3);
  CHECK(orders["partitions"][2]["probe"]["current_ack_gap_seconds"] == 2.02);
  CHECK(orders["partitions"][2]["probe"]["outstanding"] == 0);
  CHECK(orders["partitions"][2]["probe"]["oldest_outstanding_age_seconds"] == nullptr);
  CHECK(orders["partitions"][2]["probe"]["holding_since_us"] == nullptr);
}

TEST_CASE("probe partitions missing from the metadata still show without replicas",
          "[integration][api]") {
  ApiHarness api;
  api.live().update([](std::vector<ClusterLive>& clusters) {
    clusters[0].observed.snapshot.reset();
    clusters[0].observed.reachable = false;
    clusters[0].observed.last_error = "Local: Broker transport failure";
    clusters[0].observed.quorum.reset();
    clusters[0].observed.quorum_error = "describe quorum: 127.0.0.1:19091: connect: refused";
  });
  const auto body = api.get("/api/v1/clusters/lab").json();
  CHECK(body["brokers"] == json::array());
  CHECK(body["controller_id"] == nullptr);
  CHECK(body["quorum"] == nullptr);
  CHECK(body["metadata"]["at"] == nullptr);
  CHECK(body["metadata"]["last_error"] == "Local: Broker transport failure");
  REQUIRE(body["topics"].size() == 1);
  const auto& p1 = body["topics"][0]["partitions"][1];
  CHECK(p1["leader"] == nullptr);
  CHECK(p1["replicas"] == json::array());
  CHECK(p1["probe"]["acked"] == 990);
}

TEST_CASE("a cluster's detail lists each client profile's probe, the primary first",
          "[integration][api]") {
  ApiHarness api;
  CHECK(api.get("/api/v1/clusters/lab").json()["profiles"] == json::array());
  api.live().update([](std::vector<ClusterLive>& clusters) {
    auto java = clusters[0].probe;
    java.run_id = 0xabcdef;
    java.client_settings = {{"linger.ms", "0"}};
    java.partitions.resize(1);
    clusters[0].profiles = {{"librdkafka", "librdkafka", clusters[0].probe},
                            {"java", "java", java}};
  });
  const auto body = api.get("/api/v1/clusters/lab").json();
  REQUIRE(body["profiles"].size() == 2);
  CHECK(body["profiles"][0]["profile"] == "librdkafka");
  CHECK(body["profiles"][0]["partitions"].size() == 3);
  const auto& java = body["profiles"][1];
  CHECK(java["client"] == "java");
  CHECK(java["run_id"] == "0000000000abcdef");
  CHECK(java["client_settings"] == json{{"linger.ms", "0"}});
  REQUIRE(java["partitions"].size() == 1);
  CHECK(java["partitions"][0]["topic"] == "orders");
  CHECK(java["partitions"][0]["probe"]["acked"].is_number());
}

TEST_CASE("an unknown cluster is a 404 problem naming it", "[integration][api]") {
  ApiHarness api;
  for (const std::string target :
       {"/api/v1/clusters/nosuch", "/api/v1/clusters/nosuch/gaps", "/api/v1/clusters/nosuch/events",
        "/api/v1/clusters/nosuch/partitions/orders/0/samples"}) {
    INFO(target);
    const auto body = problemOf(api.get(target), 404, "unknown-cluster");
    CHECK(body["detail"].get<std::string>().find("\"nosuch\"") != std::string::npos);
    CHECK(body["detail"].get<std::string>().find("configured: lab") != std::string::npos);
    CHECK(body["instance"] == target);
  }
}

TEST_CASE("an unknown path is 404 and a wrong method 405 with Allow", "[integration][api]") {
  ApiHarness api;
  const auto missing = problemOf(api.get("/api/v2/clusters"), 404, "not-found");
  CHECK(missing["detail"] == "no resource at path \"/api/v2/clusters\"");
  const auto reply = testing::httpRequest(api.port(), {"DELETE", "/api/v1/clusters/lab", "", {}});
  problemOf(reply, 405, "method-not-allowed");
  CHECK(reply.header("Allow") == "GET, HEAD");
}

TEST_CASE("gaps of the last 24 hours can be filtered by partition and kind and duration",
          "[integration][api]") {
  ApiHarness api;
  SECTION("the default window leaves out the gap from two days ago and other clusters'") {
    const auto body = api.get("/api/v1/clusters/lab/gaps").json();
    CHECK(body["count"] == 5);
    CHECK(body["truncated"] == false);
    CHECK(body["from"] == at(kNow - 24 * kHour));
    CHECK(body["to"] == at(kNow));
    CHECK(gapDurations(body) ==
          std::vector<std::int64_t>{9'400'000, 8'500'000, 8'400'000, 9'900'000, 150'000});
  }
  SECTION("partition 0") {
    const auto body = api.get("/api/v1/clusters/lab/gaps?partition=0").json();
    CHECK(gapDurations(body) == std::vector<std::int64_t>{9'400'000, 9'900'000, 150'000});
  }
  SECTION("partition 0, at least a second") {
    const auto body = api.get("/api/v1/clusters/lab/gaps?partition=0&min_ms=1000").json();
    CHECK(gapDurations(body) == std::vector<std::int64_t>{9'400'000, 9'900'000});
  }
  SECTION("ack gaps of partition 0 over a second, with every field") {
    const auto body =
        api.get("/api/v1/clusters/lab/gaps?topic=orders&partition=0&kind=ack&min_ms=1000").json();
    REQUIRE(body["count"] == 1);
    CHECK(body["items"][0]["id"].is_number_integer());
    auto item = body["items"][0];
    item.erase("id");
    CHECK(item == json{{"topic", "orders"},
                       {"partition", 0},
                       {"kind", "ack"},
                       {"start", at(kNow - 2 * kHour - 9'400'000)},
                       {"start_us", kNow - 2 * kHour - 9'400'000},
                       {"end", at(kNow - 2 * kHour)},
                       {"end_us", kNow - 2 * kHour},
                       {"duration_us", 9'400'000},
                       {"seq_before", 100},
                       {"seq_after", 101},
                       {"planned", false},
                       {"maintenance_id", nullptr}});
  }
  SECTION("an explicit range reaches back further") {
    const auto body =
        api.get("/api/v1/clusters/lab/gaps?from=" + at(kNow - 72 * kHour) + "&kind=ack").json();
    CHECK(body["count"] == 5);
    CHECK(body["items"][0]["duration_us"] == 12'000'000);
  }
  SECTION("a limit cuts the list and says so") {
    const auto body = api.get("/api/v1/clusters/lab/gaps?limit=2").json();
    CHECK(body["count"] == 2);
    CHECK(body["items"].size() == 2);
    CHECK(body["truncated"] == true);
    CHECK(api.get("/api/v1/clusters/lab/gaps?limit=5").json()["truncated"] == false);
  }
  SECTION("a cluster no longer configured keeps its history") {
    const auto body = api.get("/api/v1/clusters/retired/gaps").json();
    CHECK(gapDurations(body) == std::vector<std::int64_t>{5'000'000});
  }
}

TEST_CASE("bad query parameters are 400 problems naming the parameter", "[integration][api]") {
  ApiHarness api;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/api/v1/clusters/lab/gaps?limit=0",
       "limit: must be an integer between 1 and 10000, got \"0\""},
      {"/api/v1/clusters/lab/gaps?limit=10001",
       "limit: must be an integer between 1 and 10000, got \"10001\""},
      {"/api/v1/clusters/lab/gaps?limit=ten",
       "limit: must be an integer between 1 and 10000, got \"ten\""},
      {"/api/v1/clusters/lab/gaps?partition=-1",
       "partition: must be an integer between 0 and 2147483647, got \"-1\""},
      {"/api/v1/clusters/lab/gaps?kind=both", "kind: must be one of ack, receive, got \"both\""},
      {"/api/v1/clusters/lab/gaps?min_ms=1.5",
       "min_ms: must be an integer between 0 and 31536000000, got \"1.5\""},
      {"/api/v1/clusters/lab/gaps?topic=a%20b", "topic: must be a Kafka topic name"},
      {"/api/v1/clusters/lab/gaps?from=yesterday", "from: must be an RFC 3339 date-time"},
      {"/api/v1/clusters/lab/gaps?to=2023-11-14", "to: must be an RFC 3339 date-time"},
      {"/api/v1/clusters/lab/gaps?limit=1&limit=2", "limit: given more than once"},
      {"/api/v1/clusters/lab/events?source=disk", "source: must be one of metadata, client"},
      {"/api/v1/clusters/lab/events?kind=Leader", "kind: must be a lower-case identifier"},
      {"/api/v1/clusters/lab/events?limit=10001", "limit: must be an integer between 1 and 10000"},
      {"/api/v1/clusters/lab/partitions/orders/0/samples?limit=100001",
       "limit: must be an integer between 1 and 100000"},
      {"/api/v1/clusters/lab/partitions/orders/x/samples",
       "partition: must be an integer between 0 and 2147483647, got \"x\""},
      {"/api/v1/clusters/lab/partitions/a%20b/0/samples", "topic: must be a Kafka topic name"},
      {"/api/v1/clusters/lab/partitions/orders/0/samples?from=" + at(kNow - 25 * kHour),
       "from, to: the range spans 90000 s, more than the 86400 s allowed"},
  };
  for (const auto& [target, detail] : cases) {
    INFO(target);
    const auto body = problemOf(api.get(target), 400, "invalid-parameter");
    CHECK(body["detail"].get<std::string>().rfind(detail, 0) == 0);
  }

  for (const std::string target :
       {"/api/v1/clusters/lab/gaps?partition=0&colour=red", "/healthz?verbose=1",
        "/api/v1/clusters?x", "/api/v1/clusters/lab/partitions/orders/0/samples?kind=ack"}) {
    INFO(target);
    const auto body = problemOf(api.get(target), 400, "unknown-parameter");
    CHECK(body["detail"].get<std::string>().rfind("unknown query parameter \"", 0) == 0);
  }
}

TEST_CASE("events of a cluster can be filtered by source and kind and partition",
          "[integration][api]") {
  ApiHarness api;
  const auto all = api.get("/api/v1/clusters/lab/events").json();
  REQUIRE(all["count"] == 3);
  auto fenced = all["items"][0];
  CHECK(fenced["id"].is_number_integer());
  fenced.erase("id");
  CHECK(fenced == json{{"t", at(kNow - 2 * kHour - 500'000)},
                       {"t_us", kNow - 2 * kHour - 500'000},
                       {"source", "broker_log"},
                       {"kind", "fenced"},
                       {"broker", 1},
                       {"topic", nullptr},
                       {"partition", nullptr},
                       {"detail", {{"line", "Fencing broker 1"}}}});
  // Detail that is not a JSON object is passed on as text.
  CHECK(all["items"][2]["detail"] == json{{"text", "not json"}});

  const auto metadata = api.get("/api/v1/clusters/lab/events?source=metadata").json();
  REQUIRE(metadata["count"] == 1);
  CHECK(metadata["items"][0]["kind"] == "leader_change");
  CHECK(metadata["items"][0]["detail"] == json{{"from", 1}, {"to", 2}});
  CHECK(api.get("/api/v1/clusters/lab/events?kind=fenced").json()["count"] == 1);
  CHECK(api.get("/api/v1/clusters/lab/events?topic=orders&partition=0").json()["count"] == 1);
  CHECK(api.get("/api/v1/clusters/lab/events?partition=1").json()["count"] == 0);
  CHECK(api.get("/api/v1/clusters/lab/events?limit=1").json()["truncated"] == true);
}

TEST_CASE("samples of a partition carry their send and ack and receive times and latencies",
          "[integration][api]") {
  ApiHarness api;
  const auto body = api.get("/api/v1/clusters/lab/partitions/orders/0/samples").json();
  REQUIRE(body["count"] == 10);
  CHECK(body["from"] == at(kNow - 5 * 60 * 1'000'000LL));
  const std::int64_t send = kNow - 60 * 1'000'000LL;
  CHECK(body["items"][0] == json{{"seq", 0},
                                 {"send", at(send)},
                                 {"send_us", send},
                                 {"ack", at(send + 3'000)},
                                 {"ack_us", send + 3'000},
                                 {"ack_error", 0},
                                 {"ack_latency_us", 3'000},
                                 {"offset", 500},
                                 {"receive", at(send + 4'000)},
                                 {"receive_us", send + 4'000},
                                 {"receive_latency_us", 4'000}});
  const auto& failed = body["items"][7];
  CHECK(failed["seq"] == 7);
  CHECK(failed["ack"] == nullptr);
  CHECK(failed["ack_latency_us"] == nullptr);
  CHECK(failed["ack_error"] == -185);
  CHECK(failed["receive_us"] == nullptr);

  const auto window =
      api.get("/api/v1/clusters/lab/partitions/orders/0/samples?from=" + at(send + 100'000) +
              "&to=" + at(send + 140'000) + "&limit=1")
          .json();
  REQUIRE(window["count"] == 1);
  CHECK(window["items"][0]["seq"] == 5);
  CHECK(window["truncated"] == true);
  CHECK(api.get("/api/v1/clusters/lab/partitions/orders/1/samples").json()["count"] == 0);
}

TEST_CASE("from at or after to is an empty answer on gaps, events and samples, not a 400",
          "[integration][api]") {
  ApiHarness api;
  // Each instant is a row's: an ack gap's end, the fenced event, the sixth sample's send. The
  // half-open range [t, t) leaves it out; one microsecond more finds it.
  const std::int64_t send = kNow - 60 * 1'000'000LL + 100'000;
  struct Case {
    std::string path;
    std::int64_t t;
  };
  for (const auto& c :
       {Case{"/api/v1/clusters/lab/gaps?kind=ack&partition=0&min_ms=1000&", kNow - 2 * kHour},
        Case{"/api/v1/clusters/lab/events?source=broker_log&", kNow - 2 * kHour - 500'000},
        Case{"/api/v1/clusters/lab/partitions/orders/0/samples?", send}}) {
    INFO(c.path);
    const auto none = api.get(c.path + "from=" + at(c.t) + "&to=" + at(c.t));
    INFO(none.body);
    REQUIRE(none.status == 200);
    const auto body = none.json();
    CHECK(body["items"].empty());
    CHECK(body["count"] == 0);
    CHECK(body["truncated"] == false);
    CHECK(body["from"] == at(c.t));
    CHECK(body["to"] == at(c.t));
    CHECK(api.get(c.path + "from=" + at(c.t) + "&to=" + at(c.t + 1)).json()["count"] == 1);
    const auto inverted = api.get(c.path + "from=" + at(c.t + 1) + "&to=" + at(c.t));
    REQUIRE(inverted.status == 200);
    CHECK(inverted.json()["items"].empty());
    // A `from` in the future, `to` left to default to now.
    const auto future = api.get(c.path + "from=" + at(kNow + kHour));
    REQUIRE(future.status == 200);
    CHECK(future.json()["items"].empty());
  }
}

TEST_CASE("metrics expose probe counters and cluster state and store and HTTP counts",
          "[integration][api]") {
  ApiHarness api;
  api.live().update([](std::vector<ClusterLive>& clusters) {
    // A name that needs escaping in a label value.
    clusters[0].probe.partitions[1].topic = "or\"ders";
    // A count a double could not hold exactly.
    clusters[0].probe.partitions[2].counters.sent = (std::uint64_t{1} << 53) + 1;
  });
  CHECK(api.get("/healthz").status == 200);
  CHECK(api.get("/nope").status == 404);
  const auto reply = api.get("/metrics");
  REQUIRE(reply.status == 200);
  CHECK(reply.header("Content-Type") == "text/plain; version=0.0.4; charset=utf-8");
  const std::string& text = reply.body;
  const std::vector<std::string> expected = {
      "# TYPE kfaild_probe_acked_total counter\n",
      "kfaild_probe_acked_total{cluster=\"lab\",topic=\"orders\",partition=\"0\"} 990\n",
      "kfaild_probe_acked_total{cluster=\"lab\",topic=\"or\\\"ders\",partition=\"1\"} 990\n",
      "kfaild_probe_received_total{cluster=\"lab\",topic=\"orders\",partition=\"0\"} 985\n",
      "kfaild_probe_sent_total{cluster=\"lab\",topic=\"orders\",partition=\"2\"} "
      "9007199254740993\n",
      "kfaild_probe_send_failed_total{cluster=\"lab\",topic=\"orders\",partition=\"0\"} 3\n",
      "kfaild_probe_lost_total{cluster=\"lab\",topic=\"orders\",partition=\"0\"} 2\n",
      "kfaild_probe_duplicated_total{cluster=\"lab\",topic=\"orders\",partition=\"0\"} 1\n",
      "kfaild_probe_reordered_total{cluster=\"lab\",topic=\"orders\",partition=\"0\"} 4\n",
      "kfaild_probe_gaps_total{cluster=\"lab\",topic=\"orders\",partition=\"0\"} 7\n",
      "kfaild_probe_held_ticks_total{cluster=\"lab\",topic=\"orders\",partition=\"0\"} 40\n",
      "kfaild_probe_held_ticks_total{cluster=\"lab\",topic=\"orders\",partition=\"2\"} 0\n",
      "kfaild_probe_outstanding{cluster=\"lab\",topic=\"orders\",partition=\"0\"} 3\n",
      "kfaild_probe_holding{cluster=\"lab\",topic=\"orders\",partition=\"0\"} 1\n",
      "kfaild_probe_holding{cluster=\"lab\",topic=\"orders\",partition=\"2\"} 0\n",
      "# TYPE kfaild_probe_current_ack_gap_seconds gauge\n",
      "kfaild_probe_current_ack_gap_seconds{cluster=\"lab\",topic=\"orders\",partition=\"0\"} "
      "2.5\n",
      "kfaild_probe_longest_ack_gap_seconds{cluster=\"lab\",topic=\"orders\",partition=\"0\"} "
      "9.4\n",
      "kfaild_cluster_reachable{cluster=\"lab\"} 1\n",
      "kfaild_cluster_brokers{cluster=\"lab\"} 3\n",
      "kfaild_store_queued_records 0\n",
      "kfaild_store_dropped_samples_total 0\n",
      "kfaild_store_failed_batches_total 0\n",
      "# TYPE kfaild_http_requests_total counter\n",
      "kfaild_http_requests_total{code=\"200\"} 1\n",
      "kfaild_http_requests_total{code=\"404\"} 1\n",
  };
  for (const auto& line : expected) {
    INFO(line);
    CHECK(text.find(line) != std::string::npos);
  }
  // 7 gaps, 3 events and 10 samples were written, plus whatever else the store counts.
  const std::string written_line = "\nkfaild_store_written_total ";
  const auto written = text.find(written_line);
  REQUIRE(written != std::string::npos);
  CHECK(std::stoll(text.substr(written + written_line.size())) >= 20);
  // Every family's samples follow its TYPE line without another family in between.
  CHECK(text.find("# TYPE kfaild_probe_acked_total") < text.find("kfaild_probe_acked_total{"));
  CHECK(text.find("kfaild_probe_acked_total{", text.find("# TYPE kfaild_probe_received_total")) ==
        std::string::npos);
}

}  // namespace
}  // namespace kfaild::api::endpoints_test
