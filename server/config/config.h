#pragma once

// kfaild's configuration, read once at start-up from YAML. A mistake is a ConfigError whose
// message names the key ("clusters[0].probe.interval_ms: must be between 1 and 60000, got 0");
// kfaild then exits non-zero without starting anything. Unknown keys are mistakes too: a typo
// must not silently fall back to a default.

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "server/analysis/objectives.h"
#include "server/common/event_types.h"
#include "server/common/thread_priority.h"
#include "server/config/command_target.h"

namespace kfaild::config {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How kfaild creates a probe topic that does not exist yet. Either `partitions` +
// `replication_factor`, or an explicit `replica_assignment` ("1:2:3,2:3:1,3:1:2": one list of
// broker ids per partition, preferred leader first).
struct TopicCreation {
  std::int32_t partitions = 0;
  std::int16_t replication_factor = 0;
  std::vector<std::vector<std::int32_t>> replica_assignment;
  std::map<std::string, std::string> configs;
};

struct ProbeTopic {
  std::string name;
  std::optional<TopicCreation> create;  // absent: the topic must exist
};

// The control-plane probe (server/probe/control_probe.h): `probe.control` in the file, `off` to
// disable it.
struct ControlProbeConfig {
  bool enabled = true;
  std::int64_t interval_us = 500'000;
  // Gaps between successful operations above this are stored; 0 in the file means 3 × interval.
  std::int64_t gap_threshold_us = 1'500'000;
  // One operation (and one voter's DescribeQuorum) gives up after this.
  std::int64_t timeout_us = 5'000'000;
};

// The coordinator probes (server/probe/coordinator_probe.h): `probe.coordinators` in the file,
// `off` to disable them. Offset commits are on by default, transactions only when configured.
struct CoordinatorProbeConfig {
  bool enabled = true;
  std::string group;  // empty: "kfaild-probe-<cluster>", the probe consumer's group id
  std::int64_t commit_interval_us = 100'000;
  std::int64_t gap_threshold_us = 1'000'000;  // commits; 0 in the file means 10 × interval
  bool transactions = false;
  std::string transactional_id;  // empty: "kfaild-probe-<cluster>"
  std::int64_t txn_interval_us = 1'000'000;
  std::int64_t txn_gap_threshold_us = 3'000'000;  // 0 in the file means 3 × txn interval
  std::int64_t timeout_us = 5'000'000;  // one commit, one transaction, one FindCoordinator round
  std::int64_t watch_interval_us = 500'000;  // FindCoordinator of the group (and the id)
};

// Which client the probe's sends and reads go through: librdkafka's producer and consumer (the
// view an application on librdkafka has, client discovery included), or kfaild's own protocol
// client (server/probe/wire_client.h: one request per broker per tick; secured as the own
// protocol client, server/kafka/security.h), or the Java client in a child process kfaild
// supervises (server/probe/java_probe_client.h).
enum class ProbeClient { kLibrdkafka, kWire, kJava };

// probe.client java (server/probe/java_probe_client.h): the Java runtime and the probe's jar
// (empty: found as findJavaRuntime says), and the Java client's own settings (kafka-clients'
// names), on top of those mapped from the cluster's `client` map; a java profile's own settings
// (ProbeProfile::settings) go on top of these.
struct JavaProbeConfig {
  std::string runtime;
  std::string jar;
  std::map<std::string, std::string> settings;
};

const char* toString(ProbeClient client);

// One client profile (probe.profiles): its own producer and consumer on the same probe
// partitions, with its own settings over the cluster's `client` map, measured as a stream of its
// own. The first profile is the cluster's primary: its stream is the cluster's (what kfaild
// stored before profiles existed), its figures are the run's top-level ones, and its status
// gates drills. Without probe.profiles there is one, named after probe.client.
struct ProbeProfile {
  std::string name;
  ProbeClient client = ProbeClient::kLibrdkafka;
  std::map<std::string, std::string> settings;
};

struct ProbeConfig {
  ProbeClient client = ProbeClient::kLibrdkafka;
  JavaProbeConfig java;
  std::int64_t interval_us = 20'000;
  std::int32_t payload_bytes = 64;
  std::int64_t gap_threshold_us = 0;          // 0 in the file means 5 × interval
  std::int64_t loss_timeout_us = 60'000'000;  // acked but not received after this → lost
  // librdkafka client: a partition whose acked messages the consumer has not read for this long,
  // with nothing read meanwhile, has its fetch restarted at the oldest of them (a seek), with a
  // probe/consumer_restarted event; if that did not help, half the wait later by a new consumer
  // (probe/consumer_recreated), and again at twice the wait while it stays so. Below the loss
  // timeout, so that a stuck consumer's messages are read, not counted lost.
  std::int64_t consumer_restart_us = 5'000'000;
  // The bound on what one partition may have outstanding (sent, no delivery report): at either
  // limit the probe holds back its sends and counts the ticks it skipped, so that it never
  // measures its own backlog. Without max_outstanding in the file: 2 × age / interval (min 10),
  // so that at a steady rate the age bound comes first and the count is a safety net.
  std::int64_t max_outstanding_age_us = 2'000'000;
  std::int64_t max_outstanding = 200;
  // librdkafka's message.timeout.ms for the probe producer unless `client` sets it: every
  // message has a fate (ack or error) within this.
  std::int64_t message_timeout_us = 60'000'000;
  // The sender thread's scheduling: a send that leaves late leaves the cluster unasked for that
  // long, and a gap across it is inconclusive. Falls back a step when the process may not.
  common::ThreadPriority sender_priority = common::ThreadPriority::kRealtime;
  std::vector<ProbeTopic> topics;
  // Never empty once loaded; profiles[0] is the primary, and its client is `client` above.
  std::vector<ProbeProfile> profiles;
  ControlProbeConfig control;
  CoordinatorProbeConfig coordinators;
};

struct ObserveConfig {
  std::int64_t metadata_interval_us = 100'000;
  std::string client_debug = "metadata,topic";  // librdkafka debug contexts to capture
};

// TLS to a Docker Engine on tcp://, as Docker's own DOCKER_TLS_VERIFY setup: the engine's
// certificate must be signed by ca_file and name the endpoint's host; cert_file and key_file
// (both or neither) are the client certificate the engine verifies. PEM files.
struct DockerTls {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
};

// How kfaild reaches one Kafka process to inject faults. Exactly one of the four (docker, ssh,
// local, command: CommandTarget in command_target.h) is set.
// Everything here comes from the configuration file, never from an API request.
// Plain tcp:// (no tls) reaches only a loopback host unless `insecure` says otherwise: anyone on
// the path could read and replay requests that control containers.
struct DockerTarget {
  std::string endpoint = "unix:///var/run/docker.sock";  // or tcp://host:port
  std::string container;                                 // name or id
  std::optional<DockerTls> tls{};                        // only with tcp://
  bool insecure = false;  // allows plain tcp:// to a host that is not loopback
};

// True for "localhost" and loopback IP literals (127.0.0.0/8, ::1, ::ffff:127.x.y.z); a name is
// never resolved, so any other name is not loopback.
bool isLoopbackHost(const std::string& host);

struct SshTarget {
  std::string host;
  std::string user;  // empty: ssh's default (~/.ssh/config)
  int port = 22;
  std::string identity_file;  // empty: the user's own keys
  int connect_timeout_s = 5;
  std::vector<std::string> options;  // extra "-o" options, e.g. StrictHostKeyChecking=yes
  std::string pid_command;           // prints the broker's pid, e.g. "cat /var/run/kafka/kafka.pid"
  std::string start_command;         // starts the broker, e.g. "sudo systemctl start kafka"
  std::string log_dir;               // remote directory with server.log, controller.log, ...
};

struct LocalTarget {
  std::string pid_file;
  std::vector<std::string> start_command;  // argv, run without a shell
  std::string log_dir;
};

struct NodeConfig {
  std::int32_t id = -1;
  common::NodeRole role = common::NodeRole::kBroker;  // configured as "broker" or "controller"
  std::optional<DockerTarget> docker;
  std::optional<SshTarget> ssh;
  std::optional<LocalTarget> local;
  std::optional<CommandTarget> command;
  std::string log_timezone = "UTC";  // the zone the node's log4j timestamps are written in
  // Gray faults (issue 26, docs/FAULTS.md). `address`: an IP (or a name, resolved once at start)
  // of the node, which an `isolate` of another node names beside the addresses the cluster lists
  // for it (Metadata, DescribeQuorum: server/drill/peer_addresses.h), and alone for a node the
  // cluster does not list. Empty: an ssh node's host. `netns` (local only): the network
  // namespace the node runs in, where its nft rules go; empty: local nodes cannot be isolated or
  // throttled. `fill_dir` (local, ssh): a directory on the node's log filesystem (outside
  // log.dirs) that disk_full fills; empty: no disk_full.
  std::string address;
  std::string netns;
  std::string fill_dir;
  // Gray faults are opt-in per node: without `gray_faults: true` kfaild never runs kfaild-gray
  // there (no sudo, not even the start-up sweep) and refuses isolate, throttle and disk_full.
  // `gray_helper`: the argv that runs kfaild-gray (empty: `sudo -n /usr/lib/kfaild/kfaild-gray`
  // on an ssh host; kfaild-gray beside kfaild, through `sudo -n` unless kfaild is root, locally).
  bool gray_faults = false;
  std::vector<std::string> gray_helper;
};

struct ClusterConfig {
  std::string name;
  std::string bootstrap;
  std::map<std::string, std::string> client;  // passed through to librdkafka (security, ...)
  ProbeConfig probe;
  ObserveConfig observe;
  std::vector<NodeConfig> inventory;  // the processes drills may target, by node id
  // What a drill must achieve (analysis/objectives.h). Without `objectives` in the file:
  // analysis::defaultObjectives(); `objectives: {}` checks nothing.
  analysis::Objectives objectives = analysis::defaultObjectives();
  analysis::RegressionPolicy regression;
};

// How long each kind of record is kept, in µs; nullopt: forever (`forever` in the file).
// Defaults and their reasons: docs/CONFIG.md.
struct RetentionConfig {
  static constexpr std::int64_t kHourUs = 3'600'000'000;
  std::optional<std::int64_t> samples_us = 7 * 24 * kHourUs;         // raw, outside drill windows
  std::optional<std::int64_t> drill_samples_us = 90 * 24 * kHourUs;  // inside drill windows
  std::optional<std::int64_t> gaps_us = 365 * 24 * kHourUs;
  std::optional<std::int64_t> events_us = 90 * 24 * kHourUs;
  std::optional<std::int64_t> audit_us = 365 * 24 * kHourUs;  // audit rows and refusal counts
};

struct StorageConfig {
  static constexpr std::int64_t kMinMaxBytes = 16LL * 1024 * 1024;

