#pragma once

// What a reader without the operator token does not see: command lines, hosts, users, file paths
// and tool output that drill reasons, events, recoveries and cluster descriptions carry. The API
// (api/router.h) applies it to its answers for such readers, and the notifier (notify/events.h)
// to every payload of a receiver without include_operator_details.
// redact() replaces, in a text:
//   - every span marked operator-only where it was made (server/common/sensitive.h: the fault
//     layer's command lines and tool output, ssh destinations, the database's own messages);
//     an unclosed span runs to the end of the text;
//   - every literal the daemon names sensitive (the inventory's hosts, users, endpoints, files and
//     commands, the bootstrap addresses), longest first, where it stands as a whole word (not
//     inside a longer word: a host named "kafka" leaves "kafka-probe" alone);
//   - tokens that look like user@host, an IPv4 address (with or without port), an IPv6 address
//     (bracketed with a port, or bare: "2001:db8::5", "::ffff:10.0.0.5", "fe80::1%eth0"), or a
//     file path (a token with a '/' in it): other texts name them too (the Docker engine's
//     answers, librdkafka's errors, who opened a maintenance window);
// each by "[redacted]". Words, numbers, times, topic names and error names stay, so the text
// still says what happened ("kill of broker 1 failed: ssh_failed: [redacted]: [redacted]").
// redactMarked() replaces only the marked spans: for problem documents of every route, whose
// other text (a path, a parameter) is the reader's own.
//
// Immutable after construction: safe from any thread.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace kfaild::common {

inline constexpr std::string_view kRedacted = "[redacted]";

class Redactor {
 public:
  Redactor() = default;
  // Literals shorter than 3 characters are ignored (they would eat ordinary words).
  explicit Redactor(std::vector<std::string> literals);

  std::string redact(std::string_view text) const;
  static std::string redactMarked(std::string_view text);
  // Every string value of `value`, recursively (keys are left as they are); `marked_only`: with
  // redactMarked().
  void redactJson(nlohmann::json& value, bool marked_only = false) const;

 private:
  std::vector<std::string> literals_;  // longest first
};

}  // namespace kfaild::common
