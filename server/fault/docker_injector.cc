#include "server/fault/docker_injector.h"

#include <openssl/ssl.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <nlohmann/json.hpp>
#include <thread>

#include "server/common/json_text.h"
#include "server/common/time_format.h"
#include "server/common/tls_verify.h"
#include "server/common/utf8.h"
#include "server/fault/command.h"
#include "server/fault/errc.h"
#include "server/fault/pause_expiry.h"

namespace kfaild::fault {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
namespace ssl = asio::ssl;
using Tcp = asio::ip::tcp;
using UnixSocket = asio::local::stream_protocol;

constexpr std::string_view kWantedApiVersion = "1.41";
constexpr std::uint64_t kMaxBody = 64ULL * 1024 * 1024;
// Docker's kill answers once the signal is sent; the engine writes FinishedAt when it has seen
// the exit, a few milliseconds later.
constexpr std::chrono::seconds kExitWait{5};
constexpr std::chrono::milliseconds kExitPoll{20};
// Starting or cancelling a pause's timer (pause_expiry.h) on this host.
constexpr std::chrono::seconds kPauseScriptTimeout{20};
// The engine's times are RFC 3339 with nanoseconds, read to µs; Kafka's log lines have ms.
constexpr std::int64_t kEngineTimeResolutionUs = 1;
constexpr std::int64_t kLogTimeResolutionUs = 1'000;

struct HttpAnswer {
  unsigned status = 0;
  std::string body;
};

Error connectError(const boost::system::error_code& ec, const std::string& where) {
  if (ec == boost::system::errc::permission_denied ||
      ec == boost::system::errc::operation_not_permitted) {
    return faultError(errc::permission_denied, "connect " + where + ": " + ec.message());
  }
  return faultError(errc::engine_unreachable, "connect " + where + ": " + ec.message());
}

bool isTlsError(const boost::system::error_code& ec) {
  return ec.category() == asio::error::get_ssl_category() ||
         ec.category() == ssl::error::get_stream_category();
}

// OpenSSL's reason, with the certificate check's own when that is what failed ("certificate
// verify failed (unable to get local issuer certificate)").
std::string tlsReason(const boost::system::error_code& ec, SSL* ssl) {
  std::string reason = ec.message();
  // Asio names the library after the reason; it says nothing here.
  const auto lib = reason.find(" (SSL routines)");
  if (lib != std::string::npos) reason.erase(lib);
  if (ssl != nullptr) {
    const long verify = SSL_get_verify_result(ssl);
    if (verify != X509_V_OK)
      reason += std::string(" (") + X509_verify_cert_error_string(verify) + ")";
  }
  return reason;
}

Result<std::unique_ptr<ssl::context>> clientTlsContext(const config::DockerTls& files) {
  auto context = std::make_unique<ssl::context>(ssl::context::tls_client);
  const auto refuse = [](const char* key, const std::string& file, const std::string& reason) {
    return faultError(errc::invalid_target,
                      std::string("docker.tls.") + key + ": cannot use " + file + ": " + reason);
  };
  // Docker's TLS trusts the CA it is given, never the system's.
  if (files.ca_file.empty()) return refuse("ca_file", files.ca_file, "no CA file given");
  constexpr const char* kKeys[] = {"ca_file", "cert_file", "key_file"};
  if (auto problem = common::makeVerifyingClient(
          context->native_handle(), {files.ca_file, files.cert_file, files.key_file})) {
    return refuse(kKeys[static_cast<int>(problem->key)], problem->file, problem->reason);
  }
  return context;
}

// One request on a fresh connection, everything under one deadline; over TLS when `tls` is set
// (tcp only).
Result<HttpAnswer> exchange(const DockerEndpoint& ep, http::request<http::string_body>& req,
                            std::chrono::milliseconds timeout, const std::string& where,
                            ssl::context* tls) {
  asio::io_context ioc;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxBody);
  boost::beast::flat_buffer buffer;
  boost::system::error_code failure;
  std::string failed_step;
  bool finished = false;

