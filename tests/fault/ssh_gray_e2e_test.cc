// An isolation from `all` placed over ssh leaves kfaild its way back in: the heal of an abort (the
// drill's own heal, called while the fault holds) and that of a restarted kfaild (a new injector,
// from the journal's place) reach the node over ssh in both modes, over IPv4 and IPv6, behind a
// port relay and behind a port redirect.
//
// The node is a host of the test's own: a network namespace (a veth to this one, 10.79.2.0/24 and
// fd79:2::/64) with a pid namespace whose pid 1 is an sshd listening on 2022, not 22. The pid
// namespace is what makes it a host to hostNamespaceCommand, which places rules only where the
// broker shares the network namespace of pid 1; without it pid 1 would be this machine's init and
// the check would rightly refuse. The broker is a stand-in: a listener on 9092 whose command line
// carries kafka.Kafka, as the injector's pid check asks. kfaild-gray is this build's, through
// `sudo -n` as on a real node.
//
// Every target leaves the inventory's port at 22 and sets its port in the ssh options: only
// `ssh -G` knows where ssh connects. The relay stands for sslh and its kind: port 2443
// forwards to the sshd on 127.0.0.1:2022, so the session's $SSH_CONNECTION names 2022 on loopback
// and only the port from `ssh -G` keeps the way in. The redirect is the opposite case, a NAT in
// front of the sshd: the node's prerouting sends 2122 to 2022 before the rules see the packets, so
// only the session's own port, from $SSH_CONNECTION, keeps it.
//
// Needs root, ip, nft, sshd, ssh-keygen, unshare, sudo and python3; skipped without them.

#include <netdb.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "server/common/clock.h"
#include "server/fault/command.h"
#include "server/fault/gray_fault.h"
#include "server/fault/ssh_injector.h"
#include "tests/support/paths.h"
#include "tests/support/process.h"
#include "tests/support/shell.h"
#include "tests/support/temp_dir.h"

namespace ssh_gray_e2e_test {

using namespace kfaild;
using namespace kfaild::fault;
using namespace std::chrono_literals;

namespace {

// Names and addresses of the test's own, apart from the lab's (10.77.x.0/24, kfl<base>-*) and
// tests/fault/gray_netns_test.cc's (10.79.0.0/24, kfgt-*).
constexpr const char* kNetns = "kfsn";
constexpr const char* kHostVeth = "kfsn-h";
constexpr const char* kHostAddr4 = "10.79.2.1";
constexpr const char* kNodeAddr4 = "10.79.2.2";
constexpr const char* kHostAddr6 = "fd79:2::1";
constexpr const char* kNodeAddr6 = "fd79:2::2";
constexpr int kSshPort = 2022;
constexpr int kRelayPort = 2443;
constexpr int kRedirectPort = 2122;
constexpr int kBrokerPort = 9092;
constexpr const char* kInstance = "i0a1b2c3d";

bool have(const std::string& program) {
  return kfaild::testing::havePath(program);
}

using kfaild::testing::pathOf;

CommandOutput run(const std::vector<std::string>& argv) {
  auto out = runCommand(argv, 20s);
  return out.ok() ? *out : CommandOutput{-1, "", out.error().message};
}

// "ok", "timeout" or "refused": a new TCP connection from this namespace, as a client of the
// broker would open one.
std::string connectTo(const std::string& address, int port,
                      std::chrono::milliseconds timeout = 1s) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &found) != 0)
    return "bad address";
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> info(found, &::freeaddrinfo);
  const int fd = ::socket(info->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return "socket failed";
  const auto named = [](int err) -> std::string {
    if (err == 0) return "ok";
    if (err == ECONNREFUSED) return "refused";
    return std::string("error ") + std::strerror(err);
  };
  int err = ::connect(fd, info->ai_addr, info->ai_addrlen) == 0 ? 0 : errno;
  std::string outcome;
  if (err == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) == 0) {
      outcome = "timeout";
    } else {
      socklen_t len = sizeof err;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    }
  }
  ::close(fd);
  return outcome.empty() ? named(err) : outcome;
}

// The namespace and everything in it, gone on destruction (also after a failed test) and before
// construction (after a run that was killed), so a second run starts clean.
struct NamespaceGuard {
  NamespaceGuard() { teardown(); }
  ~NamespaceGuard() { teardown(); }
  NamespaceGuard(const NamespaceGuard&) = delete;
  NamespaceGuard& operator=(const NamespaceGuard&) = delete;

