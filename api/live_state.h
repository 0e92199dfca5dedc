#pragma once

// The live-state seam: what the HTTP endpoints know about each configured cluster right now.
// The daemon implements LiveClusters over its metadata pollers and probe runners; tests
// implement it with fixed data.
//
// Time: the Instants in `probe` (last ack, last receive) come from the probe's Clock; the
// endpoints compute ages ("now − last ack") with the monotonic part of the same Clock, which is
// why that Clock is handed to them beside this interface.

#include <string>
#include <vector>

#include "server/observe/observed_cluster.h"
#include "server/probe/probe_status.h"
#include "storage/records.h"

namespace kfaild::api {

// A client profile's probe (config::ProbeProfile).
struct ProfileLive {
  std::string name;
  std::string client;  // librdkafka | wire | java
  probe::ProbeStatus probe;
};

struct ClusterLive {
  std::string name;
  storage::ClusterId id = 0;
  std::string bootstrap;
  observe::ObservedCluster observed;
  probe::ProbeStatus probe;  // the primary profile's
  // With probe.profiles: every profile, the primary first; empty without.
  std::vector<ProfileLive> profiles{};
};

class LiveClusters {
 public:
  virtual ~LiveClusters() = default;
  // Every configured cluster, in configuration order, as its poller and probe last saw it.
  // Called by HTTP threads, concurrently: must be thread-safe, must not block on I/O, and must
  // return promptly (copying snapshots; MetadataPoller::latest() and ProbeRunner::status() are).
  virtual std::vector<ClusterLive> clusters() const = 0;
};

}  // namespace kfaild::api
