#pragma once

// What a reader without the operator token does not see: command lines, hosts, users, file paths
// and tool output that drill reasons, events, recoveries and cluster descriptions carry.
// redact() replaces, in a text:
//   - every literal the daemon names sensitive (the inventory's hosts, users, endpoints, files and
//     commands, the bootstrap addresses), longest first, where it stands as a whole word (not
//     inside a longer word: a host named "kafka" leaves "kafka-probe" alone);
//   - a command line as the fault layer writes it, between backquotes: `...`;
//   - everything after "stderr: " (a tool's own words may name anything);
//   - tokens that look like user@host, an IPv4 address (with or without port), a bracketed IPv6
//     address, or a file path (a token with a '/' in it);
// each by "[redacted]". Words, numbers, times, topic names and error names stay, so the text
// still says what happened ("kill of broker 1 failed: ssh_failed: [redacted]: Permission denied").
//
// Immutable after construction: safe from any thread.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace kfaild::api {

inline constexpr std::string_view kRedacted = "[redacted]";

class Redactor {
 public:
  Redactor() = default;
  // Literals shorter than 3 characters are ignored (they would eat ordinary words).
  explicit Redactor(std::vector<std::string> literals);

  std::string redact(std::string_view text) const;
  // Every string value of `value`, recursively (keys are left as they are).
  void redactJson(nlohmann::json& value) const;

 private:
  std::vector<std::string> literals_;  // longest first
};

}  // namespace kfaild::api
