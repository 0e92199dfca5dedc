#include "tests/support/temp_dir.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace kfaild::testing {

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "kfaild-test-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  // KFAILD_KEEP_TEST_DIRS=1 keeps them for a post-mortem (databases, kfaild logs).
  if (std::getenv("KFAILD_KEEP_TEST_DIRS") != nullptr) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace kfaild::testing
