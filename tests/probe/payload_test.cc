#include "server/probe/payload.h"

#include <catch2/catch.hpp>

namespace payload_test {

using namespace kfaild::probe;

TEST_CASE("a probe payload round-trips and is padded to the configured size", "[unit][probe]") {
  const ProbePayload p{0xdeadbeef01234567ULL, 123456789, 1'764'476'310'123'456};
  const auto bytes = encodePayload(p, 200);
  CHECK(bytes.size() == 200);
  const auto back = decodePayload(bytes);
  REQUIRE(back);
  CHECK(back->run_id == p.run_id);
  CHECK(back->seq == p.seq);
  CHECK(back->send_wall_us == p.send_wall_us);
}

TEST_CASE("foreign or damaged messages are not taken for probe payloads", "[unit][probe]") {
  CHECK_FALSE(decodePayload("hello"));
  CHECK_FALSE(decodePayload("kfp1:zz00000000000000:1:2:"));
  CHECK_FALSE(decodePayload("kfp1:0000000000000001:1"));
  CHECK_FALSE(decodePayload("kfp1:0000000000000001::5:"));
  CHECK(decodePayload("kfp1:0000000000000001:7:5:"));
}

}  // namespace payload_test
