#include "api/access.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

namespace kfaild::api {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool isIpv4(const std::string& text) {
  in_addr a{};
  return inet_pton(AF_INET, text.c_str(), &a) == 1;
}

bool isIpv6(const std::string& text) {
  in6_addr a{};
  return inet_pton(AF_INET6, text.c_str(), &a) == 1;
}

bool isLoopbackLiteral(const std::string& name) {
  if (isIpv4(name)) return name.rfind("127.", 0) == 0;
  if (isIpv6(name)) {
    in6_addr a{};
    inet_pton(AF_INET6, name.c_str(), &a);
    if (IN6_IS_ADDR_LOOPBACK(&a)) return true;
    // ::ffff:127.x.y.z
    return IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127;
  }
  return false;
}

// A normalised IPv6 literal, so "::0001" and "::1" compare equal.
std::string canonicalIp(const std::string& name) {
  in6_addr a{};
  if (inet_pton(AF_INET6, name.c_str(), &a) != 1) return name;
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, &a, text, sizeof text);
  return text;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

bool startsWithIgnoreCase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && lower(text.substr(0, prefix.size())) == prefix;
}

// "application/json" or "application/json; charset=utf-8" (any case).
bool isJsonMediaType(std::string_view value) {
  const auto semicolon = value.find(';');
  return lower(trim(value.substr(0, semicolon))) == "application/json";
}

// The port of "name:port" or "[v6]:port"; `fallback` when there is none, 0 when malformed.
int portOf(std::string_view authority, int fallback) {
  authority = trim(authority);
  const auto close = authority.rfind(']');
  const auto colon = authority.rfind(':');
  if (colon == std::string_view::npos || (close != std::string_view::npos && colon < close))
    return fallback;
  const auto digits = authority.substr(colon + 1);
  if (digits.empty() || digits.size() > 5) return 0;
  int port = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return 0;
    port = port * 10 + (c - '0');
  }
  return port > 65535 ? 0 : port;
}

Response unauthorized(const Request& request, std::string detail, const char* error) {
  std::string challenge = "Bearer realm=\"kfaild\"";
  if (error != nullptr) challenge += std::string(", error=\"") + error + "\"";
  Response response = problem(ProblemType::kUnauthorized, std::move(detail), request.path);
  response.headers.emplace_back("WWW-Authenticate", challenge);
  return response;
}

}  // namespace

bool constantTimeEquals(std::string_view given, std::string_view expected) {
  // The running time depends on the expected token's length only, never on where the first
  // difference lies, so a token cannot be guessed byte by byte from response times.
  unsigned diff = given.size() == expected.size() ? 0U : 1U;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto g = static_cast<unsigned char>(i < given.size() ? given[i] : 0);
    diff = diff | (g ^ static_cast<unsigned char>(expected[i]));
  }
  return diff == 0;
}

std::string AccessPolicy::hostName(std::string_view authority) {
  authority = trim(authority);
  std::string name;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return {};
    const auto rest = authority.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return {};
    name = std::string(authority.substr(1, close - 1));
    if (!isIpv6(name)) return {};
    return canonicalIp(lower(name));
  }
  const auto colon = authority.find(':');
  if (colon != std::string_view::npos) {
    const auto port = authority.substr(colon + 1);
    if (port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return {};
    }
  }
  name = lower(authority.substr(0, colon));
  if (!name.empty() && name.back() == '.') name.pop_back();
  if (name.empty()) return {};
  for (const char c : name) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
    if (!ok) return {};
  }
  return name;
}

namespace {
AccessOptions openOnLoopback() {
  AccessOptions options;
  options.auth = false;
  return options;
}
}  // namespace

AccessPolicy::AccessPolicy() : AccessPolicy(openOnLoopback()) {}

AccessPolicy::AccessPolicy(AccessOptions options) : options_(std::move(options)) {
  std::string listen = lower(options_.listen_host);
  if (listen.size() > 2 && listen.front() == '[' && listen.back() == ']') {
    listen = listen.substr(1, listen.size() - 2);
  }
  if (isIpv6(listen)) listen = canonicalIp(listen);
  any_ip_literal_ = listen == "0.0.0.0" || listen == "::";
  loopback_ = listen == "localhost" || isLoopbackLiteral(listen);
  names_.push_back(listen);
  if (loopback_) names_.insert(names_.end(), {"localhost", "127.0.0.1", "::1"});
  for (const auto& allowed : options_.allowed_hosts) {
    const auto name = hostName(allowed);
    if (!name.empty()) names_.push_back(name);
  }
}

bool AccessPolicy::answersTo(const std::string& name) const {
  if (name.empty()) return false;
  if (std::find(names_.begin(), names_.end(), name) != names_.end()) return true;
  if (any_ip_literal_ && (isIpv4(name) || isIpv6(name))) return true;
  return loopback_ && isLoopbackLiteral(name);
}

std::optional<Response> AccessPolicy::checkHost(const Request& request) const {
  if (!request.headers.host) return std::nullopt;
  const auto name = hostName(*request.headers.host);
  if (answersTo(name)) return std::nullopt;
  return problem(ProblemType::kMisdirected,
                 "this server does not answer to the host \"" +
                     printable(*request.headers.host, 100) +
                     "\"; add the name to http.allowed_hosts if it is one of kfaild's own",
                 request.path);
}

