// A fixed pool of worker threads for running one kernel's outer points in parallel. The caller takes
// part, so a pool of N threads uses N-1 workers; small ranges run inline with no synchronization.
// Work is claimed dynamically in guided chunks (a share of what is left, shrinking to a 64th of a
// thread's share), so a thread held up by another process on its core delays the rest by at most one
// small chunk.
// Once a BLAS that runs on OpenMP is loaded (runtime/blas.cpp), parallel loops run on OpenMP's threads
// instead: one set of threads serves both the library's products and the generated kernels around
// them, spinning briefly between the two rather than two sets handing over through sleeps and wake-ups
// (which cost the MLP training step's medium-sized products up to half their speed).
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
  /// From now on every pool's parallel loops run on OpenMP's threads through `parallel`.
  static void runOnOpenMp(OpenMpParallel parallel);

 private:
  void work();
  void runChunks();
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::mutex busy_;  // held by the caller of a parallel run
  std::condition_variable wake_, finished_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t total_ = 0, chunk_ = 1, next_ = 0, active_ = 0;  // chunk_: the smallest chunk
  uint64_t generation_ = 0;
  bool stop_ = false;
  static std::atomic<OpenMpParallel> openMp_;
};

}  // namespace smelt
