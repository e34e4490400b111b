// The CPU's BLAS behind runtime/blas.h, loaded with dlopen on first use (nothing links it):
// - f32: oneDNN's dnnl_sgemm (Debian's libdnnl2) when present, else OpenBLAS's cblas_sgemm. OpenBLAS
//   chooses its kernels once, as it loads, and 0.3.21 takes newer AVX-512 CPUs (Zen 4/5) for Haswell:
//   its AVX2 SGEMM reached 247 GFLOP/s here (2048, 2 threads) where oneDNN, which picks by CPU
//   features, reached 477. (OPENBLAS_CORETYPE=SkylakeX fixes OpenBLAS too, but only when set before
//   the process starts: setting it in-process before dlopen does not reach OpenBLAS's detection.)
// - f64: OpenBLAS's cblas_dgemm (oneDNN has no dgemm).
// - bf16: oneDNN's dnnl_gemm_bf16bf16f32 (bf16 operands, f32 accumulation and result, rounded to bf16 here) on CPUs
//   with bf16 dot products (AVX-512 BF16, AMX), where a probe product at load finds it exact: oneDNN exports it
//   beside dnnl_sgemm (its own tests declare it; the public header does not).
// A dtype with no library is not available and its products stay on generated kernels.
#include "runtime/cpu/blas.h"

#include "ir/half.h"
#include "runtime/cpu/thread_pool.h"

#include <atomic>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

namespace smelt::blas {

namespace {

// cblas.h's values (a C ABI unchanged since the reference CBLAS).
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                            int);
using CblasDgemm = void (*)(int, int, int, int, int, int, double, const double*, int, const double*, int, double,
                            double*, int);
// dnnl.h: dnnl_status_t dnnl_sgemm(char transa, char transb, dnnl_dim_t M, N, K, float alpha,
// const float* A, dnnl_dim_t lda, const float* B, dnnl_dim_t ldb, float beta, float* C, dnnl_dim_t ldc),
// row-major, dnnl_dim_t = int64_t.
using DnnlSgemm = int (*)(char, char, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                          float, float*, int64_t);
// dnnl_gemm_bf16bf16f32: the same with bf16 A and B (uint16_t storage), f32 C.
using DnnlGemmBf16 = int (*)(char, char, int64_t, int64_t, int64_t, float, const uint16_t*, int64_t, const uint16_t*,
                             int64_t, float, float*, int64_t);
using SetThreads = void (*)(int);
// cblas_somatcopy(order, trans, rows, cols, alpha, a, lda, b, ldb): OpenBLAS's out-of-place copy.
using Somatcopy = void (*)(int, int, int, int, float, const float*, int, float*, int);

/// Products of at most this many multiply-adds (m * n * k) run on one thread.
constexpr int64_t kSmallProduct = 64 * 64 * 64;

struct Library {
  DnnlSgemm dnnlSgemm = nullptr;
  DnnlGemmBf16 dnnlGemmBf16 = nullptr;  // null unless the probe product was exact
  CblasSgemm sgemm = nullptr;
  CblasDgemm dgemm = nullptr;
  SetThreads openblasThreads = nullptr;
  SetThreads ompThreads = nullptr;  // oneDNN's OpenMP runtime
  mutable std::atomic<int> threads{0};  // as setThreads last set them (0: never set)
  Somatcopy somatcopy = nullptr;
  std::string description = "none";
};

void* openFirst(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return handle;
  }
  return nullptr;
}

// libgomp reads its spin count once, as it loads (here, with oneDNN). By default its threads spin for
// about 300,000 iterations after each parallel region; with another busy process on the 2 cores (ctest
// -j2, a build), that spinning took the CPU the work needed: the MLP training step ran 68 ms at the
// default, 28 ms at 1,000. 10,000 keeps the threads awake across the short gaps between a training
// step's ~125 kernels and products (a ResNet-18 step 61.4 -> 60.2 ms on an idle machine; the MLP's
// unchanged) while still yielding the CPU quickly to other work. Set while the program
// starts, before any thread exists: setenv racing another thread's posix_spawn (PoCL's linker) or
// getenv is a data race (ThreadSanitizer found it when the first product came from a worker thread).
[[maybe_unused]] const bool kSpinCountSet = setenv("GOMP_SPINCOUNT", "10000", /*overwrite=*/0) == 0;

