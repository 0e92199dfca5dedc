#define CATCH_CONFIG_RUNNER
#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>
#include <cstdlib>

int main(int argc, char* argv[]) {
  // Tests assert on behaviour, not on log output; keep the console readable unless asked.
  const char* level = std::getenv("KFAILD_TEST_LOG");
  spdlog::set_level(level ? spdlog::level::from_str(level) : spdlog::level::warn);
  return Catch::Session().run(argc, argv);
}
