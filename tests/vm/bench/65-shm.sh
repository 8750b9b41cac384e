#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The shm transport in the guest, with ConnBuffers from /dev/hmc:
#
#   hmcperf -x shm put_bw 1 MiB, 64 MiB   vs  memcpy_bw (memcpy, same sizes)
#   hmcperf -x shm put_bw 1 MiB           vs  hmcperf -x ucx on this host
#                                             (UCX_TLS=posix,cma,self)
#
# A shm put is a copy into the peer's mapping, so its reference is memcpy
# between two buffers of the same size; UCX moves user memory on one host
# through its shared-memory transport (RMA emulated with active messages;
# cma beside it). Same sizes, iterations and window; each pair runs REPS
# times, alternating; the ratio is the median of the pairs' ratios
# (stats.sh). Ratios are printed, not asserted:
# `RATIO <name> <ours/theirs> <target>`.
set -u

HMCPERF=$HMC_BUILD/tools/hmcperf
MEMCPY_BW=$HMC_BUILD/tests/bench/memcpy_bw
REPS=${SHM_BENCH_REPS:-7}

die() { echo "shm bench: $*" >&2; exit 1; }

[ -x "$HMCPERF" ] || die "$HMCPERF is missing (make)"
[ -x "$MEMCPY_BW" ] || die "$MEMCPY_BW is missing (make)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; [ -d /sys/module/hmc ] && rmmod hmc' EXIT
insmod "$HMC_KO" || die "insmod $HMC_KO"

# shellcheck source=tests/bench/stats.sh
. "$HMC_SRC/tests/bench/stats.sh"

# hmcperf_bw TRANSPORT SIZE ITERS [ENV...]: put_bw in MB/s.
hmcperf_bw() {
	local x=$1 size=$2 iters=$3
	shift 3
	env "$@" HMC_REQUIRE_KMOD=1 timeout 300 "$HMCPERF" --loopback -x "$x" \
		-t put_bw -s "$size" -n "$iters" -O 32 -j >"$tmp/out" 2>&1 ||
		{ cat "$tmp/out" >&2; die "hmcperf -x $x put_bw $size failed"; }
	grep -q "\"transport\":\"$x\"" "$tmp/out" ||
		die "hmcperf did not run over $x: $(cat "$tmp/out")"
	json_field "$tmp/out" bw_MBps
}

memcpy_bw() {
	"$MEMCPY_BW" -s "$1" -n "$2" -j >"$tmp/out" || die "memcpy_bw $1 failed"
	json_field "$tmp/out" bw_MBps
}

echo "== shm benchmarks: $REPS repetitions each (median), tools alternating"
echo "MB/s = 10^6 B/s; ConnBuffers from /dev/hmc (HMC_REQUIRE_KMOD=1)"
RATIOS=
for spec in 1M:1048576:2000 64M:67108864:12; do
	IFS=: read -r name size iters <<<"$spec"
	ours= theirs=
	for _ in $(seq "$REPS"); do
		ours="$ours $(hmcperf_bw shm "$size" "$iters")"
		theirs="$theirs $(memcpy_bw "$size" "$iters")"
	done
	report "shm_put_vs_memcpy_${name}iB" "$ours" "$theirs" ">=0.9" MB/s \
		"put_bw $size B over shm vs memcpy, -n $iters -O 32"
done

ours= theirs=
for _ in $(seq "$REPS"); do
	ours="$ours $(hmcperf_bw shm 1048576 400)"
	theirs="$theirs $(hmcperf_bw ucx 1048576 400 UCX_TLS=posix,cma,self)"
done
report shm_vs_ucx_put_bw_1MiB "$ours" "$theirs" ">=1.0" MB/s \
	"put_bw 1 MiB over shm vs over UCX (posix,cma,self), -n 400 -O 32"
printf '%s' "$RATIOS"
