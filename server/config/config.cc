#include "server/config/config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "server/config/config_file.h"
#include "server/config/token_file.h"
#include "server/kafka/security.h"

namespace kfaild::config {
namespace {

[[noreturn]] void fail(const std::string& key, const std::string& problem) {
  throw ConfigError(key + ": " + problem);
}

void rejectUnknownKeys(const YAML::Node& node, const std::string& key,
                       const std::set<std::string>& known) {
  if (!node.IsMap()) fail(key, "must be a mapping");
  std::set<std::string> seen;
  for (const auto& entry : node) {
    const auto name = entry.first.as<std::string>();
    // YAML parsers keep one of two equal keys and drop the other without a word.
    if (!seen.insert(name).second) fail(key.empty() ? name : key + "." + name, "given twice");
    if (!known.count(name)) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      fail(key.empty() ? name : key + "." + name, "unknown key (known: " + list + ")");
    }
  }
}

std::string readString(const YAML::Node& node, const std::string& key) {
  if (!node.IsScalar()) fail(key, "must be a string");
  return node.as<std::string>();
}

std::int64_t readInt(const YAML::Node& node, const std::string& key, std::int64_t min,
                     std::int64_t max) {
  if (!node.IsScalar()) fail(key, "must be an integer");
  const auto text = node.as<std::string>();
  std::int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || ptr != text.data() + text.size()) {
    fail(key, "must be an integer, got '" + text + "'");
  }
  if (value < min || value > max) {
    fail(key, "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " +
                  text);
  }
  return value;
}

std::map<std::string, std::string> readStringMap(const YAML::Node& node, const std::string& key) {
  if (!node.IsMap()) fail(key, "must be a mapping of names to values");
  std::map<std::string, std::string> out;
  for (const auto& entry : node) {
    const auto name = entry.first.as<std::string>();
    if (!entry.second.IsScalar()) fail(key + "." + name, "must be a scalar value");
    out[name] = entry.second.as<std::string>();
  }
  return out;
}

// The first line of a secret file (a `<key>_file`), read as a token file is (readPrivateFirstLine:
// no symbolic link, kfaild's user's own, mode 0600 or 0400): whoever reads a SASL password, a
// key's passphrase or a webhook's URL is the cluster's client or the receiver's sender. The value
// itself never appears in an error.
std::string readSecretFile(const std::string& path, const std::string& key) {
  constexpr std::size_t kMaxSecretBytes = 64 * 1024;
  auto line = readPrivateFirstLine(path, kMaxSecretBytes);
  if (!line) fail(key, line.error().message);
  if (line->empty()) fail(key, path + " has an empty first line");
  if (line->size() >= kMaxSecretBytes)
    fail(key, "the first line of " + path + " is longer than 64 KiB");
  return std::move(*line);
}

bool isEnvironmentReference(const std::string& value) {
  return value.rfind("${env:", 0) == 0;
}

// A value "${env:NAME}" is the environment variable NAME (unset: an error); any other value is
// itself.
std::string resolveEnvironment(const std::string& value, const std::string& key) {
  if (!isEnvironmentReference(value)) return value;
  const auto variable =
      value.size() > 7 && value.back() == '}' ? value.substr(6, value.size() - 7) : std::string();
  if (variable.empty() ||
      variable.find_first_not_of(
          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos) {
    fail(key, "${env:NAME} needs a variable name of letters, digits and '_'");
  }
  const char* set = std::getenv(variable.c_str());
  if (set == nullptr)
    fail(key, "names the environment variable " + variable + ", which is not set");
  return set;
}

// librdkafka's properties that hold a credential (those its own configuration marks sensitive).
bool isSecretClientProperty(const std::string& name) {
  for (const char* part : {"password", "secret", "passphrase", "private.key", "ssl.key.pem",
                           "sasl.oauthbearer.config"}) {
    if (name.find(part) != std::string::npos) return true;
  }
  return false;
}

// A mapping whose values may be secrets (clusters[].client, a receiver's headers), with two ways
// to keep one out of the file: a value "${env:NAME}" (resolveEnvironment), and a key
// "<name>_file" naming a file whose first line is the value of <name> (readSecretFile). The keys
// of secrets given inline (`is_secret` of the name) are added to `inline_secrets`.
std::map<std::string, std::string> readSecretMap(const YAML::Node& node, const std::string& key,
                                                 bool (*is_secret)(const std::string&),
                                                 std::vector<std::string>& inline_secrets) {
  const auto raw = readStringMap(node, key);
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : raw) {
    const auto field = key + "." + name;
    auto resolved = resolveEnvironment(value, field);
    auto property = name;
    constexpr std::string_view kFileSuffix = "_file";
    if (name.size() > kFileSuffix.size() && name.ends_with(kFileSuffix)) {
      property = name.substr(0, name.size() - kFileSuffix.size());
      if (raw.count(property))
        fail(field, "and " + key + "." + property + " are both set: keep one");
      resolved = readSecretFile(resolved, field);
    } else if (!isEnvironmentReference(value) && is_secret(name)) {
      inline_secrets.push_back(field);
    }
    out[property] = std::move(resolved);
  }
  return out;
}

TopicCreation readCreation(const YAML::Node& node, const std::string& key) {
  rejectUnknownKeys(node, key,
                    {"partitions", "replication_factor", "replica_assignment", "configs"});
  TopicCreation c;
  if (node["replica_assignment"]) {
    c.replica_assignment =
        parseReplicaAssignment(readString(node["replica_assignment"], key + ".replica_assignment"),
                               key + ".replica_assignment");
    if (node["partitions"] || node["replication_factor"]) {
      fail(key, "give either replica_assignment or partitions + replication_factor, not both");
    }
    c.partitions = static_cast<std::int32_t>(c.replica_assignment.size());
    c.replication_factor = static_cast<std::int16_t>(c.replica_assignment.front().size());
  } else {
    if (!node["partitions"]) fail(key + ".partitions", "required (or replica_assignment)");
    c.partitions =
        static_cast<std::int32_t>(readInt(node["partitions"], key + ".partitions", 1, 100000));
    c.replication_factor = static_cast<std::int16_t>(
        node["replication_factor"]
            ? readInt(node["replication_factor"], key + ".replication_factor", 1, 32)
            : 3);
  }
  if (node["configs"]) c.configs = readStringMap(node["configs"], key + ".configs");
  return c;
}

// `off`, or a map of the control probe's settings.
// An observer's interval (metadata poller, control probe, coordinator probes) when the file does
// not set it: its default, or the probe's interval when that is longer. What an observer times is
// only read against the probe's own gaps, which are no finer than its interval; a probe sending
// once a minute with its observers still asking ten times a second cost 7.8 ms of CPU a second idle
// (docs/PERFORMANCE.md, "Idle cost").
std::int64_t observerInterval(std::int64_t default_us, std::int64_t pace_us) {
  return std::max(default_us, pace_us);
}

