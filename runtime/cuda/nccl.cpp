// NCCL through dlopen (see nccl.h). The few types and enum values used are declared here, as nccl.h defines them
// (an ABI NCCL keeps across 2.x), so this builds without NCCL's header; where the header is present at build time
// the values are checked against it.
#include "runtime/cuda/nccl.h"

#include "codegen/dynamic_library.h"
#include "codegen/log.h"
#include "runtime/cuda/nvidia_libraries.h"
#include "runtime/cuda/pending_collectives.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>
#include <vector>

#if SMELT_HAVE_CUDA_TOOLKIT && __has_include(<nccl.h>)
#include <nccl.h>
#define SMELT_CHECK_NCCL_ABI 1
#endif

namespace smelt::cuda {

/// A communicator and what the watchdog found: once aborted, every later call is an error saying why. `use` is held
/// around each enqueue, the watchdog's look at the pending collectives and the abort (NCCL lets one thread at a time
/// operate a communicator).
struct NcclCommunicator {
  void* comm = nullptr;  // ncclComm_t
  int rank = 0, size = 1;
  Context* context = nullptr;
  double timeoutSeconds = 0;  // the collective group's (ncclCommunicator)
  std::mutex use;
  std::atomic<bool> aborted{false};
  std::string why;  // written by the watchdog before `aborted` is set
  // With more than one rank: each collective's completion event, until the watchdog sees it done; events that
  // completed are recorded again for later collectives.
  PendingCollectives pending;
  std::vector<void*> spareEvents;
  int64_t enqueued = 0;
};

namespace {

using CommHandle = void*;  // ncclComm_t
using NcclResult = int;
constexpr NcclResult kNcclSuccess = 0, kNcclInProgress = 7;
constexpr int kNcclFloat16 = 6, kNcclFloat32 = 7, kNcclFloat64 = 8, kNcclBfloat16 = 9;  // ncclDataType_t
constexpr int kNcclSum = 0, kNcclAvg = 4;                                               // ncclRedOp_t
constexpr int kNcclFirstWithAvg = 21000;  // ncclAvg came with NCCL 2.10
struct UniqueIdAbi {
  char internal[128];
};

#if SMELT_CHECK_NCCL_ABI
static_assert(ncclSuccess == kNcclSuccess && ncclInProgress == kNcclInProgress);
static_assert(ncclFloat16 == kNcclFloat16 && ncclFloat32 == kNcclFloat32 && ncclFloat64 == kNcclFloat64 &&
              ncclBfloat16 == kNcclBfloat16 && ncclSum == kNcclSum && ncclAvg == kNcclAvg);
static_assert(sizeof(UniqueIdAbi) == sizeof(ncclUniqueId) && NCCL_UNIQUE_ID_BYTES == sizeof(NcclUniqueId));
#endif

struct NcclApi {
  DynamicLibrary lib;
  std::string description;
  NcclResult (*getVersion)(int*) = nullptr;
  NcclResult (*getUniqueId)(UniqueIdAbi*) = nullptr;
  NcclResult (*commInitRank)(CommHandle*, int, UniqueIdAbi, int) = nullptr;
  NcclResult (*commAbort)(CommHandle) = nullptr;
  NcclResult (*commGetAsyncError)(CommHandle, NcclResult*) = nullptr;
  NcclResult (*allReduce)(const void*, void*, size_t, int, int, CommHandle, void*) = nullptr;
  const char* (*errorString)(NcclResult) = nullptr;
};

Expected<NcclApi*> loadNccl() {
  auto api = std::make_unique<NcclApi>();
  auto lib = DynamicLibrary::openFirst(nvidiaLibraryCandidates("nccl", {"libnccl.so.2"}));
  if (!lib.ok()) {
    return makeError(
        "NCCL not found (libnccl.so.2 on the loader's path, under $CUDA_HOME/lib64 or /usr/local/cuda/lib64, or in "
        "a pip wheel's nvidia/nccl/lib)");
  }
  api->lib = std::move(lib).value();
  const DynamicLibrary& l = api->lib;
  for (Status s : {l.bind(api->getVersion, "ncclGetVersion"), l.bind(api->getUniqueId, "ncclGetUniqueId"),
                   l.bind(api->commInitRank, "ncclCommInitRank"), l.bind(api->commAbort, "ncclCommAbort"),
                   l.bind(api->commGetAsyncError, "ncclCommGetAsyncError"), l.bind(api->allReduce, "ncclAllReduce"),
                   l.bind(api->errorString, "ncclGetErrorString")}) {
    if (!s.ok()) return s.error().withContext("NCCL unusable");
  }
  int version = 0;
  if (api->getVersion(&version) != kNcclSuccess) return makeError("NCCL unusable: ncclGetVersion failed");
  // From 2.9 the code is major * 10000 + minor * 100 + patch.
  if (version < kNcclFirstWithAvg) {
    return makeError("NCCL {} ({}) is older than 2.10, which the mean of an all-reduce needs (ncclAvg)", version,
                     l.name());
  }
  api->description = fmt::format("NCCL {}.{}.{} ({})", version / 10000, version / 100 % 100, version % 100, l.name());
  logger().debug("cuda: {}", api->description);
  return api.release();  // for the process: communicators outlive any one executable
}

const Expected<NcclApi*>& nccl() {
  static const Expected<NcclApi*> api = loadNccl();
  return api;
}

Error ncclError(const NcclApi& api, NcclResult result, std::string_view what) {
  const char* text = api.errorString ? api.errorString(result) : nullptr;
  return makeError("{}: {} (NCCL result {})", what, text ? text : "unknown", result);
}

/// Every communicator of the process, by context, epoch, scope, rank and size, and the watchdog thread over them.
/// Entries are never destroyed: a reset's communicators belong to a context that is gone.
struct CommRegistry {
  std::mutex mutex;
  std::map<std::tuple<const Context*, std::uint64_t, const void*, int, int>, std::unique_ptr<NcclCommunicator>> entries;
  bool watching = false;
};
CommRegistry& commRegistry() {
  static auto* r = new CommRegistry();
  return *r;
}

/// The oldest collective of `entry` still pending past its timeout, described; the caller holds `entry.use`. An
/// event the driver cannot query (a context that failed) counts as done: the asynchronous error reports that.
std::optional<std::string> overdueCollective(NcclCommunicator& entry) {
  const auto timeout = std::chrono::duration_cast<PendingCollectives::Clock::duration>(
      std::chrono::duration<double>(entry.timeoutSeconds));
  return entry.pending.overdue(
      [&](void* event) {
        Expected<bool> done = entry.context->eventDone(event);
        return !done.ok() || *done;
      },
      [&](void* event) { entry.spareEvents.push_back(event); }, PendingCollectives::Clock::now(), timeout);
}

/// Polls every communicator every 100 ms for an asynchronous error (a peer died, the network failed) and for a
/// collective pending past the timeout (a peer that hangs: NCCL reports nothing and waits forever), and aborts the
/// one that has either, which ends the kernels waiting on its peers; the executable then reports the failure
/// (ncclHealthy) instead of a hang. New enqueues are refused first; the abort waits up to a second for an enqueue
/// in progress, then goes ahead (an enqueue blocked on a dead peer is what it must end).
void watchCommunicators() {
  const NcclApi& api = **nccl();
  while (true) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::vector<NcclCommunicator*> failed;
    {
      std::lock_guard lock(commRegistry().mutex);
      for (auto& [key, entry] : commRegistry().entries) {
        if (entry->aborted.load() || !entry->comm) continue;
        std::unique_lock use(entry->use, std::try_to_lock);
        if (!use.owns_lock()) continue;  // an enqueue in progress: ask again next time
        NcclResult state = kNcclSuccess;
        NcclResult asked = api.commGetAsyncError(entry->comm, &state);
        if (asked == kNcclSuccess && (state == kNcclSuccess || state == kNcclInProgress)) {
          std::optional<std::string> late = overdueCollective(*entry);
          if (!late) continue;
          entry->why = fmt::format(
              "{}: a peer rank stopped answering (hung or unreachable; $SMELT_COLLECTIVE_TIMEOUT sets the timeout); "
              "the NCCL communicator of rank {} of {} was aborted",
              *late, entry->rank, entry->size);
        } else {
          NcclResult failure = asked != kNcclSuccess ? asked : state;
          entry->why = ncclError(api, failure,
                                 fmt::format("NCCL communicator of rank {} of {} failed (a peer died or the network "
                                             "failed); it was aborted",
                                             entry->rank, entry->size))
                           .message();
        }
        entry->aborted.store(true);
        failed.push_back(entry.get());
      }
    }
    for (NcclCommunicator* entry : failed) {
      logger().error("cuda: {}", entry->why);
      std::unique_lock use(entry->use, std::defer_lock);
      for (int i = 0; i < 50 && !use.try_lock(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      api.commAbort(entry->comm);
      for (void* event : entry->pending.takeEvents()) entry->context->destroyEvent(event);
    }
  }
}

int ncclTypeOf(DType dtype) {
  switch (dtype) {
    case DType::f16: return kNcclFloat16;
    case DType::bf16: return kNcclBfloat16;
    case DType::f32: return kNcclFloat32;
    case DType::f64: return kNcclFloat64;
    default: return -1;
  }
}

}  // namespace

bool ncclAvailable(DType dtype) { return ncclTypeOf(dtype) >= 0 && nccl().ok(); }

std::string ncclDescription() {
  const auto& api = nccl();
  return api.ok() ? (*api)->description : api.error().message();
}

Expected<NcclUniqueId> ncclNewUniqueId() {
  SMELT_TRY(NcclApi * api, nccl());
  UniqueIdAbi id{};
  if (NcclResult r = api->getUniqueId(&id); r != kNcclSuccess) return ncclError(*api, r, "ncclGetUniqueId");
  NcclUniqueId out;
  std::memcpy(out.data(), id.internal, out.size());
  return out;
}

Expected<NcclCommunicator*> ncclCommunicator(Context& context, int rank, int size, const void* scope,
                                             double timeoutSeconds,
                                             const std::function<Expected<NcclUniqueId>()>& agreeOnId) {
  SMELT_TRY(NcclApi * api, nccl());
  if (size < 1 || rank < 0 || rank >= size) return makeError("NCCL: rank {} of {} ranks", rank, size);
  CommRegistry& r = commRegistry();
  const auto key = std::make_tuple(&context, context.epoch(), scope, rank, size);
  {
    std::lock_guard lock(r.mutex);
    if (auto it = r.entries.find(key); it != r.entries.end()) {
      if (it->second->aborted.load()) return makeError("{}", it->second->why);
      return it->second.get();
    }
  }
  // Outside the lock: the id exchange and ncclCommInitRank wait for the other ranks.
  SMELT_TRY(NcclUniqueId bytes, agreeOnId());
  UniqueIdAbi id{};
  std::memcpy(id.internal, bytes.data(), bytes.size());
  CommHandle comm = nullptr;
  SMELT_CHECK_OK(context.withCurrent([&]() -> Status {
    if (NcclResult res = api->commInitRank(&comm, size, id, rank); res != kNcclSuccess) {
      return ncclError(*api, res, fmt::format("ncclCommInitRank (rank {} of {})", rank, size));
    }
    return Status::success();
  }));
  logger().debug("cuda: NCCL communicator for rank {} of {}", rank, size);
  std::lock_guard lock(r.mutex);
  auto entry = std::make_unique<NcclCommunicator>();
  entry->comm = comm;
  entry->rank = rank;
  entry->size = size;
  entry->context = &context;
  entry->timeoutSeconds = timeoutSeconds;
  NcclCommunicator* out = entry.get();
  r.entries.emplace(key, std::move(entry));
  if (!r.watching) {
    r.watching = true;
    std::thread(watchCommunicators).detach();  // for the process, like the communicators it watches
  }
  return out;
}

Status ncclAllReduce(Context& context, NcclCommunicator& comm, void* stream, const NcclAllReduce& call) {
  SMELT_TRY(NcclApi * api, nccl());
  const int type = ncclTypeOf(call.dtype);
  if (type < 0) return makeError("NCCL: no all-reduce of {} (f16, bf16, f32, f64)", dtypeName(call.dtype));
  std::lock_guard use(comm.use);
  if (comm.aborted.load()) return makeError("{}", comm.why);
  if (call.count == 0) return Status::success();
  return context.withCurrent([&]() -> Status {
    const int op = call.mean ? kNcclAvg : kNcclSum;
    NcclResult r = api->allReduce(reinterpret_cast<const void*>(call.send), reinterpret_cast<void*>(call.recv),
                                  static_cast<size_t>(call.count), type, op, comm.comm, stream);
    ++comm.enqueued;
    auto what = [&] {
      return fmt::format("ncclAllReduce #{} ({} {} elements, rank {} of {})", comm.enqueued, dtypeName(call.dtype),
                         call.count, comm.rank, comm.size);
    };
    if (r != kNcclSuccess) return ncclError(*api, r, what());
    // A world of one has no peer to wait for (and its step may be under CUDA-graph capture, which a world of
    // more never is: the executable does not replay it).
    if (comm.size == 1) return Status::success();
    void* event = nullptr;
    if (!comm.spareEvents.empty()) {
      event = comm.spareEvents.back();
      SMELT_CHECK_OK(context.recordEventAgain(event, stream));
      comm.spareEvents.pop_back();
    } else {
      SMELT_TRY(event, context.recordEvent(stream));
    }
    comm.pending.add(event, what(), PendingCollectives::Clock::now());
    return Status::success();
  });
}

Status ncclHealthy(const Context& context) {
  std::lock_guard lock(commRegistry().mutex);
  for (auto& [key, entry] : commRegistry().entries) {
    if (entry->context == &context && entry->aborted.load()) return makeError("{}", entry->why);
  }
  return Status::success();
}

}  // namespace smelt::cuda
