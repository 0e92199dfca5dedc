#include "server/common/time_format.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <ctime>

namespace kfaild::common {
namespace {

// Days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's algorithm).
std::int64_t daysFromCivil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

bool readInt(std::string_view text, std::size_t pos, std::size_t len, int& out) {
  if (pos + len > text.size()) return false;
  for (std::size_t i = pos; i < pos + len; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return false;
  }
  auto [ptr, ec] = std::from_chars(text.data() + pos, text.data() + pos + len, out);
  return ec == std::errc{} && ptr == text.data() + pos + len;
}

}  // namespace

std::string formatRfc3339(WallMicros t) {
  std::int64_t secs = t / 1'000'000;
  std::int64_t micros = t % 1'000'000;
  if (micros < 0) {
    micros += 1'000'000;
    secs -= 1;
  }
  const std::time_t tt = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(micros));
  return buf;
}

std::optional<WallMicros> parseRfc3339(std::string_view s) {
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (s.size() < 20 || !readInt(s, 0, 4, year) || s[4] != '-' || !readInt(s, 5, 2, month) ||
      s[7] != '-' || !readInt(s, 8, 2, day) || (s[10] != 'T' && s[10] != 't') ||
      !readInt(s, 11, 2, hour) || s[13] != ':' || !readInt(s, 14, 2, minute) || s[16] != ':' ||
      !readInt(s, 17, 2, second)) {
    return std::nullopt;
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return std::nullopt;
  }
  std::size_t pos = 19;
  std::int64_t micros = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    std::size_t digits = 0;
    std::int64_t scale = 100'000;
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
      if (digits < 6) {
        micros += (s[pos] - '0') * scale;
        scale /= 10;
      }
      ++digits;
      ++pos;
    }
    if (digits == 0 || digits > 9) return std::nullopt;
  }
  std::int64_t offset_secs = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh = 0, om = 0;
    if (!readInt(s, pos + 1, 2, oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !readInt(s, pos + 4, 2, om) || oh > 23 || om > 59) {
      return std::nullopt;
    }
    offset_secs = (oh * 3600 + om * 60) * (s[pos] == '+' ? 1 : -1);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  const std::int64_t days =
      daysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  const std::int64_t secs = days * 86400 + hour * 3600 + minute * 60 + second - offset_secs;
  return secs * 1'000'000 + micros;
}

}  // namespace kfaild::common
