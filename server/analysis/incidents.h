#pragma once

// Incidents: stalls outside drills. Gaps that no drill window overlaps, merged where they
// overlap in time (any partition, either kind) into one incident each. Pure: the caller reads
// the gaps and the drills' windows from the store.

#include <cstdint>
#include <vector>

#include "storage/records.h"

namespace kfaild::analysis {

// A drill's span, from its start to its end (or now) plus a margin: its own stalls are not
// incidents.
struct DrillWindow {
  std::int64_t from_us = 0;
  std::int64_t to_us = 0;
};

struct Incident {
  std::int64_t start_us = 0;
  std::int64_t end_us = 0;
  std::vector<storage::Gap> gaps;  // by start time
};

// Oldest first.
std::vector<Incident> incidentsOf(std::vector<storage::Gap> gaps, const std::vector<DrillWindow>& drills);

}  // namespace kfaild::analysis
