#pragma once

// A mutex with priority inheritance (PTHREAD_PRIO_INHERIT), for state a real-time thread shares
// with ordinary ones. The probe's sender runs at SCHED_FIFO (thread_priority.h) so that a busy host
// does not make its sends late; a std::mutex it must take from an ordinary thread would undo that:
// when the ordinary holder is preempted on a loaded host, it waits its turn among every runnable
// thread (tens of milliseconds at a load average of 36 on two cores), and the sender with it.
// With inheritance the kernel runs the holder at the waiter's priority until it unlocks.
//
// Uncontended, lock and unlock stay in user space as a std::mutex's do. Meets Lockable, so
// std::lock_guard and std::unique_lock take it; not for std::condition_variable (use _any).

#include <pthread.h>

namespace kfaild::common {

class PiMutex {
 public:
  PiMutex() {
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT);
    pthread_mutex_init(&mutex_, &attr);
    pthread_mutexattr_destroy(&attr);
  }
  ~PiMutex() { pthread_mutex_destroy(&mutex_); }
  PiMutex(const PiMutex&) = delete;
  PiMutex& operator=(const PiMutex&) = delete;

  void lock() { pthread_mutex_lock(&mutex_); }
  bool try_lock() { return pthread_mutex_trylock(&mutex_) == 0; }
  void unlock() { pthread_mutex_unlock(&mutex_); }

 private:
  pthread_mutex_t mutex_;
};

}  // namespace kfaild::common
