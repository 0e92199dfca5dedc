#pragma once

// A child process for end-to-end tests (kfaild itself), with its output in a log file.

#include <sys/types.h>

#include <string>
#include <vector>

namespace kfaild::testing {

class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, const std::string& log_file);
  ~ChildProcess();  // SIGKILLs the process if it still runs
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  // Sends `signal` and waits up to `timeout_ms`; returns the exit code, or -1 on timeout/signal.
  int stop(int signal, int timeout_ms);

 private:
  pid_t pid_ = -1;
  int exit_code_ = -1;
  bool reaped_ = false;
};

std::string kfaildBinary();

}  // namespace kfaild::testing
