#include "server/analysis/control_plane.h"

#include <algorithm>

namespace kfaild::analysis {
namespace {

using common::EventKind;
using common::EventSource;
using nlohmann::json;

// An answer this long before the fault still shows the probe probing when the fault came: the
// probe asks every interval, and an answer takes a few milliseconds.
constexpr std::int64_t kLeadIntervals = 3;

json intervalJson(const std::optional<Interval>& i) {
  if (!i) return nullptr;
  return {{"start_us", i->start_us},
          {"end_us", i->end_us},
          {"duration_s", static_cast<double>(i->duration_us()) / 1e6},
          {"open", i->open}};
}

std::int64_t detailInt(const json& detail, const char* key, std::int64_t fallback) {
  const auto found = detail.find(key);
  return found != detail.end() && found->is_number_integer() ? found->get<std::int64_t>()
                                                             : fallback;
}

}  // namespace

StreamResult analyseStream(const StreamInput& input) {
  StreamResult r;
  r.resolution_us = input.interval_us;
  r.significant_us = input.gap_threshold_us;
  // The operations, by answer time.
  std::vector<const storage::ProbeSample*> ops;
  if (input.samples != nullptr) {
    for (const auto& s : *input.samples) {
      if (s.ack_us) ops.push_back(&s);
    }
  }
  std::sort(ops.begin(), ops.end(),
            [](const auto* a, const auto* b) { return *a->ack_us < *b->ack_us; });
  // An answer is the cluster's from before the fault when it may have come before it: within the
  // fault time's uncertainty after it, or, to an operation sent before it, within one interval
  // after it (the node answered before it died; kfaild read the answer a little later). Taken as
  // the first answer after the fault, such an answer hides the wait for the coordinator to move
  // that follows it (fa0c2a6).
  const auto answeredBefore = [&](const storage::ProbeSample& s) {
    const auto at = *s.ack_us;
    return at <= input.fault_us + input.fault_time_uncertainty_us ||
           (s.send_us <= input.fault_us && at <= input.fault_us + input.interval_us);
  };
  std::optional<std::int64_t> last_before;  // last answer at or before the fault
  const storage::ProbeSample* first_after = nullptr;
  std::optional<std::int64_t> previous_ok;
  for (const auto* s : ops) {
    if (*s->ack_us < input.window_start_us || *s->ack_us > input.window_end_us) continue;
    ++r.operations;
    if (s->ack_error != 0) {
      ++r.failed;
      continue;
    }
    const auto at = *s->ack_us;
    if (first_after == nullptr && answeredBefore(*s)) {
      if (previous_ok) r.baseline_longest_us = std::max(r.baseline_longest_us, at - *previous_ok);
      last_before = at;
    } else if (first_after == nullptr) {
      first_after = s;
    }
    previous_ok = at;
  }
  r.significant_us = std::max(input.gap_threshold_us, 2 * r.baseline_longest_us);

  if (input.clock_steps > 0) {
    r.reason = "kfaild's wall clock stepped " + std::to_string(input.clock_steps) +
               " time(s) during the window: answer times on either side of a step do not line up";
    return r;
  }
  if (!last_before ||
      *last_before < input.fault_us - kLeadIntervals * input.interval_us - input.gap_threshold_us) {
    r.reason = last_before ? "the stream had not been answered for " +
                                 std::to_string((input.fault_us - *last_before) / 1000) +
                                 " ms when the fault came: the stall did not begin with it"
                           : "no operation was answered before the fault in the window";
    if (last_before)
      r.longest_gap = Interval{
          *last_before, first_after ? *first_after->ack_us : input.window_end_us, !first_after};
    return r;
  }
  if (first_after == nullptr) {
    r.longest_gap = Interval{*last_before, input.window_end_us, true};
    r.reason = "no operation was answered after the fault before the observation ended";
    return r;
  }
  r.longest_gap = Interval{*last_before, *first_after->ack_us, false};
  r.ended_by = EndedBy{first_after->seq, *first_after->ack_us};
  const auto duration = r.longest_gap->duration_us();
  if (input.fault_time_uncertainty_us > duration) {
    r.reason = "the fault time is known to ±" +
               std::to_string(input.fault_time_uncertainty_us / 1000) + " ms, more than the " +
               std::to_string(duration / 1000) + " ms candidate";
    return r;
  }
  if (duration > r.significant_us) {
    r.outcome = Outcome::kStall;
    r.stall = r.longest_gap;
  } else {
    r.outcome = Outcome::kNone;
    r.reason = "answered within " + std::to_string(duration / 1000) +
               " ms of the last answer before the fault (" + "significant above " +
               std::to_string(r.significant_us / 1000) + " ms)";
  }
  return r;
}

ControlPlaneResult analyseControlPlane(const ControlPlaneInput& input,
                                       const std::vector<storage::Event>& events) {
  ControlPlaneResult r;
  StreamInput stream;
  stream.interval_us = input.interval_us;
  stream.gap_threshold_us = input.gap_threshold_us;
  stream.fault_us = input.fault_us;
  stream.fault_time_uncertainty_us = input.fault_time_uncertainty_us;
  stream.window_start_us = input.window_start_us;
  stream.window_end_us = input.window_end_us;
  stream.samples = &input.samples;
  stream.clock_steps = input.clock_steps;
  static_cast<StreamResult&>(r) = analyseStream(stream);

  // The quorum's elections in the window: from the fault (less its uncertainty) on.
  r.quorum_watched = input.quorum_watched;
  if (!input.quorum_watched) {
    r.quorum_reason = input.quorum_unwatched_reason.empty() ? "the quorum was not watched"
                                                            : input.quorum_unwatched_reason;
  }
  for (const auto& e : events) {
    if (!storage::isEvent(e, EventSource::kControl, EventKind::kQuorumLeaderElected)) {
      continue;
    }
    if (e.t_us < input.fault_us - input.fault_time_uncertainty_us || e.t_us > input.window_end_us)
      continue;
    const auto detail = json::parse(e.detail, nullptr, false);
    if (!detail.is_object()) continue;
    QuorumElection election;
    election.at_us = e.t_us;
    election.leader = static_cast<std::int32_t>(detailInt(detail, "leader", -1));
    election.epoch = static_cast<std::int32_t>(detailInt(detail, "epoch", -1));
    election.previous_leader = static_cast<std::int32_t>(detailInt(detail, "previous_leader", -1));
    election.previous_epoch = static_cast<std::int32_t>(detailInt(detail, "previous_epoch", -1));
    election.leaderless_us = detailInt(detail, "leaderless_us", 0);
    // The old leader's last answer may precede its end by one watch, and the new one's first
    // answer trail its election by one.
    election.resolution_us =
        input.interval_us + std::max(input.interval_us, detailInt(detail, "watch_period_us", 0));
    r.epoch_increments += std::max<std::int64_t>(0, election.epoch - election.previous_epoch);
    r.elections.push_back(election);
  }
  std::sort(r.elections.begin(), r.elections.end(),
            [](const QuorumElection& a, const QuorumElection& b) { return a.at_us < b.at_us; });
  if (!r.elections.empty()) r.leaderless_us = r.elections.front().leaderless_us;
  return r;
}

CoordinatorsResult analyseCoordinators(const CoordinatorsInput& input,
                                       const std::vector<storage::Event>& events) {
  CoordinatorsResult r;
  r.commits = analyseStream(input.commits);
  if (input.transactions) r.transactions = analyseStream(*input.transactions);
  r.watched = input.watched;
  if (!input.watched)
    r.reason = input.unwatched_reason.empty() ? "the coordinators were not watched"
                                              : input.unwatched_reason;
  const auto& c = input.commits;
  for (const auto& e : events) {
    if (!storage::isEvent(e, EventSource::kCoordinator, EventKind::kCoordinatorMoved)) {
      continue;
    }
    if (e.t_us < c.fault_us - c.fault_time_uncertainty_us || e.t_us > c.window_end_us) continue;
    const auto detail = json::parse(e.detail, nullptr, false);
    if (!detail.is_object()) continue;
    CoordinatorMove move;
    move.at_us = e.t_us;
    move.type = detail.value("type", "");
    move.key = detail.value("key", "");
    move.from = static_cast<std::int32_t>(detailInt(detail, "from", -1));
    move.to = static_cast<std::int32_t>(detailInt(detail, "to", -1));
    move.partition = detail.value("partition", "");
    r.moves.push_back(std::move(move));
  }
  std::sort(r.moves.begin(), r.moves.end(),
            [](const CoordinatorMove& a, const CoordinatorMove& b) { return a.at_us < b.at_us; });
  for (const auto& m : r.moves) {
    if (m.from == input.target) {
      r.coordinator_moved_us = m.at_us - c.fault_us;
      break;
    }
  }
  if (r.commits.ended_by) r.first_commit_us = r.commits.ended_by->at_us - c.fault_us;
  if (r.transactions && r.transactions->ended_by)
    r.first_transaction_us = r.transactions->ended_by->at_us - c.fault_us;
  return r;
}

void toJson(const StreamResult& r, json& out) {
  out["outcome"] = toString(r.outcome);
  out["stall"] = intervalJson(r.stall);
  out["longest_gap"] = intervalJson(r.longest_gap);
  out["ended_by"] =
      r.ended_by ? json{{"seq", r.ended_by->seq}, {"at_us", r.ended_by->at_us}} : json(nullptr);
  out["baseline_longest_s"] = static_cast<double>(r.baseline_longest_us) / 1e6;
  out["significant_s"] = static_cast<double>(r.significant_us) / 1e6;
  out["resolution_s"] = static_cast<double>(r.resolution_us) / 1e6;
  out["reason"] = r.reason.empty() ? json(nullptr) : json(r.reason);
  out["operations"] = r.operations;
  out["failed"] = r.failed;
}

json toJson(const ControlPlaneResult& r) {
  json elections = json::array();
  for (const auto& e : r.elections) {
    elections.push_back({{"at_us", e.at_us},
                         {"leader", e.leader},
                         {"epoch", e.epoch},
                         {"previous_leader", e.previous_leader},
                         {"previous_epoch", e.previous_epoch},
                         {"leaderless_s", static_cast<double>(e.leaderless_us) / 1e6},
                         {"resolution_s", static_cast<double>(e.resolution_us) / 1e6}});
  }
  json out = json::object();
  toJson(static_cast<const StreamResult&>(r), out);
  out["quorum"] = {
      {"watched", r.quorum_watched},
      {"reason", r.quorum_reason.empty() ? json(nullptr) : json(r.quorum_reason)},
      {"elections", std::move(elections)},
      {"epoch_increments", r.epoch_increments},
      {"new_leader", r.elections.empty() ? json(nullptr) : json(r.elections.back().leader)},
      {"leaderless_s",
       r.leaderless_us ? json(static_cast<double>(*r.leaderless_us) / 1e6) : json(nullptr)}};
  return out;
}

json toJson(const CoordinatorsResult& r) {
  json commits = json::object();
  toJson(r.commits, commits);
  json transactions = nullptr;
  if (r.transactions) {
    transactions = json::object();
    toJson(*r.transactions, transactions);
  }
  json moves = json::array();
  for (const auto& m : r.moves) {
    moves.push_back({{"at_us", m.at_us},
                     {"type", m.type},
                     {"key", m.key},
                     {"from", m.from},
                     {"to", m.to},
                     {"partition", m.partition.empty() ? json(nullptr) : json(m.partition)}});
  }
  const auto optSeconds = [](const std::optional<std::int64_t>& us) {
    return us ? json(static_cast<double>(*us) / 1e6) : json(nullptr);
  };
  return {{"commits", std::move(commits)},
          {"transactions", std::move(transactions)},
          {"watched", r.watched},
          {"reason", r.reason.empty() ? json(nullptr) : json(r.reason)},
          {"moves", std::move(moves)},
          {"phases",
           {{"coordinator_moved_s", optSeconds(r.coordinator_moved_us)},
            {"first_commit_s", optSeconds(r.first_commit_us)},
            {"first_transaction_s", optSeconds(r.first_transaction_us)}}}};
}

}  // namespace kfaild::analysis
