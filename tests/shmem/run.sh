#!/bin/sh
# Run every OpenSHMEM conformance test under oshrun (hmcrun) with 1, 2, 3
# and 4 PEs (more PEs than this machine has cores on purpose) and under
# Open MPI's mpirun with 4 (PMIx), then shmemx_init_attr() from a world and
# from a unique id, then the failure-path tests, then the remote path:
# a PE in another pid namespace, every PE remote (HMC_SHMEM_MAP=0), and
# PEs across two network namespaces (netns.sh).
# Usage: tests/shmem/run.sh BUILD_DIR
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

# Profiling interface: the profiler linked statically, and pshmem.h
# declares exactly the pshmem_ entry points the library exports.
for n in 1 3; do
	if out=$("$OSHRUN" -np "$n" --timeout 60 "$O/tests/shmem/pshmem_static" 2>&1); then
		echo "ok   pshmem_static with $n PEs"
	else
		echo "FAIL pshmem_static with $n PEs:"
		echo "$out" | tail -20
		fail=1
	fi
done
lib_p=$(nm -D --defined-only "$O/shmem/libhmc_shmem.so" |
	awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' | grep '^p' | sort)
hdr_p=$(sed -n 's/^extern __typeof__(.*) \(p[A-Za-z0-9_]*\);$/\1/p' \
	"$(dirname "$0")/../../include/hmc-shmem/pshmem.h" | sort)
if [ -n "$lib_p" ] && [ "$lib_p" = "$hdr_p" ]; then
	echo "ok   pshmem.h declares the $(echo "$lib_p" | wc -l) pshmem_ entry points"
else
	echo "FAIL pshmem.h and libhmc_shmem's pshmem_ symbols differ:"
	d=$(mktemp -d)
	echo "$lib_p" >"$d/lib"
	echo "$hdr_p" >"$d/hdr"
	diff "$d/lib" "$d/hdr" | head -20 || true
	rm -rf "$d"
	fail=1
fi

# mpirun starts the same programs: hmc_world takes its PMIx.
MPIRUN="mpirun --allow-run-as-root --oversubscribe"
command -v mpirun >/dev/null || { echo "FAIL mpirun not found (openmpi-bin)"; exit 1; }
for t in "$O"/tests/shmem/test_*; do
	if ! out=$(timeout 120 $MPIRUN -np 4 "$t" 2>&1); then
		echo "FAIL $(basename "$t") under mpirun -np 4:"
		echo "$out" | tail -20
		fail=1
	else
		echo "ok   $(basename "$t") under mpirun -np 4"
	fi
done

# shmemx_init_attr(): from the program's own world, and from a unique id.
for n in 1 2 4; do
	if out=$("$OSHRUN" -np "$n" --timeout 60 "$O/tests/shmem/shmemx_init" world 2>&1) &&
	   [ "$out" = "shmemx world: $n PEs ok" ]; then
		echo "ok   shmemx_init_attr from a world with $n PEs"
	else
		echo "FAIL shmemx_init_attr from a world with $n PEs: $out"
		fail=1
	fi
	if out=$(timeout 60 "$O/tests/shmem/shmemx_init" uid "$n" 2>/dev/null) &&
	   [ "$out" = "shmemx uid: $n PEs ok" ]; then
		echo "ok   shmemx_init_attr from a unique id with $n PEs"
	else
		echo "FAIL shmemx_init_attr from a unique id with $n PEs: $out"
		fail=1
	fi
done

# Programs built with oshcc, as a user builds them.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
d=$(dirname "$0")
for ex in shift ticket; do
	"$O/shmem/oshcc" -O2 -o "$tmp/$ex" "$d/example_$ex.c"
	for n in 1 4; do
		out=$("$OSHRUN" -np "$n" --timeout 60 "$tmp/$ex" 2>&1) || true
		if [ "$out" = "$ex correct on $n PEs" ] ||
		   [ "$out" = "tickets correct on $n PEs" -a "$ex" = ticket ]; then
			echo "ok   oshcc example_$ex with $n PEs"
		else
			echo "FAIL oshcc example_$ex with $n PEs: $out"
			fail=1
		fi
	done
done

# Failure paths: status, one clear line, and no hang (--timeout gives 124).
"$O/shmem/oshcc" -O2 -o "$tmp/failure" "$d/failure.c"
expect_fail() {	# mode, status, pattern of the line
	set +e
	"$OSHRUN" -np 3 --timeout 20 "$tmp/failure" "$1" >"$tmp/out" 2>&1
	rc=$?
	set -e
	if [ "$rc" = "$2" ] && [ "$(grep -c -- "$3" "$tmp/out")" = 1 ]; then
		echo "ok   failure $1 ends the job (status $rc)"
	else
		echo "FAIL failure $1: status $rc, want $2 and one line matching '$3':"
		cat "$tmp/out"
		fail=1
	fi
}
expect_fail nonsym 1 '^shmem: PE 2: shmem_long_p: 0x[0-9a-f]* (8 bytes) is not a symmetric data object$'
expect_fail badpe 1 '^shmem: PE 2: shmem_long_p: PE 3 is out of range \[0, 3)$'
expect_fail kill 137 '^hmcrun: rank 2 (pid [0-9]*) killed by signal 9 (Killed); stopping the others$'
expect_fail exit 3 '^hmcrun: rank 2 (pid [0-9]*) exited with status 3; stopping the others$'
# global_exit(0): the job ends with status 0, the other PEs told to exit
# with it (the launcher would wait for them), wherever they are; mpirun
# counts their exits as clean (each PE finalizes its PMIx client first).
for launcher in oshrun mpirun; do
	for mode in exit0 exit0busy; do
		set +e
		if [ $launcher = oshrun ]; then
			"$OSHRUN" -np 3 --timeout 20 "$tmp/failure" "$mode"
		else
			timeout -k 5 30 $MPIRUN -np 3 "$tmp/failure" "$mode"
		fi >"$tmp/out" 2>&1
		rc=$?
		set -e
		if [ "$rc" = 0 ] && [ ! -s "$tmp/out" ]; then
			echo "ok   failure $mode under $launcher ends the job (status 0)"
		else
			echo "FAIL failure $mode under $launcher: status $rc, want 0 and no output:"
			cat "$tmp/out"
			fail=1
		fi
	done
done

# A PE that never comes: start-up fails at the world's deadline with one
# line that names the missing rank, never a hang.
set +e
HMC_BOOTSTRAP=store HMC_STORE=tcp://127.0.0.1:$((20000 + $$ % 12000)) \
	HMC_WORLD_SIZE=2 HMC_RANK=0 HMC_WORLD_TIMEOUT=2000 \
	timeout 30 "$O/tests/shmem/test_setup" >"$tmp/out" 2>&1
rc=$?
set -e
if [ "$rc" = 1 ] && [ "$(wc -l <"$tmp/out")" = 1 ] &&
   grep -q '^shmem: shmem_init: start-up failed: .*never joined: 1' "$tmp/out"; then
	echo "ok   a PE that never comes fails start-up in one line (status 1)"
else
	echo "FAIL a PE that never comes: status $rc:"
	cat "$tmp/out"
	fail=1
fi

# A PE in another pid namespace (as on another host, its pid names another
# process here) is not mapped but reached by messages: the setup test
# checks that shmem_ptr() to it is NULL and that puts reach its globals.
# Needs unshare(CLONE_NEWPID).
if unshare --pid --fork true 2>/dev/null; then
	export HMC_BOOTSTRAP=store HMC_WORLD_SIZE=2 HMC_WORLD_TIMEOUT=10000
	export HMC_STORE=tcp://127.0.0.1:$((20001 + $$ % 12000))	# not ephemeral
	set +e
	SHMEM_TEST_HOST_PES=1 HMC_RANK=0 timeout 30 "$O/tests/shmem/test_setup" \
		>"$tmp/r0" 2>&1 &
	SHMEM_TEST_HOST_PES=1 HMC_RANK=1 timeout 30 unshare --pid --fork \
		"$O/tests/shmem/test_setup" >"$tmp/r1" 2>&1
	rc1=$?
	wait $!
	rc0=$?
	set -e
	unset HMC_BOOTSTRAP HMC_WORLD_SIZE HMC_WORLD_TIMEOUT HMC_STORE
	if [ "$rc0$rc1" = 00 ] && [ "$(cat "$tmp/r0" "$tmp/r1")" = "setup: 2 PEs ok" ]; then
		echo "ok   a PE in another pid namespace is reached as a remote PE"
	else
		echo "FAIL a PE in another pid namespace: status $rc0 and $rc1:"
		cat "$tmp/r0" "$tmp/r1"
		fail=1
	fi
else
	echo "SKIP a PE in another pid namespace (unshare --pid needs root)"
fi

# Every PE remote (HMC_SHMEM_MAP=0): the whole suite through peer.c's
# messages, on this host.
for t in "$O"/tests/shmem/test_*; do
	for n in 2 4; do
		if ! out=$(HMC_SHMEM_MAP=0 "$OSHRUN" -np "$n" --timeout 120 "$t" 2>&1); then
			echo "FAIL $(basename "$t") with $n remote PEs (HMC_SHMEM_MAP=0):"
			echo "$out" | tail -20
			fail=1
		else
			echo "ok   $(basename "$t") with $n remote PEs (HMC_SHMEM_MAP=0)"
		fi
	done
done
# A world that connects its members on demand (as above 64 ranks): the
# remote PEs connect at shmem_init.
for t in test_rma test_coll; do
	if ! out=$(HMC_WORLD_LAZY=1 HMC_SHMEM_MAP=0 "$OSHRUN" -np 3 --timeout 120 \
		   "$O/tests/shmem/$t" 2>&1) || [ "$out" != "${t#test_}: 3 PEs ok" ]; then
		echo "FAIL $t with 3 remote PEs in a lazy world:"
		echo "$out" | tail -20
		fail=1
	else
		echo "ok   $t with 3 remote PEs in a lazy world (HMC_WORLD_LAZY=1)"
	fi
done

# PEs on two hosts: network namespaces joined by a veth pair (needs root).
"$(dirname "$0")/netns.sh" "$O" || fail=1
[ "$fail" = 0 ]
