#pragma once

// Routes a request by method and path pattern to its handler. Patterns are literal segments and
// `{name}` segments that match one non-empty segment and land in Request::params
// ("/api/v1/clusters/{cluster}/gaps"); where two patterns match a path, the one with more literal
// segments wins. The router decides, in this order:
//   421 when the Host header names a host this server does not answer to (api/access.h);
//   404 when no pattern matches the path;
//   405 with `Allow` when patterns match but none for this method;
//   403, 401 or 415 when the access policy refuses the request for this route (access.h: a
//       cross-site change, missing or wrong credentials, a role too low, a body not JSON);
// and otherwise runs the handler. The server may ask for the 421, 404, 405, 403 and 401 before
// it reads a mutating request's body (refuseBeforeBody()). HEAD runs the GET handler (the server
// drops the body). A handler that throws yields a 500 problem; the exception is logged, never sent.
//
// A route added with `redact` has every string of its JSON answer (problem documents included)
// passed through the redactor (server/common/redaction.h) unless the request proved the operator
// token; on every other route, a problem document loses its operator-only spans
// (server/common/sensitive.h) for everyone but the operator.
//
// Every request of a mutating method (POST, PUT, PATCH, DELETE), refused or not, is handed to the
// audit sink after its answer is made and before the server sends it: role, peer address, route
// pattern, SHA-256 of the body, status. The sink runs on the server thread; it must not throw.
//
// Thread-safety: add() during set-up only, before the server starts; dispatch() is then safe
// from any number of threads (handlers must be too).

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/access.h"
#include "api/http_message.h"
#include "api/request_counter.h"
#include "server/common/redaction.h"

namespace kfaild::api {

struct RouteOptions {
  RouteAccess access = RouteAccess::kDefault;
  bool redact = false;  // non-operators get the redacted text
};

// A mutating request as the audit log keeps it.
struct AuditEntry {
  Role role = Role::kAnonymous;
  std::string remote_address;
  std::string method;
  std::string route;        // the matched pattern; the (printable) path when none matched
  bool matched = false;     // a route's pattern matched the path
  std::string body_sha256;  // hex; of the empty string for a request without a body
  std::size_t body_bytes = 0;
  int status = 0;
  std::string problem;  // the problem type's slug when refused or failed, else empty
};

class Router {
 public:
  using Handler = std::function<Response(const Request&)>;
  using AuditSink = std::function<void(const AuditEntry&)>;

  // Throws std::invalid_argument on a malformed pattern or a route registered twice (a bug in
  // the caller, found at start-up).
  void add(const std::string& method, std::string_view pattern, Handler handler,
           RouteOptions options = {});

  // Set-up, before the server starts. Without setAccess the router runs with AccessPolicy's
  // default (no tokens, loopback names).
  void setAccess(AccessPolicy policy) { access_ = std::move(policy); }
  void setRedactor(common::Redactor redactor) { redactor_ = std::move(redactor); }
  void setAuditSink(AuditSink sink) { audit_ = std::move(sink); }
  const AccessPolicy& access() const { return access_; }

  // Fills request.params for the matched route.
  Response dispatch(Request& request) const;

  // For a mutating request whose header fields are read and whose body is not (request.body
  // empty): the refusal those fields alone decide (421, 404, 405, a cross-site or role 403, 401),
  // redacted and audited as dispatch() would (the audit entry with an empty body_sha256 and 0
  // bytes: the body was not read), or nullopt when the body must be read and the request
  // dispatched. Lets the server refuse a request without a valid token before its body.
  std::optional<Response> refuseBeforeBody(Request& request) const;

  // Responses sent, by status code; the server records every response here, including the ones
  // it makes itself (413, 431, malformed requests).
  RequestCounter& responses() { return responses_; }
  const RequestCounter& responses() const { return responses_; }

  static bool isMutating(std::string_view method);

 private:
  struct Segment {
    std::string text;
    bool is_param = false;
  };
  struct Route {
    std::string pattern;
    std::vector<Segment> segments;
    std::map<std::string, Handler> handlers;      // by method
    std::map<std::string, RouteOptions> options;  // by method
  };

  using HandlerEntry = std::map<std::string, Handler>::value_type;

  static bool matches(const Route& route, const std::vector<std::string>& segments);
  static std::string allowHeader(const Route& route);
  // The route's handler for the request (and `pattern` set), or the refusal without one: 421,
  // 404, 405.
  std::optional<Response> resolve(const Request& request, std::string& pattern,
                                  const Route*& matched, const HandlerEntry*& handler) const;
  Response route(Request& request, std::string& pattern) const;
  // What every answer to a request goes through once made: redaction of problem documents for
  // non-operators, and the audit sink for mutating methods.
  void finish(const Request& request, const std::string& pattern, Response& response,
              bool body_read) const;
  void redactBody(Response& response, bool marked_only) const;

  std::vector<Route> routes_;
  RequestCounter responses_;
  AccessPolicy access_;
  common::Redactor redactor_;
  AuditSink audit_;
};

}  // namespace kfaild::api
