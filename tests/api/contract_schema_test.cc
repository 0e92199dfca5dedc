// openapi.yaml against what the server takes: the contract test (tests/contract/run-schemathesis)
// finds a disagreement only on a live kfaild; these read the schema itself.

#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "server/drill/drill_spec.h"
#include "tests/support/paths.h"

namespace kfaild::api {
namespace {

YAML::Node openapi() {
  return YAML::LoadFile(std::string(KFAILD_SOURCE_DIR) + "/openapi.yaml");
}

TEST_CASE("the schema's Fault lists exactly the fault kinds of the drill spec, in its order",
          "[unit][api]") {
  const auto schema = openapi()["components"]["schemas"]["Fault"]["enum"];
  REQUIRE(schema.IsSequence());
  std::vector<std::string> listed;
  for (const auto& kind : schema) listed.push_back(kind.as<std::string>());
  std::vector<std::string> parsed;
  for (const auto name : drill::faultNames()) parsed.emplace_back(name);
  CHECK(listed == parsed);
}

TEST_CASE(
    "every id in a path and every cursor states the largest id the server reads, int64's maximum",
    "[unit][api]") {
  const auto doc = openapi();
  std::vector<std::pair<std::string, YAML::Node>> integers;  // (where, schema)
  for (const auto& entry : doc["components"]["parameters"]) {
    const auto& parameter = entry.second;
    if (parameter["in"].as<std::string>() == "path" &&
        parameter["name"].as<std::string>() == "id") {
      integers.emplace_back(entry.first.as<std::string>(), parameter["schema"]);
    }
  }
  for (const auto& path : doc["paths"]) {
    for (const auto& operation : path.second) {
      if (!operation.second.IsMap() || !operation.second["parameters"]) continue;
      for (const auto& parameter : operation.second["parameters"]) {
        if (parameter["name"] && parameter["name"].as<std::string>() == "cursor") {
          integers.emplace_back(path.first.as<std::string>() + " cursor", parameter["schema"]);
        }
      }
    }
  }
  // DrillId, RecoveryId, MaintenanceWindowId, ScheduleId; the drills', audit's and notifications'
  // cursors.
  CHECK(integers.size() == 7);
  for (const auto& [where, schema] : integers) {
    INFO(where);
    CHECK(schema["type"].as<std::string>() == "integer");
    CHECK(schema["minimum"].as<std::int64_t>() == 1);
    REQUIRE(schema["maximum"]);
    CHECK(schema["maximum"].as<std::int64_t>() == std::numeric_limits<std::int64_t>::max());
    REQUIRE(schema["format"]);
    CHECK(schema["format"].as<std::string>() == "int64");
  }
}

}  // namespace
}  // namespace kfaild::api
