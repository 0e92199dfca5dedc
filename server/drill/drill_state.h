#pragma once

// Where a drill is. The running states are the phases of a run, in order:
//   queued → preflight → baseline → inject → observe → recover → elect → analyse → done
// or failed / aborted with the reason. The spellings are stored and served by the API.

#include <optional>
#include <string_view>
#include <vector>

namespace kfaild::drill {

enum class DrillState {
  kQueued,
  kPreflight,
  kBaseline,
  kInject,
  kObserve,
  kRecover,
  kElect,
  kAnalyse,
  kDone,
  kFailed,
  kAborted
};

const char* toString(DrillState state);
// Every spelling, in the order of a drill's life.
const std::vector<std::string_view>& drillStateNames();
std::optional<DrillState> parseDrillState(std::string_view text);

// The one definition: a drill in a terminal state never changes again.
constexpr bool isTerminal(DrillState state) {
  return state == DrillState::kDone || state == DrillState::kFailed ||
         state == DrillState::kAborted;
}
// For a stored spelling; an unknown one is not terminal.
bool isTerminal(std::string_view state);

}  // namespace kfaild::drill
