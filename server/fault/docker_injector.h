#pragma once

// Faults through the Docker Engine API (Docker, or Podman's Docker-compatible service), over
// HTTP/1.1 on a unix socket ("unix:///var/run/docker.sock") or TCP ("tcp://host:2376"), there
// with TLS as Docker's DOCKER_TLS_VERIFY does when the target has `tls`: TLS 1.2 or newer, the
// engine's certificate verified against tls.ca_file and against the endpoint's host (IP address
// or name), the client certificate presented when given. Plain tcp:// to a host that is not
// loopback is refused (errc::invalid_target) unless the target says `insecure`.
// The API version is negotiated once with GET /version: kfaild speaks v1.41 and uses the
// engine's own version when that is older, or its minimum when that is newer.
//
//   kill   POST /containers/{c}/kill?signal=KILL; fault_at = State.FinishedAt read right after
//          ("docker:State.FinishedAt"), as the article's `finished` did by hand.
//   stop   POST /containers/{c}/stop?t=<grace> (the engine sends SIGTERM, SIGKILL after t);
//          fault_at = the time of Kafka's own "Terminating process due to signal SIGTERM" line
//          in the container's log ("docker:logs", the article's `sigterm_at`), else
//          requested_at ("kfaild:requested_at").
//   pause / resume   POST /pause, /unpause (the cgroup freezer); no engine-side time. Before
//          the pause, for an engine on a unix socket (on kfaild's host), a timer on this host
//          that POSTs /unpause by the container's id with curl at the expiry (pause_expiry.h);
//          resume cancels it. An engine over TCP, or a host without curl, gets no timer, and the
//          pause's detail says so ("no self-expiry: ..."): the recovery journal is then all that
//          resumes it if kfaild does not (docs/SECURITY.md).
//   start  POST /start (already running is fine); fault_at = State.StartedAt.
//   The engine's (and the log's) clock is placed on kfaild's by the request's local bracket:
//   the engine's time was stamped between requested_at and kfaild's reading right after the
//   answer that showed it (bracketOffset; ± half of that, plus 1 µs for the engine's times,
//   1 ms for a log line). Without an engine time (pause, resume, requested_at): ± the call.
//   logs   server.log is the container's stdout (Kafka's root logger writes there); other files
//          (controller.log, state-change.log) are read with `grep` through the exec API when
//          `log_dir` (their directory inside the container) is given, else none.
//
// Errors: errc::engine_unreachable (socket missing, connection refused, no such host),
// errc::permission_denied (socket mode, 401/403, TLS: a certificate either side refused, message
// "TLS with tcp://...: ..." with OpenSSL's reason, or a reset of the first write after the
// handshake, as an engine refusing our client certificate may cause), errc::no_such_container
// (404), errc::invalid_state (kill/pause of a stopped container, ...), errc::engine_error (anything
// else, with the engine's "message" and the HTTP status), errc::timeout, errc::bad_response.
// Every request has a deadline. Not thread-safe (see Injector).

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/common/clock.h"
#include "server/config/config.h"
#include "server/fault/gray_fault_injector.h"
#include "server/fault/gray_runner.h"
#include "server/fault/injector.h"
#include "server/fault/kafka_log.h"

namespace boost::asio::ssl {
class context;
}

