#include "server/config/command_target.h"

#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "server/config/config.h"

namespace kfaild::config {
namespace {

[[noreturn]] void fail(const std::string& key, const std::string& problem) {
  throw ConfigError(key + ": " + problem);
}

bool nameStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_';
}

bool nameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

bool executableFile(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string stringOf(const YAML::Node& node, const std::string& key) {
  if (!node.IsScalar()) fail(key, "must be a string");
  return node.as<std::string>();
}

std::chrono::seconds timeoutOf(const YAML::Node& node, const std::string& key) {
  if (!node.IsScalar()) fail(key, "must be an integer");
  const auto text = node.as<std::string>();
  int value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || ptr != text.data() + text.size() || value < 1 || value > 3600)
    fail(key, "must be between 1 and 3600 (seconds), got '" + text + "'");
  return std::chrono::seconds(value);
}

// A command: a list of strings (the argv), or {argv: [...], timeout_s: N}.
CommandStep readStep(const YAML::Node& node, const std::string& key,
                     std::chrono::seconds default_timeout) {
  CommandStep step;
  step.timeout = default_timeout;
  if (node.IsMap()) {
    for (const auto& entry : node) {
      const auto name = entry.first.as<std::string>();
      if (name != "argv" && name != "timeout_s")
        fail(key + "." + name, "unknown key (known: argv, timeout_s)");
    }
    if (!node["argv"]) fail(key + ".argv", "required (a list: program and arguments)");
    if (node["timeout_s"]) step.timeout = timeoutOf(node["timeout_s"], key + ".timeout_s");
  }
  // A YAML::Node assigned to another overwrites what it refers to: never reassigned.
  const YAML::Node argv = node.IsMap() ? node["argv"] : node;
  if (!argv.IsSequence()) {
    fail(key,
         "must be a list of strings (program and arguments, run without a shell), or "
         "{argv: [...], timeout_s: N}");
  }
  for (std::size_t i = 0; i < argv.size(); ++i)
    step.argv.push_back(stringOf(argv[i], key + "[" + std::to_string(i) + "]"));
  return step;
}

// The step's words against the placeholders known there, and its program.
void checkStep(const CommandStep& step, const std::string& key, const PlaceholderValues& values) {
  if (step.argv.empty()) return;
  if (const auto program = expandPlaceholders(step.argv.front(), {});
      !program.problem.empty() || program.text != step.argv.front()) {
    fail(key + "[0]", "the program is named plainly, without placeholders or braces");
  }
  for (std::size_t i = 0; i < step.argv.size(); ++i) {
    if (const auto word = expandPlaceholders(step.argv[i], values); !word.problem.empty())
      fail(key + "[" + std::to_string(i) + "]", word.problem);
  }
  if (const auto why = programProblem(step.argv.front()); !why.empty()) fail(key + "[0]", why);
}

}  // namespace

Expanded expandPlaceholders(std::string_view word, const PlaceholderValues& values) {
  Expanded out;
  std::size_t i = 0;
  while (i < word.size()) {
    const char c = word[i];
    // Doubled braces are Go templates' (docker, podman, kubectl -o go-template): kept as they are.
    if ((c == '{' || c == '}') && i + 1 < word.size() && word[i + 1] == c) {
      out.text += word.substr(i, 2);
      i += 2;
      continue;
    }
    std::size_t end = i + 1;
    if (c == '{' && end < word.size() && nameStart(word[end])) {
      while (end < word.size() && nameChar(word[end])) ++end;
    }
    if (c != '{' || end == i + 1 || end >= word.size() || word[end] != '}') {
      out.text += c;
      ++i;
      continue;
    }
    const auto name = std::string(word.substr(i + 1, end - i - 1));
    const std::optional<std::string>* value = name == "id"      ? &values.id
                                              : name == "host"  ? &values.host
                                              : name == "drill" ? &values.drill
                                                                : nullptr;
    if (value == nullptr) {
      out.problem = "{" + name +
                    "} is not a placeholder (known: {id}, {host}, {drill}; {{ and }} "
                    "are literal braces)";
      return out;
    }
    if (!value->has_value()) {
      out.problem = name == "host" ? "{host} needs the node's address (inventory[].address)"
                    : name == "drill"
                        ? "{drill} is known only in pause and resume (the calls kfaild makes for "
                          "a drill)"
                        : "{" + name + "} has no value here";
      return out;
    }
    out.text += **value;
    i = end + 1;
  }
  return out;
}

