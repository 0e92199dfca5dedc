#pragma once

// The JSON forms and problem responses shared by the endpoint families: how a gap, an event and
// an optional time look on the wire, and the responses for a bad parameter or a failed read.
// Pure functions (storeFailure also logs): safe from any thread.

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include "api/http_message.h"
#include "api/live_state.h"
#include "server/common/result.h"
#include "storage/records.h"
#include "storage/store.h"

namespace kfaild::api {

// 400 invalid-parameter or unknown-parameter, from a QueryReader/parseInteger error.
Response badRequest(const Request& request, const Error& error);
// 503 store-unavailable; the error is logged.
Response storeFailure(const Request& request, const Error& error);

// The cluster called `name`: a configured one first, else one with history in the store; else
// the `unknown` problem (404 unknown-cluster for a path, 400 invalid-body for a body field)
// naming the configured clusters, or 503 when the store cannot be read.
std::variant<storage::ClusterId, Response> findCluster(const Request& request, const LiveClusters& live,
                                                       const storage::Store& store, const std::string& name,
                                                       ProblemType unknown);

nlohmann::json timeOrNull(std::optional<std::int64_t> wall_us);
nlohmann::json intOrNull(std::optional<std::int64_t> value);
nlohmann::json gapJson(const storage::Gap& gap);
nlohmann::json eventJson(const storage::Event& event);

}  // namespace kfaild::api