// `pace_us`: the probe's interval, the fastest an observer runs unless its own interval is set
// (observerInterval).
ControlProbeConfig readControlProbe(const YAML::Node& node, const std::string& key,
                                    std::int64_t pace_us) {
  ControlProbeConfig c;
  c.interval_us = observerInterval(c.interval_us, pace_us);
  c.gap_threshold_us = 3 * c.interval_us;
  if (!node) return c;
  if (node.IsScalar()) {
    if (node.as<std::string>() != "off") fail(key, "must be `off` or a map of settings");
    c.enabled = false;
    return c;
  }
  rejectUnknownKeys(node, key, {"interval_ms", "gap_threshold_ms", "timeout_ms"});
  if (node["interval_ms"])
    c.interval_us = readInt(node["interval_ms"], key + ".interval_ms", 50, 60000) * 1000;
  c.gap_threshold_us =
      node["gap_threshold_ms"]
          ? readInt(node["gap_threshold_ms"], key + ".gap_threshold_ms", 1, 3'600'000) * 1000
          : 3 * c.interval_us;
  if (node["timeout_ms"])
    c.timeout_us = readInt(node["timeout_ms"], key + ".timeout_ms", 100, 120'000) * 1000;
  return c;
}

// A group id or transactional id kfaild owns: printable, no spaces, at most 249 characters.
std::string readOwnId(const YAML::Node& node, const std::string& key) {
  auto id = readString(node, key);
  if (id.empty() || id.size() > 249 ||
      std::any_of(id.begin(), id.end(), [](unsigned char c) { return c <= ' ' || c > '~'; })) {
    fail(key, "must be 1 to 249 printable characters without spaces, got '" + id + "'");
  }
  return id;
}

// `off`, or a map of the coordinator probes' settings.
CoordinatorProbeConfig readCoordinatorProbe(const YAML::Node& node, const std::string& key,
                                            std::int64_t pace_us) {
  CoordinatorProbeConfig c;
  c.commit_interval_us = observerInterval(c.commit_interval_us, pace_us);
  c.gap_threshold_us = 10 * c.commit_interval_us;
  c.watch_interval_us = observerInterval(c.watch_interval_us, pace_us);
  c.txn_interval_us = observerInterval(c.txn_interval_us, pace_us);
  c.txn_gap_threshold_us = 3 * c.txn_interval_us;
  if (!node) return c;
  if (node.IsScalar()) {
    if (node.as<std::string>() != "off") fail(key, "must be `off` or a map of settings");
    c.enabled = false;
    return c;
  }
  rejectUnknownKeys(node, key,
                    {"group", "commit_interval_ms", "gap_threshold_ms", "timeout_ms",
                     "watch_interval_ms", "transactions"});
  if (node["group"]) c.group = readOwnId(node["group"], key + ".group");
  if (node["commit_interval_ms"]) {
    c.commit_interval_us =
        readInt(node["commit_interval_ms"], key + ".commit_interval_ms", 10, 60000) * 1000;
  }
  c.gap_threshold_us =
      node["gap_threshold_ms"]
          ? readInt(node["gap_threshold_ms"], key + ".gap_threshold_ms", 1, 3'600'000) * 1000
          : 10 * c.commit_interval_us;
  if (node["timeout_ms"])
    c.timeout_us = readInt(node["timeout_ms"], key + ".timeout_ms", 100, 120'000) * 1000;
  if (node["watch_interval_ms"]) {
    c.watch_interval_us =
        readInt(node["watch_interval_ms"], key + ".watch_interval_ms", 50, 60000) * 1000;
  }
  if (const auto t = node["transactions"]) {
    const auto tkey = key + ".transactions";
    if (t.IsScalar()) {
      const auto text = t.as<std::string>();
      if (text != "on" && text != "off") fail(tkey, "must be `on`, `off` or a map of settings");
      c.transactions = text == "on";
    } else {
      rejectUnknownKeys(t, tkey, {"transactional_id", "interval_ms", "gap_threshold_ms"});
      c.transactions = true;
      if (t["transactional_id"])
        c.transactional_id = readOwnId(t["transactional_id"], tkey + ".transactional_id");
      if (t["interval_ms"])
        c.txn_interval_us = readInt(t["interval_ms"], tkey + ".interval_ms", 50, 600'000) * 1000;
      c.txn_gap_threshold_us =
          t["gap_threshold_ms"]
              ? readInt(t["gap_threshold_ms"], tkey + ".gap_threshold_ms", 1, 3'600'000) * 1000
              : 3 * c.txn_interval_us;
    }
  }
  return c;
}

}  // namespace

const char* toString(ProbeClient client) {
  switch (client) {
    case ProbeClient::kLibrdkafka:
      return "librdkafka";
    case ProbeClient::kWire:
      return "wire";
    case ProbeClient::kJava:
      return "java";
  }
  return "librdkafka";
}

namespace {

ProbeClient readProbeClient(const YAML::Node& node, const std::string& key) {
  const auto text = readString(node, key);
  if (text == "librdkafka") return ProbeClient::kLibrdkafka;
  if (text == "wire") return ProbeClient::kWire;
  if (text == "java") return ProbeClient::kJava;
  fail(key, "must be `librdkafka`, `wire` or `java`, got '" + text + "'");
}

// probe.profiles: names unique and fit for a URL and a stream's name; the settings each client
// takes. Without the key, one profile named after probe.client. A librdkafka setting librdkafka
// refuses stops kfaild when the probe starts (ClusterParts::start names the profile's key).
std::vector<ProbeProfile> readProfiles(const YAML::Node& node, const std::string& key,
                                       ProbeClient default_client) {
  if (!node) return {ProbeProfile{toString(default_client), default_client, {}}};
  if (!node.IsSequence() || node.size() == 0) fail(key, "must be a non-empty list of profiles");
  std::vector<ProbeProfile> profiles;
  std::set<std::string> names;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const auto& n = node[i];
    const auto pkey = key + "[" + std::to_string(i) + "]";
    if (!n.IsMap()) fail(pkey, "must be a mapping with name, client and settings");
    rejectUnknownKeys(n, pkey, {"name", "client", "settings"});
    if (!n["name"]) fail(pkey + ".name", "required");
    ProbeProfile profile;
    profile.name = readString(n["name"], pkey + ".name");
    if (profile.name.empty() || profile.name.size() > 32 ||
        !std::all_of(profile.name.begin(), profile.name.end(), [](char c) {
          return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        })) {
      fail(pkey + ".name",
           "must be 1-32 characters of a-z, 0-9, '_' and '-', got '" + profile.name + "'");
    }
    if (!names.insert(profile.name).second) {
      fail(pkey + ".name", "profile '" + profile.name + "' is named twice");
    }
    profile.client = n["client"] ? readProbeClient(n["client"], pkey + ".client") : default_client;
    if (n["settings"]) profile.settings = readStringMap(n["settings"], pkey + ".settings");
    for (const auto& reserved : {"bootstrap.servers", "acks", "group.id", "client.id"}) {
      if (profile.settings.contains(reserved)) {
        fail(pkey + ".settings." + reserved,
             "set by kfaild for every profile (bootstrap from .bootstrap, acks=all, its own ids)");
      }
    }
    if (profile.client == ProbeClient::kWire && !profile.settings.empty()) {
      fail(pkey + ".settings." + profile.settings.begin()->first,
           "the wire client takes no settings (it has none of librdkafka's or Java's)");
    }
    profiles.push_back(std::move(profile));
  }
  return profiles;
}

ProbeConfig readProbe(const YAML::Node& node, const std::string& key) {
  rejectUnknownKeys(
      node, key,
      {"interval_ms", "payload_bytes", "gap_threshold_ms", "loss_timeout_ms", "consumer_restart_ms",
       "max_outstanding_ms", "max_outstanding", "message_timeout_ms", "sender_priority", "topics",
       "control", "coordinators", "client", "profiles", "java"});
  ProbeConfig p;
  if (node["client"]) p.client = readProbeClient(node["client"], key + ".client");
  if (node["java"]) {
    const auto j = node["java"];
    const auto jkey = key + ".java";
    rejectUnknownKeys(j, jkey, {"runtime", "jar", "settings"});
    if (j["runtime"]) p.java.runtime = readString(j["runtime"], jkey + ".runtime");
    if (j["jar"]) p.java.jar = readString(j["jar"], jkey + ".jar");
    if (j["settings"]) p.java.settings = readStringMap(j["settings"], jkey + ".settings");
  }
  if (node["interval_ms"])
    p.interval_us = readInt(node["interval_ms"], key + ".interval_ms", 1, 60000) * 1000;
  if (node["payload_bytes"]) {
    p.payload_bytes = static_cast<std::int32_t>(
        readInt(node["payload_bytes"], key + ".payload_bytes", 32, 1'000'000));
  }
  p.gap_threshold_us =
      node["gap_threshold_ms"]
          ? readInt(node["gap_threshold_ms"], key + ".gap_threshold_ms", 1, 3'600'000) * 1000
          : 5 * p.interval_us;
  if (node["loss_timeout_ms"]) {
    p.loss_timeout_us =
        readInt(node["loss_timeout_ms"], key + ".loss_timeout_ms", 1000, 86'400'000) * 1000;
  }
  if (node["consumer_restart_ms"]) {
    p.consumer_restart_us =
        readInt(node["consumer_restart_ms"], key + ".consumer_restart_ms", 1000, 86'400'000) * 1000;
    if (p.consumer_restart_us >= p.loss_timeout_us) {
      throw ConfigError(
          key + ".consumer_restart_ms: must be below loss_timeout_ms (" +
          std::to_string(p.loss_timeout_us / 1000) +
          "), or a stuck consumer's messages are counted lost before it is restarted");
    }
  } else {
    p.consumer_restart_us = std::min(p.consumer_restart_us, p.loss_timeout_us / 2);
  }
  if (node["max_outstanding_ms"]) {
    p.max_outstanding_age_us =
        readInt(node["max_outstanding_ms"], key + ".max_outstanding_ms", 10, 600'000) * 1000;
  }
  p.max_outstanding =
      node["max_outstanding"]
          ? readInt(node["max_outstanding"], key + ".max_outstanding", 1, 1'000'000)
          : std::max<std::int64_t>(10, 2 * p.max_outstanding_age_us / p.interval_us);
  if (node["message_timeout_ms"]) {
    p.message_timeout_us =
        readInt(node["message_timeout_ms"], key + ".message_timeout_ms", 1000, 900'000) * 1000;
  }
  if (node["sender_priority"]) {
    const auto text = readString(node["sender_priority"], key + ".sender_priority");
    if (text == "realtime") {
      p.sender_priority = common::ThreadPriority::kRealtime;
    } else if (text == "high") {
      p.sender_priority = common::ThreadPriority::kHigh;
    } else if (text == "normal") {
      p.sender_priority = common::ThreadPriority::kNormal;
    } else {
      fail(key + ".sender_priority", "must be `realtime`, `high` or `normal`, got '" + text + "'");
    }
  }
  p.control = readControlProbe(node["control"], key + ".control", p.interval_us);
  p.coordinators = readCoordinatorProbe(node["coordinators"], key + ".coordinators", p.interval_us);
  const auto topics = node["topics"];
  if (!topics || !topics.IsSequence() || topics.size() == 0) {
    fail(key + ".topics", "required: a list of at least one probe topic");
  }
  std::set<std::string> seen;
  for (std::size_t i = 0; i < topics.size(); ++i) {
    const auto tkey = key + ".topics[" + std::to_string(i) + "]";
    const auto t = topics[i];
    ProbeTopic topic;
    if (t.IsScalar()) {
      topic.name = t.as<std::string>();
    } else {
      rejectUnknownKeys(t, tkey, {"name", "create"});
      if (!t["name"]) fail(tkey + ".name", "required");
      topic.name = readString(t["name"], tkey + ".name");
      if (t["create"]) topic.create = readCreation(t["create"], tkey + ".create");
    }
    if (topic.name.empty() || topic.name.size() > 249 ||
        topic.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                     "0123456789._-") != std::string::npos) {
      fail(tkey + ".name", "not a valid Kafka topic name: '" + topic.name + "'");
    }
    if (!seen.insert(topic.name).second) fail(tkey + ".name", "duplicate topic " + topic.name);
    p.topics.push_back(std::move(topic));
  }
  p.profiles = readProfiles(node["profiles"], key + ".profiles", p.client);
  p.client = p.profiles.front().client;
  return p;
}

// A file the configuration names that kfaild reads later (at start, or at each use): its name
// must be readable now, so that --check-config and start-up catch a typo.
std::string readFileName(const YAML::Node& node, const std::string& key) {
  auto path = readString(node, key);
  if (path.empty()) fail(key, "must not be empty");
  std::ifstream in(path);
  if (!in) fail(key, "cannot read " + path);
  return path;
}

std::vector<std::string> readStringList(const YAML::Node& node, const std::string& key) {
  if (!node.IsSequence()) fail(key, "must be a list of strings");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < node.size(); ++i) {
    out.push_back(readString(node[i], key + "[" + std::to_string(i) + "]"));
  }
  return out;
}

// docker.tls and docker.insecure against docker.endpoint (already read into `t`).
void readDockerTransport(const YAML::Node& d, const std::string& dkey, DockerTarget& t) {
  const bool tcp = t.endpoint.rfind("tcp://", 0) == 0;
  if (d["insecure"]) {
    try {
      t.insecure = d["insecure"].as<bool>();
    } catch (const YAML::Exception&) {
      fail(dkey + ".insecure", "must be true or false");
    }
    if (!tcp) fail(dkey + ".insecure", "only for tcp:// endpoints");
  }
  if (d["tls"]) {
    const auto tkey = dkey + ".tls";
    if (!tcp) fail(tkey, "only for tcp:// endpoints (a unix socket has no TLS)");
    if (t.insecure) fail(dkey + ".insecure", "give either tls or insecure: true, not both");
    const auto tls = d["tls"];
    rejectUnknownKeys(tls, tkey, {"ca_file", "cert_file", "key_file"});
    DockerTls files;
    if (!tls["ca_file"])
      fail(tkey + ".ca_file", "required: the CA that signed the engine's certificate");
    files.ca_file = readFileName(tls["ca_file"], tkey + ".ca_file");
    if (tls["cert_file"]) files.cert_file = readFileName(tls["cert_file"], tkey + ".cert_file");
    if (tls["key_file"]) files.key_file = readFileName(tls["key_file"], tkey + ".key_file");
    if (files.cert_file.empty() != files.key_file.empty()) {
      fail(tkey + (files.cert_file.empty() ? ".cert_file" : ".key_file"),
           "required with " + std::string(files.cert_file.empty() ? "key_file" : "cert_file"));
    }
    t.tls = std::move(files);
  }
  if (tcp && !t.tls && !t.insecure) {
    // The host as parseDockerEndpoint reads it: tcp://host:port or tcp://[v6]:port.
    std::string host = t.endpoint.substr(6);
    if (!host.empty() && host.front() == '[') {
      host = host.substr(1, host.find(']') == std::string::npos ? 0 : host.find(']') - 1);
    } else {
      host = host.substr(0, host.rfind(':'));
    }
    if (!isLoopbackHost(host)) {
      fail(dkey + ".endpoint", "plain tcp:// to " + host +
                                   ", which is not loopback: anyone on the way could read and "
                                   "forge the requests that control the container; set " +
                                   dkey +
                                   ".tls (ca_file, "
                                   "cert_file, key_file), or " +
                                   dkey + ".insecure: true to accept that");
    }
  }
}

DockerTarget readDockerTarget(const YAML::Node& d, const std::string& dkey) {
  rejectUnknownKeys(d, dkey, {"endpoint", "container", "tls", "insecure"});
  DockerTarget t;
  if (d["endpoint"]) t.endpoint = readString(d["endpoint"], dkey + ".endpoint");
  if (t.endpoint.rfind("unix://", 0) != 0 && t.endpoint.rfind("tcp://", 0) != 0) {
    fail(dkey + ".endpoint", "must start with unix:// or tcp://");
  }
  readDockerTransport(d, dkey, t);
  if (!d["container"]) fail(dkey + ".container", "required");
  t.container = readString(d["container"], dkey + ".container");
  if (t.container.empty() ||
      t.container.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
          std::string::npos) {
    fail(dkey + ".container", "not a container name or id: '" + t.container + "'");
  }
  return t;
}

// kfaild signals brokers over this connection: it never talks to a host it cannot authenticate.
void checkSshOptions(const std::vector<std::string>& options, const std::string& key) {
  // ssh_config keywords are case-insensitive; "key value" equals "key=value".
  for (const auto& option : options) {
    std::string normal;
    for (const char c : option) {
      if (c == ' ' || c == '\t') {
        if (!normal.empty() && normal.back() != '=') normal.push_back('=');
      } else {
        normal.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
      }
    }
    if (normal == "stricthostkeychecking=no" || normal == "stricthostkeychecking=off" ||
        normal == "userknownhostsfile=/dev/null" || normal == "batchmode=no") {
      fail(key, "'" + option +
                    "' would let kfaild talk to a host it cannot authenticate (or wait "
                    "for a password); kfaild keeps BatchMode=yes and host-key checking on");
    }
  }
}

SshTarget readSshTarget(const YAML::Node& s, const std::string& skey) {
  rejectUnknownKeys(s, skey,
                    {"host", "user", "port", "identity_file", "connect_timeout_s", "options",
                     "pid_command", "start_command", "log_dir"});
  SshTarget t;
  if (!s["host"]) fail(skey + ".host", "required");
  t.host = readString(s["host"], skey + ".host");
  if (t.host.empty() || t.host.front() == '-' ||
      t.host.find_first_of(" \t\n;&|$`'\"<>()") != std::string::npos) {
    fail(skey + ".host", "not a host name: '" + t.host + "'");
  }
  if (s["user"]) {
    t.user = readString(s["user"], skey + ".user");
    if (!t.user.empty() && (t.user.front() == '-' ||
                            t.user.find_first_of(" \t\n;&|$`'\"<>()@") != std::string::npos)) {
      fail(skey + ".user", "not a user name: '" + t.user + "'");
    }
  }
  if (s["port"]) t.port = static_cast<int>(readInt(s["port"], skey + ".port", 1, 65535));
  if (s["identity_file"]) t.identity_file = readString(s["identity_file"], skey + ".identity_file");
  if (s["connect_timeout_s"]) {
    t.connect_timeout_s =
        static_cast<int>(readInt(s["connect_timeout_s"], skey + ".connect_timeout_s", 1, 120));
  }
  if (s["options"]) {
    t.options = readStringList(s["options"], skey + ".options");
    checkSshOptions(t.options, skey + ".options");
  }
  if (!s["pid_command"]) fail(skey + ".pid_command", "required (prints the broker's pid)");
  t.pid_command = readString(s["pid_command"], skey + ".pid_command");
  if (!s["start_command"]) fail(skey + ".start_command", "required (starts the broker)");
  t.start_command = readString(s["start_command"], skey + ".start_command");
  if (s["log_dir"]) t.log_dir = readString(s["log_dir"], skey + ".log_dir");
  return t;
}

LocalTarget readLocalTarget(const YAML::Node& l, const std::string& lkey) {
  rejectUnknownKeys(l, lkey, {"pid_file", "start_command", "log_dir"});
  LocalTarget t;
  if (!l["pid_file"]) fail(lkey + ".pid_file", "required");
  t.pid_file = readString(l["pid_file"], lkey + ".pid_file");
  if (!l["start_command"])
    fail(lkey + ".start_command", "required (a list: program and arguments)");
  t.start_command = readStringList(l["start_command"], lkey + ".start_command");
  if (t.start_command.empty()) fail(lkey + ".start_command", "must not be empty");
  if (l["log_dir"]) t.log_dir = readString(l["log_dir"], lkey + ".log_dir");
  return t;
}

// address, netns and fill_dir: where the node is reached and where its gray faults go, checked
// against the way in (n.docker, n.ssh, n.local, already read).
void readNodePlacement(const YAML::Node& node, const std::string& key, NodeConfig& n) {
  if (node["address"]) {
    n.address = readString(node["address"], key + ".address");
    if (n.address.empty() ||
        n.address.find_first_not_of(
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.:-") !=
            std::string::npos) {
      fail(key + ".address", "an IP address or a host name");
    }
  } else if (n.ssh) {
    n.address = n.ssh->host;
  }
  if (node["netns"]) {
    if (!n.local)
      fail(key + ".netns", "only for a local node (docker uses the container's, ssh the host's)");
    n.netns = readString(node["netns"], key + ".netns");
    if (n.netns.empty() || n.netns.front() == '-' ||
        n.netns.find_first_not_of(
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
            std::string::npos) {
      fail(key + ".netns", "not a network namespace name: '" + n.netns + "'");
    }
  }
  if (node["fill_dir"]) {
    if (n.docker || node["command"]) {
      fail(key + ".fill_dir",
           std::string("not for a ") + (n.docker ? "docker" : "command") + " node");
    }
    n.fill_dir = readString(node["fill_dir"], key + ".fill_dir");
    if (n.fill_dir.empty())
      fail(key + ".fill_dir", "a directory (relative: to kfaild's working directory)");
    // The filler runs in a shell of its own (in the node's netns, or over ssh), not in kfaild's
    // working directory: a local node's relative directory is made absolute here, as its other
    // paths are read from kfaild's working directory; a remote one has no such directory.
    if (n.fill_dir.front() != '/') {
      if (!n.local) fail(key + ".fill_dir", "an absolute directory on the node's host");
      n.fill_dir = std::filesystem::absolute(n.fill_dir).lexically_normal().string();
    }
  }
}

// gray_faults: the node's opt-in to gray faults, the only thing that lets kfaild run kfaild-gray
// (root through sudo, or capabilities) there; gray_helper: how kfaild-gray is run, argv before
// its words. netns and fill_dir name where gray faults go, so they need the opt-in.
void readGrayOptIn(const YAML::Node& node, const std::string& key, NodeConfig& n) {
  if (node["gray_faults"]) {
    try {
      n.gray_faults = node["gray_faults"].as<bool>();
    } catch (const YAML::Exception&) {
      fail(key + ".gray_faults", "must be true or false");
    }
  }
  if (n.command && n.gray_faults) {
    fail(key + ".gray_faults",
         "not for a command node: gray faults need kfaild-gray on the node (docker, ssh or local)");
  }
  if (node["gray_helper"]) {
    n.gray_helper = readStringList(node["gray_helper"], key + ".gray_helper");
    if (n.gray_helper.empty())
      fail(key + ".gray_helper", "a list: the program and its first arguments");
    if (!n.gray_faults) fail(key + ".gray_helper", "only with gray_faults: true");
  }
  if (!n.gray_faults && (!n.netns.empty() || !n.fill_dir.empty())) {
    fail(key + (n.netns.empty() ? ".fill_dir" : ".netns"),
         "places gray faults, which this node has not opted in to: add gray_faults: true (kfaild "
         "then runs "
         "kfaild-gray there, docs/SECURITY.md)");
  }
}

NodeConfig readNode(const YAML::Node& node, const std::string& key) {
  rejectUnknownKeys(node, key,
                    {"id", "role", "docker", "ssh", "local", "command", "log_timezone", "address",
                     "netns", "fill_dir", "gray_faults", "gray_helper"});
  NodeConfig n;
  if (!node["id"]) fail(key + ".id", "required (the Kafka node.id)");
  n.id = static_cast<std::int32_t>(readInt(node["id"], key + ".id", 0, 2'147'483'647));
  if (node["role"]) {
    const auto role = common::nodeRoleFromString(readString(node["role"], key + ".role"));
    if (!role) fail(key + ".role", "broker or controller");
    n.role = *role;
  }
  if (node["log_timezone"]) {
    n.log_timezone = readString(node["log_timezone"], key + ".log_timezone");
    if (n.log_timezone != "UTC" && n.log_timezone != "local") {
      fail(key + ".log_timezone", "UTC or local");
    }
  }
  int ways = 0;
  if (node["docker"]) {
    ++ways;
    n.docker = readDockerTarget(node["docker"], key + ".docker");
  }
  if (node["ssh"]) {
    ++ways;
    n.ssh = readSshTarget(node["ssh"], key + ".ssh");
  }
  if (node["local"]) {
    ++ways;
    n.local = readLocalTarget(node["local"], key + ".local");
  }
  if (node["command"]) ++ways;
  if (ways != 1) fail(key, "needs exactly one of docker, ssh, local, command");
  readNodePlacement(node, key, n);
  // After the address: {host} in a command is the node's address.
  if (node["command"])
    n.command = readCommandTarget(node["command"], key + ".command", n.id, n.address);
  readGrayOptIn(node, key, n);
  return n;
}

// Objectives and the regression policy share their parser with drill requests (JSON): a YAML
// scalar becomes a JSON boolean, integer or float when it reads as one, else a string (which
// the parser then refuses with the key's name).
nlohmann::json yamlToJson(const YAML::Node& node, const std::string& key) {
  if (node.IsMap()) {
    nlohmann::json out = nlohmann::json::object();
    std::set<std::string> seen;
    for (const auto& entry : node) {
      const auto name = entry.first.as<std::string>();
      if (!seen.insert(name).second) fail(key + "." + name, "given twice");
      out[name] = yamlToJson(entry.second, key + "." + name);
    }
    return out;
  }
  if (node.IsSequence()) {
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t i = 0; i < node.size(); ++i)
      out.push_back(yamlToJson(node[i], key + "[" + std::to_string(i) + "]"));
    return out;
  }
  if (!node.IsScalar()) return nullptr;
  const auto text = node.as<std::string>();
  if (text == "true") return true;
  if (text == "false") return false;
  std::int64_t whole = 0;
  if (auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), whole);
      ec == std::errc{} && ptr == text.data() + text.size()) {
    return whole;
  }
  double real = 0;
  if (auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), real);
      ec == std::errc{} && ptr == text.data() + text.size()) {
    return real;
  }
  return text;
}

ClusterConfig readCluster(const YAML::Node& node, const std::string& key,
                          std::vector<std::string>& inline_secrets) {
  rejectUnknownKeys(
      node, key,
      {"name", "bootstrap", "client", "probe", "observe", "inventory", "objectives", "regression"});
  ClusterConfig c;
  if (!node["name"]) fail(key + ".name", "required");
  c.name = readString(node["name"], key + ".name");
  if (c.name.empty() || c.name.size() > 64 ||
      c.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") != std::string::npos) {
    fail(key + ".name", "must be 1-64 characters of a-z, 0-9, '_' and '-', got '" + c.name + "'");
  }
  if (!node["bootstrap"]) fail(key + ".bootstrap", "required (host:port[,host:port...])");
  c.bootstrap = readString(node["bootstrap"], key + ".bootstrap");
  if (c.bootstrap.empty()) fail(key + ".bootstrap", "must not be empty");
  if (node["client"])
    c.client =
        readSecretMap(node["client"], key + ".client", isSecretClientProperty, inline_secrets);
  for (const auto& reserved : {"bootstrap.servers", "acks"}) {
    if (c.client.count(reserved)) {
      fail(key + ".client." + reserved,
           "set by kfaild (bootstrap comes from .bootstrap; the probe always uses acks=all)");
    }
  }
  if (!node["probe"]) fail(key + ".probe", "required");
  c.probe = readProbe(node["probe"], key + ".probe");
  const bool wire = std::any_of(c.probe.profiles.begin(), c.probe.profiles.end(),
                                [](const auto& p) { return p.client == ProbeClient::kWire; });
  if (wire) {
    // The wire client connects as kfaild's own protocol client does: what that cannot honour
    // (GSSAPI, OAUTHBEARER, a keystore) stops kfaild here, not the probe later.
    if (auto security = kafka::clientSecurity(c.client); !security) {
      const auto& message = security.error().message;
      const auto colon = message.find(": ");
      fail(key + ".client." + message.substr(0, colon),
           "with probe.client wire: " + message.substr(colon + 2));
    }
  }
  c.observe.metadata_interval_us =
      observerInterval(c.observe.metadata_interval_us, c.probe.interval_us);
  if (c.probe.coordinators.group.empty()) c.probe.coordinators.group = "kfaild-probe-" + c.name;
  if (c.probe.coordinators.transactional_id.empty())
    c.probe.coordinators.transactional_id = "kfaild-probe-" + c.name;
  if (node["observe"]) {
    const auto o = node["observe"];
    const auto okey = key + ".observe";
    rejectUnknownKeys(o, okey, {"metadata_interval_ms", "client_debug"});
    if (o["metadata_interval_ms"]) {
      c.observe.metadata_interval_us =
          readInt(o["metadata_interval_ms"], okey + ".metadata_interval_ms", 10, 60000) * 1000;
    }
    if (o["client_debug"])
      c.observe.client_debug = readString(o["client_debug"], okey + ".client_debug");
  }
  if (node["objectives"]) {
    auto objectives = analysis::parseObjectives(yamlToJson(node["objectives"], key + ".objectives"),
                                                key + ".objectives");
    if (!objectives) throw ConfigError(objectives.error().message);
    c.objectives = *objectives;
  }
  if (node["regression"]) {
    auto regression = analysis::parseRegressionPolicy(
        yamlToJson(node["regression"], key + ".regression"), key + ".regression");
    if (!regression) throw ConfigError(regression.error().message);
    c.regression = *regression;
  }
  if (node["inventory"]) {
    const auto inv = node["inventory"];
    if (!inv.IsSequence()) fail(key + ".inventory", "must be a list of nodes");
    std::set<std::int32_t> ids;
    for (std::size_t i = 0; i < inv.size(); ++i) {
      const auto nkey = key + ".inventory[" + std::to_string(i) + "]";
      auto n = readNode(inv[i], nkey);
      if (!ids.insert(n.id).second) fail(nkey + ".id", "duplicate node id " + std::to_string(n.id));
      c.inventory.push_back(std::move(n));
    }
  }
  return c;
}

// A retention: whole hours, or `forever` (nullopt).
std::optional<std::int64_t> readRetention(const YAML::Node& node, const std::string& key) {
  constexpr std::int64_t kMaxHours = 24 * 3650;
  if (!node.IsScalar()) fail(key, "must be a number of hours or forever");
  const auto text = node.as<std::string>();
  if (text == "forever") return std::nullopt;
  std::int64_t hours = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), hours);
  if (ec != std::errc{} || ptr != text.data() + text.size() || hours < 1 || hours > kMaxHours) {
    fail(key, "must be a whole number of hours from 1 to " + std::to_string(kMaxHours) +
                  ", or forever, got '" + text + "'");
  }
  return hours * RetentionConfig::kHourUs;
}

