#!/bin/bash
# Multi-host on one machine: three network namespaces, one rank in each,
# joined by veth pairs to a bridge in the first; test_comm runs all-to-all
# put/get/put_signal over TCP control and UCX tcp between them (or the
# transport HMC_TEST_TRANSPORT names), every byte checked.
# Only the addresses of the veths made here are used, and the namespaces
# (with their links) go away on exit, whatever happens (tests/lib/netns.sh).
# With "shm", the ranks are what they are, processes of one host, each in
# its own network namespace: they dial each other's veth address with the
# defaults (AUTO, no HMC_CTRL_TRANSPORT), reach the listener's Unix socket
# path across the namespaces, and must end up on shm. With "tcp-unix",
# the same control but the tcp transport: its data connections must go to
# the address each dialer dialed, in another namespace.
#   tests/integration/netns.sh PATH/TO/test_comm [shm | tcp-unix]
set -u
prog=${1:?usage: netns.sh PATH/TO/test_comm [shm | tcp-unix]}
mode=${2:-tcp}
dev=hmcv		# the rank's interface in every namespace

skip() {
	echo "ok - multihost: 3 network namespaces # SKIP $*"
	exit 0
}

# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
if why=$(netns_unavailable); then
	skip "$why"
fi
if ! netns_up "hmcit$$" 3 $dev 10.77.0; then
	echo "# $NETNS_ERR"
	echo "not ok - multihost: set up 3 network namespaces joined by veth pairs"
	exit 1
fi
echo "ok - multihost: 3 network namespaces joined by veth pairs (${NETNS_IPS[*]})"
ns=$(IFS=,; echo "${NETNS[*]}") ips=$(IFS=,; echo "${NETNS_IPS[*]}")

if [ "$mode" = shm ]; then
	HMC_TEST_TRANSPORT=auto HMC_TEST_AUTO_IS=shm \
		"$prog" -n 3 -N multihost-shm \
		--netns "$ns" --ips "$ips"
	exit
fi
if [ "$mode" = tcp-unix ]; then
	HMC_TEST_TRANSPORT=tcp "$prog" -n 3 -N multihost-tcp-unix \
		--netns "$ns" --ips "$ips"
	exit
fi
UCX_TLS=tcp,self UCX_NET_DEVICES=$dev HMC_CTRL_TRANSPORT=tcp \
	"$prog" -n 3 -N multihost \
	--netns "$ns" --ips "$ips"
