// SPDX-License-Identifier: GPL-2.0
/*
 * The /dev/hmc ABI, frozen: sizes, offsets and command numbers of
 * uapi/linux/hmc.h as user space compiles them. Any failure here is an ABI
 * break; built with -Wpedantic on the host by `make test`.
 */
#include <stddef.h>
#include <stdio.h>

#include <linux/hmc.h>

#define OFF(type, field, off) \
	_Static_assert(offsetof(struct type, field) == (off), #type "." #field)
#define SIZE(type, size) \
	_Static_assert(sizeof(struct type) == (size), "sizeof " #type)

SIZE(hmc_version, 48);
OFF(hmc_version, abi_major, 0);
OFF(hmc_version, abi_minor, 4);
OFF(hmc_version, features, 8);
OFF(hmc_version, page_size, 16);
OFF(hmc_version, pad, 20);
OFF(hmc_version, max_buf_size, 24);
OFF(hmc_version, reserved, 32);

SIZE(hmc_buf_alloc, 48);
OFF(hmc_buf_alloc, size, 0);
OFF(hmc_buf_alloc, flags, 8);
OFF(hmc_buf_alloc, numa_node, 12);
OFF(hmc_buf_alloc, handle, 16);
OFF(hmc_buf_alloc, pad, 20);
OFF(hmc_buf_alloc, mmap_offset, 24);
OFF(hmc_buf_alloc, reserved, 32);

SIZE(hmc_buf_pin, 40);
OFF(hmc_buf_pin, addr, 0);
OFF(hmc_buf_pin, size, 8);
OFF(hmc_buf_pin, flags, 16);
OFF(hmc_buf_pin, handle, 20);
OFF(hmc_buf_pin, reserved, 24);

SIZE(hmc_buf_free, 8);
OFF(hmc_buf_free, handle, 0);
OFF(hmc_buf_free, flags, 4);

SIZE(hmc_buf_info, 48);
OFF(hmc_buf_info, handle, 0);
OFF(hmc_buf_info, type, 4);
OFF(hmc_buf_info, size, 8);
OFF(hmc_buf_info, mmap_offset, 16);
OFF(hmc_buf_info, nr_mappings, 24);
OFF(hmc_buf_info, numa_node, 28);
OFF(hmc_buf_info, reserved, 32);

SIZE(hmc_stats, 32);
OFF(hmc_stats, flags, 0);
OFF(hmc_stats, nr_counters, 4);
OFF(hmc_stats, counters_ptr, 8);
OFF(hmc_stats, reserved, 16);

_Static_assert(HMC_IOC_GET_VERSION == 0x8030e800, "GET_VERSION");
_Static_assert(HMC_IOC_BUF_ALLOC == 0xc030e801, "BUF_ALLOC");
_Static_assert(HMC_IOC_BUF_PIN == 0xc028e802, "BUF_PIN");
_Static_assert(HMC_IOC_BUF_FREE == 0x4008e803, "BUF_FREE");
_Static_assert(HMC_IOC_BUF_INFO == 0xc030e804, "BUF_INFO");
_Static_assert(HMC_IOC_GET_STATS == 0xc020e805, "GET_STATS");

_Static_assert(HMC_STAT_BUFS_LIVE == 0 && HMC_STAT_MEMLOCK_REFUSED == 7 &&
	       HMC_STAT_COUNT == 8, "enum hmc_stat");
_Static_assert(HMC_MMAP_SHIFT == 40 && HMC_BUF_MAX_SIZE == 1ULL << 40,
	       "mmap offsets");

int main(void)
{
	printf("ok - uapi/linux/hmc.h layout\n");
	return 0;
}
