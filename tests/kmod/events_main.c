// SPDX-License-Identifier: GPL-2.0
/*
 * test_events: what hmc.ko tells the world, in the test guest as root with
 * hmc (and, for the RDMA events, hmc_ib) loaded
 * (tests/vm/suites/21-events.sh): PEER_STATE reports (events_peer.c), the
 * generic netlink family (events_genl.c), hmcstat watching a scripted run
 * (events_watch.c) and RDMA device and port events (events_rdma.c). Runner
 * and helpers: kmod_test.c.
 *
 *   test_events [-l] [NAME...] | --global-stats
 *
 * Environment: HMC_HMCSTAT (the hmcstat binary).
 */
#include "kmod_test.h"

static const struct test *const groups[] = {
	peer_tests, genl_tests, watch_tests, rdma_event_tests,
};

int main(int argc, char **argv)
{
	return test_main("events", groups, sizeof(groups) / sizeof(groups[0]),
			 argc, argv);
}
