#include "server/probe/wire_client.h"

#include <fcntl.h>
#include <librdkafka/rdkafka.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <set>
#include <string_view>
#include <utility>

#include "server/common/tls_verify.h"
#include "server/common/worker.h"
#include "server/kafka/probe_wire.h"
#include "server/kafka/sasl.h"

namespace kfaild::probe {
namespace {

namespace pw = kafka::probewire;

constexpr std::int64_t kMetadataRetryUs = 100'000;       // while a partition lacks a leader
constexpr std::int64_t kMetadataRefreshUs = 60'000'000;  // otherwise
constexpr std::int64_t kMetadataTimeoutUs = 2'000'000;
constexpr std::int64_t kReconnectBackoffMinUs = 100'000;
constexpr std::int64_t kFetchMarginUs = 5'000'000;    // beyond the fetch's own wait
constexpr std::int64_t kProduceMarginUs = 1'000'000;  // beyond the broker's ack timeout
// A request unanswered this long (a produce's acks=all normally take milliseconds, a fetch waits
// at most its max wait) asks for metadata: a leader that went silent (a blackhole, a paused
// process) may have been replaced, which no error would tell.
constexpr std::int64_t kOverdueUs = 1'000'000;
constexpr std::size_t kMaxResponseBytes = 64u << 20;
constexpr int kMaxPollMs = 1000;
// Why a connection whose request passed its deadline is failed (as timed out, not as broken).
constexpr std::string_view kNoAnswer = "no answer within the request timeout";
// The most a socket is asked to hold before it reports an answer's rest readable (drain()):
// small enough that the kernel need not grow the receive buffer or clamp the window for it.
constexpr std::size_t kMaxRcvLowat = 32 << 10;
// A session the broker limits (KIP-368) is ended by the client, when idle, past this share of it.
constexpr std::int64_t kReauthenticatePercent = 85;

enum class Role { kProduce, kFetch, kMetadata };

// A connection's way to its first request: TCP connect, the TLS handshake (SSL, SASL_SSL), the
// SASL exchange (SASL_PLAINTEXT, SASL_SSL), then ready. Requests queued before wait in `held`.
enum class Stage { kConnecting, kTls, kSasl, kReady };

struct InFlight {
  std::int32_t correlation = 0;
  Role role = Role::kProduce;
  std::int64_t deadline_mono = 0;
  std::int64_t overdue_mono = 0;  // past this, ask for metadata (kOverdueUs)
  struct Sent {
    std::size_t slot = 0;
    std::int64_t seq = 0;
    std::int64_t position = 0;  // its record's offset delta in its partition's batch
  };
  std::vector<Sent> messages;                                     // produce
  std::vector<pw::FetchTopic> asked;                              // fetch
  std::vector<std::pair<std::size_t, std::int64_t>> fetch_parts;  // fetch: (part, offset asked)
};

struct Conn {
  int fd = -1;
  bool connected = false;  // the TCP connect is done
  Stage stage = Stage::kConnecting;
  std::int32_t node = -1;  // -1: a bootstrap server (metadata only)
  Role role = Role::kProduce;
  std::string host;  // as connected to: the name the broker's certificate must carry
  std::vector<std::uint8_t> out;
  std::size_t out_sent = 0;
  std::vector<std::uint8_t> held;  // requests queued before the connection was ready
  std::vector<std::uint8_t> in;
  std::deque<InFlight> inflight;
  int rcvlowat = 1;    // SO_RCVLOWAT as last set (drain())
  SSL* ssl = nullptr;  // owned; null on a PLAINTEXT or SASL_PLAINTEXT connection
  // Over TLS the session reads from this memory BIO (owned by `ssl`), which the loop fills from
  // the socket (pump()), following the socket's TLS records as they come: what the record begun
  // still lacks of its 5-byte header and of its body (answers(): SO_RCVLOWAT).
  BIO* tls_in = nullptr;
  bool tls_eof = false;  // the socket reached its end; what it held is in tls_in
  std::size_t header_got = 0;
  std::uint8_t header[5] = {};
  std::size_t body_size = 0;
  std::size_t body_left = 0;
  // OpenSSL asked to repeat a write of this many bytes (0: none pending), and waits for these
  // poll events (besides POLLIN, always watched).
  std::size_t tls_retry = 0;
  short tls_wants = 0;
  std::unique_ptr<kafka::SaslExchange> sasl;  // during Stage::kSasl
  bool refused = false;          // the broker refused the client (the class comment in the .h)
  std::int64_t retire_mono = 0;  // a limited session: closed when idle past this (0: never)
  ~Conn() {
    if (ssl != nullptr) SSL_free(ssl);
    if (fd >= 0) ::close(fd);
  }
  bool ready() const { return stage == Stage::kReady; }
  bool writable() const { return stage == Stage::kSasl || stage == Stage::kReady; }
};

struct Part {
  WireTarget target;
  std::int32_t leader = -1;
  std::int32_t last_leader = -1;  // the last leader known, kept while none is
  bool fetching = false;          // in an outstanding fetch
};

std::string errnoText(const char* what, int err) {
  return std::string(what) + ": " + std::strerror(err);
}

// A non-blocking connect; the descriptor, or -1 with the reason.
int connectTo(const std::string& host, const std::string& port, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    why = std::string("resolve ") + host + ": " + ::gai_strerror(rc);
    return -1;
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, ::freeaddrinfo);
  for (auto* a = addresses.get(); a != nullptr; a = a->ai_next) {
    const int fd =
        ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      why = errnoText("socket", errno);
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0 || errno == EINPROGRESS) return fd;
    why = errnoText("connect", errno);
    ::close(fd);
  }
  return -1;
}

}  // namespace

struct WireClient::Impl {
  WireClientOptions options;
  const common::Clock& clock;
  AckSink ack_sink;
  RecordSink record_sink;
  LeaderSink leader_sink;

  int wake_fd = -1;
  common::Worker io;

  mutable std::mutex mutex;  // guards `added` below, stats and described
  std::condition_variable described_cv;
  bool described_once = false;  // every partition's leader known at least once
  std::vector<WireTarget> added;
  WireStats stats;

