// The process's collective group: the ranks of a data-parallel job (runtime/distributed joins an MPI world and
// installs one here). Collective ops (`all_reduce`, ir/ops/collective.cpp) call it on the host from every
// executable and the interpreter, so they all agree.
// Without a group installed a process is a world of one: a collective is the identity (a mean divides by 1).
#pragma once

#include "ir/support/expected.h"
#include "ir/tensor.h"

#include <memory>
#include <set>

namespace smelt {

/// How long a collective waits for the other ranks unless told otherwise ($SMELT_COLLECTIVE_TIMEOUT).
constexpr double kDefaultCollectiveTimeoutSeconds = 300;

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
  /// Starts the in-place sum over the ranks of the `count` elements of `dtype` at `data` and returns at once with a
  /// handle for finishAllReduce, so the caller computes while it runs (all_reduce_start). The memory is the
  /// caller's (an executable's own buffer: no copy): it must stay valid, neither read nor written, until
  /// finishAllReduce(handle) returns. Collectives run in the order they start, on every rank. The default runs the
  /// sum before returning.
  virtual Expected<int64_t> startAllReduceSum(void* data, int64_t count, DType dtype);
  /// Waits for a started sum (all_reduce_wait): its memory then holds the sum.
  virtual Status finishAllReduce(int64_t handle);
  /// Whether a started sum has completed, without waiting (MPI_Test's question): finishAllReduce then returns at
  /// once. False for a handle that was not started or already finished.
  virtual bool allReduceDone(int64_t handle) const;
  /// How long a collective may wait for the other ranks before it is an error ($SMELT_COLLECTIVE_TIMEOUT for MPI's
  /// world); the collectives that run elsewhere (NCCL on the GPU) keep to it too.
  virtual double timeoutSeconds() const { return kDefaultCollectiveTimeoutSeconds; }

 private:
  std::set<int64_t> finished_;
  int64_t nextHandle_ = 0;
};

/// The all-reduce all_reduce_start started for its `tag`: the group's handle, and the tensor it sums in place
/// when the memory is not an executable's (the reference interpreter's copy).
struct StartedAllReduce {
  int64_t handle = 0;
  std::shared_ptr<Tensor> held;
};

/// The all-reduces started by all_reduce_start and not yet waited for, by the ops' `tag`.
void recordStartedAllReduce(int64_t tag, StartedAllReduce started);
/// The all-reduce recorded for `tag`, removed; an error when none was started.
Expected<StartedAllReduce> takeStartedAllReduce(int64_t tag);

/// Installs the group collective ops use (null: a world of one). Not thread-safe against running collectives.
void setCollectiveGroup(std::shared_ptr<CollectiveGroup> group);
/// The installed group, or null.
const std::shared_ptr<CollectiveGroup>& collectiveGroup();

}  // namespace smelt
