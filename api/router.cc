#include "api/router.h"

#include <spdlog/spdlog.h>

#include <exception>
#include <stdexcept>

namespace kfaild::api {

bool Router::isMutating(std::string_view method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE";
}

void Router::add(const std::string& method, std::string_view pattern, Handler handler) {
  if (pattern.empty() || pattern.front() != '/') {
    throw std::invalid_argument("route pattern must start with '/': " + std::string(pattern));
  }
  std::vector<Segment> segments;
  std::size_t start = 1;
  while (true) {
    const auto slash = pattern.find('/', start);
    const auto text =
        pattern.substr(start, slash == std::string_view::npos ? pattern.npos : slash - start);
    Segment segment;
    if (text.size() >= 2 && text.front() == '{' && text.back() == '}') {
      segment.text = std::string(text.substr(1, text.size() - 2));
      segment.is_param = true;
      for (const auto& other : segments) {
        if (other.is_param && other.text == segment.text) {
          throw std::invalid_argument("route pattern repeats {" + segment.text +
                                      "}: " + std::string(pattern));
        }
      }
    } else {
      segment.text = std::string(text);
    }
    segments.push_back(std::move(segment));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }

  for (auto& route : routes_) {
    if (route.pattern != pattern) continue;
    if (!route.handlers.emplace(method, std::move(handler)).second) {
      throw std::invalid_argument("route registered twice: " + method + " " + std::string(pattern));
    }
    return;
  }
  Route route{std::string(pattern), std::move(segments), {}};
  route.handlers.emplace(method, std::move(handler));
  routes_.push_back(std::move(route));
}

bool Router::matches(const Route& route, const std::vector<std::string>& segments) {
  if (route.segments.size() != segments.size()) return false;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const Segment& expected = route.segments[i];
    if (expected.is_param ? segments[i].empty() : expected.text != segments[i]) return false;
  }
  return true;
}

std::string Router::allowHeader(const Route& route) {
  std::string allow;
  for (const auto& [method, handler] : route.handlers) {
    if (!allow.empty()) allow += ", ";
    allow += method;
    if (method == "GET" && !route.handlers.contains("HEAD")) allow += ", HEAD";
  }
  return allow;
}

Response Router::dispatch(Request& request) const {
  const Route* best = nullptr;
  std::size_t best_literals = 0;
  for (const auto& route : routes_) {
    if (!matches(route, request.segments)) continue;
    std::size_t literals = 0;
    for (const auto& segment : route.segments) literals += segment.is_param ? 0 : 1;
    if (best == nullptr || literals > best_literals) {
      best = &route;
      best_literals = literals;
    }
  }
  if (best == nullptr) {
    return problem(ProblemType::kNotFound,
                   "no resource at path \"" + printable(request.path) + "\"", request.path);
  }

  auto handler = best->handlers.find(request.method);
  if (handler == best->handlers.end() && request.method == "HEAD") {
    handler = best->handlers.find("GET");
  }
  if (handler == best->handlers.end()) {
    const std::string allow = allowHeader(*best);
    Response response = problem(ProblemType::kMethodNotAllowed,
                                "method " + printable(request.method, 32) + " is not allowed on " +
                                    best->pattern + "; allowed: " + allow,
                                request.path);
    response.headers.emplace_back("Allow", allow);
    return response;
  }

  if (isMutating(request.method) && request.credentials != Credentials::kValid &&
      request.credentials != Credentials::kNotRequired) {
    std::string detail;
    std::string challenge = "Bearer realm=\"kfaild\"";
    switch (request.credentials) {
      case Credentials::kMissing:
        detail = request.method + " requires an \"Authorization: Bearer <token>\" header";
        break;
      case Credentials::kMalformed:
        detail = "the Authorization header is not of the form \"Bearer <token>\"";
        challenge += ", error=\"invalid_request\"";
        break;
      default:
        detail = "the bearer token is not the one configured for this server";
        challenge += ", error=\"invalid_token\"";
        break;
    }
    Response response = problem(ProblemType::kUnauthorized, detail, request.path);
    response.headers.emplace_back("WWW-Authenticate", challenge);
    return response;
  }

  request.params.clear();
  for (std::size_t i = 0; i < best->segments.size(); ++i) {
    if (best->segments[i].is_param) request.params[best->segments[i].text] = request.segments[i];
  }
  try {
    return handler->second(request);
  } catch (const std::exception& e) {
    spdlog::error("http: {} {} failed: {}", printable(request.method, 32), printable(request.path),
                  e.what());
    return problem(ProblemType::kInternal,
                   "the server failed to answer this request; its log has the details",
                   request.path);
  }
}

}  // namespace kfaild::api
