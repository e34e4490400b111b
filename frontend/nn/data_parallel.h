// Data-parallel training over the ranks of the process's collective group (ir/collective.h; an MPI job joins
// one with joinMpiWorld, runtime/distributed/mpi_group.h): each rank runs the step on its shard of every batch,
// and the gradients are averaged over the ranks by all-reduce ops in the step's own graph, in buckets (a small
// first one, then about 25 MB each, in the order the backward pass produces them, as PyTorch's DDP buckets them),
// before the optimizer update. Parameters and optimizer state start as rank 0's.
#pragma once

#include "frontend/nn/graph_context.h"
#include "ir/collective.h"

#include <string>
#include <utility>
#include <vector>

namespace smelt::nn {

struct DistributedOptions {
  /// Average gradients over the collective group's ranks (TrainStep fails without a group of size > 1).
  bool enabled = false;
  int64_t bucketBytes = int64_t{25} << 20;
  int64_t firstBucketBytes = int64_t{1} << 20;
  /// Batch norms normalize with the statistics of the whole batch over every rank (PyTorch's SyncBatchNorm): each
  /// rank's per-channel mean and mean square averaged by one all_reduce per layer (the ranks' batches must be
  /// equal in size). Off: each rank's own batch, as DistributedDataParallel alone does.
  bool syncBatchNorm = false;
};

/// `grads` (of the trainable parameters, in their order) averaged over the ranks: flattened into buckets, each
/// bucket's `all_reduce_start {op = "mean"}` placed right after its last gradient's node (so the rest of the
/// backward pass computes while it travels) and its `all_reduce_wait` after the backward pass (runWaitsLate moves
/// each to its first use once the updates exist). Buckets fill in the order the gradients are produced.
/// `schedule`, when given, gets one line per collective.
std::vector<Value*> averageOverRanks(Builder& b, const std::vector<Value*>& grads, const DistributedOptions& options,
                                     std::vector<std::string>* schedule = nullptr);

/// Runs each all_reduce_wait as late as the graph allows: right before the first node that needs its result, and
/// every node that needs none of the waits (or only earlier ones) before it. So the optimizer updates of the first
/// buckets run while the last bucket still travels. Call once the graph is complete (the updates built); the
/// starts and every other node keep their order.
Status runWaitsLate(Graph& graph);

/// Replaces every tensor of `state` by rank 0's (in name order; every rank must hold the same names and types).
Status broadcastState(StateDict& state, CollectiveGroup& group);

/// Fails on every rank, naming the first collective that differs, when the ranks' schedules (one line per
/// collective: order, size, dtype) are not rank 0's; run before the first step, so a mismatch is an error and
/// never a hang.
Status checkSchedule(const std::vector<std::string>& schedule, CollectiveGroup& group);

/// Rank `rank`'s rows of a batch of `rows` among `size` ranks: [begin, end), contiguous, sizes differing by at
/// most one (the first rows % size ranks take one more).
std::pair<int64_t, int64_t> shardRows(int64_t rows, int rank, int size);

/// Rank `rank`'s share of `batch` (its rows shardRows gives, along the first axis): what each rank trains on.
Tensor shardOf(const Tensor& batch, int rank, int size);

}  // namespace smelt::nn
