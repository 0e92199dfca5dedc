#include "server/drill/cluster_settings.h"

#include <algorithm>
#include <charconv>
#include <map>

namespace kfaild::drill {
namespace {

std::optional<std::int64_t> wholeMillis(const std::optional<std::string>& value) {
  if (!value || value->empty()) return std::nullopt;
  std::int64_t ms = 0;
  const auto* end = value->data() + value->size();
  const auto [ptr, ec] = std::from_chars(value->data(), end, ms);
  if (ec != std::errc() || ptr != end || ms <= 0) return std::nullopt;
  return ms;
}

void fromNode(ClusterSetting& setting,
              const Result<std::map<std::string, kafka::NodeConfigValue>>& answer,
              const std::string& node) {
  if (!answer) {
    setting.source =
        "Kafka's default: " + node + " could not be asked (" + answer.error().message + ")";
    return;
  }
  const auto found = answer->find(setting.name);
  if (found == answer->end()) {
    setting.source = "Kafka's default: " + node + " does not list it";
    return;
  }
  const auto ms = wholeMillis(found->second.value);
  if (!ms) {
    setting.source = "Kafka's default: " + node + " gives \"" +
                     found->second.value.value_or("null") + "\", not a number of milliseconds";
    return;
  }
  setting.value_ms = *ms;
  setting.source = node + ": " + kafka::configSourceName(found->second.source);
  setting.read = true;
}

}  // namespace

ClusterSettings readClusterSettings(ClusterAdmin& admin, const std::vector<std::int32_t>& brokers,
                                    std::int32_t heartbeat_from) {
  ClusterSettings out;
  fromNode(out.session_timeout, admin.controllerConfig({out.session_timeout.name}),
           "the active controller");

  std::map<std::int32_t, std::int64_t> lag_by_broker;
  std::string unread;
  for (const auto broker : brokers) {
    const auto node = "broker " + std::to_string(broker);
    auto answer =
        admin.brokerConfig(broker, {out.replica_lag_time_max.name, out.heartbeat_interval.name});
    if (broker == heartbeat_from) fromNode(out.heartbeat_interval, answer, node);
    ClusterSetting lag = ClusterSettings{}.replica_lag_time_max;
    fromNode(lag, answer, node);
    if (lag.read) {
      lag_by_broker[broker] = lag.value_ms;
      if (!out.replica_lag_time_max.read || lag.value_ms > out.replica_lag_time_max.value_ms) {
        out.replica_lag_time_max = lag;
      }
    } else if (unread.empty()) {
      unread = lag.source;
    }
  }
  if (!out.replica_lag_time_max.read) {
    if (!unread.empty()) out.replica_lag_time_max.source = unread;
    return out;
  }
  // Leaders that disagree: the largest value bounds a follower's stall, and the source lists all.
  const bool differ = std::any_of(
      lag_by_broker.begin(), lag_by_broker.end(),
      [&](const auto& entry) { return entry.second != out.replica_lag_time_max.value_ms; });
  if (differ || lag_by_broker.size() < brokers.size()) {
    std::string all;
    for (const auto& [broker, ms] : lag_by_broker) {
      all += (all.empty() ? "" : ", ") + std::string("broker ") + std::to_string(broker) + " " +
             std::to_string(ms);
    }
    out.replica_lag_time_max.source =
        "the largest of " + all +
        (lag_by_broker.size() < brokers.size() ? " (not every broker answered)" : "") + "; " +
        out.replica_lag_time_max.source;
  }
  return out;
}

analysis::MechanismSettings mechanismSettings(const ClusterSettings& settings) {
  analysis::MechanismSettings out;
  out.session_timeout_us = settings.session_timeout.value_ms * 1000;
  out.replica_lag_time_max_us = settings.replica_lag_time_max.value_ms * 1000;
  return out;
}

void applyTo(const ClusterSettings& settings, analysis::FaultMechanism& mechanism) {
  mechanism.session_timeout_s = static_cast<double>(settings.session_timeout.value_ms) / 1000.0;
  mechanism.heartbeat_interval_s =
      static_cast<double>(settings.heartbeat_interval.value_ms) / 1000.0;
  const auto client = mechanism.settings;
  mechanism.settings = mechanismSettings(settings);
  mechanism.settings.request_timeout_us = client.request_timeout_us;
  mechanism.settings.socket_timeout_us = client.socket_timeout_us;
  mechanism.settings.sends_retried = client.sends_retried;
}

nlohmann::json toJson(const ClusterSettings& settings) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto* s :
       {&settings.session_timeout, &settings.heartbeat_interval, &settings.replica_lag_time_max}) {
    out[s->name] = {{"value_ms", s->value_ms}, {"source", s->source}, {"read", s->read}};
  }
  return out;
}

std::optional<ClusterSettings> clusterSettingsFromJson(const nlohmann::json& json) {
  if (!json.is_object()) return std::nullopt;
  ClusterSettings out;
  for (auto* s : {&out.session_timeout, &out.heartbeat_interval, &out.replica_lag_time_max}) {
    const auto found = json.find(s->name);
    if (found == json.end() || !found->is_object()) continue;
    const auto value = found->value("value_ms", std::int64_t{0});
    if (value <= 0) continue;
    s->value_ms = value;
    s->source = found->value("source", s->source);
    s->read = found->value("read", false);
  }
  return out;
}

}  // namespace kfaild::drill
