// A fixed pool of worker threads for running one kernel's outer points in parallel. The caller takes
// part, so a pool of N threads uses N-1 workers; small ranges run inline with no synchronization.
//   ThreadPool::global().parallelFor(total, [&](int64_t begin, int64_t end) { entry(bufs, begin, end); });
#pragma once

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

 private:
  void work();
  void runChunks();
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::mutex busy_;  // held by the caller of a parallel run
  std::condition_variable wake_, finished_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t total_ = 0, chunk_ = 1, next_ = 0, active_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace smelt
