#include "server/fault/docker_injector.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "server/fault/errc.h"
#include "tests/support/manual_clock.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace docker_injector_test {

using namespace kfaild::fault;

namespace {

std::string frame(char stream, const std::string& payload) {
  std::string out(8, '\0');
  out[0] = stream;
  const auto n = static_cast<std::uint32_t>(payload.size());
  out[4] = static_cast<char>((n >> 24) & 0xFF);
  out[5] = static_cast<char>((n >> 16) & 0xFF);
  out[6] = static_cast<char>((n >> 8) & 0xFF);
  out[7] = static_cast<char>(n & 0xFF);
  return out + payload;
}

// What Podman 4.3's Docker-compatible API answered for a container right after `kill` (trimmed).
constexpr const char* kKilledInspect = R"({
  "Id": "c70bbb8f08cd",
  "State": {"Status": "exited", "Running": false, "Paused": false, "Restarting": false,
            "OOMKilled": false, "Dead": false, "Pid": 0, "ExitCode": 137, "Error": "",
            "StartedAt": "2026-11-30T05:09:02.972321248Z",
            "FinishedAt": "2026-11-30T05:09:04.30747205Z"},
  "Config": {"Tty": false, "Image": ""}
})";

}  // namespace

TEST_CASE("inspect JSON gives the running state and pid and the engine's nanosecond times",
          "[unit][fault]") {
  const auto killed = parseContainerInspect(kKilledInspect);
  REQUIRE(killed);
  CHECK_FALSE(killed->state.running);
  CHECK_FALSE(killed->state.pid);
  CHECK(killed->state.started_at == 1'796'015'342'972'321);
  CHECK(killed->state.finished_at == 1'796'015'344'307'472);
  CHECK(killed->state.detail == "exited (exit code 137)");
  CHECK_FALSE(killed->tty);

  const auto paused = parseContainerInspect(R"({"State": {"Status": "paused", "Running": true,
      "Paused": true, "Pid": 25993, "StartedAt": "2026-11-30T05:09:02.972321248Z",
      "FinishedAt": "0001-01-01T00:00:00Z"}, "Config": {"Tty": true}})");
  REQUIRE(paused);
  CHECK(paused->state.running);
  CHECK(paused->state.paused);
  CHECK(paused->state.pid == 25993);
  CHECK_FALSE(paused->state.finished_at);  // Go's zero time means never
  CHECK(paused->tty);

  const auto junk = parseContainerInspect("<html>proxy error</html>");
  REQUIRE_FALSE(junk);
  CHECK(junk.error().code == errc::bad_response);
}

