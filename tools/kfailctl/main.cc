// kfailctl: starts a drill on a kfaild (or an observed drill, whose fault another injects:
// observe), waits for it and prints its verdict and analysis — for scripts (a CI pipeline, a pager)
// and for people. Exit status: 0 the drill is done and its verdict is pass; 1 it failed or was
// aborted; 2 usage; 3 kfaild refused the request (guard refusal, bad request, unknown drill); 4
// kfaild unreachable, an error of its own (a TLS failure included), or the wait timed out; 5 done,
// verdict fail; 6 done, verdict inconclusive (or none).

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "server/common/time_format.h"
#include "tools/kfailctl/client.h"
#include "tools/kfailctl/summary.h"

namespace {

using kfaild::ctl::Client;
using nlohmann::json;

constexpr int kDone = 0;
constexpr int kDrillFailed = 1;
constexpr int kUsage = 2;
constexpr int kRefused = 3;
constexpr int kUnavailable = 4;
constexpr int kVerdictFail = 5;
constexpr int kVerdictInconclusive = 6;

constexpr const char* kUsageText =
    "usage: kfailctl [--url URL] [--token-file FILE] [--ca-file FILE] [--cert-file FILE --key-file "
    "FILE]\n"
    "                COMMAND ...\n"
    "  drill CLUSTER TARGET [--fault "
    "kill|stop|pause|restart|isolate|throttle|disk_full|disk_slow|rolling_restart]\n"
    "        [--repeats N] [--grace S] [--pause S] [--duration S] [--from "
    "quorum|brokers|clients|all]\n"
    "        [--mode drop|reject] [--rate RATE]\n"
    "        --duration: how long a gray fault (isolate, throttle, disk_full) stays in force;\n"
    "        --rate: throttle's bytes/s, or e.g. 500kbit, 10mbit, 64kbytes\n"
    "        [--baseline S] [--no-election] [--no-preflight-election] [--allow-unavailable] "
    "[--allow-quorum-loss] [--no-wait]\n"
    "        [--timeout S] [--json] [--expect KEY=VALUE]...\n"
    "        --expect: an objective of this drill (repeatable), e.g. --expect max_ack_stall_s=12\n"
    "        --expect by_role.leader.max_ack_stall_s=15 --expect max_lost=0 (see docs/CONFIG.md)\n"
    "        TARGET: --broker ID | --leader-of TOPIC:PARTITION | --controller | --random\n"
    "        rolling_restart: TARGET is --every-broker (the default) or --nodes ID,ID,...;\n"
    "        [--between S] [--kill] [--include-controllers]; a row per step\n"
    "        [--then kill|stop --then-target "
    "broker=ID|leader-of=TOPIC:PARTITION|controller|random\n"
    "         --then-after S]: a compound drill, a second fault S s after the first\n"
    "  observe CLUSTER [--for DURATION] [--baseline S] [--quiet S] [--timeout S] [--json]\n"
    "        [--expect KEY=VALUE]... [--broker ID] [--by TEXT] [-- COMMAND ARG...]\n"
    "        an observed drill: kfaild injects nothing and measures the faults another injects\n"
    "        within --for (10m, 90s, 1h or seconds; default 10m): a broker fenced, shut down or\n"
    "        gone. With -- COMMAND, kfailctl runs it as the fault once the drill waits for one,\n"
    "        marking the drill with the time just before it ran (--broker: the broker it hits,\n"
    "        --by: who marks, default the command's name); its output goes to stderr\n"
    "  show ID [--json]            one drill with its analysis\n"
    "  last CLUSTER [--json]       the cluster's last completed drill\n"
    "  list [--cluster C] [--state S] [--verdict pass|fail|inconclusive] [--limit N] [--json]\n"
    "  abort ID                    abort a queued or running drill (its node is recovered at "
    "once)\n"
    "--url defaults to $KFAILD_URL or http://127.0.0.1:8080; the token is read from --token-file\n"
    "or $KFAILD_TOKEN (needed by drill and abort when kfaild has one).\n"
    "https:// URLs: the server's certificate must be signed by --ca-file (default: the system's "
    "CAs)\n"
    "and name the URL's host; --cert-file/--key-file present a client certificate (PEM files).\n"
    "Exit (drill, observe, show, last): 0 done and verdict pass, 5 done and verdict fail, 6 done "
    "and "
    "verdict\n"
    "inconclusive, 1 drill failed/aborted, 2 usage, 3 refused by kfaild, 4 kfaild unreachable "
    "(TLS\n"
    "failures included)/error/timeout. Other commands: 0 on success.\n";

struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> values;  // --name value
  std::map<std::string, bool> flags;          // --name
  std::vector<std::string> expects;           // every --expect KEY=VALUE, in order
  std::vector<std::string> command;           // observe: what follows "--"
};