std::optional<Response> AccessPolicy::checkCrossSite(const Request& request) const {
  const auto& headers = request.headers;
  if (headers.sec_fetch_site) {
    const auto site = lower(trim(*headers.sec_fetch_site));
    if (site != "same-origin" && site != "none") {
      return problem(ProblemType::kCrossSite,
                     "Sec-Fetch-Site is \"" + printable(site, 40) +
                         "\": changes are accepted only from kfaild's own pages and from clients "
                         "that are not browsers",
                     request.path);
    }
  }
  if (headers.origin) {
    const auto origin = trim(*headers.origin);
    const auto scheme_end = origin.find("://");
    const bool same = [&] {
      if (origin == "null" || scheme_end == std::string_view::npos) return false;
      const auto authority = origin.substr(scheme_end + 3);
      if (authority.find('/') != std::string_view::npos) return false;
      if (headers.host && lower(authority) == lower(trim(*headers.host))) return true;
      const auto name = hostName(authority);
      if (name.empty()) return false;
      const auto scheme = lower(origin.substr(0, scheme_end));
      const int default_port = scheme == "https" ? 443 : scheme == "http" ? 80 : 0;
      const auto port = portOf(authority, default_port);
      for (const auto& allowed : options_.allowed_hosts) {
        // Another port of an allowed name is another origin (another service on that host): a
        // name without a port stands for the scheme's default port.
        if (hostName(allowed) == name && port != 0 && portOf(allowed, default_port) == port) {
          return true;
        }
      }
      return false;
    }();
    if (!same) {
      return problem(ProblemType::kCrossSite,
                     "the request comes from the origin \"" + printable(origin, 100) +
                         "\", not from this server's own pages",
                     request.path);
    }
  }
  return std::nullopt;
}

AccessPolicy::Proof AccessPolicy::prove(const Request& request) const {
  const auto& fields = request.headers.authorization;
  if (fields.empty()) return Proof::kNone;
  if (fields.size() > 1) return Proof::kMalformed;
  std::string_view value = fields.front();
  if (!startsWithIgnoreCase(value, "bearer ")) return Proof::kMalformed;
  value = trim(value.substr(7));
  if (value.empty()) return Proof::kMalformed;
  // Both comparisons always run, so the time does not tell which token was close.
  const bool is_operator =
      !options_.operator_token.empty() && constantTimeEquals(value, options_.operator_token);
  const bool is_viewer =
      !options_.viewer_token.empty() && constantTimeEquals(value, options_.viewer_token);
  if (is_operator) return Proof::kOperator;
  if (is_viewer) return Proof::kViewer;
  return Proof::kUnknown;
}

std::optional<Response> AccessPolicy::admit(Request& request, RouteAccess access,
                                            bool mutating) const {
  if (auto refused = admitCredentials(request, access, mutating)) return refused;
  if (mutating) {
    const auto& type = request.headers.content_type;
    if (!request.body.empty() || type) {
      if (!type || !isJsonMediaType(*type)) {
        return problem(
            ProblemType::kUnsupportedMediaType,
            "a " + request.method +
                " request must send its body as Content-Type: application/json" +
                (type ? std::string(", not \"") + printable(*type, 80) + "\"" : std::string()),
            request.path);
      }
    } else if (!options_.auth && !request.headers.client_header) {
      // A body-less request proves nothing about its sender without a token: require a header a
      // page of another site cannot set.
      return problem(
          ProblemType::kCrossSite,
          "a " + request.method + " request without a body needs the X-Kfaild-Client header",
          request.path);
    }
  }
  return std::nullopt;
}

std::optional<Response> AccessPolicy::admitCredentials(Request& request, RouteAccess access,
                                                       bool mutating) const {
  const Proof proof = options_.auth ? prove(request) : Proof::kOperator;
  // The role is known before any refusal, so that the audit log keeps a cross-site attempt with
  // a valid token as that role's (api/audit_endpoints.h).
  request.role = proof == Proof::kOperator ? Role::kOperator
                 : proof == Proof::kViewer ? Role::kViewer
                                           : Role::kAnonymous;
  if (mutating) {
    if (auto refused = checkCrossSite(request)) return refused;
  }
  if (access != RouteAccess::kPublic) {
    if (proof == Proof::kMalformed) {
      return unauthorized(request, "the Authorization header is not of the form \"Bearer <token>\"",
                          "invalid_request");
    }
    if (proof == Proof::kUnknown) {
      return unauthorized(request, "the bearer token is not one configured for this server",
                          "invalid_token");
    }
  }
  Role needed = Role::kAnonymous;
  if (access == RouteAccess::kOperator || (access == RouteAccess::kDefault && mutating)) {
    needed = Role::kOperator;
  } else if (access == RouteAccess::kDefault && options_.read_auth) {
    needed = Role::kViewer;
  }
  if (request.role < needed) {
    if (request.role == Role::kAnonymous) {
      return unauthorized(
          request,
          request.method + " " +
              (needed == Role::kOperator ? "needs the operator token" : "needs a token") +
              " in an \"Authorization: Bearer <token>\" header",
          nullptr);
    }
    return problem(ProblemType::kForbidden,
                   "the viewer token may only read; " + request.method +
                       " on this route needs the operator token",
                   request.path);
  }
  return std::nullopt;
}

}  // namespace kfaild::api
