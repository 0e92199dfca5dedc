#include "api/http_message.h"

#include <array>
#include <cctype>
#include <string_view>

#include "api/errc.h"
#include "server/common/json_text.h"

namespace kfaild::api {
namespace {

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

struct ProblemInfo {
  int status;
  const char* slug;
  const char* title;
};

ProblemInfo infoOf(ProblemType type) {
  switch (type) {
    case ProblemType::kMalformedRequest:
      return {400, "malformed-request", "Malformed request"};
    case ProblemType::kInvalidParameter:
      return {400, "invalid-parameter", "Invalid parameter"};
    case ProblemType::kUnknownParameter:
      return {400, "unknown-parameter", "Unknown parameter"};
    case ProblemType::kInvalidBody:
      return {400, "invalid-body", "Invalid request body"};
    case ProblemType::kUnauthorized:
      return {401, "unauthorized", "Authentication required"};
    case ProblemType::kForbidden:
      return {403, "forbidden", "Role not allowed"};
    case ProblemType::kCrossSite:
      return {403, "cross-site-request", "Cross-site request refused"};
    case ProblemType::kUnsupportedMediaType:
      return {415, "unsupported-media-type", "Unsupported media type"};
    case ProblemType::kMisdirected:
      return {421, "unknown-host", "Host not served here"};
    case ProblemType::kNotFound:
      return {404, "not-found", "No such resource"};
    case ProblemType::kUnknownCluster:
      return {404, "unknown-cluster", "Unknown cluster"};
    case ProblemType::kUnknownDrill:
      return {404, "unknown-drill", "Unknown drill"};
    case ProblemType::kUnknownSchedule:
      return {404, "unknown-schedule", "Unknown schedule"};
    case ProblemType::kUnknownRecovery:
      return {404, "unknown-recovery", "No open recovery"};
    case ProblemType::kUnknownMaintenance:
      return {404, "unknown-maintenance-window", "Unknown maintenance window"};
    case ProblemType::kMaintenanceOver:
      return {409, "maintenance-window-over", "Maintenance window over"};
    case ProblemType::kNoDrill:
      return {404, "no-drill", "No completed drill"};
    case ProblemType::kDrillRefused:
      return {409, "drill-refused", "Drill refused"};
    case ProblemType::kDrillsDisabled:
      return {409, "drills-disabled", "Drills not enabled for this cluster"};
    case ProblemType::kDrillFinished:
      return {409, "drill-finished", "Drill already finished"};
    case ProblemType::kRecoveryInProgress:
      return {409, "recovery-in-progress", "Recovery in progress"};
    case ProblemType::kMethodNotAllowed:
      return {405, "method-not-allowed", "Method not allowed"};
    case ProblemType::kPayloadTooLarge:
      return {413, "payload-too-large", "Request body too large"};
    case ProblemType::kHeadersTooLarge:
      return {431, "headers-too-large", "Request header fields too large"};
    case ProblemType::kInternal:
      return {500, "internal-error", "Internal error"};
    case ProblemType::kStoreUnavailable:
      return {503, "store-unavailable", "Database temporarily unavailable"};
    case ProblemType::kNotReady:
      return {503, "not-ready", "Not ready"};
  }
  return {500, "internal-error", "Internal error"};
}

}  // namespace

std::optional<std::string> percentDecode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const int high = hexValue(text[i + 1]);
    const int low = hexValue(text[i + 2]);
    if (high < 0 || low < 0) return std::nullopt;
    out.push_back(static_cast<char>(high * 16 + low));
    i += 2;
  }
  return out;
}

Result<Target> parseTarget(std::string_view target) {
  if (target.empty() || target.front() != '/') {
    return Error{
        errc::invalid_request,
        "the request target must be a path starting with '/', got \"" + printable(target) + "\""};
  }
  if (target.find('#') != std::string_view::npos) {
    return Error{errc::invalid_request, "the request target must not contain a fragment ('#')"};
  }
  Target out;
  const auto question = target.find('?');
  const std::string_view path = target.substr(0, question);
  out.path = std::string(path);

  // The leading '/' opens the first segment, so "/" is one empty segment and "/a/" ends in one.
  std::size_t start = 1;
  while (true) {
    const auto slash = path.find('/', start);
    const auto raw =
        path.substr(start, slash == std::string_view::npos ? path.npos : slash - start);
    auto decoded = percentDecode(raw);
    if (!decoded) {
      return Error{errc::invalid_request,
                   "bad percent-escape in path segment \"" + printable(raw) + "\""};
    }
    out.segments.push_back(std::move(*decoded));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }

  if (question == std::string_view::npos) return out;
  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view piece = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (piece.empty()) continue;
    const auto eq = piece.find('=');
    const std::string_view raw_name = piece.substr(0, eq);
    const std::string_view raw_value =
        eq == std::string_view::npos ? std::string_view() : piece.substr(eq + 1);
    auto name = percentDecode(raw_name);
    auto value = percentDecode(raw_value);
    if (!name || !value) {
      return Error{errc::invalid_request,
                   "bad percent-escape in query parameter \"" + printable(piece) + "\""};
    }
    out.query.emplace_back(std::move(*name), std::move(*value));
  }
  return out;
}

int statusOf(ProblemType type) {
  return infoOf(type).status;
}

std::string typeUri(ProblemType type) {
  return std::string("urn:kfaild:problem:") + infoOf(type).slug;
}

const char* roleName(Role role) {
  switch (role) {
    case Role::kAnonymous:
      return "anonymous";
    case Role::kViewer:
      return "viewer";
    case Role::kOperator:
      return "operator";
  }
  return "anonymous";
}

const char* titleOf(ProblemType type) {
  return infoOf(type).title;
}

Response problem(ProblemType type, std::string detail, std::string_view instance,
                 const nlohmann::json& extra) {
  const ProblemInfo info = infoOf(type);
  nlohmann::json doc = {
      {"type", typeUri(type)},
      {"title", info.title},
      {"status", info.status},
      {"detail", std::move(detail)},
      {"instance", std::string(instance)},
  };
  for (const auto& [key, value] : extra.items()) doc[key] = value;
  Response response = jsonResponse(info.status, doc);
  response.content_type = "application/problem+json";
  return response;
}

std::string jsonBody(const nlohmann::json& body) {
  return common::jsonText(body);
}

Response jsonResponse(int status, const nlohmann::json& body) {
  Response response;
  response.status = status;
  response.content_type = "application/json";
  response.body = jsonBody(body);
  return response;
}

std::string printable(std::string_view text, std::size_t max_length) {
  static constexpr std::array<char, 16> kHex = {'0', '1', '2', '3', '4', '5', '6', '7',
                                                '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
  std::string out;
  for (const char c : text) {
    if (out.size() >= max_length) {
      out += "...";
      break;
    }
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f && byte != '\\') {
      out.push_back(c);
    } else {
      out += "\\x";
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 0xf]);
    }
  }
  return out;
}

std::string percentEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 0x0f]);
    }
  }
  return out;
}

}  // namespace kfaild::api
