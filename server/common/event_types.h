#pragma once

// The closed sets that events, the analysis and the inventory are compared on, each with one
// table of spellings (event_types.cc). The spellings are what the database, the REST API and the
// logs carry: renaming one is a migration, and tests/common/event_types_test.cc fails on it.
//
// Reading: a spelling this kfaild does not know (written by an older or newer kfaild, or an
// injector's own "<action>_failed") reads as kUnknown where the set has one. The records keep the
// text they were read with (storage::Event keeps source and kind as stored), so an unknown event
// is still listed and displayed as it was written; the analysis never matches kUnknown, so such an
// event is ignored by it, as it was before these types. Sets without kUnknown (read from a
// request or the configuration, where the caller rejects what is not known) return nullopt.

#include <optional>
#include <string_view>
#include <vector>

namespace kfaild::common {

// Who recorded an event.
enum class EventSource {
  kMetadata,     // kfaild's metadata poll
  kClient,       // librdkafka's log of the probe's clients
  kBrokerLog,    // a line of a broker's or controller's own logs
  kInjector,     // a fault injected, undone, healed
  kProbe,        // the probe's own stretches and causes
  kControl,      // the KRaft quorum probe
  kCoordinator,  // the group coordinator probe
  kKfaild,       // kfaild's own bookkeeping (maintenance, recovery)
  kUnknown,
};

// What happened. Only the kinds some code reads or writes by name; the injector's
// "<action>_failed" and the like stay text and read as kUnknown.
enum class EventKind {
  // metadata
  kBrokerGone,
  kBrokerBack,
  kControllerChange,
  kLeaderChange,
  kIsrShrink,
  kIsrExpand,
  kReplicasChange,
  kMetadataUnavailable,
  kMetadataAvailable,
  // client
  kClientLeaderUpdate,
  kClientRequestTimeout,
  // broker_log
  kFenced,
  kControlledShutdown,
  kShutdownGranted,
  kLeaderEpochStart,
  kSignalReceived,
  // control, coordinator
  kQuorumLeaderElected,
  kCoordinatorMoved,
  // probe
  kPartitionAdded,
  kProducerRecreated,
  kConsumerRestarted,
  kConsumerRecreated,
  kClientExited,     // the probe client's child process (java) died or was made to go
  kClientRestarted,  // ... and was started again
  kHeldBack,
  kIdle,
  kRefused,
  kDuplicate,
  kReordered,
  // injector
  kFault,
  kStarted,
  kResumed,
  kHealed,
  kRecovered,
  // kfaild
  kMaintenanceOpened,
  kMaintenanceClosed,
  kGraySwept,
  kRecoveryOrphaned,
  kRecoveredAfterRestart,
  kRecoveredLate,
  kRecoveryRetry,
  kSecondFaultRefused,
  kUnknown,
};

// A broker's role in a partition at the fault, and (the last four) what a gray fault makes of a
// leader or an in-sync follower (analysis::grayRole).
enum class PartitionRole {
  kLeader,
  kFollowerInIsr,
  kFollowerOutOfIsr,
  kNotAReplica,
  kSoleReplica,
  kBelowMinIsr,
  kIsolatedLeader,
  kIsolatedFollower,
  kThrottledLeader,
  kThrottledFollower,
};

// A node of the inventory (config::NodeConfig::role).
enum class NodeRole { kBroker, kController };

// How the target left its partitions: fenced on its session timeout, or in a controlled shutdown.
enum class Departure { kFenced, kControlledShutdown };

// What the analysis made of a partition's (or a stream's) longest gap (analysis::KindResult).
enum class Outcome { kStall, kNone, kInconclusive };

// What bounds a partition's stall (analysis::Expectation, analysis::MechanismResult): a gray
// fault's mechanisms, and shared_request under any fault.
enum class Mechanism {
  kNone,
  kSessionTimeout,
  kClientTimeout,
  kStaleLeader,
  kIsrShrink,
  kHeal,
  kNodeBack,
  kSharedRequest,
};

const char* toString(EventSource source);
const char* toString(EventKind kind);
const char* toString(PartitionRole role);
const char* toString(NodeRole role);
const char* toString(Departure departure);
const char* toString(Outcome outcome);
// A gray fault's kind (analysis::GrayFaultInput; spelled as the drill request's `fault`).
enum class GrayFault { kIsolate, kThrottle, kDiskFull };

const char* toString(Mechanism mechanism);
const char* toString(GrayFault fault);

EventSource eventSourceFromString(std::string_view text);  // kUnknown when not known
EventKind eventKindFromString(std::string_view text);      // kUnknown when not known
std::optional<PartitionRole> partitionRoleFromString(std::string_view text);
std::optional<NodeRole> nodeRoleFromString(std::string_view text);
std::optional<Departure> departureFromString(std::string_view text);
std::optional<Outcome> outcomeFromString(std::string_view text);
std::optional<Mechanism> mechanismFromString(std::string_view text);
std::optional<GrayFault> grayFaultFromString(std::string_view text);

// Every partition role's spelling, in the enum's order (for a request's or a configuration's
// choice of role).
std::vector<std::string_view> partitionRoleNames();

}  // namespace kfaild::common