  // I/O thread only.
  std::vector<Part> parts;              // by slot
  std::vector<std::size_t> slot_index;  // slot -> index in parts (SIZE_MAX: none)
  std::map<std::string, std::vector<std::size_t>, std::less<>> part_by_topic;  // by partition id
  std::vector<std::int64_t> scratch_offsets;  // fetched(): the offset asked, by part
  std::map<std::int32_t, std::pair<std::string, std::string>> brokers;  // node -> host, port
  std::map<std::pair<std::int32_t, Role>, std::unique_ptr<Conn>> conns;
  std::unique_ptr<Conn> metadata_conn;
  std::size_t metadata_rotation = 0;
  std::map<std::int32_t, std::int64_t> backoff_until;  // node -> mono
  std::map<std::int32_t, std::int64_t> backoff_us;
  bool metadata_wanted = true;
  std::int64_t metadata_sent = 0;  // mono time of the last metadata request (0: none yet)
  std::int32_t next_correlation = 1;
  std::vector<WireAck> acks;   // reused per turn
  std::vector<Conn*> abandon;  // overdue connections of brokers that lost partitions (described())
  // Brokers whose last connection refused this client (-1: a bootstrap server), with why.
  std::map<std::int32_t, std::string> refusals;
  kafka::ScramSaltCache scram_cache;  // one PBKDF2 for all the connections (sasl.h)

  // tickOnIoThread(): the ticker and its next time, guarded by tick_mutex (held while it runs).
  std::mutex tick_mutex;
  Ticker ticker;
  common::MonoMicros tick_at = 0;

  Impl(WireClientOptions o, const common::Clock& c, AckSink a, RecordSink r)
      : options(std::move(o)), clock(c), ack_sink(std::move(a)), record_sink(std::move(r)) {
    wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  }
  ~Impl() {
    if (wake_fd >= 0) ::close(wake_fd);
  }

  void wake() const {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(wake_fd, &one, sizeof one);
  }

  void setProblem(std::string problem) {
    std::lock_guard lock(mutex);
    if (!problem.empty() && problem != stats.problem)
      spdlog::debug("probe wire client: {}", problem);
    stats.problem = std::move(problem);
  }

  void addTargets(std::vector<WireTarget> targets) {
    for (auto& t : targets) {
      if (slot_index.size() <= t.slot) slot_index.resize(t.slot + 1, SIZE_MAX);
      slot_index[t.slot] = parts.size();
      auto& by_partition = part_by_topic[t.topic];
      const auto p = static_cast<std::size_t>(t.partition);
      if (by_partition.size() <= p) by_partition.resize(p + 1, SIZE_MAX);
      by_partition[p] = parts.size();
      parts.push_back(Part{std::move(t)});
    }
    metadata_wanted = true;
    metadata_sent = 0;
  }

  // When the next metadata request may leave: 100 ms after the last while one is wanted, else
  // the routine refresh.
  std::int64_t metadataDue() const {
    if (metadata_sent == 0) return 0;
    return metadata_sent + (metadata_wanted ? kMetadataRetryUs : kMetadataRefreshUs);
  }

  std::size_t partIndex(std::string_view topic, std::int32_t partition) const {
    const auto it = part_by_topic.find(topic);
    if (it == part_by_topic.end() || partition < 0 ||
        static_cast<std::size_t>(partition) >= it->second.size()) {
      return SIZE_MAX;
    }
    return it->second[static_cast<std::size_t>(partition)];
  }

  std::vector<std::string> topicNames() const {
    std::set<std::string> names;
    for (const auto& p : parts) names.insert(p.target.topic);
    return {names.begin(), names.end()};
  }

  // --- connections ---------------------------------------------------------------------------

  std::unique_ptr<Conn> open(std::int32_t node, Role role, const std::string& host,
                             const std::string& port) {
    std::string why;
    const int fd = connectTo(host, port, why);
    if (fd < 0) {
      setProblem("broker " + std::to_string(node) + " (" + host + ":" + port + "): " + why);
      return nullptr;
    }
    auto conn = std::make_unique<Conn>();
    conn->fd = fd;
    conn->node = node;
    conn->role = role;
    conn->host = host;
    std::lock_guard lock(mutex);
    ++stats.connections;
    return conn;
  }

  // The connection for `node`'s `role`, opened when needed; null while the broker is in its
  // reconnect backoff or cannot be reached.
  Conn* connFor(std::int32_t node, Role role, std::int64_t now_mono) {
    const auto key = std::make_pair(node, role);
    if (auto it = conns.find(key); it != conns.end()) return it->second.get();
    if (auto b = backoff_until.find(node); b != backoff_until.end() && now_mono < b->second)
      return nullptr;
    const auto broker = brokers.find(node);
    if (broker == brokers.end()) return nullptr;
    auto conn = open(node, role, broker->second.first, broker->second.second);
    if (!conn) {
      brokerFailed(node, now_mono);
      return nullptr;
    }
    auto* raw = conn.get();
    conns[key] = std::move(conn);
    return raw;
  }

  void brokerFailed(std::int32_t node, std::int64_t now_mono) {
    if (node < 0) return;
    auto& backoff = backoff_us[node];
    backoff = backoff == 0
                  ? kReconnectBackoffMinUs
                  : std::min<std::int64_t>(backoff * 2,
                                           std::int64_t{options.reconnect_backoff_max_ms} * 1000);
    backoff_until[node] = now_mono + backoff;
    metadata_wanted = true;
  }

  // Closes `conn`: its outstanding produce requests fail with `error`, its fetch is forgotten.
  void fail(Conn& conn, std::int32_t error, const std::string& why, std::int64_t now_mono) {
    for (auto& f : conn.inflight) {
      for (const auto& m : f.messages) acks.push_back({m.slot, m.seq, error, std::nullopt});
      for (const auto& [part, offset] : f.fetch_parts) parts[part].fetching = false;
    }
    conn.inflight.clear();
    setProblem((conn.node >= 0 ? "broker " + std::to_string(conn.node) : std::string("bootstrap")) +
               ": " + why);
    brokerFailed(conn.node, now_mono);
    metadata_wanted = true;
  }

