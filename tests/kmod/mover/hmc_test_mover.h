/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/* The ioctls of /dev/hmc_test_mover (tests only, no stable ABI). */
#ifndef HMC_TEST_MOVER_H
#define HMC_TEST_MOVER_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define HMC_TEST_MOVER_PATH	"/dev/hmc_test_mover"

/* A dma-buf of @size bytes (page multiple) of zeroed pages, in @fd. */
struct hmc_test_mover_create {
	__u64 size;		/* in */
	__s32 fd;		/* out */
	__u32 pad;
};

/*
 * Moves dma-buf @fd (one of ours) to new pages, its contents copied, after
 * telling importers (move_notify); EBUSY while a static importer has it
 * pinned.
 */
struct hmc_test_mover_move {
	__s32 fd;		/* in */
	__u32 pad;
};

#define HMC_TEST_MOVER_CREATE	_IOWR('h', 0x40, struct hmc_test_mover_create)
#define HMC_TEST_MOVER_MOVE	_IOW('h', 0x41, struct hmc_test_mover_move)

#endif
