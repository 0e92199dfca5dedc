#include "server/drill/cron.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "server/drill/errc.h"

namespace cron_test {

using namespace kfaild::drill;

namespace {

constexpr std::int64_t kMinute = 60'000'000;

// "YYYY-MM-DD HH:MM[:SS]" UTC to µs since the epoch, by libc rather than by the code under test.
std::int64_t utc(const std::string& text) {
  std::tm tm{};
  int second = 0;
  const int read = std::sscanf(text.c_str(), "%d-%d-%d %d:%d:%d", &tm.tm_year, &tm.tm_mon,
                               &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &second);
  REQUIRE(read >= 5);
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  tm.tm_sec = second;
  return static_cast<std::int64_t>(timegm(&tm)) * 1'000'000;
}

std::string formatMinute(std::int64_t t_us) {
  REQUIRE(t_us % kMinute == 0);
  const std::time_t seconds = t_us / 1'000'000;
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M", &tm);
  return text;
}

CronSchedule schedule(const std::string& text) {
  auto parsed = CronSchedule::parse(text);
  if (!parsed) FAIL("'" << text << "' did not parse: " << parsed.error().describe());
  return parsed.value();
}

// The first run strictly after `from`, as "YYYY-MM-DD HH:MM", or "never".
std::string next(const std::string& text, const std::string& from) {
  const auto at = schedule(text).nextAfter(utc(from));
  return at ? formatMinute(*at) : "never";
}

// The first `count` runs strictly after `from`.
std::vector<std::string> runs(const std::string& text, const std::string& from, int count) {
  const CronSchedule cron = schedule(text);
  std::vector<std::string> out;
  std::int64_t t = utc(from);
  for (int i = 0; i < count; ++i) {
    const auto at = cron.nextAfter(t);
    if (!at) break;
    out.push_back(formatMinute(*at));
    t = *at;
  }
  return out;
}

std::string errorOf(const std::string& text) {
  const auto parsed = CronSchedule::parse(text);
  if (parsed) FAIL("'" << text << "' parsed as '" << parsed->text() << "'");
  CHECK(parsed.error().code == errc::invalid_cron);
  return parsed.error().message;
}

// Walks every minute of [from, to) with `matches` and compares with successive nextAfter calls;
// returns the first difference, or "" if there is none.
std::string firstDifference(const std::string& text, const std::string& from, const std::string& to,
                            const std::function<bool(const std::tm&)>& matches) {
  const CronSchedule cron = schedule(text);
  const std::int64_t end = utc(to);
  std::int64_t previous = utc(from) - kMinute;
  for (std::int64_t t = utc(from); t < end; t += kMinute) {
    const std::time_t seconds = t / 1'000'000;
    std::tm tm{};
    gmtime_r(&seconds, &tm);
    if (!matches(tm)) continue;
    const auto at = cron.nextAfter(previous);
    const std::string got = at ? formatMinute(*at) : "never";
    if (got != formatMinute(t)) {
      return "after " + formatMinute(previous) + ": expected " + formatMinute(t) + ", got " + got;
    }
    previous = t;
  }
  const auto after_last = cron.nextAfter(previous);
  if (after_last && *after_last < end) {
    return "after " + formatMinute(previous) + ": unexpected run at " + formatMinute(*after_last);
  }
  return "";
}

}  // namespace

TEST_CASE("a single number matches only that minute of every hour", "[unit][drill]") {
  CHECK(runs("5 * * * *", "2027-06-01 10:00", 3) ==
        std::vector<std::string>{"2027-06-01 10:05", "2027-06-01 11:05", "2027-06-01 12:05"});
}

TEST_CASE("a star in every field matches every minute", "[unit][drill]") {
  CHECK(runs("* * * * *", "2027-06-01 10:00:30", 3) ==
        std::vector<std::string>{"2027-06-01 10:01", "2027-06-01 10:02", "2027-06-01 10:03"});
}

TEST_CASE("a range matches each value from its start to its end", "[unit][drill]") {
  CHECK(runs("10-12 * * * *", "2027-06-01 09:59", 4) ==
        std::vector<std::string>{"2027-06-01 10:10", "2027-06-01 10:11", "2027-06-01 10:12",
                                 "2027-06-01 11:10"});
  CHECK(runs("0 22-23 * * *", "2027-06-01 00:00", 3) ==
        std::vector<std::string>{"2027-06-01 22:00", "2027-06-01 23:00", "2027-06-02 22:00"});
}

TEST_CASE("a list matches each of its values", "[unit][drill]") {
  CHECK(runs("0 1,13,22 * * *", "2027-06-01 02:00", 4) ==
        std::vector<std::string>{"2027-06-01 13:00", "2027-06-01 22:00", "2027-06-02 01:00",
                                 "2027-06-02 13:00"});
}

TEST_CASE("*/15 runs on the quarter hours", "[unit][drill]") {
  CHECK(runs("*/15 * * * *", "2027-06-01 10:07", 5) ==
        std::vector<std::string>{"2027-06-01 10:15", "2027-06-01 10:30", "2027-06-01 10:45",
                                 "2027-06-01 11:00", "2027-06-01 11:15"});
}

TEST_CASE("a step over a range counts from the start of the range and stops at its end",
          "[unit][drill]") {
  CHECK(runs("10-40/15 * * * *", "2027-06-01 10:00", 4) ==
        std::vector<std::string>{"2027-06-01 10:10", "2027-06-01 10:25", "2027-06-01 10:40",
                                 "2027-06-01 11:10"});
  CHECK(runs("0 8-18/4 * * *", "2027-06-01 00:00", 4) ==
        std::vector<std::string>{"2027-06-01 08:00", "2027-06-01 12:00", "2027-06-01 16:00",
                                 "2027-06-02 08:00"});
  CHECK(runs("0 0 */10 * *", "2027-06-01 00:00", 4) ==
        std::vector<std::string>{"2027-06-11 00:00", "2027-06-21 00:00", "2027-07-01 00:00",
                                 "2027-07-11 00:00"});
}

TEST_CASE("a step larger than the field selects only the first value", "[unit][drill]") {
  CHECK(runs("*/90 * * * *", "2027-06-01 10:00", 2) ==
        std::vector<std::string>{"2027-06-01 11:00", "2027-06-01 12:00"});
}

TEST_CASE("values, ranges and steps combine in one list", "[unit][drill]") {
  CHECK(runs("1,10-20/5,*/30 * * * *", "2027-06-01 09:59", 7) ==
        std::vector<std::string>{"2027-06-01 10:00", "2027-06-01 10:01", "2027-06-01 10:10",
                                 "2027-06-01 10:15", "2027-06-01 10:20", "2027-06-01 10:30",
                                 "2027-06-01 11:00"});
}

TEST_CASE("month names select their month in any case, also as range ends", "[unit][drill]") {
  CHECK(runs("0 0 1 JUN,Dec *", "2027-01-01 00:00", 3) ==
        std::vector<std::string>{"2027-06-01 00:00", "2027-12-01 00:00", "2028-06-01 00:00"});
  CHECK(runs("0 0 1 oct-Nov *", "2027-01-01 00:00", 3) ==
        std::vector<std::string>{"2027-10-01 00:00", "2027-11-01 00:00", "2028-10-01 00:00"});
  CHECK(next("0 0 1 jan *", "2027-01-01 00:00") == "2028-01-01 00:00");
  CHECK(next("0 0 1 dec *", "2027-01-01 00:00") == "2027-12-01 00:00");
}

TEST_CASE("day names select their weekday in any case, also as range ends", "[unit][drill]") {
  // 2027-06-04 is a Friday.
  CHECK(runs("0 12 * * Mon-FRI", "2027-06-04 13:00", 3) ==
        std::vector<std::string>{"2027-06-07 12:00", "2027-06-08 12:00", "2027-06-09 12:00"});
  CHECK(runs("0 12 * * sat,Sun", "2027-06-04 13:00", 3) ==
        std::vector<std::string>{"2027-06-05 12:00", "2027-06-06 12:00", "2027-06-12 12:00"});
  CHECK(next("0 0 * * wed", "2027-06-04 00:00") == "2027-06-09 00:00");
}

TEST_CASE("Sunday is day 0 and day 7 alike", "[unit][drill]") {
  // 2027-06-04 is a Friday, so the next Sunday is 2027-06-06.
  CHECK(next("0 0 * * 0", "2027-06-04 00:00") == "2027-06-06 00:00");
  CHECK(next("0 0 * * 7", "2027-06-04 00:00") == "2027-06-06 00:00");
  CHECK(next("0 0 * * sun", "2027-06-04 00:00") == "2027-06-06 00:00");
  CHECK(runs("0 0 * * 6-7", "2027-06-04 00:00", 3) ==
        std::vector<std::string>{"2027-06-05 00:00", "2027-06-06 00:00", "2027-06-12 00:00"});
  CHECK(runs("0 0 * * 5-7", "2027-06-04 00:00", 3) ==
        std::vector<std::string>{"2027-06-05 00:00", "2027-06-06 00:00", "2027-06-11 00:00"});
  // 0-7 is every day, not every day twice or Sunday missing.
  CHECK(runs("0 0 * * 0-7", "2027-06-05 00:00", 2) ==
        std::vector<std::string>{"2027-06-06 00:00", "2027-06-07 00:00"});
}

TEST_CASE("a day matches if either the day of month or the day of week does, when both are set",
          "[unit][drill]") {
  // 2027-03-01 is a Monday; 2027-04-01 a Thursday.
  CHECK(runs("0 0 1 * mon", "2027-03-02 00:00", 7) ==
        std::vector<std::string>{"2027-03-08 00:00", "2027-03-15 00:00", "2027-03-22 00:00",
                                 "2027-03-29 00:00", "2027-04-01 00:00", "2027-04-05 00:00",
                                 "2027-04-12 00:00"});
  // The day-of-week side makes a day-of-month that never exists reachable.
  CHECK(next("0 0 30 2 mon", "2027-02-02 00:00") == "2027-02-08 00:00");
}

TEST_CASE("a star day of week leaves only the day of month, and the other way round",
          "[unit][drill]") {
  CHECK(runs("0 0 15 * *", "2027-06-01 00:00", 2) ==
        std::vector<std::string>{"2027-06-15 00:00", "2027-07-15 00:00"});
  // 2027-06-01 is a Tuesday.
  CHECK(runs("0 0 * * mon", "2027-06-01 00:00", 2) ==
        std::vector<std::string>{"2027-06-07 00:00", "2027-06-14 00:00"});
}

TEST_CASE("when a day field begins with a star both day fields must match, as in Vixie cron",
          "[unit][drill]") {
  // */7 is Sunday (0 and 7) but begins with '*': the first Sunday of each month, not every
  // Sunday plus the 1st to the 7th.
  CHECK(runs("0 0 1-7 * */7", "2027-01-01 00:00", 4) ==
        std::vector<std::string>{"2027-01-03 00:00", "2027-02-07 00:00", "2027-03-07 00:00",
                                 "2027-04-04 00:00"});
  // Odd days that are Mondays; 2027-03-01 is a Monday.
  CHECK(runs("0 0 */2 * mon", "2027-02-28 00:00", 3) ==
        std::vector<std::string>{"2027-03-01 00:00", "2027-03-15 00:00", "2027-03-29 00:00"});
}

TEST_CASE("macros expand to their crontab meaning", "[unit][drill]") {
  // 2027-06-02 is a Wednesday.
  const std::string from = "2027-06-02 10:30";
  CHECK(next("@hourly", from) == "2027-06-02 11:00");
  CHECK(next("@daily", from) == "2027-06-03 00:00");
  CHECK(next("@midnight", from) == "2027-06-03 00:00");
  CHECK(next("@weekly", from) == "2027-06-06 00:00");
  CHECK(next("@monthly", from) == "2027-07-01 00:00");
  CHECK(next("@yearly", from) == "2028-01-01 00:00");
  CHECK(next("@annually", from) == "2028-01-01 00:00");
  CHECK(next("@DAILY", from) == "2027-06-03 00:00");
  CHECK(runs("@hourly", "2027-06-02 23:00", 2) ==
        std::vector<std::string>{"2027-06-03 00:00", "2027-06-03 01:00"});
}

TEST_CASE("a day of month that a month lacks skips that month", "[unit][drill]") {
  CHECK(runs("0 0 31 * *", "2027-01-31 00:00", 4) ==
        std::vector<std::string>{"2027-03-31 00:00", "2027-05-31 00:00", "2027-07-31 00:00",
                                 "2027-08-31 00:00"});
  CHECK(runs("0 0 30 * *", "2027-01-30 00:00", 2) ==
        std::vector<std::string>{"2027-03-30 00:00", "2027-04-30 00:00"});
  CHECK(runs("59 23 28-31 * *", "2027-02-27 00:00", 3) ==
        std::vector<std::string>{"2027-02-28 23:59", "2027-03-28 23:59", "2027-03-29 23:59"});
}

TEST_CASE("29 February comes only in leap years", "[unit][drill]") {
  CHECK(next("0 0 29 2 *", "2027-03-01 00:00") == "2028-02-29 00:00");
  CHECK(next("0 0 29 2 *", "2028-02-28 12:00") == "2028-02-29 00:00");
  CHECK(next("0 0 29 2 *", "2028-02-29 00:00") == "2032-02-29 00:00");
  // 2000 is leap (divisible by 400), 2100 is not (divisible by 100).
  CHECK(next("0 0 29 2 *", "1997-03-01 00:00") == "2000-02-29 00:00");
  CHECK(next("0 0 29 2 *", "2099-03-01 00:00") == "2104-02-29 00:00");
  CHECK(next("0 0 * 2 *", "2028-02-28 23:59") == "2028-02-29 00:00");
  CHECK(next("0 0 * 2 *", "2027-02-28 00:00") == "2028-02-01 00:00");
}

TEST_CASE("the search rolls over into the next year", "[unit][drill]") {
  CHECK(next("0 0 * * *", "2027-12-31 23:59:59") == "2028-01-01 00:00");
  CHECK(next("*/20 * * * *", "2027-12-31 23:45") == "2028-01-01 00:00");
  CHECK(next("30 23 31 12 *", "2027-12-31 23:30") == "2028-12-31 23:30");
  CHECK(next("0 9 * jan mon", "2027-06-01 00:00") == "2028-01-03 09:00");
  CHECK(next("0 0 1 1 *", "1969-06-01 00:00") == "1970-01-01 00:00");
}

TEST_CASE("days before the Unix epoch have their right weekday", "[unit][drill]") {
  // 1969-06-02 is a Monday, 213 days before the epoch.
  CHECK(next("0 0 * * mon", "1969-06-01 00:00") == "1969-06-02 00:00");
  CHECK(next("0 0 * * sun", "1969-06-02 00:00") == "1969-06-08 00:00");
}

TEST_CASE("the next run is strictly after the given time and at second 0", "[unit][drill]") {
  const CronSchedule cron = schedule("0 12 * * *");
  const std::int64_t noon = utc("2027-06-01 12:00");
  CHECK(cron.nextAfter(noon - 1) == noon);
  CHECK(cron.nextAfter(noon) == utc("2027-06-02 12:00"));
  CHECK(cron.nextAfter(noon + 1) == utc("2027-06-02 12:00"));
  CHECK(cron.nextAfter(noon + 59'999'999) == utc("2027-06-02 12:00"));
  const CronSchedule every_minute = schedule("* * * * *");
  CHECK(every_minute.nextAfter(noon) == noon + kMinute);
  CHECK(every_minute.nextAfter(noon + 59'999'999) == noon + kMinute);
  // Before the epoch, times are negative and still round to the next whole minute.
  CHECK(every_minute.nextAfter(-1) == 0);
  CHECK(every_minute.nextAfter(-kMinute) == 0);
  CHECK(every_minute.nextAfter(-kMinute - 1) == -kMinute);
}

TEST_CASE("an expression that can never match has no next run", "[unit][drill]") {
  CHECK(next("0 0 30 2 *", "2027-01-01 00:00") == "never");
  CHECK(next("0 0 31 2 *", "2027-01-01 00:00") == "never");
  CHECK(next("0 0 31 4,6,9,11 *", "2027-01-01 00:00") == "never");
  CHECK(next("0 0 30 2 */7", "2027-01-01 00:00") == "never");
  // Eight years apart, because 2100 is not a leap year: beyond the five-year horizon.
  CHECK(next("0 0 29 2 *", "2096-03-01 00:00") == "never");
}

TEST_CASE("the end of the representable time range gives no next run instead of overflowing",
          "[unit][drill]") {
  const CronSchedule cron = schedule("* * * * *");
  CHECK_FALSE(cron.nextAfter(std::numeric_limits<std::int64_t>::max()).has_value());
  CHECK(cron.nextAfter(std::numeric_limits<std::int64_t>::min()).has_value());
}

TEST_CASE("successive runs agree with a minute-by-minute walk of the calendar", "[unit][drill]") {
  // Across a year end, a leap February and month ends.
  const std::string from = "2027-12-20 00:00";
  const std::string to = "2028-03-10 00:00";
  CHECK(firstDifference("*/15 9-17 * * mon-fri", from, to, [](const std::tm& t) {
          return t.tm_min % 15 == 0 && t.tm_hour >= 9 && t.tm_hour <= 17 && t.tm_wday >= 1 &&
                 t.tm_wday <= 5;
        }) == "");
  CHECK(firstDifference("0 0 1 * mon", from, to, [](const std::tm& t) {
          return t.tm_min == 0 && t.tm_hour == 0 && (t.tm_mday == 1 || t.tm_wday == 1);
        }) == "");
  CHECK(firstDifference("30 2 29-31 * *", from, to, [](const std::tm& t) {
          return t.tm_min == 30 && t.tm_hour == 2 && t.tm_mday >= 29;
        }) == "");
  CHECK(firstDifference("0 0 1-7 * */7", from, to, [](const std::tm& t) {
          return t.tm_min == 0 && t.tm_hour == 0 && t.tm_mday <= 7 && t.tm_wday == 0;
        }) == "");
  CHECK(firstDifference("5,50-59/3 */5 * jan,feb sun", from, to, [](const std::tm& t) {
          return (t.tm_min == 5 || (t.tm_min >= 50 && (t.tm_min - 50) % 3 == 0)) &&
                 t.tm_hour % 5 == 0 && t.tm_mon <= 1 && t.tm_wday == 0;
        }) == "");
}

TEST_CASE("text() gives the expression normalised", "[unit][drill]") {
  CHECK(schedule("  */15\t9-17  *  JAN-mar  Mon-FRI ").text() == "*/15 9-17 * jan-mar mon-fri");
  CHECK(schedule("0 0 29 2 *").text() == "0 0 29 2 *");
  CHECK(schedule(" @Weekly ").text() == "@weekly");
  CHECK(schedule("@annually").text() == "@annually");
}

TEST_CASE("a wrong number of fields is refused with the count", "[unit][drill]") {
  CHECK(errorOf("0 0 * *") == "expected 5 fields, got 4");
  CHECK(errorOf("0 0 * * * /bin/true") == "expected 5 fields, got 6");
  CHECK(errorOf("") == "expected 5 fields, got 0");
  CHECK(errorOf(" \t ") == "expected 5 fields, got 0");
}

TEST_CASE("a value out of its field's range is refused with the field and the range",
          "[unit][drill]") {
  CHECK(errorOf("60 * * * *") == "field 1 (minute): 60 is out of range 0-59");
  CHECK(errorOf("0 24 * * *") == "field 2 (hour): 24 is out of range 0-23");
  CHECK(errorOf("0 0 0 * *") == "field 3 (day-of-month): 0 is out of range 1-31");
  CHECK(errorOf("0 0 32 * *") == "field 3 (day-of-month): 32 is out of range 1-31");
  CHECK(errorOf("0 0 * 0 *") == "field 4 (month): 0 is out of range 1-12");
  CHECK(errorOf("0 0 * 13 *") == "field 4 (month): 13 is out of range 1-12");
  CHECK(errorOf("0 0 * * 8") == "field 5 (day-of-week): 8 is out of range 0-7");
  CHECK(errorOf("0 20-24 * * *") == "field 2 (hour): 24 is out of range 0-23");
  CHECK(errorOf("0,99999999999 * * * *") == "field 1 (minute): 99999999999 is out of range 0-59");
}

TEST_CASE("malformed steps are refused", "[unit][drill]") {
  CHECK(errorOf("*/0 * * * *") == "field 1 (minute): step 0 is not allowed");
  CHECK(errorOf("0 1-5/0 * * *") == "field 2 (hour): step 0 is not allowed");
  CHECK(errorOf("*/ * * * *") == "field 1 (minute): '*/' has no step after '/'");
  CHECK(errorOf("/5 * * * *") == "field 1 (minute): '/5' has nothing before '/'");
  CHECK(errorOf("*/x * * * *") == "field 1 (minute): step 'x' is not a number");
  CHECK(errorOf("*/2/3 * * * *") == "field 1 (minute): more than one '/' in '*/2/3'");
  CHECK(errorOf("5/15 * * * *") ==
        "field 1 (minute): step in '5/15' needs a range or '*' before '/' (e.g. 5-59/15)");
}

TEST_CASE("malformed ranges and lists are refused", "[unit][drill]") {
  CHECK(errorOf("0 0 20-10 * *") == "field 3 (day-of-month): range 20-10 is reversed");
  CHECK(errorOf("0 0 * * sat-sun") == "field 5 (day-of-week): range sat-sun is reversed");
  CHECK(errorOf("1- * * * *") == "field 1 (minute): range '1-' has no end");
  CHECK(errorOf("-1 * * * *") == "field 1 (minute): range '-1' has no start");
  CHECK(errorOf("1-2-3 * * * *") == "field 1 (minute): more than one '-' in '1-2-3'");
  CHECK(errorOf("1,,2 * * * *") == "field 1 (minute): empty element in list '1,,2'");
  CHECK(errorOf("0 0 1, * *") == "field 3 (day-of-month): empty element in list '1,'");
  CHECK(errorOf("0 0 * * ,mon") == "field 5 (day-of-week): empty element in list ',mon'");
}

TEST_CASE("words that are not numbers or names of that field are refused", "[unit][drill]") {
  CHECK(errorOf("x * * * *") == "field 1 (minute): 'x' is not a number");
  CHECK(errorOf("0 0 mon * *") == "field 3 (day-of-month): 'mon' is not a number");
  CHECK(errorOf("0 0 L * *") == "field 3 (day-of-month): 'L' is not a number");
  CHECK(errorOf("0 0 * foo *") == "field 4 (month): 'foo' is not a number or a month name");
  CHECK(errorOf("0 0 * January *") == "field 4 (month): 'January' is not a number or a month name");
  CHECK(errorOf("0 0 * mon *") == "field 4 (month): 'mon' is not a number or a month name");
  CHECK(errorOf("0 0 * * jan") == "field 5 (day-of-week): 'jan' is not a number or a day name");
  CHECK(errorOf("0 0 ? * mon") == "field 3 (day-of-month): '?' is not a number");
  CHECK(errorOf("0 0 * * 1#2") == "field 5 (day-of-week): '1#2' is not a number or a day name");
  CHECK(errorOf("0 0 * 1-* *") == "field 4 (month): '*' is not a number or a month name");
}

TEST_CASE("unknown macros, @reboot and text after a macro are refused", "[unit][drill]") {
  CHECK(errorOf("@fortnightly") ==
        "unknown macro '@fortnightly' (known: @yearly, @annually, @monthly, @weekly, @daily, "
        "@midnight, @hourly)");
  CHECK(errorOf("@reboot") == "@reboot is not a time; it has no next run");
  CHECK(errorOf("@daily /bin/true") == "unexpected '/bin/true' after @daily");
}

TEST_CASE("drill errors belong to the drill category with their own messages", "[unit][drill]") {
  const std::error_code invalid = errc::invalid_cron;
  CHECK(std::string(invalid.category().name()) == "drill");
  CHECK(invalid.value() == 1);
  CHECK(invalid.message() == "invalid cron expression");
  CHECK(std::error_code(errc::guard_refused).message() == "refused by a safety guard");
  CHECK(std::error_code(errc::drill_not_found).message() == "no such drill");
  CHECK(std::error_code(errc::injector_failed).message() == "fault injection failed");
  CHECK(std::error_code(errc::guard_refused) != std::error_code(errc::drill_not_found));
  CHECK(drillError(errc::invalid_cron, "expected 5 fields, got 4").describe() ==
        "invalid cron expression: expected 5 fields, got 4");
}

}  // namespace cron_test
