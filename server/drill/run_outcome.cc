#include "server/drill/run_outcome.h"

namespace kfaild::drill {
namespace {

nlohmann::json toJson(const ElectionOutcome& e) {
  nlohmann::json out = {{"partitions", e.partitions}, {"preferred", e.preferred}};
  if (e.error) out["error"] = *e.error;
  return out;
}

nlohmann::json toJson(const ProbeSnapshotAtFault& probe) {
  nlohmann::json parts = nlohmann::json::array();
  for (const auto& f : probe.partitions) {
    parts.push_back({{"topic", f.topic},
                     {"partition", f.partition},
                     {"outstanding", f.outstanding},
                     {"oldest_outstanding_age_us", f.oldest_outstanding_age_us},
                     {"holding", f.holding},
                     {"held_ticks", f.held_ticks}});
  }
  return {{"partitions", parts},
          {"skipped_ticks", probe.skipped_ticks},
          {"max_send_lateness_us", probe.max_send_lateness_us},
          {"clock_steps", probe.clock_steps}};
}

nlohmann::json toJson(const LeadershipAtFault& leadership) {
  nlohmann::json parts = nlohmann::json::array();
  for (const auto& p : leadership.partitions) {
    parts.push_back({{"topic", p.topic},
                     {"partition", p.partition},
                     {"leader", p.leader},
                     {"replicas", p.replicas},
                     {"isr", p.isr},
                     {"min_insync", p.min_insync}});
  }
  return {{"observed_at_us", leadership.observed_at_us}, {"partitions", parts}};
}

void addFault(nlohmann::json& out, const FaultInjected& fault) {
  out["fault_requested_us"] = fault.requested_us;
  out["fault_us"] = fault.fault_us;
  out["fault_time_source"] = fault.time_source;
  out["fault_time_uncertainty_us"] = fault.uncertainty_us;
  out["fault_clock_offset_us"] = fault.clock_offset_us;
  out["fault_detail"] = fault.detail;
}

nlohmann::json toJson(const RecoveryReport& recovery) {
  nlohmann::json errors = nlohmann::json::array();
  for (const auto& e : recovery.errors)
    errors.push_back({{"attempt", e.attempt}, {"t_us", e.t_us}, {"error", e.error}});
  return {{"attempts", recovery.attempts}, {"errors", errors}};
}

}  // namespace

nlohmann::json toJson(const RunOutcome& o) {
  nlohmann::json out = {{"run", o.run}, {"fault", toString(o.fault)}, {"state", toString(o.state)}};
  if (o.state != DrillState::kDone) out["reason"] = o.reason;
  if (o.target) out["target"] = *o.target;
  if (o.target_resolution) {
    const auto& r = *o.target_resolution;
    out["target_resolution"] = {{"how", r.how}, {"preflight", r.preflight}};
    if (r.after_election) out["target_resolution"]["after_election"] = *r.after_election;
    if (r.at_fault) out["target_resolution"]["at_fault"] = *r.at_fault;
  }
  if (o.preflight_election) out["preflight_election"] = toJson(*o.preflight_election);
  if (o.baseline_start_us) out["baseline_start_us"] = *o.baseline_start_us;
  if (o.probe_at_fault) out["probe_at_fault"] = toJson(*o.probe_at_fault);
  if (o.probe_client) out["probe_client"] = *o.probe_client;
  if (o.cluster_settings) out["cluster_settings"] = toJson(*o.cluster_settings);
  if (o.leadership_at_fault) out["leadership_at_fault"] = toJson(*o.leadership_at_fault);
  if (o.fault_injected) addFault(out, *o.fault_injected);
  if (o.observe_timed_out) out["observe_timed_out"] = true;
  if (o.observe_end_us) out["observe_end_us"] = *o.observe_end_us;
  if (o.recovery) out["recovery"] = toJson(*o.recovery);
  if (o.recovered_us) out["recovered_us"] = *o.recovered_us;
  if (o.offline_timed_out) out["offline_timed_out"] = true;
  if (o.window_end_us) out["window_end_us"] = *o.window_end_us;
  if (o.clock_steps_in_window) out["clock_steps_in_window"] = *o.clock_steps_in_window;
  if (o.clock_drift_us != 0) out["clock_drift_us"] = o.clock_drift_us;
  if (o.election_error) out["election_error"] = *o.election_error;
  if (o.preferred_leaders_restored)
    out["preferred_leaders_restored"] = *o.preferred_leaders_restored;
  if (o.settle_us) out["settle_us"] = *o.settle_us;
  if (o.analysis) out["analysis"] = analysis::toJson(*o.analysis);
  if (o.control_plane) out["control_plane"] = analysis::toJson(*o.control_plane);
  if (o.coordinators) out["coordinators"] = analysis::toJson(*o.coordinators);
  if (o.second_fault) {
    const auto& f = *o.second_fault;
    nlohmann::json second = {
        {"fault", toString(f.fault)}, {"after_s", f.after_s}, {"state", f.state}};
    if (!f.reason.empty()) second["reason"] = f.reason;
    if (f.preflight_target) second["preflight_target"] = *f.preflight_target;
    if (f.target) second["target"] = *f.target;
    if (!f.how.empty()) second["how"] = f.how;
    if (f.fault_injected) addFault(second, *f.fault_injected);
    if (f.leadership_at_fault) second["leadership_at_fault"] = toJson(*f.leadership_at_fault);
    if (f.probe_at_fault) second["probe_at_fault"] = toJson(*f.probe_at_fault);
    if (f.recovery) second["recovery"] = toJson(*f.recovery);
    if (f.recovered_us) second["recovered_us"] = *f.recovered_us;
    if (f.first_analysis) second["first_analysis"] = analysis::toJson(*f.first_analysis);
    out["second_fault"] = std::move(second);
  }
  if (!o.recovery_order.empty()) out["recovery_order"] = o.recovery_order;
  if (!o.profile.empty()) {
    out["profile"] = o.profile;
    out["profile_client"] = o.profile_client;
  }
  if (!o.profiles.empty()) {
    auto& profiles = out["profiles"] = nlohmann::json::array();
    for (const auto& p : o.profiles) {
      nlohmann::json one = {{"profile", p.profile}, {"client", p.client}};
      if (p.probe_at_fault) one["probe_at_fault"] = toJson(*p.probe_at_fault);
      if (p.probe_client) one["probe_client"] = *p.probe_client;
      if (p.analysis) one["analysis"] = analysis::toJson(*p.analysis);
      if (!p.problem.empty()) one["problem"] = p.problem;
      profiles.push_back(std::move(one));
    }
  }
  return out;
}

}  // namespace kfaild::drill
