#include "tests/support/paths.h"
#include "tests/support/lab.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace kfaild::testing {
namespace {

std::string labCommand(const std::string& args) {
  return std::string(KFAILD_SOURCE_DIR) + "/deploy/lab/lab " + args;
}

}  // namespace

int lab(const std::string& args) {
  const int status = std::system(labCommand(args).c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string labOutput(const std::string& args) {
  std::string out;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(labCommand(args).c_str(), "r"), pclose);
  if (!pipe) return out;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), pipe.get()) != nullptr) out += buf.data();
  return out;
}

std::string labBootstrap() {
  auto out = labOutput("bootstrap");
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace kfaild::testing
