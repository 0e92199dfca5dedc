#pragma once

// The request and response as handlers see them: independent of Boost.Beast, so routing and
// endpoints are testable without a socket. Errors go out as RFC 9457 problem documents
// (application/problem+json) built by problem().
//
// Strings taken from a request (path segments, query values) are percent-decoded bytes and need
// not be valid UTF-8; jsonBody() replaces invalid sequences so echoing them back never throws.
//
// Plain values and pure functions: safe from any thread.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/common/result.h"

namespace kfaild::api {

// In the order they appear in the target, percent-decoded ('+' is a literal plus: RFC 3986 gives
// it no meaning, and RFC 3339 offsets such as "+02:00" must survive unencoded).
using QueryParams = std::vector<std::pair<std::string, std::string>>;

// The header fields the access checks read (api/access.h), copied by the server; the rest of a
// request's header is not kept.
struct RequestHeaders {
  std::optional<std::string> host;
  std::optional<std::string> origin;
  std::optional<std::string> sec_fetch_site;
  std::optional<std::string> content_type;
  std::vector<std::string> authorization;  // every Authorization field, in order
  bool client_header = false;              // X-Kfaild-Client is present (any value)
};

// Who the request proved to be (api/access.h decides). kOperator may do everything; kViewer reads
// and sees redacted text; kAnonymous carried no token.
enum class Role { kAnonymous, kViewer, kOperator };
const char* roleName(Role role);

struct Request {
  std::string method;                 // as sent, e.g. "GET" (methods are case-sensitive)
  std::string path;                   // the target up to '?', still percent-encoded
  std::vector<std::string> segments;  // the path split at '/', each segment decoded
  QueryParams query;
  std::map<std::string, std::string> params;  // {name} segments of the matched route
  std::string body;
  RequestHeaders headers;
  std::string remote_address;    // the peer's IP address, for the audit log
  Role role = Role::kAnonymous;  // set by the router before the handler runs
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // beyond Content-Type/Length
};

// Splits an origin-form target ("/a/b?x=1") into its path, decoded segments and query.
// Fails (errc::invalid_request, message saying why) on other forms, bad percent escapes or '#'.
struct Target {
  std::string path;
  std::vector<std::string> segments;
  QueryParams query;
};
Result<Target> parseTarget(std::string_view target);

// Decodes %XX escapes; nullopt on a truncated or non-hex escape.
std::optional<std::string> percentDecode(std::string_view text);
// Every byte but the unreserved ones (A-Z a-z 0-9 - . _ ~) as %XX: safe in a query value.
std::string percentEncode(std::string_view text);

// Each kind of problem kfaild reports: its HTTP status, its `type` URI and its `title` (the same
// for every occurrence; `detail` says what was wrong this time).
enum class ProblemType {
  kMalformedRequest,      // 400: the HTTP request itself could not be parsed
  kInvalidParameter,      // 400: a query or path parameter has a bad value
  kUnknownParameter,      // 400: a query parameter the endpoint does not take
  kInvalidBody,           // 400: the request body is not the JSON the endpoint takes
  kUnauthorized,          // 401: no token, or not a configured one
  kForbidden,             // 403: the token's role may not use this route
  kCrossSite,             // 403: Origin or Sec-Fetch-Site says another site sent it
  kUnsupportedMediaType,  // 415: a mutating request whose body is not application/json
  kMisdirected,           // 421: the Host header names a host this server does not answer to
  kNotFound,              // 404: no such path
  kUnknownCluster,        // 404
  kUnknownDrill,          // 404
  kUnknownSchedule,       // 404
  kUnknownRecovery,       // 404: no open recovery-journal entry has that id
  kNoDrill,               // 404: the cluster has no completed drill yet
  kUnknownMaintenance,    // 404: the cluster has no maintenance window with that id
  kMethodNotAllowed,      // 405
  kDrillRefused,          // 409: a guard refused the drill (another drill runs, ISR short, ...)
  kDrillsDisabled,        // 409: the cluster has no inventory, so kfaild cannot inject faults
  kDrillFinished,         // 409: abort of a drill that is no longer queued or running
  kRecoveryInProgress,    // 409: resolving a recovery whose drill still runs
  kMaintenanceOver,       // 409: closing a maintenance window that was closed or has run out
  kPayloadTooLarge,       // 413
  kHeadersTooLarge,       // 431
  kInternal,              // 500: a bug; the log has the details
  kStoreUnavailable,      // 503: a database read failed
  kNotReady,              // 503: /readyz
};

int statusOf(ProblemType type);
std::string typeUri(ProblemType type);  // "urn:kfaild:problem:<slug>"
const char* titleOf(ProblemType type);

// `instance` is the request path (never the query, so nothing a client put there is echoed
// into logs or caches twice). `extra` members are merged into the document (RFC 9457 §3.2).
Response problem(ProblemType type, std::string detail, std::string_view instance,
                 const nlohmann::json& extra = nlohmann::json::object());

Response jsonResponse(int status, const nlohmann::json& body);
// Serialises without throwing on invalid UTF-8 (replaced by U+FFFD).
std::string jsonBody(const nlohmann::json& body);

// For log lines and problem details: bytes outside printable ASCII become \xNN, and the text is
// cut at `max_length`, so a hostile path cannot forge log lines or flood them.
std::string printable(std::string_view text, std::size_t max_length = 200);

}  // namespace kfaild::api
