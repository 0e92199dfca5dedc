#pragma once

// Strict reading of an endpoint's query parameters. A parameter the endpoint does not take, a
// parameter given twice and a value that does not parse are all errors whose message names the
// parameter and says what it must be ("limit: must be an integer between 1 and 10000, got
// \"0\""). The error codes are errc::unknown_parameter and errc::invalid_parameter.
//
// Not thread-safe; one reader per request.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/http_message.h"
#include "server/common/clock.h"
#include "server/common/result.h"
#include "storage/store.h"

namespace kfaild::api {

class QueryReader {
 public:
  // Fails on a parameter not in `allowed` or one given twice.
  static Result<QueryReader> create(const QueryParams& params,
                                    std::initializer_list<std::string_view> allowed);

  std::optional<std::string_view> raw(std::string_view name) const;

  Result<std::optional<std::int64_t>> integer(std::string_view name, std::int64_t min,
                                              std::int64_t max) const;
  // RFC 3339 date-time with an offset ("2026-11-30T04:38:30.123456Z"), as µs since the epoch.
  Result<std::optional<common::WallMicros>> time(std::string_view name) const;
  Result<std::optional<std::string>> oneOf(std::string_view name,
                                           const std::vector<std::string_view>& choices) const;
  Result<std::optional<std::string>> topic(std::string_view name) const;
  // Lower-case identifier: [a-z][a-z0-9_]{0,63}.
  Result<std::optional<std::string>> identifier(std::string_view name) const;

  // `from`/`to` as a half-open range. A missing `to` is `now`, a missing `from` is `to` minus
  // `default_window`; `from` at or after `to` is the empty range, not an error; with `max_window`,
  // a longer range is an error.
  Result<storage::TimeRange> range(common::WallMicros now, std::int64_t default_window_us,
                                   std::optional<std::int64_t> max_window_us) const;

 private:
  explicit QueryReader(const QueryParams& params) : params_(params) {}
  const QueryParams& params_;
};

// Parses one value, for path parameters and for QueryReader. `what` names it in the message.
Result<std::int64_t> parseInteger(std::string_view what, std::string_view text, std::int64_t min,
                                  std::int64_t max);
// A legal Kafka topic name: 1-249 of [a-zA-Z0-9._-], not "." or "..".
bool isTopicName(std::string_view text);

}  // namespace kfaild::api
