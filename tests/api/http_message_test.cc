#include "api/http_message.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

namespace kfaild::api::http_message_test {
namespace {

using Query = QueryParams;

TEST_CASE("a target splits into decoded path segments and query parameters", "[unit][api]") {
  auto target = parseTarget(
      "/api/v1/clusters/a%2Fb/gaps?topic=or%64ers&from=2026-01-01T00:00:00+02:00&flag&&x=");
  REQUIRE(target.ok());
  CHECK(target->path == "/api/v1/clusters/a%2Fb/gaps");
  CHECK(target->segments == std::vector<std::string>{"api", "v1", "clusters", "a/b", "gaps"});
  // '+' stays a plus: an RFC 3339 offset typed into a URL must survive.
  CHECK(target->query ==
        Query{{"topic", "orders"}, {"from", "2026-01-01T00:00:00+02:00"}, {"flag", ""}, {"x", ""}});
}

TEST_CASE("the root and a trailing slash keep their empty segment", "[unit][api]") {
  auto root = parseTarget("/");
  REQUIRE(root.ok());
  CHECK(root->segments == std::vector<std::string>{""});
  auto trailing = parseTarget("/api/");
  REQUIRE(trailing.ok());
  CHECK(trailing->segments == std::vector<std::string>{"api", ""});
}

TEST_CASE("targets that are not origin-form paths or have bad escapes are refused", "[unit][api]") {
  for (const std::string bad :
       {"", "*", "http://example.com/healthz", "/a#b", "/a%2", "/a%zz", "/a?x=%", "/a?%G1=1"}) {
    INFO(bad);
    const auto target = parseTarget(bad);
    REQUIRE_FALSE(target.ok());
    CHECK_FALSE(target.error().message.empty());
  }
}

TEST_CASE("a problem document has every RFC 9457 member", "[unit][api]") {
  const auto response = problem(ProblemType::kInvalidParameter, "limit: must be an integer",
                                "/api/v1/x", {{"reasons", {"a"}}});
  CHECK(response.status == 400);
  CHECK(response.content_type == "application/problem+json");
  const auto body = nlohmann::json::parse(response.body);
  CHECK(body == nlohmann::json{{"type", "urn:kfaild:problem:invalid-parameter"},
                               {"title", "Invalid parameter"},
                               {"status", 400},
                               {"detail", "limit: must be an integer"},
                               {"instance", "/api/v1/x"},
                               {"reasons", {"a"}}});
}

TEST_CASE("echoing invalid UTF-8 from a request never throws", "[unit][api]") {
  const std::string invalid = "caf\xc3(\xff";
  const auto response = problem(ProblemType::kUnknownCluster, "no cluster " + invalid, "/x");
  const auto body = nlohmann::json::parse(response.body);
  CHECK(body["detail"].get<std::string>().rfind("no cluster caf", 0) == 0);
}

TEST_CASE("printable escapes control bytes and cuts long text", "[unit][api]") {
  CHECK(printable("GET /a\r\nX: y") == "GET /a\\x0d\\x0aX: y");
  CHECK(printable("back\\slash") == "back\\x5cslash");
  CHECK(printable(std::string(300, 'a'), 10) == std::string(10, 'a') + "...");
}

}  // namespace
}  // namespace kfaild::api::http_message_test
