#!/usr/bin/env bash
# Builds and runs the C# program of docs/c_api.md (the ```csharp block after its `<!-- program:
# c_api.cs -->` marker) exactly as the page shows it, with Mono (mcs, mono), against libsmelt.so in $1:
# P/Invoke into the C API on a model whose output is each row's sum (4 rows of 784 halves: 392).
set -euo pipefail
library_dir=$(cd "$(dirname "$1")" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
awk '/<!-- program: c_api.cs -->/ {found = 1; next} found && /^```csharp/ {inside = 1; next}
     inside && /^```/ {exit} inside {print}' "$here/../../docs/c_api.md" > "$work/app.cs"
test -s "$work/app.cs" || { echo "FAIL: no C# program found in docs/c_api.md"; exit 1; }
cat > "$work/rows.ir" <<'IR'
graph @rows(%input: f32[N,784]) {
  %0 = reduce_sum(%input) {axes = [1], keepdims = 1} : f32[N,1]
  return sums = %0
}
IR
mcs -unsafe -out:"$work/app.exe" "$work/app.cs"
LD_LIBRARY_PATH="$library_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" mono "$work/app.exe" "$work/rows.ir" | tee "$work/out.txt"
grep -qx 'first logit 392' "$work/out.txt"
