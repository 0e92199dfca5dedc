#include <catch2/catch.hpp>

#include "server/config/config.h"

namespace notifications_config_test {

using namespace kfaild::config;

namespace {

const std::string kBase = R"(
clusters:
  - name: lab
    bootstrap: 127.0.0.1:19091
    probe: {topics: [orders]}
)";

std::string errorOf(const std::string& yaml) {
  try {
    parseConfig(kBase + yaml, "test.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("notifications parse receivers, retry and incidents with their defaults",
          "[unit][config][notify]") {
  const auto c = parseConfig(kBase + R"(
notifications:
  external_url: https://kfaild.example.com/
  receivers:
    - name: hook
      type: webhook
      url: http://127.0.0.1:9000/kfaild
      headers: {Authorization: "Bearer abc"}
    - name: oncall
      type: alertmanager
      url: http://127.0.0.1:9093
      events: [drill_finished, drill_failed]
      verdicts: [fail]
      timeout_s: 3
      alert_resolve_after_s: 3600
  retry: {initial_s: 2, max_s: 60, max_attempts: 5, max_age_h: 2}
  incidents: {min_stall_s: 8, scan_interval_s: 10, lookback_h: 3}
)");
  const auto& n = c.notifications;
  CHECK(n.external_url == "https://kfaild.example.com");
  REQUIRE(n.receivers.size() == 2);
  CHECK(n.receivers[0].events.size() == 4);
  CHECK(n.receivers[0].verdicts.size() == 4);
  CHECK(n.receivers[0].headers.at("Authorization") == "Bearer abc");
  CHECK(n.receivers[0].timeout_ms == 10'000);
  CHECK(n.receivers[1].type == "alertmanager");
  CHECK(n.receivers[1].events == std::vector<std::string>{"drill_finished", "drill_failed"});
  CHECK(n.receivers[1].verdicts == std::vector<std::string>{"fail"});
  CHECK(n.receivers[1].timeout_ms == 3'000);
  CHECK(n.receivers[1].alert_resolve_after_us == 3'600'000'000);
  CHECK(n.retry.initial_us == 2'000'000);
  CHECK(n.retry.max_us == 60'000'000);
  CHECK(n.retry.max_attempts == 5);
  CHECK(n.retry.max_age_us == 2 * 3'600'000'000LL);
  CHECK(n.incidents.min_stall_us == 8'000'000);
  CHECK(n.incidents.scan_interval_us == 10'000'000);
  CHECK(n.incidents.lookback_us == 3 * 3'600'000'000LL);
  CHECK(parseConfig(kBase).notifications.receivers.empty());
}

TEST_CASE("notification mistakes name their key", "[unit][config][notify]") {
  CHECK(errorOf("notifications: {recievers: []}").find("notifications.recievers: unknown key") !=
        std::string::npos);
  CHECK(
      errorOf(
          "notifications:\n  receivers:\n    - {name: a, type: webhook, url: http://x, secret: 1}")
          .find("notifications.receivers[0].secret: unknown key") != std::string::npos);
  CHECK(errorOf("notifications:\n  receivers:\n    - {name: a, type: email, url: http://x}")
            .find("notifications.receivers[0].type: must be webhook, slack or alertmanager") !=
        std::string::npos);
  CHECK(errorOf("notifications:\n  receivers:\n    - {name: a, type: webhook, url: ftp://x}")
            .find("notifications.receivers[0].url: must start with") != std::string::npos);
  CHECK(errorOf("notifications:\n  receivers:\n    - {name: a, type: webhook, url: http://x, "
                "events: [drill_done]}")
            .find("notifications.receivers[0].events: 'drill_done' is not one of") !=
        std::string::npos);
  CHECK(errorOf("notifications:\n  receivers:\n    - {name: a, type: webhook, url: http://x, "
                "verdicts: [ok]}")
            .find("notifications.receivers[0].verdicts: 'ok'") != std::string::npos);
  CHECK(errorOf("notifications:\n  receivers:\n    - {name: a, type: webhook, url: http://x}\n    "
                "- {name: a, type: slack, url: http://y}")
            .find("notifications.receivers[1].name: duplicate receiver name a") !=
        std::string::npos);
  CHECK(errorOf("notifications:\n  receivers:\n    - {name: a, type: webhook, url: http://x, tls: "
                "{ca_file: /etc/hosts}}")
            .find("notifications.receivers[0].tls: needs an https:// url") != std::string::npos);
  CHECK(errorOf("notifications:\n  receivers:\n    - {name: a, type: webhook, url: https://x, tls: "
                "{ca_file: /nonexistent/ca.pem}}")
            .find("notifications.receivers[0].tls.ca_file") != std::string::npos);
  CHECK(errorOf("notifications:\n  receivers:\n    - {name: a, type: webhook, url: http://x, "
                "headers: {Content-Type: text/plain}}")
            .find("notifications.receivers[0].headers.Content-Type: set by kfaild") !=
        std::string::npos);
  CHECK(errorOf("notifications:\n  receivers:\n    - {name: a, type: webhook, url: http://x, "
                "alert_resolve_after_s: 600}")
            .find("only for type alertmanager") != std::string::npos);
  CHECK(errorOf("notifications: {retry: {initial_s: 10, max_s: 5}}")
            .find("notifications.retry.max_s: must not be below") != std::string::npos);
  CHECK(errorOf("notifications: {incidents: {min_stall: 5}}")
            .find("notifications.incidents.min_stall: unknown key") != std::string::npos);
}

}  // namespace notifications_config_test
