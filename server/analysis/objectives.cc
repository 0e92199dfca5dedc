#include "server/analysis/objectives.h"

#include <cmath>
#include <set>
#include <system_error>

#include "server/common/event_types.h"

namespace kfaild::analysis {
namespace {

using nlohmann::json;

const std::set<std::string> kRoles = [] {
  std::set<std::string> roles;
  for (const auto name : common::partitionRoleNames()) roles.emplace(name);
  return roles;
}();
const std::set<std::string> kFaults = {"kill",    "stop",     "pause",    "restart",
                                       "isolate", "throttle", "disk_full"};

Error invalid(const std::string& key, const std::string& problem) {
  return Error{std::make_error_code(std::errc::invalid_argument), key + ": " + problem};
}

std::string join(const std::set<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::optional<Error> unknownKeys(const json& object, const std::string& where,
                                 const std::set<std::string>& known) {
  if (!object.is_object()) return invalid(where, "must be a mapping");
  for (const auto& item : object.items()) {
    if (!known.count(item.key())) {
      return invalid(where + "." + item.key(), "unknown key (known: " + join(known) + ")");
    }
  }
  return std::nullopt;
}

std::optional<Error> readSeconds(const json& object, const char* name, const std::string& where,
                                 std::optional<double>& out) {
  if (!object.contains(name)) return std::nullopt;
  const auto& v = object[name];
  const auto key = where + "." + name;
  if (!v.is_number()) return invalid(key, "must be a number of seconds");
  const auto value = v.get<double>();
  if (!std::isfinite(value) || value < 0 || value > 86'400) {
    return invalid(key, "must be between 0 and 86400 seconds");
  }
  out = value;
  return std::nullopt;
}

std::optional<Error> readCount(const json& object, const char* name, const std::string& where,
                               std::optional<std::int64_t>& out) {
  if (!object.contains(name)) return std::nullopt;
  const auto& v = object[name];
  const auto key = where + "." + name;
  if (!v.is_number_integer() || v.get<std::int64_t>() < 0)
    return invalid(key, "must be a whole number ≥ 0");
  out = v.get<std::int64_t>();
  return std::nullopt;
}

std::optional<Error> readStall(const json& object, const std::string& where, StallLimits& out) {
  if (auto e = readSeconds(object, "max_ack_stall_s", where, out.max_ack_stall_s)) return e;
  return readSeconds(object, "max_receive_stall_s", where, out.max_receive_stall_s);
}

std::optional<Error> readByRole(const json& object, const std::string& where,
                                std::map<std::string, StallLimits>& out) {
  if (!object.contains("by_role")) return std::nullopt;
  const auto& roles = object["by_role"];
  const auto key = where + ".by_role";
  if (auto e = unknownKeys(roles, key, kRoles)) return e;
  for (const auto& [role, limits] : roles.items()) {
    const auto rkey = key + "." + role;
    if (auto e = unknownKeys(limits, rkey, {"max_ack_stall_s", "max_receive_stall_s"})) return e;
    if (auto e = readStall(limits, rkey, out[role])) return e;
  }
  return std::nullopt;
}

void putStall(json& out, const StallLimits& s) {
  if (s.max_ack_stall_s) out["max_ack_stall_s"] = *s.max_ack_stall_s;
  if (s.max_receive_stall_s) out["max_receive_stall_s"] = *s.max_receive_stall_s;
}

json byRoleJson(const std::map<std::string, StallLimits>& by_role) {
  json out = json::object();
  for (const auto& [role, limits] : by_role) {
    json r = json::object();
    putStall(r, limits);
    out[role] = std::move(r);
  }
  return out;
}

std::optional<double>& field(StallLimits& s, StallKind kind) {
  return kind == StallKind::kAck ? s.max_ack_stall_s : s.max_receive_stall_s;
}
const std::optional<double>& field(const StallLimits& s, StallKind kind) {
  return kind == StallKind::kAck ? s.max_ack_stall_s : s.max_receive_stall_s;
}

template <typename T>
void take(std::optional<T>& into, const std::optional<T>& from) {
  if (from) into = from;
}

}  // namespace

const char* toString(StallKind kind) {
  return kind == StallKind::kAck ? "ack" : "receive";
}

Objectives defaultObjectives() {
  // Lab and article figures behind each value: docs/CONFIG.md, "Objectives".
  Objectives o;
  o.stall = {15.0, 15.0};
  o.by_fault["stop"].stall = {5.0, 5.0};
  o.by_fault["restart"].stall = {5.0, 5.0};
  o.by_role[toString(common::PartitionRole::kSoleReplica)] = {60.0, 60.0};
  o.by_role[toString(common::PartitionRole::kBelowMinIsr)] = {60.0, 60.0};
  o.max_lost = 0;
  o.max_duplicated = 0;
  o.max_failed = 0;
  o.max_detection_s = 12.0;
  o.max_discovery_s = 2.0;
  o.max_recovery_s = 120.0;
  o.defaulted = {true, true};
  return o;
}

Result<Objectives> parseObjectives(const json& value, const std::string& where) {
  if (auto e = unknownKeys(value, where,
                           {"max_ack_stall_s", "max_receive_stall_s", "by_role", "by_fault",
                            "max_lost", "max_duplicated", "max_failed", "max_detection_s",
                            "max_discovery_s", "max_recovery_s", "fail_on_regression"})) {
    return *e;
  }
  Objectives o;
  if (auto e = readStall(value, where, o.stall)) return *e;
  if (auto e = readByRole(value, where, o.by_role)) return *e;
  if (value.contains("by_fault")) {
    const auto key = where + ".by_fault";
    if (auto e = unknownKeys(value["by_fault"], key, kFaults)) return *e;
    for (const auto& [fault, f] : value["by_fault"].items()) {
      const auto fkey = key + "." + fault;
      if (auto e = unknownKeys(f, fkey, {"max_ack_stall_s", "max_receive_stall_s", "by_role"}))
        return *e;
      auto& into = o.by_fault[fault];
      if (auto e = readStall(f, fkey, into.stall)) return *e;
      if (auto e = readByRole(f, fkey, into.by_role)) return *e;
    }
  }
  for (auto e : {readCount(value, "max_lost", where, o.max_lost),
                 readCount(value, "max_duplicated", where, o.max_duplicated),
                 readCount(value, "max_failed", where, o.max_failed),
                 readSeconds(value, "max_detection_s", where, o.max_detection_s),
                 readSeconds(value, "max_discovery_s", where, o.max_discovery_s),
                 readSeconds(value, "max_recovery_s", where, o.max_recovery_s)}) {
    if (e) return *e;
  }
  if (value.contains("fail_on_regression")) {
    if (!value["fail_on_regression"].is_boolean()) {
      return invalid(where + ".fail_on_regression", "must be true or false");
    }
    o.fail_on_regression = value["fail_on_regression"].get<bool>();
  }
  return o;
}

Result<RegressionPolicy> parseRegressionPolicy(const json& value, const std::string& where) {
  if (auto e = unknownKeys(value, where, {"window", "factor", "min_runs", "min_delta_s"}))
    return *e;
  RegressionPolicy p;
  const auto readWhole = [&](const char* name, std::int32_t min, std::int32_t max,
                             std::int32_t& out) -> std::optional<Error> {
    if (!value.contains(name)) return std::nullopt;
    const auto& v = value[name];
    if (!v.is_number_integer() || v.get<std::int64_t>() < min || v.get<std::int64_t>() > max) {
      return invalid(where + "." + name, "must be a whole number between " + std::to_string(min) +
                                             " and " + std::to_string(max));
    }
    out = static_cast<std::int32_t>(v.get<std::int64_t>());
    return std::nullopt;
  };
  if (auto e = readWhole("window", 1, 100, p.window)) return *e;
  if (auto e = readWhole("min_runs", 1, 1000, p.min_runs)) return *e;
  if (value.contains("factor")) {
    const auto& v = value["factor"];
    if (!v.is_number() || !(v.get<double>() > 1.0) || v.get<double>() > 1000) {
      return invalid(where + ".factor", "must be a number above 1 (and at most 1000)");
    }
    p.factor = v.get<double>();
  }
  std::optional<double> delta;
  if (auto e = readSeconds(value, "min_delta_s", where, delta)) return *e;
  if (delta) p.min_delta_s = *delta;
  return p;
}

Objectives overlay(const Objectives& base, const Objectives& over) {
  Objectives out = base;
  for (const auto kind : {StallKind::kAck, StallKind::kReceive}) {
    // A request's key also replaces the cluster's same key beneath it (more specific levels).
    if (field(over.stall, kind)) {
      for (auto& [role, limits] : out.by_role) field(limits, kind).reset();
      for (auto& [fault, f] : out.by_fault) {
        field(f.stall, kind).reset();
        for (auto& [role, limits] : f.by_role) field(limits, kind).reset();
      }
      field(out.stall, kind) = field(over.stall, kind);
    }
    for (const auto& [role, limits] : over.by_role) {
      if (!field(limits, kind)) continue;
      for (auto& [fault, f] : out.by_fault) {
        if (auto r = f.by_role.find(role); r != f.by_role.end()) field(r->second, kind).reset();
      }
      field(out.by_role[role], kind) = field(limits, kind);
    }
    for (const auto& [fault, f] : over.by_fault) {
      if (field(f.stall, kind)) {
        auto& into = out.by_fault[fault];
        for (auto& [role, limits] : into.by_role) field(limits, kind).reset();
        field(into.stall, kind) = field(f.stall, kind);
      }
      for (const auto& [role, limits] : f.by_role) {
        if (field(limits, kind))
          field(out.by_fault[fault].by_role[role], kind) = field(limits, kind);
      }
    }
  }
  const auto any_stall = [](const StallLimits& s) {
    return s.max_ack_stall_s || s.max_receive_stall_s;
  };
  bool over_stall = any_stall(over.stall);
  for (const auto& [role, limits] : over.by_role) over_stall = over_stall || any_stall(limits);
  for (const auto& [fault, f] : over.by_fault) {
    over_stall = over_stall || any_stall(f.stall);
    for (const auto& [role, limits] : f.by_role) over_stall = over_stall || any_stall(limits);
  }
  if (over_stall) out.defaulted.stall = false;
  if (over.max_discovery_s) out.defaulted.max_discovery_s = false;
  take(out.max_lost, over.max_lost);
  take(out.max_duplicated, over.max_duplicated);
  take(out.max_failed, over.max_failed);
  take(out.max_detection_s, over.max_detection_s);
  take(out.max_discovery_s, over.max_discovery_s);
  take(out.max_recovery_s, over.max_recovery_s);
  take(out.fail_on_regression, over.fail_on_regression);
  return out;
}

std::optional<StallLimit> stallLimit(const Objectives& o, const std::string& fault,
                                     const std::string& role, StallKind kind) {
  const std::string key = kind == StallKind::kAck ? "max_ack_stall_s" : "max_receive_stall_s";
  const auto f = o.by_fault.find(fault);
  if (f != o.by_fault.end()) {
    if (auto r = f->second.by_role.find(role);
        r != f->second.by_role.end() && field(r->second, kind)) {
      return StallLimit{*field(r->second, kind),
                        "by_fault." + fault + ".by_role." + role + "." + key};
    }
  }
  if (auto r = o.by_role.find(role); r != o.by_role.end() && field(r->second, kind)) {
    return StallLimit{*field(r->second, kind), "by_role." + role + "." + key};
  }
  if (f != o.by_fault.end() && field(f->second.stall, kind)) {
    return StallLimit{*field(f->second.stall, kind), "by_fault." + fault + "." + key};
  }
  if (field(o.stall, kind)) return StallLimit{*field(o.stall, kind), key};
  return std::nullopt;
}

json toJson(const Objectives& o) {
  json out = json::object();
  putStall(out, o.stall);
  if (!o.by_role.empty()) out["by_role"] = byRoleJson(o.by_role);
  if (!o.by_fault.empty()) {
    json faults = json::object();
    for (const auto& [fault, f] : o.by_fault) {
      json fj = json::object();
      putStall(fj, f.stall);
      if (!f.by_role.empty()) fj["by_role"] = byRoleJson(f.by_role);
      faults[fault] = std::move(fj);
    }
    out["by_fault"] = std::move(faults);
  }
  if (o.max_lost) out["max_lost"] = *o.max_lost;
  if (o.max_duplicated) out["max_duplicated"] = *o.max_duplicated;
  if (o.max_failed) out["max_failed"] = *o.max_failed;
  if (o.max_detection_s) out["max_detection_s"] = *o.max_detection_s;
  if (o.max_discovery_s) out["max_discovery_s"] = *o.max_discovery_s;
  if (o.max_recovery_s) out["max_recovery_s"] = *o.max_recovery_s;
  if (o.fail_on_regression) out["fail_on_regression"] = *o.fail_on_regression;
  return out;
}

json toJson(const RegressionPolicy& p) {
  return {{"window", p.window},
          {"factor", p.factor},
          {"min_runs", p.min_runs},
          {"min_delta_s", p.min_delta_s}};
}

}  // namespace kfaild::analysis
