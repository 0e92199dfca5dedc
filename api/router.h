#pragma once

// Routes a request by method and path pattern to its handler. Patterns are literal segments and
// `{name}` segments that match one non-empty segment and land in Request::params
// ("/api/v1/clusters/{cluster}/gaps"); where two patterns match a path, the one with more literal
// segments wins. The router decides, in this order:
//   404 when no pattern matches the path;
//   405 with `Allow` when patterns match but none for this method;
//   401 with `WWW-Authenticate: Bearer` when the route's method mutates (POST, PUT, PATCH,
//       DELETE) and the request's credentials are missing or wrong;
// and otherwise runs the handler. HEAD runs the GET handler (the server drops the body). A
// handler that throws yields a 500 problem; the exception is logged, never sent.
//
// Thread-safety: add() during set-up only, before the server starts; dispatch() is then safe
// from any number of threads (handlers must be too).

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "api/http_message.h"
#include "api/request_counter.h"

namespace kfaild::api {

class Router {
 public:
  using Handler = std::function<Response(const Request&)>;

  // Throws std::invalid_argument on a malformed pattern or a route registered twice (a bug in
  // the caller, found at start-up).
  void add(const std::string& method, std::string_view pattern, Handler handler);

  // Fills request.params for the matched route.
  Response dispatch(Request& request) const;

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
    std::map<std::string, Handler> handlers;  // by method
  };

  static bool matches(const Route& route, const std::vector<std::string>& segments);
  static std::string allowHeader(const Route& route);

  std::vector<Route> routes_;
  RequestCounter responses_;
};

}  // namespace kfaild::api
