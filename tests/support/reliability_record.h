#pragma once

// What a reliability test measured, for docs/RELIABILITY.md (issue #8): scripts/reliability-report
// reads <build>/reliability/*.json after the test run.

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/paths.h"

namespace kfaild::testing {

// The figures one reliability test measured, written (also when an assertion stopped the test
// half-way: then "completed" is false) to <build>/reliability/<name>.json for
// scripts/reliability-report, which turns them into docs/RELIABILITY.md.
class Record {
 public:
  explicit Record(std::string name) : name_(std::move(name)) {
    figures_ = nlohmann::json::object();
  }
  ~Record() {
    const std::filesystem::path dir = std::filesystem::path(KFAILD_BINARY_DIR) / "reliability";
    std::error_code ignored;
    std::filesystem::create_directories(dir, ignored);
    std::ofstream(dir / (name_ + ".json"))
        << nlohmann::json{{"name", name_}, {"completed", completed_}, {"figures", figures_}}.dump(
               2);
  }
  Record(const Record&) = delete;
  Record& operator=(const Record&) = delete;
  nlohmann::json& operator[](const std::string& key) { return figures_[key]; }
  void completed() { completed_ = true; }

 private:
  std::string name_;
  nlohmann::json figures_;
  bool completed_ = false;
};

}  // namespace kfaild::testing
