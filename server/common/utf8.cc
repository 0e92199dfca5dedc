#include "server/common/utf8.h"

#include <algorithm>

namespace kfaild::common {
namespace {

bool isContinuation(unsigned char c) {
  return (c & 0xC0) == 0x80;
}

// How many bytes a sequence that starts with `lead` has (1 for a byte that starts none).
std::size_t sequenceLength(unsigned char lead) {
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

// Where the character that the byte at `at` belongs to starts: back over at most three
// continuation bytes. `at` itself when it is no continuation byte; a continuation byte when no
// lead byte is in reach (the text is not UTF-8 there).
std::size_t leadBefore(std::string_view text, std::size_t at) {
  std::size_t lead = at;
  while (lead > 0 && at - lead < 3 && isContinuation(static_cast<unsigned char>(text[lead])))
    --lead;
  return isContinuation(static_cast<unsigned char>(text[at])) ? lead : at;
}

}  // namespace

std::string_view utf8Prefix(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  const std::size_t lead = leadBefore(text, max_bytes);
  if (lead == max_bytes || isContinuation(static_cast<unsigned char>(text[lead])))
    return text.substr(0, max_bytes);
  // The character that starts at `lead` goes unless it ends by the cut.
  const bool whole = lead + sequenceLength(static_cast<unsigned char>(text[lead])) <= max_bytes;
  return text.substr(0, whole ? max_bytes : lead);
}

std::string_view utf8Suffix(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  const std::size_t cut = text.size() - max_bytes;
  const std::size_t lead = leadBefore(text, cut);
  if (lead == cut || isContinuation(static_cast<unsigned char>(text[lead])))
    return text.substr(cut);
  // The character that starts at `lead` goes: it started before the cut.
  const std::size_t end = lead + sequenceLength(static_cast<unsigned char>(text[lead]));
  return text.substr(std::min(std::max(end, cut), text.size()));
}

std::string utf8Tail(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  return "..." + std::string(utf8Suffix(text, max_bytes));
}

}  // namespace kfaild::common
