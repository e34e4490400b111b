#!/usr/bin/env bash
# Installs the build in $1 into a temporary prefix and builds and runs tests/package/consumer against
# it: find_package(smelt), smelt::smelt and <smelt/smelt.h> are all an outside project needs.
set -euo pipefail
build=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
test -f "$work/prefix/include/smelt/smelt.h"
test -x "$work/prefix/bin/smelt"
# No public header may reach LLVM, ONNX or protobuf.
if grep -rlE '#include [<"](llvm|onnx|google/protobuf)' "$work/prefix/include/smelt"; then
  echo "FAIL: a public header includes LLVM, ONNX or protobuf"; exit 1
fi
cmake -S "$here/consumer" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release > "$work/configure.log"
cmake --build "$work/consumer" > "$work/build.log" || { cat "$work/build.log"; exit 1; }
(cd "$work" && "$work/consumer/consumer")