const std::map<std::string, bool> kTakesValue = {{"--url", true},
                                                 {"--token-file", true},
                                                 {"--ca-file", true},
                                                 {"--cert-file", true},
                                                 {"--key-file", true},
                                                 {"--fault", true},
                                                 {"--repeats", true},
                                                 {"--grace", true},
                                                 {"--pause", true},
                                                 {"--baseline", true},
                                                 {"--timeout", true},
                                                 {"--broker", true},
                                                 {"--leader-of", true},
                                                 {"--cluster", true},
                                                 {"--state", true},
                                                 {"--limit", true},
                                                 {"--expect", true},
                                                 {"--duration", true},
                                                 {"--from", true},
                                                 {"--mode", true},
                                                 {"--rate", true},
                                                 {"--verdict", true},
                                                 {"--then", true},
                                                 {"--then-target", true},
                                                 {"--then-after", true},
                                                 {"--nodes", true},
                                                 {"--for", true},
                                                 {"--quiet", true},
                                                 {"--by", true},
                                                 {"--between", true},
                                                 {"--every-broker", false},
                                                 {"--kill", false},
                                                 {"--include-controllers", false},
                                                 {"--controller", false},
                                                 {"--random", false},
                                                 {"--no-election", false},
                                                 {"--no-preflight-election", false},
                                                 {"--allow-unavailable", false},
                                                 {"--allow-quorum-loss", false},
                                                 {"--no-wait", false},
                                                 {"--json", false},
                                                 {"--help", false}};

std::optional<Args> parseArgs(int argc, char* argv[], std::string& error) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      args.command.assign(argv + i + 1, argv + argc);
      if (args.command.empty()) {
        error = "-- needs a command after it";
        return std::nullopt;
      }
      break;
    }
    if (arg.rfind("--", 0) != 0) {
      args.positional.push_back(arg);
      continue;
    }
    const auto known = kTakesValue.find(arg);
    if (known == kTakesValue.end()) {
      error = "unknown option " + arg;
      return std::nullopt;
    }
    if (!known->second) {
      args.flags[arg] = true;
    } else if (i + 1 >= argc) {
      error = arg + " needs a value";
      return std::nullopt;
    } else if (arg == "--expect") {
      args.expects.emplace_back(argv[++i]);
    } else {
      args.values[arg] = argv[++i];
    }
  }
  return args;
}

std::optional<int> intOption(const Args& args, const std::string& name, std::string& error) {
  const auto found = args.values.find(name);
  if (found == args.values.end()) return std::nullopt;
  try {
    std::size_t used = 0;
    const int value = std::stoi(found->second, &used);
    if (used == found->second.size()) return value;
  } catch (const std::exception&) {
  }
  error = name + " must be an integer, got \"" + found->second + "\"";
  return std::nullopt;
}

