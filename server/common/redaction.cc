#include "server/common/redaction.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <string>

#include "server/common/sensitive.h"

namespace kfaild::common {
namespace {

bool isDigit(char c) {
  return c >= '0' && c <= '9';
}

// Characters that end a token: what separates words in kfaild's messages.
bool isSeparator(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == ';' || c == '(' ||
         c == ')' || c == '"' || c == '\'' || c == '<' || c == '>' || c == '{' || c == '}';
}

// d.d.d.d, optionally followed by :port.
bool isIpv4Token(std::string_view token) {
  const auto colon = token.find(':');
  std::string_view address = token.substr(0, colon);
  if (colon != std::string_view::npos) {
    const auto port = token.substr(colon + 1);
    if (port.empty() || !std::all_of(port.begin(), port.end(), isDigit)) return false;
  }
  int dots = 0;
  int digits = 0;
  for (const char c : address) {
    if (c == '.') {
      if (digits == 0) return false;
      ++dots;
      digits = 0;
    } else if (isDigit(c)) {
      if (++digits > 3) return false;
    } else {
      return false;
    }
  }
  return dots == 3 && digits > 0;
}

// An IPv6 address without brackets or port ("2001:db8::5", "::ffff:10.0.0.5", "fe80::1%eth0").
// inet_pton decides: a time ("12:30:45") or a word with "::" in it is no address.
bool isIpv6Token(std::string_view token) {
  token = token.substr(0, token.find('%'));
  if (std::count(token.begin(), token.end(), ':') < 2 || token.size() >= INET6_ADDRSTRLEN)
    return false;
  in6_addr address{};
  return inet_pton(AF_INET6, std::string(token).c_str(), &address) == 1;
}

bool isSensitiveToken(std::string_view token) {
  // Whole, before the trim below: an IPv6 address may end in ':' ("2001:db8::").
  if (isIpv6Token(token)) return true;
  // Trailing punctuation of a sentence is not part of the token ("...on 10.0.0.5:9092.").
  while (!token.empty() && (token.back() == '.' || token.back() == ':')) token.remove_suffix(1);
  if (token.empty()) return false;
  if (token.find('/') != std::string_view::npos) return true;  // a path or a URL
  const auto at = token.find('@');
  if (at != std::string_view::npos && at > 0 && at + 1 < token.size()) return true;    // user@host
  if (token.front() == '[' && token.find(':') != std::string_view::npos) return true;  // [v6]:port
  return isIpv4Token(token) || isIpv6Token(token);
}

}  // namespace

Redactor::Redactor(std::vector<std::string> literals) {
  for (auto& literal : literals) {
    if (literal.size() >= 3 &&
        std::find(literals_.begin(), literals_.end(), literal) == literals_.end()) {
      literals_.push_back(std::move(literal));
    }
  }
  std::sort(literals_.begin(), literals_.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
}

std::string Redactor::redactMarked(std::string_view input) {
  using common::kSensitiveClose;
  using common::kSensitiveOpen;
  std::string text;
  text.reserve(input.size());
  while (!input.empty()) {
    const auto open = input.find(kSensitiveOpen);
    const auto close = input.find(kSensitiveClose);
    const auto mark = std::min(open, close);
    text.append(input.substr(0, mark));
    if (mark == std::string_view::npos) break;
    if (mark == close) {  // a close without an open: the mark alone goes
      input.remove_prefix(close + kSensitiveClose.size());
      continue;
    }
    text.append(kRedacted);
    const auto end = input.find(kSensitiveClose, open + kSensitiveOpen.size());
    if (end == std::string_view::npos) break;
    input.remove_prefix(end + kSensitiveClose.size());
  }
  return text;
}

std::string Redactor::redact(std::string_view input) const {
  std::string text = redactMarked(input);
  // A literal counts only as a whole word: a host named "kafka" is redacted in "kafka: refused",
  // not in "kafka-probe" or "kafkas".
  const auto isWordChar = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
  };
  for (const auto& literal : literals_) {
    std::size_t at = text.find(literal);
    while (at != std::string::npos) {
      const std::size_t end = at + literal.size();
      const bool whole =
          (at == 0 || !isWordChar(text[at - 1])) && (end == text.size() || !isWordChar(text[end]));
      if (whole) {
        text.replace(at, literal.size(), kRedacted);
        at = text.find(literal, at + kRedacted.size());
      } else {
        at = text.find(literal, at + 1);
      }
    }
  }
  std::string out;
  out.reserve(text.size());
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = start;
    while (end < text.size() && !isSeparator(text[end])) ++end;
    const std::string_view token(text.data() + start, end - start);
    if (token != kRedacted && isSensitiveToken(token)) {
      // Keep the sentence's own trailing punctuation.
      std::size_t keep = token.size();
      while (!isIpv6Token(token) && keep > 0 && (token[keep - 1] == '.' || token[keep - 1] == ':'))
        --keep;
      out += kRedacted;
      out.append(token.substr(keep));
    } else {
      out.append(token);
    }
    if (end < text.size()) out.push_back(text[end]);
    start = end + 1;
  }
  return out;
}

void Redactor::redactJson(nlohmann::json& value, bool marked_only) const {
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    auto redacted = marked_only ? redactMarked(text) : redact(text);
    if (redacted != text) value = std::move(redacted);
  } else if (value.is_array() || value.is_object()) {
    for (auto& item : value) redactJson(item, marked_only);
  }
}

}  // namespace kfaild::common
