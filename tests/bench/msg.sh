#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Messages section of `make bench` (about two minutes): libhmc's
# hmc_comm_send/recv against its own puts and against Open MPI, two
# processes on this host, in one invocation:
#
#   msg_vs_put_bw_64MiB  64 MiB messages, heap to heap through 4 MiB
#                        ConnBuffers, vs puts of 64 MiB between 64 MiB
#                        ConnBuffers (+ flush), same transport
#   msg_vs_mpi_bw_1MiB   osu_bw: windows of 64 isends of 1 MiB, then a
#                        reply, vs MPI_Isend/MPI_Irecv (mpi_bench)
#   msg_vs_mpi_lat_8B    osu_latency: ping-pong of blocking 8 B sends,
#                        one-way us, vs MPI_Send/MPI_Recv
#
# The transport is AUTO's pick on one host, shm (memfd ConnBuffers mapped
# by the peer), as Open MPI's vader moves data through shared memory and
# cross-memory attach; UCX_TLS=posix,cma,self where UCX serves instead. Each pair runs BENCH_REPS times
# (default 5), the tools in turn; the ratio is the median of the pairs'
# ratios (stats.sh). Printed, never asserted: `RATIO <name> <value> <target>`.
set -eu

MSG_BENCH=${MSG_BENCH:-build/tests/bench/msg_bench}
MPI_BENCH=${MPI_BENCH:-build/tests/bench/mpi_bench}
REPS=${BENCH_REPS:-5}
[ "$REPS" -le 5 ] || REPS=5	# the section's two minutes
export UCX_TLS=posix,cma,self
MPIRUN="mpirun --allow-run-as-root --oversubscribe -np 2 --bind-to none"

die() { echo "bench msg: $*" >&2; exit 1; }
[ -x "$MSG_BENCH" ] || die "$MSG_BENCH not built"
[ -x "$MPI_BENCH" ] || die "$MPI_BENCH not built (mpicc: package libopenmpi-dev)"
command -v mpirun >/dev/null || die "mpirun not found (package openmpi-bin)"

# shellcheck source=tests/bench/stats.sh
. "$(dirname "$0")/stats.sh"

msg() { timeout 120 "$MSG_BENCH" "$@" | awk '{ print $3 }'; }
mpi() { timeout 120 $MPIRUN "$MPI_BENCH" "$@" 2>/dev/null | awk '/^(bw|lat) / { print $3 }'; }

echo "== messages: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), transport auto (shm here), $REPS repetitions each (median)"
RATIOS=""

alternate "$REPS" 'msg -t msg_bw -s 67108864 -n 8 -w 1 -b 4194304' \
	'msg -t put_bw -s 67108864 -n 8 -w 1'
report msg_vs_put_bw_64MiB "$ours" "$theirs" ">=0.85" "MB/s" "64 MiB send/recv through 4 MiB buffers vs put 64 MiB"

alternate "$REPS" 'msg -t msg_bw -s 1048576 -W 64 -n 10 -w 2' \
	'mpi -t bw -s 1048576 -W 64 -n 10 -w 2'
report msg_vs_mpi_bw_1MiB "$ours" "$theirs" ">=1.0" "MB/s" "osu_bw 1 MiB, window 64, vs Open MPI"

alternate "$REPS" 'msg -t msg_lat -s 8 -n 5000 -w 500' \
	'mpi -t lat -s 8 -n 5000 -w 500'
report msg_vs_mpi_lat_8B "$ours" "$theirs" "<=1.2" "us" "osu_latency 8 B, vs Open MPI"
printf '%s' "$RATIOS"
