#!/bin/bash
# Hosts on one machine: N (default 3) network namespaces joined by veth
# pairs to a bridge in the first, one rank of PROG in each, the world store
# in the first, and UCX over tcp between them, so every copy to another
# rank's segment crosses the wire. Only the veths made here are used; the
# namespaces go away on exit, whatever happens.
#   tests/pool/netns.sh [-n N] PROG [ARGS...]
set -u -o pipefail
hosts=3
if [ "${1:-}" = -n ]; then
	hosts=$2
	shift 2
fi
[ $# -ge 1 ] || { echo "usage: netns.sh [-n N] PROG [ARGS...]" >&2; exit 2; }
tag=hmcpl$$
ns=() ips=()
for ((i = 0; i < hosts; i++)); do
	ns+=("$tag-$i")
	ips+=("10.79.0.$((i + 1))")
done
dev=hmcp
port=$((20000 + RANDOM % 20000))

fail() {
	echo "not ok - netns: $*"
	exit 1
}

[ "$(id -u)" = 0 ] || fail "needs root to create network namespaces"
command -v ip >/dev/null || fail "no ip(8) (iproute2)"

cleanup() {
	local n

	for n in "${ns[@]}"; do
		ip netns pids "$n" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$n" 2>/dev/null
	done
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

for ((i = 0; i < hosts; i++)); do
	ip netns add "${ns[$i]}" || fail "ip netns add"
	ip -n "${ns[$i]}" link set lo up
done
ip -n "${ns[0]}" link add "$dev" type bridge forward_delay 0 || fail "bridge"
for ((i = 1; i < hosts; i++)); do
	ip link add "p$i$tag" netns "${ns[0]}" type veth peer name "$dev" \
		netns "${ns[$i]}" || fail "veth"
	ip -n "${ns[0]}" link set "p$i$tag" master "$dev" up
done
for ((i = 0; i < hosts; i++)); do
	ip -n "${ns[$i]}" addr add "${ips[$i]}/24" dev "$dev"
	ip -n "${ns[$i]}" link set "$dev" up
done
echo "ok - netns: $hosts network namespaces joined by veth pairs (${ips[*]})"

pids=()
for ((i = 0; i < hosts; i++)); do
	ip netns exec "${ns[$i]}" env UCX_TLS=tcp,self UCX_NET_DEVICES=$dev \
		HMC_CTRL_TRANSPORT=tcp HMC_STORE="tcp://${ips[0]}:$port" \
		HMC_WORLD_SIZE=$hosts HMC_RANK=$i HMC_WORLD_ADDR="${ips[$i]}" \
		"$@" | sed "s/^/[$i] /" &
	pids+=($!)
done
rc=0
for p in "${pids[@]}"; do
	wait "$p" || rc=1
done
exit $rc
