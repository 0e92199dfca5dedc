#include "server/notify/events.h"

#include <algorithm>
#include <cstdio>

#include "server/common/time_format.h"
#include "storage/records.h"

namespace kfaild::notify {
namespace {

using nlohmann::json;

json parsedOr(const std::string& text, json fallback) {
  json value = json::parse(text, nullptr, false);
  return value.is_discarded() ? std::move(fallback) : value;
}

std::string seconds(std::int64_t us) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", static_cast<double>(us) / 1e6);
  return text;
}

std::string verdictText(const NotificationEvent& e) {
  return e.verdict.value_or("none");
}

json links(const NotificationEvent& e, const PayloadContext& c) {
  if (e.kind == kIncident) {
    return {{"api", c.external_url + "/api/v1/clusters/" + e.cluster + "/incidents"},
            {"dashboard", c.external_url + "/#/clusters/" + e.cluster}};
  }
  return {{"api", c.external_url + "/api/v1/drills/" + std::to_string(e.drill_id)},
          {"dashboard", c.external_url + "/#/drills/" + std::to_string(e.drill_id)}};
}

// One line per failed check: "ack_stall leader orders/0: 9.8 s > 1 s (fail)".
std::string checkLine(const json& check) {
  const auto text = [&check](const char* key) -> std::string {
    if (!check.contains(key) || check[key].is_null()) return "";
    return check[key].is_string() ? check[key].get<std::string>() : check[key].dump();
  };
  std::string line = text("objective");
  if (!text("role").empty()) line += " " + text("role");
  if (!text("topic").empty()) line += " " + text("topic") + "/" + text("partition");
  line += ": measured " + (text("measured").empty() ? "nothing" : text("measured")) + " " +
          text("unit");
  line += ", threshold " + text("threshold") + " " + text("unit") + " (" + text("status") + ")";
  if (!text("reason").empty()) line += ": " + text("reason");
  return line;
}

std::string summary(const NotificationEvent& e) {
  const auto drill = "drill " + std::to_string(e.drill_id) + " (" + e.fault + " of " +
                     targetLabel(e.target) + ") on " + e.cluster;
  if (e.kind == kDrillFinished) return "kfaild: " + drill + ": verdict " + verdictText(e);
  if (e.kind == kDrillFailed)
    return "kfaild: " + drill + " " + e.state + (e.reason.empty() ? "" : ": " + e.reason);
  if (e.kind == kRegression) {
    return "kfaild: " + drill + ": " + std::to_string(e.regressions.size()) + " regression" +
           (e.regressions.size() == 1 ? "" : "s");
  }
  return "kfaild: incident on " + e.cluster + ": stall of " + seconds(e.end_us - e.at_us) +
         " s outside any drill";
}

std::string details(const NotificationEvent& e) {
  std::string out;
  if (e.kind == kIncident) {
    for (const auto& p : e.partitions) {
      out += (out.empty() ? "" : "\n") + p.value("kind", std::string()) + " gap " +
             p.value("topic", std::string()) + "/" + std::to_string(p.value("partition", 0)) +
             ": " + seconds(p.value("duration_us", std::int64_t{0})) + " s from " +
             common::formatRfc3339(p.value("start_us", std::int64_t{0}));
    }
    return out;
  }
  for (const auto& check : e.failed_checks) out += (out.empty() ? "" : "\n") + checkLine(check);
  for (const auto& r : e.regressions) {
    out += (out.empty() ? "" : "\n") + std::string("regression: ") +
           r.value("kind", std::string()) + " stall " + r.value("role", std::string()) + " " +
           r.value("topic", std::string()) + "/" + std::to_string(r.value("partition", 0)) + " " +
           (r.contains("stall_s") ? r["stall_s"].dump() : "?") + " s vs median " +
           (r.contains("median_s") ? r["median_s"].dump() : "?") + " s";
  }
  return out;
}

}  // namespace

std::string NotificationEvent::dedupKey() const {
  if (kind == kIncident) return std::string(kIncident) + ":" + cluster + ":" + incident_id;
  return kind + ":drill:" + std::to_string(drill_id);
}

