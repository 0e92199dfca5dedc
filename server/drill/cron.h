#pragma once

// When a drill runs: a cron schedule, the five time fields of a crontab(5) line
//   minute (0-59)  hour (0-23)  day-of-month (1-31)  month (1-12)  day-of-week (0-7)
// or one of its macros, with the meaning Vixie cron gives them:
//   - a field is a comma-separated list of `*`, `n`, `a-b`, `*/s` and `a-b/s`;
//   - month and day-of-week also take three-letter English names (`jan`-`dec`, `sun`-`sat`, in any
//     case), as single values or as range ends (`mon-fri`);
//   - day-of-week 0 and 7 are both Sunday;
//   - when both day-of-month and day-of-week are restricted, a day matches if EITHER field
//     matches (`0 0 1 * mon` runs on the 1st and on every Monday). As in Vixie cron, a field that
//     begins with `*` counts as unrestricted, `*/2` included: `0 0 1-7 * */7` runs on the first
//     Sunday of each month only;
//   - `@hourly`, `@daily` = `@midnight`, `@weekly` (Sunday), `@monthly`, `@yearly` = `@annually`.
// Refused: `@reboot` (not a time), `a/s` without a range (a cronie extension; write `a-59/s`),
// names longer than three letters, and Quartz syntax (`?`, `L`, `W`, `#`, seconds, years).
//
// Schedules are evaluated in UTC, never in the host's time zone: a drill fires at the same
// instant on every host, and daylight saving time can neither skip nor repeat a run.
//
// A CronSchedule is an immutable value; its const methods may be called from any thread.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "server/common/clock.h"
#include "server/common/result.h"

namespace kfaild::drill {

class CronSchedule {
 public:
  // Fails with errc::invalid_cron and a message naming the field and what is wrong in it, e.g.
  // "field 2 (hour): 24 is out of range 0-23" or "expected 5 fields, got 4".
  static Result<CronSchedule> parse(std::string_view text);

  // The first matching minute strictly after t_us (at second 0), in µs since the Unix epoch, UTC:
  // a t_us exactly on a match gives the match after it. nullopt if no minute matches within the
  // 1830 days (five years, leap days included) after t_us: `0 0 30 2 *` never does, and
  // `0 0 29 2 *` from 2096-03-01 is eight years away because 2100 is not a leap year. Skips whole
  // months, days and hours that cannot match: at most about two thousand cheap steps (tens of µs).
  std::optional<common::WallMicros> nextAfter(common::WallMicros t_us) const;

  // The text parsed, normalised: fields separated by one space, names and macros in lower case
  // (" */15  9-17 * JAN Mon-Fri" -> "*/15 9-17 * jan mon-fri", "@Daily" -> "@daily").
  std::string text() const { return text_; }

 private:
  CronSchedule() = default;

  bool dayMatches(int day_of_month, int day_of_week) const;

  std::string text_;
  // Bit v set = value v matches. Day-of-week 7 is stored as 0.
  std::uint64_t minutes_ = 0;
  std::uint64_t hours_ = 0;
  std::uint64_t days_of_month_ = 0;
  std::uint64_t months_ = 0;
  std::uint64_t days_of_week_ = 0;
  // The field began with `*`: it does not take part in the day-of-month OR day-of-week rule.
  bool day_of_month_star_ = false;
  bool day_of_week_star_ = false;
};

// The schedule's next run strictly after `after_us`, with a random delay of up to `jitter_s`
// drawn; -1 when the cron text does not parse or never matches.
std::int64_t nextScheduledRun(const std::string& cron, std::int64_t jitter_s,
                              std::int64_t after_us);

}  // namespace kfaild::drill
