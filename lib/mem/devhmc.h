/* SPDX-License-Identifier: MIT */
/*
 * The /dev/hmc client: opening the device (loading hmc.ko with libkmod if
 * it is installed but not loaded) and thin ioctl wrappers that return 0 or
 * a negative errno.
 */
#ifndef HMC_LIB_DEVHMC_H
#define HMC_LIB_DEVHMC_H

#include <stdbool.h>
#include <stdint.h>

#include <hmc/hmc.h>
#include <linux/hmc.h>

/*
 * Open /dev/hmc (O_RDWR | O_CLOEXEC) and check that it speaks our ABI
 * major and has all of @features (HMC_FEAT_*). Returns the fd, or:
 * -ENOENT: no /dev/hmc, and hmc.ko could not be loaded;
 * -EACCES: no permission to open it;
 * -EPROTO: another ABI major;
 * -EOPNOTSUPP: a feature is missing;
 * another -errno if GET_VERSION fails.
 * Why it failed is logged at @level. @version (may be NULL) receives
 * GET_VERSION's answer.
 */
int devhmc_open(uint64_t features, struct hmc_version *version,
		enum hmc_log_level level);

/* ioctl(@fd, @cmd, @arg), retried on EINTR: 0 or -errno. */
int devhmc_ioctl(int fd, unsigned long cmd, void *arg);

/*
 * BUF_ALLOC of @size bytes; on @numa_node if it is >= 0. @alloc receives
 * the handle and mmap offset.
 */
int devhmc_buf_alloc(int fd, uint64_t size, int numa_node,
		     struct hmc_buf_alloc *alloc);

/*
 * PEER_STATE: a fabric peer @peer_id changed @state (HMC_PEER_*); @err is 0
 * or a negative errno; @addr (@addr_len bytes, at most HMC_PEER_ADDR_MAX)
 * is its address.
 */
int devhmc_peer_state(int fd, uint64_t peer_id, uint32_t state, int err,
		      uint32_t transport, const void *addr, uint32_t addr_len);

/* GET_STATS: this file's counters, or the module's with @global. */
int devhmc_get_stats(int fd, bool global, uint64_t counters[HMC_STAT_COUNT]);

#endif
