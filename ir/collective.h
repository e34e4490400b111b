// The process's collective group: the ranks of a data-parallel job (runtime/distributed joins an MPI world and
// installs one here). Collective ops (`all_reduce`, ir/ops/collective.cpp) call it from their reference
// implementation, which every executable runs for them on the host, so the interpreter and every backend agree.
// Without a group installed a process is a world of one: a collective is the identity (a mean divides by 1).
#pragma once

#include "ir/support/expected.h"
#include "ir/tensor.h"

#include <map>
#include <memory>

namespace smelt {

class CollectiveGroup {
 public:
  virtual ~CollectiveGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Replaces `tensor` on every rank by the elementwise sum over the ranks (float dtypes). Every rank must call
  /// the group's collectives in the same order with the same types; a rank that does not answer within the
  /// group's timeout is an error.
  virtual Status allReduceSum(Tensor& tensor) = 0;
  /// Replaces `tensor` on every rank by rank `root`'s.
  virtual Status broadcast(Tensor& tensor, int root) = 0;
  /// Starts the sum of `tensor` over the ranks and returns at once with a handle for finishAllReduce, so the
  /// caller computes while it runs (all_reduce_start). Collectives run in the order they start, on every rank.
  /// The default runs it before returning.
  virtual Expected<int64_t> startAllReduceSum(Tensor tensor);
  /// Waits for a started sum and returns it (all_reduce_wait).
  virtual Expected<Tensor> finishAllReduce(int64_t handle);

 private:
  std::map<int64_t, Tensor> finished_;
  int64_t nextHandle_ = 0;
};

/// The all-reduces started by all_reduce_start and not yet waited for, by the ops' `tag`.
void recordStartedAllReduce(int64_t tag, int64_t handle);
/// The handle recorded for `tag`, removed; an error when none was started.
Expected<int64_t> takeStartedAllReduce(int64_t tag);

/// Installs the group collective ops use (null: a world of one). Not thread-safe against running collectives.
void setCollectiveGroup(std::shared_ptr<CollectiveGroup> group);
/// The installed group, or null.
const std::shared_ptr<CollectiveGroup>& collectiveGroup();

}  // namespace smelt