StorageConfig readStorage(const YAML::Node& node) {
  rejectUnknownKeys(node, "storage",
                    {"path", "retention", "retention_interval_s", "max_bytes", "audit_max_bytes",
                     "sample_retention_hours", "max_queued_records"});
  StorageConfig s;
  if (node["path"]) s.path = readString(node["path"], "storage.path");
  if (node["retention"]) {
    const auto r = node["retention"];
    rejectUnknownKeys(
        r, "storage.retention",
        {"samples_hours", "drill_samples_hours", "gaps_hours", "events_hours", "audit_hours"});
    for (const auto& [name, into] :
         {std::pair{"samples_hours", &s.retention.samples_us},
          std::pair{"drill_samples_hours", &s.retention.drill_samples_us},
          std::pair{"gaps_hours", &s.retention.gaps_us},
          std::pair{"events_hours", &s.retention.events_us},
          std::pair{"audit_hours", &s.retention.audit_us}}) {
      if (r[name]) *into = readRetention(r[name], std::string("storage.retention.") + name);
    }
  }
  // The key of earlier versions, for raw samples.
  if (node["sample_retention_hours"]) {
    if (node["retention"] && node["retention"]["samples_hours"]) {
      fail("storage.sample_retention_hours",
           "is the old name of storage.retention.samples_hours; give only one of them");
    }
    s.retention.samples_us =
        readRetention(node["sample_retention_hours"], "storage.sample_retention_hours");
  }
  if (node["retention_interval_s"]) {
    s.retention_interval_us =
        readInt(node["retention_interval_s"], "storage.retention_interval_s", 10, 86'400) *
        1'000'000;
  }
  if (node["max_bytes"]) {
    s.max_bytes = readInt(node["max_bytes"], "storage.max_bytes", StorageConfig::kMinMaxBytes,
                          std::int64_t{1} << 50);
  }
  if (node["audit_max_bytes"]) {
    s.audit_max_bytes = readInt(node["audit_max_bytes"], "storage.audit_max_bytes", 1024 * 1024,
                                std::int64_t{1} << 50);
    if (s.max_bytes && *s.audit_max_bytes > *s.max_bytes / 2) {
      fail("storage.audit_max_bytes", "must be at most half of storage.max_bytes (" +
                                          std::to_string(*s.max_bytes / 2) +
                                          "), so that measurement data keeps the rest");
    }
  }
  if (node["max_queued_records"]) {
    s.max_queued_records = static_cast<std::size_t>(
        readInt(node["max_queued_records"], "storage.max_queued_records", 1000, 100'000'000));
  }
  return s;
}

}  // namespace

