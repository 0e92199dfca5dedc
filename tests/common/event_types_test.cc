#include "server/common/event_types.h"

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

namespace event_types_test {

using namespace kfaild::common;

namespace {

// Every enumerator with the exact spelling the database and the API carry: a renamed spelling,
// or an enumerator added without one, fails here.
template <typename Enum, typename FromString>
void checkRoundTrip(const std::vector<std::pair<Enum, std::string>>& expected, Enum past_last,
                    FromString fromString) {
  REQUIRE(expected.size() == static_cast<std::size_t>(past_last));
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto& [value, text] = expected[i];
    INFO(text);
    CHECK(static_cast<std::size_t>(value) == i);
    CHECK(std::string(toString(value)) == text);
    const auto read = fromString(text);
    CHECK(read == value);
  }
}

}  // namespace

TEST_CASE("every event source reads back from the spelling it is stored as", "[unit][common]") {
  checkRoundTrip<EventSource>({{EventSource::kMetadata, "metadata"},
                               {EventSource::kClient, "client"},
                               {EventSource::kBrokerLog, "broker_log"},
                               {EventSource::kInjector, "injector"},
                               {EventSource::kProbe, "probe"},
                               {EventSource::kControl, "control"},
                               {EventSource::kCoordinator, "coordinator"},
                               {EventSource::kKfaild, "kfaild"}},
                              EventSource::kUnknown, eventSourceFromString);
}

TEST_CASE("every event kind reads back from the spelling it is stored as", "[unit][common]") {
  checkRoundTrip<EventKind>({{EventKind::kBrokerGone, "broker_gone"},
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
                             {EventKind::kSecondFaultRefused, "second_fault_refused"}},
                            EventKind::kUnknown, eventKindFromString);
}

TEST_CASE("every partition role, node role and departure reads back from its spelling",
          "[unit][common]") {
  checkRoundTrip<PartitionRole>({{PartitionRole::kLeader, "leader"},
                                 {PartitionRole::kFollowerInIsr, "follower"},
                                 {PartitionRole::kFollowerOutOfIsr, "follower_out_of_isr"},
                                 {PartitionRole::kNotAReplica, "not_a_replica"},
                                 {PartitionRole::kSoleReplica, "sole_replica"},
                                 {PartitionRole::kBelowMinIsr, "below_min_isr"},
                                 {PartitionRole::kIsolatedLeader, "isolated_leader"},
                                 {PartitionRole::kIsolatedFollower, "isolated_follower"},
                                 {PartitionRole::kThrottledLeader, "throttled_leader"},
                                 {PartitionRole::kThrottledFollower, "throttled_follower"}},
                                static_cast<PartitionRole>(10), partitionRoleFromString);
  checkRoundTrip<NodeRole>({{NodeRole::kBroker, "broker"}, {NodeRole::kController, "controller"}},
                           static_cast<NodeRole>(2), nodeRoleFromString);
  checkRoundTrip<Departure>(
      {{Departure::kFenced, "fenced"}, {Departure::kControlledShutdown, "controlled_shutdown"}},
      static_cast<Departure>(2), departureFromString);
}

TEST_CASE("every outcome and mechanism reads back from its spelling", "[unit][common]") {
  checkRoundTrip<Outcome>({{Outcome::kStall, "stall"},
                           {Outcome::kNone, "none"},
                           {Outcome::kInconclusive, "inconclusive"}},
                          static_cast<Outcome>(3), outcomeFromString);
  checkRoundTrip<Mechanism>({{Mechanism::kNone, "none"},
                             {Mechanism::kSessionTimeout, "session_timeout"},
                             {Mechanism::kClientTimeout, "client_timeout"},
                             {Mechanism::kStaleLeader, "stale_leader"},
                             {Mechanism::kIsrShrink, "isr_shrink"},
                             {Mechanism::kHeal, "heal"},
                             {Mechanism::kNodeBack, "node_back"},
                             {Mechanism::kSharedRequest, "shared_request"}},
                            static_cast<Mechanism>(8), mechanismFromString);
  checkRoundTrip<GrayFault>({{GrayFault::kIsolate, "isolate"},
                             {GrayFault::kThrottle, "throttle"},
                             {GrayFault::kDiskFull, "disk_full"}},
                            static_cast<GrayFault>(3), grayFaultFromString);
}

TEST_CASE("a spelling this kfaild does not know reads as unknown, not as a known value",
          "[unit][common]") {
  CHECK(eventSourceFromString("kfaild-next") == EventSource::kUnknown);
  CHECK(eventKindFromString("kill_failed") == EventKind::kUnknown);
  CHECK(eventKindFromString("") == EventKind::kUnknown);
  CHECK(eventKindFromString("Fenced") == EventKind::kUnknown);
  CHECK(std::string(toString(EventKind::kUnknown)) == "unknown");
  CHECK_FALSE(partitionRoleFromString("leaders"));
  CHECK_FALSE(nodeRoleFromString("Controller"));
  CHECK_FALSE(departureFromString(""));
}

}  // namespace event_types_test