// Prints kfaild's problem document (or the raw answer) and maps the status to an exit code.
int reportFailure(const kfaild::ctl::Reply& reply) {
  const json problem = json::parse(reply.body, nullptr, false);
  if (problem.is_object() && problem.contains("detail")) {
    std::cerr << "kfailctl: kfaild answered " << reply.status << " "
              << problem.value("title", std::string()) << ": "
              << problem.value("detail", std::string()) << '\n';
  } else {
    std::cerr << "kfailctl: kfaild answered " << reply.status << ": " << reply.body.substr(0, 500)
              << '\n';
  }
  return reply.status >= 500 ? kUnavailable : kRefused;
}

int printDrill(const json& drill, bool as_json) {
  if (as_json) {
    std::cout << drill.dump(2) << '\n';
  } else {
    std::cout << kfaild::ctl::formatDrill(drill);
  }
  const auto state = drill.value("state", std::string());
  if (state == "done") {
    const auto& verdict = drill.contains("verdict") ? drill["verdict"] : json();
    if (verdict == "pass") return kDone;
    return verdict == "fail" ? kVerdictFail : kVerdictInconclusive;
  }
  return kfaild::ctl::isFinished(state) ? kDrillFailed : kDone;
}

// "--expect by_role.leader.max_ack_stall_s=15" → {"by_role":{"leader":{"max_ack_stall_s":15}}}.
// The value is JSON (a number, true, false); kfaild checks the keys and says which is wrong.
bool addExpectation(json& expect, const std::string& text, std::string& error) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    error = "--expect takes KEY=VALUE, got \"" + text + "\"";
    return false;
  }
  json value = json::parse(text.substr(eq + 1), nullptr, false);
  if (value.is_discarded() || !(value.is_number() || value.is_boolean())) {
    error = "--expect " + text.substr(0, eq) +
            ": the value must be a number, true or false, got \"" + text.substr(eq + 1) + "\"";
    return false;
  }
  json* at = &expect;
  const auto key = text.substr(0, eq);
  std::size_t from = 0;
  for (auto dot = key.find('.'); dot != std::string::npos;
       from = dot + 1, dot = key.find('.', from)) {
    at = &(*at)[key.substr(from, dot - from)];
    if (!at->is_null() && !at->is_object()) {
      error = "--expect " + key + ": conflicts with an earlier --expect";
      return false;
    }
  }
  (*at)[key.substr(from)] = std::move(value);
  return true;
}

std::optional<json> getJson(Client& client, const std::string& target, int& exit_code) {
  auto reply = client.call("GET", target);
  if (!reply) {
    std::cerr << "kfailctl: " << reply.error().message << '\n';
    exit_code = kUnavailable;
    return std::nullopt;
  }
  if (reply->status != 200) {
    exit_code = reportFailure(*reply);
    return std::nullopt;
  }
  json body = json::parse(reply->body, nullptr, false);
  if (body.is_discarded()) {
    std::cerr << "kfailctl: kfaild's answer is not JSON\n";
    exit_code = kUnavailable;
    return std::nullopt;
  }
  return body;
}

// A compound drill's second fault from --then FAULT --then-target SPEC --then-after S; SPEC is
// broker=ID, leader-of=TOPIC:PARTITION, controller or random. kfaild validates the rest.
std::optional<json> thenRequest(const Args& args, std::string& error) {
  if (!args.values.count("--then") || !args.values.count("--then-target") ||
      !args.values.count("--then-after")) {
    error = "a second fault takes --then FAULT, --then-target and --then-after together";
    return std::nullopt;
  }
  const auto& spec = args.values.at("--then-target");
  json target;
  try {
    if (spec.rfind("broker=", 0) == 0) {
      target = {{"broker", std::stoi(spec.substr(7))}};
    } else if (spec.rfind("leader-of=", 0) == 0 && spec.rfind(':') > 10) {
      const auto colon = spec.rfind(':');
      target = {{"leader_of",
                 {{"topic", spec.substr(10, colon - 10)},
                  {"partition", std::stoi(spec.substr(colon + 1))}}}};
    } else if (spec == "controller" || spec == "random") {
      target = {{spec, true}};
    }
  } catch (const std::exception&) {
    target = nullptr;
  }
  if (target.is_null()) {
    error =
        "--then-target takes broker=ID, leader-of=TOPIC:PARTITION, controller or random, got \"" +
        spec + "\"";
    return std::nullopt;
  }
  auto after = intOption(args, "--then-after", error);
  if (!after) return std::nullopt;
  return json{{"fault", args.values.at("--then")}, {"target", target}, {"after_s", *after}};
}

