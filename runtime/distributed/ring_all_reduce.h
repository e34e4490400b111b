// An in-place sum over the ranks of an MPI communicator as a chunked ring (reduce-scatter, then all-gather: each rank
// sends and receives 2 (N - 1) / N of the buffer, as MPI's own large-message algorithms do), made of non-blocking
// point-to-point messages and driven by tests. Why not MPI_Allreduce: a blocking collective runs inside MPI until it
// ends, spinning on the core the training step computes on, and Open MPI's TCP transport moves data only while a
// thread is inside MPI; MPI_Iallreduce's schedules move little per test (40% of the blocking call's bandwidth).
// Here each test completes whatever messages arrived and posts the next ones, and between tests the caller's `idle`
// runs: it sleeps while the step computes (the kernel's socket buffers carry the data meanwhile) and only yields
// once the step waits for the sum.
//   SMELT_CHECK_OK(ringAllReduceSum(comm, data, count, MPI_FLOAT, idle, scratch));
#pragma once

#include "ir/support/expected.h"

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace smelt {

/// Each message of the ring carries about this many bytes: a segment of the buffer (1/N of it) travels as several
/// messages, so a chunk is summed and passed on while the next one arrives.
inline constexpr int64_t kRingChunkBytes = 512 * 1024;

/// Replaces `data` (`count` elements of `type`, MPI_FLOAT or MPI_DOUBLE) on every rank of `comm` by the elementwise
/// sum over the ranks, the same bits on every rank. Every rank calls it with the same count and type; messages use
/// the tags of `comm` from 0 up, so give it a communicator of its own. `scratch` is reused between calls (2/N of the
/// buffer). An error names the MPI call that failed.
Status ringAllReduceSum(MPI_Comm comm, void* data, int64_t count, MPI_Datatype type,
                        const std::function<void()>& idle, std::vector<std::byte>& scratch);

}  // namespace smelt
