#include "server/fault/kafka_log.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <ctime>
#include <map>
#include <stdexcept>

#include "server/fault/command.h"

namespace kfaild::fault {
namespace {

bool readDigits(std::string_view s, std::size_t pos, std::size_t len, int& out) {
  if (pos + len > s.size()) return false;
  for (std::size_t i = pos; i < pos + len; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  const auto [ptr, ec] = std::from_chars(s.data() + pos, s.data() + pos + len, out);
  return ec == std::errc{} && ptr == s.data() + pos + len;
}

std::string_view trimLineEnd(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool isLevel(std::string_view word) {
  return word == "TRACE" || word == "DEBUG" || word == "INFO" || word == "WARN" ||
         word == "ERROR" || word == "FATAL";
}

// A log4j logger name: a Java class or category name, never with a space. Kafka's messages
// often end in parentheses of their own ("... (under-min-isr)."), so only a last parenthesised
// word that closes the line counts as the logger.
bool isLoggerName(std::string_view name) {
  if (name.empty()) return false;
  for (const char c : name) {
    if (std::isspace(static_cast<unsigned char>(c)) || c == '(' || c == ')') return false;
  }
  return true;
}

}  // namespace

std::optional<LogZone> logZoneFromConfig(std::string_view name) {
  if (name == "UTC" || name == "utc") return LogZone::utc;
  if (name == "local") return LogZone::local;
  return std::nullopt;
}

std::optional<BrokerLogLine> parseKafkaLogLine(std::string_view line, LogZone zone) {
  line = trimLineEnd(line);
  // "[yyyy-MM-dd HH:mm:ss,SSS] " is 26 characters.
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, millis = 0;
  if (line.size() < 26 || line[0] != '[' || !readDigits(line, 1, 4, year) || line[5] != '-' ||
      !readDigits(line, 6, 2, month) || line[8] != '-' || !readDigits(line, 9, 2, day) ||
      line[11] != ' ' || !readDigits(line, 12, 2, hour) || line[14] != ':' ||
      !readDigits(line, 15, 2, minute) || line[17] != ':' || !readDigits(line, 18, 2, second) ||
      (line[20] != ',' && line[20] != '.') || !readDigits(line, 21, 3, millis) || line[24] != ']' ||
      line[25] != ' ') {
    return std::nullopt;
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  std::time_t secs = 0;
  if (zone == LogZone::utc) {
    secs = timegm(&tm);
  } else {
    // The broker's zone decides summer time, so let mktime work it out (-1) rather than assume.
    tm.tm_isdst = -1;
    secs = std::mktime(&tm);
  }
  if (secs == static_cast<std::time_t>(-1)) return std::nullopt;

  std::string_view rest = line.substr(26);
  const auto space = rest.find(' ');
  const std::string_view level = rest.substr(0, space);
  if (!isLevel(level)) return std::nullopt;
  rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);

  BrokerLogLine out;
  out.t = static_cast<common::WallMicros>(secs) * 1'000'000 + millis * 1'000;
  out.level = std::string(level);
  const auto open = rest.rfind(" (");
  if (!rest.empty() && rest.back() == ')' && open != std::string_view::npos &&
      isLoggerName(rest.substr(open + 2, rest.size() - open - 3))) {
    out.logger = std::string(rest.substr(open + 2, rest.size() - open - 3));
    out.message = std::string(rest.substr(0, open));
  } else {
    out.message = std::string(rest);
  }
  return out;
}

std::vector<BrokerLogLine> selectKafkaLogLines(std::string_view text, const std::string& file,
                                               LogZone zone, common::WallMicros since,
                                               const std::vector<std::string>& patterns) {
  std::vector<BrokerLogLine> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view raw = text.substr(pos, end - pos);
    pos = end + 1;
    if (raw.empty() || raw.front() != '[') continue;
    auto line = parseKafkaLogLine(raw, zone);
    if (!line || line->t < since) continue;
    bool wanted = patterns.empty();
    for (const auto& p : patterns) {
      if (line->message.find(p) != std::string::npos) {
        wanted = true;
        break;
      }
    }
    if (!wanted) continue;
    line->file = file;
    out.push_back(std::move(*line));
  }
  // The text may be a rolled file and the current one after it: in time order whatever came first.
  std::stable_sort(out.begin(), out.end(),
                   [](const BrokerLogLine& a, const BrokerLogLine& b) { return a.t < b.t; });
  return out;
}

std::string rolledLogsGrepScript(const std::string& log_dir, const std::string& file,
                                 const std::vector<std::string>& patterns, std::int64_t since_s) {
  std::string grep = "grep -h -F";
  if (patterns.empty()) grep += " -e ''";
  for (const auto& p : patterns) grep += " -e " + shellQuote(p);
  const std::string path = shellQuote(log_dir) + "/" + shellQuote(file);
  return "set --\n"
         "for r in " +
         path +
         ".*; do\n"
         "  [ -f \"$r\" ] && [ \"$(stat -c %Y \"$r\" 2>/dev/null || echo 0)\" -ge " +
         std::to_string(since_s) +
         " ] && set -- \"$@\" \"$r\"\n"
         "done\n" +
         grep + " -- \"$@\" " + path + "\n";
}

namespace {

// controller.log lines about a broker, by what they mean.
struct ControllerMark {
  const char* needle;
  const char* kind;
};
constexpr ControllerMark kControllerMarks[] = {
    {"because its session has timed out", "fenced"},
    {"has requested and been granted a controlled shutdown", "controlled_shutdown"},
    // A broker that leads nothing is let go at once: a graceful shutdown all the same.
    {"has requested and been granted an immediate shutdown", "controlled_shutdown"},
    {"to shut down has been granted", "shutdown_granted"},
};

// The lines isrShrinkEvents reads, as readFailoverLogs asks for them.
constexpr std::string_view kShrinking = "] Shrinking ISR from ";
constexpr std::string_view kUpdated = "] ISR updated to ";
constexpr std::string_view kBecomeLeader = "Skipped the become-leader state change for ";

// "1,3,2" or "1, 3, 2" → {1, 2, 3}, sorted (the lines name one ISR in different orders); nullopt
// unless it is a list of numbers.
std::optional<std::vector<std::int32_t>> brokerSet(std::string_view text) {
  std::vector<std::int32_t> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    auto comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    auto item = text.substr(pos, comma - pos);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    if (item.empty() || item.find_first_not_of("0123456789") != std::string_view::npos)
      return std::nullopt;
    out.push_back(static_cast<std::int32_t>(std::stol(std::string(item))));
    pos = comma + 1;
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The list at `at`, up to the next space or '.' ("1,2. Leader: ..." / "1,2  and version ...").
std::string_view listAt(std::string_view text, std::size_t at) {
  auto end = text.find_first_of(" .", at);
  return text.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
}

// The partition of one of `topics` that `prefix` + "<topic>-<n>" + `suffix` names in `message`:
// the topic and n, and where the text after it starts.
struct NamedPartition {
  std::string topic;
  std::int32_t partition = -1;
  std::size_t rest = 0;
};
std::optional<NamedPartition> partitionNamed(std::string_view message,
                                             const std::vector<std::string>& topics,
                                             std::string_view prefix, char suffix) {
  for (const auto& topic : topics) {
    const auto marker = std::string(prefix) + topic + "-";
    const auto at = message.find(marker);
    if (at == std::string_view::npos) continue;
    const auto number_at = at + marker.size();
    const auto number_end = message.find(suffix, number_at);
    if (number_end == std::string_view::npos) continue;
    const auto number = message.substr(number_at, number_end - number_at);
    // "orders-x-0" is another topic's partition, which a later name of `topics` may match.
    if (number.empty() || number.size() > 9 ||
        number.find_first_not_of("0123456789") != std::string_view::npos) {
      continue;
    }
    return NamedPartition{topic, static_cast<std::int32_t>(std::stol(std::string(number))),
                          number_end};
  }
  return std::nullopt;
}

// A failover event read from `line`, its clock's offset and uncertainty with it.
FailoverLogEvent fromLine(const BrokerLogLine& line, std::string kind, std::int32_t broker,
                          std::int32_t node, std::optional<std::string> topic = std::nullopt,
                          std::optional<std::int32_t> partition = std::nullopt) {
  return {line.t,
          std::move(kind),
          broker,
          node,
          line.file,
          line.message,
          std::move(topic),
          partition,
          line.clock_offset_us,
          line.clock_uncertainty_us};
}

}  // namespace

std::vector<FailoverLogEvent> isrShrinkEvents(std::vector<BrokerLogLine> lines,
                                              const std::vector<std::string>& topics,
                                              std::int32_t node) {
  std::stable_sort(lines.begin(), lines.end(),
                   [](const BrokerLogLine& a, const BrokerLogLine& b) { return a.t < b.t; });
  std::vector<FailoverLogEvent> out;
  // Per partition: the ISR a shrink is waiting to make, and the replicas it drops.
  struct Pending {
    std::vector<std::int32_t> isr;
    std::vector<std::int32_t> dropped;
  };
  std::map<std::pair<std::string, std::int32_t>, Pending> pending;
  // `answer`: the controller's answer to the leader's own request, which ends the shrink whatever
  // ISR it gives; a metadata update may be another change that came first.
  const auto inForce = [&](const BrokerLogLine& line, const NamedPartition& named,
                           const std::optional<std::vector<std::int32_t>>& isr, bool answer) {
    const auto it = pending.find({named.topic, named.partition});
    if (!isr || it == pending.end()) return;
    if (*isr == it->second.isr) {
      const auto& dropped = it->second.dropped;
      out.push_back(fromLine(line, "isr_shrink", dropped.size() == 1 ? dropped.front() : -1, node,
                             named.topic, named.partition));
    } else if (!answer) {
      return;
    }
    pending.erase(it);
  };
  for (const auto& line : lines) {
    const std::string_view message = line.message;
    if (const auto b = message.find(kBecomeLeader); b != std::string_view::npos) {
      // state-change.log: the metadata brought the controller's new ISR before its answer did.
      const auto named = partitionNamed(message.substr(b), topics, kBecomeLeader, ' ');
      const auto isr_at = message.find("isr=[", b);
      if (!named || isr_at == std::string_view::npos) continue;
      const auto close = message.find(']', isr_at);
      if (close == std::string_view::npos) continue;
      inForce(line, *named, brokerSet(message.substr(isr_at + 5, close - isr_at - 5)), false);
      continue;
    }
    const auto named = partitionNamed(message, topics, "[Partition ", ' ');
    if (!named) continue;
    if (const auto s = message.find(kShrinking, named->rest); s != std::string_view::npos) {
      const auto from_at = s + kShrinking.size();
      const auto from = brokerSet(listAt(message, from_at));
      const auto to_word = message.find(" to ", from_at);
      if (!from || to_word == std::string_view::npos) continue;
      const auto to = brokerSet(listAt(message, to_word + 4));
      if (!to) continue;
      Pending shrink{*to, {}};
      for (auto id : *from) {
        if (!std::binary_search(to->begin(), to->end(), id)) shrink.dropped.push_back(id);
      }
      if (!shrink.dropped.empty()) pending[{named->topic, named->partition}] = std::move(shrink);
    } else if (const auto u = message.find(kUpdated, named->rest); u != std::string_view::npos) {
      inForce(line, *named, brokerSet(listAt(message, u + kUpdated.size())), true);
    }
  }
  return out;
}

std::vector<FailoverLogEvent> readFailoverLogs(const std::vector<LogSource>& nodes,
                                               std::int32_t target,
                                               const std::vector<std::string>& topics,
                                               common::WallMicros since) {
  std::vector<FailoverLogEvent> out;
  std::vector<std::string> controller_needles;
  for (const auto& m : kControllerMarks) controller_needles.emplace_back(m.needle);
  // "Fencing broker 1 at epoch", "Unfenced broker 1 has requested", "request from broker 1 to shut
  // down"
  const std::string subject = "broker " + std::to_string(target) + " ";
  for (const auto& source : nodes) {
    if (source.injector == nullptr) continue;
    if (source.controller) {
      auto lines = source.injector->logLines("controller.log", since, controller_needles);
      if (!lines) continue;
      for (const auto& line : *lines) {
        if (line.message.find(subject) == std::string::npos) continue;
        for (const auto& m : kControllerMarks) {
          if (line.message.find(m.needle) == std::string::npos) continue;
          out.push_back(fromLine(line, m.kind, target, source.node));
        }
      }
      continue;
    }
    std::vector<std::string> needles;
    for (const auto& t : topics) needles.push_back("Leader " + t + "-");
    needles.emplace_back(kBecomeLeader);
    std::vector<BrokerLogLine> isr_lines;
    if (auto lines = source.injector->logLines("state-change.log", since, needles); lines) {
      for (const auto& line : *lines) {
        if (line.message.find(kBecomeLeader) != std::string::npos) {
          isr_lines.push_back(line);
          continue;
        }
        if (line.message.find("starts at leader epoch") == std::string::npos) continue;
        for (const auto& t : topics) {
          const auto marker = "Leader " + t + "-";
          const auto at = line.message.find(marker);
          if (at == std::string::npos) continue;
          const auto rest = line.message.substr(at + marker.size());
          std::int32_t partition = -1;
          try {
            partition = std::stoi(rest.substr(0, rest.find(' ')));
          } catch (const std::exception&) {
            continue;
          }
          out.push_back(
              fromLine(line, "leader_epoch_start", source.node, source.node, t, partition));
        }
      }
    }
    std::vector<std::string> server_needles = {std::string(kShrinking), std::string(kUpdated)};
    if (source.node == target) server_needles.emplace_back("Terminating process due to signal");
    if (auto lines = source.injector->logLines("server.log", since, server_needles); lines) {
      for (auto& line : *lines) {
        if (source.node == target &&
            line.message.find("Terminating process due to signal") != std::string::npos) {
          out.push_back(fromLine(line, "signal_received", target, source.node));
        } else {
          isr_lines.push_back(std::move(line));
        }
      }
    }
    for (auto& shrink : isrShrinkEvents(std::move(isr_lines), topics, source.node))
      out.push_back(std::move(shrink));
  }
  return out;
}

}  // namespace kfaild::fault