bool isLoopbackHost(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) != 1) return false;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

std::vector<std::vector<std::int32_t>> parseReplicaAssignment(const std::string& text,
                                                              const std::string& key) {
  std::vector<std::vector<std::int32_t>> out;
  std::stringstream partitions(text);
  std::string part;
  while (std::getline(partitions, part, ',')) {
    std::vector<std::int32_t> replicas;
    std::stringstream ids(part);
    std::string id;
    while (std::getline(ids, id, ':')) {
      std::int32_t value = -1;
      auto [ptr, ec] = std::from_chars(id.data(), id.data() + id.size(), value);
      if (id.empty() || ec != std::errc{} || ptr != id.data() + id.size() || value < 0) {
        fail(key, "'" + text + "' is not a list of broker ids like 1:2:3,2:3:1");
      }
      for (auto seen : replicas) {
        if (seen == value) fail(key, "broker " + id + " appears twice in '" + part + "'");
      }
      replicas.push_back(value);
    }
    if (replicas.empty()) fail(key, "empty partition in '" + text + "'");
    if (!out.empty() && replicas.size() != out.front().size()) {
      fail(key, "every partition needs the same number of replicas in '" + text + "'");
    }
    out.push_back(std::move(replicas));
  }
  if (out.empty()) fail(key, "must not be empty");
  return out;
}

