#pragma once

// The seam between maintenance windows and an alerting system that can silence alerts: one
// implementation per configured Alertmanager receiver (AlertmanagerSilences); tests may use the
// real Alertmanager (tests/support/alertmanager.h) or a fake.
//
// AlertmanagerSilences speaks Alertmanager's API v2 over notify/http_post.h (the receiver's
// headers, TLS files and timeout):
//   create: POST <base>/api/v2/silences with matchers cluster="<cluster>" and
//           alertname=~silencedAlertsRegex() (kSilencedAlerts), startsAt/endsAt the window's,
//           createdBy "kfaild", comment "kfaild maintenance window <id> on <cluster>: <reason>";
//           returns Alertmanager's silenceID.
//   expire: DELETE <base>/api/v2/silence/<id>; a silence Alertmanager no longer knows (404) is
//           expired already, which is success.
// <base> is the receiver's url without a trailing /api/v2/alerts. Errors: maintenance::errc::
// silence_failed with the HTTP status and the start of the body, or notify's transport error.
// Blocking (one HTTP exchange within the receiver's timeout): call from the windows' worker.
// Thread-safe (no shared state).

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/common/result.h"
#include "server/config/config.h"

namespace kfaild::maintenance {

// The alerts a window silences: every alert kfaild sends (notify/events.h) and every cluster alert
// of the shipped rules (deploy/prometheus/kfaild-rules.yml) that the rules silence too, named one
// by one. Never KfaildProbeNoAck or KfaildClusterUnreachable: a window lasts up to a day, and a
// rehearsal that wedges must not hide a write outage for it. Alertmanager ands a silence's
// matchers, so the silence names what it matches rather than what it leaves out (a negative
// matcher, isEqual false, would need Alertmanager 0.22 and read as a positive one before); an
// alert added later is not silenced until it is listed here.
inline constexpr std::array<std::string_view, 10> kSilencedAlerts = {
    "KfaildIncident",        "KfaildDrillFailed",        "KfaildDrillInconclusive",
    "KfaildDrillRegressed",  "KfaildDrillError",         "KfaildProbeStalled",
    "KfaildLastDrillFailed", "KfaildLastDrillRegressed", "KfaildLastDrillInconclusive",
    "KfaildNoRecentDrill"};

// kSilencedAlerts as one regular expression ("A|B|..."; Alertmanager anchors it at both ends).
std::string silencedAlertsRegex();

struct SilenceRequest {
  std::string cluster;  // the cluster's name: the value of the `cluster` label
  std::int64_t window_id = 0;
  std::string reason;
  std::int64_t starts_us = 0;  // wall µs
  std::int64_t ends_us = 0;
};

class AlertSilences {
 public:
  virtual ~AlertSilences() = default;
  // The receiver's configured name (the key of its silence rows).
  virtual const std::string& receiver() const = 0;
  // The new silence's id.
  virtual Result<std::string> create(const SilenceRequest& request) = 0;
  virtual Status expire(const std::string& silence_id) = 0;
};

class AlertmanagerSilences final : public AlertSilences {
 public:
  explicit AlertmanagerSilences(config::ReceiverConfig receiver) : receiver_(std::move(receiver)) {}
  const std::string& receiver() const override { return receiver_.name; }
  Result<std::string> create(const SilenceRequest& request) override;
  Status expire(const std::string& silence_id) override;

 private:
  const config::ReceiverConfig receiver_;
};

}  // namespace kfaild::maintenance
