// A fixed pool of worker threads for running one kernel's outer points in parallel. The caller takes
// part, so a pool of N threads uses N-1 workers; small ranges run inline with no synchronization.
// Work is claimed dynamically in guided chunks (a share of what is left, shrinking to a 64th of a
// thread's share), so a thread held up by another process on its core delays the rest by at most one
// small chunk.
// Once a BLAS that runs on OpenMP is loaded (runtime/blas.cpp), parallel loops run on OpenMP's threads
// instead: one set of threads serves both the library's products and the generated kernels around
// them, spinning briefly between the two rather than two sets handing over through sleeps and wake-ups
// (which cost the MLP training step's medium-sized products up to half their speed). But an OpenMP region
// ends at a barrier every thread must reach: when another process holds a core, each of a training step's
// ~125 regions waited for a worker the scheduler had not run yet, even one that took no work. So the pool
// watches for that (the caller waiting at the barrier after its share, in half of the last 16 regions) and, while
// it lasts (rechecked every 200 ms), runs loops on its own threads, which never wait for a worker that has not
// started, and the library's products on one thread (contended()).
//   ThreadPool::global().parallelFor(total, [&](int64_t begin, int64_t end) { entry(bufs, begin, end); });
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace smelt {

/// See the file comment. One parallelFor at a time runs on the pool (others run inline).
class ThreadPool {
 public:
  /// `threads` including the caller; 0 = SMELT_NUM_THREADS or else the hardware's count.
  explicit ThreadPool(int threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// The process-wide pool.
  static ThreadPool& global();
  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  /// Calls `fn` on disjoint chunks covering [0, total), in parallel when `parallel` and the pool is free.
  void parallelFor(int64_t total, const std::function<void(int64_t, int64_t)>& fn, bool parallel = true);

  /// libgomp's entry for a parallel region: fn(data) on `threads` threads, the caller among them.
  using OpenMpParallel = void (*)(void (*fn)(void*), void* data, unsigned threads, unsigned flags);
  /// From now on every pool's parallel loops run on OpenMP's threads through `parallel` (null: on their own);
  /// returns the one before.
  static OpenMpParallel runOnOpenMp(OpenMpParallel parallel);

  /// Whether another process seems to hold one of the cores (see the file comment): the global pool's loops then
  /// run on its own threads, and a library's products should run on the calling thread alone.
  bool contended() const;

 private:
  void work();
  void runChunks();
  /// Records whether the caller of an OpenMP region waited at its end for `waitedNs` after finishing its share.
  void noteOpenMpWait(int64_t waitedNs);
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::mutex busy_;  // held by the caller of a parallel run
  std::condition_variable wake_, finished_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t total_ = 0, chunk_ = 1, next_ = 0, active_ = 0;  // chunk_: the smallest chunk
  uint64_t generation_ = 0;
  bool stop_ = false;
  /// The last regions' lateness (one bit each, newest lowest) and, while contended, until when (steady clock ns).
  uint32_t lateRegions_ = 0;
  const bool watchContention_;  // not when SMELT_CONTENTION=0
  std::atomic<int64_t> contendedUntilNs_{0};
  static std::atomic<OpenMpParallel> openMp_;
};

}  // namespace smelt