HttpConfig readHttp(const YAML::Node& node) {
  if (!node.IsMap()) fail("http", "must be a mapping");
  rejectUnknownKeys(node, "http",
                    {"enabled", "host", "port", "auth", "token_file", "viewer_token_file",
                     "read_auth", "allowed_hosts", "web_dir", "max_connections",
                     "max_connections_per_peer", "read_timeout_ms", "max_body_bytes", "tls"});
  HttpConfig h;
  if (node["enabled"]) {
    try {
      h.enabled = node["enabled"].as<bool>();
    } catch (const YAML::Exception&) {
      fail("http.enabled", "must be true or false");
    }
  }
  if (node["host"]) h.host = readString(node["host"], "http.host");
  if (node["port"])
    h.port = static_cast<std::int32_t>(readInt(node["port"], "http.port", 0, 65535));
  if (node["auth"]) {
    const auto auth = readString(node["auth"], "http.auth");
    if (auth != "token" && auth != "none")
      fail("http.auth", "must be token or none, got '" + auth + "'");
    h.auth_none = auth == "none";
  }
  // Token files are relative to the working directory, like storage.path.
  const auto readToken = [](const YAML::Node& value, const std::string& key, std::string& file,
                            std::string& token) {
    file = readString(value, key);
    auto read = readTokenFile(file);
    if (!read) fail(key, read.error().message);
    token = std::move(*read);
  };
  if (node["token_file"]) readToken(node["token_file"], "http.token_file", h.token_file, h.token);
  if (node["viewer_token_file"]) {
    readToken(node["viewer_token_file"], "http.viewer_token_file", h.viewer_token_file,
              h.viewer_token);
  }
  if (h.auth_none && (!h.token_file.empty() || !h.viewer_token_file.empty())) {
    fail("http.auth", "none contradicts the token files configured: remove one or the other");
  }
  if (!h.viewer_token.empty() && h.viewer_token == h.token) {
    fail("http.viewer_token_file",
         "holds the operator's token: the viewer needs a token of its own");
  }
  if (node["read_auth"]) {
    try {
      h.read_auth = node["read_auth"].as<bool>();
    } catch (const YAML::Exception&) {
      fail("http.read_auth", "must be true or false");
    }
    if (h.read_auth && h.auth_none) fail("http.read_auth", "needs tokens, but http.auth is none");
  }
  if (node["allowed_hosts"]) {
    h.allowed_hosts = readStringList(node["allowed_hosts"], "http.allowed_hosts");
    for (const auto& name : h.allowed_hosts) {
      const bool ok = !name.empty() && name.find_first_of(" /@?#\t") == std::string::npos;
      if (!ok) fail("http.allowed_hosts", "'" + name + "' is not a host name (name or name:port)");
    }
  }
  if (node["web_dir"]) h.web_dir = readString(node["web_dir"], "http.web_dir");
  if (node["max_connections"])
    h.max_connections = readInt(node["max_connections"], "http.max_connections", 1, 100000);
  if (node["max_connections_per_peer"]) {
    h.max_connections_per_peer =
        readInt(node["max_connections_per_peer"], "http.max_connections_per_peer", 1, 100000);
  }
  if (node["read_timeout_ms"])
    h.read_timeout_ms = readInt(node["read_timeout_ms"], "http.read_timeout_ms", 100, 3'600'000);
  if (node["max_body_bytes"])
    h.max_body_bytes =
        readInt(node["max_body_bytes"], "http.max_body_bytes", 1024, 64 * 1024 * 1024);
  if (node["tls"]) {
    const auto tls = node["tls"];
    rejectUnknownKeys(tls, "http.tls", {"cert_file", "key_file", "client_ca_file"});
    if (!tls["cert_file"]) fail("http.tls.cert_file", "required with http.tls");
    if (!tls["key_file"]) fail("http.tls.key_file", "required with http.tls");
    h.tls.cert_file = readFileName(tls["cert_file"], "http.tls.cert_file");
    h.tls.key_file = readFileName(tls["key_file"], "http.tls.key_file");
    if (tls["client_ca_file"])
      h.tls.client_ca_file = readFileName(tls["client_ca_file"], "http.tls.client_ca_file");
  }
  return h;
}

