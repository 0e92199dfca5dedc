#pragma once

// A point-in-time view of a cluster as metadata answers describe it: the brokers they list (in
// KRaft: registered and unfenced) and per requested topic its partitions' leader, replicas and
// ISR. The controller id of a Metadata answer is left out on purpose: in KRaft it is a broker
// picked at random, not the active controller (that one is in quorum.h).
//
// Times: each answer is stamped (wall clock, µs) when it arrived, so that a change seen in the
// first of several per-topic answers is not dated by the last one.

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/common/clock.h"
#include "server/common/result.h"
#include "server/kafka/cluster_types.h"

namespace kfaild::kafka {

// Sends one Metadata request per topic (a request for every topic of a large cluster would be
// far heavier). Blocks up to `timeout_ms` per request. Thread-safe for a given handle.
// The handle must have allow.auto.create.topics=false (librdkafka's producers default to true,
// brokers to auto.create.topics.enable=true), or asking about a missing topic creates it with
// one partition.
// With a clock, every answer is stamped with clock.wallNow() when it arrives (answered_at_us,
// brokers_at_us); without one those stay 0.
Result<ClusterSnapshot> fetchMetadata(rd_kafka_t* rk, const std::vector<std::string>& topics,
                                      int timeout_ms, const common::Clock& clock);
Result<ClusterSnapshot> fetchMetadata(rd_kafka_t* rk, const std::vector<std::string>& topics,
                                      int timeout_ms);

// Every topic of the cluster (internal ones included) in one request: for drill guards, which
// must know every partition a broker failure would take offline. Heavier than fetchMetadata.
Result<ClusterSnapshot> fetchAllMetadata(rd_kafka_t* rk, int timeout_ms);

}  // namespace kfaild::kafka
