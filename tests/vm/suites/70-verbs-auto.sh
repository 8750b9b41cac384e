#!/bin/bash
# What HMC_TRANSPORT_AUTO picks where an RDMA port is up (soft-RoCE), with
# memfd ConnBuffers, every byte checked: between ranks that reach each
# other at rxe0's address over TCP control, as two hosts would, verbs;
# over loopback control rxe0 is not what reaches the peer, so AUTO leaves
# it alone and takes libhmc's tcp transport.
SUITE=verbs-auto
# shellcheck source=tests/vm/suites/70-verbs.lib
. "$(dirname "$0")/70-verbs.lib"
comm=$BIN/tests/integration/test_comm
verbs_setup "$comm"

run_mlock HMC_TEST_TRANSPORT=auto HMC_TEST_AUTO_IS=verbs \
	HMC_CTRL_TRANSPORT=tcp "$comm" -n 2 \
	--ips "$HMC_RXE_IP,$HMC_RXE_IP" -N verbs-auto
run_mlock HMC_TEST_TRANSPORT=auto HMC_TEST_AUTO_IS=tcp \
	HMC_CTRL_TRANSPORT=tcp "$comm" -n 2 -N verbs-auto-loopback-tcp
exit $suite_rc
