#!/bin/bash
# PEs on two hosts of one machine: two network namespaces joined by a veth
# pair, the PEs split between them (consecutive ranks, the first host gets
# the odd one), the world's store in the first, control over TCP. PEs of one namespace map
# each other; those of the other namespace are remote (shmem/peer.c), which
# the setup test proves (shmem_ptr to them is NULL; SHMEM_TEST_HOST_PES
# tells the tests the layout). Runs every conformance test with 2, 3 and
# 4 PEs, then a PE killed mid-run and a global_exit across the hosts, each of
# which must end every PE, never hang. tests/lib/netns.sh makes the
# namespaces and removes them on exit, whatever happens.
#   tests/shmem/netns.sh BUILD_DIR
# NETNS_TESTS (test programs) runs those instead of every test_*.
set -u -o pipefail
O=${1:-build}
fail=0

# shellcheck source=tests/lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
if why=$(netns_unavailable); then
	echo "FAIL netns: $why"
	exit 1
fi
tmp=$(mktemp -d)
netns_at_exit 'rm -rf "$tmp"'
netns_up "hmcsh$$" 2 hmcsh 10.78.0 || { echo "FAIL netns: $NETNS_ERR"; exit 1; }

# run_pes N TIMEOUT PROG [ARGS...]: PE i's output in $tmp/out.i, status in
# $tmp/rc.i (timeout's 124 if it hung). The store's port lies below the
# kernel's ephemeral ports (32768 and up): one that an earlier run's
# connection still holds in TIME_WAIT fails rank 0's bind, which then takes
# the store for another process's, and every PE dials it until the deadline.
run_pes() {
	local n=$1 to=$2 per=$((($1 + 1) / 2)) port=$((20000 + RANDOM % 12000))
	local i h pids=()

	shift 2
	rm -f "$tmp"/out.* "$tmp"/rc.*
	for ((i = 0; i < n; i++)); do
		h=$((i / per))
		ip netns exec "${NETNS[$h]}" env HMC_BOOTSTRAP=store \
			HMC_CTRL_TRANSPORT=tcp HMC_STORE="tcp://${NETNS_IPS[0]}:$port" \
			HMC_WORLD_SIZE="$n" HMC_RANK="$i" \
			HMC_WORLD_ADDR="${NETNS_IPS[$h]}" HMC_WORLD_TIMEOUT=20000 \
			SHMEM_TEST_HOST_PES="$per" \
			timeout "$to" "$@" >"$tmp/out.$i" 2>&1 &
		pids+=($!)
	done
	for ((i = 0; i < n; i++)); do
		# (no "Killed" notice from the shell for the killed PE)
		{ wait "${pids[$i]}"; } 2>/dev/null
		echo $? >"$tmp/rc.$i"
	done
}

for t in ${NETNS_TESTS:-"$O"/tests/shmem/test_*}; do
	name=$(basename "$t")
	for n in 2 3 4; do
		run_pes "$n" 180 "$t"
		want="${name#test_}: $n PEs ok"
		if [ "$(cat "$tmp"/rc.*)" = "$(printf '0\n%.0s' $(seq "$n"))" ] &&
		   [ "$(cat "$tmp"/out.*)" = "$want" ]; then
			echo "ok   $name with $n PEs across 2 network namespaces"
		else
			echo "FAIL $name with $n PEs across 2 network namespaces:"
			for ((i = 0; i < n; i++)); do
				echo "  PE $i: status $(cat "$tmp/rc.$i")"
				tail -5 "$tmp/out.$i" | sed 's/^/    /'
			done
			fail=1
		fi
	done
done

# fail_pes N WHAT: say WHAT failed, with each of the N PEs' status and output.
fail_pes() {
	local i

	echo "FAIL $2:"
	for ((i = 0; i < $1; i++)); do
		echo "  PE $i: status $(cat "$tmp/rc.$i")"
		sed 's/^/    /' "$tmp/out.$i"
	done
	fail=1
}

# A PE killed mid-run (the last; the others wait in a barrier): every other
# PE, on either host, ends with status 1, not a hang. Those that notice
# first say so in one line naming PE 3 and end the rest, which then need
# no line of their own: at least one line, each naming PE 3.
"$O/shmem/oshcc" -O2 -o "$tmp/failure" "$(dirname "$0")/failure.c"
run_pes 4 60 "$tmp/failure" kill
ok=1
[ "$(cat "$tmp/rc.3")" = 137 ] || ok=0
for i in 0 1 2; do
	[ "$(cat "$tmp/rc.$i")" = 1 ] && [ "$(wc -l <"$tmp/out.$i")" -le 1 ] ||
		ok=0
done
lines=$(cat "$tmp"/out.0 "$tmp"/out.1 "$tmp"/out.2)
[ -n "$lines" ] && ! echo "$lines" |
	grep -qv "^shmem: PE [012]: [a-z_]*: PE 3 is \(gone\|unreachable\)" ||
	ok=0
if [ $ok = 1 ]; then
	echo "ok   a PE killed mid-run across 2 network namespaces ends every PE (status 1, lines name it)"
else
	fail_pes 4 "a PE killed mid-run across 2 network namespaces"
fi

# global_exit(3) on one host ends the PEs of both with status 3.
run_pes 4 60 "$tmp/failure" exit
if [ "$(cat "$tmp"/rc.*)" = "$(printf '3\n%.0s' 1 2 3 4)" ] &&
   [ -z "$(cat "$tmp"/out.*)" ]; then
	echo "ok   shmem_global_exit(3) across 2 network namespaces ends every PE with 3"
else
	fail_pes 4 "shmem_global_exit(3) across 2 network namespaces"
fi
[ "$fail" = 0 ]
