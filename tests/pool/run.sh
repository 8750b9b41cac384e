#!/bin/bash
# The pool suite: tests/pool/pool_test on 2 and 4 ranks of one host
# (hmcrun), with host segments and with device segments through the mock
# runtimes of tests/gpu, a leaving and a SIGKILLed rank during copies (to
# host and device segments), and three network namespaces as three hosts
# (host segments, then device segments of the mock CUDA and HIP). Every
# case has a deadline; the output is TAP; exits 1 on any failure.
#   O=build tests/pool/run.sh [NAME_GLOB]
# NAME_GLOB (a bash extended pattern) picks the cases to run: the TSan tier
# runs some (tests/san/san.mk).
set -u
shopt -s extglob
O=${O:-build}
only=${1:-*}
T=$O/tests/pool/pool_test
RUN=$O/tools/hmcrun
MOCKS=$O/tests/gpu/mock
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
# The communicators' transport on one host; the world store is TCP.
export UCX_TLS=posix,cma,self
unset HMC_SECRET HMC_STORE HMC_RANK HMC_WORLD_SIZE HMC_BOOTSTRAP \
	HMC_WORLD_ADDR RANK WORLD_SIZE MASTER_ADDR

# case NAME SECONDS COMMAND...: run it, count its TAP lines.
case_run() {
	local name=$1 limit=$2 out=$work/$1.out rc p f start=$SECONDS
	shift 2
	# shellcheck disable=SC2053
	[[ $name == $only ]] || return 0
	echo "== $name"
	if [ "$(type -t "$1")" = function ]; then
		"$@" >"$out" 2>&1	# it bounds each process itself
	else
		timeout -k 5 "$limit" "$@" >"$out" 2>&1
	fi
	rc=$?
	grep -E 'not ok|checks|died|left|SIGKILL|netns' "$out"
	p=$(grep -cE '^(\[[0-9]\] )?ok' "$out")
	f=$(grep -cE '^(\[[0-9]\] )?not ok' "$out")
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		echo "not ok - $name: exit status $rc"
		tail -5 "$out"
		f=1
	elif [ "$p" = 0 ]; then
		echo "not ok - $name: no checks ran"
		f=1
	fi
	# A sanitizer's report, the first one whole (tests/san/san.mk).
	[ "$f" = 0 ] || grep -m1 -A80 -E \
		'WARNING: ThreadSanitizer|ERROR: (Address|Leak)Sanitizer|runtime error:' \
		"$out"
	passed=$((passed + p)) failed=$((failed + f))
	echo "# $name: $p passed, $f failed, $((SECONDS - start)) s"
}

# churn N [ARGS...]: N ranks started by hand (hmcrun would stop all at the
# first death); the last leaves (and joins again), the one before is killed.
# The store's port lies below the kernel's ephemeral ports (32768 and up):
# one that an outgoing connection holds fails every rank's bind, and each
# then takes the store for another process's and dials it until the
# deadline.
churn() {
	local n=$1 port=$((20000 + RANDOM % 12000)) r rc=0 pids=()

	shift
	for ((r = 0; r < n; r++)); do
		HMC_STORE=tcp://127.0.0.1:$port HMC_WORLD_SIZE=$n HMC_RANK=$r \
			LD_LIBRARY_PATH="$MOCKS" HMC_GPU_MOCK=1 \
			timeout -k 5 50 "$T" -m churn "$@" &
		pids+=($!)
		# Rank 0 hosts the world's store: the leaver must not.
		[ $r != 0 ] || sleep 0.3
	done
	for ((r = 0; r < n; r++)); do
		wait "${pids[$r]}"
		case "$?,$r" in
		0,*) ;;
		137,$((n - 2))) echo "ok - rank $r died of SIGKILL" ;;
		*) rc=1 ;;
		esac
	done
	return $rc
}

case_run host-2 60 "$RUN" -n 2 --tag-output "$T" -M
# Without address randomisation where we may turn it off, ranks whose
# address spaces differ by a few MiB: a range agreement that places the
# range where one rank's mmap() would go fails in the others (all its
# rounds did, every time, before the agreement pooled every rank's gaps).
norand=$(setarch "$(uname -m)" -R true 2>/dev/null &&
	echo setarch "$(uname -m)" -R)
case_run host-4 90 $norand "$RUN" -n 4 --tag-output "$T" -M -x 4
for dev in cuda rocm; do
	case_run "$dev-mock-2" 60 env LD_LIBRARY_PATH="$MOCKS" HMC_GPU_MOCK=1 \
		"$RUN" -n 2 --tag-output "$T" -d "$dev"
done
for dev in cuda rocm ascend cnrt musa; do
	case_run "$dev-mock-4" 90 env LD_LIBRARY_PATH="$MOCKS" HMC_GPU_MOCK=1 \
		"$RUN" -n 4 --tag-output "$T" -d "$dev"
done
case_run churn-4 60 churn 4
case_run churn-cuda-4 60 churn 4 -d cuda
case_run netns-3 90 tests/pool/netns.sh "$T"
for dev in cuda rocm; do
	case_run "netns-3-$dev" 90 env LD_LIBRARY_PATH="$MOCKS" HMC_GPU_MOCK=1 \
		tests/pool/netns.sh "$T" -d "$dev"
done

echo "# pool: $passed passed, $failed failed"
[ "$failed" = 0 ]
