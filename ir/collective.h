// The process's collective group: the ranks of a data-parallel job (runtime/distributed joins an MPI world and
// installs one here). Collective ops (`all_reduce`, ir/ops/collective.cpp) call it from their reference
// implementation, which every executable runs for them on the host, so the interpreter and every backend agree.
// Without a group installed a process is a world of one: a collective is the identity (a mean divides by 1).
#pragma once

#include "ir/support/expected.h"
#include "ir/tensor.h"

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
};

/// Installs the group collective ops use (null: a world of one). Not thread-safe against running collectives.
void setCollectiveGroup(std::shared_ptr<CollectiveGroup> group);
/// The installed group, or null.
const std::shared_ptr<CollectiveGroup>& collectiveGroup();

}  // namespace smelt
