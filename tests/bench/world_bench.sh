#!/bin/bash
# hmc_world against Open MPI on this host (a section of make bench's
# tests/bench/bench.sh; its programs come from tests/world/world.mk):
#  - start-up: the wall time of `hmcrun -n N world_bench init` (launch, init,
#    one barrier, finalize) against `mpirun -np N mpi_world init` (MPI_Init,
#    MPI_Barrier, MPI_Finalize), N = 2, 4, 8, launchers alternating, the
#    median of REPS runs each;
#  - hmc_world_allgather of 64 B at 4 ranks against MPI_Allgather: mean
#    latency over 2000 calls, the median of REPS runs.
# The tools take turns; each ratio is the median of the pairs' ratios
# (stats.sh). Prints `RATIO <name> <ours/theirs> <target>`; lower is better.
# alternate (stats.sh) evals its commands, which expand the variables there.
# shellcheck disable=SC2016,SC2034
set -eu
B=${BENCH_BIN:-${O:-build}/tests/bench}
REPS=${WORLD_BENCH_REPS:-5}
RUN=${HMCRUN:-$B/../../tools/hmcrun}
HB=$B/world_bench
MB=$B/mpi_world
MPIRUN=(mpirun --allow-run-as-root --oversubscribe)
export UCX_TLS=${UCX_TLS:-posix,cma,self}

# shellcheck source=tests/bench/stats.sh
. "$(dirname "$0")/stats.sh"

ms() { local s e; s=$(date +%s%N); "$@" >/dev/null; e=$(date +%s%N); echo $(((e - s) / 1000000)); }

echo "world: hmcrun vs mpirun (Open MPI $(mpirun --version 2>/dev/null | head -n 1 | awk '{ print $NF }')), $REPS runs each, median"
RATIOS=
OURS=hmcrun
for n in 2 4 8; do
	alternate "$REPS" 'ms "$RUN" -n $n "$HB" init' \
		'ms "${MPIRUN[@]}" -np $n "$MB" init'
	report "world_init_${n}_vs_mpi_init" "$ours" "$theirs" 1.0 ms \
		"world start-up, $n ranks: hmcrun vs mpirun"
done
OURS=hmc_world
alternate "$REPS" '"$RUN" -n 4 "$HB" allgather 2000 64' \
	'"${MPIRUN[@]}" -np 4 "$MB" allgather 2000 64'
report world_allgather_64B_4_vs_mpi "$ours" "$theirs" 1.0 us \
	"allgather 64 B, 4 ranks: hmc_world vs MPI_Allgather"
printf '%s' "$RATIOS"