// Whether the CPU has bf16 dot products (AVX-512 BF16 or AMX): without them oneDNN emulates bf16 on AVX-512 or
// refuses, and the f32 GEMM over widened operands is the faster way.
bool cpuHasBf16() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("flags", 0) == 0) {
      return line.find(" avx512_bf16") != std::string::npos || line.find(" amx_bf16") != std::string::npos;
    }
  }
  return false;
}

// [1 2; 3 4] [5 6; 7 8] = [19 22; 43 50], every value exact in bf16: a library that fails or differs (a build
// without the bf16 GEMM answers "unimplemented") is not used.
DnnlGemmBf16 probedBf16(DnnlGemmBf16 gemm) {
  if (!gemm || !cpuHasBf16()) return nullptr;
  uint16_t a[4], b[4];
  for (int i = 0; i < 4; ++i) {
    a[i] = BFloat16(static_cast<float>(i + 1)).bits;
    b[i] = BFloat16(static_cast<float>(i + 5)).bits;
  }
  float c[4] = {};
  if (gemm('N', 'N', 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2) != 0) return nullptr;
  return c[0] == 19 && c[1] == 22 && c[2] == 43 && c[3] == 50 ? gemm : nullptr;
}

const Library& library() {
  static Library lib;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string parts;
    if (void* dnnl = openFirst({"libdnnl.so.3", "libdnnl.so.2"})) {
      lib.dnnlSgemm = reinterpret_cast<DnnlSgemm>(dlsym(dnnl, "dnnl_sgemm"));
      lib.ompThreads = reinterpret_cast<SetThreads>(dlsym(dnnl, "omp_set_num_threads"));
      // oneDNN runs on OpenMP (libgomp), whose threads spin for a while after each region. smelt's own
      // pool then ran the kernels between products on a second set of threads: on 2 cores the two
      // sets either starved each other (spinning: MLP training step 117 ms on a busy machine) or
      // handed over through sleeps (passive: a 256x1024x1024 product 3.5 ms instead of 1.8). The
      // generated kernels now run on OpenMP's threads too.
      if (auto parallel = reinterpret_cast<ThreadPool::OpenMpParallel>(dlsym(dnnl, "GOMP_parallel"))) {
        ThreadPool::runOnOpenMp(parallel);
      }
      lib.dnnlGemmBf16 = probedBf16(reinterpret_cast<DnnlGemmBf16>(dlsym(dnnl, "dnnl_gemm_bf16bf16f32")));
      if (lib.dnnlSgemm) parts = lib.dnnlGemmBf16 ? "oneDNN (f32, bf16)" : "oneDNN (f32)";
    }
    if (void* openblas = openFirst({"libopenblas.so.0", "libopenblas.so"})) {
      lib.sgemm = reinterpret_cast<CblasSgemm>(dlsym(openblas, "cblas_sgemm"));
      lib.dgemm = reinterpret_cast<CblasDgemm>(dlsym(openblas, "cblas_dgemm"));
      lib.somatcopy = reinterpret_cast<Somatcopy>(dlsym(openblas, "cblas_somatcopy"));
      lib.openblasThreads = reinterpret_cast<SetThreads>(dlsym(openblas, "openblas_set_num_threads"));
      using Config = char* (*)();
      auto config = reinterpret_cast<Config>(dlsym(openblas, "openblas_get_config"));
      if (lib.dgemm) {
        parts += (parts.empty() ? "" : ", ") + std::string(config ? config() : "OpenBLAS") +
                 (lib.dnnlSgemm ? " (f64)" : " (f32, f64)");
      }
    }
    if (!parts.empty()) lib.description = parts;
  });
  return lib;
}

}  // namespace

