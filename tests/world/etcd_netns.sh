#!/bin/bash
# Three hosts around an etcd: three network namespaces joined by veth pairs
# to a bridge in the first, where etcd listens; one rank in each, with
# HMC_STORE=etcd://. Mid-run (after the first allgather) etcd is killed,
# its data wiped, and a new one started: the members must publish
# themselves again and finish the run (bcast from every root, a put_signal
# ring, a barrier) with every byte checked. Only the veths made here are
# used (tests/lib/netns.sh); the namespaces go away on exit, whatever
# happens.
#   tests/world/etcd_netns.sh PATH/TO/world_test
set -u
prog=${1:?usage: etcd_netns.sh PATH/TO/world_test}
dev=hmcw
port=2379
etcd_pid=

fail() {
	echo "not ok - etcd-netns: $*"
	exit 1
}

skip() {
	echo "ok - etcd-netns: three hosts around etcd # SKIP $*"
	exit 0
}

# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
if why=$(netns_unavailable); then
	skip "$why"
fi
command -v etcd >/dev/null || fail "etcd is not installed (make deps)"
work=$(mktemp -d)
netns_at_exit '[ -z "$etcd_pid" ] || kill -9 "$etcd_pid" 2>/dev/null'
netns_at_exit 'rm -rf "$work"'
netns_up "hmcwe$$" 3 $dev 10.78.0 || fail "$NETNS_ERR"

start_etcd() {
	rm -rf "$work/etcd"
	ip netns exec "${NETNS[0]}" etcd --data-dir "$work/etcd" --name hmc \
		--listen-client-urls "http://${NETNS_IPS[0]}:$port" \
		--advertise-client-urls "http://${NETNS_IPS[0]}:$port" \
		--listen-peer-urls "http://127.0.0.1:2380" \
		--initial-advertise-peer-urls "http://127.0.0.1:2380" \
		--initial-cluster "hmc=http://127.0.0.1:2380" \
		>>"$work/etcd.log" 2>&1 &
	etcd_pid=$!
	disown "$etcd_pid"
	for _ in $(seq 300); do	# slow to sync on a loaded host
		ip netns exec "${NETNS[1]}" etcdctl --endpoints "${NETNS_IPS[0]}:$port" \
			endpoint health >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	cat "$work/etcd.log"
	fail "etcd did not come up"
}

start_etcd
echo "ok - etcd-netns: etcd on ${NETNS_IPS[0]}:$port, ranks on ${NETNS_IPS[*]}"
pids=()
for i in 0 1 2; do
	ip netns exec "${NETNS[$i]}" env HMC_STORE="etcd://${NETNS_IPS[0]}:$port" \
		HMC_WORLD_SIZE=3 HMC_BOOTSTRAP=store HMC_WORLD_ADDR="${NETNS_IPS[$i]}" \
		HMC_TEST_PAUSE_DIR="$work" UCX_TLS=tcp,self \
		UCX_NET_DEVICES="$dev" "$prog" basic 3 >"$work/rank$i" 2>&1 &
	pids+=($!)
done
for _ in $(seq 300); do
	n=$(ls "$work"/ready.* 2>/dev/null | wc -l)
	[ "$n" = 3 ] && break
	sleep 0.1
done
[ "$n" = 3 ] || { cat "$work"/rank*; fail "the ranks did not reach the pause"; }

# The restart: kill -9, data wiped, a new etcd at the same address.
kill -9 "$etcd_pid"
while kill -0 "$etcd_pid" 2>/dev/null; do sleep 0.05; done
etcd_pid=
start_etcd	# (it wipes the data directory first)
echo "ok - etcd-netns: etcd killed and started again with its data wiped"
touch "$work/go"
rc=0
for i in 0 1 2; do
	wait "${pids[$i]}" || rc=1
done
cat "$work"/rank*
n=$(ip netns exec "${NETNS[1]}" etcdctl --endpoints "${NETNS_IPS[0]}:$port" get \
	--prefix hmc/world/joined/ --keys-only | grep -c .)
[ "$n" = 3 ] && echo "ok - etcd-netns: all 3 ranks published themselves again" ||
	echo "not ok - etcd-netns: $n of 3 ranks published themselves again"
exit $rc
