#include "server/drill/drill_state.h"

#include <array>
#include <utility>

namespace kfaild::drill {
namespace {

constexpr std::array<std::pair<DrillState, const char*>, 11> kNames{{
    {DrillState::kQueued, "queued"},
    {DrillState::kPreflight, "preflight"},
    {DrillState::kBaseline, "baseline"},
    {DrillState::kInject, "inject"},
    {DrillState::kObserve, "observe"},
    {DrillState::kRecover, "recover"},
    {DrillState::kElect, "elect"},
    {DrillState::kAnalyse, "analyse"},
    {DrillState::kDone, "done"},
    {DrillState::kFailed, "failed"},
    {DrillState::kAborted, "aborted"},
}};

}  // namespace

const char* toString(DrillState state) {
  for (const auto& [s, name] : kNames) {
    if (s == state) return name;
  }
  return "unknown";
}

const std::vector<std::string_view>& drillStateNames() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> out;
    for (const auto& [s, name] : kNames) out.emplace_back(name);
    return out;
  }();
  return names;
}

std::optional<DrillState> parseDrillState(std::string_view text) {
  for (const auto& [s, name] : kNames) {
    if (text == name) return s;
  }
  return std::nullopt;
}

bool isTerminal(std::string_view state) {
  const auto parsed = parseDrillState(state);
  return parsed && isTerminal(*parsed);
}

}  // namespace kfaild::drill