  void enqueue(Conn& conn, std::vector<std::uint8_t> frame, InFlight f) {
    conn.inflight.push_back(std::move(f));
    if (!conn.ready()) {
      conn.held.insert(conn.held.end(), frame.begin(), frame.end());
      return;
    }
    append(conn, frame);
  }

  static void append(Conn& conn, const std::vector<std::uint8_t>& frame) {
    // A write OpenSSL asked to repeat must find its bytes where they were.
    if (conn.out_sent == conn.out.size() && conn.tls_retry == 0) {
      conn.out.clear();
      conn.out_sent = 0;
    }
    conn.out.insert(conn.out.end(), frame.begin(), frame.end());
  }

  // --- security ------------------------------------------------------------------------------

  // The TCP connect is done: the TLS handshake or the SASL exchange begins, or the connection is
  // ready. False (with why) when no TLS session can be made.
  bool secure(Conn& conn, common::Instant at, std::string& why) {
    if (options.tls) {
      conn.ssl = SSL_new(options.tls->get());
      BIO* in = BIO_new(BIO_s_mem());
      BIO* out = kafka::socketBio(conn.fd);
      if (conn.ssl == nullptr || in == nullptr || out == nullptr) {
        BIO_free(in);
        BIO_free(out);
        why = "TLS: " + kafka::openSslErrors("cannot make a session");
        return false;
      }
      BIO_set_mem_eof_return(in, -1);  // empty: wait for more, not the end
      SSL_set_bio(conn.ssl, in, out);
      conn.tls_in = in;
      SSL_set_mode(conn.ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
      // A compressed record could be shorter than what it carries (answers(): SO_RCVLOWAT).
      SSL_set_options(conn.ssl, SSL_OP_NO_COMPRESSION);
      if (auto bad = common::expectPeerHost(conn.ssl, conn.host, options.tls->verifyHostname())) {
        why = "TLS: " + *bad;
        return false;
      }
      conn.stage = Stage::kTls;
      return handshake(conn, at, why);
    }
    return authenticate(conn, at);
  }

  // One step of the TLS handshake; false (with why) when it failed.
  bool handshake(Conn& conn, common::Instant at, std::string& why) {
    if (!pump(conn, why)) return false;
    ERR_clear_error();
    errno = 0;
    const int rc = SSL_connect(conn.ssl);
    if (rc == 1) {
      conn.tls_wants = 0;
      return authenticate(conn, at);
    }
    const int e = SSL_get_error(conn.ssl, rc);
    if (e == SSL_ERROR_WANT_READ && conn.tls_eof) {
      why = "TLS handshake: connection closed by the broker";
      return false;
    }
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      conn.tls_wants = e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
      return true;
    }
    conn.refused = kafka::tlsRefused(conn.ssl, e);
    why = "TLS handshake: " + kafka::tlsFailure(conn.ssl, e);
    return false;
  }

  // Moves what the socket holds into the TLS session's read BIO, following its records; false
  // (with why) when the socket failed. The socket's end is noted (tls_eof), not failed: what came
  // before it is read first.
  bool pump(Conn& conn, std::string& why) {
    std::uint8_t buffer[65536];
    for (;;) {
      const auto n = ::recv(conn.fd, buffer, sizeof buffer, 0);
      if (n > 0) {
        BIO_write(conn.tls_in, buffer, static_cast<int>(n));
        followRecords(conn, {buffer, static_cast<std::size_t>(n)});
        if (static_cast<std::size_t>(n) < sizeof buffer) return true;
        continue;
      }
      if (n == 0) {
        conn.tls_eof = true;
        return true;
      }
      if (errno == EAGAIN || errno == EINTR) return true;
      why = errnoText("recv", errno);
      return false;
    }
  }

  // TLS records: a 5-byte header (type, version, body length), then the body.
  static void followRecords(Conn& conn, std::span<const std::uint8_t> bytes) {
    while (!bytes.empty()) {
      if (conn.body_left > 0) {
        const auto n = std::min(conn.body_left, bytes.size());
        conn.body_left -= n;
        bytes = bytes.subspan(n);
        continue;
      }
      conn.header[conn.header_got++] = bytes.front();
      bytes = bytes.subspan(1);
      if (conn.header_got == sizeof conn.header) {
        conn.body_size = (std::size_t{conn.header[3]} << 8) | conn.header[4];
        conn.body_left = conn.body_size;
        conn.header_got = 0;
      }
    }
  }

  // The fewest bytes the socket must still deliver before `plaintext` more bytes can be
  // decrypted: a record's body is never shorter than what it carries (no compression), so the
  // rest of the record begun, and what that record cannot hold.
  static std::size_t tlsBytesDue(const Conn& conn, std::size_t plaintext) {
    if (conn.header_got > 0) return sizeof conn.header - conn.header_got + plaintext;
    if (conn.body_left > 0)
      return conn.body_left + (plaintext > conn.body_size ? plaintext - conn.body_size : 0);
    return plaintext;
  }

  // Begins the SASL exchange, or makes the connection ready when the cluster has none.
  bool authenticate(Conn& conn, common::Instant at) {
    if (!options.security.sasl()) {
      ready(conn, at, 0);
      return true;
    }
    conn.stage = Stage::kSasl;
    conn.sasl = std::make_unique<kafka::SaslExchange>(
        options.security, options.client_id, [this] { return next_correlation++; },
        kafka::scramNonce(), &scram_cache);
    append(conn, conn.sasl->begin());
    return true;
  }

  // A SASL answer: the exchange's next frame queued, or the connection ready; false (with why)
  // when the broker refused.
  bool saslAnswered(Conn& conn, std::span<const std::uint8_t> body, common::Instant at,
                    std::string& why) {
    auto step = conn.sasl->answer(body);
    if (!step) {
      conn.refused = true;
      why = "authentication failed: " + step.error().message;
      return false;
    }
    if (!step->done) {
      append(conn, step->frame);
      return true;
    }
    ready(conn, at, conn.sasl->sessionLifetimeMs());
    conn.sasl.reset();
    return true;
  }

