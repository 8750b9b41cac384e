#!/bin/bash
# SPDX-License-Identifier: MIT
#
# make bench: the host benchmarks, one section per script. Every
# tests/bench/<section>.sh that starts with a #! line runs, in name order,
# under its interpreter and a time limit; scripts without one (stats.sh)
# are helpers the sections source. Each section prints its measurements
# and `RATIO <name> <value> <target>` lines, or `SKIP <section>: <why>`
# where this host cannot run it; at the end come every RATIO and SKIP
# line again, each section's time and the total. A section that fails is
# reported and the others still run; the exit status says whether all
# passed. The guest benchmarks are `make bench-vm`.
#
# Environment: HMCPERF, SOCKPP, MEMCPY_BW (the programs), BENCH_REPS
# (repetitions of each pair), BENCH_SECTION_TIMEOUT (seconds, default 300),
# BENCH_SECTIONS (names to run, default all).
set -u

here=$(cd "$(dirname "$0")" && pwd)
limit=${BENCH_SECTION_TIMEOUT:-300}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
failed=() times=()
start=$SECONDS

for script in "$here"/*.sh; do
	section=$(basename "$script" .sh)
	[ "$section" = bench ] && continue
	read -r first <"$script"
	[[ $first == '#!'* ]] || continue	# a sourced helper
	if [ -n "${BENCH_SECTIONS:-}" ] &&
	   [[ " $BENCH_SECTIONS " != *" $section "* ]]; then
		continue
	fi
	echo "=== section $section"
	t0=$SECONDS
	# shellcheck disable=SC2086 # the interpreter line may carry options
	timeout -k 10 "$limit" ${first#'#!'} "$script" 2>&1 | tee -a "$out"
	rc=${PIPESTATUS[0]}
	times+=("$section $((SECONDS - t0)) s")
	if [ "$rc" != 0 ]; then
		[ "$rc" = 124 ] && echo "bench: section $section ran past $limit s"
		failed+=("$section (exit $rc)")
	fi
done

echo "=== bench summary"
grep -E '^(RATIO|SKIP) ' "$out"
[ ${#times[@]} = 0 ] || printf 'section %s\n' "${times[@]}"
[ ${#failed[@]} = 0 ] || printf 'bench: section %s failed\n' "${failed[@]}"
echo "bench: total $((SECONDS - start)) s"
[ ${#failed[@]} = 0 ]
