#!/bin/bash
# The global memory pool over verbs (soft-RoCE): 2 ranks whose pool
# communicators reach each other at rxe0's address over TCP control, as two
# hosts would, with device segments of the mock CUDA runtime
# (tests/gpu/mock). Each owner registers its device segment as a memory
# region; rxe refuses its dma-buf and takes it as peer memory, so the other
# rank's copies to and from it go one-sided, NIC to device memory, with no
# owner in between: the pool's debug log must say so for both ranks, and
# tests/pool/pool_test checks every byte of every copy kind, synchronous,
# asynchronous and batched, as on the host.
SUITE=pool-verbs
# shellcheck source=tests/vm/suites/70-verbs.lib
. "$(dirname "$0")/70-verbs.lib"
pool=$BIN/tests/pool/pool_test
run=$BIN/tools/hmcrun
verbs_setup "$pool" "$run"

out=$(mktemp)
run_mlock LD_LIBRARY_PATH="$BIN/tests/gpu/mock" HMC_GPU_MOCK=1 \
	HMC_CTRL_TRANSPORT=tcp HMC_WORLD_ADDR="$HMC_RXE_IP" HMC_LOG=debug \
	timeout 300 "$run" -n 2 --tag-output "$pool" -d cuda >"$out" 2>&1
grep -E '^(\[[0-9]\] )?(ok|not ok)' "$out"
if grep -q 'not ok' "$out" || ! grep -q 'checks, 0 failed' "$out"; then
	tap fail "pool_test -d cuda over verbs"
	tail -n 30 "$out"
fi
# (the one-sided lines below prove it of the pool's communicators: tcp
# would refuse their device segments)
if grep -q "connected over verbs" "$out"; then
	tap ok "the pool's communicators meet over verbs"
else
	tap fail "the pool's communicators meet over verbs"
	grep "connected over" "$out" | head -5
fi
for r in 0 1; do
	if grep -q "pool: rank $((1 - r))'s device segment: one-sided" "$out"; then
		tap ok "rank $r reaches rank $((1 - r))'s device segment one-sided"
	else
		tap fail "rank $r reaches rank $((1 - r))'s device segment one-sided"
		grep "device segment" "$out" | head -5
	fi
done
rm -f "$out"
exit $suite_rc
