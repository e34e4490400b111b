#!/usr/bin/env bash
# Installs the build in $1 into a temporary prefix and builds and runs tests/package/consumer against
# it: find_package(smelt), smelt::smelt and <smelt/smelt.h> are all an outside project needs. Also
# builds and runs the complete program of docs/getting_started.md as the page shows it, and the C API's
# C99 test program.
set -euo pipefail
build=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
test -f "$work/prefix/include/smelt/smelt.h"
test -f "$work/prefix/include/smelt/c_api.h"
test -x "$work/prefix/bin/smelt"
# No public header may reach LLVM, ONNX or protobuf.
if grep -rlE '#include [<"](llvm|onnx|google/protobuf)' "$work/prefix/include/smelt"; then
  echo "FAIL: a public header includes LLVM, ONNX or protobuf"; exit 1
fi
# The complete program of docs/getting_started.md, exactly as the page shows it (the ```cpp block after
# its `<!-- program: getting_started.cpp -->` marker): it must build and run as written.
awk '/<!-- program: getting_started.cpp -->/ {found = 1; next} found && /^```cpp/ {inside = 1; next}
     inside && /^```/ {exit} inside {print}' "$here/../../docs/getting_started.md" > "$work/getting_started.cpp"
test -s "$work/getting_started.cpp" || { echo "FAIL: no program found in docs/getting_started.md"; exit 1; }
cmake -S "$here/consumer" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release \
  -DGETTING_STARTED="$work/getting_started.cpp" -DC_API_TEST="$here/../c_api/test_c_api.c" > "$work/configure.log"
cmake --build "$work/consumer" > "$work/build.log" || { cat "$work/build.log"; exit 1; }
(cd "$work" && "$work/consumer/consumer")
(cd "$work" && "$work/consumer/getting_started") | tee "$work/getting_started.log"
grep -q '^test accuracy: ' "$work/getting_started.log"
grep -q '^restored ' "$work/getting_started.log"
# The C API from C, against the installed header and library.
(cd "$work" && "$work/consumer/c_api_test" cpu)
