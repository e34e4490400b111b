// The process-wide collective group (ir/collective.h).
#include "ir/collective.h"

#include <cstring>
#include <map>
#include <mutex>
#include <span>

namespace smelt {

namespace {
std::shared_ptr<CollectiveGroup>& installed() {
  static std::shared_ptr<CollectiveGroup> group;
  return group;
}
}  // namespace

Expected<int64_t> CollectiveGroup::startAllReduceSum(void* data, int64_t count, DType dtype) {
  const TensorType type{dtype, {count}};
  auto bytes = std::span(static_cast<const std::byte*>(data), type.byteSize());
  SMELT_TRY(Tensor sum, Tensor::fromBytes(type, bytes));
  SMELT_CHECK_OK(allReduceSum(sum));
  std::memcpy(data, sum.raw(), sum.byteSize());
  int64_t handle = nextHandle_++;
  finished_.insert(handle);
  return handle;
}

Status CollectiveGroup::finishAllReduce(int64_t handle) {
  if (!finished_.erase(handle)) return makeError("all-reduce #{} was not started or already finished", handle);
  return Status::success();
}

bool CollectiveGroup::allReduceDone(int64_t handle) const { return finished_.count(handle) > 0; }

namespace {
std::mutex startedMutex;
std::map<int64_t, StartedAllReduce>& started() {
  static std::map<int64_t, StartedAllReduce> byTag;
  return byTag;
}
}  // namespace

void recordStartedAllReduce(int64_t tag, StartedAllReduce s) {
  std::lock_guard lock(startedMutex);
  started()[tag] = std::move(s);
}

Expected<StartedAllReduce> takeStartedAllReduce(int64_t tag) {
  std::lock_guard lock(startedMutex);
  auto it = started().find(tag);
  if (it == started().end()) return makeError("all_reduce_wait {{tag = {}}}: no all_reduce_start of that tag ran", tag);
  StartedAllReduce s = std::move(it->second);
  started().erase(it);
  return s;
}

void setCollectiveGroup(std::shared_ptr<CollectiveGroup> group) { installed() = std::move(group); }

const std::shared_ptr<CollectiveGroup>& collectiveGroup() { return installed(); }

}  // namespace smelt
