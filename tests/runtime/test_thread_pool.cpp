// The CPU's thread pool (runtime/cpu/thread_pool.h): every loop covered once in disjoint chunks, on its own threads
// and on an OpenMP-like runtime; and the switch away from OpenMP's regions while another process holds a core (a
// region whose caller waits at the end for a worker the scheduler has not run), here with a stand-in for libgomp's
// GOMP_parallel whose end barrier waits a millisecond.
#include "runtime/cpu/thread_pool.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

using namespace smelt;

namespace {

std::atomic<int> regions{0};
std::atomic<bool> lateBarrier{false};

/// GOMP_parallel's shape: fn(data) on the caller (the only thread here), then the end barrier, which waits a
/// millisecond for a worker that has not run when `lateBarrier` is set.
void fakeParallel(void (*fn)(void*), void* data, unsigned, unsigned) {
  ++regions;
  fn(data);
  if (lateBarrier) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

/// Runs a loop of `total` points on `pool` and checks that its chunks cover each point once.
void checkCovers(ThreadPool& pool, int64_t total) {
  std::vector<int> hits(static_cast<size_t>(total), 0);
  std::mutex mutex;
  pool.parallelFor(total, [&](int64_t begin, int64_t end) {
    CHECK(begin < end);
    std::lock_guard lock(mutex);
    for (int64_t i = begin; i < end; ++i) ++hits[static_cast<size_t>(i)];
  });
  int64_t wrong = 0, first = -1;
  for (int64_t i = 0; i < total; ++i) {
    if (hits[static_cast<size_t>(i)] != 1 && wrong++ == 0) first = i;
  }
  CHECK_MESSAGE(wrong == 0, wrong, " of ", total, " points not run exactly once, the first ", first);
}

/// Restores the process's OpenMP entry when a test ends.
struct OpenMpSwap {
  ThreadPool::OpenMpParallel before;
  explicit OpenMpSwap(ThreadPool::OpenMpParallel with) : before(ThreadPool::runOnOpenMp(with)) {}
  ~OpenMpSwap() { ThreadPool::runOnOpenMp(before); }
};

}  // namespace

TEST_CASE("thread pool: every point once, in disjoint chunks, on its own threads and on an OpenMP runtime") {
  OpenMpSwap own(nullptr);
  ThreadPool pool(3);
  for (int64_t total : {1, 2, 7, 64, 1000, 100003}) checkCovers(pool, total);
  OpenMpSwap openMp(&fakeParallel);
  lateBarrier = false;
  regions = 0;
  for (int64_t total : {1, 2, 7, 64, 1000, 100003}) checkCovers(pool, total);
  CHECK(regions == 6);
  CHECK_FALSE(pool.contended());
}

TEST_CASE("thread pool: regions whose caller waits for a late worker send loops to the pool's own threads") {
  OpenMpSwap openMp(&fakeParallel);
  ThreadPool pool(2);
  regions = 0;
  lateBarrier = false;
  for (int i = 0; i < 20; ++i) checkCovers(pool, 1000);
  CHECK(regions == 20);
  CHECK_FALSE(pool.contended());  // on time: OpenMP's regions throughout
  // Late now and then (another tenant's passing load) is not contended; half of the last sixteen is, and the next
  // loops do not enter a region.
  lateBarrier = true;
  for (int i = 0; i < 7; ++i) checkCovers(pool, 1000);
  CHECK(regions == 27);
  CHECK_FALSE(pool.contended());
  checkCovers(pool, 1000);
  CHECK(regions == 28);
  CHECK(pool.contended());
  for (int i = 0; i < 10; ++i) checkCovers(pool, 1000);
  CHECK(regions == 28);
  // It looks again after a while (200 ms): on time again, OpenMP's regions again.
  lateBarrier = false;
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  CHECK_FALSE(pool.contended());
  checkCovers(pool, 1000);
  CHECK(regions == 29);
}
