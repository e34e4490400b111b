// Faults on demand, so tests exercise every recovery path on any machine (PoCL in CI):
//   SMELT_FAULTS=oom=2            the next 2 device allocations (pinned host memory too) fail as out of memory
//   SMELT_FAULTS=oom=always       every device allocation fails (never the CPU's: it is the fallback)
//   SMELT_FAULTS=lost=1           the next device launch or wait fails as a lost device's would
// The faults are injected where the drivers are called, as the error codes a real fault returns
// (CL_MEM_OBJECT_ALLOCATION_FAILURE, CUDA_ERROR_ILLEGAL_ADDRESS, ...), so they take the path a real
// one takes: classified from the code (ErrorKind), then recovered from.
//   SMELT_FAULTS=stall=1          the next collective stalls after every rank arrived (its communication
//                                 thread sleeps, as a rank hanging inside MPI would): the watchdog's test
//   SMELT_FAULTS=unsupported=exp+tanh   devices say they lack these ops (they run on the CPU)
//   SMELT_FAULTS=unsupported=f64        ... or these dtypes (every kernel touching one runs on the CPU)
// Entries combine with commas: SMELT_FAULTS=oom=1,lost=1. Tests set the same from code
// (faultInjector().configure("oom=2")). With none set, each check is one relaxed atomic load.
#pragma once

#include "ir/support/expected.h"

#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

namespace smelt {

enum class Fault { kOutOfMemory, kDeviceLost, kCollectiveStall };

class FaultInjector {
 public:
  /// Replaces the configuration with `spec` (the SMELT_FAULTS syntax); an empty spec clears it.
  /// A malformed spec is an error naming the entry, and changes nothing.
  Status configure(std::string_view spec);
  /// Whether `fault` happens now (consumes one count). Thread-safe.
  bool trigger(Fault fault);
  /// Whether devices must treat op or dtype `opName` ("tanh", "f64") as unsupported.
  bool unsupported(std::string_view opName) const;
  /// How many times each fault was injected so far (for tests).
  int injected(Fault fault) const;

 private:
  static constexpr int kAlways = -1;
  static constexpr int kFaults = 3;
  std::atomic<int> counts_[kFaults] = {0, 0, 0};
  std::atomic<int> injected_[kFaults] = {0, 0, 0};
  std::atomic<bool> any_{false};
  mutable std::mutex mutex_;
  std::set<std::string, std::less<>> unsupported_;
};

/// The process's injector, configured from $SMELT_FAULTS on first use (a malformed value is logged
/// and ignored).
FaultInjector& faultInjector();

}  // namespace smelt
