#include "api/query_params.h"

#include <charconv>

#include "api/errc.h"
#include "server/common/time_format.h"
#include "server/probe/probe_status.h"

namespace kfaild::api {
namespace {

Error invalid(std::string_view name, const std::string& rule, std::string_view got) {
  return Error{errc::invalid_parameter,
               std::string(name) + ": " + rule + ", got \"" + printable(got, 100) + "\""};
}

std::string seconds(std::int64_t micros) {
  const std::int64_t whole = micros / 1'000'000;
  const std::int64_t fraction = micros % 1'000'000;
  if (fraction == 0) return std::to_string(whole) + " s";
  std::string frac = std::to_string(fraction + 1'000'000).substr(1);
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  return std::to_string(whole) + "." + frac + " s";
}

// parseRfc3339() takes any day up to 31; RFC 3339 (and OpenAPI's date-time) does not.
bool isCalendarDate(std::string_view text) {
  const auto number = [&text](std::size_t pos, std::size_t len) {
    int value = 0;
    std::from_chars(text.data() + pos, text.data() + pos + len, value);
    return value;
  };
  const int year = number(0, 4);
  const int month = number(5, 2);
  const int day = number(8, 2);
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return day <= kDays[month - 1] + (month == 2 && leap ? 1 : 0);
}

}  // namespace

Result<std::int64_t> parseInteger(std::string_view what, std::string_view text, std::int64_t min,
                                  std::int64_t max) {
  const std::string rule =
      "must be an integer between " + std::to_string(min) + " and " + std::to_string(max);
  std::int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || ptr != text.data() + text.size() || value < min ||
      value > max) {
    return invalid(what, rule, text);
  }
  return value;
}

bool isTopicName(std::string_view text) {
  if (text.empty() || text.size() > 249 || text == "." || text == "..") return false;
  for (const char c : text) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

Result<QueryReader> QueryReader::create(const QueryParams& params,
                                        std::initializer_list<std::string_view> allowed) {
  for (std::size_t i = 0; i < params.size(); ++i) {
    const std::string& name = params[i].first;
    bool known = false;
    for (const auto candidate : allowed) known = known || candidate == name;
    if (!known) {
      std::string list;
      for (const auto candidate : allowed) {
        list += (list.empty() ? "" : ", ") + std::string(candidate);
      }
      return Error{errc::unknown_parameter, "unknown query parameter \"" + printable(name, 64) +
                                                "\"; this endpoint takes " +
                                                (list.empty() ? std::string("none") : list)};
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (params[j].first == name) {
        return Error{errc::invalid_parameter, name + ": given more than once"};
      }
    }
  }
  return QueryReader(params);
}

std::optional<std::string_view> QueryReader::raw(std::string_view name) const {
  for (const auto& [key, value] : params_) {
    if (key == name) return std::string_view(value);
  }
  return std::nullopt;
}

Result<std::optional<std::int64_t>> QueryReader::integer(std::string_view name, std::int64_t min,
                                                         std::int64_t max) const {
  const auto text = raw(name);
  if (!text) return std::optional<std::int64_t>();
  auto value = parseInteger(name, *text, min, max);
  if (!value) return value.error();
  return std::optional<std::int64_t>(*value);
}

Result<std::optional<common::WallMicros>> QueryReader::time(std::string_view name) const {
  const auto text = raw(name);
  if (!text) return std::optional<common::WallMicros>();
  const auto parsed = common::parseRfc3339(*text);
  if (!parsed || !isCalendarDate(*text)) {
    return invalid(name,
                   "must be an RFC 3339 date-time with an offset, e.g. "
                   "\"2026-11-30T04:38:30.123456Z\" (a '+' offset must be sent as %2B)",
                   *text);
  }
  return std::optional<common::WallMicros>(*parsed);
}

Result<std::optional<std::string>> QueryReader::oneOf(
    std::string_view name, const std::vector<std::string_view>& choices) const {
  const auto text = raw(name);
  if (!text) return std::optional<std::string>();
  std::string list;
  for (const auto choice : choices) {
    if (choice == *text) return std::optional<std::string>(std::string(*text));
    list += (list.empty() ? "" : ", ") + std::string(choice);
  }
  return invalid(name, "must be one of " + list, *text);
}

Result<std::optional<std::string>> QueryReader::topic(std::string_view name) const {
  const auto text = raw(name);
  if (!text) return std::optional<std::string>();
  // kfaild's own streams (the control-plane probe's) are named like topics but with a ':'.
  if (!isTopicName(*text) && !probe::isOwnStream(*text)) {
    return invalid(name,
                   "must be a Kafka topic name (1 to 249 of a-z A-Z 0-9 . _ -, not \".\" or "
                   "\"..\") or kfaild:control, kfaild:commit, kfaild:txn",
                   *text);
  }
  return std::optional<std::string>(std::string(*text));
}

Result<std::optional<std::string>> QueryReader::identifier(std::string_view name) const {
  const auto text = raw(name);
  if (!text) return std::optional<std::string>();
  bool ok = !text->empty() && text->size() <= 64 && (*text)[0] >= 'a' && (*text)[0] <= 'z';
  for (const char c : *text) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_');
  }
  if (!ok) {
    return invalid(name, "must be a lower-case identifier ([a-z][a-z0-9_]*, at most 64 characters)",
                   *text);
  }
  return std::optional<std::string>(std::string(*text));
}

Result<storage::TimeRange> QueryReader::range(common::WallMicros now,
                                              std::int64_t default_window_us,
                                              std::optional<std::int64_t> max_window_us) const {
  const auto from = time("from");
  if (!from) return from.error();
  const auto to = time("to");
  if (!to) return to.error();
  storage::TimeRange range;
  range.to_us = to->value_or(now);
  range.from_us = from->has_value() ? **from : range.to_us - default_window_us;
  // `from` at or after `to` is the empty range: a valid question (any two date-times are, by
  // the schema) whose answer is empty; every store query reads [from, to) as such.
  if (max_window_us && range.to_us - range.from_us > *max_window_us) {
    return Error{errc::invalid_parameter,
                 "from, to: the range spans " + seconds(range.to_us - range.from_us) +
                     ", more than the " + seconds(*max_window_us) + " allowed (from " +
                     common::formatRfc3339(range.from_us) + ", to " +
                     common::formatRfc3339(range.to_us) + ")"};
  }
  return range;
}

}  // namespace kfaild::api
