#!/usr/bin/env bash
# Test hosts on this machine: network namespaces joined by veth pairs to one bridge, so that MPI ranks in
# different namespaces talk over TCP through real network interfaces (what ranks on several machines do),
# optionally behind a link slowed with tc (a token bucket on each host's interface, both directions).
#
#   netns_hosts.sh up N [RATE]   hosts smelt-h1..smelt-hN at 10.231.0.2..N+1 (this namespace: 10.231.0.1 on
#                                the bridge smelt-br0); RATE (tc's units, e.g. 1gbit) limits each host's link
#   netns_hosts.sh down          removes them
#   netns_hosts.sh mpirun ARGS   `mpirun ARGS` with the hosts' launch agent and TCP between them (after `up`);
#                                place ranks with --host 10.231.0.2:1,10.231.0.3:1,...
#
# Needs root (CAP_NET_ADMIN): `up` fails with tc's or ip's message otherwise. Open MPI starts its daemon in each
# host through scripts/netns_launch.sh (as it would through ssh), each in its own UTS namespace so that every
# host has its own host name, and the ranks use the TCP transport only (no shared memory between hosts).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prefix=smelt-h
bridge=smelt-br0
subnet=10.231.0

down() {
  for ns in $(ip netns list | awk '{print $1}' | grep "^$prefix[0-9]*$" || true); do
    ip netns del "$ns"
  done
  # A namespace outlives `ip netns del` while a process is still in it: its veth pair would too.
  for link in $(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep '^smelt-v[0-9]*$' || true); do
    ip link del "$link" 2>/dev/null || true
  done
  ip link del "$bridge" 2>/dev/null || true
}

up() {
  local n=$1 rate=${2:-}
  [[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 64)) || { echo "netns_hosts.sh: N must be 1..64, got '$n'" >&2; exit 2; }
  down
  ip link add "$bridge" type bridge
  ip addr add "$subnet.1/24" dev "$bridge"
  ip link set "$bridge" up
  for i in $(seq 1 "$n"); do
    local ns=$prefix$i veth=smelt-v$i
    ip netns add "$ns"
    ip link add "$veth" type veth peer name eth0 netns "$ns"
    ip link set "$veth" master "$bridge" up
    ip -n "$ns" addr add "$subnet.$((i + 1))/24" dev eth0
    ip -n "$ns" link set lo up
    ip -n "$ns" link set eth0 up
    if [[ -n $rate ]]; then
      # A token bucket on both ends of the pair: the host's sends (eth0) and what it receives (the bridge's
      # port), as a link of that rate would.
      ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst 256kb latency 100ms
      tc qdisc add dev "$veth" root tbf rate "$rate" burst 256kb latency 100ms
    fi
  done
  echo "hosts up: $(seq -s ' ' -f "$subnet.%g" 2 $((n + 1)))${rate:+ (links at $rate)}"
}

case ${1:-} in
  up) up "${2:?N}" "${3:-}" ;;
  down) down ;;
  mpirun)
    shift
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    # --bind-to none: each host binds its ranks from core 0 up, and the hosts share this machine's cores.
    exec mpirun --mca plm_rsh_agent "$here/netns_launch.sh" --mca plm_rsh_no_tree_spawn 1 --bind-to none \
      --mca btl self,tcp --mca btl_tcp_if_include "$subnet.0/24" --mca oob_tcp_if_include "$subnet.0/24" "$@"
    ;;
  *)
    echo "usage: netns_hosts.sh up N [RATE] | down | mpirun ARGS" >&2
    exit 2
    ;;
esac
