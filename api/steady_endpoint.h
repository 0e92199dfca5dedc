#pragma once

// The steady-state endpoint, for chaos tools and rollouts (openapi.yaml has the schema):
//
//   GET /api/v1/clusters/{cluster}/steady?window_s=30
//
// 200 when the cluster was steady over the last window_s seconds (server/analysis/steady.h says
// what that takes), 503 when it was not; both with the same JSON body, which names every failing
// partition and objective. 400 for a window out of [1, 3600] or an unknown parameter, 404 for a
// cluster that is not configured (a cluster kfaild does not probe has no steady state).
// A viewer may read it.
//
// It gathers the inputs of analysis::checkSteady: the probe's state and the last metadata
// answer from LiveClusters, the gaps that ended and the messages lost inside the window from the
// Store, and the cluster's objectives and probe topics' min.insync.replicas from the
// configuration (SteadySettings). It never waits on the probe or the writer.
//
// Thread-safety: the handler may run concurrently; LiveClusters and Store must be thread-safe.

#include <cstdint>
#include <map>
#include <string>

#include "api/http_message.h"
#include "api/live_state.h"
#include "api/router.h"
#include "server/analysis/objectives.h"
#include "server/common/clock.h"
#include "storage/store.h"

namespace kfaild::api {

// What the configuration says of one cluster for the check.
struct SteadySettings {
  analysis::Objectives objectives = analysis::defaultObjectives();
  // min.insync.replicas of each probe topic kfaild creates with one; others count as 1.
  std::map<std::string, std::int32_t> min_insync;
};

class SteadyEndpoint {
 public:
  // `clock` must be the one that stamped the probe's Instants (live_state.h); `settings` by
  // cluster name, a cluster without an entry has the default objectives. The references must
  // outlive the router the endpoint is registered on.
  SteadyEndpoint(const LiveClusters& live, const storage::Store& store, const common::Clock& clock,
                 std::map<std::string, SteadySettings> settings);

  void registerOn(Router& router) const;

 private:
  Response steady(const Request& request) const;

  const LiveClusters& live_;
  const storage::Store& store_;
  const common::Clock& clock_;
  std::map<std::string, SteadySettings> settings_;
};

}  // namespace kfaild::api