namespace {

// A list of strings, each one of `allowed`.
std::vector<std::string> readChoices(const YAML::Node& value, const std::string& key,
                                     const std::set<std::string>& allowed) {
  auto list = readStringList(value, key);
  for (const auto& item : list) {
    if (!allowed.count(item)) {
      std::string known;
      for (const auto& a : allowed) known += (known.empty() ? "" : ", ") + a;
      fail(key, "'" + item + "' is not one of " + known);
    }
  }
  return list;
}

// Receiver `key`'s headers: valid names and values, and none that kfaild sets itself.
void checkReceiverHeaders(const std::map<std::string, std::string>& headers,
                          const std::string& key) {
  for (const auto& [name, value] : headers) {
    if (name.empty() || name.find_first_of(" :\r\n\t") != std::string::npos ||
        value.find_first_of("\r\n") != std::string::npos) {
      fail(key + ".headers." + name, "not a valid header name or value");
    }
    std::string lower;
    for (char c : name)
      lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    if (lower == "host" || lower == "content-length" || lower == "content-type" ||
        lower == "transfer-encoding") {
      fail(key + ".headers." + name, "set by kfaild");
    }
  }
}

// url or url_file into rc.url; whether it is https.
bool readReceiverUrl(const YAML::Node& r, const std::string& key, ReceiverConfig& rc,
                     std::vector<std::string>& inline_secrets) {
  // The URL is a secret (a Slack webhook's path is its credential): inline, ${env:NAME}, or
  // url_file.
  if (r["url"] && r["url_file"])
    fail(key + ".url_file", "and " + key + ".url are both set: keep one");
  if (r["url_file"]) {
    rc.url = readSecretFile(
        resolveEnvironment(readString(r["url_file"], key + ".url_file"), key + ".url_file"),
        key + ".url_file");
  } else {
    if (!r["url"]) fail(key + ".url", "required (or url_file)");
    const auto url = readString(r["url"], key + ".url");
    rc.url = resolveEnvironment(url, key + ".url");
    if (!isEnvironmentReference(url)) inline_secrets.push_back(key + ".url");
  }
  const auto url_key = key + (r["url_file"] ? ".url_file" : ".url");
  const bool https = rc.url.rfind("https://", 0) == 0;
  if (!https && rc.url.rfind("http://", 0) != 0)
    fail(url_key, "must start with http:// or https://");
  if (rc.url.find_first_of(" \t\r\n") != std::string::npos)
    fail(url_key, "must not contain white space");
  return https;
}

void readReceiverTls(const YAML::Node& tls, const std::string& tkey, bool https,
                     ReceiverConfig& rc) {
  rejectUnknownKeys(tls, tkey, {"ca_file", "cert_file", "key_file"});
  if (!https) fail(tkey, "needs an https:// url");
  if (tls["ca_file"]) rc.tls.ca_file = readFileName(tls["ca_file"], tkey + ".ca_file");
  if (tls["cert_file"]) rc.tls.cert_file = readFileName(tls["cert_file"], tkey + ".cert_file");
  if (tls["key_file"]) rc.tls.key_file = readFileName(tls["key_file"], tkey + ".key_file");
  if (rc.tls.cert_file.empty() != rc.tls.key_file.empty())
    fail(tkey, "cert_file and key_file go together");
}

// One of notifications.receivers; `names` has the names of those before it.
ReceiverConfig readReceiver(const YAML::Node& r, const std::string& key,
                            std::set<std::string>& names,
                            std::vector<std::string>& inline_secrets) {
  rejectUnknownKeys(r, key,
                    {"name", "type", "url", "url_file", "events", "verdicts", "headers", "tls",
                     "timeout_s", "alert_resolve_after_s", "include_operator_details"});
  ReceiverConfig rc;
  if (!r["name"]) fail(key + ".name", "required");
  rc.name = readString(r["name"], key + ".name");
  if (rc.name.empty() || rc.name.size() > 64 ||
      rc.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") != std::string::npos) {
    fail(key + ".name", "must be 1-64 characters of a-z, 0-9, '_' and '-', got '" + rc.name + "'");
  }
  if (!names.insert(rc.name).second) fail(key + ".name", "duplicate receiver name " + rc.name);
  if (!r["type"]) fail(key + ".type", "required (webhook, slack or alertmanager)");
  rc.type = readString(r["type"], key + ".type");
  if (rc.type != "webhook" && rc.type != "slack" && rc.type != "alertmanager") {
    fail(key + ".type", "must be webhook, slack or alertmanager, got '" + rc.type + "'");
  }
  const bool https = readReceiverUrl(r, key, rc, inline_secrets);
  if (r["events"]) {
    rc.events = readChoices(r["events"], key + ".events",
                            {"drill_finished", "drill_failed", "regression", "incident"});
  }
  if (r["verdicts"]) {
    rc.verdicts =
        readChoices(r["verdicts"], key + ".verdicts", {"pass", "fail", "inconclusive", "none"});
  }
  if (r["headers"]) {
    rc.headers = readSecretMap(
        r["headers"], key + ".headers", [](const std::string&) { return true; }, inline_secrets);
    checkReceiverHeaders(rc.headers, key);
  }
  if (r["tls"]) readReceiverTls(r["tls"], key + ".tls", https, rc);
  if (r["timeout_s"]) rc.timeout_ms = readInt(r["timeout_s"], key + ".timeout_s", 1, 300) * 1000;
  if (r["alert_resolve_after_s"]) {
    if (rc.type != "alertmanager")
      fail(key + ".alert_resolve_after_s", "only for type alertmanager");
    rc.alert_resolve_after_us =
        readInt(r["alert_resolve_after_s"], key + ".alert_resolve_after_s", 60, 30LL * 86400) *
        1'000'000;
  }
  if (r["include_operator_details"]) {
    try {
      rc.include_operator_details = r["include_operator_details"].as<bool>();
    } catch (const YAML::Exception&) {
      fail(key + ".include_operator_details", "must be true or false");
    }
  }
  return rc;
}

RetryConfig readRetry(const YAML::Node& r) {
  RetryConfig retry;
  rejectUnknownKeys(r, "notifications.retry", {"initial_s", "max_s", "max_attempts", "max_age_h"});
  if (r["initial_s"])
    retry.initial_us =
        readInt(r["initial_s"], "notifications.retry.initial_s", 1, 3600) * 1'000'000;
  if (r["max_s"])
    retry.max_us = readInt(r["max_s"], "notifications.retry.max_s", 1, 86400) * 1'000'000;
  if (retry.max_us < retry.initial_us)
    fail("notifications.retry.max_s", "must not be below initial_s");
  if (r["max_attempts"])
    retry.max_attempts = readInt(r["max_attempts"], "notifications.retry.max_attempts", 1, 1000);
  if (r["max_age_h"]) {
    retry.max_age_us = readInt(r["max_age_h"], "notifications.retry.max_age_h", 1, 24 * 30) *
                       RetentionConfig::kHourUs;
  }
  return retry;
}

IncidentNotifyConfig readIncidents(const YAML::Node& r) {
  IncidentNotifyConfig incidents;
  rejectUnknownKeys(r, "notifications.incidents", {"min_stall_s", "scan_interval_s", "lookback_h"});
  if (r["min_stall_s"]) {
    incidents.min_stall_us =
        readInt(r["min_stall_s"], "notifications.incidents.min_stall_s", 1, 86400) * 1'000'000;
  }
  if (r["scan_interval_s"]) {
    incidents.scan_interval_us =
        readInt(r["scan_interval_s"], "notifications.incidents.scan_interval_s", 1, 3600) *
        1'000'000;
  }
  if (r["lookback_h"]) {
    incidents.lookback_us =
        readInt(r["lookback_h"], "notifications.incidents.lookback_h", 1, 24 * 7) *
        RetentionConfig::kHourUs;
  }
  return incidents;
}

}  // namespace

