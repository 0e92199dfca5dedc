#include "server/probe/probe_status.h"

namespace kfaild::probe {

const char* toString(ProbePhase phase) {
  switch (phase) {
    case ProbePhase::kStarting:
      return "starting";
    case ProbePhase::kSettingUp:
      return "setting_up";
    case ProbePhase::kProbing:
      return "probing";
    case ProbePhase::kStopped:
      return "stopped";
  }
  return "unknown";
}

}  // namespace kfaild::probe