  const auto fail = [&](const char* step, const boost::system::error_code& ec) {
    failure = ec;
    failed_step = step;
  };
  const auto talk = [&](auto& sock) {
    http::async_write(sock, req, [&](const boost::system::error_code& ec, std::size_t) {
      if (ec) return fail("write", ec);
      http::async_read(sock, buffer, parser,
                       [&](const boost::system::error_code& ec2, std::size_t) {
                         if (ec2) return fail("read", ec2);
                         finished = true;
                       });
    });
  };

  UnixSocket::socket unix_sock(ioc);
  Tcp::socket tcp_sock(ioc);
  std::optional<ssl::stream<Tcp::socket>> tls_stream;
  Tcp::resolver resolver(ioc);
  if (tls != nullptr && ep.kind == DockerEndpoint::Kind::tcp) {
    tls_stream.emplace(ioc, *tls);
    // The engine's certificate must name the host of the endpoint, as an IP address or a name.
    if (auto why = common::expectPeerHost(tls_stream->native_handle(), ep.host)) {
      return faultError(errc::invalid_target, "TLS with " + where + ": " + *why);
    }
    resolver.async_resolve(
        ep.host, ep.port,
        [&](const boost::system::error_code& ec, const Tcp::resolver::results_type& results) {
          if (ec) return fail("connect", ec);
          asio::async_connect(tls_stream->next_layer(), results,
                              [&](const boost::system::error_code& ec2, const Tcp::endpoint&) {
                                if (ec2) return fail("connect", ec2);
                                tls_stream->async_handshake(
                                    ssl::stream_base::client,
                                    [&](const boost::system::error_code& ec3) {
                                      if (ec3) return fail("handshake", ec3);
                                      talk(*tls_stream);
                                    });
                              });
        });
  } else if (ep.kind == DockerEndpoint::Kind::unix_socket) {
    unix_sock.async_connect(UnixSocket::endpoint(ep.path),
                            [&](const boost::system::error_code& ec) {
                              if (ec) return fail("connect", ec);
                              talk(unix_sock);
                            });
  } else {
    resolver.async_resolve(
        ep.host, ep.port,
        [&](const boost::system::error_code& ec, const Tcp::resolver::results_type& results) {
          if (ec) return fail("connect", ec);
          asio::async_connect(tcp_sock, results,
                              [&](const boost::system::error_code& ec2, const Tcp::endpoint&) {
                                if (ec2) return fail("connect", ec2);
                                talk(tcp_sock);
                              });
        });
  }
  ioc.run_for(timeout);
  if (!finished && !failure) {
    // Pending handlers are destroyed with the io_context, never run.
    return faultError(errc::timeout,
                      std::string(req.method_string()) + " " + std::string(req.target()) + " on " +
                          where + ": no answer within " + std::to_string(timeout.count()) + " ms");
  }
  if (failure) {
    if (failed_step == "connect") return connectError(failure, where);
    // A certificate refused by either side shows in the handshake, or (TLS 1.3, where the
    // engine checks ours after the client's handshake ended) as an alert on the first read.
    // Or, when the engine's side closes faster than our request goes out, as a reset of the
    // request's write: the first thing after the handshake.
    if (tls_stream && failed_step == "write" &&
        (failure == asio::error::connection_reset || failure == asio::error::broken_pipe)) {
      return faultError(errc::permission_denied,
                        "TLS with " + where + ": write: " + failure.message() +
                            " right after the handshake (the engine refused our client "
                            "certificate?)");
    }
    if (isTlsError(failure) || (tls_stream && failed_step == "handshake")) {
      return faultError(errc::permission_denied,
                        "TLS with " + where + ": " + failed_step + ": " +
                            tlsReason(failure, tls_stream ? tls_stream->native_handle() : nullptr));
    }
    if (failure == http::error::body_limit) {
      return faultError(errc::bad_response,
                        where + ": answer larger than " + std::to_string(kMaxBody) + " bytes");
    }
    return faultError(errc::engine_error, failed_step + " " + where + ": " + failure.message());
  }
  HttpAnswer answer;
  answer.status = parser.get().result_int();
  answer.body = std::move(parser.get().body());
  return answer;
}

