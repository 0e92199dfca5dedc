#include "storage/records.h"

namespace kfaild::storage {

// These spellings are stored in the gaps table and used by the API; changing one is a migration.
const char* toString(GapKind kind) {
  switch (kind) {
    case GapKind::kAck:
      return "ack";
    case GapKind::kReceive:
      return "receive";
  }
  return "unknown";
}

std::optional<GapKind> gapKindFromString(const std::string& text) {
  if (text == "ack") return GapKind::kAck;
  if (text == "receive") return GapKind::kReceive;
  return std::nullopt;
}

common::EventSource sourceOf(const Event& event) {
  return common::eventSourceFromString(event.source);
}

common::EventKind kindOf(const Event& event) {
  return common::eventKindFromString(event.kind);
}

bool isEvent(const Event& event, common::EventSource source, common::EventKind kind) {
  return sourceOf(event) == source && kindOf(event) == kind;
}

}  // namespace kfaild::storage