  static void teardown() {
    // What a killed run left running in the namespace: only processes the test started there.
    std::string pids = run({"ip", "netns", "pids", kNetns}).out;
    for (std::size_t at = 0; at < pids.size();) {
      const auto end = pids.find('\n', at);
      const auto pid = std::atoi(pids.substr(at, end - at).c_str());
      if (pid > 1) ::kill(pid, SIGKILL);
      at = end == std::string::npos ? pids.size() : end + 1;
    }
    run({"ip", "netns", "delete", kNetns});
    // The host end of the veth goes with the namespace, in the kernel's own time (see
    // TwoNamespaces in gray_netns_test.cc): wait, so the next `ip link add` finds the name free.
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < deadline &&
           run({"ip", "link", "show", "dev", kHostVeth}).exit_code == 0)
      std::this_thread::sleep_for(100ms);
  }
};

// The broker stand-in: greets and closes every connection, on IPv4 and IPv6.
constexpr const char* kBrokerCode = R"(import socket
s = socket.socket(socket.AF_INET6)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
s.bind(('::', 9092))
s.listen()
while True:
    c, _ = s.accept()
    c.send(b'hi')
    c.close()
)";

// The relay: every connection to 2443 goes on to the sshd on 127.0.0.1:2022.
constexpr const char* kRelayCode = R"(import socket, threading
def pipe(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass
s = socket.socket(socket.AF_INET6)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
s.bind(('::', 2443))
s.listen()
while True:
    c, _ = s.accept()
    try:
        u = socket.create_connection(('127.0.0.1', 2022))
    except OSError:
        c.close()
        continue
    for a, b in ((c, u), (u, c)):
        threading.Thread(target=pipe, args=(a, b), daemon=True).start()
)";

// The node: keys, the sshd's config, the namespace, and pid 1 of its pid namespace (the sshd),
// with the broker stand-in and the relay beside it.
class SshNode {
 public:
  SshNode() {
    generateKeys();
    writeSshdConfig();
    std::vector<std::vector<std::string>> steps = {
        {"ip", "netns", "add", kNetns},
        {"ip", "link", "add", kHostVeth, "type", "veth", "peer", "name", "eth0", "netns", kNetns},
        {"ip", "addr", "add", std::string(kHostAddr4) + "/24", "dev", kHostVeth},
        // nodad: the address is usable at once, not after duplicate address detection.
        {"ip", "addr", "add", std::string(kHostAddr6) + "/64", "dev", kHostVeth, "nodad"},
        {"ip", "link", "set", kHostVeth, "up"},
        {"ip", "-n", kNetns, "addr", "add", std::string(kNodeAddr4) + "/24", "dev", "eth0"},
        {"ip", "-n", kNetns, "addr", "add", std::string(kNodeAddr6) + "/64", "dev", "eth0",
         "nodad"},
        {"ip", "-n", kNetns, "link", "set", "eth0", "up"},
        {"ip", "-n", kNetns, "link", "set", "lo", "up"},
        {"ip", "netns", "exec", kNetns, "nft",
         "table ip sshnat { chain prerouting { type nat hook prerouting priority dstnat; "
         "tcp dport " +
             std::to_string(kRedirectPort) + " redirect to :" + std::to_string(kSshPort) +
             "; }; }"},
    };
    for (const auto& step : steps) {
      const auto out = run(step);
      INFO(step[0] << " " << step[1] << " " << step[2] << " " << step[3] << ": " << out.err);
      REQUIRE(out.exit_code == 0);
    }
    std::filesystem::create_directories("/run/sshd");  // sshd's privilege separation dir
    // --kill-child: when the unshare dies, so does pid 1, and with it the whole pid namespace.
    const std::string init = R"("$python" -c "$1" kafka.Kafka & echo $! >"$3"
"$python" -c "$2" &
exec "$sshd" -D -e -f "$4"
)";
    node_ = std::make_unique<testing::ChildProcess>(
        std::vector<std::string>{pathOf("ip"),
                                 "netns",
                                 "exec",
                                 kNetns,
                                 pathOf("env"),
                                 "python=" + pathOf("python3"),
                                 "sshd=" + sshd(),
                                 pathOf("unshare"),
                                 "--pid",
                                 "--fork",
                                 "--mount-proc",
                                 "--kill-child",
                                 "sh",
                                 "-c",
                                 init,
                                 "node",
                                 kBrokerCode,
                                 kRelayCode,
                                 pidFile(),
                                 (dir_ / "sshd_config").string()},
        log());
  }

  std::string pidFile() const { return (dir_ / "broker.pid").string(); }
  std::string log() const { return (dir_ / "node.log").string(); }

  // Root on the node at `address`, on `port` by the ssh options alone.
  config::SshTarget target(const std::string& address, int port) const {
    config::SshTarget t;
    t.host = address;
    const passwd* me = ::getpwuid(::geteuid());
    t.user = me != nullptr ? me->pw_name : "root";
    t.identity_file = (dir_ / "client_ed25519").string();
    t.connect_timeout_s = 5;
    t.options = {"Port=" + std::to_string(port), "StrictHostKeyChecking=yes",
                 "UserKnownHostsFile=" + (dir_ / "known_hosts").string(),
                 "GlobalKnownHostsFile=/dev/null"};
    t.pid_command = "cat " + pidFile();
    return t;
  }

 private:
  static std::string sshd() {
    const auto found = pathOf("sshd");
    return found.front() == '/' ? found : "/usr/sbin/sshd";
  }

  void generateKeys() const {
    for (const char* key : {"host_ed25519", "client_ed25519"}) {
      const auto out = run({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C",
                            "kfaild-ssh-gray-test", "-f", (dir_ / key).string()});
      INFO(out.err);
      REQUIRE(out.exit_code == 0);
    }
    const auto host_key = testing::readFile(dir_ / "host_ed25519.pub");
    const auto key = host_key.substr(0, host_key.find(' ', host_key.find(' ') + 1));
    std::ofstream known(dir_ / "known_hosts");
    for (const auto& at : {"[" + std::string(kNodeAddr4) + "]:" + std::to_string(kSshPort),
                           "[" + std::string(kNodeAddr6) + "]:" + std::to_string(kSshPort),
                           "[" + std::string(kNodeAddr4) + "]:" + std::to_string(kRelayPort),
                           "[" + std::string(kNodeAddr4) + "]:" + std::to_string(kRedirectPort)})
      known << at << " " << key << "\n";
  }

  void writeSshdConfig() const {
    const passwd* me = ::getpwuid(::geteuid());
    // StrictModes no: the keys sit below /tmp (see scripts/drill-env/sshd-up).
    std::ofstream config(dir_ / "sshd_config");
    config << "Port " << kSshPort << "\nListenAddress 0.0.0.0\nListenAddress ::\n"
           << "HostKey " << (dir_ / "host_ed25519").string() << "\nPidFile none\n"
           << "AuthorizedKeysFile " << (dir_ / "client_ed25519.pub").string() << "\n"
           << "StrictModes no\nAllowUsers " << (me ? me->pw_name : "root") << "\n"
           << "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
           << "KbdInteractiveAuthentication no\nUsePAM no\nX11Forwarding no\n"
           << "AllowTcpForwarding no\nPrintMotd no\nMaxStartups 50:30:100\nLogLevel VERBOSE\n";
  }

  NamespaceGuard guard_;  // first made, last gone: after the processes in it
  testing::TempDir dir_;
  std::unique_ptr<testing::ChildProcess> node_;
};