std::pair<int, int> versionNumbers(std::string_view v) {
  int major = 0, minor = 0;
  const auto dot = v.find('.');
  std::from_chars(v.data(), v.data() + (dot == std::string_view::npos ? v.size() : dot), major);
  if (dot != std::string_view::npos)
    std::from_chars(v.data() + dot + 1, v.data() + v.size(), minor);
  return {major, minor};
}

}  // namespace

Result<DockerEndpoint> parseDockerEndpoint(std::string_view endpoint) {
  DockerEndpoint ep;
  if (endpoint.rfind("unix://", 0) == 0) {
    ep.kind = DockerEndpoint::Kind::unix_socket;
    ep.path = std::string(endpoint.substr(7));
    if (ep.path.empty() || ep.path.front() != '/') {
      return faultError(errc::invalid_target, "docker endpoint '" + std::string(endpoint) +
                                                  "': expected unix:///absolute/path");
    }
    return ep;
  }
  if (endpoint.rfind("tcp://", 0) == 0) {
    std::string_view rest = endpoint.substr(6);
    while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
    std::size_t colon;
    if (!rest.empty() && rest.front() == '[') {
      const auto close = rest.find(']');
      if (close == std::string_view::npos || close + 1 >= rest.size() || rest[close + 1] != ':') {
        return faultError(errc::invalid_target, "docker endpoint '" + std::string(endpoint) +
                                                    "': expected tcp://[addr]:port");
      }
      ep.host = std::string(rest.substr(1, close - 1));
      colon = close + 1;
    } else {
      colon = rest.rfind(':');
      if (colon == std::string_view::npos || colon == 0) {
        return faultError(errc::invalid_target, "docker endpoint '" + std::string(endpoint) +
                                                    "': expected tcp://host:port");
      }
      ep.host = std::string(rest.substr(0, colon));
    }
    ep.port = std::string(rest.substr(colon + 1));
    int port = 0;
    const auto [ptr, ec] = std::from_chars(ep.port.data(), ep.port.data() + ep.port.size(), port);
    if (ec != std::errc{} || ptr != ep.port.data() + ep.port.size() || port < 1 || port > 65535) {
      return faultError(errc::invalid_target,
                        "docker endpoint '" + std::string(endpoint) + "': bad port");
    }
    ep.kind = DockerEndpoint::Kind::tcp;
    return ep;
  }
  return faultError(errc::invalid_target, "docker endpoint '" + std::string(endpoint) +
                                              "': expected unix:///path or tcp://host:port");
}

std::optional<common::WallMicros> parseEngineTime(std::string_view text) {
  // Go's zero time.Time, which the engine prints for "never".
  if (text.empty() || text.rfind("0001-01-01T", 0) == 0) return std::nullopt;
  return common::parseRfc3339(text);
}

Result<ContainerInspect> parseContainerInspect(std::string_view json) {
  const auto doc = nlohmann::json::parse(json, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("State") ||
      !doc["State"].is_object()) {
    return faultError(errc::bad_response, "container inspect answer without a State object");
  }
  const auto& st = doc["State"];
  ContainerInspect out;
  out.state.running = st.value("Running", false);
  out.state.paused = st.value("Paused", false);
  const auto pid = st.value("Pid", std::int64_t{0});
  if (pid > 0) out.state.pid = pid;
  out.state.started_at = parseEngineTime(st.value("StartedAt", std::string()));
  out.state.finished_at = parseEngineTime(st.value("FinishedAt", std::string()));
  out.state.detail = st.value("Status", std::string());
  if (!out.state.running && st.contains("ExitCode")) {
    out.state.detail += " (exit code " + std::to_string(st.value("ExitCode", 0)) + ")";
  }
  if (doc.contains("Id") && doc["Id"].is_string()) out.id = doc["Id"].get<std::string>();
  if (doc.contains("Config") && doc["Config"].is_object()) {
    out.tty = doc["Config"].value("Tty", false);
  }
  if (doc.contains("HostConfig") && doc["HostConfig"].is_object()) {
    const auto& mode = doc["HostConfig"]["NetworkMode"];
    if (mode.is_string()) out.network_mode = mode.get<std::string>();
  }
  return out;
}

