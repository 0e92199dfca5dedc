#pragma once

// Runs a program with a fixed argv, never through a shell: fork, then execvp in a new session
// (so a timeout can kill the program and everything it started with one signal to its process
// group), stdin from /dev/null, stdout and stderr captured. Used for ssh and for a local
// broker's start command. Blocks the calling thread; thread-safe (no shared state).

#include <chrono>
#include <string>
#include <vector>

#include "server/common/result.h"

namespace kfaild::fault {

struct CommandOutput {
  int exit_code = -1;  // 128 + N when killed by signal N
  std::string out;
  std::string err;
};

// Errors: errc::command_failed when the program cannot be started (its errno text),
// errc::timeout when it runs longer than `timeout` (it and its process group are then
// SIGKILLed; the message has what it wrote to stderr so far). A program that exits non-zero is
// not an error here: the caller reads exit_code. Output beyond 4 MiB per stream is dropped.
//
// The wait ends when the program exits, not when its pipes close: a start command that leaves
// a daemon holding its stdout does not make this wait for the daemon.
Result<CommandOutput> runCommand(const std::vector<std::string>& argv,
                                 std::chrono::milliseconds timeout);

// "ssh -o BatchMode=yes ... 'a b'": argv for messages and logs, each element shell-quoted when
// it needs to be, marked as operator-only text (server/common/sensitive.h). Never executed.
// Errors of runCommand mark the program and its output the same way.
std::string describeArgv(const std::vector<std::string>& argv);

// POSIX shell single-quoting: abc → 'abc', it's → 'it'\''s'.
std::string shellQuote(std::string_view text);

}  // namespace kfaild::fault
