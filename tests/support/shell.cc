#include "tests/support/shell.h"

#include <sys/wait.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

namespace kfaild::testing {

Ran run(const std::string& command) {
  Ran ran;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen((command + " 2>&1").c_str(), "r"), pclose);
  if (!pipe) return ran;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), pipe.get()) != nullptr) ran.output += buf.data();
  const int status = pclose(pipe.release());
  ran.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return ran;
}

std::string quoted(const std::filesystem::path& path) {
  return "'" + path.string() + "'";
}

std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string replacedOnce(const std::string& text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  REQUIRE(text.find(from, at + 1) == std::string::npos);
  return text.substr(0, at) + to + text.substr(at + from.size());
}

bool havePath(const std::string& program) {
  return std::system(("command -v " + program + " >/dev/null 2>&1").c_str()) == 0;
}

std::string pathOf(const std::string& program) {
  auto found = run("command -v " + program);
  if (found.status != 0) return program;
  while (!found.output.empty() && found.output.back() == '\n') found.output.pop_back();
  return found.output;
}

}  // namespace kfaild::testing
