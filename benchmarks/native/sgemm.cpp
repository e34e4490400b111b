// smelt_sgemm: a BLAS library's SGEMM timed directly (no framework in between), to find the best GEMM on
// the machine that the gemm2048 workload is held against.
//   smelt_sgemm [--library openblas|onednn] [--size N] [--threads T] [--runs R] [--warmup W] [--max-seconds S]
// prints `library ...`, `min_ms X`, `gflops X` (at the median) and `median_ms X` for C = A @ B, N^3, f32.
// The libraries are opened with dlopen, so the program builds without their headers (Debian ships
// libdnnl2 without them) and a missing library is a message, not a build failure.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

// cblas.h's values (LP64 OpenBLAS: int indices) and dnnl.h's row-major dnnl_sgemm (dnnl_dim_t = int64_t).
constexpr int kRowMajor = 101, kNoTrans = 111;
using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                            int);
using DnnlSgemm = int (*)(char, char, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                          float, float*, int64_t);
using SetThreads = void (*)(int);
using Config = char* (*)();

void* openFirst(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return handle;
  }
  return nullptr;
}

// C = A @ B through `library`, with `threads` threads (0: the library's default); describes what it loaded.
std::function<void(int, const float*, const float*, float*)> load(const std::string& library, int threads,
                                                                  std::string& description) {
  if (library == "openblas") {
    void* lib = openFirst({"libopenblas.so.0", "libopenblas.so"});
    auto sgemm = lib ? reinterpret_cast<CblasSgemm>(dlsym(lib, "cblas_sgemm")) : nullptr;
    if (!sgemm) return nullptr;
    auto setThreads = reinterpret_cast<SetThreads>(dlsym(lib, "openblas_set_num_threads"));
    if (threads > 0 && setThreads) setThreads(threads);
    auto config = reinterpret_cast<Config>(dlsym(lib, "openblas_get_config"));
    description = config ? config() : "OpenBLAS";
    return [sgemm](int n, const float* a, const float* b, float* c) {
      sgemm(kRowMajor, kNoTrans, kNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    };
  }
  if (library == "onednn") {
    void* lib = openFirst({"libdnnl.so.3", "libdnnl.so.2"});
    auto sgemm = lib ? reinterpret_cast<DnnlSgemm>(dlsym(lib, "dnnl_sgemm")) : nullptr;
    if (!sgemm) return nullptr;
    // Debian's oneDNN runs on OpenMP; dlsym on its handle also searches libgomp, which it loads.
    auto setThreads = reinterpret_cast<SetThreads>(dlsym(lib, "omp_set_num_threads"));
    if (threads > 0 && setThreads) setThreads(threads);
    // dnnl.h: const dnnl_version_t* dnnl_version(void), the struct opening with int major, minor, patch.
    using Version = const int* (*)();
    auto version = reinterpret_cast<Version>(dlsym(lib, "dnnl_version"));
    const int* v = version ? version() : nullptr;
    description = v ? "oneDNN " + std::to_string(v[0]) + "." + std::to_string(v[1]) + "." + std::to_string(v[2])
                    : "oneDNN";
    return [sgemm](int n, const float* a, const float* b, float* c) {
      sgemm('N', 'N', n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    };
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  std::string library = "openblas";
  int size = 2048, threads = 0, runs = 20, warmup = 2;
  double maxSeconds = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--library")) library = argv[i + 1];
    else if (!std::strcmp(argv[i], "--size")) size = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--runs")) runs = std::max(1, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--warmup")) warmup = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--max-seconds")) maxSeconds = std::atof(argv[i + 1]);
    else {
      std::fprintf(stderr, "smelt_sgemm: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  std::string description;
  auto gemm = load(library, threads, description);
  if (!gemm) {
    std::fprintf(stderr, "smelt_sgemm: cannot load %s's sgemm (%s)\n", library.c_str(),
                 library == "openblas" || library == "onednn" ? "library not installed" : "unknown library");
    return 1;
  }
  const size_t n = static_cast<size_t>(size);
  std::vector<float> a(n * n), b(n * n), c(n * n);
  std::mt19937 rng(0);
  std::normal_distribution<float> normal;
  for (size_t i = 0; i < n * n; ++i) a[i] = normal(rng), b[i] = normal(rng);
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto elapsed = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  for (int i = 0; i < warmup; ++i) gemm(size, a.data(), b.data(), c.data());
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    // Past the budget, stop once there are 3 runs for a median.
    if (maxSeconds > 0 && ms.size() >= 3 && elapsed(start) > maxSeconds) break;
    const auto t0 = Clock::now();
    gemm(size, a.data(), b.data(), c.data());
    ms.push_back(elapsed(t0) * 1e3);
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  std::printf("library %s\nthreads %d\nruns %zu\n", description.c_str(), threads, ms.size());
  std::printf("min_ms %.4f\ngflops %.1f\nmedian_ms %.4f\n", ms.front(), 2.0 * size * size * size / (median * 1e-3) / 1e9,
              median);
  return c[0] == 12345.0f ? 3 : 0;
}
