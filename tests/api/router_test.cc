#include "api/router.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace kfaild::api::router_test {
namespace {

// `authorization`: the Authorization field's value; empty: none.
Request makeRequest(const std::string& method, const std::string& target,
                    const std::string& authorization = "") {
  auto parsed = parseTarget(target);
  REQUIRE(parsed.ok());
  Request request;
  request.method = method;
  request.path = parsed->path;
  request.segments = parsed->segments;
  request.query = parsed->query;
  if (!authorization.empty()) request.headers.authorization.push_back(authorization);
  if (method != "GET" && method != "HEAD") request.headers.client_header = true;
  return request;
}

Response echoParams(const Request& request) {
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [key, value] : request.params) params[key] = value;
  return jsonResponse(200, params);
}

TEST_CASE("the router hands decoded {param} segments to the handler", "[unit][api]") {
  Router router;
  router.add("GET", "/api/v1/clusters/{cluster}/partitions/{topic}/{partition}/samples",
             echoParams);
  auto request = makeRequest("GET", "/api/v1/clusters/lab%20one/partitions/orders/2/samples");
  const auto response = router.dispatch(request);
  CHECK(response.status == 200);
  const auto body = nlohmann::json::parse(response.body);
  CHECK(body == nlohmann::json{{"cluster", "lab one"}, {"topic", "orders"}, {"partition", "2"}});
}

TEST_CASE("a path no route matches gets a 404 problem naming the path", "[unit][api]") {
  Router router;
  router.add("GET", "/api/v1/clusters/{cluster}", echoParams);
  for (const std::string target :
       {"/api/v1/nothing", "/api/v1/clusters/lab/extra", "/api/v1/clusters/", "/"}) {
    auto request = makeRequest("GET", target);
    const auto response = router.dispatch(request);
    INFO(target);
    CHECK(response.status == 404);
    CHECK(response.content_type == "application/problem+json");
    const auto body = nlohmann::json::parse(response.body);
    CHECK(body["type"] == "urn:kfaild:problem:not-found");
    CHECK(body["status"] == 404);
    CHECK(body["instance"] == target);
    CHECK(body["detail"].get<std::string>().find(target) != std::string::npos);
  }
}

TEST_CASE("a known path with a method it does not take gets 405 with Allow", "[unit][api]") {
  Router router;
  router.add("GET", "/api/v1/drills", echoParams);
  router.add("POST", "/api/v1/drills", echoParams);
  auto request = makeRequest("DELETE", "/api/v1/drills");
  const auto response = router.dispatch(request);
  CHECK(response.status == 405);
  REQUIRE(response.headers.size() == 1);
  CHECK(response.headers[0].first == "Allow");
  CHECK(response.headers[0].second == "GET, HEAD, POST");
  const auto body = nlohmann::json::parse(response.body);
  CHECK(body["type"] == "urn:kfaild:problem:method-not-allowed");
  CHECK(body["detail"].get<std::string>().find("DELETE") != std::string::npos);
}

TEST_CASE("HEAD runs the GET handler", "[unit][api]") {
  Router router;
  router.add("GET", "/healthz", [](const Request&) { return jsonResponse(200, {{"ok", 1}}); });
  auto request = makeRequest("HEAD", "/healthz");
  const auto response = router.dispatch(request);
  CHECK(response.status == 200);
  CHECK(response.body == R"({"ok":1})");
}

TEST_CASE(
    "a mutating route answers missing or malformed or wrong credentials with a Bearer challenge",
    "[unit][api]") {
  Router router;
  AccessOptions access;
  access.operator_token = "operator-token-0123456789";
  router.setAccess(AccessPolicy(access));
  int calls = 0;
  router.add("POST", "/api/v1/drills", [&calls](const Request&) {
    ++calls;
    return jsonResponse(201, {});
  });

  for (const std::string authorization :
       {"", "Basic b3BlcmF0b3I=", "Bearer", "Bearer operator-token-012345678",
        "Bearer operator-token-01234567890"}) {
    auto request = makeRequest("POST", "/api/v1/drills", authorization);
    const auto response = router.dispatch(request);
    CHECK(response.status == 401);
    REQUIRE(response.headers.size() == 1);
    CHECK(response.headers[0].first == "WWW-Authenticate");
    CHECK(response.headers[0].second.rfind("Bearer realm=\"kfaild\"", 0) == 0);
    CHECK(nlohmann::json::parse(response.body)["type"] == "urn:kfaild:problem:unauthorized");
  }
  CHECK(calls == 0);

  auto valid = makeRequest("POST", "/api/v1/drills", "Bearer operator-token-0123456789");
  CHECK(router.dispatch(valid).status == 201);
  CHECK(valid.role == Role::kOperator);
  CHECK(calls == 1);
}

