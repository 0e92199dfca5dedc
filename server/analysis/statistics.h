#pragma once

// Statistics across drills, for the statistics endpoint and the dashboard: per (cluster, client
// profile, topic, partition, role, fault) the distribution of the ack and receive stalls and of
// each phase over the runs that measured them, and the trend (one point per run). Pure: the caller
// reads the drills from the store.
//
// Only figures count: a stall is taken where a run's analysis reports one (`stall` set; an open
// interval from results stored before outcomes existed is a lower bound and is left out), so a
// run whose stall was `none` or `inconclusive` adds a trend point without a stall, never a zero.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kfaild::analysis {

// One finished drill as stored: its result is the JSON the drill runner wrote ({"runs": [...]}).
struct StoredDrill {
  std::int64_t id = 0;
  std::string cluster;  // the cluster's name
  std::string fault;
  std::int64_t created_us = 0;
  nlohmann::json result;
};

struct StatisticsFilter {
  std::optional<std::string> topic;
  std::optional<std::int32_t> partition;
  std::optional<std::string> role;
};

// Nearest-rank percentiles.
struct Distribution {
  std::int64_t min = 0;
  std::int64_t median = 0;
  std::int64_t p95 = 0;
  std::int64_t max = 0;
  std::size_t count = 0;
};
std::optional<Distribution> distributionOf(std::vector<std::int64_t> values);

struct TrendPoint {
  std::int64_t drill = 0;
  std::int32_t run = 0;
  std::int64_t at_us = 0;  // the run's fault time (the drill's creation when unknown)
  std::optional<std::int64_t> ack_stall_us;
  std::optional<std::int64_t> receive_stall_us;
  // The drill's verdict flagged this run's stall of this partition as a regression (verdict.h).
  bool ack_regressed = false;
  bool receive_regressed = false;
};

struct StatisticsGroup {
  std::string cluster;
  // The client profile whose view it is (probe.profiles); empty for runs stored without profiles
  // (the primary's, named nowhere).
  std::string profile;
  std::string topic;
  std::int32_t partition = 0;
  std::string role;
  std::string fault;
  std::vector<std::int64_t> ack, receive, detection, election, discovery, resume;
  std::vector<TrendPoint> trend;  // oldest first
  std::size_t regressions = 0;    // trend points with a regressed ack or receive stall
};

struct Statistics {
  std::vector<StatisticsGroup> groups;  // ordered by cluster, topic, partition, role, fault
  std::size_t runs_used = 0;            // runs with at least one partition in a group
};

// `drills` oldest first (each trend then reads left to right). Runs not `done` or without an
// analysis are skipped.
Statistics statisticsOf(const std::vector<StoredDrill>& drills, const StatisticsFilter& filter);

}  // namespace kfaild::analysis
