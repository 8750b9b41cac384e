// SPDX-License-Identifier: GPL-2.0
/*
 * Tests of hmc.ko through /dev/hmc, run as root in the test guest with the
 * module loaded (tests/vm/suites/10-kmod.sh). The tests live in test_*.c by
 * subject; the runner and helpers in kmod_test.c.
 *
 *   test_kmod [-l] [NAME...]   run all tests, or the named ones; -l lists
 *   test_kmod --global-stats   print the global counters; fails if a live
 *                              one is not zero
 *
 * Environment: HMC_KO (the module, reloaded by the rmmod test) and
 * HMC_RXE_DEV (a soft-RoCE device for the RDMA tests).
 */
#include "kmod_test.h"

static const struct test *const groups[] = {
	ioctl_tests, mmap_tests, pin_tests, life_tests, rdma_tests, fuzz_tests,
};

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--exec-probe"))
		return exec_probe(atoi(argv[2]));
	return test_main("kmod", groups, sizeof(groups) / sizeof(groups[0]),
			 argc, argv);
}