ExpandedArgv expandArgv(const std::vector<std::string>& argv, const PlaceholderValues& values) {
  ExpandedArgv out;
  for (const auto& word : argv) {
    auto expanded = expandPlaceholders(word, values);
    if (!expanded.problem.empty()) return {{}, std::move(expanded.problem)};
    out.argv.push_back(std::move(expanded.text));
  }
  return out;
}

std::string programPath(const std::string& program) {
  if (program.empty()) return {};
  if (program.find('/') != std::string::npos) {
    return executableFile(program) ? std::filesystem::absolute(program).lexically_normal().string()
                                   : std::string();
  }
  // As execvp looks it up: PATH, or its default when unset.
  const char* set = std::getenv("PATH");
  const std::string path = set != nullptr ? set : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= path.size()) {
    const auto colon = path.find(':', start);
    auto dir = path.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (dir.empty()) dir = ".";
    if (executableFile(dir + "/" + program)) {
      return std::filesystem::absolute(dir + "/" + program).lexically_normal().string();
    }
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return {};
}

std::string programProblem(const std::string& program) {
  if (program.empty()) return "the program is empty";
  if (!programPath(program).empty()) return {};
  if (program.find('/') != std::string::npos) {
    return program + " is not an executable file (relative: to kfaild's working directory)";
  }
  const char* set = std::getenv("PATH");
  return program + " is not found on PATH (" +
         (set != nullptr ? std::string(set) : std::string("/usr/local/bin:/usr/bin:/bin")) + ")";
}

CommandTarget readCommandTarget(const YAML::Node& node, const std::string& key, std::int32_t id,
                                const std::string& address) {
  static const std::set<std::string> kKnown = {
      "kill", "stop", "pause", "resume", "start", "alive", "timeout_s", "alive_output", "log_dir"};
  if (!node.IsMap()) fail(key, "must be a mapping (kill, stop, start, ...)");
  std::set<std::string> seen;
  for (const auto& entry : node) {
    const auto name = entry.first.as<std::string>();
    if (!seen.insert(name).second) fail(key + "." + name, "given twice");
    if (!kKnown.count(name)) {
      fail(key + "." + name,
           "unknown key (known: kill, stop, pause, resume, start, alive, "
           "alive_output, timeout_s, log_dir)");
    }
  }
  auto timeout = CommandTarget::kDefaultTimeout;
  if (node["timeout_s"]) timeout = timeoutOf(node["timeout_s"], key + ".timeout_s");
  CommandTarget t;
  const struct {
    const char* name;
    CommandStep* step;
  } steps[] = {{"kill", &t.kill},     {"stop", &t.stop},   {"pause", &t.pause},
               {"resume", &t.resume}, {"start", &t.start}, {"alive", &t.alive}};
  for (const auto& [name, step] : steps) {
    if (node[name]) *step = readStep(node[name], key + "." + name, timeout);
  }
  for (const auto* name : {"kill", "stop"}) {
    if (!node[name] || (std::string(name) == "kill" ? t.kill : t.stop).argv.empty())
      fail(key + "." + name, "required (a list: program and arguments)");
  }
  if (t.pause.argv.empty() != t.resume.argv.empty()) {
    fail(key + (t.pause.argv.empty() ? ".pause" : ".resume"),
         "pause and resume come together (neither: pause drills are refused for this node)");
  }
  const PlaceholderValues node_values{
      std::to_string(id), address.empty() ? std::nullopt : std::optional<std::string>(address),
      std::nullopt};
  auto drill_values = node_values;
  drill_values.drill = "1";
  for (const auto& [name, step] : steps) {
    const bool with_drill = std::string(name) == "pause" || std::string(name) == "resume";
    checkStep(*step, key + "." + name, with_drill ? drill_values : node_values);
  }
  if (node["alive_output"]) {
    if (t.alive.argv.empty()) fail(key + ".alive_output", "only with alive");
    t.alive_output = stringOf(node["alive_output"], key + ".alive_output");
    if (t.alive_output.empty()) fail(key + ".alive_output", "must not be empty");
  }
  if (node["log_dir"]) t.log_dir = stringOf(node["log_dir"], key + ".log_dir");
  return t;
}

}  // namespace kfaild::config
