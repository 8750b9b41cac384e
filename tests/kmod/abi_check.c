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

SIZE(hmc_buf_export, 48);
OFF(hmc_buf_export, handle, 0);
OFF(hmc_buf_export, flags, 4);
OFF(hmc_buf_export, offset, 8);
OFF(hmc_buf_export, size, 16);
OFF(hmc_buf_export, fd, 24);
OFF(hmc_buf_export, pad, 28);
OFF(hmc_buf_export, reserved, 32);

SIZE(hmc_peer_import, 64);
OFF(hmc_peer_import, fd, 0);
OFF(hmc_peer_import, flags, 4);
OFF(hmc_peer_import, offset, 8);
OFF(hmc_peer_import, size, 16);
OFF(hmc_peer_import, pci_domain, 24);
OFF(hmc_peer_import, pci_bus, 28);
OFF(hmc_peer_import, pci_devfn, 29);
OFF(hmc_peer_import, pad, 30);
OFF(hmc_peer_import, handle, 32);
OFF(hmc_peer_import, nents, 36);
OFF(hmc_peer_import, mmap_offset, 40);
OFF(hmc_peer_import, reserved, 48);

SIZE(hmc_peer_release, 8);
OFF(hmc_peer_release, handle, 0);
OFF(hmc_peer_release, flags, 4);

SIZE(hmc_sg_entry, 16);
OFF(hmc_sg_entry, dma_addr, 0);
OFF(hmc_sg_entry, len, 8);

SIZE(hmc_peer_info, 112);
OFF(hmc_peer_info, handle, 0);
OFF(hmc_peer_info, flags, 4);
OFF(hmc_peer_info, size, 8);
OFF(hmc_peer_info, offset, 16);
OFF(hmc_peer_info, dmabuf_size, 24);
OFF(hmc_peer_info, mmap_offset, 32);
OFF(hmc_peer_info, state, 40);
OFF(hmc_peer_info, import_flags, 44);
OFF(hmc_peer_info, nents, 48);
OFF(hmc_peer_info, nr_sg, 52);
OFF(hmc_peer_info, sg_ptr, 56);
OFF(hmc_peer_info, exporter, 64);
OFF(hmc_peer_info, reserved, 96);

SIZE(hmc_peer_state, 104);
OFF(hmc_peer_state, peer_id, 0);
OFF(hmc_peer_state, state, 8);
OFF(hmc_peer_state, error, 12);
OFF(hmc_peer_state, transport, 16);
OFF(hmc_peer_state, addr_len, 20);
OFF(hmc_peer_state, addr, 24);
OFF(hmc_peer_state, reserved, 88);

_Static_assert(HMC_IOC_GET_VERSION == 0x8030e800, "GET_VERSION");
_Static_assert(HMC_IOC_BUF_ALLOC == 0xc030e801, "BUF_ALLOC");
_Static_assert(HMC_IOC_BUF_PIN == 0xc028e802, "BUF_PIN");
_Static_assert(HMC_IOC_BUF_FREE == 0x4008e803, "BUF_FREE");
_Static_assert(HMC_IOC_BUF_INFO == 0xc030e804, "BUF_INFO");
_Static_assert(HMC_IOC_GET_STATS == 0xc020e805, "GET_STATS");
_Static_assert(HMC_IOC_BUF_EXPORT == 0xc030e806, "BUF_EXPORT");
_Static_assert(HMC_IOC_PEER_IMPORT == 0xc040e807, "PEER_IMPORT");
_Static_assert(HMC_IOC_PEER_RELEASE == 0x4008e808, "PEER_RELEASE");
_Static_assert(HMC_IOC_PEER_INFO == 0xc070e809, "PEER_INFO");
_Static_assert(HMC_IOC_PEER_STATE == 0x4068e80a, "PEER_STATE");

/* The first published sizes never change, whatever the structs become. */
_Static_assert(HMC_VERSION_SIZE_VER0 == 48 && HMC_BUF_ALLOC_SIZE_VER0 == 48 &&
	       HMC_BUF_PIN_SIZE_VER0 == 40 && HMC_BUF_FREE_SIZE_VER0 == 8 &&
	       HMC_BUF_INFO_SIZE_VER0 == 48 && HMC_STATS_SIZE_VER0 == 32 &&
	       HMC_BUF_EXPORT_SIZE_VER0 == 48 &&
	       HMC_PEER_IMPORT_SIZE_VER0 == 64 &&
	       HMC_PEER_RELEASE_SIZE_VER0 == 8 &&
	       HMC_PEER_INFO_SIZE_VER0 == 112 &&
	       HMC_PEER_STATE_SIZE_VER0 == 104, "HMC_*_SIZE_VER0");

_Static_assert(HMC_STAT_BUFS_LIVE == 0 && HMC_STAT_MEMLOCK_REFUSED == 7 &&
	       HMC_STAT_EXPORTS_LIVE == 8 && HMC_STAT_EVENTS_DROPPED == 14 &&
	       HMC_STAT_COUNT == 15, "enum hmc_stat");
_Static_assert(HMC_MMAP_SHIFT == 40 && HMC_BUF_MAX_SIZE == 1ULL << 40 &&
	       HMC_MMAP_IMPORT == 1ULL << 62, "mmap offsets");

/* The netlink family: command and attribute numbers. */
_Static_assert(HMC_CMD_GET_STATS == 1 && HMC_CMD_GET_PEERS == 4 &&
	       HMC_EVT_BUF_CREATED == 5 && HMC_EVT_PEER_CONNECTED == 11 &&
	       HMC_EVT_RDMA_DEV_ADDED == 14 && HMC_EVT_ERROR == 18 &&
	       HMC_CMD_MAX == 18, "enum hmc_genl_cmd");
_Static_assert(HMC_A_PAD == 1 && HMC_A_SEQ == 2 && HMC_A_TIME_NS == 3 &&
	       HMC_A_PEER_ADDR == 20 && HMC_A_STATS == 25 &&
	       HMC_A_HANDLE_LIVE == 26 && HMC_A_MAX == 26, "enum hmc_attr");

int main(void)
{
	printf("ok - uapi/linux/hmc.h layout\n");
	return 0;
}
