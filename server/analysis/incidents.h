#pragma once

// Incidents: stalls outside drills and planned maintenance. Gaps that no drill window and no
// maintenance window overlaps, merged where they overlap in time (any partition, either kind)
// into one incident each. A gap that overlaps a maintenance window is *planned*: it stays stored
// and listed (with the window's id), it is never an incident. Pure: the caller reads the gaps,
// the drills' windows and the maintenance windows from the stores.

#include <cstdint>
#include <optional>
#include <vector>

#include "storage/maintenance_store.h"
#include "storage/records.h"
#include "storage/store.h"

namespace kfaild::analysis {

// A drill's span, from its start to its end (or now) plus a margin: its own stalls are not
// incidents.
struct DrillWindow {
  std::int64_t from_us = 0;
  std::int64_t to_us = 0;
};

// A planned-maintenance window: from its start to its end, or to when it was closed early.
struct MaintenanceSpan {
  std::int64_t id = 0;  // the window's
  std::int64_t from_us = 0;
  std::int64_t to_us = 0;
};

struct Incident {
  std::int64_t start_us = 0;
  std::int64_t end_us = 0;
  std::vector<storage::Gap> gaps;  // by start time
};

// From the earliest start to the latest end of `gaps` (not empty): the span whose drill and
// maintenance windows decide which of them are incidents.
storage::TimeRange extentOf(const std::vector<storage::Gap>& gaps);

std::vector<MaintenanceSpan> spansOf(const std::vector<storage::MaintenanceWindowRecord>& windows);

// The maintenance window `gap` overlaps (the first of `windows` that does), if any.
std::optional<std::int64_t> plannedBy(const storage::Gap& gap,
                                      const std::vector<MaintenanceSpan>& windows);

// Oldest first.
std::vector<Incident> incidentsOf(std::vector<storage::Gap> gaps,
                                  const std::vector<DrillWindow>& drills,
                                  const std::vector<MaintenanceSpan>& maintenance = {});

}  // namespace kfaild::analysis