std::string networkModeRefusal(const std::string& name, const std::string& network_mode) {
  if (network_mode == "host") {
    return "container " + name +
           " runs with network mode host: its network namespace is the "
           "host's, and rules there would cut the whole host (the operator's ssh included)";
  }
  if (network_mode.rfind("container:", 0) == 0) {
    return "container " + name + " runs with network mode " + network_mode +
           ": it shares that container's network namespace, and rules there would cut it too";
  }
  return {};
}

std::string demuxLogStream(std::string_view raw) {
  // Not a multiplexed stream (a TTY container, or an engine that sends plain text): as it is.
  if (raw.size() >= 8 &&
      (static_cast<unsigned char>(raw[0]) > 2 || raw[1] != 0 || raw[2] != 0 || raw[3] != 0)) {
    return std::string(raw);
  }
  std::string out;
  std::string partial[3];
  std::size_t pos = 0;
  while (pos + 8 <= raw.size()) {
    const auto type = static_cast<unsigned char>(raw[pos]);
    const std::uint32_t size =
        (static_cast<std::uint32_t>(static_cast<unsigned char>(raw[pos + 4])) << 24) |
        (static_cast<std::uint32_t>(static_cast<unsigned char>(raw[pos + 5])) << 16) |
        (static_cast<std::uint32_t>(static_cast<unsigned char>(raw[pos + 6])) << 8) |
        static_cast<std::uint32_t>(static_cast<unsigned char>(raw[pos + 7]));
    pos += 8;
    const std::string_view payload = raw.substr(pos, std::min<std::size_t>(size, raw.size() - pos));
    pos += payload.size();
    std::string& buf = partial[type <= 2 ? type : 1];
    buf.append(payload);
    std::size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      out.append(buf, 0, nl + 1);
      buf.erase(0, nl + 1);
    }
  }
  for (auto& buf : partial) {
    if (!buf.empty()) out += buf + "\n";
  }
  return out;
}

std::string negotiateApiVersion(std::string_view engine_version, std::string_view engine_min) {
  const auto wanted = versionNumbers(kWantedApiVersion);
  if (engine_version.empty()) return std::string(kWantedApiVersion);
  if (versionNumbers(engine_version) < wanted) return std::string(engine_version);
  if (!engine_min.empty() && versionNumbers(engine_min) > wanted) return std::string(engine_min);
  return std::string(kWantedApiVersion);
}

Error engineAnswerError(unsigned status, std::string_view body, const std::string& what) {
  std::string message;
  const auto doc = nlohmann::json::parse(body, nullptr, false);
  if (!doc.is_discarded() && doc.is_object() && doc.contains("message") &&
      doc["message"].is_string()) {
    message = doc["message"].get<std::string>();
  } else {
    message = std::string(common::utf8Prefix(body, 500));
    while (!message.empty() && (message.back() == '\n' || message.back() == '\r'))
      message.pop_back();
  }
  const std::string text = what + ": " + message + " (HTTP " + std::to_string(status) + ")";
  switch (status) {
    case 404:
      return faultError(errc::no_such_container, text);
    case 401:
    case 403:
      return faultError(errc::permission_denied, text);
    case 304:
    case 409:
      return faultError(errc::invalid_state, text);
    default:
      break;
  }
  // Podman's compat API answers a wrong state with 500 and this cause, where Docker says 409.
  if (message.find("container state improper") != std::string::npos) {
    return faultError(errc::invalid_state, text);
  }
  return faultError(errc::engine_error, text);
}

std::string urlEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 0xF];
    }
  }
  return out;
}

