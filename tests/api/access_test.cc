// The access policy (Host, cross-site, credentials, roles, media type) and the redactor, on
// requests built by hand.

#include "api/access.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "server/common/redaction.h"
#include "server/common/sensitive.h"

namespace kfaild::api::access_test {
namespace {

using common::Redactor;

constexpr const char* kOperator = "operator-token-0123456789";
constexpr const char* kViewer = "viewer-token-0123456789";

AccessOptions tokens() {
  AccessOptions options;
  options.operator_token = kOperator;
  options.viewer_token = kViewer;
  return options;
}

Request request(const std::string& method, const std::string& token = "") {
  Request r;
  r.method = method;
  r.path = "/api/v1/clusters/lab/drills";
  r.headers.host = "127.0.0.1:8080";
  if (!token.empty()) r.headers.authorization.push_back(std::string("Bearer ") + token);
  if (method == "POST") {
    r.body = R"({"fault":"kill"})";
    r.headers.content_type = "application/json";
  }
  return r;
}

std::string slugOf(const std::optional<Response>& response) {
  REQUIRE(response);
  const auto type = nlohmann::json::parse(response->body)["type"].get<std::string>();
  return type.substr(type.rfind(':') + 1);
}

TEST_CASE(
    "Host: the listen address, loopback names and allowed_hosts are answered, other names get 421",
    "[unit][api][security]") {
  AccessOptions options = tokens();
  options.allowed_hosts = {"kfaild.example.org", "ops.example.org:8443"};
  const AccessPolicy policy(options);
  for (const std::string host :
       {"127.0.0.1:8080", "localhost:8080", "LOCALHOST", "[::1]:8080", "127.0.0.2",
        "kfaild.example.org", "kfaild.example.org.:80", "ops.example.org:1"}) {
    Request r = request("GET");
    r.headers.host = host;
    INFO(host);
    CHECK_FALSE(policy.checkHost(r));
  }
  for (const std::string host : {"evil.example:8080", "10.0.0.5:8080", "127.0.0.1.evil.example",
                                 "localhost.evil", "[::1", "127.0.0.1:80:80", "", "a b"}) {
    Request r = request("GET");
    r.headers.host = host;
    INFO(host);
    const auto refused = policy.checkHost(r);
    CHECK(slugOf(refused) == "unknown-host");
    CHECK(refused->status == 421);
  }
  Request no_host = request("GET");
  no_host.headers.host.reset();
  CHECK_FALSE(policy.checkHost(no_host));

  AccessOptions wildcard = tokens();
  wildcard.listen_host = "0.0.0.0";
  const AccessPolicy any(wildcard);
  Request ip = request("GET");
  ip.headers.host = "192.168.1.20:8080";
  CHECK_FALSE(any.checkHost(ip));
  ip.headers.host = "rebind.evil.example:8080";
  CHECK(any.checkHost(ip));
}

TEST_CASE("cross-site changes are refused by Origin and by Sec-Fetch-Site",
          "[unit][api][security]") {
  const AccessPolicy policy(tokens());
  SECTION("an Origin of another site") {
    Request r = request("POST", kOperator);
    r.headers.origin = "http://evil.example";
    CHECK(slugOf(policy.admit(r, RouteAccess::kDefault, true)) == "cross-site-request");
  }
  SECTION("another port of the same host is another origin") {
    Request r = request("POST", kOperator);
    r.headers.origin = "http://127.0.0.1:9999";
    CHECK(slugOf(policy.admit(r, RouteAccess::kDefault, true)) == "cross-site-request");
  }
  SECTION("the null origin of a sandboxed frame") {
    Request r = request("POST", kOperator);
    r.headers.origin = "null";
    CHECK(slugOf(policy.admit(r, RouteAccess::kDefault, true)) == "cross-site-request");
  }
  SECTION("same-site is not same-origin") {
    Request r = request("POST", kOperator);
    r.headers.sec_fetch_site = "same-site";
    CHECK(slugOf(policy.admit(r, RouteAccess::kDefault, true)) == "cross-site-request");
    r.headers.sec_fetch_site = "cross-site";
    CHECK(slugOf(policy.admit(r, RouteAccess::kDefault, true)) == "cross-site-request");
  }
  SECTION("kfaild's own page") {
    Request r = request("POST", kOperator);
    r.headers.origin = "http://127.0.0.1:8080";
    r.headers.sec_fetch_site = "same-origin";
    CHECK_FALSE(policy.admit(r, RouteAccess::kDefault, true));
  }
  SECTION("an allowed host's Origin counts only on the allowed port") {
    AccessOptions options = tokens();
    options.allowed_hosts = {"kfaild.example.org", "ops.example.org:8443"};
    const AccessPolicy allowing(options);
    for (const std::string origin : {"https://kfaild.example.org", "http://kfaild.example.org:80",
                                     "https://ops.example.org:8443"}) {
      Request r = request("POST", kOperator);
      r.headers.origin = origin;
      INFO(origin);
      CHECK_FALSE(allowing.admit(r, RouteAccess::kDefault, true));
    }
    for (const std::string origin :
         {"https://kfaild.example.org:9999", "http://kfaild.example.org:8080",
          "https://ops.example.org", "https://ops.example.org:1"}) {
      Request r = request("POST", kOperator);
      r.headers.origin = origin;
      INFO(origin);
      CHECK(slugOf(allowing.admit(r, RouteAccess::kDefault, true)) == "cross-site-request");
    }
  }
  SECTION("reads are not checked: the browser keeps their answers from other sites") {
    Request r = request("GET");
    r.headers.origin = "http://evil.example";
    r.headers.sec_fetch_site = "cross-site";
    CHECK_FALSE(policy.admit(r, RouteAccess::kDefault, false));
  }
}

TEST_CASE("roles: the viewer reads, the operator changes, kOperator routes need the operator",
          "[unit][api][security]") {
  const AccessPolicy policy(tokens());
  Request viewer_post = request("POST", kViewer);
  const auto refused = policy.admit(viewer_post, RouteAccess::kDefault, true);
  CHECK(slugOf(refused) == "forbidden");
  CHECK(refused->status == 403);
  CHECK(viewer_post.role == Role::kViewer);

  Request operator_post = request("POST", kOperator);
  CHECK_FALSE(policy.admit(operator_post, RouteAccess::kDefault, true));
  CHECK(operator_post.role == Role::kOperator);

  Request viewer_audit = request("GET", kViewer);
  CHECK(slugOf(policy.admit(viewer_audit, RouteAccess::kOperator, false)) == "forbidden");
  Request anonymous_audit = request("GET");
  CHECK(slugOf(policy.admit(anonymous_audit, RouteAccess::kOperator, false)) == "unauthorized");
  Request operator_audit = request("GET", kOperator);
  CHECK_FALSE(policy.admit(operator_audit, RouteAccess::kOperator, false));

  Request anonymous_read = request("GET");
  CHECK_FALSE(policy.admit(anonymous_read, RouteAccess::kDefault, false));
  CHECK(anonymous_read.role == Role::kAnonymous);
  Request wrong_read = request("GET", "not-a-configured-token");
  CHECK(slugOf(policy.admit(wrong_read, RouteAccess::kDefault, false)) == "unauthorized");
  Request wrong_public = request("GET", "not-a-configured-token");
  CHECK_FALSE(policy.admit(wrong_public, RouteAccess::kPublic, false));

  Request two_fields = request("POST", kOperator);
  two_fields.headers.authorization.push_back(std::string("Bearer ") + kOperator);
  CHECK(slugOf(policy.admit(two_fields, RouteAccess::kDefault, true)) == "unauthorized");
}

TEST_CASE("a change must be JSON, and without a body it needs a token or X-Kfaild-Client",
          "[unit][api][security]") {
  const AccessPolicy policy(tokens());
  Request form = request("POST", kOperator);
  form.headers.content_type = "text/plain";
  const auto refused = policy.admit(form, RouteAccess::kDefault, true);
  CHECK(slugOf(refused) == "unsupported-media-type");
  CHECK(refused->status == 415);
  Request untyped = request("POST", kOperator);
  untyped.headers.content_type.reset();
  CHECK(slugOf(policy.admit(untyped, RouteAccess::kDefault, true)) == "unsupported-media-type");
  Request charset = request("POST", kOperator);
  charset.headers.content_type = "Application/JSON; charset=utf-8";
  CHECK_FALSE(policy.admit(charset, RouteAccess::kDefault, true));

  Request abort = request("POST", kOperator);
  abort.body.clear();
  abort.headers.content_type.reset();
  CHECK_FALSE(policy.admit(abort, RouteAccess::kDefault, true));

  // auth none: no token, so a body-less change needs the custom header.
  const AccessPolicy open;
  Request bare = request("POST");
  bare.body.clear();
  bare.headers.content_type.reset();
  CHECK(slugOf(open.admit(bare, RouteAccess::kDefault, true)) == "cross-site-request");
  bare.headers.client_header = true;
  CHECK_FALSE(open.admit(bare, RouteAccess::kDefault, true));
  CHECK(bare.role == Role::kOperator);
  Request form_open = request("POST");
  form_open.headers.content_type = "text/plain";
  CHECK(slugOf(open.admit(form_open, RouteAccess::kDefault, true)) == "unsupported-media-type");
}

TEST_CASE("hostName takes the host of a Host header or an Origin's authority",
          "[unit][api][security]") {
  CHECK(AccessPolicy::hostName("Example.ORG:8080") == "example.org");
  CHECK(AccessPolicy::hostName("[::1]:80") == "::1");
  CHECK(AccessPolicy::hostName("[0:0::1]") == "::1");
  CHECK(AccessPolicy::hostName("example.org.") == "example.org");
  CHECK(AccessPolicy::hostName("example.org:http").empty());
  CHECK(AccessPolicy::hostName("user@example.org").empty());
  CHECK(AccessPolicy::hostName("[::1]x").empty());
}

TEST_CASE(
    "the redactor hides command lines, hosts, users, paths and tool output, and keeps the rest",
    "[unit][api][security]") {
  const Redactor redactor({"kafka-1.internal", "kafka-1.internal:9092", "ab"});
  CHECK(redactor.redact("kill of broker 1 failed: ssh_failed: root@kafka-1.internal: Permission "
                        "denied (publickey).") ==
        "kill of broker 1 failed: ssh_failed: [redacted]: Permission denied (publickey).");
  // Spans marked where they were made go whole, whatever their format; backquotes and "stderr: "
  // mean nothing by themselves.
  CHECK(redactor.redact(common::sensitive("ssh -o BatchMode=yes h -- kill -9 4242") +
                        " did not finish within 5000 ms; stderr: " +
                        common::sensitive("oops, no such thing")) ==
        "[redacted] did not finish within 5000 ms; stderr: [redacted]");
  CHECK(redactor.redact("the `kill` step; stderr: none") == "the `kill` step; stderr: none");
  CHECK(Redactor::redactMarked("cut " + common::sensitive("secret") + " and " +
                               std::string(common::kSensitiveOpen) + "unclosed tail") ==
        "cut [redacted] and [redacted]");
  CHECK(redactor.redact("broker 2 at 10.0.0.5:9092 and [fe80::1]:9092 left") ==
        "broker 2 at [redacted] and [redacted] left");
  CHECK(redactor.redact("pid 17 from .lab/node1/kafka.pid is not a broker") ==
        "pid 17 from [redacted] is not a broker");
  CHECK(redactor.redact("metadata from kafka-1.internal:9092 is stale") ==
        "metadata from [redacted] is stale");
  const std::string plain =
      "partition kfaild-probe-3 stalled 8.8 s at 2026-12-01T14:42:16.123Z (ack, leader)";
  CHECK(redactor.redact(plain) == plain);
  CHECK(redactor.redact("about 1.5 s, abc and ab") ==
        "about 1.5 s, abc and ab");  // literals under 3 characters are ignored
  // A literal only as a whole word: a host named like a word leaves longer words alone.
  const Redactor words({"start", "kafka"});
  CHECK(words.redact("started drill 12") == "started drill 12");
  CHECK(words.redact("kafka-probe-1 on kafka: refused; restart") ==
        "kafka-probe-1 on [redacted]: refused; restart");

  nlohmann::json document = {
      {"reason", "ran " + common::sensitive("lab/lab start 1")},
      {"runs", {{{"error", "root@kafka-1.internal: exit status 3"}, {"stall_ms", 8800}}}},
      {"topic", "kfaild-probe"}};
  redactor.redactJson(document);
  CHECK(document["reason"] == "ran [redacted]");
  CHECK(document["runs"][0]["error"] == "[redacted]: exit status 3");
  CHECK(document["runs"][0]["stall_ms"] == 8800);
  CHECK(document["topic"] == "kfaild-probe");
}

}  // namespace
}  // namespace kfaild::api::access_test
