#pragma once

// The JSON forms and problem responses shared by the endpoint families: how a gap, an event and
// an optional time look on the wire, and the responses for a bad parameter or a failed read.
// Pure functions (storeFailure also logs): safe from any thread.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>

#include "api/http_message.h"
#include "api/live_state.h"
#include "server/common/result.h"
#include "storage/records.h"
#include "storage/store.h"

namespace kfaild::api {

// Every list answer (samples, gaps, events, incidents, drills) stops at this many bytes, and
// says where the rest begins (`next`, `next_cursor`); an aggregate that would not fit
// (statistics) is refused with a 400 asking for a narrower query. Stated in openapi.yaml.
inline constexpr std::size_t kMaxResponseBytes = 4 * 1024 * 1024;

// A JSON array serialised one item at a time, never over `max_bytes` (with the caller's
// envelope allowance taken off): add() adds nothing and returns false once an item does not fit.
class BoundedArray {
 public:
  explicit BoundedArray(std::size_t max_bytes = kMaxResponseBytes - 4096) : max_bytes_(max_bytes) {}
  bool add(const nlohmann::json& item);
  std::size_t count() const { return count_; }
  // "[item,item]"
  std::string text() const { return "[" + items_ + "]"; }

 private:
  std::size_t max_bytes_;
  std::size_t count_ = 0;
  std::string items_;
};

// 400 invalid-parameter or unknown-parameter, from a QueryReader/parseInteger error.
Response badRequest(const Request& request, const Error& error);
// 503 store-unavailable; the error is logged.
Response storeFailure(const Request& request, const Error& error);

// The cluster called `name`: a configured one first, else one with history in the store; else
// the `unknown` problem (404 unknown-cluster for a path, 400 invalid-body for a body field)
// naming the configured clusters, or 503 when the store cannot be read.
std::variant<storage::ClusterId, Response> findCluster(const Request& request,
                                                       const LiveClusters& live,
                                                       const storage::Store& store,
                                                       const std::string& name,
                                                       ProblemType unknown);

// The configured cluster called `name` as kfaild sees it now; else 404 unknown-cluster naming the
// configured ones.
std::variant<ClusterLive, Response> findLiveCluster(const Request& request,
                                                    const LiveClusters& live,
                                                    const std::string& name);

nlohmann::json timeOrNull(std::optional<std::int64_t> wall_us);
nlohmann::json intOrNull(std::optional<std::int64_t> value);
// `maintenance_id`: the planned-maintenance window the gap overlaps (planned), if any.
nlohmann::json gapJson(const storage::Gap& gap,
                       std::optional<std::int64_t> maintenance_id = std::nullopt);
nlohmann::json eventJson(const storage::Event& event);

}  // namespace kfaild::api
