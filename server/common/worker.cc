#include "server/common/worker.h"

#include <pthread.h>

namespace kfaild::common {

void nameThisThread(const std::string& name) {
  // Linux refuses names over 15 bytes (ERANGE) rather than cutting them.
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

}  // namespace kfaild::common