DockerInjector::DockerInjector(config::DockerTarget target, LogZone zone,
                               const common::Clock& clock, std::string log_dir,
                               std::chrono::milliseconds request_timeout)
    : GrayFaultInjector(clock),
      target_(std::move(target)),
      zone_(zone),
      clock_(clock),
      log_dir_(std::move(log_dir)),
      request_timeout_(request_timeout) {
  auto ep = parseDockerEndpoint(target_.endpoint);
  if (!ep) {
    endpoint_error_ = ep.error().message;
    return;
  }
  if (ep->kind == DockerEndpoint::Kind::tcp && target_.tls) {
    auto context = clientTlsContext(*target_.tls);
    if (!context) {
      endpoint_error_ = context.error().message;
      return;
    }
    tls_ = std::move(*context);
  } else if (ep->kind == DockerEndpoint::Kind::tcp && !target_.insecure &&
             !config::isLoopbackHost(ep->host)) {
    endpoint_error_ = "docker endpoint '" + target_.endpoint +
                      "': plain tcp:// to a host that is not loopback is refused without tls "
                      "(or insecure: true)";
    return;
  }
  endpoint_ = std::move(*ep);
}

DockerInjector::~DockerInjector() = default;

std::string DockerInjector::describe() const {
  return "docker container " + target_.container + " (" + target_.endpoint + ")";
}

Result<DockerInjector::Answer> DockerInjector::request(std::string_view method,
                                                       const std::string& target,
                                                       const std::string& body,
                                                       std::chrono::milliseconds timeout) {
  if (!endpoint_) return faultError(errc::invalid_target, endpoint_error_);
  const boost::beast::string_view verb(method.data(), method.size());
  http::request<http::string_body> req{http::string_to_verb(verb), target, 11};
  req.set(http::field::host, endpoint_->kind == DockerEndpoint::Kind::tcp
                                 ? endpoint_->host + ":" + endpoint_->port
                                 : std::string("docker"));
  req.set(http::field::user_agent, "kfaild");
  req.keep_alive(false);
  if (!body.empty()) req.set(http::field::content_type, "application/json");
  req.body() = body;
  req.prepare_payload();
  auto answer = exchange(*endpoint_, req, timeout, target_.endpoint, tls_.get());
  if (!answer) return answer.error();
  return Answer{answer->status, std::move(answer->body)};
}

Result<std::string> DockerInjector::apiVersion() {
  if (!api_version_.empty()) return api_version_;
  auto answer = request("GET", "/version", {}, request_timeout_);
  if (!answer) return answer.error();
  if (answer->status != 200) return engineAnswerError(answer->status, answer->body, "GET /version");
  const auto doc = nlohmann::json::parse(answer->body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return faultError(errc::bad_response, target_.endpoint + ": GET /version is not JSON");
  }
  api_version_ = negotiateApiVersion(doc.value("ApiVersion", std::string()),
                                     doc.value("MinAPIVersion", std::string()));
  return api_version_;
}

Result<DockerInjector::Answer> DockerInjector::containerRequest(std::string_view method,
                                                                const std::string& action,
                                                                std::chrono::milliseconds timeout,
                                                                const std::string& body) {
  auto version = apiVersion();
  if (!version) return version.error();
  const std::string path =
      "/v" + *version + "/containers/" + urlEncode(target_.container) + "/" + action;
  auto answer = request(method, path, body, timeout);
  if (!answer) return answer.error();
  if ((answer->status >= 200 && answer->status < 300) || answer->status == 304) return answer;
  return engineAnswerError(answer->status, answer->body,
                           std::string(method) + " " + action + " " + target_.container);
}

Result<ContainerInspect> DockerInjector::inspectContainer() {
  auto answer = containerRequest("GET", "json", request_timeout_);
  if (!answer) return answer.error();
  return parseContainerInspect(answer->body);
}

Result<ProcessState> DockerInjector::inspect() {
  auto ins = inspectContainer();
  if (!ins) return ins.error();
  return ins->state;
}

Result<FaultRecord> DockerInjector::kill() {
  FaultRecord record;
  record.requested_at = clock_.wallNow();
  auto answer = containerRequest("POST", "kill?signal=KILL", request_timeout_);
  if (!answer) return answer.error();
  const auto deadline = std::chrono::steady_clock::now() + kExitWait;
  auto ins = inspectContainer();
  while (ins && ins->state.running && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(kExitPoll);
    ins = inspectContainer();
  }
  // The engine stamped the exit between the request and the answer that first showed it.
  const auto seen_at = clock_.wallNow();
  if (!ins) return ins.error();
  const auto& st = ins->state;
  // A FinishedAt older than StartedAt belongs to an earlier run.
  if (!st.running && st.finished_at && (!st.started_at || *st.finished_at >= *st.started_at)) {
    placeFault(
        record, *st.finished_at,
        bracketOffset(*st.finished_at, record.requested_at, seen_at, kEngineTimeResolutionUs),
        "docker:State.FinishedAt");
  } else {
    record.uncertainty_us = seen_at - record.requested_at;
  }
  record.detail = "SIGKILL to container " + target_.container + ": " + st.detail;
  return record;
}