NotificationsConfig readNotifications(const YAML::Node& node,
                                      std::vector<std::string>& inline_secrets) {
  rejectUnknownKeys(node, "notifications", {"receivers", "retry", "incidents", "external_url"});
  NotificationsConfig n;
  if (node["external_url"]) {
    n.external_url = readString(node["external_url"], "notifications.external_url");
    if (n.external_url.rfind("http://", 0) != 0 && n.external_url.rfind("https://", 0) != 0) {
      fail("notifications.external_url", "must start with http:// or https://");
    }
    while (!n.external_url.empty() && n.external_url.back() == '/') n.external_url.pop_back();
  }
  if (node["receivers"]) {
    const auto list = node["receivers"];
    if (!list.IsSequence()) fail("notifications.receivers", "must be a list of receivers");
    std::set<std::string> names;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const auto key = "notifications.receivers[" + std::to_string(i) + "]";
      n.receivers.push_back(readReceiver(list[i], key, names, inline_secrets));
    }
  }
  if (node["retry"]) n.retry = readRetry(node["retry"]);
  if (node["incidents"]) n.incidents = readIncidents(node["incidents"]);
  return n;
}

namespace {

// parseConfig, adding the keys of the secrets given inline to `inline_secrets`.
Config parseConfigText(const std::string& yaml_text, const std::string& origin,
                       std::vector<std::string>& inline_secrets) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(origin + ": not valid YAML: " + e.what());
  }
  try {
    if (!root.IsMap()) fail("(top level)", "must be a mapping");
    rejectUnknownKeys(
        root, "",
        {"log_level", "storage", "http", "shutdown_grace_s", "clusters", "notifications"});
    Config c;
    if (root["log_level"]) {
      c.log_level = readString(root["log_level"], "log_level");
      static const std::set<std::string> levels{"trace", "debug", "info", "warn", "error"};
      if (!levels.count(c.log_level)) fail("log_level", "one of trace, debug, info, warn, error");
    }
    if (root["storage"]) c.storage = readStorage(root["storage"]);
    if (root["http"]) c.http = readHttp(root["http"]);
    if (root["shutdown_grace_s"])
      c.shutdown_grace_s = readInt(root["shutdown_grace_s"], "shutdown_grace_s", 1, 3600);
    if (root["notifications"])
      c.notifications = readNotifications(root["notifications"], inline_secrets);
    const auto clusters = root["clusters"];
    if (!clusters || !clusters.IsSequence() || clusters.size() == 0) {
      fail("clusters", "required: a list of at least one cluster");
    }
    std::set<std::string> names;
    for (std::size_t i = 0; i < clusters.size(); ++i) {
      auto cluster =
          readCluster(clusters[i], "clusters[" + std::to_string(i) + "]", inline_secrets);
      if (!names.insert(cluster.name).second) {
        fail("clusters[" + std::to_string(i) + "].name", "duplicate cluster name " + cluster.name);
      }
      c.clusters.push_back(std::move(cluster));
    }
    return c;
  } catch (const YAML::Exception& e) {
    throw ConfigError(origin + ": " + e.what());
  } catch (const ConfigError& e) {
    throw ConfigError(origin + ": " + e.what());
  }
}

