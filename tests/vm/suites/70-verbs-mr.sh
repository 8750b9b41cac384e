#!/bin/bash
# Memory regions over the verbs transport on soft-RoCE
# (tests/integration/test_mr): every pair of region and ConnBuffer, every
# byte checked, over 1 queue pair with memfd ConnBuffers and over 4 with
# /dev/hmc ones and chunks of an odd 100003 bytes; rights and bounds
# refused before a WR goes; dereg under a posting thread; a stale key,
# which the NIC refuses (a remote access error that cuts the connection).
# A region of CUDA memory (the mock driver of tests/gpu): its dma-buf
# refused by rxe, registered as peer memory and moved to and from, every
# byte checked; with memory the device cannot reach, registering fails
# with -EOPNOTSUPP (test_verbs gpumr).
SUITE=verbs-mr
# shellcheck source=tests/vm/suites/70-verbs.lib
. "$(dirname "$0")/70-verbs.lib"
mr=$BIN/tests/integration/test_mr
prog=$BIN/tests/verbs/test_verbs
verbs_setup "$mr" "$prog"

run_mlock HMC_TEST_TRANSPORT=verbs HMC_TEST_CHS=1 "$mr" -N verbs-mr-1ch-mlock
run_kmod HMC_TEST_TRANSPORT=verbs HMC_TEST_CHS=4 HMC_VERBS_CHUNK=100003 \
	"$mr" -N verbs-mr-4ch-chunk100003-kmod
MOCK_CUDA=(LD_LIBRARY_PATH=$BIN/tests/gpu/mock)
run_mlock "${MOCK_CUDA[@]}" HMC_VERBS_CHUNK=100003 "$prog" gpumr --chs 2
run_mlock "${MOCK_CUDA[@]}" MOCK_GPU_UNREACHABLE=1 "$prog" gpumr --chs 1
exit $suite_rc
