// The collectives one NCCL communicator has enqueued and not yet seen finish, oldest first, each with the event
// recorded after it, for the communicator watchdog (nccl.cpp). NCCL waits forever for a peer rank that stopped
// answering (hung, not dead: no asynchronous error comes); a collective still pending past the timeout is that
// case, and the watchdog aborts the communicator with this record's words. Kept apart from the driver so the
// bookkeeping is tested without a GPU.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace smelt::cuda {

class PendingCollectives {
 public:
  using Clock = std::chrono::steady_clock;

  /// `event` (a CUevent) was recorded after the collective `what` was enqueued at `now`.
  void add(void* event, std::string what, Clock::time_point now);

  /// Drops the collectives at the front whose events `finished` says completed (their events are handed to
  /// `recycle`), then, when the oldest still pending was enqueued more than `timeout` before `now`, says which
  /// and how long it has waited. Collectives on one communicator complete in the order they were enqueued.
  std::optional<std::string> overdue(const std::function<bool(void*)>& finished,
                                     const std::function<void(void*)>& recycle, Clock::time_point now,
                                     Clock::duration timeout);

  /// Every pending collective's event (once the communicator is aborted); the record is then empty.
  std::vector<void*> takeEvents();

  size_t size() const { return pending_.size(); }

 private:
  struct Entry {
    void* event;
    std::string what;
    Clock::time_point enqueued;
  };
  std::deque<Entry> pending_;
};

}  // namespace smelt::cuda
