#include "server/common/thread_priority.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kfaild::common {
namespace {

constexpr int kRealtimePriority =
    1;  // above every SCHED_OTHER thread, below any other real-time one
constexpr int kHighNice = -10;

std::string refusal(const std::string& what, int error) {
  return what + " refused: " + std::strerror(error);
}

}  // namespace

const char* toString(ThreadPriority priority) {
  switch (priority) {
    case ThreadPriority::kRealtime:
      return "realtime";
    case ThreadPriority::kHigh:
      return "high";
    case ThreadPriority::kNormal:
      return "normal";
  }
  return "normal";
}

std::string raiseThisThreadPriority(ThreadPriority wanted) {
  const std::string fifo = "SCHED_FIFO " + std::to_string(kRealtimePriority);
  const std::string niced = "nice " + std::to_string(kHighNice);
  std::string refused;
  if (wanted == ThreadPriority::kRealtime) {
    sched_param param{};
    param.sched_priority = kRealtimePriority;
    const int error = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param);
    if (error == 0) return fifo;
    refused = refusal("SCHED_FIFO", error);
  }
  if (wanted == ThreadPriority::kRealtime || wanted == ThreadPriority::kHigh) {
    // On Linux a nice value is a thread's own: PRIO_PROCESS with a thread id sets that thread's.
    if (setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), kHighNice) == 0) {
      return refused.empty() ? niced : niced + " (" + refused + ")";
    }
    const int error = errno;
    refused += (refused.empty() ? "" : ", ") + refusal(niced, error);
  }
  return refused.empty() ? "normal" : "normal (" + refused + ")";
}

}  // namespace kfaild::common
