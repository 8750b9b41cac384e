/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the hmc.ko test program and its benchmark: thin ioctl
 * wrappers returning 0 or -errno, a non-uniform data pattern, and the
 * soft-RoCE device lookup.
 */
#ifndef HMC_TESTS_KMOD_UTIL_H
#define HMC_TESTS_KMOD_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <linux/hmc.h>

int hmc_open(void);
int hmc_ioc(int fd, unsigned long cmd, void *arg);
int hmc_alloc(int fd, uint64_t size, uint32_t *handle, uint64_t *offset);
int hmc_pin(int fd, const void *addr, uint64_t size, uint32_t flags,
	    uint32_t *handle);
int hmc_free(int fd, uint32_t handle);
int hmc_info(int fd, uint32_t handle, struct hmc_buf_info *info);
int hmc_stats(int fd, int global, uint64_t counters[HMC_STAT_COUNT]);
/* BUF_EXPORT; the dma-buf fd in *dmabuf. */
int hmc_export(int fd, uint32_t handle, uint32_t flags, uint64_t offset,
	       uint64_t size, int *dmabuf);
/* PEER_IMPORT of [offset, offset + size) of @dmabuf; results in *out. */
int hmc_import(int fd, int dmabuf, uint32_t flags, uint64_t offset,
	       uint64_t size, struct hmc_peer_import *out);
int hmc_release(int fd, uint32_t handle);
int hmc_peer_info(int fd, uint32_t handle, struct hmc_peer_info *info);
int hmc_peer_report(int fd, uint64_t peer_id, uint32_t state, int32_t error,
		    uint32_t transport, const void *addr, uint32_t addr_len);
/* MAP_SHARED mapping of /dev/hmc; MAP_FAILED with errno on failure. */
void *hmc_map(int fd, uint64_t offset, size_t len, int prot);

/* Fills or checks 64-bit words that differ at every offset for @seed. */
void pattern_fill(void *p, size_t len, uint64_t seed);
/* Offset of the first byte that differs from the pattern, or -1. */
long pattern_mismatch(const void *p, size_t len, uint64_t seed);

/* VmPin of this process (mm->pinned_vm) in KiB, or -1. */
long vm_pinned_kib(void);
uint64_t now_ns(void);

/* The RDMA device named @name, opened, or NULL. */
struct ibv_context *rdma_open(const char *name);
/* Index of a RoCE v2 IPv4 GID of port 1, stored in @gid, or -1. */
int rdma_ipv4_gid(struct ibv_context *ctx, union ibv_gid *gid);

#endif