  std::string path = "kfaild.db";
  RetentionConfig retention;
  std::int64_t retention_interval_us = 600'000'000;  // between retention passes (one at start)
  std::optional<std::int64_t> max_bytes;             // bound on the used pages; nullopt: none
  // The audit log's share (of max_bytes, when set); nullopt: 5 % of max_bytes, or 64 MiB.
  std::optional<std::int64_t> audit_max_bytes;
  std::size_t max_queued_records = 1'000'000;
};

// HTTPS for the API: cert_file and key_file (both or neither; neither is plain HTTP), PEM files
// checked readable at load and parsed when the server starts. client_ca_file: every client must
// present a certificate signed by it.
struct HttpTlsConfig {
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;
  bool enabled() const { return !cert_file.empty(); }
};

// The HTTP API and dashboard (api/access.h has the rules). Mutating routes need the operator
// token: from token_file, or, without one, generated at first start into
// <directory of storage.path>/api-token. `auth: none` (no token at all) is for loopback only.
struct HttpConfig {
  bool enabled = true;
  std::string host = "127.0.0.1";
  std::int32_t port = 8080;       // 0: an ephemeral port (logged at start)
  bool auth_none = false;         // http.auth: none
  std::string token_file;         // file whose first line is the operator's bearer token
  std::string token;              // read from token_file at load time, never logged
  std::string viewer_token_file;  // optional: the read-only (viewer) token
  std::string viewer_token;
  bool read_auth = false;                  // reads need the viewer or operator token
  std::vector<std::string> allowed_hosts;  // Host names answered besides the listen address
  std::string web_dir;                     // the dashboard's build output (web/dist); empty: none
  std::int64_t max_connections = 1024;
  std::int64_t max_connections_per_peer = 64;  // from one peer address
  std::int64_t read_timeout_ms = 30'000;
  std::int64_t max_body_bytes = 1024 * 1024;
  HttpTlsConfig tls;
};

// Where kfaild sends word of finished and failed drills, regressions and incidents (server/notify;
// docs/CONFIG.md has every key and its default).
struct NotificationTls {
  std::string ca_file;    // PEM; empty: the system's trust store
  std::string cert_file;  // client certificate (with key_file), for receivers that verify one
  std::string key_file;
};

struct ReceiverConfig {
  std::string name;  // [a-z0-9_-]{1,64}, unique; the `receiver` of queue rows and metrics
  std::string type;  // webhook | slack | alertmanager
  std::string url;   // http(s)://host[:port]/path; for alertmanager its base URL
  std::vector<std::string> events = {"drill_finished", "drill_failed", "regression", "incident"};
  // drill_finished is sent only for these verdicts ("none": a drill without a verdict).
  std::vector<std::string> verdicts = {"pass", "fail", "inconclusive", "none"};
  std::map<std::string, std::string> headers;  // extra request headers (Authorization, ...)
  NotificationTls tls;
  std::int64_t timeout_ms = 10'000;
  // alertmanager: how long an alert stays firing before Alertmanager resolves it by itself.
  std::int64_t alert_resolve_after_us = 24LL * 3600 * 1'000'000;
  // Payloads carry the operator-only text (command lines, hosts, tool output) of drill reasons;
  // false: redacted as for a reader without the operator token (notify/events.h).
  bool include_operator_details = false;
};

struct RetryConfig {
  std::int64_t initial_us = 5'000'000;                // the first retry's delay
  std::int64_t max_us = 600'000'000;                  // the cap of the doubling delay
  std::int64_t max_attempts = 20;                     // then failed
  std::int64_t max_age_us = 24LL * 3600 * 1'000'000;  // or this long after queueing: failed
};

struct IncidentNotifyConfig {
  std::int64_t min_stall_us = 5'000'000;          // a gap outside drills at least this long
  std::int64_t scan_interval_us = 30'000'000;     // how often stored gaps are scanned
  std::int64_t lookback_us = 3600LL * 1'000'000;  // how far back each scan looks
};

struct NotificationsConfig {
  std::vector<ReceiverConfig> receivers;
  RetryConfig retry;
  IncidentNotifyConfig incidents;
  // Base of the links in payloads ("https://kfaild.example.com"); empty: http://<http.host>:<port>.
  std::string external_url;
};

struct Config {
  std::string log_level = "info";
  StorageConfig storage;
  HttpConfig http;
  // SIGTERM during a drill: how long kfaild waits for the drill to bring its node back before
  // it exits anyway (the recovery journal then finishes the job at the next start).
  std::int64_t shutdown_grace_s = 120;
  std::vector<ClusterConfig> clusters;
  NotificationsConfig notifications;
};

// Parses YAML text. `origin` (a file name) prefixes error messages.
// Relative file names inside the config (storage.path, http.token_file, http.tls.*,
// docker.tls.*) are taken relative to the working directory.
Config parseConfig(const std::string& yaml_text, const std::string& origin = "config");
Config loadConfigFile(const std::string& path);

// "1:2:3,2:3:1" → {{1,2,3},{2,3,1}}; throws ConfigError naming `key` when malformed.
std::vector<std::vector<std::int32_t>> parseReplicaAssignment(const std::string& text,
                                                              const std::string& key);

}  // namespace kfaild::config
