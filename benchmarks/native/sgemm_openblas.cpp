// smelt_sgemm_openblas: OpenBLAS's SGEMM timed directly (no framework in between), the "best BLAS on
// the machine" that the gemm2048 workload is held against.
//   smelt_sgemm_openblas [--size N] [--threads T] [--runs R] [--warmup W] [--max-seconds S]
// prints `config ...`, `median_ms X`, `min_ms X` and `gflops X` (at the median) for C = A @ B, N^3.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

// Declared here rather than through <cblas.h>: Debian's cblas.h is an alternatives link that may name
// netlib's header, and only these three entry points of libopenblas are needed (LP64: int indices).
extern "C" {
void cblas_sgemm(int order, int transA, int transB, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc);
void openblas_set_num_threads(int threads);
char* openblas_get_config(void);
}

namespace {
constexpr int kRowMajor = 101, kNoTrans = 111;  // CBLAS_ORDER / CBLAS_TRANSPOSE values
}

int main(int argc, char** argv) {
  int size = 2048, threads = 0, runs = 20, warmup = 2;
  double maxSeconds = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--size")) size = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--runs")) runs = std::max(1, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--warmup")) warmup = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--max-seconds")) maxSeconds = std::atof(argv[i + 1]);
    else {
      std::fprintf(stderr, "smelt_sgemm_openblas: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (threads > 0) openblas_set_num_threads(threads);
  const size_t n = static_cast<size_t>(size);
  std::vector<float> a(n * n), b(n * n), c(n * n);
  std::mt19937 rng(0);
  std::normal_distribution<float> normal;
  for (size_t i = 0; i < n * n; ++i) a[i] = normal(rng), b[i] = normal(rng);
  auto gemm = [&] {
    cblas_sgemm(kRowMajor, kNoTrans, kNoTrans, size, size, size, 1.0f, a.data(), size, b.data(), size, 0.0f,
                c.data(), size);
  };
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto elapsed = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  for (int i = 0; i < warmup; ++i) gemm();
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    // Past the budget, stop once there are 3 runs for a median.
    if (maxSeconds > 0 && ms.size() >= 3 && elapsed(start) > maxSeconds) break;
    const auto t0 = Clock::now();
    gemm();
    ms.push_back(elapsed(t0) * 1e3);
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  std::printf("config %s\nthreads %d\nruns %zu\n", openblas_get_config(), threads, ms.size());
  std::printf("min_ms %.4f\ngflops %.1f\nmedian_ms %.4f\n", ms.front(), 2.0 * size * size * size / (median * 1e-3) / 1e9,
              median);
  return c[0] == 12345.0f ? 3 : 0;
}
