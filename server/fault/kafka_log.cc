#include "server/fault/kafka_log.h"

#include <cctype>
#include <charconv>
#include <stdexcept>
#include <ctime>

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
  return out;
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
    {"to shut down has been granted", "shutdown_granted"},
};

}  // namespace

std::vector<FailoverLogEvent> readFailoverLogs(const std::vector<LogSource>& nodes, std::int32_t target,
                                               const std::vector<std::string>& topics, common::WallMicros since) {
  std::vector<FailoverLogEvent> out;
  std::vector<std::string> controller_needles;
  for (const auto& m : kControllerMarks) controller_needles.emplace_back(m.needle);
  // "Fencing broker 1 at epoch", "Unfenced broker 1 has requested", "request from broker 1 to shut down"
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
          out.push_back({line.t, m.kind, target, source.node, line.file, line.message, std::nullopt, std::nullopt});
        }
      }
      continue;
    }
    std::vector<std::string> needles;
    for (const auto& t : topics) needles.push_back("Leader " + t + "-");
    if (auto lines = source.injector->logLines("state-change.log", since, needles); lines) {
      for (const auto& line : *lines) {
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
          out.push_back({line.t, "leader_epoch_start", source.node, source.node, line.file, line.message, t, partition});
        }
      }
    }
    if (source.node == target) {
      if (auto lines = source.injector->logLines("server.log", since, {"Terminating process due to signal"}); lines) {
        for (const auto& line : *lines) {
          out.push_back({line.t, "signal_received", target, source.node, line.file, line.message, std::nullopt, std::nullopt});
        }
      }
    }
  }
  return out;
}

}  // namespace kfaild::fault
