#pragma once

// The one way kfaild writes JSON text. Text from tools, brokers and hosts is not always UTF-8 (a
// host with a Latin-1 locale, output cut at a byte count), and nlohmann's dump() throws on such
// bytes by default (type_error 316), which on a worker's thread ended kfaild with a broker still
// down. Here they become U+FFFD instead. Pure: safe from any thread.

#include <nlohmann/json.hpp>
#include <string>

namespace kfaild::common {

// `value` as compact JSON text (indented by `indent` spaces when >= 0); bytes that are not valid
// UTF-8 are written as U+FFFD.
inline std::string jsonText(const nlohmann::json& value, int indent = -1) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace kfaild::common
