// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "kmod_util.h"

int hmc_open(void)
{
	int fd = open(HMC_DEVICE_PATH, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int hmc_ioc(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

int hmc_alloc(int fd, uint64_t size, uint32_t *handle, uint64_t *offset)
{
	struct hmc_buf_alloc a = { .size = size };
	int ret = hmc_ioc(fd, HMC_IOC_BUF_ALLOC, &a);

	if (!ret) {
		*handle = a.handle;
		if (offset)
			*offset = a.mmap_offset;
	}
	return ret;
}

int hmc_pin(int fd, const void *addr, uint64_t size, uint32_t flags,
	    uint32_t *handle)
{
	struct hmc_buf_pin p = {
		.addr = (uintptr_t)addr, .size = size, .flags = flags,
	};
	int ret = hmc_ioc(fd, HMC_IOC_BUF_PIN, &p);

	if (!ret)
		*handle = p.handle;
	return ret;
}

int hmc_free(int fd, uint32_t handle)
{
	struct hmc_buf_free f = { .handle = handle };

	return hmc_ioc(fd, HMC_IOC_BUF_FREE, &f);
}

int hmc_info(int fd, uint32_t handle, struct hmc_buf_info *info)
{
	memset(info, 0, sizeof(*info));
	info->handle = handle;
	return hmc_ioc(fd, HMC_IOC_BUF_INFO, info);
}

int hmc_stats(int fd, int global, uint64_t counters[HMC_STAT_COUNT])
{
	struct hmc_stats s = {
		.flags = global ? HMC_STATS_F_GLOBAL : 0,
		.nr_counters = HMC_STAT_COUNT,
		.counters_ptr = (uintptr_t)counters,
	};

	return hmc_ioc(fd, HMC_IOC_GET_STATS, &s);
}

int hmc_export(int fd, uint32_t handle, uint32_t flags, uint64_t offset,
	       uint64_t size, int *dmabuf)
{
	struct hmc_buf_export e = {
		.handle = handle, .flags = flags, .offset = offset,
		.size = size, .fd = -1,
	};
	int ret = hmc_ioc(fd, HMC_IOC_BUF_EXPORT, &e);

	*dmabuf = ret ? -1 : e.fd;
	return ret;
}

int hmc_import(int fd, int dmabuf, uint32_t flags, uint64_t offset,
	       uint64_t size, struct hmc_peer_import *out)
{
	memset(out, 0, sizeof(*out));
	out->fd = dmabuf;
	out->flags = flags;
	out->offset = offset;
	out->size = size;
	return hmc_ioc(fd, HMC_IOC_PEER_IMPORT, out);
}

int hmc_release(int fd, uint32_t handle)
{
	struct hmc_peer_release r = { .handle = handle };

	return hmc_ioc(fd, HMC_IOC_PEER_RELEASE, &r);
}

int hmc_peer_info(int fd, uint32_t handle, struct hmc_peer_info *info)
{
	memset(info, 0, sizeof(*info));
	info->handle = handle;
	return hmc_ioc(fd, HMC_IOC_PEER_INFO, info);
}

int hmc_peer_report(int fd, uint64_t peer_id, uint32_t state, int32_t error,
		    uint32_t transport, const void *addr, uint32_t addr_len)
{
	struct hmc_peer_state s = {
		.peer_id = peer_id, .state = state, .error = error,
		.transport = transport, .addr_len = addr_len,
	};

	if (addr_len <= sizeof(s.addr))
		memcpy(s.addr, addr, addr_len);
	return hmc_ioc(fd, HMC_IOC_PEER_STATE, &s);
}

void *hmc_map(int fd, uint64_t offset, size_t len, int prot)
{
	return mmap(NULL, len, prot, MAP_SHARED, fd, (off_t)offset);
}

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint8_t pattern_byte(size_t off, uint64_t seed)
{
	return splitmix64(seed ^ (off / 8)) >> (off % 8 * 8);
}

void pattern_fill(void *p, size_t len, uint64_t seed)
{
	uint64_t *w = p;
	size_t i;

	for (i = 0; i < len / 8; i++)
		w[i] = splitmix64(seed ^ i);
	for (i = len / 8 * 8; i < len; i++)
		((uint8_t *)p)[i] = pattern_byte(i, seed);
}

long pattern_mismatch(const void *p, size_t len, uint64_t seed)
{
	const uint64_t *w = p;
	size_t i;

	for (i = 0; i < len / 8; i++)
		if (w[i] != splitmix64(seed ^ i))
			break;
	for (i *= 8; i < len; i++)
		if (((const uint8_t *)p)[i] != pattern_byte(i, seed))
			return (long)i;
	return -1;
}

long vm_pinned_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

struct ibv_context *rdma_open(const char *name)
{
	struct ibv_context *ctx = NULL;
	struct ibv_device **list;
	int i, n;

	list = ibv_get_device_list(&n);
	if (!list)
		return NULL;
	for (i = 0; i < n && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

int rdma_ipv4_gid(struct ibv_context *ctx, union ibv_gid *gid)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	struct ibv_port_attr port;
	int i;

	if (ibv_query_port(ctx, 1, &port))
		return -1;
	for (i = 0; i < port.gid_tbl_len; i++) {
		if (ibv_query_gid(ctx, 1, i, gid))
			continue;
		if (!memcmp(gid->raw, v4mapped, sizeof(v4mapped)))
			return i;
	}
	return -1;
}
