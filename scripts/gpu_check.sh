#!/usr/bin/env bash
# smelt's GPU check: one command on a CUDA host that has the driver, nvcc, PyTorch and NVIDIA's pip
# wheels but no LLVM and no package registry (the device tool's machines). It
#   1. unpacks the Debian packages carried in .debs/ (scripts/fetch_gpu_debs.sh) into a private prefix,
#   2. builds the CUDA configuration (-DSMELT_WITH_LLVM=OFF -DSMELT_WITH_ONNX=OFF) with ninja on all cores,
#   3. runs the CUDA and NVRTC tests, the runtime's (every device) and the model API's (training on
#      every device against the CPU) with SMELT_REQUIRE_GPU=1 (a missing driver, GPU or NVRTC fails
#      them instead of passing with a message), and train_digits --backend cuda (>= 97%),
#   4. times each benchmark workload on the GPU with `smelt bench --backend cuda --device-time`: kernel
#      time with device-resident inputs between CUDA events, and host-to-host time; and the model
#      API's training steps and small-layer latency (smelt_train_steps --device cuda), and the steps
#      with bf16 and f16 products (--precision; SMELT_GPU_CHECK_PRECISION=0 leaves these out),
#   5. times PyTorch eager and torch.compile on the same card (benchmarks/gpu/torch_gpu.py), and eager
#      under torch.autocast in bf16 and f16 (a GradScaler for f16),
# and prints a summary table last. Full logs go to $SMELT_GPU_LOG_DIR (default build-gpu/logs; give
# the device tool's $OUT to get them back); the summary (summary.md there) is what docs/gpu_check.md
# keeps and benchmarks/run_benchmarks.py puts in docs/BENCHMARKS.md's GPU section.
#   bash scripts/gpu_check.sh              # on the GPU host (device tool: carry [".debs"])
#   bash scripts/gpu_check.sh --dry-run    # here: everything up to the first call that needs a GPU
# The device tool brings back at most 8 files from $OUT: SMELT_GPU_ARCHIVE=$OUT/gpu_logs.tgz packs every
# log into that one file when the script ends, however it ends.
# SMELT_GPU_CHECK_ONLY=ew_chain,softmax_rows limits the workloads; SMELT_GPU_CHECK_SECONDS (default 3)
# is each measurement's time budget; SMELT_GPU_CHECK_DEADLINE (default 480 s) bounds the whole run:
# each step gets at most what is left (a step cut short is reported as such), so the summary always
# prints inside the device tool's 10 minutes.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dry_run=0
[ "${1:-}" = "--dry-run" ] && dry_run=1
build=${SMELT_GPU_BUILD_DIR:-$root/build-gpu}
logs=${SMELT_GPU_LOG_DIR:-$build/logs}
prefix=$build/prefix
seconds=${SMELT_GPU_CHECK_SECONDS:-3}
deadline=${SMELT_GPU_CHECK_DEADLINE:-480}
workloads=${SMELT_GPU_CHECK_ONLY:-ew_chain,softmax_rows,layernorm,gemm2048,gemm4096,linear_relu,mlp_train}
mkdir -p "$logs" "$build"
if [ -n "${SMELT_GPU_ARCHIVE:-}" ]; then
  trap 'tar czf "$SMELT_GPU_ARCHIVE" -C "$(dirname "$logs")" "$(basename "$logs")"' EXIT
fi
summary=$logs/summary.md
: >"$summary"
started=$(date +%s)
step() { echo "== $* (+$(($(date +%s) - started)) s)"; }
# A step's time limit: `want` seconds, or what is left before the deadline (20 s kept for the summary).
limit() {
  local left=$((deadline - 20 - ($(date +%s) - started)))
  [ "$left" -lt 5 ] && left=5
  [ "$1" -lt "$left" ] && echo "$1" || echo "$left"
}
die() { echo "gpu_check: $*" >&2; exit 1; }
failures=()

step "host"
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with local changes)')"
  echo "cores: $(nproc)"
  echo "compiler: $(${CXX:-c++} --version 2>/dev/null | head -1)"
  echo "cmake: $(cmake --version 2>/dev/null | head -1)"
  echo "nvcc: $(nvcc --version 2>/dev/null | tail -1)"
  echo "python3: $(python3 --version 2>&1)"
} | tee "$logs/host.txt"
command -v cmake >/dev/null || die "no cmake on PATH"
command -v ninja >/dev/null || die "no ninja on PATH"
command -v "${CXX:-c++}" >/dev/null || die "no C++ compiler (${CXX:-c++}) on PATH"

