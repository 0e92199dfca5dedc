// ctest registers each Catch test by name, and a ';' in a name is a list separator to CMake: the
// test would be split into two names that match nothing and "pass" without running.

#include <catch2/catch.hpp>

namespace test_names_test {

TEST_CASE("no test name holds a semicolon, which ctest would take for a list separator", "[unit]") {
  const auto& tests = Catch::getRegistryHub().getTestCaseRegistry().getAllTests();
  REQUIRE(tests.size() > 100);
  for (const auto& test : tests) {
    INFO(test.name);
    CHECK(test.name.find(';') == std::string::npos);
  }
}

}  // namespace test_names_test