TEST_CASE("without tokens configured (auth none) every request is the operator", "[unit][api]") {
  Router router;
  router.add("POST", "/api/v1/drills", [](const Request& request) {
    return jsonResponse(201, {{"role", roleName(request.role)}});
  });
  auto open = makeRequest("POST", "/api/v1/drills");
  const auto response = router.dispatch(open);
  CHECK(response.status == 201);
  CHECK(nlohmann::json::parse(response.body)["role"] == "operator");
}

TEST_CASE("reading routes do not ask for credentials unless read_auth is on", "[unit][api]") {
  AccessOptions access;
  access.operator_token = "operator-token-0123456789";
  Router router;
  router.setAccess(AccessPolicy(access));
  router.add("GET", "/api/v1/clusters", echoParams);
  auto request = makeRequest("GET", "/api/v1/clusters");
  CHECK(router.dispatch(request).status == 200);
  CHECK(request.role == Role::kAnonymous);

  access.read_auth = true;
  Router guarded;
  guarded.setAccess(AccessPolicy(access));
  guarded.add("GET", "/api/v1/clusters", echoParams);
  guarded.add("GET", "/healthz", echoParams, RouteOptions{RouteAccess::kPublic, false});
  auto anonymous = makeRequest("GET", "/api/v1/clusters");
  CHECK(guarded.dispatch(anonymous).status == 401);
  auto health = makeRequest("GET", "/healthz");
  CHECK(guarded.dispatch(health).status == 200);
  auto with_token = makeRequest("GET", "/api/v1/clusters", "Bearer operator-token-0123456789");
  CHECK(guarded.dispatch(with_token).status == 200);
}

TEST_CASE("a handler that throws becomes a 500 problem that does not leak the exception",
          "[unit][api]") {
  Router router;
  router.add("GET", "/boom",
             [](const Request&) -> Response { throw std::runtime_error("secret internals"); });
  auto request = makeRequest("GET", "/boom");
  const auto response = router.dispatch(request);
  CHECK(response.status == 500);
  CHECK(response.content_type == "application/problem+json");
  CHECK(response.body.find("secret internals") == std::string::npos);
}

TEST_CASE("a literal route wins over a parameter route for the same path", "[unit][api]") {
  Router router;
  router.add("GET", "/api/v1/clusters/{cluster}", echoParams);
  router.add("GET", "/api/v1/clusters/summary",
             [](const Request&) { return jsonResponse(200, {{"summary", true}}); });
  auto summary = makeRequest("GET", "/api/v1/clusters/summary");
  CHECK(nlohmann::json::parse(router.dispatch(summary).body) == nlohmann::json{{"summary", true}});
  auto lab = makeRequest("GET", "/api/v1/clusters/lab");
  CHECK(nlohmann::json::parse(router.dispatch(lab).body) == nlohmann::json{{"cluster", "lab"}});
}

TEST_CASE("malformed patterns and duplicate routes are refused at registration", "[unit][api]") {
  Router router;
  CHECK_THROWS_AS(router.add("GET", "healthz", echoParams), std::invalid_argument);
  CHECK_THROWS_AS(router.add("GET", "/a/{x}/b/{x}", echoParams), std::invalid_argument);
  router.add("GET", "/a", echoParams);
  CHECK_THROWS_AS(router.add("GET", "/a", echoParams), std::invalid_argument);
}

}  // namespace
}  // namespace kfaild::api::router_test
