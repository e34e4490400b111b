// The process-wide collective group (ir/collective.h).
#include "ir/collective.h"

#include <mutex>

namespace smelt {

namespace {
std::shared_ptr<CollectiveGroup>& installed() {
  static std::shared_ptr<CollectiveGroup> group;
  return group;
}
}  // namespace

Expected<int64_t> CollectiveGroup::startAllReduceSum(Tensor tensor) {
  SMELT_CHECK_OK(allReduceSum(tensor));
  int64_t handle = nextHandle_++;
  finished_.emplace(handle, std::move(tensor));
  return handle;
}

Expected<Tensor> CollectiveGroup::finishAllReduce(int64_t handle) {
  auto it = finished_.find(handle);
  if (it == finished_.end()) return makeError("all-reduce #{} was not started or already finished", handle);
  Tensor t = std::move(it->second);
  finished_.erase(it);
  return t;
}

namespace {
std::mutex startedMutex;
std::map<int64_t, int64_t>& started() {
  static std::map<int64_t, int64_t> byTag;
  return byTag;
}
}  // namespace

void recordStartedAllReduce(int64_t tag, int64_t handle) {
  std::lock_guard lock(startedMutex);
  started()[tag] = handle;
}

Expected<int64_t> takeStartedAllReduce(int64_t tag) {
  std::lock_guard lock(startedMutex);
  auto it = started().find(tag);
  if (it == started().end()) return makeError("all_reduce_wait {{tag = {}}}: no all_reduce_start of that tag ran", tag);
  int64_t handle = it->second;
  started().erase(it);
  return handle;
}

void setCollectiveGroup(std::shared_ptr<CollectiveGroup> group) { installed() = std::move(group); }

const std::shared_ptr<CollectiveGroup>& collectiveGroup() { return installed(); }

}  // namespace smelt