Result<FaultRecord> DockerInjector::stop(std::chrono::seconds grace) {
  FaultRecord record;
  auto before = inspectContainer();
  if (!before) return before.error();
  if (!before->state.running) {
    return faultError(errc::invalid_state, "container " + target_.container +
                                               " is not running: " + before->state.detail);
  }
  record.requested_at = clock_.wallNow();
  auto answer = containerRequest("POST", "stop?t=" + std::to_string(grace.count()),
                                 grace + request_timeout_ * 2);
  if (!answer) return answer.error();
  const auto stopped_at = clock_.wallNow();
  if (answer->status == 304) {
    return faultError(errc::invalid_state, "container " + target_.container + " already stopped");
  }
  // Kafka's own line is the moment the JVM took the SIGTERM; the engine keeps no such time.
  const auto since = before->state.started_at.value_or(record.requested_at - 60'000'000);
  if (auto text = containerLogText(record.requested_at - 2'000'000, before->tty)) {
    const auto lines =
        selectKafkaLogLines(*text, "server.log", zone_, since, {std::string(kSigtermLine)});
    if (!lines.empty()) {
      // The broker's log clock (in its configured zone), written while the engine stopped it.
      placeFault(
          record, lines.back().t,
          bracketOffset(lines.back().t, record.requested_at, stopped_at, kLogTimeResolutionUs),
          "docker:logs");
    }
  }
  if (!record.fault_at) {
    // The signal went out somewhere in the call.
    placeFault(record, record.requested_at, ClockOffset{0, stopped_at - record.requested_at},
               "kfaild:requested_at");
  }
  auto after = inspectContainer();
  record.detail = "docker stop -t " + std::to_string(grace.count()) + " " + target_.container +
                  (after ? ": " + after->state.detail : std::string());
  return record;
}

Result<FaultRecord> DockerInjector::simpleAction(const std::string& action,
                                                 const std::string& what) {
  FaultRecord record;
  record.requested_at = clock_.wallNow();
  auto answer = containerRequest("POST", action, request_timeout_);
  if (!answer) return answer.error();
  record.uncertainty_us = clock_.wallNow() - record.requested_at;  // somewhere in the call
  record.detail = what + " container " + target_.container;
  return record;
}

Result<FaultRecord> DockerInjector::pause(const PauseSpec& spec) {
  if (auto why = invalidReason(spec); !why.empty()) return faultError(errc::invalid_target, why);
  auto ins = inspectContainer();
  if (!ins) return ins.error();
  if (!ins->state.running || ins->state.paused) {
    return faultError(errc::invalid_state,
                      "container " + target_.container + " is " +
                          (ins->state.paused ? "already paused" : "not running") + ": " +
                          ins->state.detail);
  }
  auto expiry = startPauseTimer(spec, ins->id);
  if (!expiry) return expiry.error();
  auto record = simpleAction("pause", "froze");
  if (!record) {
    if (expiry->started)
      (void)runCommand(
          std::vector<std::string>{"sh", "-c",
                                   containerPauseCancelScript(spec.drill, target_.container)},
          kPauseScriptTimeout);
    return record;
  }
  record->detail += expiry->detail;
  return record;
}

