#include "api/resources.h"

#include <spdlog/spdlog.h>

#include "api/errc.h"
#include "server/common/sensitive.h"
#include "server/common/time_format.h"

namespace kfaild::api {

using nlohmann::json;

Response badRequest(const Request& request, const Error& error) {
  const auto type = error.code == errc::unknown_parameter ? ProblemType::kUnknownParameter
                                                          : ProblemType::kInvalidParameter;
  return problem(type, error.message, request.path);
}

Response storeFailure(const Request& request, const Error& error) {
  spdlog::warn("http: {} failed to read the store: {}", printable(request.path), error.describe());
  // SQLite's message may quote the statement: the operator's only.
  return problem(ProblemType::kStoreUnavailable,
                 "reading the database failed: " + common::sensitive(error.describe()),
                 request.path);
}

std::variant<storage::ClusterId, Response> findCluster(const Request& request,
                                                       const LiveClusters& live,
                                                       const storage::Store& store,
                                                       const std::string& name,
                                                       ProblemType unknown) {
  std::string known;
  for (const auto& cluster : live.clusters()) {
    if (cluster.name == name) return cluster.id;
    known += (known.empty() ? "" : ", ") + cluster.name;
  }
  auto stored = store.clusters();
  if (!stored) return storeFailure(request, stored.error());
  for (const auto& cluster : *stored) {
    if (cluster.name == name) return cluster.id;
  }
  const std::string detail = "no cluster named \"" + printable(name, 100) +
                             "\" is configured or has history in the database; configured: " +
                             (known.empty() ? std::string("none") : known);
  return problem(unknown, unknown == ProblemType::kInvalidBody ? "cluster: " + detail : detail,
                 request.path);
}

std::variant<ClusterLive, Response> findLiveCluster(const Request& request,
                                                    const LiveClusters& live,
                                                    const std::string& name) {
  std::string known;
  for (auto& cluster : live.clusters()) {
    if (cluster.name == name) return std::move(cluster);
    known += (known.empty() ? "" : ", ") + cluster.name;
  }
  return problem(ProblemType::kUnknownCluster,
                 "no configured cluster is named \"" + printable(name, 100) +
                     "\"; configured: " + (known.empty() ? std::string("none") : known),
                 request.path);
}

json timeOrNull(std::optional<std::int64_t> wall_us) {
  return wall_us ? json(common::formatRfc3339(*wall_us)) : json(nullptr);
}

json intOrNull(std::optional<std::int64_t> value) {
  return value ? json(*value) : json(nullptr);
}

json gapJson(const storage::Gap& gap, std::optional<std::int64_t> maintenance_id) {
  return {
      {"id", gap.id},
      {"topic", gap.topic},
      {"partition", gap.partition},
      {"kind", storage::toString(gap.kind)},
      {"start", common::formatRfc3339(gap.start_us)},
      {"start_us", gap.start_us},
      {"end", common::formatRfc3339(gap.end_us)},
      {"end_us", gap.end_us},
      {"duration_us", gap.duration_us},
      {"seq_before", gap.seq_before},
      {"seq_after", gap.seq_after},
      {"planned", maintenance_id.has_value()},
      {"maintenance_id", intOrNull(maintenance_id)},
  };
}

json eventJson(const storage::Event& event) {
  // `detail` is stored as JSON object text; anything else (older rows, a bug) is passed on as
  // text rather than failing the whole list.
  json detail = json::parse(event.detail, nullptr, false);
  if (detail.is_discarded() || !detail.is_object()) detail = {{"text", event.detail}};
  return {
      {"id", event.id},
      {"t", common::formatRfc3339(event.t_us)},
      {"t_us", event.t_us},
      {"source", event.source},
      {"kind", event.kind},
      {"broker", event.broker ? json(*event.broker) : json(nullptr)},
      {"topic", event.topic ? json(*event.topic) : json(nullptr)},
      {"partition", event.partition ? json(*event.partition) : json(nullptr)},
      {"detail", std::move(detail)},
  };
}

bool BoundedArray::add(const nlohmann::json& item) {
  std::string text = jsonBody(item);
  if (items_.size() + text.size() + 3 > max_bytes_) return false;
  if (count_ > 0) items_ += ',';
  items_ += text;
  ++count_;
  return true;
}

}  // namespace kfaild::api