std::string targetLabel(const json& target) {
  if (target.contains("broker") && target["broker"].is_number_integer()) {
    return "broker " + std::to_string(target["broker"].get<std::int64_t>());
  }
  if (target.contains("leader_of") && target["leader_of"].is_object()) {
    const auto& l = target["leader_of"];
    return "leader of " + l.value("topic", std::string("?")) + "/" +
           std::to_string(l.value("partition", 0));
  }
  if (target.contains("controller")) return "the controller";
  if (target.contains("random")) return "a random broker";
  return target.dump();
}

std::vector<NotificationEvent> drillEvents(const std::string& cluster,
                                           const storage::DrillRecord& drill) {
  std::vector<NotificationEvent> out;
  if (drill.state != "done" && drill.state != "failed" && drill.state != "aborted") return out;
  NotificationEvent base;
  base.cluster = cluster;
  base.at_us = drill.finished_us.value_or(drill.created_us);
  base.drill_id = drill.id;
  base.fault = drill.fault;
  base.target = parsedOr(drill.target, json::object());
  base.state = drill.state;
  base.reason = drill.reason;
  base.started_us = drill.started_us;
  const json result = parsedOr(drill.result, json::object());
  // result.verdict is h/verdict's: until a drill carries one, its verdict is "none".
  if (result.contains("verdict") && result["verdict"].is_object()) {
    const auto& v = result["verdict"];
    if (v.contains("verdict") && v["verdict"].is_string())
      base.verdict = v["verdict"].get<std::string>();
    if (v.contains("checks") && v["checks"].is_array()) {
      for (const auto& check : v["checks"]) {
        if (check.value("status", std::string()) != "pass") base.failed_checks.push_back(check);
      }
    }
    if (v.contains("regressions") && v["regressions"].is_array())
      base.regressions = v["regressions"];
  }
  if (drill.state == "done") {
    base.kind = kDrillFinished;
    out.push_back(base);
    if (!base.regressions.empty()) {
      base.kind = kRegression;
      out.push_back(base);
    }
  } else {
    base.kind = kDrillFailed;
    out.push_back(base);
  }
  return out;
}

NotificationEvent incidentEvent(const std::string& cluster, const analysis::Incident& incident) {
  NotificationEvent e;
  e.kind = kIncident;
  e.cluster = cluster;
  e.at_us = incident.start_us;
  e.end_us = incident.end_us;
  for (const auto& g : incident.gaps) {
    e.partitions.push_back({{"topic", g.topic},
                            {"partition", g.partition},
                            {"kind", storage::toString(g.kind)},
                            {"start_us", g.start_us},
                            {"end_us", g.end_us},
                            {"duration_us", g.duration_us}});
  }
  if (!incident.gaps.empty()) {
    const auto& first = incident.gaps.front();
    e.incident_id = first.topic + ":" + std::to_string(first.partition) + ":" +
                    std::string(storage::toString(first.kind)) + ":" +
                    std::to_string(first.start_us);
  }
  return e;
}

bool wants(const config::ReceiverConfig& receiver, const NotificationEvent& event) {
  const auto has = [](const std::vector<std::string>& list, const std::string& item) {
    return std::find(list.begin(), list.end(), item) != list.end();
  };
  if (!has(receiver.events, event.kind)) return false;
  if (event.kind != kDrillFinished) return true;
  const auto verdict = verdictText(event);
  if (!has(receiver.verdicts, verdict)) return false;
  // Alertmanager pages; a pass, or a drill without a verdict, is nothing to page about.
  return receiver.type != "alertmanager" || verdict == "fail" || verdict == "inconclusive";
}

