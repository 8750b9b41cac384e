#!/bin/bash
# Multi-host on one machine: three network namespaces, one rank in each,
# joined by veth pairs to a bridge in the first; test_comm runs all-to-all
# put/get/put_signal over TCP control and UCX tcp between them (or the
# transport HMC_TEST_TRANSPORT names), every byte checked.
# Only the addresses of the veths made here are used, and the namespaces
# (with their links) go away on exit, whatever happens.
# With "shm", the ranks are what they are, processes of one host, each in
# its own network namespace: they dial each other's veth address with the
# defaults (AUTO, no HMC_CTRL_TRANSPORT), reach the listener's Unix socket
# path across the namespaces, and must end up on shm.
#   tests/integration/netns.sh PATH/TO/test_comm [shm]
set -u
prog=${1:?usage: netns.sh PATH/TO/test_comm [shm]}
mode=${2:-tcp}
tag=hmcit$$
ns=("$tag-0" "$tag-1" "$tag-2")
ips=(10.77.0.1 10.77.0.2 10.77.0.3)
dev=hmcv		# the rank's interface in every namespace

skip() {
	echo "ok - multihost: 3 network namespaces # SKIP $*"
	exit 0
}

[ "$(id -u)" = 0 ] || skip "needs root to create network namespaces"
command -v ip >/dev/null || skip "no ip(8) (iproute2)"
ip netns list >/dev/null 2>&1 || skip "ip netns is not available"

cleanup() {
	local n

	for n in "${ns[@]}"; do
		ip netns del "$n" 2>/dev/null
	done
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

setup() {
	local i

	for i in 0 1 2; do
		ip netns add "${ns[$i]}" || return 1
		ip -n "${ns[$i]}" link set lo up || return 1
	done
	# Rank 0's interface is the bridge; ranks 1 and 2 hang off it.
	ip -n "${ns[0]}" link add "$dev" type bridge forward_delay 0 || return 1
	for i in 1 2; do
		ip link add "p$i" netns "${ns[0]}" type veth \
			peer name "$dev" netns "${ns[$i]}" || return 1
		ip -n "${ns[0]}" link set "p$i" master "$dev" up || return 1
	done
	for i in 0 1 2; do
		ip -n "${ns[$i]}" addr add "${ips[$i]}/24" dev "$dev" || return 1
		ip -n "${ns[$i]}" link set "$dev" up || return 1
	done
	# Wait until rank 0 reaches the others (a refused TCP dial to port 9
	# means the address answered).
	for i in 1 2; do
		reachable "${ips[$i]}" || return 1
	done
}

reachable() {
	local until=$((SECONDS + 10))

	while [ $SECONDS -lt $until ]; do
		ip netns exec "${ns[0]}" timeout 2 bash -c \
			"exec 3<>/dev/tcp/$1/9" 2>&1 | grep -q refused && return 0
		sleep 0.2
	done
	echo "# ${ns[0]} cannot reach $1"
	return 1
}

if ! setup; then
	echo "not ok - multihost: set up 3 network namespaces joined by veth pairs"
	exit 1
fi
echo "ok - multihost: 3 network namespaces joined by veth pairs (${ips[*]})"

if [ "$mode" = shm ]; then
	HMC_TEST_TRANSPORT=auto HMC_TEST_AUTO_IS=shm \
		"$prog" -n 3 -N multihost-shm \
		--netns "$(IFS=,; echo "${ns[*]}")" --ips "$(IFS=,; echo "${ips[*]}")"
	exit
fi
UCX_TLS=tcp,self UCX_NET_DEVICES=$dev HMC_CTRL_TRANSPORT=tcp \
	"$prog" -n 3 -N multihost \
	--netns "$(IFS=,; echo "${ns[*]}")" --ips "$(IFS=,; echo "${ips[*]}")"