std::vector<std::string> inlineSecretWarnings(const std::vector<std::string>& inline_secrets,
                                              const std::string& path, unsigned mode) {
  const unsigned readable_by = mode & 044;
  if (readable_by == 0) return {};
  char octal[8];
  std::snprintf(octal, sizeof octal, "%04o", mode & 07777);
  const std::string who = readable_by == 044   ? "its group and others"
                          : readable_by == 040 ? "its group"
                                               : "others";
  std::vector<std::string> out;
  for (const auto& key : inline_secrets) {
    out.push_back(path + " (mode " + octal + ") is readable by " + who + " and holds the secret " +
                  key + " inline: move it to " + key +
                  "_file (a file only kfaild's user reads) or ${env:NAME}");
  }
  return out;
}

}  // namespace

Config parseConfig(const std::string& yaml_text, const std::string& origin) {
  std::vector<std::string> inline_secrets;
  return parseConfigText(yaml_text, origin, inline_secrets);
}

Config loadConfigFile(const std::string& path) {
  return loadConfigFileWithWarnings(path).config;
}

LoadedConfig loadConfigFileWithWarnings(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw ConfigError(path + ": cannot read the file");
  struct stat st{};
  std::string text;
  bool read_ok = ::fstat(fd, &st) == 0;
  char buffer[65536];
  while (read_ok) {
    const auto got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      read_ok = got == 0;
      break;
    }
    text.append(buffer, static_cast<std::size_t>(got));
  }
  const int read_errno = errno;
  ::close(fd);
  if (!read_ok) throw ConfigError(path + ": cannot read the file: " + std::strerror(read_errno));
  LoadedConfig loaded;
  std::vector<std::string> inline_secrets;
  loaded.config = parseConfigText(text, path, inline_secrets);
  loaded.warnings = inlineSecretWarnings(inline_secrets, path, static_cast<unsigned>(st.st_mode));
  return loaded;
}

}  // namespace kfaild::config
