#pragma once

// Who may do what, and from where: the checks the router runs before a handler.
//
//   Host         A request whose Host header names a host this server does not answer to gets
//                421 (unknown-host), on every route: a DNS-rebinding page reaches kfaild under
//                the attacker's name and is refused before anything is read. Answered names:
//                the listen address (any IP literal when it is a wildcard address; localhost and
//                loopback literals when it is loopback) and http.allowed_hosts. Ports are not
//                compared (a proxy may change them); a request without Host (not a browser) passes.
//   Cross-site   A mutating request whose Sec-Fetch-Site is not same-origin/none, or whose Origin
//                is "null" or names another host than the Host header (and is not an allowed
//                host on its port: "name:port" that port, "name" the scheme's default port),
//                gets 403 (cross-site-request).
//   Credentials  "Authorization: Bearer <token>" proves the operator or the viewer token
//                (compared in constant time). A malformed header or an unknown token is 401 on
//                every route but the public ones.
//   Role         Mutating routes and kOperator routes need the operator; reads need the viewer
//                when read_auth is on and nothing otherwise; public routes (health, dashboard
//                files) need nothing. Missing credentials give 401, a viewer token where the
//                operator is needed gives 403 (forbidden).
//   Media type   A mutating request with a body must send Content-Type: application/json (415
//                otherwise); one without a body must carry a token or the X-Kfaild-Client header,
//                which a page of another site cannot send without a CORS preflight kfaild never
//                grants.
//
// With `http.auth: none` (loopback only, refused elsewhere by the server) every request is the
// operator; the Host, cross-site and media-type checks still hold.
//
// Immutable after construction: safe from any thread.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/http_message.h"

namespace kfaild::api {

enum class RouteAccess {
  kPublic,    // no token ever (health probes, the dashboard's files)
  kDefault,   // reads: the viewer when read_auth is on; mutating methods: the operator
  kOperator,  // the operator token for every method (the audit log)
};

struct AccessOptions {
  bool auth = true;                        // false: http.auth none (every request is the operator)
  std::string operator_token;              // required when auth is on
  std::string viewer_token;                // empty: no viewer token
  bool read_auth = false;                  // reads need a token
  std::string listen_host = "127.0.0.1";   // as configured: an IP literal or a name
  std::vector<std::string> allowed_hosts;  // further Host names ("name" or "name:port")
};

class AccessPolicy {
 public:
  // With no options: auth none on loopback (what a router in a unit test gets).
  AccessPolicy();
  explicit AccessPolicy(AccessOptions options);

  // 421 when the request's Host is not one this server answers to.
  std::optional<Response> checkHost(const Request& request) const;

  // For a request whose route matched: sets request.role, and returns the refusal (401, 403,
  // 415) or nullopt when the handler may run.
  std::optional<Response> admit(Request& request, RouteAccess access, bool mutating) const;
  // admit() without the media-type check: what the header fields alone decide (cross-site,
  // credentials, role; 401 or 403), so that a request can be refused before its body is read.
  std::optional<Response> admitCredentials(Request& request, RouteAccess access,
                                           bool mutating) const;

  bool authEnabled() const { return options_.auth; }

  // The host part of a Host header or an Origin's authority, lowercased, without port and
  // trailing dot ("[::1]:80" → "::1"); empty when malformed.
  static std::string hostName(std::string_view authority);

 private:
  enum class Proof { kNone, kViewer, kOperator, kMalformed, kUnknown };
  Proof prove(const Request& request) const;
  bool answersTo(const std::string& name) const;
  std::optional<Response> checkCrossSite(const Request& request) const;

  AccessOptions options_;
  std::vector<std::string> names_;  // answered host names (lowercased)
  bool any_ip_literal_ = false;     // listening on a wildcard address
  bool loopback_ = false;           // listening on loopback: localhost and 127/8, ::1 too
};

bool constantTimeEquals(std::string_view given, std::string_view expected);

}  // namespace kfaild::api
