#include "server/drill/drill_spec.h"

#include <algorithm>
#include <array>
#include <limits>
#include <set>
#include <string_view>
#include <utility>

#include "server/drill/errc.h"

namespace kfaild::drill {
namespace {

Error invalid(const std::string& field, const std::string& problem) {
  return Error{make_error_code(errc::invalid_request), field + ": " + problem};
}

std::optional<Error> unknownFields(const nlohmann::json& object, const std::string& where,
                                   const std::set<std::string>& known) {
  for (const auto& item : object.items()) {
    if (!known.count(item.key())) {
      return invalid(where.empty() ? item.key() : where + "." + item.key(), "unknown field");
    }
  }
  return std::nullopt;
}

std::optional<Error> readInt(const nlohmann::json& object, const char* name,
                             const std::string& where, std::int32_t min, std::int32_t max,
                             std::int32_t& out) {
  if (!object.contains(name)) return std::nullopt;
  const auto& v = object[name];
  const std::string field = where + "." + name;
  if (!v.is_number_integer()) return invalid(field, "must be an integer");
  const auto value = v.get<std::int64_t>();
  if (value < min || value > max) {
    return invalid(field, "must be between " + std::to_string(min) + " and " + std::to_string(max) +
                              ", got " + std::to_string(value));
  }
  out = static_cast<std::int32_t>(value);
  return std::nullopt;
}

std::optional<Error> readBool(const nlohmann::json& object, const char* name,
                              const std::string& where, bool& out) {
  if (!object.contains(name)) return std::nullopt;
  if (!object[name].is_boolean()) return invalid(where + "." + name, "must be true or false");
  out = object[name].get<bool>();
  return std::nullopt;
}

}  // namespace

bool isValidTopicName(const std::string& name) {
  // Kafka's own rule (org.apache.kafka.common.internals.Topic.validate).
  if (name.empty() || name.size() > 249 || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

namespace {

constexpr std::array<std::pair<FaultType, const char*>, 10> kFaultNames{{
    {FaultType::kKill, "kill"},
    {FaultType::kStop, "stop"},
    {FaultType::kPause, "pause"},
    {FaultType::kRestart, "restart"},
    {FaultType::kIsolate, "isolate"},
    {FaultType::kThrottle, "throttle"},
    {FaultType::kDiskFull, "disk_full"},
    {FaultType::kDiskSlow, "disk_slow"},
    {FaultType::kRollingRestart, "rolling_restart"},
    {FaultType::kObserved, "observed"},
}};

}  // namespace

const char* toString(FaultType fault) {
  for (const auto& [f, name] : kFaultNames) {
    if (f == fault) return name;
  }
  return "unknown";
}

std::optional<FaultType> faultFromString(const std::string& text) {
  for (const auto& [f, name] : kFaultNames) {
    if (text == name) return f;
  }
  return std::nullopt;
}

const std::vector<std::string_view>& faultNames() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> out;
    for (const auto& [f, name] : kFaultNames) out.emplace_back(name);
    return out;
  }();
  return names;
}

std::optional<std::uint64_t> parseRate(const std::string& text) {
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0 || digits > 12) return std::nullopt;
  const std::uint64_t number = std::stoull(text.substr(0, digits));
  // bytes = number × times / per.
  struct Unit {
    std::string_view name;
    std::uint64_t times;
    std::uint64_t per;
  };
  static constexpr std::array<Unit, 7> kUnits{{{"", 1, 1},
                                               {"bytes", 1, 1},
                                               {"kbytes", 1024, 1},
                                               {"mbytes", 1024 * 1024, 1},
                                               {"kbit", 1000, 8},
                                               {"mbit", 1'000'000, 8},
                                               {"gbit", 1'000'000'000, 8}}};
  const std::string_view name = std::string_view(text).substr(digits);
  const auto unit =
      std::find_if(kUnits.begin(), kUnits.end(), [name](const Unit& u) { return u.name == name; });
  if (unit == kUnits.end()) return std::nullopt;
  // A number whose product would not fit is out of range anyway: 12 digits of gbit would wrap
  // to a small rate that passes the range check.
  if (number > std::numeric_limits<std::uint64_t>::max() / unit->times) return std::nullopt;
  const std::uint64_t bytes = number * unit->times / unit->per;
  constexpr std::uint64_t kMin = 125;                // 1 kbit/s
  constexpr std::uint64_t kMax = 12'500'000'000ULL;  // 100 gbit/s
  if (bytes < kMin || bytes > kMax) return std::nullopt;
  return bytes;
}

bool isGrayFault(FaultType fault) {
  return fault == FaultType::kIsolate || fault == FaultType::kThrottle ||
         fault == FaultType::kDiskFull || fault == FaultType::kDiskSlow;
}

namespace {

const std::string kFaults = [] {
  std::string list;
  for (const auto name : faultNames()) list += (list.empty() ? "" : ", ") + std::string(name);
  return list;
}();

// The target of `body` (the request, or its `then`); `where` prefixes the field names.
std::optional<Error> parseTarget(const nlohmann::json& body, const std::string& where,
                                 Target& out) {
  if (!body.contains("target") || !body["target"].is_object() || body["target"].size() != 1) {
    return invalid(where + "target",
                   "required: an object with exactly one of broker, leader_of, "
                   "controller, random, coordinator_of");
  }
  const auto& t = body["target"];
  if (auto e = unknownFields(t, where + "target",
                             {"broker", "leader_of", "controller", "random", "coordinator_of"}))
    return *e;
  if (t.contains("broker")) {
    out.kind = TargetKind::kBroker;
    if (auto e = readInt(t, "broker", where + "target", 0, 2'147'483'647, out.broker)) return *e;
  } else if (t.contains("leader_of")) {
    out.kind = TargetKind::kLeaderOf;
    const auto& l = t["leader_of"];
    if (!l.is_object())
      return invalid(where + "target.leader_of", "must be {\"topic\":..., \"partition\":...}");
    if (auto e = unknownFields(l, where + "target.leader_of", {"topic", "partition"})) return *e;
    if (!l.contains("topic") || !l["topic"].is_string() || l["topic"].get<std::string>().empty()) {
      return invalid(where + "target.leader_of.topic", "required: a probe topic name");
    }
    out.topic = l["topic"].get<std::string>();
    if (!isValidTopicName(out.topic)) {
      return invalid(
          where + "target.leader_of.topic",
          "not a Kafka topic name: 1 to 249 characters of a-z, A-Z, 0-9, '.', '_' and '-', "
          "not \".\" or \"..\"");
    }
    if (!l.contains("partition")) return invalid(where + "target.leader_of.partition", "required");
    if (auto e = readInt(l, "partition", where + "target.leader_of", 0, 1'000'000, out.partition))
      return *e;
  } else if (t.contains("coordinator_of")) {
    out.kind = TargetKind::kCoordinatorOf;
    const auto& c = t["coordinator_of"];
    const char* forms =
        "must be \"group\", \"transaction\" (kfaild's own), {\"group\": G} or "
        "{\"transactional_id\": T}";
    if (c.is_string()) {
      const auto text = c.get<std::string>();
      if (text != "group" && text != "transaction")
        return invalid(where + "target.coordinator_of", forms);
      out.transactional = text == "transaction";
    } else if (c.is_object() && c.size() == 1 &&
               (c.contains("group") || c.contains("transactional_id"))) {
      out.transactional = c.contains("transactional_id");
      const char* field = out.transactional ? "transactional_id" : "group";
      const auto& key = c[field];
      const auto name = where + "target.coordinator_of." + field;
      if (!key.is_string()) return invalid(name, "must be a string");
      out.coordinator_key = key.get<std::string>();
      const auto& k = out.coordinator_key;
      if (k.empty() || k.size() > 249 ||
          std::any_of(k.begin(), k.end(), [](unsigned char ch) { return ch <= ' ' || ch > '~'; })) {
        return invalid(name, "must be 1 to 249 printable characters without spaces");
      }
    } else {
      return invalid(where + "target.coordinator_of", forms);
    }
  } else {
    const char* name = t.contains("controller") ? "controller" : "random";
    if (!t[name].is_boolean() || !t[name].get<bool>()) {
      return invalid(where + "target." + name, "must be true");
    }
    out.kind = t.contains("controller") ? TargetKind::kController : TargetKind::kRandom;
  }

  return std::nullopt;
}

// A rolling restart's target: absent, {"every_broker":true} or {"nodes":[...]}.
std::optional<Error> parseRollingTarget(const nlohmann::json& body, Target& out) {
  out.kind = TargetKind::kNodes;
  if (!body.contains("target")) return std::nullopt;
  const auto& t = body["target"];
  const char* forms =
      "a rolling restart's target is {\"every_broker\":true} (the default) or {\"nodes\":[...]}";
  if (!t.is_object() || t.size() != 1) return invalid("target", forms);
  if (auto e = unknownFields(t, "target", {"every_broker", "nodes"})) return *e;
  if (t.contains("every_broker")) {
    if (!t["every_broker"].is_boolean() || !t["every_broker"].get<bool>())
      return invalid("target.every_broker", "must be true");
    return std::nullopt;
  }
  const auto& nodes = t["nodes"];
  if (!nodes.is_array() || nodes.empty() || nodes.size() > 100) {
    return invalid("target.nodes", "must be a list of 1 to 100 node ids");
  }
  for (const auto& n : nodes) {
    if (!n.is_number_integer() || n.get<std::int64_t>() < 0 ||
        n.get<std::int64_t>() > 2'147'483'647) {
      return invalid("target.nodes", "must be node ids (integers from 0)");
    }
    const auto id = static_cast<std::int32_t>(n.get<std::int64_t>());
    if (std::find(out.nodes.begin(), out.nodes.end(), id) != out.nodes.end()) {
      return invalid("target.nodes", "node " + std::to_string(id) + " is named twice");
    }
    out.nodes.push_back(id);
  }
  return std::nullopt;
}

// An observed drill takes only the options of a wait (the rest are an injection's, and would be
// silently ignored); window_s and quiet_s are only its.
std::optional<Error> observedOptions(const nlohmann::json& o, bool observed) {
  static const std::set<std::string> kOwn{"window_s", "quiet_s"};
  static const std::set<std::string> kShared{"baseline_s", "observe_min_s", "settle_timeout_s"};
  for (const auto& item : o.items()) {
    if (observed && !kOwn.count(item.key()) && !kShared.count(item.key())) {
      return invalid("options." + item.key(), "not for observed (kfaild injects nothing)");
    }
    if (!observed && kOwn.count(item.key())) {
      return invalid("options." + item.key(), "only for observed");
    }
  }
  return std::nullopt;
}

// The request's "options" into spec.options (spec.fault already read).
std::optional<Error> parseOptions(const nlohmann::json& o, DrillSpec& spec) {
  const bool rolling = spec.fault == FaultType::kRollingRestart;
  if (!o.is_object()) return invalid("options", "must be an object");
  if (auto e = unknownFields(o, "options",
                             {"repeats",
                              "baseline_s",
                              "observe_min_s",
                              "observe_timeout_s",
                              "grace_s",
                              "pause_s",
                              "recover_timeout_s",
                              "preferred_election",
                              "preflight_election",
                              "settle_timeout_s",
                              "allow_unavailable",
                              "allow_quorum_loss",
                              "duration_s",
                              "from",
                              "mode",
                              "rate",
                              "kill",
                              "between_s",
                              "include_controllers",
                              "window_s",
                              "quiet_s"})) {
    return *e;
  }
  if (auto e = observedOptions(o, spec.fault == FaultType::kObserved)) return *e;
  // Options of a fault other than the request's are refused: they would be silently ignored.
  const auto only_for = [&](const char* name, bool applies,
                            const char* faults) -> std::optional<Error> {
    if (o.contains(name) && !applies)
      return invalid(std::string("options.") + name, std::string("only for ") + faults);
    return std::nullopt;
  };
  for (auto e :
       {only_for("duration_s", isGrayFault(spec.fault), "isolate, throttle, disk_full, disk_slow"),
        only_for("from", spec.fault == FaultType::kIsolate, "isolate"),
        only_for("mode", spec.fault == FaultType::kIsolate, "isolate"),
        only_for("rate", spec.fault == FaultType::kThrottle, "throttle"),
        only_for("kill", spec.fault == FaultType::kRestart || rolling, "restart, rolling_restart"),
        only_for("between_s", rolling, "rolling_restart"),
        only_for("include_controllers", rolling, "rolling_restart")}) {
    if (e) return *e;
  }
  auto& opt = spec.options;
  for (auto e : {readInt(o, "repeats", "options", 1, 20, opt.repeats),
                 readInt(o, "baseline_s", "options", 1, 600, opt.baseline_s),
                 readInt(o, "observe_min_s", "options", 1, 600, opt.observe_min_s),
                 readInt(o, "observe_timeout_s", "options", 5, 3600, opt.observe_timeout_s),
                 readInt(o, "grace_s", "options", 0, 600, opt.grace_s),
                 readInt(o, "pause_s", "options", 1, 3600, opt.pause_s),
                 readInt(o, "recover_timeout_s", "options", 10, 3600, opt.recover_timeout_s),
                 readInt(o, "settle_timeout_s", "options", 0, 3600, opt.settle_timeout_s),
                 readBool(o, "preferred_election", "options", opt.preferred_election),
                 readBool(o, "preflight_election", "options", opt.preflight_election),
                 readBool(o, "allow_unavailable", "options", opt.allow_unavailable),
                 readBool(o, "allow_quorum_loss", "options", opt.allow_quorum_loss),
                 readInt(o, "duration_s", "options", 1, 3600, opt.duration_s),
                 readBool(o, "kill", "options", opt.kill),
                 readInt(o, "between_s", "options", 0, 3600, opt.between_s),
                 readBool(o, "include_controllers", "options", opt.include_controllers),
                 readInt(o, "window_s", "options", kMinWindowS, kMaxWindowS, opt.window_s),
                 readInt(o, "quiet_s", "options", 0, 3600, opt.quiet_s)}) {
    if (e) return *e;
  }
  if (o.contains("from")) {
    const auto from = o["from"].is_string() ? fault::parseIsolateFrom(o["from"].get<std::string>())
                                            : std::nullopt;
    if (!from) return invalid("options.from", "must be one of quorum, brokers, clients, all");
    opt.from = *from;
  }
  if (o.contains("mode")) {
    const auto mode = o["mode"].is_string() ? fault::parseIsolateMode(o["mode"].get<std::string>())
                                            : std::nullopt;
    if (!mode) return invalid("options.mode", "must be drop or reject");
    opt.mode = *mode;
  }
  if (o.contains("rate")) {
    const auto& r = o["rate"];
    std::optional<std::uint64_t> rate;
    if (r.is_number_unsigned()) {
      rate = parseRate(std::to_string(r.get<std::uint64_t>()));
    } else if (r.is_string()) {
      rate = parseRate(r.get<std::string>());
    }
    if (!rate) {
      return invalid("options.rate",
                     "must be bytes per second (an integer) or a rate such as \"500kbit\", "
                     "\"10mbit\", \"64kbytes\", between 1 kbit/s and 100 gbit/s");
    }
    opt.rate_bytes_per_second = *rate;
  }
  if (opt.observe_min_s > opt.observe_timeout_s) {
    return invalid("options.observe_min_s", "must not exceed options.observe_timeout_s");
  }
  return std::nullopt;
}

// The request's "then": a second fault after a kill or a stop (spec.options already read).
std::optional<Error> parseSecondFault(const nlohmann::json& t, DrillSpec& spec) {
  if (!t.is_object())
    return invalid("then", "must be {\"fault\":..., \"target\":..., \"after_s\":...}");
  if (auto e = unknownFields(t, "then", {"fault", "target", "after_s"})) return *e;
  const auto combinable = [](FaultType f) {
    return f == FaultType::kKill || f == FaultType::kStop;
  };
  if (!combinable(spec.fault)) {
    return invalid(
        "then", "only after a kill or a stop (a fault held and undone in between is not combined)");
  }
  SecondFault then;
  const auto second = t.contains("fault") && t["fault"].is_string()
                          ? faultFromString(t["fault"].get<std::string>())
                          : std::nullopt;
  if (!second || !combinable(*second)) return invalid("then.fault", "required: kill or stop");
  then.fault = *second;
  if (auto e = parseTarget(t, "then.", then.target)) return *e;
  if (!t.contains("after_s"))
    return invalid("then.after_s", "required: seconds after the first fault");
  if (auto e = readInt(t, "after_s", "then", 0, 600, then.after_s)) return *e;
  if (then.after_s >= spec.options.observe_timeout_s) {
    return invalid("then.after_s", "must be below options.observe_timeout_s (" +
                                       std::to_string(spec.options.observe_timeout_s) + ")");
  }
  spec.then = then;
  return std::nullopt;
}

}  // namespace

Result<DrillSpec> parseDrillSpec(const nlohmann::json& body) {
  if (!body.is_object()) return invalid("(body)", "must be a JSON object");
  if (auto e = unknownFields(body, "", {"fault", "target", "options", "expect", "then"})) return *e;
  DrillSpec spec;
  if (!body.contains("fault") || !body["fault"].is_string()) {
    return invalid("fault", std::string("required: one of ") + kFaults);
  }
  const auto fault = faultFromString(body["fault"].get<std::string>());
  if (!fault) return invalid("fault", std::string("must be one of ") + kFaults);
  spec.fault = *fault;

  const bool rolling = spec.fault == FaultType::kRollingRestart;
  if (spec.fault == FaultType::kObserved) {
    // Whoever injects chooses the node; a mark may name it (DrillRunner::mark).
    if (body.contains("target"))
      return invalid("target", "not for observed: the fault is not kfaild's");
    if (body.contains("then")) return invalid("then", "not for observed");
    spec.target.kind = TargetKind::kNodes;
  } else if (auto e = rolling ? parseRollingTarget(body, spec.target)
                              : parseTarget(body, "", spec.target)) {
    return *e;
  }

  if (body.contains("options")) {
    if (auto e = parseOptions(body["options"], spec)) return *e;
  }
  if (rolling && spec.options.repeats != 1) {
    return invalid("options.repeats",
                   "a rolling restart is one rehearsal: each node is restarted once");
  }
  if (rolling && spec.options.include_controllers && !spec.target.nodes.empty()) {
    return invalid("options.include_controllers",
                   "only with the default target: target.nodes names every node itself");
  }
  if (spec.fault == FaultType::kThrottle && spec.options.rate_bytes_per_second == 0) {
    return invalid("options.rate", "required for throttle: bytes per second, or e.g. \"10mbit\"");
  }
  if (body.contains("then")) {
    if (auto e = parseSecondFault(body["then"], spec)) return *e;
  }
  if (body.contains("expect")) {
    auto expect = analysis::parseObjectives(body["expect"], "expect");
    if (!expect) return Error{make_error_code(errc::invalid_request), expect.error().message};
    spec.expect = std::move(*expect);
  }
  return spec;
}

nlohmann::json toJson(const Target& target) {
  switch (target.kind) {
    case TargetKind::kBroker:
      return {{"broker", target.broker}};
    case TargetKind::kLeaderOf:
      return {{"leader_of", {{"topic", target.topic}, {"partition", target.partition}}}};
    case TargetKind::kController:
      return {{"controller", true}};
    case TargetKind::kRandom:
      return {{"random", true}};
    case TargetKind::kNodes:
      if (target.nodes.empty()) return {{"every_broker", true}};
      return {{"nodes", target.nodes}};
    case TargetKind::kCoordinatorOf:
      if (target.coordinator_key.empty())
        return {{"coordinator_of", target.transactional ? "transaction" : "group"}};
      return {{"coordinator_of",
               {{target.transactional ? "transactional_id" : "group", target.coordinator_key}}}};
  }
  return nlohmann::json::object();
}

nlohmann::json toJson(const DrillOptions& o, FaultType fault) {
  if (fault == FaultType::kObserved) {
    return {{"baseline_s", o.baseline_s},
            {"observe_min_s", o.observe_min_s},
            {"settle_timeout_s", o.settle_timeout_s},
            {"window_s", o.window_s},
            {"quiet_s", o.quiet_s}};
  }
  nlohmann::json out = {{"repeats", o.repeats},
                        {"baseline_s", o.baseline_s},
                        {"observe_min_s", o.observe_min_s},
                        {"observe_timeout_s", o.observe_timeout_s},
                        {"grace_s", o.grace_s},
                        {"pause_s", o.pause_s},
                        {"recover_timeout_s", o.recover_timeout_s},
                        {"settle_timeout_s", o.settle_timeout_s},
                        {"preferred_election", o.preferred_election},
                        {"preflight_election", o.preflight_election},
                        {"allow_unavailable", o.allow_unavailable},
                        {"allow_quorum_loss", o.allow_quorum_loss}};
  // A fault's own options only with it: parseDrillSpec refuses them on another fault.
  if (isGrayFault(fault)) out["duration_s"] = o.duration_s;
  if (fault == FaultType::kIsolate) {
    out["from"] = fault::toString(o.from);
    out["mode"] = fault::toString(o.mode);
  }
  if (fault == FaultType::kThrottle) out["rate"] = o.rate_bytes_per_second;
  if (fault == FaultType::kRestart || fault == FaultType::kRollingRestart) out["kill"] = o.kill;
  if (fault == FaultType::kRollingRestart) {
    out["between_s"] = o.between_s;
    out["include_controllers"] = o.include_controllers;
  }
  return out;
}

nlohmann::json toJson(const SecondFault& then) {
  return {
      {"fault", toString(then.fault)}, {"target", toJson(then.target)}, {"after_s", then.after_s}};
}

DrillSpec secondSpec(const DrillSpec& spec) {
  DrillSpec second = spec;
  if (spec.then) {
    second.fault = spec.then->fault;
    second.target = spec.then->target;
  }
  second.then.reset();
  return second;
}

DrillSpec rollingStep(const DrillSpec& rolling, std::int32_t node) {
  DrillSpec step = rolling;
  step.fault = FaultType::kRestart;
  step.target = Target{};
  step.target.kind = TargetKind::kBroker;
  step.target.broker = node;
  step.then.reset();
  return step;
}

nlohmann::json toJson(const DrillSpec& spec) {
  nlohmann::json out = {{"fault", toString(spec.fault)},
                        {"target", toJson(spec.target)},
                        {"options", toJson(spec.options, spec.fault)}};
  if (spec.fault == FaultType::kObserved) out.erase("target");
  if (spec.expect) out["expect"] = analysis::toJson(*spec.expect);
  if (spec.then) out["then"] = toJson(*spec.then);
  return out;
}

}  // namespace kfaild::drill
