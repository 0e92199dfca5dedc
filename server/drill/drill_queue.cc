#include "server/drill/drill_queue.h"

#include <algorithm>
#include <chrono>

namespace kfaild::drill {

bool DrillQueue::push(std::int64_t id) {
  {
    std::lock_guard lock(mutex_);
    if (queue_.size() >= kCapacity) return false;
    queue_.push_back(id);
  }
  worker_.wake();
  return true;
}

std::optional<std::int64_t> DrillQueue::busyWith() const {
  std::lock_guard lock(mutex_);
  if (active_) return active_;
  if (!queue_.empty()) return queue_.front();
  return std::nullopt;
}

std::optional<std::int64_t> DrillQueue::active() const {
  std::lock_guard lock(mutex_);
  return active_;
}

std::size_t DrillQueue::waiting() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

DrillQueue::AbortTaken DrillQueue::abort(std::int64_t id) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = std::find(queue_.begin(), queue_.end(), id); it != queue_.end()) {
      queue_.erase(it);
      return AbortTaken::kRemoved;
    }
    if (!active_ || *active_ != id) return AbortTaken::kNotFound;
    abort_request_ = id;
  }
  worker_.wake();
  return AbortTaken::kRequested;
}

bool DrillQueue::abortRequested() const {
  std::lock_guard lock(mutex_);
  return abortedLocked();
}

void DrillQueue::finished() {
  std::lock_guard lock(mutex_);
  active_.reset();
  abort_request_.reset();
}

bool DrillQueue::sleep(std::int64_t micros) {
  std::unique_lock lock(mutex_);
  worker_.waitFor(lock, std::chrono::microseconds(std::max<std::int64_t>(0, micros)),
                  [this] { return abortedLocked(); });
  return !worker_.stopRequested() && !abortedLocked();
}

}  // namespace kfaild::drill