Result<DockerInjector::PauseExpiry> DockerInjector::startPauseTimer(const PauseSpec& spec,
                                                                    const std::string& id) {
  constexpr std::string_view kReplay = " (the recovery journal resumes it at kfaild's next start)";
  if (endpoint_->kind != DockerEndpoint::Kind::unix_socket) {
    return PauseExpiry{
        false,
        "; no self-expiry: the engine is reached over TCP, and a timer on kfaild's host would "
        "end with that host, not with the engine's" +
            std::string(kReplay)};
  }
  if (id.empty()) {
    return faultError(errc::bad_response,
                      "container " + target_.container +
                          " not paused: the engine gave no container id for its expiry timer");
  }
  auto version = apiVersion();
  if (!version) return version.error();
  // By id: a container re-created under the same name since is not the one paused.
  const auto path = "/v" + *version + "/containers/" + urlEncode(id) + "/unpause";
  auto out = runCommand(
      std::vector<std::string>{
          "sh", "-c", containerPauseTimerScript(spec, target_.container, endpoint_->path, path)},
      kPauseScriptTimeout);
  if (out && out->exit_code == kExitNoCurl) {
    return PauseExpiry{false,
                       "; no self-expiry: kfaild's host has no curl to unpause the container with" +
                           std::string(kReplay)};
  }
  const auto not_started =
      "container " + target_.container +
      " not paused: the timer that would end the pause by itself did not start: ";
  if (!out) return Error{out.error().code, not_started + out.error().message};
  if (out->exit_code != 0) {
    std::string why = "sh exited with status " + std::to_string(out->exit_code);
    if (!out->err.empty()) why += ": " + common::utf8Tail(out->err, 2000);
    while (!why.empty() && why.back() == '\n') why.pop_back();
    return faultError(errc::command_failed, not_started + why);
  }
  return PauseExpiry{true, expiryDetail(spec, startedTimer(out->out))};
}

Result<FaultRecord> DockerInjector::resume(const std::string& drill) {
  auto record = simpleAction("unpause", "thawed");
  if (!record || !endpoint_ || endpoint_->kind != DockerEndpoint::Kind::unix_socket ||
      !invalidReason(PauseSpec{drill, std::chrono::seconds(1)}).empty()) {
    return record;
  }
  auto out = runCommand(
      std::vector<std::string>{"sh", "-c", containerPauseCancelScript(drill, target_.container)},
      kPauseScriptTimeout);
  record->detail +=
      out && out->exit_code == 0
          ? cancelDetail(cancelledTimers(out->out))
          : std::string(
                "; its expiry timer could not be cancelled (it would only unpause a running "
                "container): ") +
                (out ? common::utf8Tail(out->err, 2000) : out.error().message);
  return record;
}

Result<FaultRecord> DockerInjector::start() {
  FaultRecord record;
  record.requested_at = clock_.wallNow();
  auto answer = containerRequest("POST", "start", request_timeout_);
  if (!answer) return answer.error();
  auto ins = inspectContainer();
  const auto seen_at = clock_.wallNow();
  if (!ins) return ins.error();
  if (ins->state.started_at) {
    placeFault(record, *ins->state.started_at,
               bracketOffset(*ins->state.started_at, record.requested_at, seen_at,
                             kEngineTimeResolutionUs),
               "docker:State.StartedAt");
  }
  record.detail = (answer->status == 304 ? "already running: container " : "started container ") +
                  target_.container;
  return record;
}

Result<std::string> DockerInjector::containerLogText(common::WallMicros since, bool tty) {
  const auto since_s = std::max<common::WallMicros>(0, since / 1'000'000);
  auto answer = containerRequest(
      "GET", "logs?stdout=1&stderr=1&timestamps=0&since=" + std::to_string(since_s),
      request_timeout_);
  if (!answer) return answer.error();
  return tty ? std::move(answer->body) : demuxLogStream(answer->body);
}