TEST_CASE(
    "engine times truncate nanoseconds to microseconds and honour offsets and zero means none",
    "[unit][fault]") {
  CHECK(parseEngineTime("2026-11-30T05:08:57.971471859Z") == 1'796'015'337'971'471);
  CHECK(parseEngineTime("2026-11-30T14:08:57.971471859+09:00") == 1'796'015'337'971'471);
  CHECK(parseEngineTime("2026-11-30T05:08:57Z") == 1'796'015'337'000'000);
  CHECK_FALSE(parseEngineTime("0001-01-01T00:00:00Z"));
  CHECK_FALSE(parseEngineTime(""));
  CHECK_FALSE(parseEngineTime("yesterday"));
}

TEST_CASE("the log stream's frames are taken apart into lines of both streams", "[unit][fault]") {
  const std::string raw = frame(1, "[2026-11-30 03:30:58,829] INFO Terminating process due to ") +
                          frame(2, "stderr line\n") +
                          frame(1,
                                "signal SIGTERM (org.apache.kafka.common.utils."
                                "LoggingSignalHandler)\nsecond") +
                          frame(1, " line\n") + frame(1, "no newline at the end");
  CHECK(demuxLogStream(raw) ==
        "stderr line\n"
        "[2026-11-30 03:30:58,829] INFO Terminating process due to signal SIGTERM "
        "(org.apache.kafka.common.utils.LoggingSignalHandler)\n"
        "second line\n"
        "no newline at the end\n");

  // A frame cut short by the connection keeps what arrived.
  const std::string cut = frame(1, "whole\n") + frame(1, "partial line").substr(0, 12);
  CHECK(demuxLogStream(cut) == "whole\npart\n");

  // A TTY container's stream is plain text.
  CHECK(demuxLogStream("[2026-11-30 03:30:58,829] INFO x (y)\n") ==
        "[2026-11-30 03:30:58,829] INFO x (y)\n");
}

TEST_CASE("the API version is capped at 1.41 and raised to the engine's minimum", "[unit][fault]") {
  CHECK(negotiateApiVersion("1.41", "1.24") == "1.41");  // Podman 4.3
  CHECK(negotiateApiVersion("1.49", "1.24") == "1.41");  // Docker 28
  CHECK(negotiateApiVersion("1.52", "1.44") == "1.44");  // an engine that dropped 1.41
  CHECK(negotiateApiVersion("1.40", "1.12") == "1.40");  // an older engine
  CHECK(negotiateApiVersion("1.9", "") == "1.9");
  CHECK(negotiateApiVersion("", "") == "1.41");
}

TEST_CASE("engine answers map to fault errors and keep the engine's message", "[unit][fault]") {
  const auto missing = engineAnswerError(
      404,
      R"({"cause":"no such container","message":"no container with name or ID \"k9\" found: no such container","response":404})",
      "POST kill k9");
  CHECK(missing.code == errc::no_such_container);
  CHECK(missing.message ==
        "POST kill k9: no container with name or ID \"k9\" found: no such container (HTTP 404)");
  CHECK(engineAnswerError(403, R"({"message":"authorization denied by plugin"})", "x").code ==
        errc::permission_denied);
  CHECK(engineAnswerError(409, R"({"message":"Container k1 is not running"})", "x").code ==
        errc::invalid_state);
  CHECK(
      engineAnswerError(
          500,
          R"({"cause":"container state improper","message":"can only kill running containers. c7 is in state exited: container state improper","response":500})",
          "x")
          .code == errc::invalid_state);
  const auto other = engineAnswerError(500, "plain text failure\n", "x");
  CHECK(other.code == errc::engine_error);
  CHECK(other.message == "x: plain text failure (HTTP 500)");
}

TEST_CASE("container names are URL-encoded and endpoints parsed", "[unit][fault]") {
  CHECK(urlEncode("kfaild-lab-k1") == "kfaild-lab-k1");
  CHECK(urlEncode("a/../b?x=1 #") == "a%2F..%2Fb%3Fx%3D1%20%23");

  const auto unix_ep = parseDockerEndpoint("unix:///run/kfaild-podman.sock");
  REQUIRE(unix_ep);
  CHECK(unix_ep->kind == DockerEndpoint::Kind::unix_socket);
  CHECK(unix_ep->path == "/run/kfaild-podman.sock");
  const auto tcp_ep = parseDockerEndpoint("tcp://[::1]:2375");
  REQUIRE(tcp_ep);
  CHECK(tcp_ep->host == "::1");
  CHECK(tcp_ep->port == "2375");
  CHECK(parseDockerEndpoint("tcp://docker.internal:2375/")->host == "docker.internal");
  CHECK(parseDockerEndpoint("unix://relative.sock").error().code == errc::invalid_target);
  CHECK(parseDockerEndpoint("tcp://host").error().code == errc::invalid_target);
  CHECK(parseDockerEndpoint("tcp://host:99999").error().code == errc::invalid_target);
  CHECK(parseDockerEndpoint("http://host:2375").error().code == errc::invalid_target);
}

TEST_CASE("a socket that is missing or refuses is an unreachable engine", "[integration][fault]") {
  const kfaild::testing::TempDir dir;
  const kfaild::testing::ManualClock clock;
  DockerInjector missing({"unix://" + (dir / "none.sock").string(), "kfaild-lab-k1"}, LogZone::utc,
                         clock);
  const auto a = missing.kill();
  REQUIRE_FALSE(a);
  CHECK(a.error().code == errc::engine_unreachable);
  CHECK(a.error().message.find("none.sock") != std::string::npos);

  // A socket file nobody listens on: connection refused.
  const std::string path = (dir / "dead.sock").string();
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  path.copy(addr.sun_path, sizeof addr.sun_path - 1);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  ::close(fd);
  DockerInjector refused({"unix://" + path, "kfaild-lab-k1"}, LogZone::utc, clock);
  const auto b = refused.inspect();
  REQUIRE_FALSE(b);
  CHECK(b.error().code == errc::engine_unreachable);

  DockerInjector no_host({"tcp://127.0.0.1:1", "kfaild-lab-k1"}, LogZone::utc, clock);
  CHECK(no_host.start().error().code == errc::engine_unreachable);
}

TEST_CASE("an engine that accepts but never answers times out", "[integration][fault]") {
  const kfaild::testing::TempDir dir;
  const kfaild::testing::ManualClock clock;
  const std::string path = (dir / "silent.sock").string();
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  path.copy(addr.sun_path, sizeof addr.sun_path - 1);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(fd, 4) == 0);  // the kernel accepts; nobody reads or answers
  DockerInjector silent({"unix://" + path, "kfaild-lab-k1"}, LogZone::utc, clock, {},
                        std::chrono::milliseconds(300));
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = silent.pause({"docker_unit", std::chrono::seconds(60)});
  const auto took = std::chrono::steady_clock::now() - t0;
  ::close(fd);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == errc::timeout);
  CHECK(took < std::chrono::seconds(2));
}

