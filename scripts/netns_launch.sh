#!/usr/bin/env bash
# Open MPI's launch agent for the test hosts of scripts/netns_hosts.sh, used as ssh would be: `netns_launch.sh
# HOST COMMAND...` runs COMMAND (one shell command line, as ssh joins its arguments) in the network namespace of
# the host with that address, in a UTS namespace of its own named after the host.
set -euo pipefail
host=$1
shift
case $host in
  10.231.0.*) i=$((${host##*.} - 1)) ;;
  *)
    echo "netns_launch.sh: $host is not a test host (10.231.0.2 and up)" >&2
    exit 255
    ;;
esac
ns=smelt-h$i
ip netns list | awk '{print $1}' | grep -qx "$ns" || {
  echo "netns_launch.sh: no namespace $ns for $host (run scripts/netns_hosts.sh up N first)" >&2
  exit 255
}
exec ip netns exec "$ns" unshare --uts /bin/sh -c "hostname $ns && $*"
