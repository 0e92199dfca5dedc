#include "server/probe/java_protocol.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <fstream>
#include <sstream>

namespace kfaild::probe::java {
namespace {

// The line's words, at most `max` (the last takes the rest of the line).
std::vector<std::string_view> words(std::string_view line, std::size_t max) {
  std::vector<std::string_view> out;
  while (!line.empty() && out.size() + 1 < max) {
    const auto space = line.find(' ');
    if (space == std::string_view::npos) break;
    out.push_back(line.substr(0, space));
    line.remove_prefix(space + 1);
  }
  out.push_back(line);
  return out;
}

template <typename T>
bool number(std::string_view text, T& out) {
  if (text.empty()) return false;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && ptr == text.data() + text.size();
}

std::optional<Report> parseNumbers(ReportKind kind, const std::vector<std::string_view>& w) {
  Report r;
  r.kind = kind;
  bool ok = false;
  switch (kind) {
    case ReportKind::kHello:
      ok = w.size() == 3 && number(w[1], r.code) && number(w[2], r.t_ns);
      break;
    case ReportKind::kAck:
      ok = w.size() == 5 && number(w[1], r.slot) && number(w[2], r.seq) && number(w[3], r.t_ns) &&
           number(w[4], r.offset);
      break;
    case ReportKind::kError:
      ok = w.size() == 6 && number(w[1], r.slot) && number(w[2], r.seq) && number(w[3], r.t_ns) &&
           number(w[4], r.code) && !w[5].empty();
      if (ok) r.text = w[5];
      break;
    case ReportKind::kRecv:
      ok = w.size() == 5 && number(w[1], r.slot) && number(w[2], r.t_ns) &&
           number(w[3], r.offset) && !w[4].empty();
      if (ok) r.text = w[4];
      break;
    case ReportKind::kLeader:
      ok = w.size() == 5 && number(w[1], r.slot) && number(w[2], r.broker) &&
           number(w[3], r.epoch) && number(w[4], r.t_ns);
      break;
    default:
      break;
  }
  if (!ok || r.slot < 0) return std::nullopt;
  return r;
}

}  // namespace

std::optional<Report> parseReport(std::string_view line) {
  const auto verb = line.substr(0, line.find(' '));
  if (verb == "ok") {
    if (line != "ok") return std::nullopt;
    return Report{};
  }
  if (verb == "refused") {
    const auto w = words(line, 3);
    if (w.size() != 3 || w[1].empty()) return std::nullopt;
    Report r;
    r.kind = ReportKind::kRefused;
    r.key = w[1];
    r.text = w[2];
    return r;
  }
  static constexpr std::array<std::pair<std::string_view, ReportKind>, 5> kVerbs = {{
      {"hello", ReportKind::kHello},
      {"ack", ReportKind::kAck},
      {"error", ReportKind::kError},
      {"recv", ReportKind::kRecv},
      {"leader", ReportKind::kLeader},
  }};
  for (const auto& [name, kind] : kVerbs) {
    if (verb == name) return parseNumbers(kind, words(line, 7));
  }
  return std::nullopt;
}

void LineSplitter::append(std::string_view bytes, std::vector<std::string>& lines) {
  while (!bytes.empty()) {
    const auto nl = bytes.find('\n');
    if (nl == std::string_view::npos) {
      partial_.append(bytes);
      break;
    }
    partial_.append(bytes.substr(0, nl));
    bytes.remove_prefix(nl + 1);
    if (partial_.size() > kMaxLineBytes) overflowed_ = true;
    lines.push_back(std::move(partial_));
    partial_.clear();
  }
  if (partial_.size() > kMaxLineBytes) overflowed_ = true;
}

std::string escapeConfigValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string configLine(const std::string& key, const std::string& value) {
  return "config " + key + " " + escapeConfigValue(value) + "\n";
}

std::string assignLine(std::size_t slot, const std::string& topic, std::int32_t partition,
                       std::int64_t offset) {
  return "assign " + std::to_string(slot) + " " + topic + " " + std::to_string(partition) + " " +
         std::to_string(offset) + "\n";
}

std::string sendLine(std::size_t slot, std::int64_t seq, const std::string& body) {
  std::string out = "send ";
  out.reserve(body.size() + 32);
  out += std::to_string(slot);
  out += ' ';
  out += std::to_string(seq);
  out += ' ';
  out += body;
  out += '\n';
  return out;
}

common::Instant instantOf(std::int64_t t_ns, common::Instant now) {
  const common::MonoMicros mono = std::min(t_ns / 1000, now.mono);
  return {now.wall - (now.mono - mono), mono};
}

bool sameClock(std::int64_t hello_ns, common::MonoMicros before, common::MonoMicros after) {
  // nanoTime truncated to µs may fall just below `before` taken in the same microsecond.
  const auto hello_us = hello_ns / 1000;
  return hello_us >= before - 1 && hello_us <= after;
}

bool sharedKey(std::string_view key) {
  static constexpr std::string_view kShared[] = {
      "reconnect.backoff.ms",
      "reconnect.backoff.max.ms",
      "request.timeout.ms",
      "retry.backoff.ms",
      "retry.backoff.max.ms",
      "metadata.max.age.ms",
      "socket.connection.setup.timeout.ms",
      "connections.max.idle.ms",
      "linger.ms",
      "batch.size",
      "compression.type",
      "enable.idempotence",
      "max.in.flight.requests.per.connection",
      "retries",
      "delivery.timeout.ms",
      "fetch.min.bytes",
      "fetch.max.bytes",
      "max.partition.fetch.bytes",
      "isolation.level",
      "client.rack",
      "client.dns.lookup",
      "ssl.cipher.suites",
      "ssl.endpoint.identification.algorithm",
      "ssl.keystore.location",
      "ssl.keystore.password",
      "sasl.kerberos.service.name",
  };
  return std::find(std::begin(kShared), std::end(kShared), key) != std::end(kShared);
}

namespace {

std::optional<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string upper(std::string text) {
  for (auto& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

// A value inside a JAAS option: quoted, with quotes and backslashes escaped.
std::string jaasQuoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

bool mapSasl(const std::map<std::string, std::string>& client, JavaSettings& out,
             std::string& error) {
  auto mechanism = client.contains("sasl.mechanisms")  ? client.at("sasl.mechanisms")
                   : client.contains("sasl.mechanism") ? client.at("sasl.mechanism")
                                                       : std::string();
  if (mechanism.empty() && !client.contains("sasl.username")) return true;
  if (mechanism.empty()) mechanism = "GSSAPI";  // librdkafka's default
  mechanism = upper(mechanism);
  std::string module;
  if (mechanism == "PLAIN") {
    module = "org.apache.kafka.common.security.plain.PlainLoginModule";
  } else if (mechanism == "SCRAM-SHA-256" || mechanism == "SCRAM-SHA-512") {
    module = "org.apache.kafka.common.security.scram.ScramLoginModule";
  } else {
    error = "sasl.mechanism: " + mechanism +
            " is not mapped to the Java client (PLAIN and SCRAM-SHA-256/512 are)";
    return false;
  }
  out.settings["sasl.mechanism"] = mechanism;
  const auto user = client.find("sasl.username");
  const auto password = client.find("sasl.password");
  if (user == client.end() || password == client.end()) {
    error = "sasl.username: SASL " + mechanism + " needs sasl.username and sasl.password";
    return false;
  }
  out.settings["sasl.jaas.config"] = module + " required username=" + jaasQuoted(user->second) +
                                     " password=" + jaasQuoted(password->second) + ";";
  return true;
}

bool mapSsl(const std::map<std::string, std::string>& client, JavaSettings& out,
            std::string& error) {
  if (const auto ca = client.find("ssl.ca.location"); ca != client.end()) {
    out.settings["ssl.truststore.type"] = "PEM";
    out.settings["ssl.truststore.location"] = ca->second;
  }
  const auto cert = client.find("ssl.certificate.location");
  const auto key = client.find("ssl.key.location");
  if ((cert == client.end()) != (key == client.end())) {
    error = std::string(cert == client.end() ? "ssl.certificate.location" : "ssl.key.location") +
            ": the Java client needs both ssl.certificate.location and ssl.key.location";
    return false;
  }
  if (cert != client.end()) {
    const auto chain = readFile(cert->second);
    const auto pem_key = readFile(key->second);
    if (!chain || !pem_key) {
      error = std::string(chain ? "ssl.key.location" : "ssl.certificate.location") +
              ": cannot read " + (chain ? key->second : cert->second);
      return false;
    }
    out.settings["ssl.keystore.type"] = "PEM";
    out.settings["ssl.keystore.certificate.chain"] = *chain;
    out.settings["ssl.keystore.key"] = *pem_key;
    if (const auto pass = client.find("ssl.key.password"); pass != client.end()) {
      out.settings["ssl.key.password"] = pass->second;
    }
  }
  if (client.contains("ssl.keystore.location")) out.settings["ssl.keystore.type"] = "PKCS12";
  return true;
}

}  // namespace

std::optional<JavaSettings> javaSettings(const std::map<std::string, std::string>& client,
                                         const std::map<std::string, std::string>& settings,
                                         std::string& error) {
  JavaSettings out;
  static constexpr std::string_view kMapped[] = {
      "security.protocol", "sasl.mechanisms",          "sasl.mechanism",   "sasl.username",
      "sasl.password",     "ssl.ca.location",          "ssl.key.location", "ssl.key.password",
      "fetch.wait.max.ms", "ssl.certificate.location",
  };
  for (const auto& [key, value] : client) {
    if (std::find(std::begin(kMapped), std::end(kMapped), key) != std::end(kMapped)) continue;
    if (!sharedKey(key)) {
      out.ignored.push_back(key);
      continue;
    }
    out.settings[key] = value;
  }
  if (const auto p = client.find("security.protocol"); p != client.end()) {
    out.settings["security.protocol"] = upper(p->second);
  }
  if (const auto wait = client.find("fetch.wait.max.ms"); wait != client.end()) {
    out.settings["fetch.max.wait.ms"] = wait->second;
  }
  if (const auto algorithm = out.settings.find("ssl.endpoint.identification.algorithm");
      algorithm != out.settings.end() && algorithm->second == "none") {
    algorithm->second.clear();
  }
  if (!mapSasl(client, out, error) || !mapSsl(client, out, error)) return std::nullopt;
  for (const auto& [key, value] : settings) out.settings[key] = value;
  return out;
}

}  // namespace kfaild::probe::java
