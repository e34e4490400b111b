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
start=$(date +%s)
out=$(SMELT_COLLECTIVE_TIMEOUT=3 "${mpi[@]}" -np 2 "$check" stuck0 2>&1); rc=$?
took=$(( $(date +%s) - start ))
echo "$out" | grep "rank 1"
grep -q "rank 1: ok a rank 0 that stops answering" <<<"$out" && [ "$took" -lt 30 ] || { echo "FAIL: stuck0 (rc $rc, ${took} s)"; fail=1; }
echo "the job whose rank 0 stopped ended in ${took} s"
# A rank killed mid-training: mpirun ends the job, naming it, long before the collective timeout would.
start=$(date +%s)
out=$(SMELT_COLLECTIVE_TIMEOUT=20 "${mpi[@]}" -np 2 "$check" killed 2>&1); rc=$?
took=$(( $(date +%s) - start ))
echo "$out" | grep -iE "rank 1|signal|killed" | head -5
[ $rc -ne 0 ] && grep -q "rank 1: dying" <<<"$out" && grep -qiE "rank 1 .*(signal|killed)|process rank 1" <<<"$out" && \
  [ "$took" -lt 30 ] || { echo "FAIL: killed (rc $rc, ${took} s)"; fail=1; }
echo "the job with a killed rank ended in ${took} s"
# A rank stalled inside a collective after every rank arrived: the watchdogs end the job after the timeout.
start=$(date +%s)
out=$(SMELT_COLLECTIVE_TIMEOUT=3 "${mpi[@]}" -np 2 "$check" stalled 2>&1); rc=$?
took=$(( $(date +%s) - start ))
echo "$out" | grep "did not complete" | head -2
[ $rc -ne 0 ] && grep -q "did not complete within 3 s although every rank had arrived" <<<"$out" && \
  [ "$took" -lt 30 ] || { echo "FAIL: stalled (rc $rc, ${took} s)"; fail=1; }
echo "the job with a stalled collective ended in ${took} s"
[ $fail -eq 0 ] && echo "data-parallel checks passed"
exit $fail
