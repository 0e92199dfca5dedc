// The storage section: retention per kind (hours or forever), the retention interval, the size
// bound, the old sample_retention_hours key, and every mistake named by its key.

#include <catch2/catch.hpp>
#include <string>

#include "server/config/config.h"

namespace storage_config_test {

using namespace kfaild::config;

namespace {

constexpr std::int64_t kHourUs = 3'600'000'000;

std::string withStorage(const std::string& storage) {
  return "storage:\n" + storage +
         "clusters:\n"
         "  - name: lab\n"
         "    bootstrap: 127.0.0.1:19091\n"
         "    probe: {topics: [orders]}\n";
}

std::string errorOf(const std::string& yaml) {
  try {
    parseConfig(yaml, "test.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("storage defaults bound every kind of record except by size", "[unit][config]") {
  const auto c = parseConfig(withStorage("  path: /tmp/k.db\n"));
  CHECK(c.storage.retention.samples_us == 168 * kHourUs);
  CHECK(c.storage.retention.drill_samples_us == 90 * 24 * kHourUs);
  CHECK(c.storage.retention.gaps_us == 365 * 24 * kHourUs);
  CHECK(c.storage.retention.events_us == 90 * 24 * kHourUs);
  CHECK(c.storage.retention_interval_us == 600'000'000);
  CHECK_FALSE(c.storage.max_bytes);
}

TEST_CASE("storage retention is given per kind in hours or as forever, with a size bound",
          "[unit][config]") {
  const auto c =
      parseConfig(withStorage("  retention:\n"
                              "    samples_hours: 24\n"
                              "    drill_samples_hours: forever\n"
                              "    gaps_hours: 8760\n"
                              "    events_hours: forever\n"
                              "  retention_interval_s: 60\n"
                              "  max_bytes: 1073741824\n"));
  CHECK(c.storage.retention.samples_us == 24 * kHourUs);
  CHECK_FALSE(c.storage.retention.drill_samples_us);
  CHECK(c.storage.retention.gaps_us == 8760 * kHourUs);
  CHECK_FALSE(c.storage.retention.events_us);
  CHECK(c.storage.retention_interval_us == 60'000'000);
  CHECK(c.storage.max_bytes == 1'073'741'824);
}

TEST_CASE("the old storage.sample_retention_hours still sets the raw samples' retention",
          "[unit][config]") {
  CHECK(parseConfig(withStorage("  sample_retention_hours: 48\n")).storage.retention.samples_us ==
        48 * kHourUs);
  CHECK_FALSE(
      parseConfig(withStorage("  sample_retention_hours: forever\n")).storage.retention.samples_us);
  CHECK_THAT(
      errorOf(withStorage("  sample_retention_hours: 48\n  retention: {samples_hours: 24}\n")),
      Catch::Contains("storage.sample_retention_hours: is the old name of "
                      "storage.retention.samples_hours; give only one of them"));
  // With another kind in retention, the old key is no conflict.
  const auto both =
      parseConfig(withStorage("  sample_retention_hours: 48\n  retention: {gaps_hours: 24}\n"));
  CHECK(both.storage.retention.samples_us == 48 * kHourUs);
  CHECK(both.storage.retention.gaps_us == 24 * kHourUs);
}

TEST_CASE("a storage mistake names its key", "[unit][config]") {
  CHECK_THAT(
      errorOf(withStorage("  retention: {samples_hours: 0}\n")),
      Catch::Contains("storage.retention.samples_hours: must be a whole number of hours from 1 to "
                      "87600, or forever, got '0'"));
  CHECK_THAT(
      errorOf(withStorage("  retention: {drill_samples_hours: 7d}\n")),
      Catch::Contains("storage.retention.drill_samples_hours: must be a whole number of hours"));
  CHECK_THAT(errorOf(withStorage("  retention: {gaps_hours: never}\n")),
             Catch::Contains("storage.retention.gaps_hours: must be a whole number of hours"));
  CHECK_THAT(
      errorOf(withStorage("  retention: {events_hours: [1]}\n")),
      Catch::Contains("storage.retention.events_hours: must be a number of hours or forever"));
  CHECK_THAT(
      errorOf(withStorage("  retention: {sample_hours: 1}\n")),
      Catch::Contains(
          "storage.retention.sample_hours: unknown key (known: audit_hours, drill_samples_hours, "
          "events_hours, gaps_hours, samples_hours)"));
  CHECK_THAT(errorOf(withStorage("  retention: 24\n")),
             Catch::Contains("storage.retention: must be a mapping"));
  CHECK_THAT(errorOf(withStorage("  retention_interval_s: 5\n")),
             Catch::Contains("storage.retention_interval_s: must be between 10 and 86400, got 5"));
  CHECK_THAT(errorOf(withStorage("  max_bytes: 1000000\n")),
             Catch::Contains("storage.max_bytes: must be between 16777216 and"));
  CHECK_THAT(errorOf(withStorage("  max_bytes: 1GB\n")),
             Catch::Contains("storage.max_bytes: must be an integer, got '1GB'"));
  CHECK_THAT(errorOf(withStorage("  retention_intervall_s: 60\n")),
             Catch::Contains("storage.retention_intervall_s: unknown key"));
}

TEST_CASE("the audit log has its own retention and a byte budget of at most half the size bound",
          "[unit][config]") {
  const auto defaults = parseConfig(withStorage("  path: /tmp/k.db\n"));
  CHECK(defaults.storage.retention.audit_us == 365 * 24 * kHourUs);
  CHECK_FALSE(defaults.storage.audit_max_bytes);
  const auto c =
      parseConfig(withStorage("  retention:\n"
                              "    audit_hours: 720\n"
                              "  max_bytes: 1073741824\n"
                              "  audit_max_bytes: 104857600\n"));
  CHECK(c.storage.retention.audit_us == 720 * kHourUs);
  CHECK(c.storage.audit_max_bytes == 104'857'600);
  CHECK(errorOf(withStorage("  max_bytes: 16777216\n  audit_max_bytes: 16777216\n"))
            .find("storage.audit_max_bytes: must be at most half of storage.max_bytes") !=
        std::string::npos);
  CHECK(errorOf(withStorage("  audit_max_bytes: 100\n")).find("storage.audit_max_bytes") !=
        std::string::npos);
}

TEST_CASE("http.max_connections_per_peer defaults to 64 and is read from the http section",
          "[unit][config]") {
  CHECK(parseConfig(withStorage("  path: /tmp/k.db\n")).http.max_connections_per_peer == 64);
  const auto c = parseConfig("http:\n  auth: none\n  max_connections_per_peer: 8\n" +
                             withStorage("  path: /tmp/k.db\n"));
  CHECK(c.http.max_connections_per_peer == 8);
  CHECK(errorOf("http:\n  auth: none\n  max_connections_per_peer: 0\n" +
                withStorage("  path: /tmp/k.db\n"))
            .find("http.max_connections_per_peer") != std::string::npos);
}

}  // namespace storage_config_test
