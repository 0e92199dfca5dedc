#pragma once

// For tests of the gray-fault runner with a fake command runner: what a kfaild-gray argv asks for,
// read back with the helper's own parser, and the script kfaild-gray would build for it.

#include <algorithm>
#include <string>
#include <vector>

#include "server/fault/gray_helper.h"
#include "server/fault/gray_runner.h"

namespace kfaild::testing {

// The argv prefix the tests' shells use for kfaild-gray.
inline const std::vector<std::string> kHelperPrefix = {"kfaild-gray"};

// A NodeShell's network way into the named namespace through kHelperPrefix.
inline fault::HelperArgv helperInNetns(const std::string& netns) {
  return [netns](const std::vector<std::string>& words) -> Result<std::vector<std::string>> {
    return fault::localHelperArgv(kHelperPrefix, netns, 0, words);
  };
}

inline fault::HelperArgv helperOnHost() {
  return [](const std::vector<std::string>& words) -> Result<std::vector<std::string>> {
    return fault::localHelperArgv(kHelperPrefix, {}, 0, words);
  };
}

// The request in a kfaild-gray argv (the words after the program); fails the parse loudly.
inline fault::HelperRequest requestOf(const std::vector<std::string>& argv) {
  const auto at = std::find(argv.begin(), argv.end(), kHelperPrefix.front());
  std::vector<std::string> words(at == argv.end() ? argv.begin() : at + 1, argv.end());
  auto parsed = fault::parseHelperWords(words);
  if (!parsed.ok())
    throw std::runtime_error("not a kfaild-gray request: " + parsed.error().message);
  return *parsed;
}

// The nft or sh script kfaild-gray would run for that argv.
inline std::string scriptOf(const std::vector<std::string>& argv) {
  return fault::helperScript(requestOf(argv));
}

}  // namespace kfaild::testing
