#include "runtime/cuda/pending_collectives.h"

#include <fmt/format.h>

namespace smelt::cuda {

void PendingCollectives::add(void* event, std::string what, Clock::time_point now) {
  pending_.push_back({event, std::move(what), now});
}

std::optional<std::string> PendingCollectives::overdue(const std::function<bool(void*)>& finished,
                                                       const std::function<void(void*)>& recycle,
                                                       Clock::time_point now, Clock::duration timeout) {
  while (!pending_.empty() && finished(pending_.front().event)) {
    recycle(pending_.front().event);
    pending_.pop_front();
  }
  if (pending_.empty()) return std::nullopt;
  const Entry& oldest = pending_.front();
  const auto waited = now - oldest.enqueued;
  if (waited <= timeout) return std::nullopt;
  return fmt::format("{} did not complete within {:.3g} s (waiting {:.3g} s)", oldest.what,
                     std::chrono::duration<double>(timeout).count(), std::chrono::duration<double>(waited).count());
}

std::vector<void*> PendingCollectives::takeEvents() {
  std::vector<void*> events;
  for (const Entry& e : pending_) events.push_back(e.event);
  pending_.clear();
  return events;
}

}  // namespace smelt::cuda
