#include "server/common/worker.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <exception>

namespace kfaild::common {
namespace {

// The message of the exception being handled.
std::string currentExceptionMessage() {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

}  // namespace

void nameThisThread(const std::string& name) {
  // Linux refuses names over 15 bytes (ERANGE) rather than cutting them.
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

void Worker::runGuarded(const std::string& name, const std::function<void()>& loop,
                        const Failed& failed) {
  while (true) {
    std::string what;
    try {
      loop();
      return;
    } catch (...) {
      what = currentExceptionMessage();
    }
    spdlog::error("thread {}: its loop threw ({}); it runs again in {} s", name, what,
                  kRestartDelay.count());
    if (failed) {
      try {
        failed(what);
      } catch (...) {
        spdlog::error("thread {}: failing what the loop was doing threw too ({})", name,
                      currentExceptionMessage());
      }
    }
    if (!sleepFor(kRestartDelay)) return;
  }
}

}  // namespace kfaild::common
