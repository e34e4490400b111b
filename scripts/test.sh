#!/usr/bin/env bash
# The README's second command (and CI's): installs what is needed, builds, and runs every test, then
# builds the tests again with AddressSanitizer + UndefinedBehaviorSanitizer and runs them too, and
# last the runtime's tests (devices, pools, recovery, 64 threads at once) with ThreadSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
jobs=$(nproc)
export POCL_CACHE_DIR=${POCL_CACHE_DIR:-$PWD/build/pocl-cache}
# Compiled kernels go to a cache inside the checkout, not the user's ~/.cache/smelt.
export SMELT_CACHE_DIR=${SMELT_CACHE_DIR:-$PWD/build/kernel-cache}

# ctest's doctest discovery splits test names at ';' and the pieces then match no test (a silent pass).
if grep -rnE 'TEST_CASE\("[^"]*;' tests/; then echo "test names must not contain ';'"; exit 1; fi
# An unbalanced '[' stops CMake from splitting the discovered list: every later case of the binary
# then merges into one unrunnable name.
if grep -rnE 'TEST_CASE\("[^"]*\[[^]"]*"' tests/; then echo "test names must not hold an unbalanced '['"; exit 1; fi

# Every build here is a unity build: CMake compiles the sources of a target eight to a file, so the
# standard library's, fmt's and the IR's headers are parsed, and their templates instantiated and
# optimized, once per eight sources instead of once per source: runtime/exec's eight files compile in
# 16 s instead of 47 (GCC, -O2), 35 s instead of 64 (clang, ASan+UBSan) (docs/testing.md). (A file's
# file-local names must therefore differ from its batch neighbours': a clash fails the build here.)
unity=(-DCMAKE_UNITY_BUILD=ON)

echo "== build (RelWithDebInfo) and test ($(date +%T))"
# Line tables only (-g1, as the sanitizer builds below): full debug info nearly doubled the compile
# time of a file (ir/ops/conv.cpp: 7.7 s at -O2 -g, 4.5 s at -O2 -g1), and the tests need file:line
# in a backtrace, not variables. The optimization level is the main job's (-O2).
# onnx/conformance_opencl runs every third model (its PoCL compiles are 3.5 minutes of CPU whole);
# the other backends run the suite whole, and the OpenCL per-op sweep every op in every dtype.
# The tests' own sources compile at -O1 (SMELT_TEST_CODE_FLAGS, CMakeLists.txt): 18 s instead of 26 for
# tests/nn's first unity file; the library they test is built as configured.
# Its objects go through ccache (build/ccache): the build without LLVM below takes most of them from
# there (43 of its 49 files; 65 s instead of about 4 minutes). Paths are hashed relative to the
# checkout and the build directory is left out of the hash, so that build/ and build-nollvm/ share.
export CCACHE_DIR=${CCACHE_DIR:-$PWD/build/ccache} CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
main_flags=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
  -DSMELT_TEST_CODE_FLAGS=-O1 -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache "${unity[@]}")
bash scripts/build.sh build "${main_flags[@]}" -DSMELT_CONFORMANCE_OPENCL_EVERY=3
# The suites that need Debian's python3-onnx/python3-torch (or Mono, for the C API's C#) must be
# registered, never silently absent.
# (The list is read whole first: grep -q closing a pipe early would fail the pipeline under pipefail.)
registered=$(cd build && ctest -N)
for required in onnx/conformance onnx/conformance_llvm onnx/conformance_opencl models/pytorch_exports \
    models/pytorch_exports_llvm models/pytorch_exports_opencl models/pytorch_gradients models/pytorch_gradients_llvm \
    models/pytorch_gradients_opencl models/memory_plan cli/smelt examples/train_digits examples/train_digits_opencl \
    package/find_package c_api/c c_api/c_opencl c_api/python_ctypes c_api/csharp onnx/export_onnxruntime \
    onnx/ops_onnxruntime onnx/export_every_op onnx/composed_torch models/torch_layers models/torchvision_onnx distributed/mpi examples/train_digits_mpi \
    examples/train_digits_bf16 examples/train_digits_f16; do
  grep -q ": $required\$" <<<"$registered" || { echo "test $required is not registered"; exit 1; }
done
(cd build && ctest --output-on-failure -j "$jobs")

# The sanitizer builds compile at -O1 with line tables only (-g1): half the compile time of -O2 -g
# (15 s -> 7 s for one op file under ASan), which CI's budget needs; -O1 is what the sanitizers'
# authors recommend, and -g1 keeps file:line in their reports.
# The tests' and fuzz targets' own sources at -O0 (but those whose own code is their time:
# smelt_hot_test_code in tests/CMakeLists.txt): with ASan+UBSan a test file compiles 3 times as fast
# (41 s -> 13 s for ir/ops' largest unity file at -O1 vs -O0).
sanitizer_flags=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"
  -DSMELT_TEST_CODE_FLAGS=-O0)