// Waits for drill `id` until it ends (its exit status: printDrill's) or `timeout` s pass.
int waitForDrill(Client& client, json drill, bool as_json, std::optional<int> timeout) {
  const auto id = drill.value("id", std::int64_t{0});
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(timeout.value_or(3600));
  std::string last_state;
  while (true) {
    int exit_code = kDone;
    auto latest = getJson(client, "/api/v1/drills/" + std::to_string(id), exit_code);
    if (latest) {
      drill = std::move(*latest);
      const auto state = drill.value("state", std::string());
      if (kfaild::ctl::isFinished(state)) return printDrill(drill, as_json);
      if (state != last_state && !as_json)
        std::cerr << "kfailctl: drill " << id << ": " << state << '\n';
      last_state = state;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      std::cerr << "kfailctl: drill " << id << " still " << last_state
                << " after the --timeout; it goes on in kfaild\n";
      return kUnavailable;
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

// POSTs `request` as a drill of `cluster`; with --no-wait prints it, else waits for its end.
// With `before_wait` (observe's command), runs it once the drill is accepted: a non-zero result
// is kfailctl's exit status at once.
int submitAndWait(Client& client, const std::string& cluster, const json& request, const Args& args,
                  std::optional<int> timeout,
                  const std::function<int(std::int64_t)>& before_wait = {}) {
  auto reply = client.call("POST", "/api/v1/clusters/" + cluster + "/drills", request.dump());
  if (!reply) {
    std::cerr << "kfailctl: " << reply.error().message << '\n';
    return kUnavailable;
  }
  if (reply->status != 202) return reportFailure(*reply);
  json drill = json::parse(reply->body, nullptr, false);
  const auto id = drill.value("id", std::int64_t{0});
  const bool as_json = args.flags.count("--json") > 0;
  if (!as_json)
    std::cerr << "kfailctl: drill " << id << " queued; waiting for it (Ctrl-C leaves it running)\n";
  if (args.flags.count("--no-wait")) return printDrill(drill, as_json);
  if (before_wait) {
    if (const int failed = before_wait(id); failed != kDone) return failed;
  }
  return waitForDrill(client, std::move(drill), as_json, timeout);
}

int drillCommand(Client& client, const Args& args) {
  if (args.positional.size() != 2) {
    std::cerr << "kfailctl: drill takes one CLUSTER\n" << kUsageText;
    return kUsage;
  }
  std::string error;
  json target;
  if (args.values.count("--broker")) {
    auto broker = intOption(args, "--broker", error);
    if (!broker) {
      std::cerr << "kfailctl: " << error << '\n';
      return kUsage;
    }
    target = {{"broker", *broker}};
  } else if (args.values.count("--leader-of")) {
    const auto& text = args.values.at("--leader-of");
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      std::cerr << "kfailctl: --leader-of takes TOPIC:PARTITION, got \"" << text << "\"\n";
      return kUsage;
    }
    try {
      target = {
          {"leader_of",
           {{"topic", text.substr(0, colon)}, {"partition", std::stoi(text.substr(colon + 1))}}}};
    } catch (const std::exception&) {
      std::cerr << "kfailctl: --leader-of takes TOPIC:PARTITION, got \"" << text << "\"\n";
      return kUsage;
    }
  } else if (args.flags.count("--controller")) {
    target = {{"controller", true}};
  } else if (args.flags.count("--random")) {
    target = {{"random", true}};
  } else if (args.values.count("--nodes")) {
    target = {{"nodes", json::array()}};
    std::stringstream list(args.values.at("--nodes"));
    for (std::string item; std::getline(list, item, ',');) {
      try {
        std::size_t used = 0;
        const int node = std::stoi(item, &used);
        if (used != item.size()) throw std::invalid_argument(item);
        target["nodes"].push_back(node);
      } catch (const std::exception&) {
        std::cerr << "kfailctl: --nodes takes node ids separated by commas, got \""
                  << args.values.at("--nodes") << "\"\n";
        return kUsage;
      }
    }
  } else if (args.flags.count("--every-broker") ||
             (args.values.count("--fault") && args.values.at("--fault") == "rolling_restart")) {
    target = {{"every_broker", true}};
  } else {
    std::cerr << "kfailctl: drill needs a target: --broker ID, --leader-of TOPIC:PARTITION, "
                 "--controller or --random\n";
    return kUsage;
  }
  json options = json::object();
  const std::map<std::string, std::string> int_options = {
      {"--repeats", "repeats"},     {"--grace", "grace_s"},       {"--pause", "pause_s"},
      {"--baseline", "baseline_s"}, {"--duration", "duration_s"}, {"--between", "between_s"}};
  for (const auto& [flag, field] : int_options) {
    auto value = intOption(args, flag, error);
    if (!error.empty()) {
      std::cerr << "kfailctl: " << error << '\n';
      return kUsage;
    }
    if (value) options[field] = *value;
  }
  if (args.flags.count("--no-election")) options["preferred_election"] = false;
  if (args.flags.count("--no-preflight-election")) options["preflight_election"] = false;
  if (args.flags.count("--allow-unavailable")) options["allow_unavailable"] = true;
  if (args.flags.count("--allow-quorum-loss")) options["allow_quorum_loss"] = true;
  if (args.flags.count("--kill")) options["kill"] = true;
  if (args.flags.count("--include-controllers")) options["include_controllers"] = true;
  // Passed as given: kfaild validates them and names the option it refuses.
  for (const auto& [flag, field] : std::map<std::string, std::string>{
           {"--from", "from"}, {"--mode", "mode"}, {"--rate", "rate"}}) {
    if (args.values.count(flag)) options[field] = args.values.at(flag);
  }
  json request = {{"fault", args.values.count("--fault") ? args.values.at("--fault") : "kill"},
                  {"target", target},
                  {"options", options}};
  if (args.values.count("--then") || args.values.count("--then-target") ||
      args.values.count("--then-after")) {
    auto then = thenRequest(args, error);
    if (!then) {
      std::cerr << "kfailctl: " << error << '\n';
      return kUsage;
    }
    request["then"] = std::move(*then);
  }
  if (!args.expects.empty()) {
    json expect = json::object();
    for (const auto& e : args.expects) {
      if (!addExpectation(expect, e, error)) {
        std::cerr << "kfailctl: " << error << '\n';
        return kUsage;
      }
    }
    request["expect"] = std::move(expect);
  }
  const auto timeout = intOption(args, "--timeout", error);
  if (!error.empty()) {
    std::cerr << "kfailctl: " << error << '\n';
    return kUsage;
  }

  return submitAndWait(client, args.positional[1], request, args, timeout);
}

// "10m", "90s", "1h", "600" → seconds; nullopt when not a duration.
std::optional<int> durationSeconds(const std::string& text) {
  std::size_t used = 0;
  int value = 0;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const auto unit = text.substr(used);
  const int times = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : 0;
  if (times == 0 || value <= 0 || value > 86'400 * 7) return std::nullopt;
  return value * times;
}

// Runs `argv` as the fault, its output on kfailctl's stderr; its exit status (-1: not run).
int runFault(const std::vector<std::string>& argv) {
  std::vector<char*> words;
  for (const auto& w : argv) words.push_back(const_cast<char*>(w.c_str()));
  words.push_back(nullptr);
  std::cout.flush();
  const pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    dup2(STDERR_FILENO, STDOUT_FILENO);
    execvp(words[0], words.data());
    std::fprintf(stderr, "kfailctl: cannot run %s: %s\n", words[0], std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Once drill `id` waits for a fault, marks it (the time just before the command runs) and runs
// the command.
int markAndRun(Client& client, std::int64_t id, const Args& args, const json& mark_body) {
  const auto path = "/api/v1/drills/" + std::to_string(id);
  while (true) {
    int exit_code = kDone;
    auto drill = getJson(client, path, exit_code);
    if (!drill) return exit_code;
    const auto state = drill->value("state", std::string());
    if (kfaild::ctl::isFinished(state)) {
      std::cerr << "kfailctl: drill " << id << " ended (" << state << ": "
                << drill->value("reason", std::string()) << ") before the command ran\n";
      return printDrill(*drill, args.flags.count("--json") > 0);
    }
    if (state == "observe") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  auto body = mark_body;
  body["at"] =
      kfaild::common::formatRfc3339(std::chrono::duration_cast<std::chrono::microseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
  auto reply = client.call("POST", path + "/mark", body.dump());
  if (!reply) {
    std::cerr << "kfailctl: " << reply.error().message << '\n';
    return kUnavailable;
  }
  if (reply->status != 200) return reportFailure(*reply);
  const int status = runFault(args.command);
  if (status != 0) {
    std::cerr << "kfailctl: the command exited " << status
              << "; kfaild measures whatever it did all the same\n";
  }
  return kDone;
}

int observeCommand(Client& client, const Args& args) {
  if (args.positional.size() != 2) {
    std::cerr << "kfailctl: observe takes one CLUSTER\n" << kUsageText;
    return kUsage;
  }
  std::string error;
  json options = json::object();
  std::optional<int> window = 600;
  if (args.values.count("--for")) window = durationSeconds(args.values.at("--for"));
  if (!window) {
    std::cerr << "kfailctl: --for takes a duration such as 10m, 90s, 1h, got \""
              << args.values.at("--for") << "\"\n";
    return kUsage;
  }
  options["window_s"] = *window;
  for (const auto& [flag, key] :
       {std::pair<const char*, const char*>{"--baseline", "baseline_s"}, {"--quiet", "quiet_s"}}) {
    if (auto value = intOption(args, flag, error)) options[key] = *value;
  }
  const auto broker = intOption(args, "--broker", error);
  const auto timeout = intOption(args, "--timeout", error);
  if (!error.empty()) {
    std::cerr << "kfailctl: " << error << '\n';
    return kUsage;
  }
  json request = {{"fault", "observed"}, {"options", options}};
  if (!args.expects.empty()) {
    json expect = json::object();
    for (const auto& e : args.expects) {
      if (!addExpectation(expect, e, error)) {
        std::cerr << "kfailctl: " << error << '\n';
        return kUsage;
      }
    }
    request["expect"] = std::move(expect);
  }
  if (args.command.empty()) {
    return submitAndWait(client, args.positional[1], request, args,
                         timeout.value_or(*window + 600));
  }
  json mark = {{"by", args.values.count("--by") ? args.values.at("--by")
                                                : "kfailctl: " + args.command.front()}};
  if (broker) mark["broker"] = *broker;
  return submitAndWait(client, args.positional[1], request, args, timeout.value_or(*window + 600),
                       [&](std::int64_t id) { return markAndRun(client, id, args, mark); });
}

}  // namespace

int main(int argc, char* argv[]) {
  std::string error;
  auto args = parseArgs(argc, argv, error);
  if (!args) {
    std::cerr << "kfailctl: " << error << '\n' << kUsageText;
    return kUsage;
  }
  if (args->flags.count("--help") || args->positional.empty()) {
    (args->flags.count("--help") ? std::cout : std::cerr) << kUsageText;
    return args->flags.count("--help") ? kDone : kUsage;
  }
  const char* env_url = std::getenv("KFAILD_URL");
  const std::string url = args->values.count("--url")
                              ? args->values.at("--url")
                              : (env_url ? env_url : "http://127.0.0.1:8080");
  auto endpoint = kfaild::ctl::parseUrl(url);
  if (!endpoint) {
    std::cerr << "kfailctl: " << endpoint.error().message << '\n';
    return kUsage;
  }
  std::string token;
  if (args->values.count("--token-file")) {
    std::ifstream in(args->values.at("--token-file"));
    if (!in || !std::getline(in, token)) {
      std::cerr << "kfailctl: cannot read the token from " << args->values.at("--token-file")
                << '\n';
      return kUsage;
    }
    while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
  } else if (const char* env_token = std::getenv("KFAILD_TOKEN")) {
    token = env_token;
  }
  kfaild::ctl::TlsFiles tls;
  if (args->values.count("--ca-file")) tls.ca_file = args->values.at("--ca-file");
  if (args->values.count("--cert-file")) tls.cert_file = args->values.at("--cert-file");
  if (args->values.count("--key-file")) tls.key_file = args->values.at("--key-file");
  auto made = Client::create(*endpoint, token, std::chrono::seconds(30), tls);
  if (!made) {
    std::cerr << "kfailctl: " << made.error().message << '\n';
    return kUsage;
  }
  Client& client = *made;
  const auto& command = args->positional.front();
  const bool as_json = args->flags.count("--json") > 0;
  int exit_code = kDone;
  if (command == "observe") return observeCommand(client, *args);
  if (!args->command.empty()) {
    std::cerr << "kfailctl: -- COMMAND is for observe only\n" << kUsageText;
    return kUsage;
  }
  if (command == "drill") return drillCommand(client, *args);
  if ((command == "show" || command == "abort" || command == "last") &&
      args->positional.size() != 2) {
    std::cerr << "kfailctl: " << command << " takes one argument\n" << kUsageText;
    return kUsage;
  }
  if (command == "show") {
    auto drill = getJson(client, "/api/v1/drills/" + args->positional[1], exit_code);
    return drill ? printDrill(*drill, as_json) : exit_code;
  }
  if (command == "last") {
    auto drill =
        getJson(client, "/api/v1/clusters/" + args->positional[1] + "/drills/last", exit_code);
    return drill ? printDrill(*drill, as_json) : exit_code;
  }
  if (command == "abort") {
    auto reply = client.call("POST", "/api/v1/drills/" + args->positional[1] + "/abort");
    if (!reply) {
      std::cerr << "kfailctl: " << reply.error().message << '\n';
      return kUnavailable;
    }
    if (reply->status != 202) return reportFailure(*reply);
    std::cout << "drill " << args->positional[1]
              << ": abort requested; its node is being recovered\n";
    return kDone;
  }
  if (command == "list") {
    std::string target = "/api/v1/drills?limit=" +
                         (args->values.count("--limit") ? args->values.at("--limit") : "20");
    if (args->values.count("--cluster")) target += "&cluster=" + args->values.at("--cluster");
    if (args->values.count("--state")) target += "&state=" + args->values.at("--state");
    if (args->values.count("--verdict")) target += "&verdict=" + args->values.at("--verdict");
    auto list = getJson(client, target, exit_code);
    if (!list) return exit_code;
    if (as_json) {
      std::cout << list->dump(2) << '\n';
      return kDone;
    }
    for (const auto& d : (*list)["items"]) {
      std::cout << d.value("id", 0) << "  " << d.value("created", std::string()) << "  "
                << d.value("cluster", std::string("?")) << "  " << d.value("fault", std::string())
                << "  " << d["target"].dump() << "  " << d.value("state", std::string()) << "  "
                << (d.contains("verdict") && d["verdict"].is_string()
                        ? d["verdict"].get<std::string>()
                        : "-")
                << (d.contains("regressed") && d["regressed"] == true ? " (regressed)" : "")
                << '\n';
    }
    return kDone;
  }
  std::cerr << "kfailctl: unknown command " << command << '\n' << kUsageText;
  return kUsage;
}
