#!/bin/bash
# Memory regions over the verbs transport on soft-RoCE
# (tests/integration/test_mr): every pair of region and ConnBuffer, every
# byte checked, over 1 queue pair with memfd ConnBuffers and over 4 with
# /dev/hmc ones and chunks of an odd 100003 bytes; rights and bounds
# refused before a WR goes; dereg under a posting thread; a stale key,
# which the NIC refuses (a remote access error that cuts the connection).
SUITE=verbs-mr
# shellcheck source=tests/vm/suites/70-verbs.lib
. "$(dirname "$0")/70-verbs.lib"
mr=$BIN/tests/integration/test_mr
verbs_setup "$mr"

run_mlock HMC_TEST_TRANSPORT=verbs HMC_TEST_CHS=1 "$mr" -N verbs-mr-1ch-mlock
run_kmod HMC_TEST_TRANSPORT=verbs HMC_TEST_CHS=4 HMC_VERBS_CHUNK=100003 \
	"$mr" -N verbs-mr-4ch-chunk100003-kmod
exit $suite_rc
