#pragma once

// The line protocol between kfaild and its Java probe child (java/probe/KfaildJavaProbe.java,
// run by java_probe_client.h), and the settings the child is given. Pure: no process, no I/O.
//
// One command or report per line, words separated by one space:
//   kfaild -> child, first:
//     config <key> <value>     a client setting; the value is the rest of the line, with "\\"
//                              for a backslash and "\n" for a newline (escapeConfigValue)
//     go                       start the clients (with --check: check the settings and exit)
//   kfaild -> child, then:
//     assign <slot> <topic> <partition> <offset>   read the partition from the offset, and send
//                                                  slot <slot>'s messages to it
//     send <slot> <seq> <body>                     send one message (the probe payload, no spaces)
//     quit                                         close the clients and exit; so does EOF
//   child -> kfaild:
//     hello <version> <nanoTime>                  the clients are made
//     ack <slot> <seq> <t_ns> <offset>            acks=all satisfied
//     error <slot> <seq> <t_ns> <code> <name>     the send failed (a Kafka protocol error code,
//                                                 which librdkafka's positive codes equal)
//     recv <slot> <t_ns> <offset> <head>          a record read; head: the probe payload's
//                                                 header (payload.h) up to its 4th ':', or "-"
//     leader <slot> <broker|-1> <epoch|-1> <t_ns> the producer's view of the leader changed
//     refused <key> <reason>                      a setting kafka-clients refuses (exit status 2)
//     ok                                          --check: every setting accepted (exit status 0)
// Times are Java's System.nanoTime(), which on Linux reads CLOCK_MONOTONIC: the clock of
// common::Clock::monoNow() (SystemClock) and of std::chrono::steady_clock, in nanoseconds.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/common/clock.h"

namespace kfaild::probe::java {

inline constexpr int kProtocolVersion = 1;
// A line longer than this is not the child's: the stream is broken.
inline constexpr std::size_t kMaxLineBytes = 64 * 1024;

enum class ReportKind { kHello, kAck, kError, kRecv, kLeader, kRefused, kOk };

struct Report {
  ReportKind kind = ReportKind::kOk;
  std::int64_t slot = 0;    // ack, error, recv, leader
  std::int64_t seq = 0;     // ack, error
  std::int64_t t_ns = 0;    // every kind but refused and ok (hello: its nanoTime)
  std::int64_t offset = 0;  // ack, recv
  std::int32_t code = 0;    // error: the Kafka error code; hello: the protocol version
  std::int32_t broker = -1;
  std::int32_t epoch = -1;
  std::string text;  // error: the error's name; recv: the head; refused: the reason
  std::string key;   // refused
};

// One line (without its '\n'); nullopt when it is not one of the reports above.
std::optional<Report> parseReport(std::string_view line);

// Bytes read from the child's stdout, cut into lines. A line split across reads is kept until
// its end arrives; a line over kMaxLineBytes sets overflowed() (the child is then restarted).
class LineSplitter {
 public:
  // Appends `bytes` and moves every complete line to `lines` (without '\n').
  void append(std::string_view bytes, std::vector<std::string>& lines);
  // What is left of an unfinished line: at the child's exit, a line it died in the middle of.
  const std::string& partial() const { return partial_; }
  bool overflowed() const { return overflowed_; }
  void reset() {
    partial_.clear();
    overflowed_ = false;
  }

 private:
  std::string partial_;
  bool overflowed_ = false;
};

std::string escapeConfigValue(std::string_view value);
std::string configLine(const std::string& key, const std::string& value);
std::string assignLine(std::size_t slot, const std::string& topic, std::int32_t partition,
                       std::int64_t offset);
std::string sendLine(std::size_t slot, std::int64_t seq, const std::string& body);

// A child time (nanoTime) as an Instant, its wall part placed by `now` (a reading taken after
// it): both monotonic, so now.wall - (now.mono - t) is the wall time of t on kfaild's timebase.
// A time after `now` (it cannot be, on one clock) is taken as `now`.
common::Instant instantOf(std::int64_t t_ns, common::Instant now);
// The child's clock is kfaild's monotonic clock: its hello's nanoTime lies between a reading
// taken before the child was started and one taken after its hello was read.
bool sameClock(std::int64_t hello_ns, common::MonoMicros before, common::MonoMicros after);

// The Java client's settings: the cluster's `client` map (librdkafka's names) mapped to
// kafka-clients' where they differ, and `settings` (kafka-clients' names) on top.
//   security.protocol             upper-cased (librdkafka takes either case)
//   sasl.mechanisms/sasl.mechanism  sasl.mechanism
//   sasl.username + sasl.password sasl.jaas.config with the mechanism's login module (PLAIN,
//                                 SCRAM-SHA-256/512)
//   ssl.ca.location               ssl.truststore.type PEM + ssl.truststore.location
//   ssl.certificate.location + ssl.key.location (+ ssl.key.password)
//                                 ssl.keystore.type PEM with the files' contents inline
//                                 (ssl.keystore.certificate.chain, ssl.keystore.key): read here
//   ssl.endpoint.identification.algorithm, and every other key whose name both clients share
//                                 (reconnect.backoff.max.ms, request.timeout.ms, ...): as is;
//                                 "none" is Java's "" for the algorithm
//   ssl.keystore.location (+ ssl.keystore.password)  as is, ssl.keystore.type PKCS12 (librdkafka's
//                                 keystore is PKCS#12)
//   fetch.wait.max.ms             fetch.max.wait.ms
//   ssl.endpoint.identification.algorithm, and the other keys both clients name alike
//                                 (sharedKey: reconnect.backoff.max.ms, request.timeout.ms, ...):
//                                 as is; the algorithm "none" is Java's ""
// Keys only librdkafka knows (socket.timeout.ms, debug, ...) are left out, listed in `ignored`.
// Not mapped: sasl.mechanism GSSAPI and OAUTHBEARER (their librdkafka settings have no
// one-line Java form: an error naming sasl.mechanism), ssl.crl.location (ignored).
// Files named (ssl.certificate.location, ssl.key.location) are read here; an error names the key
// of one that cannot be read.
struct JavaSettings {
  std::map<std::string, std::string> settings;
  std::vector<std::string> ignored;
};
std::optional<JavaSettings> javaSettings(const std::map<std::string, std::string>& client,
                                         const std::map<std::string, std::string>& settings,
                                         std::string& error);
// Whether kafka-clients' producer or consumer knows `key` under the name librdkafka gives it.
bool sharedKey(std::string_view key);

}  // namespace kfaild::probe::java
