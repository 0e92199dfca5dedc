#pragma once

// What kfaild tells receivers about, and how each receiver type is told (pure functions).
//
// Events:
//   drill_finished  a drill ended `done`: its verdict (result.verdict.verdict, or none while
//                   the drill carries no verdict) and its failed checks
//   drill_failed    a drill ended `failed` or `aborted`: the engine could not finish it
//   regression      a `done` drill whose result.verdict.regressions is not empty
//   incident        a stall outside every drill's window (analysis/incidents.h) at least
//                   notifications.incidents.min_stall_s long
//
// Dedup keys: "<event>:drill:<id>" for drill events, "incident:<cluster>:<topic>:<partition>:
// <kind>:<start_us>" (the incident's first gap) for incidents. The queue keeps one row per
// (receiver, key), so the same event reaches a receiver at most once from kfaild's side.
//
// Payloads (documented in openapi.yaml, webhooks: kfaildNotification):
//   webhook       one JSON object (webhookPayload)
//   slack         {"text": ..., "blocks": [...]}: Slack's incoming-webhook format
//   alertmanager  an array of one alert for POST /api/v2/alerts: labels alertname
//                 (KfaildDrillFailed | KfaildDrillInconclusive | KfaildDrillRegressed |
//                 KfaildDrillError | KfaildIncident), cluster, fault, target, verdict, severity,
//                 drill_id; annotations summary, description, failed_checks; startsAt; endsAt =
//                 startsAt + alert_resolve_after_s (an alert is an event, not a condition: it
//                 resolves by itself; see docs/CONFIG.md); generatorURL. A passing drill_finished
//                 is not sent to Alertmanager (there is nothing to page about).
//
// What a payload may say: a receiver is a reader without the operator token. Unless it has
// include_operator_details, its payloads are made from redactedForViewers(event): the same
// redaction as the API's answers to such readers (server/common/redaction.h), so the operator-only
// spans of a drill's reason (command lines, user@host, stderr, nft scripts) never reach a chat.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/analysis/incidents.h"
#include "server/common/redaction.h"
#include "server/config/config.h"
#include "storage/drill_store.h"

namespace kfaild::notify {

inline constexpr const char* kDrillFinished = "drill_finished";
inline constexpr const char* kDrillFailed = "drill_failed";
inline constexpr const char* kRegression = "regression";
inline constexpr const char* kIncident = "incident";

struct NotificationEvent {
  std::string kind;        // one of the four above
  std::string cluster;     // the cluster's configured name
  std::int64_t at_us = 0;  // the drill's end, or the incident's start
  // Drill events.
  std::int64_t drill_id = 0;
  std::string fault;
  nlohmann::json target = nlohmann::json::object();  // the request's target
  std::string state;                                 // done | failed | aborted
  std::string reason;                                // why it failed, else empty
  std::optional<std::int64_t> started_us;
  std::optional<std::string> verdict;  // pass | fail | inconclusive; nullopt: none
  nlohmann::json failed_checks = nlohmann::json::array();  // checks whose status is not pass
  nlohmann::json regressions = nlohmann::json::array();
  // Incidents.
  std::int64_t end_us = 0;
  nlohmann::json partitions = nlohmann::json::array();  // the incident's gaps
  std::string incident_id;  // <topic>:<partition>:<kind>:<start_us> of its first gap

  std::string dedupKey() const;
};

// The events of a drill as the listener got it (none for a state that is not terminal).
std::vector<NotificationEvent> drillEvents(const std::string& cluster,
                                           const storage::DrillRecord& drill);
NotificationEvent incidentEvent(const std::string& cluster, const analysis::Incident& incident);

// "broker 1", "leader of orders/0", "the controller", "a random broker".
std::string targetLabel(const nlohmann::json& target);

// Whether `receiver` takes `event` (its events and verdicts lists; Alertmanager never takes a
// pass).
bool wants(const config::ReceiverConfig& receiver, const NotificationEvent& event);

struct PayloadContext {
  std::string external_url;  // base of links, without a trailing slash
  std::int64_t now_us = 0;
  // What a reader without the operator token may see (the daemon's: the API's redactor).
  common::Redactor redactor{};
};

// `event` as a reader without the operator token sees it: its reason and every string of its
// target, failed checks, regressions and partitions through `redactor`. Kind, cluster, fault,
// state, verdict, times and ids stay (they are the API's own words, and route alerts).
NotificationEvent redactedForViewers(NotificationEvent event, const common::Redactor& redactor);

nlohmann::json webhookPayload(const NotificationEvent& event, const PayloadContext& context);
nlohmann::json slackPayload(const NotificationEvent& event, const PayloadContext& context);
nlohmann::json alertmanagerPayload(const NotificationEvent& event, const PayloadContext& context,
                                   std::int64_t resolve_after_us);
// The payload for the receiver's type: of the event as it is for a receiver with
// include_operator_details, else of redactedForViewers(event, context.redactor).
nlohmann::json payloadFor(const config::ReceiverConfig& receiver, const NotificationEvent& event,
                          const PayloadContext& context);

}  // namespace kfaild::notify
