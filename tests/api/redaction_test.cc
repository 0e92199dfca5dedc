// Redaction by construction: the fault layer's real errors, the database's real errors and
// /readyz's problem document, as the operator and as everyone else sees them.

#include "server/common/redaction.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "api/resources.h"
#include "api/router.h"
#include "server/common/clock.h"
#include "server/fault/command.h"
#include "server/fault/errc.h"
#include "server/fault/gray_runner.h"
#include "server/fault/local_injector.h"
#include "server/fault/ssh_injector.h"
#include "storage/sqlite.h"
#include "tests/api/api_test_support.h"
#include "tests/api/http_client.h"
#include "tests/support/temp_dir.h"

namespace kfaild::api::redaction_test {
namespace {

using common::Redactor;

constexpr const char* kOperator = "operator-token-0123456789";

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_CASE("a command that times out: its command line and its stderr are the operator's only",
          "[integration][api][security]") {
  const auto ran = fault::runCommand({"sh", "-c", "echo leaked-output >&2; sleep 5"},
                                     std::chrono::milliseconds(200));
  REQUIRE_FALSE(ran);
  CHECK(ran.error().code == fault::errc::timeout);
  const auto full = ran.error().describe();
  CHECK(has(full, "leaked-output"));
  CHECK(has(full, "sh -c"));
  const auto shown = Redactor().redact(full);
  CHECK_FALSE(has(shown, "leaked-output"));
  CHECK_FALSE(has(shown, "sh -c"));
  CHECK(has(shown, "did not finish within 200 ms"));
}

TEST_CASE("a local start command that fails: its argv and its output are the operator's only",
          "[integration][api][security]") {
  const kfaild::testing::TempDir dir;
  const common::SystemClock clock;
  fault::LocalInjector injector(
      {(dir / "kafka.pid").string(), {"sh", "-c", "echo start-secret-words >&2; exit 3"}, ""},
      fault::LogZone::utc, clock);
  const auto started = injector.start();
  REQUIRE_FALSE(started);
  const auto full = started.error().describe();
  CHECK(has(full, "start-secret-words"));
  const auto shown = Redactor().redact(full);
  CHECK_FALSE(has(shown, "start-secret-words"));
  CHECK_FALSE(has(shown, "echo"));
  CHECK(has(shown, "exited with status 3"));
}

TEST_CASE("an ssh that cannot connect: the destination and ssh's words are the operator's only",
          "[integration][api][security]") {
  config::SshTarget target;
  target.host = "127.0.0.1";
  target.user = "drilluser";
  target.port = 1;  // nothing listens
  target.connect_timeout_s = 2;
  target.options = {"StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null"};
  target.pid_command = "cat /var/run/kafka.pid";
  const common::SystemClock clock;
  fault::SshInjector injector(target, fault::LogZone::utc, clock);
  const auto inspected = injector.inspect();
  REQUIRE_FALSE(inspected);
  CHECK(inspected.error().code == fault::errc::ssh_failed);
  const auto full = inspected.error().describe();
  CHECK(has(full, "drilluser@127.0.0.1"));
  // The marked spans go whole, not only the tokens that look like hosts.
  const auto shown = Redactor::redactMarked(full);
  CHECK_FALSE(has(shown, "drilluser"));
  CHECK_FALSE(has(shown, "port 1"));
  CHECK(has(shown, "[redacted]: [redacted]"));
}

TEST_CASE("a 503 carries the database's own message to the operator only",
          "[integration][api][security]") {
  const kfaild::testing::TempDir dir;
  auto db = storage::sqlite::Database::open((dir / "any.db").string());
  REQUIRE(db.ok());
  const auto failed = (*db)->prepare("SELECT secret_column FROM secret_table");
  REQUIRE_FALSE(failed.ok());
  const Error sql_error = failed.error();
  REQUIRE(has(sql_error.describe(), "secret_table"));

  AccessOptions access;
  access.operator_token = kOperator;
  Router router;
  router.setAccess(AccessPolicy(access));
  router.add("GET", "/api/v1/broken",
             [&](const Request& request) { return storeFailure(request, sql_error); });
  const auto get = [&](const std::string& token) {
    Request request;
    request.method = "GET";
    request.path = "/api/v1/broken";
    request.segments = {"api", "v1", "broken"};
    request.headers.host = "127.0.0.1";
    if (!token.empty()) request.headers.authorization.push_back("Bearer " + token);
    return router.dispatch(request);
  };
  const auto anonymous = get("");
  CHECK(anonymous.status == 503);
  CHECK(anonymous.content_type == "application/problem+json");
  CHECK_FALSE(has(anonymous.body, "secret_table"));
  CHECK(nlohmann::json::parse(anonymous.body)["detail"] ==
        "reading the database failed: [redacted]");
  const auto operator_view = get(kOperator);
  CHECK(has(operator_view.body, "secret_table"));
}

TEST_CASE("/readyz's problem document is redacted for readers without the operator token",
          "[integration][api][security]") {
  AccessOptions access;
  access.operator_token = kOperator;
  testing::ApiHarness api(testing::ApiHarness::defaultOptions(), access);
  api.live().update([](std::vector<ClusterLive>& clusters) {
    clusters[0].probe.phase = probe::ProbePhase::kSettingUp;
    clusters[0].probe.problem = "cannot reach 10.20.30.40:9092 as svc@kafka-host";
  });
  const auto anonymous = api.get("/readyz");
  CHECK(anonymous.status == 503);
  CHECK_FALSE(has(anonymous.body, "10.20.30.40"));
  CHECK_FALSE(has(anonymous.body, "svc@kafka-host"));
  CHECK(has(anonymous.body, "probe is"));
  const auto operator_view = testing::httpRequest(
      api.port(), {"GET", "/readyz", "", {{"Authorization", std::string("Bearer ") + kOperator}}});
  CHECK(operator_view.status == 503);
  CHECK(has(operator_view.body, "10.20.30.40"));

  // A real write failure: SQLite's words go to the operator only.
  api.store().setMaxPageCount(1);
  for (std::int64_t seq = 0; seq < 20'000; ++seq) {
    storage::ProbeSample sample;
    sample.cluster = api.labId();
    sample.topic = "orders";
    sample.partition = 2;
    sample.seq = seq;
    sample.send_us = testing::kNow - testing::kHour + seq;
    api.store().addSample(sample);
  }
  api.store().flush();
  const auto failed_anonymous = nlohmann::json::parse(api.get("/readyz").body);
  bool store_reason = false;
  for (const auto& reason : failed_anonymous["reasons"]) {
    if (reason.get<std::string>().rfind("store: ", 0) != 0) continue;
    store_reason = true;
    CHECK(reason == "store: the last write failed: [redacted]");
  }
  CHECK(store_reason);
  const auto failed_operator = testing::httpRequest(
      api.port(), {"GET", "/readyz", "", {{"Authorization", std::string("Bearer ") + kOperator}}});
  CHECK(has(failed_operator.body, "full"));  // SQLITE_FULL: "database or disk is full"
  api.store().setMaxPageCount(std::nullopt);
}

TEST_CASE("a failing nft's words, which name peers and hosts, are the operator's only",
          "[unit][api][security]") {
  const common::SystemClock clock;
  auto failing = [](const std::vector<std::string>&,
                    std::chrono::milliseconds) -> Result<fault::CommandOutput> {
    return fault::CommandOutput{
        1, "sudo: unable to resolve host kafka-2.internal\n",
        "Error: Could not process rule\nadd element inet kfaild_d7 peers { 10.77.25.3 }\n"};
  };
  fault::NodeShell shell;
  shell.nft = [](const std::vector<std::string>& words) -> Result<std::vector<std::string>> {
    return fault::localHelperArgv({"kfaild-gray"}, "ns1", 0, words);
  };
  fault::GrayRunner runner(shell, clock, failing);
  fault::IsolateSpec spec;
  spec.drill = "7";
  spec.from = fault::IsolateFrom::brokers;
  spec.duration = std::chrono::seconds(30);
  spec.peers.brokers = {"10.77.25.3"};
  const auto isolated = runner.isolate(spec);
  REQUIRE_FALSE(isolated);
  const auto full = isolated.error().describe();
  CHECK(has(full, "kafka-2.internal"));
  CHECK(has(full, "Could not process rule"));
  // Marked where it was made: gone for others without guessing its format.
  const auto shown = Redactor::redactMarked(full);
  CHECK_FALSE(has(shown, "kafka-2.internal"));
  CHECK_FALSE(has(shown, "10.77.25.3"));
  CHECK_FALSE(has(shown, "Could not process rule"));
  CHECK(has(shown, "exited with 1: [redacted]"));
}

TEST_CASE("an IPv6 address without brackets is redacted, IPv4-mapped ones too, times are not",
          "[unit][api][security]") {
  const Redactor redactor;
  CHECK(redactor.redact("operator (api, 2001:db8::5)") == "operator (api, [redacted])");
  CHECK(redactor.redact("operator (api, ::ffff:10.1.2.3)") == "operator (api, [redacted])");
  CHECK(redactor.redact("peer fe80::1%eth0 refused") == "peer [redacted] refused");
  CHECK(redactor.redact("connected to 2001:db8:0:0:0:0:0:7.") == "connected to [redacted].");
  CHECK(redactor.redact("from 2001:db8:: on") == "from [redacted] on");
  CHECK(redactor.redact("::1: refused") == "[redacted]: refused");
  // Not addresses: a clock time, a C++ name, a Kafka error name.
  CHECK(redactor.redact("at 12:30:45 fault::kill NOT_LEADER_OR_FOLLOWER") ==
        "at 12:30:45 fault::kill NOT_LEADER_OR_FOLLOWER");
}

}  // namespace
}  // namespace kfaild::api::redaction_test
