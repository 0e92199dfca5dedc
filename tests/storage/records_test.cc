#include "storage/records.h"

#include <catch2/catch.hpp>

namespace kfaild::storage::records_test {
namespace {

TEST_CASE("gap kinds survive a round trip through their stored names", "[unit][storage]") {
  for (const auto kind : {GapKind::kAck, GapKind::kReceive}) {
    const auto back = gapKindFromString(toString(kind));
    REQUIRE(back.has_value());
    CHECK(*back == kind);
  }
  CHECK(std::string(toString(GapKind::kAck)) == "ack");
  CHECK(std::string(toString(GapKind::kReceive)) == "receive");
}

TEST_CASE("an unknown gap kind name is refused", "[unit][storage]") {
  CHECK_FALSE(gapKindFromString("").has_value());
  CHECK_FALSE(gapKindFromString("Ack").has_value());
  CHECK_FALSE(gapKindFromString("produce").has_value());
}

}  // namespace
}  // namespace kfaild::storage::records_test