  // The broker accepted the client: what waited is sent, and the broker (with the bootstrap
  // servers: the credentials work) is no longer refusing.
  void ready(Conn& conn, common::Instant at, std::int64_t session_lifetime_ms) {
    conn.stage = Stage::kReady;
    if (session_lifetime_ms > 0) {
      conn.retire_mono = at.mono + session_lifetime_ms * 1000 * kReauthenticatePercent / 100;
    }
    if (!conn.held.empty()) {
      append(conn, conn.held);
      conn.held.clear();
    }
    backoff_us.erase(conn.node);
    if (!refusals.empty()) {
      refusals.erase(conn.node);
      refusals.erase(-1);
    }
  }

  // Writes what it can; false when the connection broke.
  bool flush(Conn& conn, std::string& why) {
    while (conn.connected && conn.writable() && conn.out_sent < conn.out.size()) {
      if (conn.ssl != nullptr) {
        if (!tlsWrite(conn, why)) return false;
        if (conn.tls_retry != 0) return true;
        continue;
      }
      const auto n = ::send(conn.fd, conn.out.data() + conn.out_sent,
                            conn.out.size() - conn.out_sent, MSG_NOSIGNAL);
      if (n > 0) {
        conn.out_sent += static_cast<std::size_t>(n);
      } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return true;
      } else {
        why = errnoText("send", errno);
        return false;
      }
    }
    return true;
  }

  // One SSL_write of what is unsent (or of what OpenSSL asked to repeat); false when it failed.
  bool tlsWrite(Conn& conn, std::string& why) {
    const auto size = conn.tls_retry != 0
                          ? conn.tls_retry
                          : std::min<std::size_t>(conn.out.size() - conn.out_sent, 1u << 30);
    ERR_clear_error();
    errno = 0;
    const int n = SSL_write(conn.ssl, conn.out.data() + conn.out_sent, static_cast<int>(size));
    if (n > 0) {
      conn.out_sent += static_cast<std::size_t>(n);
      conn.tls_retry = 0;
      conn.tls_wants = 0;
      return true;
    }
    const int e = SSL_get_error(conn.ssl, n);
    if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
      conn.tls_retry = size;
      conn.tls_wants = e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
      return true;
    }
    conn.refused = kafka::tlsRefused(conn.ssl, e);
    why = "TLS send: " + kafka::tlsFailure(conn.ssl, e);
    return false;
  }

  // Reads into `conn.in` what the socket (or the TLS session) has; false when it broke, what came
  // before kept (a broker refusing the credentials answers, then closes).
  bool receive(Conn& conn, std::string& why) {
    std::uint8_t buffer[65536];
    if (conn.ssl != nullptr) {
      if (!pump(conn, why)) return false;
      // Until the read BIO is empty but for a record begun: nothing decryptable is left behind a
      // socket that poll() no longer reports readable.
      for (;;) {
        ERR_clear_error();
        errno = 0;
        const int n = SSL_read(conn.ssl, buffer, sizeof buffer);
        if (n > 0) {
          conn.in.insert(conn.in.end(), buffer, buffer + n);
          continue;
        }
        const int e = SSL_get_error(conn.ssl, n);
        if (e == SSL_ERROR_WANT_READ && conn.tls_eof) {
          why = "connection closed by the broker";
          return false;
        }
        if (e == SSL_ERROR_WANT_READ) return true;
        if (e == SSL_ERROR_WANT_WRITE) {
          conn.tls_wants = POLLOUT;
          return true;
        }
        if (e == SSL_ERROR_ZERO_RETURN) {
          why = "connection closed by the broker";
          return false;
        }
        conn.refused = kafka::tlsRefused(conn.ssl, e);
        why = "TLS receive: " + kafka::tlsFailure(conn.ssl, e);
        return false;
      }
    }
    for (;;) {
      const auto n = ::recv(conn.fd, buffer, sizeof buffer, 0);
      if (n > 0) {
        conn.in.insert(conn.in.end(), buffer, buffer + n);
        if (static_cast<std::size_t>(n) < sizeof buffer) break;
        continue;
      }
      if (n == 0) {
        why = "connection closed by the broker";
        return false;
      }
      if (errno == EAGAIN || errno == EINTR) break;
      why = errnoText("recv", errno);
      return false;
    }
    return true;
  }

  // Reads what is there and hands over every whole answer; false when the connection broke.
  bool drain(Conn& conn, common::Instant at, std::string& why) {
    std::string closed;
    const bool open = receive(conn, closed);
    if (!answers(conn, at, why)) return false;
    if (!open) why = std::move(closed);
    return open;
  }

  // Hands over every whole answer in `conn.in`; false when one broke the connection.
  bool answers(Conn& conn, common::Instant at, std::string& why) {
    std::size_t pos = 0;
    while (conn.in.size() - pos >= 4) {
      const auto size = (std::uint32_t{conn.in[pos]} << 24) |
                        (std::uint32_t{conn.in[pos + 1]} << 16) |
                        (std::uint32_t{conn.in[pos + 2]} << 8) | std::uint32_t{conn.in[pos + 3]};
      if (size < 4 || size > kMaxResponseBytes) {
        why = "answer of " + std::to_string(size) + " bytes is not a Kafka answer";
        return false;
      }
      if (conn.in.size() - pos - 4 < size) break;
      if (conn.stage == Stage::kSasl) {
        if (!saslAnswered(conn, {conn.in.data() + pos + 4, size}, at, why)) return false;
        pos += 4 + size;
        continue;
      }
      if (conn.inflight.empty()) {
        why = "an answer to no request";
        return false;
      }
      InFlight f = std::move(conn.inflight.front());
      conn.inflight.pop_front();
      const std::span<const std::uint8_t> body(conn.in.data() + pos + 4, size);
      if (!answer(conn, f, body, at, why)) return false;
      pos += 4 + size;
    }
    conn.in.erase(conn.in.begin(), conn.in.begin() + static_cast<std::ptrdiff_t>(pos));
    // A broker writes a fetch answer in pieces (a partition's records at a time), and each piece
    // would wake this thread to read a part it cannot use yet: at 100 partitions 33 wake-ups a
    // tick, 148 with the thread at the sender's real-time priority. The rest of an answer begun is
    // asked for whole (up to kMaxRcvLowat), so the socket reports it readable once it is there.
    // The answer's time does not move: it is read when its last byte is in, as before.
    std::size_t want = 1;
    if (conn.in.size() >= 4) {
      const auto size = (std::size_t{conn.in[0]} << 24) | (std::size_t{conn.in[1]} << 16) |
                        (std::size_t{conn.in[2]} << 8) | std::size_t{conn.in[3]};
      want = 4 + size - conn.in.size();
    } else if (!conn.in.empty()) {
      want = 4 - conn.in.size();
    }
    // Over TLS the socket holds records, not answers: asked for what must still come in them.
    if (conn.ssl != nullptr) want = std::max<std::size_t>(1, tlsBytesDue(conn, want));
    const int lowat = static_cast<int>(std::min(want, kMaxRcvLowat));
    if (lowat != conn.rcvlowat) {
      if (::setsockopt(conn.fd, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof lowat) == 0)
        conn.rcvlowat = lowat;
    }
    return true;
  }

  // --- answers -------------------------------------------------------------------------------

  bool answer(Conn& conn, InFlight& f, std::span<const std::uint8_t> body, common::Instant at,
              std::string& why) {
    switch (f.role) {
      case Role::kProduce:
        return produced(f, body, why);
      case Role::kFetch:
        return fetched(f, body, at, why);
      case Role::kMetadata:
        return described(conn, f, body, at, why);
    }
    return true;
  }

  bool produced(InFlight& f, std::span<const std::uint8_t> body, std::string& why) {
    auto results = pw::decodeProduceResponse(body, f.correlation);
    if (!results) {
      why = results.error().message;
      return false;
    }
    // The request held one batch per (topic, partition), a message's record at its position in
    // it: its offset is the batch's base offset plus that position.
    std::vector<const pw::ProduceResult*> by_part(parts.size(), nullptr);
    for (const auto& r : *results) {
      if (const auto index = partIndex(r.topic, r.partition); index != SIZE_MAX)
        by_part[index] = &r;
    }
    for (const auto& m : f.messages) {
      const pw::ProduceResult* r = by_part[slot_index[m.slot]];
      if (r == nullptr) {
        acks.push_back({m.slot, m.seq, RD_KAFKA_RESP_ERR__BAD_MSG, std::nullopt});
        continue;
      }
      if (r->error != 0) {
        metadata_wanted = true;
        acks.push_back({m.slot, m.seq, r->error, std::nullopt});
      } else {
        acks.push_back({m.slot, m.seq, 0, r->base_offset + m.position});
      }
    }
    return true;
  }

  bool fetched(InFlight& f, std::span<const std::uint8_t> body, common::Instant at,
               std::string& why) {
    scratch_offsets.assign(parts.size(), -1);
    for (const auto& [part, offset] : f.fetch_parts) {
      parts[part].fetching = false;
      scratch_offsets[part] = offset;
    }
    auto partitions = pw::decodeFetchResponse(body, f.correlation, f.asked);
    if (!partitions) {
      // A top-level error answers the whole fetch; the connection is still sound.
      if (partitions.error().message.find("malformed") != std::string::npos) {
        why = partitions.error().message;
        return false;
      }
      setProblem("fetch: " + partitions.error().message);
      metadata_wanted = true;
      return true;
    }
    std::vector<WireRecord> records;
    for (auto& p : *partitions) {
      const auto index = partIndex(p.topic, p.partition);
      if (index == SIZE_MAX) continue;
      Part* part = &parts[index];
      // Moved on meanwhile (a fetch from another leader answered first): not read twice.
      if (scratch_offsets[index] < 0 || part->target.fetch_offset != scratch_offsets[index])
        continue;
      if (p.error != 0) {
        metadata_wanted = true;
        // Out of range below the log's start: those messages are gone (retention), and reading
        // resumes at the start. Above its end (a leader that is behind for a moment): asked again.
        if (p.error == RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE && p.log_start_offset >= 0 &&
            part->target.fetch_offset < p.log_start_offset) {
          part->target.fetch_offset = p.log_start_offset;
        }
        continue;
      }
      if (!p.problem.empty())
        setProblem(p.topic + "[" + std::to_string(p.partition) + "]: " + p.problem);
      for (const auto& r : p.records) records.push_back({part->target.slot, r.offset, r.value});
      part->target.fetch_offset = p.next_offset;
    }
    if (!records.empty()) record_sink(records, at);
    return true;
  }

  bool described(Conn& conn, InFlight& f, std::span<const std::uint8_t> body, common::Instant at,
                 std::string& why) {
    auto answer = pw::decodeMetadataResponse(body, f.correlation);
    if (!answer) {
      why = answer.error().message;
      return false;
    }
    for (const auto& b : answer->brokers) brokers[b.node] = {b.host, std::to_string(b.port)};
    std::vector<std::int32_t> old_leaders(parts.size());
    for (std::size_t i = 0; i < parts.size(); ++i)
      old_leaders[i] = std::exchange(parts[i].leader, -1);
    for (const auto& t : answer->topics) {
      for (const auto& p : t.partitions) {
        // A partition error with a leader named (REPLICA_NOT_AVAILABLE while a follower is
        // offline) still names where to send.
        if (const auto index = partIndex(t.name, p.partition); index != SIZE_MAX && p.leader >= 0) {
          auto& part = parts[index];
          part.leader = p.leader;
          if (p.leader >= 0 && p.leader != part.last_leader) {
            if (part.last_leader >= 0 && leader_sink) {
              leader_sink(t.name, p.partition, part.last_leader, p.leader, p.leader_epoch, at);
            }
            part.last_leader = p.leader;
          }
        }
      }
    }
    bool complete = true;
    std::set<std::int32_t> moved_from;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (parts[i].leader < 0 || brokers.count(parts[i].leader) == 0) complete = false;
      if (old_leaders[i] >= 0 && parts[i].leader >= 0 && parts[i].leader != old_leaders[i]) {
        moved_from.insert(old_leaders[i]);
      }
    }
    // A broker that lost partitions while its requests are overdue is given up on now: its
    // answers, if they ever come, would be for a leader that no longer is, and the moved
    // partitions' sends and fetches go to their new leaders from the next turn.
    for (const auto& [key, c] : conns) {
      const bool lost_some = moved_from.count(key.first) != 0;
      if (lost_some && !c->inflight.empty() && c->inflight.front().overdue_mono <= at.mono) {
        abandon.push_back(c.get());
      }
    }
    metadata_wanted = !complete;
    (void)conn;
    if (complete) {
      setProblem({});
      std::lock_guard lock(mutex);
      if (!std::exchange(described_once, true)) described_cv.notify_all();
    }
    return true;
  }

  // --- requests ------------------------------------------------------------------------------

  void sendMetadata(std::int64_t now_mono) {
    if (metadata_conn && !metadata_conn->inflight.empty()) return;
    if (now_mono < metadataDue()) return;
    if (!metadata_conn) {
      // Known brokers first, then the bootstrap servers, one after another on each failure.
      std::vector<std::tuple<std::int32_t, std::string, std::string>> candidates;
      for (const auto& [node, address] : brokers) {
        if (auto b = backoff_until.find(node); b == backoff_until.end() || now_mono >= b->second) {
          candidates.emplace_back(node, address.first, address.second);
        }
      }
      for (const auto& [host, port] : options.bootstrap) candidates.emplace_back(-1, host, port);
      if (candidates.empty()) return;
      const auto& [node, host, port] = candidates[metadata_rotation++ % candidates.size()];
      metadata_conn = open(node, Role::kMetadata, host, port);
      if (!metadata_conn) {
        brokerFailed(node, now_mono);
        metadata_sent = now_mono;
        return;
      }
    }
    InFlight f;
    f.correlation = next_correlation++;
    f.role = Role::kMetadata;
    f.deadline_mono = now_mono + kMetadataTimeoutUs;
    enqueue(*metadata_conn,
            pw::encodeMetadataRequest(f.correlation, options.client_id, topicNames()),
            std::move(f));
    metadata_sent = now_mono;
    std::lock_guard lock(mutex);
    ++stats.metadata_requests;
  }

  void sendProduce(std::vector<WireSend>& messages, std::int64_t now_mono) {
    // By leader: one request per broker with one batch per partition.
    std::map<std::int32_t, std::vector<WireSend*>> by_leader;
    for (auto& m : messages) {
      const auto index = m.slot < slot_index.size() ? slot_index[m.slot] : SIZE_MAX;
      if (index == SIZE_MAX) {
        acks.push_back({m.slot, m.seq, RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION, std::nullopt});
        continue;
      }
      const auto leader = parts[index].leader;
      if (leader < 0) {
        acks.push_back({m.slot, m.seq, RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE, std::nullopt});
        metadata_wanted = true;
        continue;
      }
      by_leader[leader].push_back(&m);
    }
    for (auto& [leader, list] : by_leader) {
      Conn* conn = connFor(leader, Role::kProduce, now_mono);
      if (conn == nullptr) {
        for (auto* m : list)
          acks.push_back({m->slot, m->seq, RD_KAFKA_RESP_ERR__TRANSPORT, std::nullopt});
        continue;
      }
      std::vector<pw::ProduceTopic> topics;
      InFlight f;
      f.correlation = next_correlation++;
      f.role = Role::kProduce;
      f.deadline_mono =
          now_mono + std::int64_t{options.request_timeout_ms} * 1000 + kProduceMarginUs;
      f.overdue_mono = now_mono + kOverdueUs;
      // Normally one message per partition; more when ticks queued up while this thread was held
      // up. They share their partition's one batch, in the order they were sent.
      std::map<std::size_t, std::vector<const WireSend*>> by_part;
      for (auto* m : list) by_part[slot_index[m->slot]].push_back(m);
      std::vector<pw::OutRecord> records;
      for (const auto& [index, sends] : by_part) {
        const auto& target = parts[index].target;
        auto t = std::find_if(topics.begin(), topics.end(),
                              [&](const pw::ProduceTopic& x) { return x.name == target.topic; });
        if (t == topics.end()) t = topics.insert(topics.end(), pw::ProduceTopic{target.topic, {}});
        pw::ProducePartition p;
        p.partition = target.partition;
        records.clear();
        for (std::size_t k = 0; k < sends.size(); ++k) {
          records.push_back({sends[k]->value, sends[k]->timestamp_ms});
          f.messages.push_back({sends[k]->slot, sends[k]->seq, static_cast<std::int64_t>(k)});
        }
        pw::appendRecordBatch(p.records, records);
        t->partitions.push_back(std::move(p));
      }
      enqueue(*conn,
              pw::encodeProduceRequest(f.correlation, options.client_id, options.request_timeout_ms,
                                       topics),
              std::move(f));
      std::lock_guard lock(mutex);
      ++stats.produce_requests;
    }
  }

  void sendFetches(std::int64_t now_mono) {
    std::map<std::int32_t, std::vector<std::size_t>> by_leader;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (parts[i].leader >= 0 && !parts[i].fetching) by_leader[parts[i].leader].push_back(i);
    }
    for (auto& [leader, list] : by_leader) {
      const auto key = std::make_pair(leader, Role::kFetch);
      if (auto it = conns.find(key); it != conns.end() && !it->second->inflight.empty()) continue;
      Conn* conn = connFor(leader, Role::kFetch, now_mono);
      if (conn == nullptr) continue;
      InFlight f;
      f.correlation = next_correlation++;
      f.role = Role::kFetch;
      f.deadline_mono = now_mono + std::int64_t{options.fetch_max_wait_ms} * 1000 + kFetchMarginUs;
      f.overdue_mono = f.deadline_mono - kFetchMarginUs + kOverdueUs;
      const auto per_partition = std::max<std::int32_t>(
          64 << 10, options.fetch_max_bytes /
                        static_cast<std::int32_t>(std::max<std::size_t>(1, list.size())));
      for (const auto index : list) {
        Part* p = &parts[index];
        f.fetch_parts.emplace_back(index, p->target.fetch_offset);
        auto t = std::find_if(f.asked.begin(), f.asked.end(),
                              [&](const pw::FetchTopic& x) { return x.name == p->target.topic; });
        if (t == f.asked.end())
          t = f.asked.insert(f.asked.end(), pw::FetchTopic{p->target.topic, {}});
        t->partitions.push_back({p->target.partition, p->target.fetch_offset, per_partition});
        p->fetching = true;
      }
      auto frame =
          pw::encodeFetchRequest(f.correlation, options.client_id, options.fetch_max_wait_ms, 1,
                                 options.fetch_max_bytes, f.asked);
      enqueue(*conn, std::move(frame), std::move(f));
      std::lock_guard lock(mutex);
      ++stats.fetch_requests;
    }
  }

  // --- the loop ------------------------------------------------------------------------------

  // Connections a turn of the loop found broken, each with the reason it is failed with.
  struct Broken {
    std::vector<Conn*> conns;
    std::vector<std::string> reasons;
    bool has(const Conn* c) const {
      return std::find(conns.begin(), conns.end(), c) != conns.end();
    }
    void add(Conn* c, std::string reason) {
      conns.push_back(c);
      reasons.push_back(std::move(reason));
    }
  };

  // The descriptors one turn polls: the wake fd first, then polled[i - 1] at fds[i].
  struct PollSet {
    std::vector<pollfd> fds;
    std::vector<Conn*> polled;
  };

  // One turn: send what is due, wait for the sockets (or a tick, a deadline, a wake), serve
  // them, tick, then fail what broke or timed out and send the tick's messages.
  void loop() {
    PollSet poll;
    while (!io.stopRequested()) {
      const auto now_mono = clock.monoNow();
      sendMetadata(now_mono);
      sendFetches(now_mono);
      const auto next = watchSockets(poll, now_mono);
      // To the µs: a tick is due at its time, not at the next whole millisecond.
      const auto wait_us =
          std::clamp<std::int64_t>(next - now_mono, 0, std::int64_t{kMaxPollMs} * 1000);
      const timespec wait{static_cast<time_t>(wait_us / 1'000'000),
                          static_cast<long>(wait_us % 1'000'000) * 1000};
      const int rc = ::ppoll(poll.fds.data(), poll.fds.size(), &wait, nullptr);
      if (rc < 0 && errno != EINTR) {
        setProblem(errnoText("poll", errno));
        continue;
      }
      const auto at = clock.now();
      acks.clear();
      Broken broken;
      serveSockets(poll, at, broken);
      // The answers read this turn reach the ledgers before a tick asks them what to hold back.
      if (!acks.empty()) {
        ack_sink(acks, at);
        acks.clear();
      }
      auto sends = tickIfDue();
      takeAddedTargets();
      const auto after = clock.monoNow();
      findTimedOut(after, broken);
      failBroken(broken, after);
      retireSessions(after);
      if (!sends.empty()) sendTick(sends, after);
      if (!acks.empty()) ack_sink(acks, clock.now());
    }
  }

  // Fills `poll` with the wake fd and every connection; returns when the loop must wake at the
  // latest (a tick, a request's deadline or overdue time, a backoff's end, the metadata's due).
  std::int64_t watchSockets(PollSet& poll, std::int64_t now_mono) {
    std::int64_t next = now_mono + std::int64_t{kMaxPollMs} * 1000;
    {
      std::lock_guard lock(tick_mutex);
      if (ticker) next = std::min(next, tick_at);
    }
    if (!metadata_conn || metadata_conn->inflight.empty())
      next = std::min(next, std::max(metadataDue(), now_mono + 1000));
    poll.fds.clear();
    poll.polled.clear();
    poll.fds.push_back({wake_fd, POLLIN, 0});
    auto watch = [&](Conn* c) {
      short events = POLLIN;
      if (!c->connected || (c->writable() && c->out_sent < c->out.size())) events |= POLLOUT;
      events |= c->tls_wants;
      if (c->retire_mono != 0) next = std::min(next, std::max(c->retire_mono, now_mono + 1000));
      poll.fds.push_back({c->fd, events, 0});
      poll.polled.push_back(c);
      for (const auto& f : c->inflight) next = std::min(next, f.deadline_mono);
      if (!c->inflight.empty() && c->inflight.front().overdue_mono > now_mono) {
        next = std::min(next, c->inflight.front().overdue_mono);
      }
    };
    for (auto& [key, c] : conns) watch(c.get());
    if (metadata_conn) watch(metadata_conn.get());
    for (const auto& [node, until] : backoff_until) {
      if (until > now_mono) next = std::min(next, until);
    }
    return next;
  }

  // Completes connects, reads answers and writes what is queued on every ready socket; a socket
  // that fails goes to `broken`. Then empties the wake fd.
  void serveSockets(const PollSet& poll, common::Instant at, Broken& broken) {
    for (std::size_t i = 1; i < poll.fds.size(); ++i) {
      Conn* c = poll.polled[i - 1];
      const auto revents = poll.fds[i].revents;
      if (revents == 0) continue;
      std::string why;
      bool ok = true;
      if (!c->connected) {
        int so_error = 0;
        socklen_t len = sizeof so_error;
        if (::getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &so_error, &len) != 0) so_error = errno;
        if (so_error != 0) {
          why = errnoText("connect", so_error);
          ok = false;
        } else if ((revents & (POLLOUT | POLLIN)) != 0) {
          c->connected = true;
          ok = secure(*c, at, why);
        }
      } else if (c->stage == Stage::kTls) {
        ok = handshake(*c, at, why);
      }
      // Over TLS a read may wait for the socket to be writable, and a write for it to be readable.
      const auto readable = POLLIN | POLLHUP | POLLERR | (c->ssl != nullptr ? POLLOUT : 0);
      if (ok && c->writable() && (revents & readable) != 0) ok = drain(*c, at, why);
      if (ok && c->writable() && c->out_sent < c->out.size()) ok = flush(*c, why);
      if (!ok) broken.add(c, why);
    }
    if ((poll.fds[0].revents & POLLIN) != 0) {
      std::uint64_t count = 0;
      [[maybe_unused]] const auto n = ::read(wake_fd, &count, sizeof count);
    }
  }

  // The ticker's sends when its tick is due; none otherwise.
  std::vector<WireSend> tickIfDue() {
    std::vector<WireSend> sends;
    std::lock_guard lock(tick_mutex);
    if (ticker && clock.monoNow() >= tick_at) tick_at = ticker(sends);
    return sends;
  }

  void takeAddedTargets() {
    std::vector<WireTarget> more;
    {
      std::lock_guard lock(mutex);
      more.swap(added);
    }
    if (!more.empty()) addTargets(std::move(more));
  }

  // A request unanswered past its deadline breaks its connection (the answers come in order, so
  // nothing behind it can come first); one only overdue asks for metadata; a connection whose
  // partitions moved while its answer was overdue is abandoned.
  void findTimedOut(std::int64_t after, Broken& broken) {
    auto expired = [&](Conn* c) {
      return !c->inflight.empty() && c->inflight.front().deadline_mono <= after && !broken.has(c);
    };
    for (auto& [key, c] : conns) {
      if (expired(c.get())) broken.add(c.get(), std::string(kNoAnswer));
    }
    for (auto& [key, c] : conns) {
      if (!c->inflight.empty() && c->inflight.front().overdue_mono <= after) metadata_wanted = true;
    }
    for (Conn* c : abandon) {
      if (!broken.has(c))
        broken.add(c, "its partitions moved to another leader while its answer was overdue");
    }
    abandon.clear();
    if (metadata_conn && expired(metadata_conn.get())) {
      broken.add(metadata_conn.get(), "no metadata answer within 2 s");
    }
  }

  // Fails what each broken connection has in flight and closes it.
  void failBroken(const Broken& broken, std::int64_t after) {
    for (std::size_t i = 0; i < broken.conns.size(); ++i) {
      Conn* c = broken.conns[i];
      const bool timed_out = broken.reasons[i] == kNoAnswer;
      std::int32_t error = timed_out ? RD_KAFKA_RESP_ERR__TIMED_OUT : RD_KAFKA_RESP_ERR__TRANSPORT;
      if (c->refused) {
        error = RD_KAFKA_RESP_ERR__AUTHENTICATION;
        refusals[c->node] =
            (c->node >= 0 ? "broker " + std::to_string(c->node) : std::string("bootstrap")) + ": " +
            broken.reasons[i];
        std::lock_guard lock(mutex);
        ++stats.authentication_failures;
      }
      fail(*c, error, broken.reasons[i], after);
      if (c == metadata_conn.get()) {
        metadata_conn.reset();
      } else {
        conns.erase(std::make_pair(c->node, c->role));
      }
    }
  }

  // Closes, without failing anything, the idle connections whose limited session (KIP-368) is
  // near its end: the next request opens a new one, authenticated again.
  void retireSessions(std::int64_t after) {
    const auto due = [&](const Conn& c) {
      return c.retire_mono != 0 && after >= c.retire_mono && c.inflight.empty() &&
             c.out_sent == c.out.size();
    };
    std::erase_if(conns, [&](const auto& entry) { return due(*entry.second); });
    if (metadata_conn && due(*metadata_conn)) metadata_conn.reset();
  }

  // Sends a tick's messages at once rather than at the next turn's poll.
  void sendTick(std::vector<WireSend>& sends, std::int64_t after) {
    sendProduce(sends, after);
    for (auto& [key, c] : conns) {
      std::string why;
      if (c->writable() && !flush(*c, why)) {
        // Seen as broken on the next turn's poll.
        spdlog::debug("probe wire client: broker {}: {}", c->node, why);
      }
    }
  }
};