std::string nftTables() {
  return run({"ip", "netns", "exec", kNetns, "nft", "list", "tables"}).out;
}

// The elements of the table's set of kept ports ("2022, 2443"), or "" without one.
std::string keptPorts(const std::string& table) {
  const auto set =
      run({"ip", "netns", "exec", kNetns, "nft", "list", "set", "inet", table, "keep"}).out;
  const auto from = set.find("elements = { ");
  if (from == std::string::npos) return {};
  const auto start = from + std::string("elements = { ").size();
  return set.substr(start, set.find(" }", start) - start);
}

// Both ends forget their IPv6 neighbours: the next IPv6 packet needs neighbour discovery first.
void forgetNeighbours() {
  run({"ip", "-6", "neigh", "flush", "dev", kHostVeth});
  run({"ip", "-n", kNetns, "-6", "neigh", "flush", "dev", "eth0"});
}

IsolateSpec fromAll(IsolateMode mode, const std::string& drill) {
  IsolateSpec spec;
  spec.drill = drill;
  spec.from = IsolateFrom::all;
  spec.mode = mode;
  spec.duration = 120s;
  return spec;
}

GrayPlacement placement() {
  GrayPlacement p;
  p.instance = kInstance;
  p.helper = {"sudo", "-n", KFAILD_BINARY_DIR "/server/kfaild-gray"};
  return p;
}

std::unique_ptr<SshInjector> injectorFor(const config::SshTarget& target,
                                         const common::Clock& clock) {
  auto injector = std::make_unique<SshInjector>(target, LogZone::utc, clock);
  injector->placeGrayFaults(placement());
  return injector;
}

bool canRun() {
  return ::geteuid() == 0 && have("ip") && have("nft") && have("ssh") && have("ssh-keygen") &&
         have("unshare") && have("sudo") && have("python3") &&
         (have("sshd") || ::access("/usr/sbin/sshd", X_OK) == 0);
}

}  // namespace

