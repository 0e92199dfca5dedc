#include "server/common/utf8.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "server/common/json_text.h"

namespace utf8_test {

using namespace kfaild::common;

namespace {

// "a€b": € is E2 82 AC.
const std::string kEuroBetween =
    "a\xE2\x82\xAC"
    "b";

}  // namespace

TEST_CASE("a prefix cut inside a character leaves the whole character out", "[unit][common]") {
  CHECK(utf8Prefix(kEuroBetween, 5) == kEuroBetween);
  CHECK(utf8Prefix(kEuroBetween, 4) == "a\xE2\x82\xAC");
  CHECK(utf8Prefix(kEuroBetween, 3) == "a");
  CHECK(utf8Prefix(kEuroBetween, 2) == "a");
  CHECK(utf8Prefix(kEuroBetween, 1) == "a");
  CHECK(utf8Prefix(kEuroBetween, 0).empty());
  // A four-byte character (U+1F600) cut after each of its first three bytes.
  const std::string emoji = "x\xF0\x9F\x98\x80";
  for (std::size_t max = 1; max < emoji.size(); ++max) CHECK(utf8Prefix(emoji, max) == "x");
  CHECK(utf8Prefix(emoji, 5) == emoji);
}

TEST_CASE("a suffix cut inside a character starts after it", "[unit][common]") {
  CHECK(utf8Suffix(kEuroBetween, 5) == kEuroBetween);
  CHECK(utf8Suffix(kEuroBetween, 4) ==
        "\xE2\x82\xAC"
        "b");
  CHECK(utf8Suffix(kEuroBetween, 3) == "b");
  CHECK(utf8Suffix(kEuroBetween, 2) == "b");
  CHECK(utf8Suffix(kEuroBetween, 1) == "b");
  CHECK(utf8Tail(kEuroBetween, 3) == "...b");
  CHECK(utf8Tail(kEuroBetween, 5) == kEuroBetween);
}

TEST_CASE("bytes that were never UTF-8 are cut where the bound says", "[unit][common]") {
  // Latin-1 "café" (E9) and a run of stray continuation bytes: no character to keep whole.
  CHECK(utf8Prefix("caf\xE9!", 4) == "caf\xE9");
  CHECK(utf8Suffix("\x80\x80\x80\x80\x80", 2) == "\x80\x80");
  CHECK(utf8Prefix("\x80\x80\x80\x80\x80", 4) == "\x80\x80\x80\x80");
}

TEST_CASE("the tail of a long output that ends in half a character is valid JSON text",
          "[unit][common]") {
  std::string output;
  for (int i = 0; i < 1000; ++i) output += "\xE2\x82\xAC";  // 3000 bytes of €
  output += "\xE2\x82";                                     // and half of one more
  const auto tail = utf8Tail(output.substr(0, output.size() - 2), 2000);
  CHECK(tail.size() <= 2003);
  // Cut on a character's start, not 2000 bytes (not a multiple of 3) back.
  CHECK(tail.substr(3, 3) == "\xE2\x82\xAC");
  CHECK_NOTHROW(nlohmann::json(tail).dump());
  // The one way kfaild writes JSON replaces what is still broken instead of throwing.
  CHECK_THROWS(nlohmann::json(output).dump());
  const auto text = jsonText(nlohmann::json{{"stderr", output}});
  CHECK(text.substr(text.size() - 8) == "\xE2\x82\xAC\xEF\xBF\xBD\"}");
}

}  // namespace utf8_test