# NVIDIA's libraries where pip put them (nvidia-cublas, nvidia-cudnn-cu13, nvidia-nccl-cu13,
# nvidia-cuda-nvrtc) and under the CUDA toolkit: every folder holding one goes on LD_LIBRARY_PATH,
# so smelt's dlopen finds NVRTC, cuBLAS, cuDNN and NCCL wherever the host keeps them.
step "NVIDIA libraries"
site=$(python3 -c 'import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))' 2>/dev/null || true)
for pattern in 'libnvrtc.so*' 'libcublas.so*' 'libcublasLt.so*' 'libcudnn.so*' 'libnccl.so*'; do
  for dir in ${site:+$site/nvidia} /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$dir" ] || continue
    while IFS= read -r found; do
      echo "$pattern: $found"
    done < <(find -L "$dir" -maxdepth 4 -name "$pattern" 2>/dev/null | head -2)
  done
done | tee "$logs/libraries.txt"
while IFS= read -r line; do
  d=$(dirname "${line#*: }")
  case ":${LD_LIBRARY_PATH:-}:" in *":$d:"*) ;; *) LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ;; esac
done <"$logs/libraries.txt"
export LD_LIBRARY_PATH

step "Debian packages from .debs into $prefix"
ls .debs/*.deb >/dev/null 2>&1 || die "no .debs/*.deb: run scripts/fetch_gpu_debs.sh first (and carry .debs)"
rm -rf "$prefix" && mkdir -p "$prefix"
for deb in .debs/*.deb; do dpkg -x "$deb" "$prefix" || die "dpkg -x $deb failed"; done
export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

step "configure and build the CUDA configuration (no LLVM, no ONNX)"
# The dry run ignores /usr, where this machine has the same packages installed: the prefix alone must do.
ignore=()
[ "$dry_run" = 1 ] && ignore=(-DCMAKE_IGNORE_PREFIX_PATH=/usr)
# A unity build (as CI's no-LLVM stage, which builds the same targets): less of the lent GPU's time
# goes to compiling.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSMELT_WITH_LLVM=OFF -DSMELT_WITH_ONNX=OFF \
  -DCMAKE_UNITY_BUILD=ON -DSMELT_BUILD_EXAMPLES=ON -DCMAKE_PREFIX_PATH="$prefix/usr" "${ignore[@]}" >"$logs/configure.log" 2>&1 ||
  { tail -30 "$logs/configure.log"; die "configure failed (log: $logs/configure.log)"; }
grep "smelt: LLVM" "$logs/configure.log"
grep -q "CUDA(NVRTC headers)=TRUE" "$logs/configure.log" || die "CMake found no CUDA toolkit (nvcc, cuda.h)"
source scripts/gpu_targets.sh
cmake --build "$build" -j "$(nproc)" --target "${gpu_targets[@]}" >"$logs/build.log" 2>&1 ||
  { grep -E "error|FAILED" "$logs/build.log" | head -30; die "build failed (log: $logs/build.log)"; }
smelt=$build/bin/smelt

if [ "$dry_run" = 1 ]; then
  step "dry run: built; the next step is the first that needs a GPU"
  "$smelt" devices 2>&1 | tee "$logs/devices.txt"
  echo "dry run done in $(($(date +%s) - started)) s"
  exit 0
fi

# From here on the GPU is used.
step "GPU"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee "$logs/gpu.txt" ||
  die "nvidia-smi failed: no GPU or driver"
gpu=$(head -1 "$logs/gpu.txt")
"$smelt" devices 2>&1 | tee "$logs/devices.txt"

step "tests (SMELT_REQUIRE_GPU=1)"
export SMELT_CACHE_DIR=$build/kernel-cache
(cd "$build" && SMELT_REQUIRE_GPU=1 timeout "$(limit 240)" ctest -j "$(nproc)" --timeout 60 --output-on-failure \
  -R 'codegen/(cuda|nvrtc)|codegen/c-renderers: NVRTC|codegen/block kernels|codegen/vector kernels|codegen/device products|runtime/|nn/') >"$logs/tests.log" 2>&1
tests_rc=$?
grep -E "tests passed|tests failed|\*\*\*Failed|Timeout" "$logs/tests.log" | tail -20
[ $tests_rc = 0 ] || failures+=("tests (log: tests.log)")

step "the main job on the GPU: train_digits --backend cuda"
timeout "$(limit 120)" "$build/bin/train_digits" --backend cuda --checkpoint "$build/digits.safetensors" >"$logs/train_digits.log" 2>&1
digits=$(awk '/^test accuracy:/ {print $3}' "$logs/train_digits.log")
tail -3 "$logs/train_digits.log"
awk -v a="${digits:-0}" 'BEGIN { exit !(a >= 0.97) }' || failures+=("train_digits --backend cuda: ${digits:-no result}")

step "smelt on the GPU: smelt bench --backend cuda --device-time"
declare -A grad=([mlp_train]=w1,b1,w2,b2,w3,b3)
declare -A smelt_compile smelt_device smelt_host
IFS=, read -r -a names <<<"$workloads"
for w in "${names[@]}"; do
  file=benchmarks/workloads/$w.ir
  [ -f "$file" ] || file=benchmarks/gpu/$w.ir  # the GPU-only workloads
  args=(bench "$file" --backend cuda --device-time --max-seconds "$seconds" --runs 50)
  [ -n "${grad[$w]:-}" ] && args+=(--grad "${grad[$w]}")
  if timeout "$(limit 90)" "$smelt" "${args[@]}" >"$logs/smelt_$w.log" 2>&1; then
    smelt_compile[$w]=$(awk '/^compile_ms/ {print $2}' "$logs/smelt_$w.log")
    smelt_device[$w]=$(awk '/^device_median_ms/ {print $2}' "$logs/smelt_$w.log")
    smelt_host[$w]=$(awk '/^median_ms/ {print $2}' "$logs/smelt_$w.log")
    echo "$w: compile ${smelt_compile[$w]} ms, device ${smelt_device[$w]} ms, host-to-host ${smelt_host[$w]} ms"
  else
    echo "$w: FAILED: $(tail -1 "$logs/smelt_$w.log")"
    failures+=("smelt bench $w")
  fi
done

step "the model API on the GPU: smelt_train_steps --device cuda"
declare -A smelt_model smelt_host_us
if timeout "$(limit 150)" "$build/bin/smelt_train_steps" --device cuda --seconds "$seconds" >"$logs/smelt_model.log" 2>&1; then
  while read -r key value; do
    [ "$key" = workload ] && current=$value
    [ "$key" = median_ms ] && smelt_model[$current]=$value
    # The same step queued with runAsync on a batch already on the GPU: host time per call, and per step.
    [ "$key" = host_us ] && smelt_host_us[$current]=$value
    [ "$key" = async_ms ] && smelt_model[${current}_async]=$value
  done <"$logs/smelt_model.log"
  for w in "${!smelt_host_us[@]}"; do echo "$w queued (runAsync): ${smelt_host_us[$w]} us on the host per step"; done
  for w in "${!smelt_model[@]}"; do echo "$w: ${smelt_model[$w]} ms"; done
else
  echo "FAILED: $(tail -1 "$logs/smelt_model.log")"
  failures+=("smelt_train_steps --device cuda")
fi

# f32 convolutions run as im2col + cuBLAS; the same step runs on cuDNN with the algorithms it times
# fastest (SMELT_CUDNN=1).
for variant in cudnn:SMELT_CUDNN=1; do
  name=${variant%%:*} setting=${variant#*:}
  if timeout "$(limit 60)" env "$setting" "$build/bin/smelt_train_steps" --device cuda --only resnet18_train_step \
    --seconds "$seconds" >"$logs/smelt_model_$name.log" 2>&1; then
    smelt_model[resnet18_train_step_$name]=$(awk '$1 == "median_ms" {print $2}' "$logs/smelt_model_$name.log")
    echo "resnet18_train_step ($setting): ${smelt_model[resnet18_train_step_$name]} ms"
  else
    echo "resnet18_train_step with $setting: FAILED: $(tail -1 "$logs/smelt_model_$name.log")"
    failures+=("smelt_train_steps $setting")
  fi
done
# Mixed precision: the training steps with bf16 and f16 products and f32 master weights (f16 with dynamic
# loss scaling on the device), beside PyTorch's autocast below. SMELT_GPU_CHECK_PRECISION=0 leaves them out.
if [ "${SMELT_GPU_CHECK_PRECISION:-1}" != 0 ]; then
  for p in bf16 f16; do
    if timeout "$(limit 90)" "$build/bin/smelt_train_steps" --device cuda --precision "$p" --seconds "$seconds" \
      >"$logs/smelt_model_$p.log" 2>&1; then
      while read -r key value; do
        [ "$key" = workload ] && current=$value
        [ "$key" = median_ms ] && smelt_model[${current}_$p]=$value
      done <"$logs/smelt_model_$p.log"
      echo "$p: mlp_train_step ${smelt_model[mlp_train_step_$p]:-?} ms, resnet18_train_step ${smelt_model[resnet18_train_step_$p]:-?} ms"
    else
      echo "$p: FAILED: $(tail -1 "$logs/smelt_model_$p.log")"
      failures+=("smelt_train_steps --precision $p")
    fi
  done
fi
# Where ResNet-18's step spends its time (SMELT_PROFILE: every step between device events), for the logs.
timeout "$(limit 45)" env SMELT_PROFILE=1 "$build/bin/smelt_train_steps" --device cuda --only resnet18_train_step \
  --seconds 1 >"$logs/profile_resnet18.log" 2>&1 || true

step "PyTorch on the same card: eager, then torch.compile"
models=mlp_train_step,resnet18_train_step,tiny_latency
PYTHONUNBUFFERED=1 timeout "$(limit 150)" python3 benchmarks/gpu/torch_gpu.py --mode eager --only "copy_bandwidth,$workloads,$models" \
  --max-seconds "$seconds" --runs 50 >"$logs/torch_eager.log" 2>&1 || failures+=("torch eager (log: torch_eager.log)")
if [ "${SMELT_GPU_CHECK_PRECISION:-1}" != 0 ]; then
  for p in bf16 f16; do
    PYTHONUNBUFFERED=1 timeout "$(limit 90)" python3 benchmarks/gpu/torch_gpu.py --mode eager --autocast "$p" \
      --only mlp_train_step,resnet18_train_step --max-seconds "$seconds" --runs 50 >"$logs/torch_autocast_$p.log" 2>&1 ||
      failures+=("torch autocast $p (log: torch_autocast_$p.log)")
  done
fi
# torch.compile of ResNet-18's training step takes a minute or more on its own (the whole check took
# 201 s without it): SMELT_GPU_CHECK_COMPILE_RESNET=0 leaves it out.
compiled_models=$models
[ "${SMELT_GPU_CHECK_COMPILE_RESNET:-1}" = 0 ] && compiled_models=mlp_train_step,tiny_latency
PYTHONUNBUFFERED=1 timeout "$(limit 240)" python3 benchmarks/gpu/torch_gpu.py --mode compile --only "$workloads,$compiled_models" \
  --max-seconds "$seconds" --runs 50 >"$logs/torch_compile.log" 2>&1 || failures+=("torch.compile (log: torch_compile.log)")
figure() { awk -v k="$2" '$1 == k {print $2}' "$logs/$1" 2>/dev/null; }

# The GPU-kernels issue's targets from the figures above: a memory-bound kernel's bandwidth (the
# fewest bytes it must move: its input read once, its output written once) against the card's copy
# bandwidth, and the training steps against torch.compile's.
targets() {
  local copy
  copy=$(awk -F'[: ]' '$1 == "copy_bandwidth" && $2 == "GBps" {print $3}' "$logs/torch_eager.log" 2>/dev/null)
  echo "### Targets of the GPU-kernels issue"
  echo
  echo "Device-to-device copy (PyTorch, 1 GiB f32, read + write): ${copy:-not measured} GB/s."
  echo
  echo "| target | measured | status |"
  echo "|---|---|---|"
  share() {  # name, bytes, wanted fraction
    local ms=${smelt_device[$1]:-}
    if [ -z "$ms" ] || [ -z "$copy" ]; then echo "| $1: at least $3 of the copy bandwidth | not measured | NOT MET (not measured) |"; return; fi
    awk -v n="$1" -v b="$2" -v ms="$ms" -v c="$copy" -v want="$3" 'BEGIN {
      gbps = b / (ms * 1e6); f = gbps / c
      printf "| %s: at least %d%% of the copy bandwidth | %.3f ms, %.0f GB/s, %.0f%% | %s |\n", n, want * 100, ms, gbps, f * 100, (f >= want ? "met" : "NOT MET") }'
  }
  share ew_chain 134217728 0.85
  share softmax_rows 134217728 0.80
  share layernorm 67117056 0.80
  ratio() {  # name, torch.compile figure, wanted ratio
    local ms=${smelt_model[$1]:-} theirs
    theirs=$(figure torch_compile.log "$1:host")
    if [ -z "$ms" ] || [ -z "$theirs" ]; then echo "| $1: at least ${3}x torch.compile | not measured | NOT MET (not measured) |"; return; fi
    awk -v n="$1" -v ms="$ms" -v t="$theirs" -v want="$3" 'BEGIN {
      r = t / ms; printf "| %s: at least %sx torch.compile | %.3f ms vs %.3f ms, x%.2f | %s |\n", n, want, ms, t, r, (r >= want ? "met" : "NOT MET") }'
  }
  ratio mlp_train_step "" 1.2
  ratio resnet18_train_step "" 1.0
  local ours=${smelt_device[gemm4096]:-} theirs
  theirs=$(figure torch_eager.log "gemm4096:device")
  if [ -z "$ours" ] || [ -z "$theirs" ]; then
    echo "| gemm 4096^3 within 5% of torch.matmul | not measured | NOT MET (not measured) |"
  else
    awk -v o="$ours" -v t="$theirs" 'BEGIN {
      printf "| gemm 4096^3 within 5%% of torch.matmul | %.3f ms vs %.3f ms, x%.3f | %s |\n", o, t, o / t, (o <= 1.05 * t ? "met" : "NOT MET") }'
  fi
  # The host time of a queued training step (TrainStep::runAsync, replayed as one CUDA graph): the larger of
  # the MLP's (few kernels) and ResNet-18's (hundreds).
  local mlp=${smelt_host_us[mlp_train_step]:-} resnet=${smelt_host_us[resnet18_train_step]:-}
  if [ -z "$mlp" ] || [ -z "$resnet" ]; then
    echo "| host time per replayed training step at most 10 us | not measured | NOT MET (not measured) |"
  else
    awk -v m="$mlp" -v r="$resnet" 'BEGIN { worst = m > r ? m : r
      printf "| host time per replayed training step at most 10 us | mlp_train_step %.1f us, resnet18_train_step %.1f us | %s |\n", m, r, (worst <= 10 ? "met" : "NOT MET") }'
  fi
}

step "summary"
{
  echo "GPU: $gpu; $(sed -n 1p "$logs/host.txt"); $(sed -n 2p "$logs/host.txt")"
  echo "$(head -1 "$logs/torch_eager.log" 2>/dev/null)"
  echo
  echo "| workload | smelt compile ms | smelt device ms | torch eager device ms | torch.compile device ms | smelt host-to-host ms | torch eager host-to-host ms | torch.compile compile ms |"
  echo "|---|---|---|---|---|---|---|---|"
  for w in "${names[@]}"; do
    echo "| $w | ${smelt_compile[$w]:--} | ${smelt_device[$w]:--} | $(figure torch_eager.log "$w:device") | $(figure torch_compile.log "$w:device") | ${smelt_host[$w]:--} | $(figure torch_eager.log "$w:host") | $(figure torch_compile.log "$w:compile") |"
  done
  echo
  echo "| model API workload | smelt ms | torch eager ms | torch.compile ms | torch.compile compile ms |"
  echo "|---|---|---|---|---|"
  for w in mlp_train_step resnet18_train_step tiny_latency; do
    echo "| $w | ${smelt_model[$w]:--} | $(figure torch_eager.log "$w:host") | $(figure torch_compile.log "$w:host") | $(figure torch_compile.log "$w:compile") |"
  done
  echo "| resnet18_train_step on cuDNN, timed algorithms (SMELT_CUDNN=1) | ${smelt_model[resnet18_train_step_cudnn]:--} | | | |"
  if [ "${SMELT_GPU_CHECK_PRECISION:-1}" != 0 ]; then
    echo
    echo "| mixed precision (f32 masters) | smelt ms | torch eager autocast ms | smelt f32 ms |"
    echo "|---|---|---|---|"
    for p in bf16 f16; do
      for w in mlp_train_step resnet18_train_step; do
        echo "| $w, $p | ${smelt_model[${w}_$p]:--} | $(figure "torch_autocast_$p.log" "${w}_$p:host") | ${smelt_model[$w]:--} |"
      done
    done
  fi
  grep -h ":error" "$logs"/torch_*.log 2>/dev/null | sed 's/^/torch: /'
  echo
  targets
  echo
  echo "train_digits --backend cuda: test accuracy ${digits:-none}"
  echo "tests: $(grep -E 'tests passed' "$logs/tests.log" | tail -1)"
  if [ ${#failures[@]} -gt 0 ]; then echo "FAILED: ${failures[*]}"; else echo "all steps passed"; fi
  echo "took $(($(date +%s) - started)) s; logs in $logs"
} | tee "$summary"
[ ${#failures[@]} = 0 ]