TEST_CASE(
    "an abort's heal and a restarted kfaild's heal reach a node isolated from all over ssh "
    "in both modes, over IPv6, through a relay and through a redirect",
    "[e2e][fault]") {
  if (!canRun()) {
    WARN("not run: needs root, ip, nft, ssh, sshd, ssh-keygen, unshare, sudo and python3");
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  SshNode node;
  const common::SystemClock clock;
  const auto v4 = node.target(kNodeAddr4, kSshPort);
  const auto v6 = node.target(kNodeAddr6, kSshPort);
  const auto relayed = node.target(kNodeAddr4, kRelayPort);
  const auto redirected = node.target(kNodeAddr4, kRedirectPort);
  {
    // Up: the broker answers, and so does the node over ssh, with the broker's pid.
    std::string broker;
    for (int i = 0; i < 100 && (broker = connectTo(kNodeAddr4, kBrokerPort)) != "ok"; ++i)
      std::this_thread::sleep_for(100ms);
    SshInjector injector(v4, LogZone::utc, clock);
    auto state = injector.inspect();
    for (int i = 0; i < 20 && !state; ++i) {
      std::this_thread::sleep_for(250ms);
      state = injector.inspect();
    }
    INFO("node log:\n" << testing::readFile(node.log()));
    REQUIRE(broker == "ok");
    REQUIRE(state);
    REQUIRE(state->running);
  }
  const auto up = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  struct Round {
    const char* how;
    config::SshTarget target;
    int resolved;  // the port ssh -G resolves
    int reached;   // the port the node's rules see, which they must keep
    IsolateMode mode;
    bool restarted;  // healed by a new injector from the journal's place
  };
  const std::vector<Round> rounds = {
      {"IPv4", v4, kSshPort, kSshPort, IsolateMode::drop, false},
      {"IPv6", v6, kSshPort, kSshPort, IsolateMode::reject, true},
      {"the relay", relayed, kRelayPort, kRelayPort, IsolateMode::reject, false},
      {"the relay", relayed, kRelayPort, kRelayPort, IsolateMode::drop, true},
      {"the redirect", redirected, kRedirectPort, kSshPort, IsolateMode::drop, false},
  };
  std::ostringstream figures;
  figures.precision(2);
  int n = 0;
  for (const auto& round : rounds) {
    const bool drop = round.mode == IsolateMode::drop;
    const auto drill = std::to_string(++n);
    INFO("round " << n << ": over " << round.how << ", mode " << (drop ? "drop" : "reject") << ", "
                  << (round.restarted ? "healed by a restarted kfaild" : "healed"));
    auto injector = injectorFor(round.target, clock);
    // The inventory's port is 22; ssh connects where its options say.
    REQUIRE(round.target.port == 22);
    const auto endpoint = injector->effectiveEndpoint();
    REQUIRE(endpoint);
    CHECK(endpoint->port == round.resolved);

    const auto isolated = injector->isolate(fromAll(round.mode, drill));
    INFO((isolated ? isolated->detail : isolated.error().describe()));
    REQUIRE(isolated);
    const auto table = *nftTableName(kInstance, drill);
    const auto kept = keptPorts(table);
    INFO("kept ports: " << kept);
    CHECK(kept.find(std::to_string(round.reached)) != std::string::npos);

    // Cut: a new connection to the broker, over either family. Kept: a new ssh session, after
    // both ends forgot their IPv6 neighbours (neighbour discovery passes the cut).
    forgetNeighbours();
    const std::string cut = drop ? "timeout" : "refused";
    CHECK(connectTo(kNodeAddr4, kBrokerPort) == cut);
    CHECK(connectTo(kNodeAddr6, kBrokerPort) == cut);
    const auto reached = injector->inspect();
    INFO((reached ? reached->detail : reached.error().describe()));
    REQUIRE(reached);
    CHECK(reached->running);

    const auto before = std::chrono::steady_clock::now();
    const auto healed =
        round.restarted ? injectorFor(round.target, clock)->healPlaced(injector->grayPlace(drill))
                        : injector->heal(drill);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - before;
    INFO((healed ? healed->detail : healed.error().describe()));
    REQUIRE(healed);
    CHECK(healed->detail.find("nothing to heal") == std::string::npos);
    CHECK(took < 10s);
    CHECK(nftTables().find(table) == std::string::npos);
    CHECK(connectTo(kNodeAddr4, kBrokerPort) == "ok");
    CHECK(connectTo(kNodeAddr6, kBrokerPort) == "ok");
    figures << (n > 1 ? ", " : "") << std::fixed << took.count() << " s";
  }
  WARN("node up in " << up << " s; each heal over ssh took " << figures.str());
}

}  // namespace ssh_gray_e2e_test
