#pragma once

// Polls `ready` every `poll` until it returns true or `timeout` passes (real time: for tests that
// wait on a real process, a lab or a receiver); the last answer.

#include <chrono>
#include <thread>

namespace kfaild::testing {

template <typename Ready>
bool eventually(Ready ready, std::chrono::milliseconds timeout,
                std::chrono::milliseconds poll = std::chrono::milliseconds(200)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(poll);
  }
  return ready();
}

}  // namespace kfaild::testing
