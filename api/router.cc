#include "api/router.h"

#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include <array>
#include <exception>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "server/common/sensitive.h"

namespace kfaild::api {
namespace {

std::string sha256Hex(const std::string& data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_Digest(data.data(), data.size(), digest.data(), &size, EVP_sha256(), nullptr) != 1)
    return {};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0x0f]);
  }
  return out;
}

// "urn:kfaild:problem:drill-refused" → "drill-refused".
std::string problemSlug(const std::string& body) {
  const auto document = nlohmann::json::parse(body, nullptr, false);
  if (!document.is_object() || !document.contains("type") || !document["type"].is_string())
    return {};
  const auto type = document["type"].get<std::string>();
  const auto colon = type.rfind(':');
  return colon == std::string::npos ? type : type.substr(colon + 1);
}

}  // namespace

bool Router::isMutating(std::string_view method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE";
}

void Router::add(const std::string& method, std::string_view pattern, Handler handler,
                 RouteOptions options) {
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
    route.options.emplace(method, options);
    return;
  }
  Route route{std::string(pattern), std::move(segments), {}, {}};
  route.handlers.emplace(method, std::move(handler));
  route.options.emplace(method, options);
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
  std::string pattern;
  Response response = route(request, pattern);
  finish(request, pattern, response, true);
  return response;
}

std::optional<Response> Router::refuseBeforeBody(Request& request) const {
  if (!isMutating(request.method)) return std::nullopt;
  std::string pattern;
  const Route* matched = nullptr;
  const HandlerEntry* handler = nullptr;
  auto refused = resolve(request, pattern, matched, handler);
  if (!refused) {
    refused = access_.admitCredentials(request, matched->options.at(handler->first).access, true);
  }
  if (!refused) return std::nullopt;
  finish(request, pattern, *refused, false);
  return refused;
}

void Router::finish(const Request& request, const std::string& pattern, Response& response,
                    bool body_read) const {
  // Every problem document of every route: what was marked operator-only where it was made
  // (a command line, a tool's or the database's words) is not for anyone else.
  if (request.role != Role::kOperator && response.content_type == "application/problem+json") {
    redactBody(response, true);
  }
  if (audit_ && isMutating(request.method)) {
    AuditEntry entry;
    entry.role = request.role;
    entry.remote_address = request.remote_address;
    entry.method = printable(request.method, 32);
    entry.route = pattern.empty() ? printable(request.path) : pattern;
    entry.matched = !pattern.empty();
    entry.body_sha256 = body_read ? sha256Hex(request.body) : std::string();
    entry.body_bytes = request.body.size();
    entry.status = response.status;
    if (response.status >= 400 && response.content_type == "application/problem+json") {
      entry.problem = problemSlug(response.body);
    }
    audit_(entry);
  }
}

void Router::redactBody(Response& response, bool marked_only) const {
  if (response.content_type != "application/json" &&
      response.content_type != "application/problem+json")
    return;
  // Nothing marked, and nothing else to look for: the body stays as it is.
  if (marked_only && response.body.find(common::kSensitiveOpen) == std::string::npos) return;
  auto body = nlohmann::json::parse(response.body, nullptr, false);
  if (body.is_discarded()) return;
  redactor_.redactJson(body, marked_only);
  response.body = jsonBody(body);
}

std::optional<Response> Router::resolve(const Request& request, std::string& pattern,
                                        const Route*& matched, const HandlerEntry*& handler) const {
  if (auto misdirected = access_.checkHost(request)) return misdirected;
  const Route* best = nullptr;
  std::size_t best_literals = 0;
  for (const auto& candidate : routes_) {
    if (!matches(candidate, request.segments)) continue;
    std::size_t literals = 0;
    for (const auto& segment : candidate.segments) literals += segment.is_param ? 0 : 1;
    if (best == nullptr || literals > best_literals) {
      best = &candidate;
      best_literals = literals;
    }
  }
  if (best == nullptr) {
    return problem(ProblemType::kNotFound,
                   "no resource at path \"" + printable(request.path) + "\"", request.path);
  }
  pattern = best->pattern;

  auto found = best->handlers.find(request.method);
  if (found == best->handlers.end() && request.method == "HEAD") {
    found = best->handlers.find("GET");
  }
  if (found == best->handlers.end()) {
    const std::string allow = allowHeader(*best);
    Response response = problem(ProblemType::kMethodNotAllowed,
                                "method " + printable(request.method, 32) + " is not allowed on " +
                                    best->pattern + "; allowed: " + allow,
                                request.path);
    response.headers.emplace_back("Allow", allow);
    return response;
  }
  matched = best;
  handler = &*found;
  return std::nullopt;
}

Response Router::route(Request& request, std::string& pattern) const {
  const Route* best = nullptr;
  const HandlerEntry* handler = nullptr;
  if (auto refused = resolve(request, pattern, best, handler)) return std::move(*refused);
  const RouteOptions& options = best->options.at(handler->first);
  if (auto refused = access_.admit(request, options.access, isMutating(request.method))) {
    return std::move(*refused);
  }

  request.params.clear();
  for (std::size_t i = 0; i < best->segments.size(); ++i) {
    if (best->segments[i].is_param) request.params[best->segments[i].text] = request.segments[i];
  }
  try {
    Response response = handler->second(request);
    if (options.redact && request.role != Role::kOperator) redactBody(response, false);
    return response;
  } catch (const std::exception& e) {
    spdlog::error("http: {} {} failed: {}", printable(request.method, 32), printable(request.path),
                  e.what());
    return problem(ProblemType::kInternal,
                   "the server failed to answer this request; its log has the details",
                   request.path);
  }
}

}  // namespace kfaild::api
