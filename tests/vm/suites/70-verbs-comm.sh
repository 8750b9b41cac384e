#!/bin/bash
# The communicator suite (tests/integration: test_comm, test_threads) over
# the verbs transport on soft-RoCE: 1 and 4 queue pairs per peer, chunks of
# the default 1 MiB and of an odd 100003 bytes (random transfers run up to
# 3 MiB and are never a multiple of either), 2 and 4 ranks, ConnBuffers
# from a memfd (mlocked) and from /dev/hmc (whose counters must return to
# zero), every byte checked; several threads posting on one communicator.
SUITE=verbs-comm
# shellcheck source=tests/vm/suites/70-verbs.lib
. "$(dirname "$0")/70-verbs.lib"
comm=$BIN/tests/integration/test_comm
threads=$BIN/tests/integration/test_threads
verbs_setup "$comm" "$threads"

run_mlock HMC_TEST_TRANSPORT=verbs HMC_TEST_CHS=1 \
	"$comm" -n 2 -N verbs-1ch-mlock
run_kmod HMC_TEST_TRANSPORT=verbs HMC_TEST_CHS=4 HMC_VERBS_CHUNK=100003 \
	"$comm" -n 2 --kmod -N verbs-4ch-chunk100003-kmod
run_mlock HMC_TEST_TRANSPORT=verbs HMC_TEST_CHS=4 \
	"$comm" -n 4 -t 200 -N verbs-4ch-4ranks-mlock
run_mlock HMC_TEST_TRANSPORT=verbs HMC_TEST_CHS=4 HMC_VERBS_CHUNK=65536 \
	"$threads" -N verbs-threads-4ch
exit $suite_rc
