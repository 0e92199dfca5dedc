#include "server/drill/run_outcome.h"

namespace kfaild::drill {
namespace {

nlohmann::json toJson(const ElectionOutcome& e) {
  nlohmann::json out = {{"partitions", e.partitions}, {"preferred", e.preferred}};
  if (e.error) out["error"] = *e.error;
  return out;
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
  if (o.probe_at_fault) {
    nlohmann::json parts = nlohmann::json::array();
    for (const auto& f : o.probe_at_fault->partitions) {
      parts.push_back({{"topic", f.topic}, {"partition", f.partition}, {"outstanding", f.outstanding},
                       {"oldest_outstanding_age_us", f.oldest_outstanding_age_us}, {"holding", f.holding},
                       {"held_ticks", f.held_ticks}});
    }
    out["probe_at_fault"] = {{"partitions", parts},
                             {"skipped_ticks", o.probe_at_fault->skipped_ticks},
                             {"max_send_lateness_us", o.probe_at_fault->max_send_lateness_us},
                             {"clock_steps", o.probe_at_fault->clock_steps}};
  }
  if (o.probe_client) out["probe_client"] = *o.probe_client;
  if (o.cluster_settings) out["cluster_settings"] = toJson(*o.cluster_settings);
  if (o.leadership_at_fault) {
    nlohmann::json parts = nlohmann::json::array();
    for (const auto& p : o.leadership_at_fault->partitions) {
      parts.push_back({{"topic", p.topic}, {"partition", p.partition}, {"leader", p.leader},
                       {"replicas", p.replicas}, {"isr", p.isr}, {"min_insync", p.min_insync}});
    }
    out["leadership_at_fault"] = {{"observed_at_us", o.leadership_at_fault->observed_at_us}, {"partitions", parts}};
  }
  if (o.fault_injected) {
    out["fault_requested_us"] = o.fault_injected->requested_us;
    out["fault_us"] = o.fault_injected->fault_us;
    out["fault_time_source"] = o.fault_injected->time_source;
    out["fault_time_uncertainty_us"] = o.fault_injected->uncertainty_us;
    out["fault_clock_offset_us"] = o.fault_injected->clock_offset_us;
    out["fault_detail"] = o.fault_injected->detail;
  }
  if (o.observe_timed_out) out["observe_timed_out"] = true;
  if (o.observe_end_us) out["observe_end_us"] = *o.observe_end_us;
  if (o.recovery) {
    nlohmann::json errors = nlohmann::json::array();
    for (const auto& e : o.recovery->errors) errors.push_back({{"attempt", e.attempt}, {"t_us", e.t_us}, {"error", e.error}});
    out["recovery"] = {{"attempts", o.recovery->attempts}, {"errors", errors}};
  }
  if (o.recovered_us) out["recovered_us"] = *o.recovered_us;
  if (o.offline_timed_out) out["offline_timed_out"] = true;
  if (o.window_end_us) out["window_end_us"] = *o.window_end_us;
  if (o.clock_steps_in_window) out["clock_steps_in_window"] = *o.clock_steps_in_window;
  if (o.election_error) out["election_error"] = *o.election_error;
  if (o.preferred_leaders_restored) out["preferred_leaders_restored"] = *o.preferred_leaders_restored;
  if (o.settle_us) out["settle_us"] = *o.settle_us;
  if (o.analysis) out["analysis"] = analysis::toJson(*o.analysis);
  if (o.control_plane) out["control_plane"] = analysis::toJson(*o.control_plane);
  if (o.coordinators) out["coordinators"] = analysis::toJson(*o.coordinators);
  return out;
}

}  // namespace kfaild::drill
