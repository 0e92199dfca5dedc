#pragma once

// An inventory node reached through commands the operator names (`command:` in the
// configuration): kill, stop, pause, resume, start and alive, each an argv run without a shell
// (server/fault/command_injector.h runs them). What a Kubernetes operator, systemd or a cloud CLI
// does to a broker is then a drill's fault.
//
// Placeholders in a word: `{id}` (the node id), `{host}` (the node's `address`), `{drill}` (the
// drill's id; pause and resume only, the only calls kfaild makes with a drill). A brace around a
// name ([A-Za-z_][A-Za-z0-9_]*) is a placeholder and must be one of the three. Doubled braces are
// kept as they are, so Go templates (`{{.State.Status}}` of docker and podman) need no escaping;
// any other brace is literal text too (`jsonpath={.status.phase}`). A literal single-braced
// `{id}` cannot be written: no tool in view needs one. The program (argv[0]) holds no
// placeholder. Pure functions, thread-safe.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace YAML {
class Node;
}

namespace kfaild::config {

struct CommandStep {
  std::vector<std::string> argv;  // empty: no command
  std::chrono::seconds timeout{60};
};

struct CommandTarget {
  static constexpr std::chrono::seconds kDefaultTimeout{60};

  CommandStep kill;          // required
  CommandStep stop;          // required
  CommandStep pause;         // optional, with resume: without them pause drills are refused
  CommandStep resume;        // optional, with pause
  CommandStep start;         // empty: the platform brings the node back by itself
  CommandStep alive;         // optional: exit 0 (and alive_output in its stdout) = running
  std::string alive_output;  // a substring alive's stdout must contain; empty: the exit status only
  std::string log_dir;       // directory on kfaild's host with server.log, ...; empty: none
};

// The values the placeholders stand for; nullopt: that placeholder is not known in this command.
struct PlaceholderValues {
  std::optional<std::string> id;
  std::optional<std::string> host;
  std::optional<std::string> drill;
};

// `word` with its placeholders replaced, or why it cannot be: a placeholder with no value here
// ("{host} needs the node's address", "{drill} is known only in pause and resume") or an
// unknown one ("{ID} is not a placeholder (known: {id}, {host}, {drill})").
struct Expanded {
  std::string text;
  std::string problem;  // empty when text is the expansion
};
Expanded expandPlaceholders(std::string_view word, const PlaceholderValues& values);

// The argv with every word expanded (expandPlaceholders), or the first word's problem.
struct ExpandedArgv {
  std::vector<std::string> argv;
  std::string problem;
};
ExpandedArgv expandArgv(const std::vector<std::string>& argv, const PlaceholderValues& values);

// Why `program` cannot be run as argv[0] (empty when it can): with a '/', a path (relative to
// kfaild's working directory) that is not an executable regular file; without, a name no
// directory of PATH holds as one.
std::string programProblem(const std::string& program);
// Where `program` runs from, as execvp would find it now: an absolute path, empty when it is not
// found (programProblem then says why).
std::string programPath(const std::string& program);

// Reads `command:` of an inventory node (`key` names it in errors) with node id `id` and address
// `address` (empty: none). Throws ConfigError naming the key: an unknown key, kill or stop
// missing or empty, pause without resume (or the reverse), a command that is not a list of
// strings (or a mapping {argv, timeout_s}), a timeout out of 1..3600 s, a placeholder that is
// unknown or has no value for the node, a program that cannot be run (programProblem).
CommandTarget readCommandTarget(const YAML::Node& node, const std::string& key, std::int32_t id,
                                const std::string& address);

}  // namespace kfaild::config
