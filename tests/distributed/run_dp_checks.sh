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
  [ $rc -eq 0 ] && [ "$(grep -c ': ok ' <<<"$out")" -eq $((5 * n)) ] || { echo "FAIL: equal on $n ranks (rc $rc)"; fail=1; }
done
out=$("${mpi[@]}" -np 2 "$check" mismatch 2>&1); rc=$?
echo "$out"
[ $rc -eq 0 ] && [ "$(grep -c ': ok ' <<<"$out")" -eq 2 ] || { echo "FAIL: mismatch (rc $rc)"; fail=1; }
start=$(date +%s)
out=$(SMELT_COLLECTIVE_TIMEOUT=3 "${mpi[@]}" -np 2 "$check" stuck 2>&1); rc=$?
took=$(( $(date +%s) - start ))
echo "$out" | grep "rank 0"
grep -q "rank 0: ok a rank that stops answering" <<<"$out" && [ "$took" -lt 30 ] || { echo "FAIL: stuck (rc $rc, ${took} s)"; fail=1; }
echo "the stuck rank's job ended in ${took} s"
[ $fail -eq 0 ] && echo "data-parallel checks passed"
exit $fail
