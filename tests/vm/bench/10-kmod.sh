#!/bin/bash
# Benchmark of hmc.ko in the guest (tests/kmod/kmod_bench.c): ConnBuffer
# alloc+map+touch+free latency, and BUF_PIN against ibv_reg_mr on soft-RoCE.
set -u
prog=$HMC_BUILD/tests/kmod/kmod_bench

if [ ! -x "$prog" ]; then
	echo "kmod bench: $prog is missing (make kmod-tests)" >&2
	exit 1
fi
insmod "$HMC_KO" || exit 1
"$prog"
rc=$?
rmmod hmc || rc=1
exit $rc
