#!/bin/bash
# One process, two transports: 3 ranks where each pair takes verbs or UCX
# (tcp) in turn (HMC_TEST_TRANSPORT=verbs,ucx: ranks 0-2 verbs, 0-1 and
# 1-2 UCX), so that every rank talks verbs to one peer and UCX to another
# at the same time, through the whole communicator suite.
SUITE=verbs-mixed
# shellcheck source=tests/vm/suites/70-verbs.lib
. "$(dirname "$0")/70-verbs.lib"
comm=$BIN/tests/integration/test_comm
verbs_setup "$comm"

run_mlock "${UCX_TCP[@]}" HMC_TEST_TRANSPORT=verbs,ucx HMC_TEST_CHS=2 \
	"$comm" -n 3 -N verbs+ucx-3ranks-mlock
exit $suite_rc
