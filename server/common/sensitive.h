#pragma once

// Text only the operator may read, marked where it is made: a command line, a tool's output, a
// database's own words (which may quote SQL). An error message that includes such text includes
// it as sensitive(text), between ⟦ and ⟧; the API shows the marked span to the operator as it is
// and replaces it by "[redacted]" for everyone else (server/common/redaction.h; notifications
// alike), so what is hidden does not depend on guessing its format. Pure functions: safe from any
// thread.

#include <string>
#include <string_view>

namespace kfaild::common {

inline constexpr std::string_view kSensitiveOpen = "\xE2\x9F\xA6";   // U+27E6 ⟦
inline constexpr std::string_view kSensitiveClose = "\xE2\x9F\xA7";  // U+27E7 ⟧

// `text` between the marks; marks inside it are dropped, so a span always ends where it should.
inline std::string sensitive(std::string_view text) {
  std::string out(kSensitiveOpen);
  while (!text.empty()) {
    if (text.substr(0, kSensitiveOpen.size()) == kSensitiveOpen ||
        text.substr(0, kSensitiveClose.size()) == kSensitiveClose) {
      text.remove_prefix(kSensitiveOpen.size());
      continue;
    }
    out.push_back(text.front());
    text.remove_prefix(1);
  }
  out += kSensitiveClose;
  return out;
}

}  // namespace kfaild::common