namespace kfaild::fault {

struct DockerEndpoint {
  enum class Kind { unix_socket, tcp };
  Kind kind = Kind::unix_socket;
  std::string path;  // unix
  std::string host;  // tcp
  std::string port;  // tcp
};

// "unix:///run/docker.sock" or "tcp://host:port" (also "tcp://[::1]:2375").
Result<DockerEndpoint> parseDockerEndpoint(std::string_view endpoint);

// The answer of GET /containers/{c}/json, the parts kfaild uses.
struct ContainerInspect {
  ProcessState state;
  std::string id;            // the container's full id
  bool tty = false;          // a TTY container's log stream is raw, not multiplexed
  std::string network_mode;  // HostConfig.NetworkMode: "bridge", "host", "container:<id>", ...
};
Result<ContainerInspect> parseContainerInspect(std::string_view json);

// Why nft rules in container `name`'s network namespace would cut more than it: with network
// mode `host` its namespace is the host's (isolating it cuts the whole host, the operator's ssh
// included), with `container:<id>` it is another container's. Empty for a namespace of its own.
std::string networkModeRefusal(const std::string& name, const std::string& network_mode);

// An engine time ("2026-11-30T05:08:57.971471859Z", RFC 3339 with up to nanoseconds) in µs;
// nullopt for Docker's "never" ("0001-01-01T00:00:00Z") and anything unreadable.
std::optional<common::WallMicros> parseEngineTime(std::string_view text);

// The engine's stdout/stderr stream of a container without a TTY: frames of an 8-byte header
// (stream type, 3 zero bytes, big-endian payload size) and the payload. Returns the text of both
// streams as complete lines in arrival order (a line split over frames is joined; a last line
// without its newline is kept).
std::string demuxLogStream(std::string_view raw);

// "1.41" from GET /version's ApiVersion and MinAPIVersion; see the header comment.
std::string negotiateApiVersion(std::string_view engine_version, std::string_view engine_min);

// An unsuccessful HTTP answer of the engine as an Error: status → errc, body's "message" kept.
Error engineAnswerError(unsigned status, std::string_view body, const std::string& what);

// Percent-encodes everything but unreserved characters (RFC 3986), for a path segment.
std::string urlEncode(std::string_view text);

class DockerInjector final : public GrayFaultInjector {
 public:
  // `log_dir`: where controller.log etc. are inside the container ("" when unknown).
  // The TLS files are read here; a file that cannot be used makes every call fail with
  // errc::invalid_target naming it.
  DockerInjector(config::DockerTarget target, LogZone zone, const common::Clock& clock,
                 std::string log_dir = {},
                 std::chrono::milliseconds request_timeout = std::chrono::seconds(15));
  ~DockerInjector() override;

  std::string describe() const override;
  Result<FaultRecord> kill() override;
  Result<FaultRecord> stop(std::chrono::seconds grace) override;
  Result<FaultRecord> pause(const PauseSpec& spec) override;
  Result<FaultRecord> resume(const std::string& drill) override;
  Result<FaultRecord> start() override;
  Result<ProcessState> inspect() override;
  Result<std::vector<BrokerLogLine>> logLines(const std::string& file, common::WallMicros since,
                                              const std::vector<std::string>& patterns) override;

  // Network faults in the container's network namespace, entered from this host by kfaild-gray
  // (`helper`, defaultLocalGrayHelper when empty) with `--pid <State.Pid>`: only for an engine
  // on a unix socket (kfaild runs
  // beside it); an engine over TCP is refused, and so is a container whose namespace is not its
  // own (networkModeRefusal). disk_full is refused (no fill dir in a container).
  void placeGrayFaults(const std::string& instance = {},
                       const std::vector<std::string>& helper = {});

  // The negotiated version, e.g. "1.41" (asks the engine on first use).
  Result<std::string> apiVersion();

 private:
  void locate(GrayPlace& place) const override;  // "container:<name>"
  // Refuses a place in another container than this node's now.
  Result<HelperArgv> wayInto(const GrayPlace& place) const override;
  struct Answer {
    unsigned status = 0;
    std::string body;
  };
  Result<Answer> request(std::string_view method, const std::string& target,
                         const std::string& body, std::chrono::milliseconds timeout);
  Result<Answer> containerRequest(std::string_view method, const std::string& action,
                                  std::chrono::milliseconds timeout, const std::string& body = {});
  Result<ContainerInspect> inspectContainer();
  Result<std::string> containerLogText(common::WallMicros since, bool tty);
  Result<std::string> execGrep(const std::string& file, common::WallMicros since,
                               const std::vector<std::string>& patterns);
  Result<FaultRecord> simpleAction(const std::string& action, const std::string& what);
  // The pause's timer (pause_expiry.h) on this host, for the container `id`; what the pause's
  // detail says of it. An error when it did not start; no timer, and the reason in the detail,
  // for an engine over TCP and for a host without curl.
  struct PauseExpiry {
    bool started = false;
    std::string detail;
  };
  Result<PauseExpiry> startPauseTimer(const PauseSpec& spec, const std::string& id);

  config::DockerTarget target_;
  LogZone zone_;
  const common::Clock& clock_;
  std::string log_dir_;
  std::chrono::milliseconds request_timeout_;
  std::optional<DockerEndpoint> endpoint_;
  std::string endpoint_error_;
  std::unique_ptr<boost::asio::ssl::context> tls_;  // set when target_.tls is
  std::string api_version_;                         // empty until negotiated
};

}  // namespace kfaild::fault
