#pragma once

// How kfailctl prints a drill (the JSON of GET /api/v1/drills/{id}) for a person: one line for
// the drill, one per run, then one row per probe partition with its role, stalls and phases.
// Pure functions of the JSON; fields the drill has not reached yet print as "-".

#include <nlohmann/json.hpp>
#include <string>

namespace kfaild::ctl {

// The verdict first (pass / fail / inconclusive, then every check that did not pass and every
// regression), then the drill.
std::string formatDrill(const nlohmann::json& drill);
std::string formatVerdict(const nlohmann::json& drill);

// "1.234 s" for a duration in µs; "-" for null or a missing value.
std::string formatSeconds(const nlohmann::json& micros);

// True for done / failed / aborted.
bool isFinished(const std::string& state);

}  // namespace kfaild::ctl