Result<std::string> DockerInjector::execGrep(const std::string& file, common::WallMicros since,
                                             const std::vector<std::string>& patterns) {
  const nlohmann::json cmd = nlohmann::json::array(
      {"sh", "-c",
       rolledLogsGrepScript(log_dir_, file, patterns,
                            std::max<common::WallMicros>(0, since / 1'000'000))});
  const nlohmann::json create = {
      {"AttachStdout", true}, {"AttachStderr", true}, {"Tty", false}, {"Cmd", cmd}};
  auto created = containerRequest("POST", "exec", request_timeout_, common::jsonText(create));
  if (!created) return created.error();
  const auto doc = nlohmann::json::parse(created->body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("Id") || !doc["Id"].is_string()) {
    return faultError(errc::bad_response, "exec create answer without an Id");
  }
  const std::string id = urlEncode(doc["Id"].get<std::string>());
  auto version = apiVersion();
  if (!version) return version.error();
  const std::string base = "/v" + *version + "/exec/" + id;
  auto started =
      request("POST", base + "/start", R"({"Detach":false,"Tty":false})", request_timeout_);
  if (!started) return started.error();
  if (started->status != 200)
    return engineAnswerError(started->status, started->body, "exec start");
  std::string text = demuxLogStream(started->body);
  auto inspected = request("GET", base + "/json", {}, request_timeout_);
  if (!inspected) return inspected.error();
  const auto info = nlohmann::json::parse(inspected->body, nullptr, false);
  const int exit_code = !info.is_discarded() && info.is_object() ? info.value("ExitCode", 0) : 0;
  // grep: 0 lines found, 1 none found, 2 trouble (no such file).
  if (exit_code >= 2) {
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return faultError(errc::engine_error, "grep in container " + target_.container + " exited " +
                                              std::to_string(exit_code) + ": " + text);
  }
  return text;
}

Result<std::vector<BrokerLogLine>> DockerInjector::logLines(
    const std::string& file, common::WallMicros since, const std::vector<std::string>& patterns) {
  if (file == "server.log") {
    auto ins = inspectContainer();
    if (!ins) return ins.error();
    auto text = containerLogText(since, ins->tty);
    if (!text) return text.error();
    return selectKafkaLogLines(*text, file, zone_, since, patterns);
  }
  if (log_dir_.empty()) return std::vector<BrokerLogLine>{};
  if (file.empty() || file.find('/') != std::string::npos || file.front() == '.') {
    return faultError(errc::invalid_target, "log file '" + file + "' is not a plain file name");
  }
  auto text = execGrep(file, since, patterns);
  if (!text) return text.error();
  return selectKafkaLogLines(*text, file, zone_, since, patterns);
}

void DockerInjector::placeGrayFaults(const std::string& instance,
                                     const std::vector<std::string>& helper) {
  NodeShell shell;
  shell.instance = instance;
  if (endpoint_ && endpoint_->kind == DockerEndpoint::Kind::unix_socket) {
    shell.network_placement = [this]() -> Result<NftExceptions> {
      auto ins = inspectContainer();
      if (!ins.ok()) return ins.error();
      if (auto why = networkModeRefusal(target_.container, ins->network_mode); !why.empty())
        return faultError(errc::invalid_target, why);
      return NftExceptions{};
    };
    shell.nft = [this, helper = helper.empty() ? defaultLocalGrayHelper() : helper](
                    const std::vector<std::string>& words) -> Result<std::vector<std::string>> {
      auto state = inspect();
      if (!state.ok()) return state.error();
      if (!state->running || !state->pid || *state->pid <= 0)
        return faultError(errc::invalid_state,
                          "container " + target_.container + " is not running: no netns to enter");
      return localHelperArgv(helper, {}, *state->pid, words);
    };
  } else {
    shell.nft_refusal = "the Docker engine " + target_.endpoint +
                        " is not on kfaild's host: its containers' network namespaces cannot be "
                        "entered from here";
  }
  shell.sh_refusal = "disk_full is not done through the Docker engine (no fill dir in a container)";
  runGrayFaultsThrough(std::move(shell));
}

void DockerInjector::locate(GrayPlace& place) const {
  place.netns = "container:" + target_.container;
}

Result<HelperArgv> DockerInjector::wayInto(const GrayPlace& place) const {
  // A container's network namespace lives and dies with it: stopped or removed, nothing is left.
  if (!place.netns.empty() && place.netns != "container:" + target_.container) {
    return faultError(errc::invalid_target, "the fault was placed in container " + place.netns +
                                                ", and this node is now container " +
                                                target_.container);
  }
  return HelperArgv{};
}

}  // namespace kfaild::fault
