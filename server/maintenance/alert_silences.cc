#include "server/maintenance/alert_silences.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "server/common/json_text.h"
#include "server/common/time_format.h"
#include "server/maintenance/errc.h"
#include "server/notify/http_post.h"

namespace kfaild::maintenance {
namespace {

using nlohmann::json;

constexpr std::size_t kErrorBodyChars = 200;

Error refused(const std::string& what, const notify::HttpAnswer& answer) {
  return Error{errc::silence_failed, what + ": HTTP " + std::to_string(answer.status) + ": " +
                                         answer.body.substr(0, kErrorBodyChars)};
}

}  // namespace

std::string silencedAlertsRegex() {
  std::string out;
  for (const auto name : kSilencedAlerts) out += (out.empty() ? "" : "|") + std::string(name);
  return out;
}

Result<std::string> AlertmanagerSilences::create(const SilenceRequest& request) {
  auto url = notify::parseReceiverUrl(notify::alertmanagerBase(receiver_.url) + "/api/v2/silences");
  if (!url) return url.error();
  const json body = {
      {"matchers",
       {{{"name", "cluster"}, {"value", request.cluster}, {"isRegex", false}, {"isEqual", true}},
        {{"name", "alertname"},
         {"value", silencedAlertsRegex()},
         {"isRegex", true},
         {"isEqual", true}}}},
      {"startsAt", common::formatRfc3339(request.starts_us)},
      {"endsAt", common::formatRfc3339(request.ends_us)},
      {"createdBy", "kfaild"},
      {"comment", "kfaild maintenance window " + std::to_string(request.window_id) + " on " +
                      request.cluster + ": " + request.reason}};
  auto answer = notify::postJson(*url, common::jsonText(body), receiver_.headers, receiver_.tls,
                                 std::chrono::milliseconds(receiver_.timeout_ms));
  if (!answer) return answer.error();
  if (answer->status < 200 || answer->status >= 300) return refused("create silence", *answer);
  const json parsed = json::parse(answer->body, nullptr, false);
  if (parsed.is_discarded() || !parsed.contains("silenceID") || !parsed["silenceID"].is_string() ||
      parsed["silenceID"].get<std::string>().empty()) {
    return refused("create silence: no silenceID in the answer", *answer);
  }
  return parsed["silenceID"].get<std::string>();
}

Status AlertmanagerSilences::expire(const std::string& silence_id) {
  // Alertmanager's ids are UUIDs; anything else is not put into a path.
  if (silence_id.empty() ||
      silence_id.find_first_not_of("0123456789abcdefABCDEF-") != std::string::npos) {
    return Error{errc::silence_failed,
                 "expire silence: '" + silence_id + "' is not an Alertmanager silence id"};
  }
  auto url = notify::parseReceiverUrl(notify::alertmanagerBase(receiver_.url) + "/api/v2/silence/" +
                                      silence_id);
  if (!url) return url.error();
  auto answer = notify::deleteResource(*url, receiver_.headers, receiver_.tls,
                                       std::chrono::milliseconds(receiver_.timeout_ms));
  if (!answer) return answer.error();
  if ((answer->status >= 200 && answer->status < 300) || answer->status == 404) return okStatus();
  return refused("expire silence " + silence_id, *answer);
}

}  // namespace kfaild::maintenance
