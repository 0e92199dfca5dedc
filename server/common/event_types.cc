#include "server/common/event_types.h"

#include <array>
#include <string>
#include <unordered_map>
#include <utility>

namespace kfaild::common {
namespace {

template <typename Enum>
using Table = std::pair<Enum, std::string_view>;

// Each table lists every enumerator but kUnknown once, in the enum's order.
constexpr std::array<Table<EventSource>, 8> kSources{{
    {EventSource::kMetadata, "metadata"},
    {EventSource::kClient, "client"},
    {EventSource::kBrokerLog, "broker_log"},
    {EventSource::kInjector, "injector"},
    {EventSource::kProbe, "probe"},
    {EventSource::kControl, "control"},
    {EventSource::kCoordinator, "coordinator"},
    {EventSource::kKfaild, "kfaild"},
}};

constexpr std::array<Table<EventKind>, 42> kKinds{{
    {EventKind::kBrokerGone, "broker_gone"},
    {EventKind::kBrokerBack, "broker_back"},
    {EventKind::kControllerChange, "controller_change"},
    {EventKind::kLeaderChange, "leader_change"},
    {EventKind::kIsrShrink, "isr_shrink"},
    {EventKind::kIsrExpand, "isr_expand"},
    {EventKind::kReplicasChange, "replicas_change"},
    {EventKind::kMetadataUnavailable, "metadata_unavailable"},
    {EventKind::kMetadataAvailable, "metadata_available"},
    {EventKind::kClientLeaderUpdate, "client_leader_update"},
    {EventKind::kClientRequestTimeout, "client_request_timeout"},
    {EventKind::kFenced, "fenced"},
    {EventKind::kControlledShutdown, "controlled_shutdown"},
    {EventKind::kShutdownGranted, "shutdown_granted"},
    {EventKind::kLeaderEpochStart, "leader_epoch_start"},
    {EventKind::kSignalReceived, "signal_received"},
    {EventKind::kQuorumLeaderElected, "quorum_leader_elected"},
    {EventKind::kCoordinatorMoved, "coordinator_moved"},
    {EventKind::kPartitionAdded, "partition_added"},
    {EventKind::kProducerRecreated, "producer_recreated"},
    {EventKind::kConsumerRestarted, "consumer_restarted"},
    {EventKind::kConsumerRecreated, "consumer_recreated"},
    {EventKind::kClientExited, "client_exited"},
    {EventKind::kClientRestarted, "client_restarted"},
    {EventKind::kHeldBack, "held_back"},
    {EventKind::kIdle, "idle"},
    {EventKind::kRefused, "refused"},
    {EventKind::kDuplicate, "duplicate"},
    {EventKind::kReordered, "reordered"},
    {EventKind::kFault, "fault"},
    {EventKind::kStarted, "started"},
    {EventKind::kResumed, "resumed"},
    {EventKind::kHealed, "healed"},
    {EventKind::kRecovered, "recovered"},
    {EventKind::kMaintenanceOpened, "maintenance_opened"},
    {EventKind::kMaintenanceClosed, "maintenance_closed"},
    {EventKind::kGraySwept, "gray_swept"},
    {EventKind::kRecoveryOrphaned, "recovery_orphaned"},
    {EventKind::kRecoveredAfterRestart, "recovered_after_restart"},
    {EventKind::kRecoveredLate, "recovered_late"},
    {EventKind::kRecoveryRetry, "recovery_retry"},
    {EventKind::kSecondFaultRefused, "second_fault_refused"},
}};

constexpr std::array<Table<PartitionRole>, 10> kPartitionRoles{{
    {PartitionRole::kLeader, "leader"},
    {PartitionRole::kFollowerInIsr, "follower"},
    {PartitionRole::kFollowerOutOfIsr, "follower_out_of_isr"},
    {PartitionRole::kNotAReplica, "not_a_replica"},
    {PartitionRole::kSoleReplica, "sole_replica"},
    {PartitionRole::kBelowMinIsr, "below_min_isr"},
    {PartitionRole::kIsolatedLeader, "isolated_leader"},
    {PartitionRole::kIsolatedFollower, "isolated_follower"},
    {PartitionRole::kThrottledLeader, "throttled_leader"},
    {PartitionRole::kThrottledFollower, "throttled_follower"},
}};

constexpr std::array<Table<NodeRole>, 2> kNodeRoles{{
    {NodeRole::kBroker, "broker"},
    {NodeRole::kController, "controller"},
}};

constexpr std::array<Table<Departure>, 2> kDepartures{{
    {Departure::kFenced, "fenced"},
    {Departure::kControlledShutdown, "controlled_shutdown"},
}};

constexpr std::array<Table<Outcome>, 3> kOutcomes{{
    {Outcome::kStall, "stall"},
    {Outcome::kNone, "none"},
    {Outcome::kInconclusive, "inconclusive"},
}};

constexpr std::array<Table<Mechanism>, 8> kMechanisms{{
    {Mechanism::kNone, "none"},
    {Mechanism::kSessionTimeout, "session_timeout"},
    {Mechanism::kClientTimeout, "client_timeout"},
    {Mechanism::kStaleLeader, "stale_leader"},
    {Mechanism::kIsrShrink, "isr_shrink"},
    {Mechanism::kHeal, "heal"},
    {Mechanism::kNodeBack, "node_back"},
    {Mechanism::kSharedRequest, "shared_request"},
}};

constexpr std::array<Table<GrayFault>, 3> kGrayFaults{{
    {GrayFault::kIsolate, "isolate"},
    {GrayFault::kThrottle, "throttle"},
    {GrayFault::kDiskFull, "disk_full"},
}};

// The tables are in the enum's order, so an enumerator's spelling is found by its index; a table
// out of order fails this at compile time.
template <typename Enum, std::size_t N>
constexpr bool inEnumOrder(const std::array<Table<Enum>, N>& table) {
  for (std::size_t i = 0; i < N; ++i) {
    if (static_cast<std::size_t>(table[i].first) != i) return false;
  }
  return true;
}
static_assert(inEnumOrder(kSources) &&
              static_cast<std::size_t>(EventSource::kUnknown) == kSources.size());
static_assert(inEnumOrder(kKinds) &&
              static_cast<std::size_t>(EventKind::kUnknown) == kKinds.size());
static_assert(inEnumOrder(kPartitionRoles) && inEnumOrder(kNodeRoles) && inEnumOrder(kDepartures));
static_assert(inEnumOrder(kOutcomes) && inEnumOrder(kMechanisms) && inEnumOrder(kGrayFaults));

// The spellings are literals, so data() is null-terminated.
template <typename Enum, std::size_t N>
const char* nameOf(const std::array<Table<Enum>, N>& table, Enum value) {
  const auto index = static_cast<std::size_t>(value);
  return index < N ? table[index].second.data() : "unknown";
}

template <typename Enum, std::size_t N>
std::optional<Enum> valueOf(const std::array<Table<Enum>, N>& table, std::string_view text) {
  for (const auto& [value, name] : table) {
    if (name == text) return value;
  }
  return std::nullopt;
}

}  // namespace

const char* toString(EventSource source) {
  return nameOf(kSources, source);
}
const char* toString(EventKind kind) {
  return nameOf(kKinds, kind);
}
const char* toString(PartitionRole role) {
  return nameOf(kPartitionRoles, role);
}
const char* toString(NodeRole role) {
  return nameOf(kNodeRoles, role);
}
const char* toString(Departure departure) {
  return nameOf(kDepartures, departure);
}
const char* toString(Outcome outcome) {
  return nameOf(kOutcomes, outcome);
}
const char* toString(Mechanism mechanism) {
  return nameOf(kMechanisms, mechanism);
}
const char* toString(GrayFault fault) {
  return nameOf(kGrayFaults, fault);
}

EventSource eventSourceFromString(std::string_view text) {
  return valueOf(kSources, text).value_or(EventSource::kUnknown);
}

EventKind eventKindFromString(std::string_view text) {
  // The analysis reads every event's kind once per partition: a hash, not a scan of the table.
  static const auto* const by_name = [] {
    auto* map = new std::unordered_map<std::string_view, EventKind>();
    for (const auto& [value, name] : kKinds) map->emplace(name, value);
    return map;
  }();
  const auto it = by_name->find(text);
  return it == by_name->end() ? EventKind::kUnknown : it->second;
}

std::optional<PartitionRole> partitionRoleFromString(std::string_view text) {
  return valueOf(kPartitionRoles, text);
}
std::vector<std::string_view> partitionRoleNames() {
  std::vector<std::string_view> names;
  for (const auto& [value, name] : kPartitionRoles) names.push_back(name);
  return names;
}

std::optional<NodeRole> nodeRoleFromString(std::string_view text) {
  return valueOf(kNodeRoles, text);
}
std::optional<Departure> departureFromString(std::string_view text) {
  return valueOf(kDepartures, text);
}
std::optional<Outcome> outcomeFromString(std::string_view text) {
  return valueOf(kOutcomes, text);
}
std::optional<Mechanism> mechanismFromString(std::string_view text) {
  return valueOf(kMechanisms, text);
}
std::optional<GrayFault> grayFaultFromString(std::string_view text) {
  return valueOf(kGrayFaults, text);
}

}  // namespace kfaild::common
