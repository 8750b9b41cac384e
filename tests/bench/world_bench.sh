#!/bin/bash
# hmc_world against Open MPI on this host (make bench, via tests/world/world.mk):
#  - start-up: the wall time of `hmcrun -n N world_bench init` (launch, init,
#    one barrier, finalize) against `mpirun -np N mpi_world init` (MPI_Init,
#    MPI_Barrier, MPI_Finalize), N = 2, 4, 8, launchers alternating, the
#    median of REPS runs each;
#  - hmc_world_allgather of 64 B at 4 ranks against MPI_Allgather: mean
#    latency over 2000 calls, the median of REPS runs.
# Prints `RATIO <name> <ours/theirs> <target>`; lower is better.
set -eu
O=${O:-build}
REPS=${WORLD_BENCH_REPS:-5}
RUN=$O/tools/hmcrun
HB=$O/tests/bench/world_bench
MB=$O/tests/bench/mpi_world
MPIRUN=(mpirun --allow-run-as-root --oversubscribe)
export UCX_TLS=${UCX_TLS:-posix,cma,self}

ms() { local s e; s=$(date +%s%N); "$@" >/dev/null; e=$(date +%s%N); echo $(((e - s) / 1000000)); }
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "world: hmcrun vs mpirun (Open MPI $(mpirun --version 2>/dev/null | head -n 1 | awk '{ print $NF }')), $REPS runs each, median"
for n in 2 4 8; do
	ours="" theirs=""
	for _ in $(seq "$REPS"); do
		ours="$ours $(ms "$RUN" -n $n "$HB" init)"
		theirs="$theirs $(ms "${MPIRUN[@]}" -np $n "$MB" init)"
	done
	o=$(median <<<"$ours") t=$(median <<<"$theirs")
	echo "world start-up, $n ranks: hmcrun $o ms, mpirun $t ms"
	echo "RATIO world_init_${n}_vs_mpi_init $(awk -v a="$o" -v b="$t" 'BEGIN { printf "%.3f", a / b }') 1.0"
done
ours="" theirs=""
for _ in $(seq "$REPS"); do
	ours="$ours $("$RUN" -n 4 "$HB" allgather 2000 64)"
	theirs="$theirs $("${MPIRUN[@]}" -np 4 "$MB" allgather 2000 64)"
done
o=$(median <<<"$ours") t=$(median <<<"$theirs")
echo "allgather 64 B, 4 ranks: hmc_world $o us, MPI_Allgather $t us"
echo "RATIO world_allgather_64B_4_vs_mpi $(awk -v a="$o" -v b="$t" 'BEGIN { printf "%.3f", a / b }') 1.0"