bool available(DType dtype) {
  const Library& lib = library();
  if (dtype == DType::f32) return lib.dnnlSgemm || lib.sgemm;
  if (dtype == DType::f64) return lib.dgemm != nullptr;
  if (dtype == DType::bf16) return lib.dnnlGemmBf16 != nullptr;
  return false;
}

bool onednn() { return library().dnnlSgemm != nullptr; }

void transpose(const float* a, int64_t rows, int64_t cols, float* t, int64_t ldt) {
  if (const Library& lib = library(); lib.somatcopy) {
    auto i = [](int64_t v) { return static_cast<int>(v); };
    lib.somatcopy(kRowMajor, kTrans, i(rows), i(cols), 1.0f, a, i(cols), t, i(ldt));
    return;
  }
  constexpr int64_t kTile = 16;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      for (int64_t c = c0; c < std::min(cols, c0 + kTile); ++c) {
        for (int64_t r = r0; r < std::min(rows, r0 + kTile); ++r) t[c * ldt + r] = a[r * cols + c];
      }
    }
  }
}

void gemm(DType dtype, bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha, const void* a,
          int64_t lda, const void* b, int64_t ldb, void* c, int64_t ldc) {
  const Library& lib = library();
  if (dtype == DType::bf16) {
    // oneDNN's f32 result in a per-thread buffer, then rounded (to nearest even) into C.
    thread_local std::vector<float> wide;
    wide.resize(static_cast<size_t>(m * n));
    gemmBf16ToF32(transA, transB, m, n, k, alpha, a, lda, b, ldb, wide.data(), n);
    auto* out = static_cast<uint16_t*>(c);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) out[i * ldc + j] = BFloat16::fromFloat(wide[static_cast<size_t>(i * n + j)]);
    }
    return;
  }
  if (dtype == DType::f32 && lib.dnnlSgemm) {
    // A small product runs on the calling thread alone: waking OpenMP's sleeping threads costs more
    // than it saves (a 64x64x64 product: 4 us alone, 5-12 us with the second thread woken). So does every
    // product while another process holds a core (ThreadPool::contended): OpenMP's team would wait for it.
    int threads = lib.threads.load();
    bool alone = (m * n * k <= kSmallProduct || ThreadPool::global().contended()) && lib.ompThreads && threads > 1;
    if (alone) lib.ompThreads(1);
    lib.dnnlSgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', m, n, k, static_cast<float>(alpha),
                  static_cast<const float*>(a), lda, static_cast<const float*>(b), ldb, 0.0f, static_cast<float*>(c),
                  ldc);
    if (alone) lib.ompThreads(threads);
    return;
  }
  int ta = transA ? kTrans : kNoTrans, tb = transB ? kTrans : kNoTrans;
  auto i = [](int64_t v) { return static_cast<int>(v); };
  if (dtype == DType::f32) {
    lib.sgemm(kRowMajor, ta, tb, i(m), i(n), i(k), static_cast<float>(alpha), static_cast<const float*>(a), i(lda),
              static_cast<const float*>(b), i(ldb), 0.0f, static_cast<float*>(c), i(ldc));
  } else {
    lib.dgemm(kRowMajor, ta, tb, i(m), i(n), i(k), alpha, static_cast<const double*>(a), i(lda),
              static_cast<const double*>(b), i(ldb), 0.0, static_cast<double*>(c), i(ldc));
  }
}

void gemmBf16ToF32(bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha, const void* a,
                   int64_t lda, const void* b, int64_t ldb, float* c, int64_t ldc) {
  library().dnnlGemmBf16(transA ? 'T' : 'N', transB ? 'T' : 'N', m, n, k, static_cast<float>(alpha),
                         static_cast<const uint16_t*>(a), lda, static_cast<const uint16_t*>(b), ldb, 0.0f, c, ldc);
}

void setThreads(int threads) {
  const Library& lib = library();
  lib.threads = threads;
  if (lib.openblasThreads) lib.openblasThreads(threads);
  if (lib.ompThreads) lib.ompThreads(threads);
}

const char* description() { return library().description.c_str(); }

}  // namespace smelt::blas
