#include "tools/kfailctl/summary.h"

#include <fmt/format.h>

#include <algorithm>

#include "server/drill/drill_state.h"

namespace kfaild::ctl {
namespace {

using nlohmann::json;

std::string describeTarget(const json& target) {
  if (!target.is_object()) return "?";
  if (target.contains("broker")) return "node " + target["broker"].dump();
  if (target.contains("leader_of")) {
    const auto& l = target["leader_of"];
    return fmt::format("the leader of {}[{}]", l.value("topic", "?"), l.value("partition", 0));
  }
  if (target.contains("controller")) return "the active controller";
  if (target.contains("random")) return "a random broker";
  if (target.contains("every_broker")) return "every broker";
  if (target.contains("nodes")) return "nodes " + target["nodes"].dump();
  return target.dump();
}

const json& member(const json& object, const char* key) {
  static const json kNull;
  return object.is_object() && object.contains(key) ? object[key] : kNull;
}

}  // namespace

bool isFinished(const std::string& state) {
  return drill::isTerminal(state);
}

std::string formatSeconds(const json& micros) {
  if (!micros.is_number()) return "-";
  return fmt::format("{:.3f} s", micros.get<double>() / 1e6);
}

// A stall is a figure only when the analysis says so: "none" when the longest gap is within the
// partition's noise, "n/a" (with the reason listed under the table) when kfaild cannot tell.
static std::string stallText(const json& kind) {
  const auto& outcome = member(kind, "outcome");
  if (!outcome.is_string()) {
    // A result stored before outcomes existed.
    const auto& stall = member(kind, "stall");
    const auto text = formatSeconds(member(stall, "duration_us"));
    return member(stall, "open").is_boolean() && stall["open"].get<bool>() ? ">=" + text : text;
  }
  if (outcome == "stall") return formatSeconds(member(member(kind, "stall"), "duration_us"));
  if (outcome == "none") return "none";
  return "n/a";
}

// A phase is never printed negative: below its resolution it reads "≤ resolution" (results
// stored before below_resolution existed may hold a negative value: the same), and one the
// fault time's uncertainty hides reads "n/a".
static std::string phaseText(const json& phases, const std::string& name) {
  const auto& value = member(phases, (name + "_us").c_str());
  if (!value.is_number()) return "-";
  const auto& inconclusive = member(phases, "inconclusive");
  if (inconclusive.is_object() && inconclusive.contains(name)) return "n/a";
  const auto& below = member(phases, "below_resolution");
  const bool is_below =
      (below.is_array() && std::find(below.begin(), below.end(), json(name)) != below.end()) ||
      value.get<double>() < 0;
  if (!is_below) return formatSeconds(value);
  const auto& resolution = member(phases, (name + "_resolution_us").c_str());
  return "≤" + (resolution.is_number() ? formatSeconds(resolution) : formatSeconds(json(0)));
}

// A partition's mechanism: "isr_shrink (replica.lag.time.max.ms, expected 30.000 s): isr_shrink
// 30.100 s → isr_shrink, resume 0.100 s → ack"; "shared_request: waited_on 8.800 s →
// waited_on_ack (waited on orders-0; the cluster's stall 0.000 s, the client's 8.800 s)".
static std::string mechanismText(const json& m) {
  std::string text = member(m, "name").is_string() ? m["name"].get<std::string>() : "?";
  const auto& setting = member(m, "setting");
  if (setting.is_string()) {
    text += fmt::format(" ({}, expected {})", setting.get<std::string>(),
                        formatSeconds(member(m, "expected_us")));
  }
  const auto& phases = member(m, "phases");
  std::string steps;
  if (phases.is_array()) {
    for (const auto& phase : phases) {
      if (!steps.empty()) steps += ", ";
      steps += fmt::format(
          "{} {} → {}", member(phase, "name").is_string() ? phase["name"].get<std::string>() : "?",
          formatSeconds(member(phase, "duration_us")),
          member(phase, "ended_by").is_string() ? phase["ended_by"].get<std::string>() : "?");
    }
  }
  if (!steps.empty()) text += ": " + steps;
  if (const auto& waited_on = member(m, "waited_on"); waited_on.is_object()) {
    // shared_request: the stall is the client's; the cluster's own stands beside it.
    const auto& cluster = member(m, "cluster_stall_us");
    text += fmt::format(
        " (waited on {}-{}; the cluster's stall {}, the client's {})",
        member(waited_on, "topic").is_string() ? waited_on["topic"].get<std::string>() : "?",
        member(waited_on, "partition").dump(),
        cluster.is_number() ? formatSeconds(cluster) : "not known",
        formatSeconds(member(m, "client_stall_us")));
  }
  if (member(m, "explained") == false && member(m, "reason").is_string() &&
      !m["reason"].get<std::string>().empty()) {
    text += " (unexplained)";
  }
  return text;
}

std::string formatVerdict(const json& drill) {
  const auto& verdict = member(drill, "verdict");
  if (!verdict.is_string()) return "";  // running, never started, or stored before verdicts
  const auto& detail = member(drill, "verdict_detail");
  const auto& checks = member(detail, "checks");
  std::size_t failed = 0, inconclusive = 0, not_applicable = 0,
              total = checks.is_array() ? checks.size() : 0;
  std::string lines;
  for (std::size_t i = 0; i < total; ++i) {
    const auto& c = checks[i];
    const auto status = c.value("status", std::string());
    if (status == "pass") continue;
    (status == "fail" ? failed : status == "not_applicable" ? not_applicable : inconclusive) += 1;
    std::string where = fmt::format("run {}", c.value("run", 0));
    if (member(c, "profile").is_string())
      where = "[" + c["profile"].get<std::string>() + "] " + where;
    if (member(c, "topic").is_string()) {
      where += fmt::format(" {}[{}] {}", c["topic"].get<std::string>(), c.value("partition", 0),
                           c.value("role", std::string("?")));
    }
    const auto unit = c.value("unit", std::string());
    const auto& measured = member(c, "measured");
    const auto measured_text =
        measured.is_number() ? fmt::format("{:.3f}", measured.get<double>()) : std::string("n/a");
    lines += fmt::format("  {:<12} {:<22} {}: {} {} (limit {:.3f} {}, {})", status,
                         c.value("objective", std::string()), where, measured_text, unit,
                         c.value("threshold", 0.0), unit, c.value("source", std::string()));
    if (member(c, "reason").is_string() && !c["reason"].get<std::string>().empty()) {
      lines += " — " + c["reason"].get<std::string>();
    }
    lines += "\n";
  }
  std::string out = fmt::format("verdict: {} ({} checks: {} failed, {} inconclusive",
                                verdict.get<std::string>(), total, failed, inconclusive);
  out +=
      not_applicable > 0 ? fmt::format(", {} not applicable)", not_applicable) : std::string(")");
  if (member(detail, "reason").is_string()) out += " — " + detail["reason"].get<std::string>();
  if (const auto& profiles = member(detail, "profiles"); profiles.is_array()) {
    std::string each;
    for (const auto& p : profiles) {
      each += fmt::format("{}{} {}", each.empty() ? "" : ", ", p.value("profile", std::string("?")),
                          p.value("verdict", std::string("?")));
    }
    out += "; by profile: " + each;
  }
  out += "\n" + lines;
  const auto& regressions = member(detail, "regressions");
  if (regressions.is_array()) {
    for (const auto& r : regressions) {
      out += fmt::format(
          "  regression   {} stall run {} {}[{}] {}: {:.3f} s, {:.1f} × the median {:.3f} s of {} "
          "earlier\n",
          r.value("kind", std::string()), r.value("run", 0), r.value("topic", std::string()),
          r.value("partition", 0), r.value("role", std::string()), r.value("stall_s", 0.0),
          r.value("factor", 0.0), r.value("median_s", 0.0), r.value("previous", 0));
    }
  }
  return out;
}

namespace {

// The client profiles side by side (RunOutcome::profiles): per partition, a column group per
// profile with its ack and receive stalls and its client's discovery and resume.
std::string formatProfiles(const json& run) {
  const auto& others = member(run, "profiles");
  if (!others.is_array() || others.empty()) return {};
  std::vector<std::pair<std::string, const json*>> views;  // profile, its analysis
  views.emplace_back(run.value("profile", std::string("primary")), &member(run, "analysis"));
  for (const auto& p : others) {
    views.emplace_back(p.value("profile", std::string("?")), &member(p, "analysis"));
  }
  std::vector<std::pair<std::string, std::int32_t>> partitions;
  for (const auto& [name, analysis] : views) {
    const auto& ps = member(*analysis, "partitions");
    if (!ps.is_array()) continue;
    for (const auto& p : ps) {
      const std::pair key(p.value("topic", std::string("?")), p.value("partition", 0));
      if (std::find(partitions.begin(), partitions.end(), key) == partitions.end())
        partitions.push_back(key);
    }
  }
  std::string out = fmt::format("  {:<16}", "by profile");
  std::string head = fmt::format("  {:<16}", "partition");
  for (const auto& [name, analysis] : views) {
    out += fmt::format(" | {:<43}", name);
    head += fmt::format(" | {:>10} {:>10} {:>10} {:>10}", "ack stall", "recv stall", "discovery",
                        "resume");
  }
  out += "\n" + head + "\n";
  for (const auto& [topic, partition] : partitions) {
    out += fmt::format("  {:<16}", fmt::format("{}[{}]", topic, partition));
    for (const auto& [name, analysis] : views) {
      const json* found = nullptr;
      const auto& ps = member(*analysis, "partitions");
      for (std::size_t i = 0; ps.is_array() && i < ps.size(); ++i) {
        if (ps[i].value("topic", std::string()) == topic &&
            ps[i].value("partition", -1) == partition)
          found = &ps[i];
      }
      if (!found) {
        out += fmt::format(" | {:>10} {:>10} {:>10} {:>10}", "-", "-", "-", "-");
        continue;
      }
      const auto& phases = member(*found, "phases");
      out += fmt::format(" | {:>10} {:>10} {:>10} {:>10}", stallText(member(*found, "ack")),
                         stallText(member(*found, "receive")), phaseText(phases, "discovery"),
                         phaseText(phases, "resume"));
    }
    out += "\n";
  }
  for (const auto& p : others) {
    if (member(p, "problem").is_string()) {
      out += fmt::format("  n/a: profile {}: {}\n", p.value("profile", std::string("?")),
                         p["problem"].get<std::string>());
    }
  }
  return out;
}

// A rolling restart's steps, a row each, and its totals.
std::string formatRolling(const json& rolling) {
  if (!rolling.is_object()) return {};
  const auto seconds = [](const json& v) {
    return v.is_number() ? fmt::format("{:.3f} s", v.get<double>()) : std::string("-");
  };
  const auto worst = [&](const json& w) {
    if (!w.is_object()) return std::string("-");
    return fmt::format("{} {}[{}] {} {}", seconds(member(w, "seconds")),
                       w.value("topic", std::string("?")), w.value("partition", 0),
                       w.value("role", std::string("?")), w.value("kind", std::string("?")));
  };
  std::string out = fmt::format("rolling restart by {} of nodes {}, {} s apart\n",
                                rolling.value("by", std::string("?")),
                                member(rolling, "plan").dump(), rolling.value("between_s", 0));
  out += fmt::format("  {:<5} {:<6} {:<13} {:>13} {:>14} {:>8}  {}\n", "step", "node", "verdict",
                     "ack part·s", "recv part·s", "stalled", "worst stall");
  const auto& steps = member(rolling, "steps");
  if (steps.is_array()) {
    for (const auto& s : steps) {
      out += fmt::format("  {:<5} {:<6} {:<13} {:>13} {:>14} {:>8}  {}\n", s.value("step", 0),
                         s.value("node", -1), s.value("verdict", std::string("?")),
                         seconds(member(s, "ack_partition_seconds")),
                         seconds(member(s, "receive_partition_seconds")),
                         s.value("stalled_partitions", 0), worst(member(s, "worst_stall")));
    }
  }
  out += fmt::format(
      "  total: {} ack, {} receive partition-seconds; worst stall {} (step {}); verdict {}\n",
      seconds(member(rolling, "ack_partition_seconds")),
      seconds(member(rolling, "receive_partition_seconds")), worst(member(rolling, "worst_stall")),
      member(member(rolling, "worst_stall"), "step").dump(),
      rolling.value("verdict", std::string("?")));
  if (member(rolling, "ended_at_step").is_number()) {
    out +=
        fmt::format("  ended at step {}: no later step ran\n", rolling["ended_at_step"].get<int>());
  }
  return out;
}

// An observed drill's faults: who injected each (who marked it, or what kfaild saw), and what was
// still missing at the window's end.
std::string formatObserved(const json& drill) {
  if (drill.value("fault", std::string()) != "observed") return {};
  const auto& observed = member(drill, "observed");
  const auto& faults = member(observed, "faults");
  if (!faults.is_array()) return "observed: waiting for a fault (kfaild injects nothing)\n";
  if (faults.empty()) return "observed: no fault was marked or seen in the window\n";
  std::string out;
  for (const auto& f : faults) {
    const auto& departure = member(f, "departure");
    const auto& mark = member(f, "mark");
    const auto seen = departure.is_object()
                          ? fmt::format("broker {} {}", departure.value("broker", -1),
                                        departure.value("kind", std::string("?")))
                          : std::string("no departure seen");
    out += mark.is_object() ? fmt::format("observed: injected by {} ({}), judged as {}\n",
                                          mark.value("by", std::string()).empty()
                                              ? std::string("an unnamed marker")
                                              : mark.value("by", std::string()),
                                          seen, f.value("judged_as", std::string("?")))
                            : fmt::format("observed: found by kfaild: {}, judged as {}\n", seen,
                                          f.value("judged_as", std::string("?")));
  }
  if (member(observed, "missing").is_string()) {
    out +=
        "observed: not whole again at the window's end: " + observed["missing"].get<std::string>() +
        "\n";
  }
  return out;
}

}  // namespace

std::string formatDrill(const json& drill) {
  std::string out = formatVerdict(drill);
  out +=
      fmt::format("drill {} on {}: {} of {} — {}", drill.value("id", 0),
                  drill.value("cluster", std::string("?")), drill.value("fault", std::string("?")),
                  describeTarget(member(drill, "target")), drill.value("state", std::string("?")));
  if (member(drill, "reason").is_string()) out += " (" + drill["reason"].get<std::string>() + ")";
  out += "\n";
  out += formatRolling(member(drill, "rolling_restart"));
  out += formatObserved(drill);
  const auto& runs = member(drill, "runs");
  if (!runs.is_array()) return out;
  for (const auto& run : runs) {
    const auto& analysis = member(run, "analysis");
    out +=
        fmt::format("run {}: {}", run.value("run", 0), run.value("state", std::string("running")));
    if (member(run, "fault_at").is_string()) {
      out += fmt::format(", fault at {} ({}", run["fault_at"].get<std::string>(),
                         run.value("fault_time_source", std::string("?")));
      const auto& uncertainty = member(run, "fault_time_uncertainty_us");
      out += uncertainty.is_number() ? " ± " + formatSeconds(uncertainty) + ")" : std::string(")");
    }
    if (member(analysis, "departure").is_string()) {
      out += ", node left: " + analysis["departure"].get<std::string>();
      const auto& at = member(analysis, "departure_at_us");
      if (at.is_number_integer() && member(analysis, "fault_us").is_number_integer()) {
        out += " after " +
               formatSeconds(at.get<std::int64_t>() - analysis["fault_us"].get<std::int64_t>());
      }
    }
    if (member(run, "preferred_leaders_restored").is_boolean()) {
      out += run["preferred_leaders_restored"].get<bool>() ? ", preferred leaders restored"
                                                           : ", preferred leaders NOT restored";
    }
    if (member(run, "reason").is_string()) out += " (" + run["reason"].get<std::string>() + ")";
    out += "\n";
    if (const auto& second = member(run, "second_fault"); second.is_object()) {
      // The analysis below is the second fault's.
      out += fmt::format(
          "  then {} of {} after {} s: {}", second.value("fault", std::string("?")),
          member(second, "target").is_number() ? "node " + member(second, "target").dump() : "?",
          second.value("after_s", 0), second.value("state", std::string("?")));
      if (member(second, "fault_us").is_number_integer() &&
          member(run, "fault_us").is_number_integer()) {
        out += " (" +
               formatSeconds(second["fault_us"].get<std::int64_t>() -
                             run["fault_us"].get<std::int64_t>()) +
               " after the first)";
      }
      if (member(second, "reason").is_string()) out += " — " + second["reason"].get<std::string>();
      if (const auto& order = member(run, "recovery_order"); order.is_array())
        out += "; recovered in order " + order.dump();
      if (member(second, "state") == "injected")
        out += "; the analysis below is the second fault's";
      out += "\n";
    }
    const auto& partitions = member(analysis, "partitions");
    if (!partitions.is_array() || partitions.empty()) continue;
    out +=
        fmt::format("  {:<16} {:<20} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>6} {:>5} {:>6}\n",
                    "partition", "role", "ack stall", "recv stall", "detection", "election",
                    "discovery", "resume", "failed", "lost", "unres");
    std::string notes;
    for (const auto& p : partitions) {
      const auto& phases = member(p, "phases");
      const auto name =
          fmt::format("{}[{}]", p.value("topic", std::string("?")), p.value("partition", 0));
      out += fmt::format(
          "  {:<16} {:<20} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>6} {:>5} {:>6}\n", name,
          p.value("role", std::string("?")), stallText(member(p, "ack")),
          stallText(member(p, "receive")), phaseText(phases, "detection"),
          phaseText(phases, "election"), phaseText(phases, "discovery"),
          phaseText(phases, "resume"), p.value("failed", 0), p.value("lost", 0),
          p.value("unresolved", 0));
      for (const char* kind : {"ack", "receive"}) {
        const auto& k = member(p, kind);
        if (member(k, "outcome") == "inconclusive" && member(k, "reason").is_string()) {
          notes += fmt::format("  n/a: {} {}: {}\n", name, kind, k["reason"].get<std::string>());
        }
      }
      if (const auto stuck = p.value("lost_consumer_stuck", 0); stuck > 0) {
        notes += fmt::format(
            "  lost: {}: {} of {} acked before kfaild restarted its consumer's reading of the "
            "partition; not known to be the cluster's\n",
            name, stuck, p.value("lost", 0));
      }
      if (const auto& m = member(p, "mechanism"); m.is_object() && member(m, "name") != "none") {
        notes += fmt::format("  mechanism: {}: {}", name, mechanismText(m));
        notes += "\n";
      }
      if (const auto& why = member(phases, "inconclusive"); why.is_object()) {
        for (const auto& [phase, reason] : why.items()) {
          if (reason.is_string())
            notes += fmt::format("  n/a: {} {}: {}\n", name, phase, reason.get<std::string>());
        }
      }
    }
    out += notes;
    out += formatProfiles(run);
  }
  return out;
}

}  // namespace kfaild::ctl