TEST_CASE(
    "a container in the host's or another container's network namespace is refused for gray faults",
    "[unit][fault]") {
  const auto host = parseContainerInspect(R"({"State": {"Running": true, "Pid": 42},
      "HostConfig": {"NetworkMode": "host"}})");
  REQUIRE(host);
  CHECK(host->network_mode == "host");
  CHECK(networkModeRefusal("k1", host->network_mode).find("network mode host") !=
        std::string::npos);
  CHECK(networkModeRefusal("k1", "container:c70bbb8f08cd")
            .find("shares that container's network namespace") != std::string::npos);
  CHECK(networkModeRefusal("k1", "bridge").empty());
  CHECK(networkModeRefusal("k1", "kfaild-lab").empty());
  CHECK(networkModeRefusal("k1", "").empty());
}

TEST_CASE(
    "isolating a container with network mode host is refused before anything enters a namespace",
    "[integration][fault]") {
  const kfaild::testing::TempDir dir;
  const kfaild::testing::ManualClock clock;
  const std::string path = (dir / "engine.sock").string();
  // An engine that says the container runs with --network host (and a pid no process has, so
  // that an nsenter of it could not touch anything).
  const std::string engine =
      "import http.server, socketserver, sys, json\n"
      "class H(http.server.BaseHTTPRequestHandler):\n"
      "  def do_GET(self):\n"
      "    if self.path == '/version': body = {'ApiVersion': '1.41', 'MinAPIVersion': '1.12'}\n"
      "    else: body = {'State': {'Running': True, 'Pid': 999999999, 'Status': 'running'},\n"
      "                  'HostConfig': {'NetworkMode': 'host'}, 'Config': {'Tty': False}}\n"
      "    data = json.dumps(body).encode()\n"
      "    self.send_response(200); self.send_header('Content-Type', 'application/json')\n"
      "    self.send_header('Content-Length', str(len(data))); self.end_headers(); "
      "self.wfile.write(data)\n"
      "  def address_string(self): return 'engine'\n"
      "class S(socketserver.UnixStreamServer):\n"
      "  def get_request(self):\n"
      "    r, _ = super().get_request(); return r, ('engine', 0)\n"
      "S(sys.argv[1], H).serve_forever()\n";
  kfaild::testing::ChildProcess server({"/usr/bin/python3", "-c", engine, path},
                                       (dir / "engine.log").string());
  for (int i = 0; i < 100 && !std::filesystem::exists(path); ++i) usleep(20'000);
  REQUIRE(std::filesystem::exists(path));
  DockerInjector injector({"unix://" + path, "kfaild-lab-k1"}, LogZone::utc, clock);
  injector.placeGrayFaults();
  IsolateSpec spec;
  spec.drill = "5";
  spec.from = IsolateFrom::all;
  spec.duration = std::chrono::seconds(10);
  const auto isolated = injector.isolate(spec);
  REQUIRE_FALSE(isolated);
  CHECK(isolated.error().message.find("runs with network mode host") != std::string::npos);
  CHECK(isolated.error().message.find("kfaild-gray") == std::string::npos);
}

}  // namespace docker_injector_test
