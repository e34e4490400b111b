// ThreadPool: workers sleep on a condition variable and take chunks from a shared counter.
#include "runtime/cpu/thread_pool.h"

#include <algorithm>
#include <cstdlib>

namespace smelt {

std::atomic<ThreadPool::OpenMpParallel> ThreadPool::openMp_{nullptr};

void ThreadPool::runOnOpenMp(OpenMpParallel parallel) { openMp_.store(parallel); }

namespace {

// One parallelFor on OpenMP's threads: each takes chunks from a shared counter until none are left.
struct OpenMpJob {
  const std::function<void(int64_t, int64_t)>* fn;
  int64_t total, chunk;
  std::atomic<int64_t> next{0};

  static void run(void* data) {
    auto& job = *static_cast<OpenMpJob*>(data);
    for (int64_t begin = job.next.fetch_add(job.chunk); begin < job.total; begin = job.next.fetch_add(job.chunk)) {
      (*job.fn)(begin, std::min(job.total, begin + job.chunk));
    }
  }
};

}  // namespace

ThreadPool::ThreadPool(int threads) {
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

void ThreadPool::runChunks() {
  while (true) {
    int64_t begin;
    {
      std::lock_guard lock(mutex_);
      if (next_ >= total_) return;
      begin = next_;
      next_ = std::min(total_, next_ + chunk_);
    }
    (*job_)(begin, std::min(total_, begin + chunk_));
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
  // A few chunks per thread balance uneven rows without much locking.
  const int64_t chunk = std::max<int64_t>(1, (total + threads() * 4 - 1) / (threads() * 4));
  if (OpenMpParallel openMp = openMp_.load()) {
    OpenMpJob job{&fn, total, chunk};
    openMp(&OpenMpJob::run, &job, static_cast<unsigned>(threads()), 0);
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
