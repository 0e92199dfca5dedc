#pragma once

// Shared by the storage tests: record builders and whole-record comparisons, so a test checks
// every field and not a sample of them.

#include <catch2/catch.hpp>
#include <string>
#include <tuple>

#include "storage/records.h"
#include "storage/sqlite.h"

namespace kfaild::storage::testing {

inline auto fields(const ProbeSample& s) {
  return std::tie(s.cluster, s.topic, s.partition, s.seq, s.send_us, s.ack_us, s.ack_error,
                  s.offset, s.receive_us);
}
inline auto fields(const Gap& g) {
  return std::tie(g.cluster, g.topic, g.partition, g.kind, g.start_us, g.end_us, g.duration_us,
                  g.seq_before, g.seq_after);
}
// Without the id, which the store assigns.
inline auto fields(const Event& e) {
  return std::tie(e.cluster, e.t_us, e.source, e.kind, e.broker, e.topic, e.partition, e.detail);
}

template <typename T>
bool sameRecord(const T& a, const T& b) {
  return fields(a) == fields(b);
}

inline std::string describe(const ProbeSample& s) {
  const auto opt = [](const std::optional<std::int64_t>& v) {
    return v ? std::to_string(*v) : std::string("none");
  };
  return "sample{cluster=" + std::to_string(s.cluster) + " " + s.topic + "/" +
         std::to_string(s.partition) + " seq=" + std::to_string(s.seq) +
         " send=" + std::to_string(s.send_us) + " ack=" + opt(s.ack_us) +
         " err=" + std::to_string(s.ack_error) + " offset=" + opt(s.offset) +
         " receive=" + opt(s.receive_us) + "}";
}

// Rows in `table`, read on a connection of the test's own. "probe_samples" counts the samples
// stored in probe_sample_blocks (samples are kept in blocks since schema step 5).
inline std::int64_t countRows(const std::string& path, const std::string& table) {
  auto db = sqlite::Database::open(path);
  REQUIRE(db.ok());
  auto count =
      (*db)->queryInt(table == "probe_samples"
                          ? std::string("SELECT coalesce(sum(samples), 0) FROM probe_sample_blocks")
                          : "SELECT count(*) FROM " + table);
  REQUIRE(count.ok());
  return *count;
}

}  // namespace kfaild::storage::testing
