#pragma once

// kfaild's own probe client (`probe.client: wire`): the probe's sends and reads spoken to the
// brokers directly, one Produce request per leader broker per tick with every partition it
// leads, and one Fetch request per leader broker outstanding at any time. librdkafka's producer
// sends one Produce request per partition and wakes its broker thread for each partition's first
// message, and its consumer's fetches come back one partition at a time; at tens of partitions
// those wake-ups were most of the probe's CPU (docs/PERFORMANCE.md).
//
// What it does not do, on purpose: retry. A message whose request fails (an error from the
// broker, a connection that breaks or refuses, no answer within the request timeout, no leader
// known) fails at that moment with the error, and the partition's next tick is the next try;
// the ack gap ends at the first ack after a stall, as with librdkafka's retries. Client
// discovery: any error, broken connection or answer overdue by a second (a silent leader sends no
// error) asks for metadata at once and then every 100 ms until every probed partition has a
// leader; otherwise every 60 s. A broker that loses partitions while its answers are overdue is
// given up on then (its outstanding sends fail), not at the request timeout.
//
// One I/O thread ("kfaild:wire") owns every socket: per broker a produce connection and a fetch
// connection (a fetch waiting at the broker must not hold produce answers back on the same
// connection), and one metadata connection to any broker. Timestamps are the I/O thread's
// reading of the clock as the answer is read off the socket: once its last byte is in, which
// the socket reports alone (SO_RCVLOWAT), not at each piece a broker writes. The probe's ticks
// run on it too (tickOnIoThread), so that per tick no thread wakes another.
//
// Secured as the cluster's other clients (server/kafka/security.h): TLS (the CA, host name and
// client certificate of tls.h) and SASL PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (sasl.h), each
// connection a state machine on the I/O thread: TCP connect, TLS handshake, SASL exchange, then
// requests, which wait in the connection until it is ready. Nothing of it blocks the loop but
// SCRAM's PBKDF2 (a few milliseconds per connection). A broker that refuses the client (the SASL
// mechanism or credentials, the TLS session: a certificate not verified either way) is the
// client's problem, not the cluster's: its connection fails, the problem says "authentication
// failed" and authenticationFailure() tells the ticker to refuse the partition's sends until a
// connection to that broker is accepted again. A session lifetime the broker gives (KIP-368,
// connections.max.reauth.ms) is honoured by reconnecting, and authenticating again, when the
// connection is idle before 85 % of it has passed.
//
// Thread-safe: add(), tickOnIoThread(), stopTicking(), stats() from any thread; the sinks
// and the ticker run on the I/O thread.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "server/common/clock.h"
#include "server/kafka/security.h"
#include "server/kafka/tls.h"

namespace kfaild::probe {

struct WireTarget {
  std::string topic;
  std::int32_t partition = 0;
  std::size_t slot = 0;           // the caller's index, given back with every ack and record
  std::int64_t fetch_offset = 0;  // where reading starts
};

struct WireSend {
  std::size_t slot = 0;
  std::int64_t seq = 0;
  std::vector<std::uint8_t> value;
  std::int64_t timestamp_ms = 0;
};

struct WireAck {
  std::size_t slot = 0;
  std::int64_t seq = 0;
  std::int32_t error = 0;  // 0, a Kafka error code, or a librdkafka local error (negative)
  std::optional<std::int64_t> offset;
};

struct WireRecord {
  std::size_t slot = 0;
  std::int64_t offset = 0;
  std::span<const std::uint8_t> value;  // valid during the sink's call only
};

struct WireClientOptions {
  std::vector<std::pair<std::string, std::string>> bootstrap;  // host, port
  std::string client_id = "kfaild-probe";
  std::int32_t request_timeout_ms = 30'000;  // the broker's wait for acks=all, and the client's
  std::int32_t fetch_max_wait_ms = 500;
  std::int32_t fetch_max_bytes = 4 << 20;
  std::int32_t reconnect_backoff_max_ms = 1000;
  // The cluster's security, and with TLS its context (made once, shared by the connections).
  kafka::ClientSecurity security;
  std::shared_ptr<const kafka::TlsContext> tls;
};

struct WireStats {
  std::uint64_t produce_requests = 0;
  std::uint64_t fetch_requests = 0;
  std::uint64_t metadata_requests = 0;
  std::uint64_t connections = 0;              // opened, over the client's life
  std::string problem;                        // the last one, empty once metadata answers again
  std::uint64_t authentication_failures = 0;  // connections a broker refused (the class comment)
};

class WireClient {
 public:
  using AckSink = std::function<void(std::span<const WireAck>, common::Instant at)>;
  using RecordSink = std::function<void(std::span<const WireRecord>, common::Instant at)>;
  // A metadata answer moved a partition to another leader (the client's discovery of it): the
  // old leader (-1 when none was known), the new one and its epoch, at the answer's arrival.
  using LeaderSink =
      std::function<void(const std::string& topic, std::int32_t partition, std::int32_t from,
                         std::int32_t to, std::int32_t epoch, common::Instant at)>;

  WireClient(WireClientOptions options, const common::Clock& clock, AckSink acks,
             RecordSink records);
  ~WireClient();
  WireClient(const WireClient&) = delete;
  WireClient& operator=(const WireClient&) = delete;

  // Before start().
  void onLeaderChange(LeaderSink sink);

  // Starts the I/O thread with the partitions to probe, and waits until every one's leader is
  // known (or `wait_for_leaders` has passed), so that the first tick is not failed for want of
  // a first metadata answer. Once only.
  void start(std::vector<WireTarget> targets, std::chrono::milliseconds wait_for_leaders);
  // More partitions (a probe topic grew).
  void add(std::vector<WireTarget> targets);
  // The probe's ticks, on the I/O thread: `tick` runs there at `first` (monotonic µs), appends
  // that tick's messages and returns the next tick's time, and the messages leave in the same
  // turn. Per tick no thread wakes another (before: the sender woke, then woke this thread with
  // the messages, 100 wake-ups a second at the default 20 ms), and a message's send time is read
  // on the thread that writes it. A tick runs after the turn's answers have reached the sinks.
  // `tick` must not call stopTicking().
  using Ticker = std::function<common::MonoMicros(std::vector<WireSend>& messages)>;
  void tickOnIoThread(Ticker tick, common::MonoMicros first);
  // No tick runs once this returns (one under way is waited for). Idempotent.
  void stopTicking();
  // Stops the I/O thread; what is outstanding gets no ack. Idempotent.
  void stop();

  WireStats stats() const;

  // Why a send to `slot`'s partition is to be refused rather than asked of the cluster: the
  // broker leading it (any broker while its leader is not known) refused this client's last
  // connection to it; null otherwise. The I/O thread only (from the ticker); valid until it
  // returns.
  const std::string* authenticationFailure(std::size_t slot) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kfaild::probe
