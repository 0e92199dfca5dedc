#pragma once

// The audit log over HTTP, and the sink that fills it.
//
//   GET /api/v1/audit   operator only; filters from/to, cursor pagination, newest first (like
//                       GET /api/v1/drills)
//
// AuditRecorder is the router's audit sink: it stamps each entry with the wall clock and appends
// it to the AuditLog. A failed write is logged (warn) and counted, never thrown: the request it
// describes has been answered already. Both are safe from any thread.

#include <atomic>
#include <cstdint>

#include "api/http_message.h"
#include "api/router.h"
#include "server/common/clock.h"
#include "storage/audit_log.h"

namespace kfaild::api {

inline constexpr std::int64_t kAuditMaxLimit = 500;
inline constexpr std::int64_t kAuditDefaultLimit = 50;

class AuditRecorder {
 public:
  AuditRecorder(storage::AuditLog& log, const common::Clock& clock) : log_(log), clock_(clock) {}
  void operator()(const AuditEntry& entry);
  std::uint64_t written() const { return written_.load(); }
  std::uint64_t failed() const { return failed_.load(); }

 private:
  storage::AuditLog& log_;
  const common::Clock& clock_;
  std::atomic<std::uint64_t> written_{0};
  std::atomic<std::uint64_t> failed_{0};
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
