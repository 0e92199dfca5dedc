#include "server/drill/cron.h"

#include <algorithm>
#include <array>
#include <bit>
#include <limits>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "server/drill/errc.h"

namespace kfaild::drill {
namespace {

constexpr std::int64_t kMicrosPerMinute = 60'000'000;
constexpr std::int64_t kMinutesPerDay = 24 * 60;
// Five years hold at most two leap days; 5 x 366 is five years from any start.
constexpr std::int64_t kHorizonDays = 5 * 366;
// Any number above every field's maximum; keeps "99999999999" from overflowing an int.
constexpr int kSaturated = 1'000'000;

constexpr std::array<std::string_view, 12> kMonthNames = {"jan", "feb", "mar", "apr", "may", "jun",
                                                          "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr std::array<std::string_view, 7> kDayNames = {"sun", "mon", "tue", "wed",
                                                       "thu", "fri", "sat"};

struct Field {
  int position;  // 1-based, as the messages count
  std::string_view name;
  int low;
  int high;
  std::span<const std::string_view> names;  // names[i] stands for the value first_name + i
  int first_name;
  std::string_view name_kind;  // "month name", "day name"
};

constexpr std::array<Field, 5> kFields = {{
    {1, "minute", 0, 59, {}, 0, ""},
    {2, "hour", 0, 23, {}, 0, ""},
    {3, "day-of-month", 1, 31, {}, 0, ""},
    {4, "month", 1, 12, kMonthNames, 1, "month name"},
    {5, "day-of-week", 0, 7, kDayNames, 0, "day name"},
}};

struct Macro {
  std::string_view name;
  std::string_view fields;
};

constexpr std::array<Macro, 7> kMacros = {{
    {"@yearly", "0 0 1 1 *"},
    {"@annually", "0 0 1 1 *"},
    {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"},
    {"@daily", "0 0 * * *"},
    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
}};

Error cronError(std::string message) {
  return drillError(errc::invalid_cron, std::move(message));
}

Error fieldError(const Field& field, const std::string& message) {
  return cronError("field " + std::to_string(field.position) + " (" + std::string(field.name) +
                   "): " + message);
}

std::string quoted(std::string_view text) {
  return "'" + std::string(text) + "'";
}

bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v';
}
bool isDigit(char c) {
  return c >= '0' && c <= '9';
}

std::string lowered(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::vector<std::string_view> splitOnSpace(std::string_view text) {
  std::vector<std::string_view> tokens;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && isSpace(text[i])) ++i;
    const std::size_t start = i;
    while (i < text.size() && !isSpace(text[i])) ++i;
    if (i > start) tokens.push_back(text.substr(start, i - start));
  }
  return tokens;
}

std::optional<int> parseDigits(std::string_view text) {
  if (text.empty()) return std::nullopt;
  int value = 0;
  for (const char c : text) {
    if (!isDigit(c)) return std::nullopt;
    value = std::min(value * 10 + (c - '0'), kSaturated);
  }
  return value;
}

// One value of a field: a number or, in month and day-of-week, a name.
Result<int> parseValue(const Field& field, std::string_view text) {
  if (const auto number = parseDigits(text)) {
    if (*number < field.low || *number > field.high) {
      return fieldError(field, std::string(text) + " is out of range " + std::to_string(field.low) +
                                   "-" + std::to_string(field.high));
    }
    return *number;
  }
  const std::string name = lowered(text);
  for (std::size_t i = 0; i < field.names.size(); ++i) {
    if (field.names[i] == name) return field.first_name + static_cast<int>(i);
  }
  if (field.names.empty()) return fieldError(field, quoted(text) + " is not a number");
  return fieldError(field, quoted(text) + " is not a number or a " + std::string(field.name_kind));
}

// One list element: `*`, `n`, `a-b`, `*/s` or `a-b/s`. Sets its values in `bits`.
Status parseElement(const Field& field, std::string_view element, std::uint64_t& bits) {
  const std::size_t slash = element.find('/');
  const std::string_view base = element.substr(0, slash);
  int step = 1;
  if (slash != std::string_view::npos) {
    const std::string_view step_text = element.substr(slash + 1);
    if (step_text.find('/') != std::string_view::npos) {
      return fieldError(field, "more than one '/' in " + quoted(element));
    }
    if (base.empty()) return fieldError(field, quoted(element) + " has nothing before '/'");
    if (step_text.empty()) return fieldError(field, quoted(element) + " has no step after '/'");
    const auto parsed = parseDigits(step_text);
    if (!parsed) return fieldError(field, "step " + quoted(step_text) + " is not a number");
    if (*parsed == 0) return fieldError(field, "step 0 is not allowed");
    step = *parsed;
  }

  int first = field.low;
  int last = field.high;
  if (base != "*") {
    const std::size_t dash = base.find('-');
    if (dash == std::string_view::npos) {
      // Vixie cron reads `5/15` as an error, cronie as `5-59/15`; refusing keeps the two apart.
      if (slash != std::string_view::npos) {
        return fieldError(field, "step in " + quoted(element) +
                                     " needs a range or '*' before '/' (e.g. " + std::string(base) +
                                     "-" + std::to_string(field.high) +
                                     std::string(element.substr(slash)) + ")");
      }
      const auto value = parseValue(field, base);
      if (!value) return value.error();
      bits |= std::uint64_t{1} << *value;
      return okStatus();
    }
    const std::string_view from = base.substr(0, dash);
    const std::string_view to = base.substr(dash + 1);
    if (to.find('-') != std::string_view::npos) {
      return fieldError(field, "more than one '-' in " + quoted(element));
    }
    if (from.empty()) return fieldError(field, "range " + quoted(base) + " has no start");
    if (to.empty()) return fieldError(field, "range " + quoted(base) + " has no end");
    const auto from_value = parseValue(field, from);
    if (!from_value) return from_value.error();
    const auto to_value = parseValue(field, to);
    if (!to_value) return to_value.error();
    if (*from_value > *to_value) {
      return fieldError(field, "range " + std::string(base) + " is reversed");
    }
    first = *from_value;
    last = *to_value;
  }
  for (int v = first; v <= last; v += step) bits |= std::uint64_t{1} << v;
  return okStatus();
}

Status parseField(const Field& field, std::string_view text, std::uint64_t& bits) {
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string_view element = text.substr(start, comma - start);
    if (element.empty()) return fieldError(field, "empty element in list " + quoted(text));
    if (const auto status = parseElement(field, element, bits); !status) return status;
    if (comma == std::string_view::npos) return okStatus();
    start = comma + 1;
  }
}

