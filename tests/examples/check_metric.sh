#!/usr/bin/env bash
# Runs an example and checks one figure it prints: check_metric.sh PATTERN OP LIMIT -- COMMAND...
# PATTERN is an extended regex whose first group is the number (from the last matching line); OP is
# "<" or ">=".
set -euo pipefail
pattern=$1 op=$2 limit=$3
shift 4
out=$("$@")
echo "$out"
line=$(grep -E "$pattern" <<<"$out" | tail -n 1) || { echo "FAIL: no line matches '$pattern'"; exit 1; }
[[ $line =~ $pattern ]] || { echo "FAIL: '$line'"; exit 1; }
value=${BASH_REMATCH[1]}
awk -v v="$value" -v l="$limit" -v op="$op" 'BEGIN { exit !((op == "<") ? (v < l) : (v >= l)) }' ||
  { echo "FAIL: $value is not $op $limit"; exit 1; }
echo "ok: $value $op $limit"
