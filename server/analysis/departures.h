#pragma once

// The brokers that left the cluster in a window, found from the run's events alone: what an
// observed drill (a fault kfaild did not inject) analyses. Pure.
//
// A departure is a broker's leaving, shown by the first of these signs of it:
//   fenced               the controller's log: its session timed out (broker_log / fenced)
//   controlled_shutdown  the controller's log: it asked to shut down (broker_log /
//                        controlled_shutdown)
//   unregistered         the metadata: it is no longer registered (metadata / broker_gone)
//   leader_lost          the metadata: it lost the leadership of a probe partition to a broker
//                        that is not the partition's preferred leader (metadata / leader_change,
//                        detail "from"); a move back to the preferred leader is a rebalance
// The departure's kind is the most telling sign of it: a log line over the metadata, and of two
// log lines the earlier; unregistered over leader_lost. A log line more than a second after the
// first sign (beyond that sign's resolution) does not name the kind: a broker that shut down at
// once (leading nothing) is fenced by the controller a session timeout after it left. Its time is
// its earliest sign's. Every
// later sign of the same broker belongs to the same departure until the metadata shows it
// registered again (broker_back): a sign after that starts a new departure.
//
// Each departure keeps the event its time comes from and that time's resolution: a log line's
// (analysis::logResolutionUs), or for the metadata the span between the poll that showed it and
// the one before (detail since_us), else the metadata interval.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "server/common/event_types.h"
#include "storage/records.h"

namespace kfaild::analysis {

enum class DepartureKind { kFenced, kControlledShutdown, kUnregistered, kLeaderLost };
const char* toString(DepartureKind kind);

struct DepartureFound {
  std::int32_t broker = -1;
  DepartureKind kind = DepartureKind::kUnregistered;
  std::int64_t at_us = 0;          // the earliest sign's time
  std::int64_t resolution_us = 0;  // ± of at_us
  // The event at_us comes from.
  common::EventSource source = common::EventSource::kMetadata;
  common::EventKind event = common::EventKind::kBrokerGone;
  // The sign the kind comes from (the fencing's log line, say, after the metadata showed the
  // broker gone): its time and resolution.
  std::int64_t kind_at_us = 0;
  std::int64_t kind_resolution_us = 0;
  std::optional<std::string> topic;  // leader_lost: the partition that showed it
  std::optional<std::int32_t> partition;
  // When the metadata showed the broker registered again, if it did in the events.
  std::optional<std::int64_t> back_at_us;
};

struct DepartureRules {
  std::int64_t from_us = 0;  // signs in [from_us, to_us] count
  std::int64_t to_us = 0;
  std::int64_t metadata_interval_us = 100'000;
  // The brokers whose departures count (the inventory's); empty: any.
  std::set<std::int32_t> brokers;
  // Each probe partition ("topic-partition") and its preferred leader (first replica).
  std::map<std::string, std::int32_t> preferred_leaders;
};

// Every departure in the window, by time. `events` in any order.
std::vector<DepartureFound> findDepartures(const std::vector<storage::Event>& events,
                                           const DepartureRules& rules);

}  // namespace kfaild::analysis
