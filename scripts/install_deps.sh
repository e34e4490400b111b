#!/usr/bin/env bash
# Installs everything smelt needs on Debian 12 (run as root). Safe to run again.
set -euo pipefail
packages=(
  build-essential cmake ninja-build git
  ccache                                   # scripts/test.sh: the build without LLVM reuses the main build's objects
  llvm-16-dev                              # CPU JIT backend (codegen issue)
  libzstd-dev                              # LLVM's static libraries need it (SMELT_LLVM_STATIC: the ThreadSanitizer build)
  libfmt-dev libspdlog-dev doctest-dev libcli11-dev nlohmann-json3-dev
  clang-14 libclang-rt-14-dev              # the sanitizer build and its libFuzzer targets (scripts/test.sh)
  libxxhash-dev                            # kernel cache keys and entry checksums (codegen/cache)
  libdnnl2 libopenblas0                    # f32 (oneDNN) and f64 (OpenBLAS) products on the CPU, loaded with dlopen
  libclblast1                              # f32/f64 products on the opencl backend (CLBlast), loaded with dlopen
  libonnx-dev libprotobuf-dev protobuf-compiler   # ONNX import
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo   # OpenCL backend on the CPU (PoCL)
  libamdhip64-dev libamd-comgr2            # HIPRTC (hiprtc.h; comgr is dlopen'ed by libamdhip64) for the HIP backend
  python3-numpy python3-onnx python3-torch python3-torchvision   # conformance data and PyTorch checks
  mono-mcs                                 # the C API's C# (P/Invoke) program of docs/c_api.md, run by ctest
  python3-venv                             # virtualenvs: onnxruntime for the ONNX export test, the benchmarks' peers
  libopenmpi-dev openmpi-bin               # data-parallel training across processes and hosts (runtime/distributed)
  iproute2                                 # ip and tc: test hosts in network namespaces (scripts/netns_hosts.sh)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
