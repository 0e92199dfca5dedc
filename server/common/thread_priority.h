#pragma once

// Raising the calling thread above the host's ordinary work, for a loop whose timing is a
// measurement (the probe's sender: a send that leaves late opens a stretch in which the cluster
// was not asked, and a gap measured across it is the probe's, not the cluster's).
//
// Linux only. Threads created afterwards by the calling thread inherit what it gets, so call it
// once the thread has created the clients it needs.

#include <string>

namespace kfaild::common {

enum class ThreadPriority {
  kRealtime,  // SCHED_FIFO at the lowest real-time priority; else as kHigh
  kHigh,      // nice -10 for this thread; else unchanged
  kNormal,    // unchanged
};

const char* toString(ThreadPriority priority);

// Gives the calling thread `wanted`, or the best step below it the process is allowed (root, or
// CAP_SYS_NICE, or RLIMIT_RTPRIO / RLIMIT_NICE, e.g. systemd's LimitRTPRIO= / LimitNICE=).
// Returns what it has now, as "SCHED_FIFO 1", "nice -10" or "normal", followed by what was
// refused and why, e.g. "nice -10 (SCHED_FIFO refused: Operation not permitted)".
std::string raiseThisThreadPriority(ThreadPriority wanted);

}  // namespace kfaild::common
