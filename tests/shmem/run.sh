#!/bin/sh
# Run every OpenSHMEM conformance test under oshrun with 1, 2, 3 and 4 PEs
# (more PEs than this machine has cores on purpose), then the failure-path
# tests. Usage: tests/shmem/run.sh BUILD_DIR
set -eu
O=${1:-build}
OSHRUN=$O/shmem/oshrun
fail=0

for t in "$O"/tests/shmem/test_*; do
	for n in 1 2 3 4; do
		if ! out=$("$OSHRUN" -np "$n" --timeout 60 "$t" 2>&1); then
			echo "FAIL $(basename "$t") with $n PEs:"
			echo "$out" | tail -20
			fail=1
		else
			echo "ok   $(basename "$t") with $n PEs"
		fi
	done
done
[ "$fail" = 0 ] || exit 1
