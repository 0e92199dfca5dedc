#include "server/probe/probe_status.h"

namespace kfaild::probe {

void GapHistogram::add(std::int64_t interval_us) {
  std::size_t bucket = 0;
  while (bucket < kGapBucketsUs.size() && interval_us > kGapBucketsUs[bucket]) ++bucket;
  ++counts[bucket];
  ++count;
  sum_us += interval_us;
}

const char* toString(ProbePhase phase) {
  switch (phase) {
    case ProbePhase::kStarting: return "starting";
    case ProbePhase::kSettingUp: return "setting_up";
    case ProbePhase::kProbing: return "probing";
    case ProbePhase::kStopped: return "stopped";
  }
  return "unknown";
}

}  // namespace kfaild::probe
