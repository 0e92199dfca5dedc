#include "server/observe/client_log.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "server/common/json_text.h"
#include "server/common/time_format.h"

namespace kfaild::observe {

std::optional<ClientLeaderUpdate> parseLeaderUpdate(std::string_view facility,
                                                    std::string_view message) {
  // std::regex is slow, but only BROKER/LEADER lines that mention "leader" get here, a few per
  // metadata refresh.
  if (facility != "BROKER" && facility != "LEADER") return std::nullopt;
  if (message.find("leader") == std::string_view::npos) return std::nullopt;
  static const std::regex current(
      R"(^(?:Topic )?(\S+) \[(\d+)\]: leader (-?\d+) epoch (-?\d+) -> leader (-?\d+) epoch (-?\d+)$)");
  static const std::regex legacy(
      R"(^(\S+) \[(\d+)\]: applying leader-id update (-?\d+) -> (-?\d+) \(epoch (-?\d+)\))");
  // With log.thread.name=true (librdkafka's default) every line starts with "[thrd:NAME]: ".
  if (message.substr(0, 6) == "[thrd:") {
    const auto end = message.find("]: ");
    if (end != std::string_view::npos) message.remove_prefix(end + 3);
  }
  const std::string text(message);
  std::smatch m;
  ClientLeaderUpdate u;
  if (std::regex_search(text, m, current)) {
    u.topic = m[1];
    u.partition = std::stoi(m[2]);
    u.from_leader = std::stoi(m[3]);
    u.from_epoch = std::stoi(m[4]);
    u.to_leader = std::stoi(m[5]);
    u.to_epoch = std::stoi(m[6]);
  } else if (std::regex_search(text, m, legacy)) {
    u.topic = m[1];
    u.partition = std::stoi(m[2]);
    u.from_leader = std::stoi(m[3]);
    u.to_leader = std::stoi(m[4]);
    u.to_epoch = std::stoi(m[5]);
  } else {
    return std::nullopt;
  }
  if (u.from_leader == u.to_leader) return std::nullopt;
  return u;
}

ClientLeaderUpdate ClientLeaderMemory::apply(std::string_view client, ClientLeaderUpdate update,
                                             bool* restored) {
  if (restored != nullptr) *restored = false;
  std::lock_guard lock(mutex_);
  auto& known = last_[{std::string(client), update.topic, update.partition}];
  if (update.from_leader == -1 && known.leader != -1 && known.leader != update.to_leader) {
    update.from_leader = known.leader;
    update.from_epoch = known.epoch;
    if (restored != nullptr) *restored = true;
  }
  if (update.to_leader != -1) known = {update.to_leader, update.to_epoch};
  return update;
}

std::optional<ClientRequestTimeout> parseRequestTimeout(std::string_view facility,
                                                        std::string_view message) {
  if (facility != "REQTMOUT") return std::nullopt;
  if (message.find("Timed out ") == std::string_view::npos) return std::nullopt;
  static const std::regex line(
      R"((?:^|\]: )\S+/(\d+): Timed out (\w+)Request\b[^(]*(?:\(after (\d+)ms)?)");
  const std::string text(message);
  std::smatch m;
  if (!std::regex_search(text, m, line)) return std::nullopt;
  ClientRequestTimeout t;
  t.broker = std::stoi(m[1]);
  t.request = m[2];
  if (m[3].matched) t.after_ms = std::stoll(m[3]);
  return t;
}

std::string clientRole(std::string_view client_name) {
  const auto hash = client_name.find('#');
  if (hash == std::string_view::npos) return std::string(client_name);
  auto role = client_name.substr(hash + 1);
  const auto dash = role.find('-');
  return std::string(role.substr(0, dash));
}

ClientLogWatcher::ClientLogWatcher(storage::ClusterId cluster, std::set<std::string> topics,
                                   storage::Store& store, const common::Clock& clock,
                                   std::string log_file)
    : cluster_(cluster), topics_(std::move(topics)), store_(store), clock_(clock) {
  if (!log_file.empty()) {
    file_.open(log_file, std::ios::app);
    if (!file_) spdlog::warn("cannot open client log file {}", log_file);
  }
}

void ClientLogWatcher::onLine(std::string_view client, int level, std::string_view facility,
                              std::string_view message) {
  const auto now = clock_.wallNow();
  if (file_.is_open()) {
    std::lock_guard lock(file_mutex_);
    file_ << common::formatRfc3339(now) << ' ' << level << ' ' << facility << " [" << client << "] "
          << message << '\n';
  }
  if (level <= 4) {
    spdlog::warn("librdkafka {} {}: {}", client, facility, message);
  }
  if (auto timeout = parseRequestTimeout(facility, message)) {
    storage::Event e;
    e.cluster = cluster_;
    e.t_us = now;
    e.source = toString(common::EventSource::kClient);
    e.kind = toString(common::EventKind::kClientRequestTimeout);
    e.broker = timeout->broker;
    e.detail = common::jsonText(nlohmann::json{{"client", clientRole(client)},
                                               {"request", timeout->request},
                                               {"after_ms", timeout->after_ms}});
    store_.addEvent(std::move(e));
  }
  if (auto parsed = parseLeaderUpdate(facility, message); parsed && topics_.count(parsed->topic)) {
    bool restored = false;
    const auto update = leaders_.apply(client, std::move(*parsed), &restored);
    storage::Event e;
    e.cluster = cluster_;
    e.t_us = now;
    e.source = toString(common::EventSource::kClient);
    e.kind = toString(common::EventKind::kClientLeaderUpdate);
    e.broker = update.to_leader;
    e.topic = update.topic;
    e.partition = update.partition;
    nlohmann::json detail{{"client", clientRole(client)},
                          {"from", update.from_leader},
                          {"to", update.to_leader},
                          {"epoch", update.to_epoch}};
    if (restored) detail["line_from"] = -1;  // the line said -1: `from` is the leader it named last
    e.detail = common::jsonText(detail);
    store_.addEvent(std::move(e));
    ++updates_;
  }
}

kafka::LogSink ClientLogWatcher::sink() {
  return [this](std::string_view client, int level, std::string_view facility,
                std::string_view message) { onLine(client, level, facility, message); };
}

}  // namespace kfaild::observe