json webhookPayload(const NotificationEvent& e, const PayloadContext& c) {
  json out = {{"version", 1},         {"event", e.kind},
              {"cluster", e.cluster}, {"at", common::formatRfc3339(e.at_us)},
              {"at_us", e.at_us},     {"summary", summary(e)},
              {"links", links(e, c)}};
  if (e.kind == kIncident) {
    out["incident"] = {{"id", e.incident_id},       {"start", common::formatRfc3339(e.at_us)},
                       {"start_us", e.at_us},       {"end", common::formatRfc3339(e.end_us)},
                       {"end_us", e.end_us},        {"duration_us", e.end_us - e.at_us},
                       {"partitions", e.partitions}};
    return out;
  }
  out["drill"] = {{"id", e.drill_id},
                  {"fault", e.fault},
                  {"target", e.target},
                  {"state", e.state},
                  {"reason", e.reason.empty() ? json(nullptr) : json(e.reason)},
                  {"started_us", e.started_us ? json(*e.started_us) : json(nullptr)},
                  {"finished_us", e.at_us},
                  {"verdict", e.verdict ? json(*e.verdict) : json(nullptr)},
                  {"failed_checks", e.failed_checks},
                  {"regressions", e.regressions}};
  return out;
}

json slackPayload(const NotificationEvent& e, const PayloadContext& c) {
  const auto head = summary(e);
  const auto body = details(e);
  const auto link = links(e, c)["dashboard"].get<std::string>();
  json blocks = json::array();
  blocks.push_back(
      {{"type", "section"}, {"text", {{"type", "mrkdwn"}, {"text", "*" + head + "*"}}}});
  if (!body.empty()) {
    blocks.push_back(
        {{"type", "section"}, {"text", {{"type", "mrkdwn"}, {"text", "```" + body + "```"}}}});
  }
  blocks.push_back(
      {{"type", "context"},
       {"elements", {{{"type", "mrkdwn"}, {"text", "<" + link + "|open in kfaild>"}}}}});
  return {{"text", head + (body.empty() ? "" : "\n" + body)}, {"blocks", std::move(blocks)}};
}

json alertmanagerPayload(const NotificationEvent& e, const PayloadContext& c,
                         std::int64_t resolve_after_us) {
  std::string alertname = "KfaildIncident";
  std::string severity = "warning";
  if (e.kind == kDrillFailed) {
    alertname = "KfaildDrillError";
  } else if (e.kind == kRegression) {
    alertname = "KfaildDrillRegressed";
  } else if (e.kind == kDrillFinished) {
    alertname = e.verdict == std::optional<std::string>("fail") ? "KfaildDrillFailed"
                                                                : "KfaildDrillInconclusive";
    if (alertname == "KfaildDrillFailed") severity = "critical";
  }
  json labels = {{"alertname", alertname},
                 {"cluster", e.cluster},
                 {"severity", severity},
                 {"source", "kfaild"}};
  if (e.kind != kIncident) {
    labels["fault"] = e.fault;
    labels["target"] = targetLabel(e.target);
    labels["verdict"] = verdictText(e);
    labels["drill_id"] = std::to_string(e.drill_id);
  } else {
    labels["incident"] = e.incident_id;
  }
  std::string failed;
  for (const auto& check : e.failed_checks)
    failed += (failed.empty() ? "" : "\n") + checkLine(check);
  json annotations = {{"summary", summary(e)}, {"description", details(e)}};
  if (e.kind != kIncident) annotations["failed_checks"] = failed;
  // startsAt is when it happened; a delivery that is late (receiver down) still says so.
  const auto start = e.at_us;
  const auto end = std::max(start, c.now_us) + resolve_after_us;
  return json::array({{{"labels", labels},
                       {"annotations", annotations},
                       {"startsAt", common::formatRfc3339(start)},
                       {"endsAt", common::formatRfc3339(end)},
                       {"generatorURL", links(e, c)["dashboard"]}}});
}

NotificationEvent redactedForViewers(NotificationEvent event, const common::Redactor& redactor) {
  event.reason = redactor.redact(event.reason);
  redactor.redactJson(event.target);
  redactor.redactJson(event.failed_checks);
  redactor.redactJson(event.regressions);
  redactor.redactJson(event.partitions);
  return event;
}

json payloadFor(const config::ReceiverConfig& receiver, const NotificationEvent& event,
                const PayloadContext& context) {
  const auto shown =
      receiver.include_operator_details ? event : redactedForViewers(event, context.redactor);
  if (receiver.type == "slack") return slackPayload(shown, context);
  if (receiver.type == "alertmanager")
    return alertmanagerPayload(shown, context, receiver.alert_resolve_after_us);
  return webhookPayload(shown, context);
}

}  // namespace kfaild::notify
