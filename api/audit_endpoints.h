#pragma once

// The audit log over HTTP, and the sink that fills it.
//
//   GET /api/v1/audit   operator only; filters from/to, cursor pagination, newest first (like
//                       GET /api/v1/drills)
//
// AuditRecorder is the router's audit sink; it stamps each entry with the wall clock and:
//   - an accepted mutation (status below 400): appends its row on the calling (HTTP) thread, in
//     one transaction with the refusals queued before it, and returns once it is committed,
//     before the answer is sent: a crash never loses the row of a change the client was told
//     about. Only the operator's accepted requests are here: few.
//   - a refused request with a token (viewer or operator: 401 for an unknown token is anonymous):
//     the first `refusal_rows_per_minute` of each minute, role, method, route class (the matched
//     pattern, or "unmatched") and status queue their own row for the recorder's thread
//     (kfaild:audit), which commits the queue every `flush_interval` and at stop(); the rest of
//     that minute add to one aggregated row with their count (AuditRecord::count), so a token
//     that sends thousands of refused requests a second costs a few rows a minute;
//   - a refused anonymous request: adds one to the count of its minute, peer, route class and
//     status, committed with the queue; a flood of them costs one row per peer, class, status
//     and minute, not one per request.
// The queue holds at most `max_queued` rows and `max_counts` counts and aggregated rows; beyond
// them a refused request is counted under the peer "(overflow)", so memory stays bounded. A
// kfaild killed (SIGKILL, power loss) loses at most the refused requests of the last flush
// interval; a stop() commits them. A failed write is logged (warn) and counted, never thrown.
// Safe from any thread.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

#include "api/http_message.h"
#include "api/router.h"
#include "server/common/clock.h"
#include "server/common/worker.h"
#include "storage/audit_log.h"

namespace kfaild::api {

inline constexpr std::int64_t kAuditMaxLimit = 500;
inline constexpr std::int64_t kAuditDefaultLimit = 50;

struct AuditRecorderOptions {
  std::chrono::milliseconds flush_interval{1000};
  std::size_t max_queued = 10'000;  // rows of refused requests with a token
  std::size_t max_counts =
      10'000;  // distinct (minute, peer, class, status) counts; as many aggregated rows
  // Refused requests with a token that get a row each, per minute, role, method, route class and
  // status; the rest of the minute share one aggregated row.
  std::int64_t refusal_rows_per_minute = 10;
};

class AuditRecorder {
 public:
  AuditRecorder(storage::AuditLog& log, const common::Clock& clock,
                AuditRecorderOptions options = {});
  ~AuditRecorder() { stop(); }
  AuditRecorder(const AuditRecorder&) = delete;
  AuditRecorder& operator=(const AuditRecorder&) = delete;

  // Starts the thread that commits queued rows and counts; without it they wait for flush().
  void start();
  // Commits what is queued and ends the thread.
  void stop();
  // Commits what is queued now, on the caller's thread.
  void flush();

  void operator()(const AuditEntry& entry);
  std::uint64_t written() const { return written_.load(); }  // rows committed
  std::uint64_t counted() const { return counted_.load(); }  // refused requests counted
  std::uint64_t failed() const { return failed_.load(); }

 private:
  using CountKey =
      std::tuple<std::int64_t, std::string, std::string, int>;  // minute, peer, class, status
  using TokenKey =
      std::tuple<std::string, std::string, std::string, int>;  // role, method, class, status

  // Queues `record` (a refused request with a token) as its own row or into its minute's
  // aggregated row; false when both are full. Needs queue_mutex_.
  bool queueTokenRefusal(storage::AuditRecord record, std::int64_t minute,
                         const std::string& route_class);

  // Commits what is queued, then `accepted`, in one transaction; false when that failed.
  bool commit(std::optional<storage::AuditRecord> accepted);

  storage::AuditLog& log_;
  const common::Clock& clock_;
  const AuditRecorderOptions options_;
  std::mutex flush_mutex_;  // one flush at a time, so counts reach the table in order
  std::mutex queue_mutex_;
  std::vector<storage::AuditRecord> queued_;  // guarded by queue_mutex_
  std::map<CountKey, std::int64_t> counts_;   // guarded by queue_mutex_
  std::int64_t token_minute_ = 0;  // the minute of rows_this_minute_; guarded by queue_mutex_
  std::map<TokenKey, std::int64_t> rows_this_minute_;  // own rows given; guarded by queue_mutex_
  std::map<TokenKey, storage::AuditRecord>
      aggregated_;  // of token_minute_ and before; guarded by queue_mutex_
  std::atomic<std::uint64_t> written_{0};
  std::atomic<std::uint64_t> counted_{0};
  std::atomic<std::uint64_t> failed_{0};
  common::Worker worker_;  // last: stopped before the members above go
};

class AuditEndpoints {
 public:
  explicit AuditEndpoints(const storage::AuditLog& log) : log_(log) {}
  void registerOn(Router& router);
  Response list(const Request& request) const;

 private:
  const storage::AuditLog& log_;
};

}  // namespace kfaild::api