std::int64_t floorDiv(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

struct CivilDate {
  std::int64_t year;
  int month;  // 1-12
  int day;    // 1-31
};

// Howard Hinnant's days_from_civil and civil_from_days: proleptic Gregorian calendar, day 0 is
// 1970-01-01, exact for every int64 microsecond time.
std::int64_t daysFromCivil(std::int64_t year, int month, int day) {
  year -= month <= 2 ? 1 : 0;
  const std::int64_t era = floorDiv(year, 400);
  const std::int64_t year_of_era = year - era * 400;
  const std::int64_t day_of_year = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
  const std::int64_t day_of_era =
      year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + day_of_era - 719468;
}

CivilDate civilFromDays(std::int64_t days) {
  days += 719468;
  const std::int64_t era = floorDiv(days, 146097);
  const std::int64_t day_of_era = days - era * 146097;
  const std::int64_t year_of_era =
      (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
  const std::int64_t day_of_year =
      day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
  const std::int64_t shifted_month = (5 * day_of_year + 2) / 153;
  const int day = static_cast<int>(day_of_year - (153 * shifted_month + 2) / 5 + 1);
  const int month = static_cast<int>(shifted_month < 10 ? shifted_month + 3 : shifted_month - 9);
  return {year_of_era + era * 400 + (month <= 2 ? 1 : 0), month, day};
}

int dayOfWeek(std::int64_t days) {
  // 1970-01-01 was a Thursday.
  return static_cast<int>(days + 4 - floorDiv(days + 4, 7) * 7);
}

bool hasBit(std::uint64_t bits, int value) {
  return (bits >> value) & 1U;
}

// The smallest set bit at or above `from`, or -1.
int firstSetFrom(std::uint64_t bits, int from) {
  const std::uint64_t rest = bits & (~std::uint64_t{0} << from);
  return rest == 0 ? -1 : std::countr_zero(rest);
}

}  // namespace

Result<CronSchedule> CronSchedule::parse(std::string_view text) {
  const std::vector<std::string_view> tokens = splitOnSpace(text);
  if (!tokens.empty() && tokens.front().front() == '@') {
    const std::string macro = lowered(tokens.front());
    if (tokens.size() > 1) return cronError("unexpected " + quoted(tokens[1]) + " after " + macro);
    if (macro == "@reboot") return cronError("@reboot is not a time; it has no next run");
    for (const Macro& known : kMacros) {
      if (known.name != macro) continue;
      auto expanded = parse(known.fields);
      if (expanded) expanded->text_ = macro;
      return expanded;
    }
    return cronError("unknown macro " + quoted(tokens.front()) +
                     " (known: @yearly, @annually, @monthly, @weekly, @daily, @midnight, "
                     "@hourly)");
  }
  if (tokens.size() != kFields.size()) {
    return cronError("expected 5 fields, got " + std::to_string(tokens.size()));
  }

  CronSchedule schedule;
  std::array<std::uint64_t*, 5> bits = {&schedule.minutes_, &schedule.hours_,
                                        &schedule.days_of_month_, &schedule.months_,
                                        &schedule.days_of_week_};
  for (std::size_t i = 0; i < kFields.size(); ++i) {
    if (const auto status = parseField(kFields[i], tokens[i], *bits[i]); !status) {
      return status.error();
    }
    if (i > 0) schedule.text_ += ' ';
    schedule.text_ += lowered(tokens[i]);
  }
  if (hasBit(schedule.days_of_week_, 7)) {
    schedule.days_of_week_ = (schedule.days_of_week_ & ~(std::uint64_t{1} << 7)) | 1U;
  }
  // Vixie cron decides "unrestricted" by the first character, not by the values selected.
  schedule.day_of_month_star_ = tokens[2].front() == '*';
  schedule.day_of_week_star_ = tokens[4].front() == '*';
  return schedule;
}

bool CronSchedule::dayMatches(int day_of_month, int day_of_week) const {
  const bool by_month = hasBit(days_of_month_, day_of_month);
  const bool by_week = hasBit(days_of_week_, day_of_week);
  if (day_of_month_star_ || day_of_week_star_) return by_month && by_week;
  return by_month || by_week;
}

std::optional<common::WallMicros> CronSchedule::nextAfter(common::WallMicros t_us) const {
  // All in whole minutes since the epoch; the search is [start, end).
  const std::int64_t start = floorDiv(t_us, kMicrosPerMinute) + 1;
  const std::int64_t end = start + kHorizonDays * kMinutesPerDay;
  std::int64_t day = floorDiv(start, kMinutesPerDay);
  int hour = static_cast<int>(start - day * kMinutesPerDay) / 60;
  int minute = static_cast<int>(start - day * kMinutesPerDay) % 60;

  // Each step moves forward by at least a minute and at most skips what cannot match: a whole
  // month, a day, or to the next matching hour and minute. So the loop ends within about
  // 60 months + 1830 days + 3 steps per matching day before the answer.
  while (day * kMinutesPerDay + hour * 60 + minute < end) {
    const CivilDate date = civilFromDays(day);
    if (!hasBit(months_, date.month)) {
      day = date.month == 12 ? daysFromCivil(date.year + 1, 1, 1)
                             : daysFromCivil(date.year, date.month + 1, 1);
      hour = 0;
      minute = 0;
      continue;
    }
    if (!dayMatches(date.day, dayOfWeek(day))) {
      ++day;
      hour = 0;
      minute = 0;
      continue;
    }
    const int next_hour = firstSetFrom(hours_, hour);
    if (next_hour < 0) {
      ++day;
      hour = 0;
      minute = 0;
      continue;
    }
    if (next_hour != hour) {
      hour = next_hour;
      minute = 0;
    }
    const int next_minute = firstSetFrom(minutes_, minute);
    if (next_minute < 0) {
      minute = 0;
      if (++hour == 24) {
        ++day;
        hour = 0;
      }
      continue;
    }
    const std::int64_t found = day * kMinutesPerDay + hour * 60 + next_minute;
    if (found >= end || found > std::numeric_limits<std::int64_t>::max() / kMicrosPerMinute) {
      return std::nullopt;
    }
    return found * kMicrosPerMinute;
  }
  return std::nullopt;
}

std::int64_t nextScheduledRun(const std::string& cron, std::int64_t jitter_s,
                              std::int64_t after_us) {
  auto schedule = CronSchedule::parse(cron);
  if (!schedule) return -1;
  auto next = schedule->nextAfter(after_us);
  if (!next) return -1;
  if (jitter_s > 0) {
    std::mt19937_64 rng(std::random_device{}());
    *next += std::uniform_int_distribution<std::int64_t>(0, jitter_s * 1'000'000)(rng);
  }
  return *next;
}

}  // namespace kfaild::drill
