#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The pool section of `make bench` (tests/bench/pool_bench.c says what is
# timed): two ranks on this host under hmcrun, then two network namespaces
# as two hosts with UCX over tcp, where the reference is hmc_comm_put on
# the world's communicator, the same transport the pool's copies take.
# Prints RATIO lines, asserts nothing.
#   tests/bench/pool.sh (from the top of the tree; bench.sh sets BENCH_BIN)
set -eu
BIN=${BENCH_BIN:-${O:-build}/tests/bench}
BENCH=$BIN/pool_bench
RUN=${BIN%/tests/bench}/tools/hmcrun
echo "# pool: 2 ranks on one host (hmcrun)"
UCX_TLS=posix,cma,self "$RUN" -n 2 "$BENCH" host
echo "# pool: 2 network namespaces, UCX over tcp"
tests/pool/netns.sh -n 2 "$BENCH" net | sed -n 's/^\[0\] \(RATIO\|#\)/\1/p'
