#pragma once

// Runs a program with a fixed argv, never through a shell: fork, then execvp in a new session
// (so a timeout can kill the program and everything it started with one signal to its process
// group), stdin from /dev/null, stdout and stderr captured. Used for ssh and for a local
// broker's start command. Blocks the calling thread; thread-safe (no shared state).

#include <chrono>
#include <string>
#include <vector>

#include "server/common/clock.h"
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
// not an error here: the caller reads exit_code. Output beyond 4 MiB per stream is dropped (cut
// on a UTF-8 character boundary).
//
// The wait ends when the program exits, not when its pipes close: a start command that leaves
// a daemon holding its stdout does not make this wait for the daemon.
Result<CommandOutput> runCommand(const std::vector<std::string>& argv,
                                 std::chrono::milliseconds timeout);

// One round of exchangeLines: the line read back, with kfaild's wall clock just before the write
// and just after the read.
struct LineExchange {
  common::WallMicros sent = 0;
  common::WallMicros received = 0;
  std::string line;
};

// Runs a program as runCommand does, but with its stdin a pipe: waits for its first line (it is
// ready), then `rounds` times writes an empty line and reads one line back, timing each round on
// `clock`; then closes its stdin and waits for it to exit. For a remote host's clock read over
// one ssh session, so that the connection's set-up lies outside every round. Errors: those of
// runCommand (errc::timeout when the whole exceeds `timeout`), and errc::command_failed when the
// program exits before the rounds are done (with what it wrote to stderr). Its exit status is
// not looked at once the rounds are done.
Result<std::vector<LineExchange>> exchangeLines(const std::vector<std::string>& argv,
                                                std::chrono::milliseconds timeout, int rounds,
                                                const common::Clock& clock);

// "ssh -o BatchMode=yes ... 'a b'": argv for messages and logs, each element shell-quoted when
// it needs to be, marked as operator-only text (server/common/sensitive.h). Never executed.
// Errors of runCommand mark the program and its output the same way.
std::string describeArgv(const std::vector<std::string>& argv);

// POSIX shell single-quoting: abc → 'abc', it's → 'it'\''s'.
std::string shellQuote(std::string_view text);

}  // namespace kfaild::fault
