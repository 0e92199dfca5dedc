#pragma once

// Running a command line and reading and editing files, for the tests that check files with the
// tools that read them (promtool, systemd-analyze, podman-compose, hadolint).

#include <filesystem>
#include <string>

namespace kfaild::testing {

struct Ran {
  int status = -1;     // the exit status; -1 when killed by a signal or not started
  std::string output;  // stdout and stderr together
};

// Runs `command` with /bin/sh, stderr folded into stdout.
Ran run(const std::string& command);

// `path` single-quoted for a command line (the paths here hold no quote).
std::string quoted(const std::filesystem::path& path);

// The whole file; the test fails if it cannot be read.
std::string readFile(const std::filesystem::path& path);

// Whether `program` is on PATH, and its full path (`program` itself when it is not): for tests
// that skip without a tool, and for ChildProcess, which execs without a PATH search.
bool havePath(const std::string& program);
std::string pathOf(const std::string& program);

// `text` with its one occurrence of `from` replaced: a broken copy must differ where intended,
// so the test fails if `from` is missing or occurs twice.
std::string replacedOnce(const std::string& text, const std::string& from, const std::string& to);

}  // namespace kfaild::testing
