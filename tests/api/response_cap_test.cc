// Answers of the list endpoints are capped in bytes, not only in rows, and say where the rest
// begins: following `next` gives every row once.

#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "api/resources.h"
#include "tests/api/api_test_support.h"
#include "tests/api/http_client.h"

namespace kfaild::api::response_cap_test {
namespace {

using testing::ApiHarness;
using testing::kMinute;
using testing::kNow;

TEST_CASE("samples beyond 4 MiB are paged with next, every sample once", "[integration][api]") {
  ApiHarness api;
  // 30,000 samples of partition 1 in the ten minutes before the harness's own: about 10 MB of JSON.
  constexpr int kSamples = 30'000;
  const auto first = kNow - 12 * kMinute;
  for (int seq = 0; seq < kSamples; ++seq) {
    storage::ProbeSample sample;
    sample.cluster = api.labId();
    sample.topic = "orders";
    sample.partition = 1;
    sample.seq = seq;
    sample.send_us = first + seq * 20'000;
    sample.ack_us = sample.send_us + 3'000;
    sample.offset = seq;
    sample.receive_us = sample.send_us + 4'000;
    api.store().addSample(sample);
  }
  api.store().flush();

  std::string target =
      "/api/v1/clusters/lab/partitions/orders/1/"
      "samples?from=2023-11-14T21:50:00Z&to=2023-11-14T22:13:20Z&limit=100000";
  std::set<std::int64_t> seen;
  int pages = 0;
  while (!target.empty() && pages < 20) {
    const auto reply = api.get(target);
    REQUIRE(reply.status == 200);
    CHECK(reply.body.size() <= kMaxResponseBytes);
    const auto body = reply.json();
    for (const auto& item : body["items"])
      CHECK(seen.insert(item["seq"].get<std::int64_t>()).second);
    CHECK(body["count"] == body["items"].size());
    ++pages;
    target = body["next"].is_null() ? "" : body["next"].get<std::string>();
    CHECK(body["truncated"] == !target.empty());
  }
  CHECK(pages >= 3);
  CHECK(seen.size() == kSamples);
}

TEST_CASE("events with large details are cut at 4 MiB with a next page", "[integration][api]") {
  ApiHarness api;
  for (int i = 0; i < 6000; ++i) {
    storage::Event event;
    event.cluster = api.labId();
    event.t_us = kNow - 30 * kMinute + i * 1000;
    event.source = "broker_log";
    event.kind = "line";
    event.detail = R"({"line":")" + std::string(1000, 'l') + R"("})";
    api.store().addEvent(event);
  }
  api.store().flush();
  const auto reply = api.get("/api/v1/clusters/lab/events?limit=10000&source=broker_log&kind=line");
  REQUIRE(reply.status == 200);
  CHECK(reply.body.size() <= kMaxResponseBytes);
  const auto body = reply.json();
  CHECK(body["truncated"] == true);
  REQUIRE(body["next"].is_string());
  const auto rest = api.get(body["next"].get<std::string>());
  REQUIRE(rest.status == 200);
  CHECK(body["items"].size() + rest.json()["items"].size() == 6000);
  CHECK(rest.json()["next"].is_null());
}

}  // namespace
}  // namespace kfaild::api::response_cap_test