WireClient::WireClient(WireClientOptions options, const common::Clock& clock, AckSink acks,
                       RecordSink records)
    : impl_(
          std::make_unique<Impl>(std::move(options), clock, std::move(acks), std::move(records))) {}

WireClient::~WireClient() {
  stop();
}

void WireClient::start(std::vector<WireTarget> targets,
                       std::chrono::milliseconds wait_for_leaders) {
  impl_->addTargets(std::move(targets));
  impl_->io.start("kfaild:wire", [this] { impl_->loop(); });
  std::unique_lock lock(impl_->mutex);
  impl_->described_cv.wait_for(lock, wait_for_leaders, [this] { return impl_->described_once; });
}

void WireClient::onLeaderChange(LeaderSink sink) {
  impl_->leader_sink = std::move(sink);
}

void WireClient::add(std::vector<WireTarget> targets) {
  {
    std::lock_guard lock(impl_->mutex);
    for (auto& t : targets) impl_->added.push_back(std::move(t));
  }
  impl_->wake();
}

void WireClient::tickOnIoThread(Ticker tick, common::MonoMicros first) {
  {
    std::lock_guard lock(impl_->tick_mutex);
    impl_->ticker = std::move(tick);
    impl_->tick_at = first;
  }
  impl_->wake();
}

void WireClient::stopTicking() {
  std::lock_guard lock(impl_->tick_mutex);
  impl_->ticker = nullptr;
}

void WireClient::stop() {
  impl_->io.requestStop();
  impl_->wake();
  impl_->io.stop();
}

WireStats WireClient::stats() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->stats;
}

const std::string* WireClient::authenticationFailure(std::size_t slot) const {
  const auto& refusals = impl_->refusals;
  if (refusals.empty()) return nullptr;
  const auto index = slot < impl_->slot_index.size() ? impl_->slot_index[slot] : SIZE_MAX;
  const auto leader = index == SIZE_MAX ? -1 : impl_->parts[index].leader;
  if (leader < 0) return &refusals.begin()->second;
  const auto it = refusals.find(leader);
  return it == refusals.end() ? nullptr : &it->second;
}

}  // namespace kfaild::probe
