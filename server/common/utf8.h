#pragma once

// Cutting text that may be UTF-8 (a tool's output, a broker's or a host's words) at a byte bound
// without splitting a character: a cut never leaves half a multi-byte sequence at its edge, so
// the kept part is valid wherever the whole was. Bytes that were never valid UTF-8 (a host with
// a Latin-1 locale) stay as they are; common::jsonText() replaces those when the text is
// written as JSON. Pure functions: safe from any thread.

#include <cstddef>
#include <string>
#include <string_view>

namespace kfaild::common {

// The longest prefix of `text` of at most `max_bytes` that does not end inside a character.
std::string_view utf8Prefix(std::string_view text, std::size_t max_bytes);
// The longest suffix of `text` of at most `max_bytes` that does not start inside a character.
std::string_view utf8Suffix(std::string_view text, std::size_t max_bytes);

// `text` if it fits in `max_bytes`, else "..." and its last characters within max_bytes.
std::string utf8Tail(std::string_view text, std::size_t max_bytes);

}  // namespace kfaild::common
