#!/bin/bash
# Three hosts around an etcd: three network namespaces joined by veth pairs
# to a bridge in the first, where etcd listens; one rank in each, with
# HMC_STORE=etcd://. Mid-run (after the first allgather) etcd is killed,
# its data wiped, and a new one started: the members must publish
# themselves again and finish the run (bcast from every root, a put_signal
# ring, a barrier) with every byte checked. Only the veths made here are
# used; the namespaces go away on exit, whatever happens.
#   tests/world/etcd_netns.sh PATH/TO/world_test
set -u
prog=${1:?usage: etcd_netns.sh PATH/TO/world_test}
tag=hmcwe$$
ns=("$tag-0" "$tag-1" "$tag-2")
ips=(10.78.0.1 10.78.0.2 10.78.0.3)
dev=hmcw
work=$(mktemp -d)
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

# As tests/integration/netns.sh: namespaces need root and ip(8).
[ "$(id -u)" = 0 ] || skip "needs root to create network namespaces"
ip netns list >/dev/null 2>&1 || skip "ip netns is not available"
command -v etcd >/dev/null || fail "etcd is not installed (make deps)"

cleanup() {
	local n

	[ -z "$etcd_pid" ] || kill -9 "$etcd_pid" 2>/dev/null
	for n in "${ns[@]}"; do
		ip netns pids "$n" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$n" 2>/dev/null
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

for i in 0 1 2; do
	ip netns add "${ns[$i]}" || fail "ip netns add"
	ip -n "${ns[$i]}" link set lo up
done
ip -n "${ns[0]}" link add "$dev" type bridge forward_delay 0 || fail "bridge"
for i in 1 2; do
	ip link add "p$i$tag" netns "${ns[0]}" type veth peer name "$dev" \
		netns "${ns[$i]}" || fail "veth"
	ip -n "${ns[0]}" link set "p$i$tag" master "$dev" up
done
for i in 0 1 2; do
	ip -n "${ns[$i]}" addr add "${ips[$i]}/24" dev "$dev"
	ip -n "${ns[$i]}" link set "$dev" up
done

start_etcd() {
	rm -rf "$work/etcd"
	ip netns exec "${ns[0]}" etcd --data-dir "$work/etcd" --name hmc \
		--listen-client-urls "http://${ips[0]}:$port" \
		--advertise-client-urls "http://${ips[0]}:$port" \
		--listen-peer-urls "http://127.0.0.1:2380" \
		--initial-advertise-peer-urls "http://127.0.0.1:2380" \
		--initial-cluster "hmc=http://127.0.0.1:2380" \
		>>"$work/etcd.log" 2>&1 &
	etcd_pid=$!
	disown "$etcd_pid"
	for _ in $(seq 100); do
		ip netns exec "${ns[1]}" etcdctl --endpoints "${ips[0]}:$port" \
			endpoint health >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	cat "$work/etcd.log"
	fail "etcd did not come up"
}

start_etcd
echo "ok - etcd-netns: etcd on ${ips[0]}:$port, ranks on ${ips[*]}"
pids=()
for i in 0 1 2; do
	ip netns exec "${ns[$i]}" env HMC_STORE="etcd://${ips[0]}:$port" \
		HMC_WORLD_SIZE=3 HMC_BOOTSTRAP=store HMC_WORLD_ADDR="${ips[$i]}" \
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
n=$(ip netns exec "${ns[1]}" etcdctl --endpoints "${ips[0]}:$port" get \
	--prefix hmc/world/joined/ --keys-only | grep -c .)
[ "$n" = 3 ] && echo "ok - etcd-netns: all 3 ranks published themselves again" ||
	echo "not ok - etcd-netns: $n of 3 ranks published themselves again"
exit $rc
