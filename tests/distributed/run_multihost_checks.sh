#!/bin/bash
# Data-parallel training across hosts (ctest distributed/hosts): ranks in separate network namespaces joined by
# veth pairs (scripts/netns_hosts.sh), mpirun launching them as it would over ssh and the ranks talking TCP
# through the hosts' interfaces. Usage: run_multihost_checks.sh PATH/TO/smelt_dp_check
# Exits 77 (ctest: skipped) where namespaces cannot be made (not root, or no CAP_NET_ADMIN).
set -u
check=$1
hosts=$(cd "$(dirname "$0")/../../scripts" && pwd)/netns_hosts.sh
if ! ip netns add smelt-probe 2>/dev/null; then
  echo "skipped: cannot create network namespaces here (needs root with CAP_NET_ADMIN)"
  exit 77
fi
ip netns del smelt-probe
trap 'bash "$hosts" down' EXIT
bash "$hosts" up 2 || exit 1
fail=0
bytes() { cat /sys/class/net/smelt-v"$1"/statistics/rx_bytes; }

# One rank per host, then two per host (the pairs on one host talk TCP over its own interface too).
for placement in 10.231.0.2:1,10.231.0.3:1 10.231.0.2:2,10.231.0.3:2; do
  n=$(tr ',' '\n' <<<"$placement" | awk -F: '{n += $2} END {print n}')
  # Each host runs its share of the ranks, under its own host name.
  names=$(bash "$hosts" mpirun -np "$n" --host "$placement" hostname 2>&1 | sort | uniq -c | awk '{print $2 "x" $1}' | paste -sd' ')
  echo "ranks on: $names"
  [ "$names" = "smelt-h1x$((n / 2)) smelt-h2x$((n / 2))" ] || { echo "FAIL: ranks placed on '$names'"; fail=1; }
  before=$(bytes 1)
  out=$(bash "$hosts" mpirun -np "$n" --host "$placement" "$check" equal 2>&1)
  rc=$?
  sent=$(($(bytes 1) - before))
  echo "$out"
  echo "host 10.231.0.2 sent $sent bytes over its link"
  [ $rc -eq 0 ] && [ "$(grep -c ': ok ' <<<"$out")" -eq $((6 * n)) ] || { echo "FAIL: equal on $placement (rc $rc)"; fail=1; }
  # The gradients crossed the link, not shared memory (three models' three steps: about 125 KB from each
  # host; MPI's start-up alone sends a few KB).
  [ "$sent" -gt 50000 ] || { echo "FAIL: only $sent bytes crossed host 10.231.0.2's link"; fail=1; }
done

# A rank on the other host that stops answering: rank 0 names it within the timeout.
start=$(date +%s)
out=$(SMELT_COLLECTIVE_TIMEOUT=3 bash "$hosts" mpirun -x SMELT_COLLECTIVE_TIMEOUT -np 2 --host 10.231.0.2:1,10.231.0.3:1 \
  "$check" stuck 2>&1)
rc=$?
took=$(($(date +%s) - start))
echo "$out" | grep "rank 0"
grep -q "rank 0: ok a rank that stops answering" <<<"$out" && [ "$took" -lt 30 ] || {
  echo "FAIL: stuck (rc $rc, ${took} s)"
  fail=1
}
echo "the stuck rank's job ended in ${took} s"
[ $fail -eq 0 ] && echo "data-parallel checks across hosts passed"
exit $fail
