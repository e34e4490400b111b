// NCCL's all-reduce between the GPUs of a data-parallel job, loaded with dlopen (libnccl.so.2 from the
// loader's path, the CUDA toolkit or the nvidia-nccl pip wheel: nvidia_libraries.h), never linked. The ranks are
// the process's collective group (ir/collective.h: MPI's world); the caller bootstraps the communicator by handing
// every rank the unique id rank 0 made (the CUDA backend broadcasts it through the group). A watchdog thread
// polls each communicator for an asynchronous error (a peer that died, a network failure) and for a collective
// pending past the timeout (a peer that hangs), and aborts it, so a stream waiting on a collective ends instead of
// hanging; ncclHealthy then reports the failure.
//   SMELT_TRY(cuda::NcclCommunicator* comm, cuda::ncclCommunicator(context, rank, size, scope, 300, agreeOnId));
//   SMELT_CHECK_OK(cuda::ncclAllReduce(*comm, stream, {.dtype = DType::f32, .count = n, .send = a, .recv = a}));
#pragma once

#include "ir/dtype.h"
#include "ir/support/expected.h"
#include "runtime/cuda/cuda_driver.h"

#include <array>
#include <cstdint>
#include <functional>
#include <string>

namespace smelt::cuda {

/// Whether NCCL loads (version 2.10 or later: the mean is ncclAvg) and reduces `dtype` (f16, bf16, f32, f64).
bool ncclAvailable(DType dtype);
/// "NCCL 2.28.3 (/usr/local/cuda/lib64/libnccl.so.2)", or why it is not available.
std::string ncclDescription();

/// ncclUniqueId: what every rank passes to ncclCommInitRank, made by one of them.
using NcclUniqueId = std::array<char, 128>;
/// A new unique id (ncclGetUniqueId); only rank 0 calls it.
Expected<NcclUniqueId> ncclNewUniqueId();

/// One rank's communicator (an ncclComm_t and the watchdog's record of it) on one context's GPU; kept for the
/// process.
struct NcclCommunicator;

/// The communicator of `rank` among `size` ranks on `context`'s GPU, made on first use and kept for the context's
/// epoch and `scope` (the collective group it belongs to: a new group makes a new communicator). `agreeOnId` gives
/// every rank the same unique id (rank 0's ncclNewUniqueId, broadcast); it runs on every rank, in the same order,
/// before the collective ncclCommInitRank, which waits for every rank. With more than one rank, a collective not
/// complete `timeoutSeconds` after it was enqueued (a peer that hangs) makes the watchdog abort the communicator.
Expected<NcclCommunicator*> ncclCommunicator(Context& context, int rank, int size, const void* scope,
                                             double timeoutSeconds,
                                             const std::function<Expected<NcclUniqueId>()>& agreeOnId);

/// recv = the elementwise sum (or mean) over the ranks of send, `count` elements of `dtype`, enqueued on `stream`
/// (a CUstream). send may be recv (in place). Addresses are CUdeviceptrs.
struct NcclAllReduce {
  DType dtype = DType::f32;
  int64_t count = 0;
  std::uint64_t send = 0, recv = 0;
  bool mean = false;
};
Status ncclAllReduce(Context& context, NcclCommunicator& comm, void* stream, const NcclAllReduce& call);

/// An error naming the failure when the watchdog aborted one of `context`'s communicators: the collectives enqueued
/// before it may have ended early, their results garbage. Ask after a run's work has finished.
Status ncclHealthy(const Context& context);

}  // namespace smelt::cuda
