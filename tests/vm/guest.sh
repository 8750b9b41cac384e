#!/bin/bash
# PID 1 of the test guest, started by the initramfs /init after switch_root
# (proc, sys, devtmpfs, tmpfs on /tmp /run /var/tmp and the project tree are
# mounted by then). It prepares the guest, runs the suites of the guest test
# contract (README.md, "Guest tests"), scans dmesg, writes the results to
# build/vm/results in the project tree and powers off. It never exits: PID 1
# exiting would panic the kernel before the results are written.

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8
HMC_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VM_DIR=$HMC_SRC/build/vm

# Written by tests/vm/run: HMC_MODE (test|bench), HMC_SUITES (glob on
# suite names), HMC_SUITE_TIMEOUT (s), HMC_BUILD, KVER.
HMC_MODE=test HMC_SUITES='*' HMC_SUITE_TIMEOUT=300
HMC_BUILD=$HMC_SRC/build KVER=$(uname -r)
# shellcheck source=/dev/null
. "$VM_DIR/guest.env"
export HMC_SRC HMC_BUILD KVER HMC_KO=$HMC_SRC/hmc.ko

# Kernel log lines that fail the run (the `dmesg clean` test).
DMESG_BAD='\bBUG[: ]|WARNING:|Oops|Call Trace:|refcount_t|corruption|Poison|general protection|KASAN|UBSAN'

passed=0 failed=0 skipped=0
failures=()		# the `not ok` lines, repeated in the results file

tap() {			# tap ok|fail NAME: print and count one test
	if [ "$1" = ok ]; then
		echo "ok - $2"
		passed=$((passed + 1))
	else
		echo "not ok - $2"
		failed=$((failed + 1))
		failures+=("not ok - $2")
	fi
}

setup_guest() {
	mkdir -p /dev/pts /dev/shm
	mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts
	mount -t tmpfs -o mode=1777 tmpfs /dev/shm
	ln -sf /proc/self/fd /dev/fd
	ln -sf /proc/self/fd/0 /dev/stdin
	ln -sf /proc/self/fd/1 /dev/stdout
	ln -sf /proc/self/fd/2 /dev/stderr
	ip link set lo up
}

# Soft-RoCE as the contract says: rxe0 on veth va (10.99.0.1/24), peer vb.
setup_rxe() {
	local state deadline=$((SECONDS + 20))

	modprobe rdma_rxe &&
	ip link add va type veth peer name vb &&
	ip addr add 10.99.0.1/24 dev va &&
	ip link set va up && ip link set vb up &&
	rdma link add rxe0 type rxe netdev va || return 1
	while [ $SECONDS -lt $deadline ]; do
		state=$(cat /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null)
		case $state in *ACTIVE*) return 0 ;; esac
		sleep 0.2
	done
	echo "# rxe0 port state: ${state:-none} after 20 s"
	return 1
}

hmc_loaded() { [ -d /sys/module/hmc ] && echo yes || echo no; }

# run_suite PATH: run one suite under the per-suite timeout and count its
# TAP lines (skips apart); a crash or timeout without `not ok` is a failure.
run_suite() {
	local suite=$1 name out rc loaded_before p f s
	local start=$SECONDS p0=$passed f0=$failed s0=$skipped
	name=$(basename "$suite")
	out=$VM_DIR/suite-$name.out
	loaded_before=$(hmc_loaded)

	echo "# suite $name"
	(cd "$HMC_SRC" && exec timeout -k 10 "$HMC_SUITE_TIMEOUT" "$suite") \
		</dev/null | tee "$out"
	rc=${PIPESTATUS[0]}

	read -r p f s < <(awk '
		/^not ok([ \t]|$)/ { f++; next }
		/^ok([ \t]|$)/ { if (tolower($0) ~ /#[ \t]*skip/) s++; else p++ }
		END { print p + 0, f + 0, s + 0 }' "$out")
	if [ "$HMC_MODE" = bench ]; then
		grep '^RATIO ' "$out" >>"$VM_DIR/ratios"
		[ "$rc" = 0 ] && p=$((p + 1))
	fi
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	[ "$f" = 0 ] || mapfile -t -O ${#failures[@]} failures < <(
		grep '^not ok' "$out" | sed "s|^|$name: |")

	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		tap fail "$name: timed out after $HMC_SUITE_TIMEOUT s"
	elif [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		tap fail "$name: exited with status $rc"
	fi
	if [ "$(hmc_loaded)" != "$loaded_before" ]; then
		tap fail "$name: changed whether hmc is loaded"
		[ "$loaded_before" = no ] && rmmod hmc
	fi
	echo "# $name: $((passed - p0)) passed, $((failed - f0)) failed," \
		"$((skipped - s0)) skipped, $((SECONDS - start)) s"
}

main() {
	local dir suite

	setup_guest
	echo "# guest up: $(uname -r), $(nproc) CPUs, mode $HMC_MODE"
	if setup_rxe; then
		export HMC_RXE_DEV=rxe0 HMC_RXE_IP=10.99.0.1
		tap ok "guest: soft-RoCE rxe0 ACTIVE on va"
	else
		tap fail "guest: soft-RoCE rxe0 ACTIVE on va"
	fi

	dir=$HMC_SRC/tests/vm/suites
	[ "$HMC_MODE" = bench ] && dir=$HMC_SRC/tests/vm/bench
	: >"$VM_DIR/ratios"
	for suite in "$dir"/[0-9][0-9]-*.sh; do
		[[ -f $suite && -x $suite ]] || continue
		# shellcheck disable=SC2053
		[[ $(basename "$suite") == $HMC_SUITES ]] || continue
		run_suite "$suite"
	done

	dmesg >"$VM_DIR/dmesg.txt"
	if grep -E "$DMESG_BAD" "$VM_DIR/dmesg.txt" | sed 's/^/# /' | grep .; then
		tap fail "dmesg clean"
	else
		tap ok "dmesg clean"
	fi

	echo "$skipped skipped"
	echo "$passed passed, $failed failed"
	{
		cat "$VM_DIR/ratios"
		[ $failed = 0 ] || printf '%s\n' "${failures[@]}"
		echo "$skipped skipped"
		echo "$passed passed, $failed failed"
	} >"$VM_DIR/results.tmp" && mv "$VM_DIR/results.tmp" "$VM_DIR/results"
}

main
sync
echo o >/proc/sysrq-trigger
sleep 10
poweroff -f
while :; do sleep 60; done
