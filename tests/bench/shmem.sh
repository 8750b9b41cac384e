#!/bin/sh
# SPDX-License-Identifier: MIT
#
# OpenSHMEM benchmarks of `make bench`: libhmc_shmem against Debian's Open
# MPI on this host, in one invocation. tests/bench/shmem_bench.c is written
# in the OpenSHMEM 1.4 subset and built twice, with libhmc_shmem and with
# Open MPI's oshcc (liboshmem, its default UCX spml and transports);
# tests/bench/mpi_coll.c gives Open MPI's MPI_Allreduce and MPI_Bcast with
# the same ranks. Every tool runs with its own launcher (oshrun, Open MPI's
# oshrun and mpirun), all with more PEs than this machine may have CPUs.
#
#   put_lat_8B       putmem 8 B + quiet, ping-pong through wait_until (one-way)
#   put_bw_1MiB      putmem 1 MiB back to back, quiet at the end (best batch)
#   fadd_lat         blocking long fetch-and-add on the peer
#   barrier_4pe      barrier_all
#   sum_reduce_*     long_sum_to_all of 8 B and 1 MiB
#   bcast_1MiB_4pe   broadcast64 of 1 MiB (vs MPI_Bcast)
#
# Each program reports the median of 5 batches; each pair runs REPS times,
# alternating the tools so that both see the same background load, and the
# ratio is the median of the pairs' ratios (stats.sh). Open MPI's OSHMEM
# dies in shmem_finalize on Debian 12, so its status is ignored and every
# RESULT line it must print is checked instead. Ratios are printed, never
# asserted: `RATIO <name> <value> <target>`.
set -eu

# The build directory: O, else the one BENCH_BIN (bench.sh's) lies in.
bin=${BENCH_BIN:-build/tests/bench}
O=${O:-${bin%/tests/bench}}
REPS=${SHMEM_BENCH_REPS:-5}
OURS_RUN=${OSHRUN:-$O/shmem/oshrun}
BENCH_HMC=$O/tests/bench/shmem_bench_hmc
BENCH_OMPI=$O/tests/bench/shmem_bench_ompi
MPI_COLL=$O/tests/bench/mpi_coll
OMPI_FLAGS="--allow-run-as-root --oversubscribe"
# Open MPI's by path: an installed libhmc_shmem's oshrun may come first in PATH.
OMPI_OSHRUN=${OMPI_OSHRUN:-/usr/bin/oshrun}

die() { echo "bench: $*" >&2; exit 1; }

for f in "$OURS_RUN" "$BENCH_HMC" "$BENCH_OMPI" "$MPI_COLL"; do
	[ -x "$f" ] || die "$f not built"
done
[ -x "$OMPI_OSHRUN" ] || die "Open MPI's $OMPI_OSHRUN not found (package openmpi-bin)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# shellcheck source=tests/bench/stats.sh
. "$(dirname "$0")/stats.sh"

# value FILE NAME: the number of `RESULT NAME` in FILE, or fail.
value() {
	v=$(awk -v n="$2" '$1 == "RESULT" && $2 == n { print $3 }' "$1")
	[ -n "$v" ] || die "no result $2 from $3: $(tail -n 20 "$1")"
	echo "$v"
}

ours() {	# ours NPES MODE
	timeout 120 "$OURS_RUN" -np "$1" "$BENCH_HMC" "$2" >"$tmp/ours.$2" 2>&1 ||
		die "libhmc_shmem $2 failed: $(tail -n 20 "$tmp/ours.$2")"
}

ompi() {	# ompi NPES MODE: status ignored (see above)
	# shellcheck disable=SC2086
	timeout 120 "$OMPI_OSHRUN" $OMPI_FLAGS -np "$1" "$BENCH_OMPI" "$2" \
		>"$tmp/ompi.$2" 2>&1 || true
}

mpi() {
	# shellcheck disable=SC2086
	timeout 120 mpirun $OMPI_FLAGS -np 4 "$MPI_COLL" >"$tmp/mpi" 2>&1 ||
		die "mpirun mpi_coll failed: $(tail -n 20 "$tmp/mpi")"
}

P2P="put_lat_8B put_bw_1MiB fadd_lat"
COLL="barrier_4pe sum_reduce_8B_4pe sum_reduce_1MiB_4pe bcast_1MiB_4pe"
MPI="mpi_allreduce_1MiB_4pe mpi_bcast_1MiB_4pe"
for n in $P2P $COLL $MPI; do
	eval "ours_$n='' ompi_$n=''"
done

i=0
while [ $i -lt "$REPS" ]; do
	ours 2 p2p
	ompi 2 p2p
	ours 4 coll
	ompi 4 coll
	mpi
	for n in $P2P; do
		eval "ours_$n=\"\$ours_$n \$(value \"$tmp/ours.p2p\" $n libhmc_shmem)\""
		eval "ompi_$n=\"\$ompi_$n \$(value \"$tmp/ompi.p2p\" $n 'Open MPI OSHMEM')\""
	done
	for n in $COLL; do
		eval "ours_$n=\"\$ours_$n \$(value \"$tmp/ours.coll\" $n libhmc_shmem)\""
		eval "ompi_$n=\"\$ompi_$n \$(value \"$tmp/ompi.coll\" $n 'Open MPI OSHMEM')\""
	done
	for n in $MPI; do
		eval "ompi_$n=\"\$ompi_$n \$(value \"$tmp/mpi\" $n 'Open MPI')\""
	done
	i=$((i + 1))
done

echo "== OpenSHMEM: libhmc_shmem vs $("$OMPI_OSHRUN" --version 2>&1 | head -n 1) (OSHMEM, default UCX spml), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$REPS runs each (median of pair ratios), tools alternating; latencies one-way us, MB/s = 10^6 B/s"
OURS=libhmc_shmem
RATIOS=""
r() {	# r NAME OURS THEIRS TARGET UNIT WHAT
	eval "a=\$ours_$2 b=\$ompi_$3"
	# shellcheck disable=SC2154
	report "$1" "$a" "$b" "$4" "$5" "$6"
}
r shmem_put_lat_8B put_lat_8B put_lat_8B "<=0.5" us "putmem 8 B + quiet, ping-pong (wait_until), 2 PEs"
r shmem_put_bw_1MiB put_bw_1MiB put_bw_1MiB ">=1.0" MB/s "putmem 1 MiB stream, 2 PEs"
r shmem_fadd_lat fadd_lat fadd_lat "<=0.5" us "long_atomic_fetch_add, 2 PEs"
r shmem_barrier_4pe barrier_4pe barrier_4pe "<=1.0" us "barrier_all, 4 PEs"
r shmem_sum_reduce_8B_4pe sum_reduce_8B_4pe sum_reduce_8B_4pe "<=1.0" us "long_sum_to_all 8 B, 4 PEs"
r shmem_sum_reduce_1MiB_4pe sum_reduce_1MiB_4pe sum_reduce_1MiB_4pe "<=1.0" us "long_sum_to_all 1 MiB, 4 PEs"
r shmem_vs_mpi_allreduce_1MiB_4pe sum_reduce_1MiB_4pe mpi_allreduce_1MiB_4pe "<=1.0" us "long_sum_to_all vs MPI_Allreduce (MPI_LONG, MPI_SUM) 1 MiB, 4 ranks"
r shmem_vs_mpi_bcast_1MiB_4pe bcast_1MiB_4pe mpi_bcast_1MiB_4pe "<=1.0" us "broadcast64 vs MPI_Bcast 1 MiB, 4 ranks"
printf '%s' "$RATIOS"