echo "== build with ASan+UBSan (clang 14, with the libFuzzer targets) and test ($(date +%T))"
# The examples are not built there: their training runs take minutes under the sanitizers, and
# tests/nn trains and checkpoints through the same model API. Clang, so that the same build holds the
# fuzz targets (fuzz/: every parser, run for SMELT_FUZZ_SECONDS each, and every crash reproducer found
# so far): their libraries need libFuzzer's coverage instrumentation, and a second build would not
# fit CI's budget.
# Each fuzz target's smoke run lasts 8 s here (15 by default): seven of them are a minute of CI's two
# cores, and the hour-long runs are documented (docs/testing.md). The libraries go without libFuzzer's
# coverage instrumentation here (SMELT_FUZZ_COVERAGE=OFF): a smoke run replays the corpus and every crash
# reproducer and barely explores, and the instrumentation cost a fifth of this build's compile time
# (compiled_graph.cpp: 21 s with it, 17 s without). The hour-long runs use a build with it.
CC=clang-14 CXX=clang++-14 bash scripts/build.sh build-asan -DSMELT_SANITIZE=ON -DSMELT_FUZZ=ON -DSMELT_FUZZ_SECONDS=8 \
  -DSMELT_FUZZ_COVERAGE=OFF -DSMELT_BUILD_EXAMPLES=OFF -DSMELT_BUILD_BENCHMARKS=OFF "${sanitizer_flags[@]}" "${unity[@]}"
# The suites that only compare numbers over large sets of graphs through external compilers (PoCL,
# NVRTC, HIPRTC) or repeat the reference suites on another backend ran above; under the sanitizers they
# would add minutes without exercising any smelt code the other tests do not (CI's 30-minute budget).
# The package test builds an outside project, which would need the sanitizers' flags too. The
# benchmarks' smoke test drives `smelt bench` from Python (a minute under the sanitizers); the main
# build runs it.
# The per-op sweeps (every op's example on a backend, or with a symbolic batch) compile hundreds of
# programs and run the same code paths as the smaller tests; the main build runs them. The soak runs
# on the CPU there (leaks are what the sanitizer adds), its PoCL variants in the main build.
sweeps="every op that takes symbols|every warp shuffle is a statement"
asan_skip="onnx/export_onnxruntime|onnx/ops_onnxruntime|onnx/export_every_op|models/torchvision_onnx|distributed/|soak/opencl|opencl backend, every op|opencl C of vectorized kernels|cuda backend: every op|NVRTC compiles the CUDA C|HIPRTC compiles the HIP|$sweeps|_llvm\$|_opencl\$|examples/|package/find_package|benchmarks/smoke"
# intercept_tls_get_addr=0: GCC 12's sanitizer runtime predates LLVM's fix D147459; with it on, the
# leak checker's tracer crashed at exit (signal 11) whenever a libgomp worker thread existed (libgomp
# is dlopen'ed with oneDNN, so its TLS is dynamic): the test body had passed.
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:intercept_tls_get_addr=0 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -j "$jobs" -E "$asan_skip")

echo "== build what a GPU host builds: no LLVM, no ONNX, and run its tests ($(date +%T))"
# scripts/gpu_check.sh builds this configuration on GPU hosts, which have no LLVM: it must keep
# building (the CPU then runs graphs on the reference interpreter). With the main build's flags, so
# that ccache gives back every object whose preprocessed source LLVM's absence leaves unchanged.
source scripts/gpu_targets.sh
cmake -S . -B build-nollvm -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSMELT_WITH_LLVM=OFF -DSMELT_WITH_ONNX=OFF -DSMELT_BUILD_EXAMPLES=ON \
  "${main_flags[@]}"
cmake --build build-nollvm -j "$jobs" --target "${gpu_targets[@]}"
# ResNet-18's training on the reference interpreter (80 s of CPU there) is left to the main build: it
# trains through the same model API code.
(cd build-nollvm && ctest --output-on-failure -j "$jobs" -R '^(cli/smelt|nn/|runtime/|codegen/cuda|codegen/nvrtc)' \
  -E "$sweeps|resnet18 has torchvision")

echo "== build the runtime's tests with ThreadSanitizer and run them ($(date +%T))"
# Only tests/runtime: it is where smelt's threads meet (caches, pools, queues, the JIT, 64 threads
# compiling and running at once), and a whole second sanitizer build would not fit CI's budget. LLVM
# is linked statically there and ONNX is left out; tests/runtime/CMakeLists.txt says why.
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSMELT_TSAN=ON -DSMELT_LLVM_STATIC=ON \
  -DSMELT_WITH_ONNX=OFF -DSMELT_BUILD_EXAMPLES=OFF "${sanitizer_flags[@]}" "${unity[@]}"
cmake --build build-tsan -j "$jobs" --target smelt_runtime_tests
(cd build-tsan && ctest --output-on-failure -j "$jobs" -R '^runtime/' -E "$sweeps")
echo "== done ($(date +%T))"
