#include "storage/drill_store.h"

namespace kfaild::storage {

Result<std::optional<RecoveryEntry>> resolveRecovery(DrillStore& store, std::int64_t id,
                                                     const std::string& note, std::int64_t now_us) {
  auto pending = store.pendingRecoveries();
  if (!pending) return pending.error();
  for (auto entry : *pending) {
    if (entry.id != id) continue;
    entry.done_us = now_us;
    entry.phase = "resolved";
    entry.last_error =
        "resolved by an operator" + (note.empty() ? std::string() : ": " + note) +
        (entry.last_error.empty() ? std::string() : " (last error: " + entry.last_error + ")");
    if (auto s = store.updateRecovery(entry); !s) return s.error();
    return std::optional<RecoveryEntry>(entry);
  }
  return std::optional<RecoveryEntry>();
}

}  // namespace kfaild::storage
