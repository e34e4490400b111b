// ThreadPool: workers sleep on a condition variable and take chunks from a shared counter.
#include "runtime/cpu/thread_pool.h"

#include "ir/support/env_switch.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdlib>

namespace smelt {

std::atomic<ThreadPool::OpenMpParallel> ThreadPool::openMp_{nullptr};

ThreadPool::OpenMpParallel ThreadPool::runOnOpenMp(OpenMpParallel parallel) { return openMp_.exchange(parallel); }

namespace {

/// Guided self-scheduling: each claim takes a share of what is left (half of it split among the
/// threads), never less than `minChunk`. Large chunks first keep the claims few; small ones at the end
/// let the threads that are running take the last work, so a thread whose core another process holds
/// (a shared machine) leaves the others waiting for one small chunk, not for a fixed share.
int64_t guidedChunk(int64_t left, int threads, int64_t minChunk) {
  return std::max(minChunk, left / (2 * static_cast<int64_t>(threads)));
}

/// The smallest chunk: a 64th of each thread's share (and at least one point).
int64_t minimumChunk(int64_t total, int threads) {
  return std::max<int64_t>(1, total / (64 * static_cast<int64_t>(threads)));
}

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// A region's caller waiting this long at its end, after its own share, was kept waiting by a worker the
/// scheduler had not run (a quiet machine's wait is one small chunk: microseconds).
constexpr int64_t kLateWaitNs = 300'000;
/// Contended: at least this many of the last 16 regions were late (fewer: another tenant's passing load, which
/// made the MLP step 7% slower when 3 counted). Then for this long the pool runs on its own threads, and looks
/// again.
constexpr int kLateRegions = 8;
constexpr int64_t kContendedForNs = 200'000'000;

// One parallelFor on OpenMP's threads: each claims guided chunks from a shared counter until none
// are left. The caller notes when its own share ended.
struct OpenMpJob {
  const std::function<void(int64_t, int64_t)>* fn;
  int64_t total, minChunk;
  int threads;
  std::thread::id caller;
  std::atomic<int64_t> next{0};
  int64_t callerDoneNs = 0;

  static void run(void* data) {
    auto& job = *static_cast<OpenMpJob*>(data);
    int64_t begin = job.next.load(std::memory_order_relaxed);
    while (begin < job.total) {
      int64_t end = std::min(job.total, begin + guidedChunk(job.total - begin, job.threads, job.minChunk));
      if (!job.next.compare_exchange_weak(begin, end, std::memory_order_relaxed)) continue;  // begin reloaded
      (*job.fn)(begin, end);
      begin = job.next.load(std::memory_order_relaxed);
    }
    if (std::this_thread::get_id() == job.caller) job.callerDoneNs = nowNs();
  }
};

}  // namespace

ThreadPool::ThreadPool(int threads) : watchContention_(!switchedOff("SMELT_CONTENTION")) {
  if (threads <= 0) {
    const char* env = std::getenv("SMELT_NUM_THREADS");
    threads = env && std::atoi(env) > 0 ? std::atoi(env) : static_cast<int>(std::thread::hardware_concurrency());
  }
  for (int i = 1; i < std::max(threads, 1); ++i) workers_.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

ThreadPool& ThreadPool::global() {
  static ThreadPool pool;
  return pool;
}

bool ThreadPool::contended() const { return contendedUntilNs_.load(std::memory_order_relaxed) > nowNs(); }

void ThreadPool::noteOpenMpWait(int64_t waitedNs) {
  if (!watchContention_) return;
  lateRegions_ = (lateRegions_ << 1 | (waitedNs > kLateWaitNs ? 1u : 0u)) & 0xffffu;
  if (std::popcount(lateRegions_) >= kLateRegions) {
    contendedUntilNs_.store(nowNs() + kContendedForNs, std::memory_order_relaxed);
    lateRegions_ = 0;
  }
}

void ThreadPool::runChunks() {
  while (true) {
    int64_t begin, end;
    {
      std::lock_guard lock(mutex_);
      if (next_ >= total_) return;
      begin = next_;
      end = std::min(total_, begin + guidedChunk(total_ - begin, threads(), chunk_));
      next_ = end;
    }
    (*job_)(begin, end);
  }
}

void ThreadPool::work() {
  uint64_t seen = 0;
  while (true) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      ++active_;
    }
    runChunks();
    {
      std::lock_guard lock(mutex_);
      --active_;
    }
    finished_.notify_all();
  }
}

void ThreadPool::parallelFor(int64_t total, const std::function<void(int64_t, int64_t)>& fn, bool parallel) {
  if (total <= 0) return;
  // Inline when asked, when there are no workers, or when another thread is using the pool.
  std::unique_lock busy(busy_, std::defer_lock);
  if (!parallel || workers_.empty() || !busy.try_lock()) {
    fn(0, total);
    return;
  }
  // Guided chunks (see guidedChunk), never smaller than `chunk`.
  const int64_t chunk = minimumChunk(total, threads());
  OpenMpParallel openMp = openMp_.load();
  if (openMp && !contended()) {
    OpenMpJob job{&fn, total, chunk, threads(), std::this_thread::get_id()};
    openMp(&OpenMpJob::run, &job, static_cast<unsigned>(threads()), 0);
    noteOpenMpWait(nowNs() - job.callerDoneNs);
    return;
  }

  {
    std::lock_guard lock(mutex_);
    job_ = &fn;
    total_ = total;
    chunk_ = chunk;
    next_ = 0;
    ++generation_;
  }
  wake_.notify_all();
  runChunks();
  std::unique_lock lock(mutex_);
  finished_.wait(lock, [&] { return active_ == 0 && next_ >= total_; });
  job_ = nullptr;
}

}  // namespace smelt
