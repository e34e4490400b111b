#!/usr/bin/env bash
# Writes fuzz/dictionaries/onnx.dict from the importer's sources: the op types it converts, the attribute
# names it reads, and the string values ONNX defines for them. Rerun after adding a converter.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=fuzz/dictionaries/onnx.dict
{
  echo "# ONNX words for fuzz_onnx (libFuzzer dictionary format): the op types the importer converts and the"
  echo "# attribute names and string values it reads, as they appear inside a serialized ModelProto."
  echo "# Written by fuzz/dictionaries/make_onnx_dict.sh."
  grep -rhoE '"[A-Z][A-Za-z0-9]+"' frontend/onnx/onnx_ops_*.cpp frontend/onnx/onnx_volume.cpp \
    frontend/onnx/onnx_import.cpp | sort -u
  grep -rhoE '(attr[A-Za-z]*|getInt|getInts|getFloat|getFloats|getString|intAttr|floatAttr|stringAttr|intsAttr)\([^")]*"[a-z_]+"' \
    frontend/onnx/*.cpp | grep -oE '"[a-z_]+"' | sort -u
  for v in half_pixel align_corners asymmetric pytorch_half_pixel tf_crop_and_resize linear nearest cubic \
      round_prefer_floor round_prefer_ceil floor ceil forward reverse bidirectional NOTSET SAME_UPPER SAME_LOWER \
      VALID DCR CRD; do
    echo "\"$v\""
  done
} | awk '/^#/ || !seen[$0]++' > "$out"
echo "wrote $out ($(grep -c '^"' "$out") words)"
