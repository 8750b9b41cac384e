#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The shm transport on this host, a section of `make bench`: ConnBuffers
# from a memfd (no module: the host cannot load one), each figure against a
# reference measured in the same run:
#
#   hmcperf -x shm put_bw 1 MiB, 64 MiB  vs  memcpy_bw, same size and count
#   hmcperf -x shm put_lat 8 B           vs  store_pingpong: two processes
#                                            storing 8 B and a flag into a
#                                            shared mapping, spinning on the
#                                            reply (the physical limit)
#   hmcperf -x shm put_bw 1 MiB          vs  hmcperf -x ucx, what AUTO
#                                            picked on one host before
#                                            memfd, with UCX's fastest
#                                            correct choice there
#                                            (UCX_TLS=posix,cma,self, as
#                                            `make run`; UCX's own default
#                                            measured far slower)
#   Python put_bw 1 MiB over shm         vs  hmcperf -x shm (put_bw.py)
#
# A shm put is a memcpy into the peer's mapping; memcpy_bw copies between
# two buffers just as hmcperf's put_bw does without validation (one slot
# each side, the window of requests completing as they are posted).
# Each pair runs SHM_BENCH_REPS times, alternating; the ratio is the median
# of the pairs' ratios (stats.sh). Printed, never asserted:
# `RATIO <name> <ours/theirs> <target>`. About a minute on a quiet 2-CPU
# host.
# alternate (stats.sh) evals its commands, which expand the variables there.
# shellcheck disable=SC2016
set -eu

HMCPERF=${HMCPERF:-build/tools/hmcperf}
BENCH_BIN=${BENCH_BIN:-build/tests/bench}
REPS=${SHM_BENCH_REPS:-5}
PYTHON=${PYTHON:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

die() { echo "shm bench: $*" >&2; exit 1; }

[ -x "$HMCPERF" ] || die "$HMCPERF not built"
[ -x "$BENCH_BIN/memcpy_bw" ] || die "$BENCH_BIN/memcpy_bw not built"
[ -x "$BENCH_BIN/store_pingpong" ] || die "$BENCH_BIN/store_pingpong not built"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# shellcheck source=tests/bench/stats.sh
. "$here/stats.sh"

# hmc TRANSPORT FIELD ARGS...: one hmcperf --loopback run, its FIELD; it
# must have run over TRANSPORT with memfd ConnBuffers where it is shm.
hmc() {
	x=$1 field=$2
	shift 2
	timeout 120 "$HMCPERF" --loopback -j -x "$x" "$@" >"$tmp/out" 2>&1 ||
		die "hmcperf -x $x $* failed: $(cat "$tmp/out")"
	grep -q "\"transport\":\"$x\"" "$tmp/out" ||
		die "hmcperf did not run over $x: $(cat "$tmp/out")"
	[ "$x" != shm ] || grep -q '"backing":"memfd","server_backing":"memfd"' "$tmp/out" ||
		die "hmcperf's ConnBuffers are not memfd: $(cat "$tmp/out")"
	json_field "$tmp/out" "$field"
}

memcpy_bw() {
	"$BENCH_BIN/memcpy_bw" -s "$1" -n "$2" -j >"$tmp/ref" ||
		die "memcpy_bw $1 failed"
	json_field "$tmp/ref" bw_MBps
}

store_lat() {
	"$BENCH_BIN/store_pingpong" -s 8 -n "$1" -w "$2" -j >"$tmp/ref" ||
		die "store_pingpong failed"
	json_field "$tmp/ref" median
}

echo "== shm benchmarks: memfd ConnBuffers, $REPS repetitions each (median), tools alternating"
unset UCX_TLS HMC_CTRL_TRANSPORT
RATIOS=

for spec in 1MiB:1048576:2000 64MiB:67108864:12; do
	name=${spec%%:*} rest=${spec#*:}
	size=${rest%%:*} iters=${rest#*:}
	alternate "$REPS" \
		'hmc shm bw_MBps -t put_bw -s "$size" -n "$iters" -O 32' \
		'memcpy_bw "$size" "$iters"'
	report "shm_host_put_bw_${name}_vs_memcpy" "$ours" "$theirs" ">=0.9" MB/s \
		"put_bw $size B over shm vs memcpy, -n $iters -O 32"
done

alternate "$REPS" 'hmc shm median -t put_lat -s 8 -n 20000 -w 2000' \
	'store_lat 20000 2000'
report shm_host_put_lat_8B_vs_store "$ours" "$theirs" "<=1.5" us \
	"put_lat 8 B over shm vs a store ping-pong, one-way median, -n 20000 -w 2000"

alternate "$REPS" 'hmc shm bw_MBps -t put_bw -s 1M -n 400 -O 32' \
	'export UCX_TLS=posix,cma,self; hmc ucx bw_MBps -t put_bw -s 1M -n 400 -O 32'
report shm_host_vs_ucx_put_bw_1MiB "$ours" "$theirs" ">=3" MB/s \
	"put_bw 1 MiB over shm vs over UCX (posix,cma,self), -n 400 -O 32"

PYTHONPATH="$top/python" HMC_BUILD=$(cd "$(dirname "$HMCPERF")/.." && pwd) \
	PYTHONDONTWRITEBYTECODE=1 "$PYTHON" "$top/python/bench/put_bw.py" \
	--hmcperf "$HMCPERF" --transport shm --reps "$REPS" >"$tmp/py" 2>&1 ||
	die "python/bench/put_bw.py --transport shm failed: $(cat "$tmp/py")"
grep -v '^RATIO' "$tmp/py"
RATIOS="$RATIOS$(grep '^RATIO' "$tmp/py")
"
printf '%s' "$RATIOS"
