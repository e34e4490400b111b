#!/bin/bash
# Data-parallel training under Open MPI on this machine (ctest distributed/mpi): smelt_dp_check's modes on 2 and 4
# ranks (--oversubscribe: CI has two cores). Usage: run_dp_checks.sh PATH/TO/smelt_dp_check
set -u
check=$1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Shared memory between ranks of one machine; no network interfaces needed.
mpi=(mpirun --oversubscribe --mca btl self,vader)
fail=0
for n in 2 4; do
  out=$("${mpi[@]}" -np "$n" "$check" equal 2>&1); rc=$?
  echo "$out"
  [ $rc -eq 0 ] && [ "$(grep -c ': ok ' <<<"$out")" -eq $((6 * n)) ] || { echo "FAIL: equal on $n ranks (rc $rc)"; fail=1; }
done
out=$("${mpi[@]}" -np 2 "$check" mismatch 2>&1); rc=$?
echo "$out"
[ $rc -eq 0 ] && [ "$(grep -c ': ok ' <<<"$out")" -eq 2 ] || { echo "FAIL: mismatch (rc $rc)"; fail=1; }
# A job that goes wrong must end within 30 s, with the error it should have: MODE, the timeout, whether the job
# must exit non-zero ("fails": its ranks end with the error; "any": the checking rank reports ok and exits
# 0), and the extended regular expressions its output must match (every one given).
ends_with() {
  local mode=$1 timeout=$2 status=$3 start took out rc pattern
  shift 3
  start=$(date +%s)
  out=$(SMELT_COLLECTIVE_TIMEOUT=$timeout "${mpi[@]}" -np 2 "$check" "$mode" 2>&1); rc=$?
  took=$(( $(date +%s) - start ))
  [ "$status" != fails ] || [ $rc -ne 0 ] || { echo "FAIL: $mode: the job exited 0"; fail=1; }
  grep -E "$1" <<<"$out" | head -3
  for pattern in "$@"; do
    grep -qE "$pattern" <<<"$out" || { echo "FAIL: $mode: no line matches '$pattern'"; fail=1; }
  done
  [ "$took" -lt 30 ] || { echo "FAIL: $mode took ${took} s"; fail=1; }
  echo "$mode: the job ended in ${took} s"
}
# A rank that stops answering before a collective, then a rank 0 that does: the other names it.
ends_with stuck 3 any "rank 0: ok a rank that stops answering"
ends_with stuck0 3 any "rank 1: ok a rank 0 that stops answering"
# A rank killed mid-training: mpirun ends the job, naming it, long before the collective timeout would.
ends_with killed 20 fails "(rank 1 .*(signal|[Kk]illed))|(process rank 1)" "rank 1: dying"
# A rank stalled inside a collective after every rank arrived: the watchdogs end the job after the timeout.
ends_with stalled 3 fails "did not complete within 3 s although every rank had arrived"
[ $fail -eq 0 ] && echo "data-parallel checks passed"
exit $fail
