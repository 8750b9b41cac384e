#!/bin/bash
# Hosts on one machine: N (default 3) network namespaces (tests/lib/netns.sh:
# two joined by a veth pair, more by veth pairs to a bridge in the first),
# one rank of PROG in each, the world store in the first, and UCX over tcp
# between them, so every copy to another rank's segment crosses the wire.
# Only the veths made here are used; the namespaces go away on exit,
# whatever happens.
#   tests/pool/netns.sh [-n N] PROG [ARGS...]
set -u -o pipefail
hosts=3
if [ "${1:-}" = -n ]; then
	hosts=$2
	shift 2
fi
[ $# -ge 1 ] || { echo "usage: netns.sh [-n N] PROG [ARGS...]" >&2; exit 2; }
dev=hmcp
port=$((20000 + RANDOM % 12000))	# below the ephemeral ports (32768 and up)

fail() {
	echo "not ok - netns: $*"
	exit 1
}

# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
if why=$(netns_unavailable); then
	fail "$why"
fi
netns_up "hmcpl$$" "$hosts" $dev 10.79.0 || fail "$NETNS_ERR"
echo "ok - netns: $hosts network namespaces joined by veth pairs (${NETNS_IPS[*]})"

pids=()
for ((i = 0; i < hosts; i++)); do
	ip netns exec "${NETNS[$i]}" env UCX_TLS=tcp,self UCX_NET_DEVICES=$dev \
		HMC_CTRL_TRANSPORT=tcp HMC_STORE="tcp://${NETNS_IPS[0]}:$port" \
		HMC_WORLD_SIZE=$hosts HMC_RANK=$i HMC_WORLD_ADDR="${NETNS_IPS[$i]}" \
		"$@" | sed "s/^/[$i] /" &
	pids+=($!)
done
rc=0
for p in "${pids[@]}"; do
	wait "$p" || rc=1
done
exit $rc
