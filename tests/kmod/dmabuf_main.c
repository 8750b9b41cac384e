// SPDX-License-Identifier: GPL-2.0
/*
 * test_dmabuf: hmc.ko's dma-buf side, in the test guest as root with hmc
 * loaded (tests/vm/suites/20-dmabuf.sh): BUF_EXPORT (dmabuf_export.c),
 * PEER_IMPORT (dmabuf_import.c), both against vgem, the only dma-buf
 * driver of the stock kernel without a GPU (dmabuf_vgem.c), and imports
 * of an exporter that moves its memory (dmabuf_move.c, with the test
 * module tests/kmod/mover). Runner and helpers: kmod_test.c.
 *
 *   test_dmabuf [-l] [NAME...] | --global-stats
 *
 * Environment: HMC_KO (reloaded by the rmmod test).
 */
#include "kmod_test.h"

static const struct test *const groups[] = {
	export_tests, import_tests, vgem_tests, move_tests,
};

int main(int argc, char **argv)
{
	return test_main("dmabuf", groups, sizeof(groups) / sizeof(groups[0]),
			 argc, argv);
}
