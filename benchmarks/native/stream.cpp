// smelt_stream: the machine's memory bandwidth, STREAM-style (McCalpin's copy and triad kernels over
// arrays far larger than the caches, split over N threads, best of R repetitions). The benchmark
// driver measures it in the same run as the workloads and reports each workload as a % of it.
//   smelt_stream [--threads N] [--mb MB_PER_ARRAY] [--reps R]
// prints `copy_gbs X` and `triad_gbs X` (bytes counted as STREAM does: copy 2 arrays, triad 3 arrays
// per element, write-allocate traffic not counted).
#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace {

struct Options {
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  long mbPerArray = 256;  // 3 x 256 MB: far beyond any last-level cache here
  int reps = 20;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads")) o.threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--mb")) o.mbPerArray = std::atol(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--reps")) o.reps = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "smelt_stream: unknown option %s\n", argv[i]);
      std::exit(2);
    }
  }
  o.threads = std::max(o.threads, 1);
  o.reps = std::max(o.reps, 1);
  return o;
}

// The kernels, over one thread's slice [begin, end). Plain loops, as STREAM writes them.
void copy(const double* a, double* c, long begin, long end) {
  for (long j = begin; j < end; ++j) c[j] = a[j];
}
void triad(double* a, const double* b, const double* c, double s, long begin, long end) {
  for (long j = begin; j < end; ++j) a[j] = b[j] + s * c[j];
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const long n = o.mbPerArray * (1l << 20) / static_cast<long>(sizeof(double));
  // Uninitialized storage: each thread first-touches its own slice below.
  std::unique_ptr<double[]> a(new double[n]), b(new double[n]), c(new double[n]);
  auto slice = [&](int t, long& begin, long& end) {
    begin = n * t / o.threads;
    end = n * (t + 1) / o.threads;
  };
  // Each timed step runs `work` on every thread between two barriers; thread 0 (this one) times it.
  std::function<void(long, long)> work;
  std::barrier sync(o.threads);
  bool done = false;
  std::vector<std::thread> pool;
  for (int t = 1; t < o.threads; ++t) {
    pool.emplace_back([&, t] {
      long begin, end;
      slice(t, begin, end);
      for (;;) {
        sync.arrive_and_wait();  // start
        if (done) return;
        work(begin, end);
        sync.arrive_and_wait();  // end
      }
    });
  }
  auto step = [&](const std::function<void(long, long)>& w) {
    work = w;
    long begin, end;
    slice(0, begin, end);
    const auto t0 = std::chrono::steady_clock::now();
    sync.arrive_and_wait();
    work(begin, end);
    sync.arrive_and_wait();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  step([&](long begin, long end) {
    for (long j = begin; j < end; ++j) a[j] = 1.0, b[j] = 2.0, c[j] = 0.0;
  });
  double bestCopy = 1e30, bestTriad = 1e30;
  for (int r = 0; r < o.reps; ++r) {
    bestCopy = std::min(bestCopy, step([&](long begin, long end) { copy(a.get(), c.get(), begin, end); }));
    bestTriad = std::min(bestTriad, step([&](long begin, long end) { triad(a.get(), b.get(), c.get(), 3.0, begin, end); }));
  }
  done = true;
  sync.arrive_and_wait();
  for (auto& t : pool) t.join();
  const double bytes = static_cast<double>(n) * sizeof(double);
  std::printf("threads %d\narray_mb %ld\nreps %d\n", o.threads, o.mbPerArray, o.reps);
  std::printf("copy_gbs %.2f\ntriad_gbs %.2f\n", 2 * bytes / bestCopy / 1e9, 3 * bytes / bestTriad / 1e9);
  // Keep the results observable so no loop is optimized away.
  return a[n / 2] == 42.0 ? 3 : 0;
}
