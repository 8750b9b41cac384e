/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * HMC (heterogeneous memory communication): the ABI of /dev/hmc.
 *
 * Shared by hmc.ko, libhmc and the tools; nothing else crosses the kernel
 * boundary. Rules (Documentation/driver-api/ioctl.rst):
 *  - fixed-width fields, 8-byte aligned structs, explicit padding;
 *  - padding, reserved fields and unknown flag bits must be zero (EINVAL);
 *  - structs grow only at the end: the kernel takes the caller's size from
 *    the command number, zero-fills a shorter (older) struct and accepts a
 *    longer (newer) one only if the tail it does not know is zero (E2BIG);
 *    a struct shorter than the first published version is refused (EINVAL);
 *  - unknown commands fail with ENOTTY;
 *  - handles are small per-file integers, never kernel addresses.
 *
 * Every ioctl and mmap must come from the process that opened the file
 * (EACCES otherwise). Buffers, imports and peer reports are released when
 * the file is closed; exported dma-bufs live on (BUF_EXPORT).
 *
 * The second half of this file is the generic netlink family "hmc": events
 * and dumps of what every process does with hmc.
 */
#ifndef _UAPI_LINUX_HMC_H
#define _UAPI_LINUX_HMC_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define HMC_DEVICE_NAME		"hmc"
#define HMC_DEVICE_PATH		"/dev/hmc"

#define HMC_ABI_MAJOR		1
#define HMC_ABI_MINOR		1

#define HMC_IOC_MAGIC		0xE8

/* Features reported by GET_VERSION. */
#define HMC_FEAT_BUF_ALLOC	(1ULL << 0)	/* kernel-page ConnBuffers, mmap */
#define HMC_FEAT_BUF_PIN	(1ULL << 1)	/* long-term pinning of user memory */
#define HMC_FEAT_NUMA		(1ULL << 2)	/* HMC_BUF_ALLOC_F_NUMA */
#define HMC_FEAT_BUF_EXPORT	(1ULL << 3)	/* BUF_EXPORT (ABI 1.1) */
#define HMC_FEAT_PEER_IMPORT	(1ULL << 4)	/* PEER_IMPORT/RELEASE/INFO (1.1) */
#define HMC_FEAT_PEER_STATE	(1ULL << 5)	/* PEER_STATE (1.1) */
#define HMC_FEAT_GENL		(1ULL << 6)	/* netlink family "hmc" (1.1) */

/*
 * mmap offsets: buffer handle h is mapped at (h << HMC_MMAP_SHIFT). A buffer
 * is at most HMC_BUF_MAX_SIZE bytes, so the ranges never overlap.
 */
#define HMC_MMAP_SHIFT		40
#define HMC_BUF_MAX_SIZE	(1ULL << HMC_MMAP_SHIFT)
/* Imports (PEER_IMPORT) have handles of their own, mapped above this bit. */
#define HMC_MMAP_IMPORT		(1ULL << 62)

/*
 * HMC_IOC_GET_VERSION: ABI version and features. Output only.
 */
struct hmc_version {
	__u32 abi_major;
	__u32 abi_minor;
	__u64 features;		/* HMC_FEAT_* */
	__u32 page_size;
	__u32 pad;
	__u64 max_buf_size;	/* largest size BUF_ALLOC/BUF_PIN accept */
	__u64 reserved[2];
};

/*
 * HMC_IOC_BUF_ALLOC: a ConnBuffer of zeroed, pinned kernel pages.
 * @size is rounded up to the page size. The pages are charged to the
 * caller's RLIMIT_MEMLOCK unless it has CAP_IPC_LOCK (ENOMEM over it).
 * Map it with mmap(MAP_SHARED) of /dev/hmc at @mmap_offset; a mapping keeps
 * the pages after BUF_FREE.
 * Errors: EINVAL (zero or too large size, unknown flags, bad node, non-zero
 * pad/reserved), ENOMEM, EACCES.
 */
#define HMC_BUF_ALLOC_F_NUMA	(1U << 0)	/* allocate on @numa_node only */
#define HMC_BUF_ALLOC_FLAGS	HMC_BUF_ALLOC_F_NUMA

struct hmc_buf_alloc {
	__u64 size;		/* in */
	__u32 flags;		/* in: HMC_BUF_ALLOC_F_* */
	__s32 numa_node;	/* in: with HMC_BUF_ALLOC_F_NUMA, else 0 */
	__u32 handle;		/* out */
	__u32 pad;
	__u64 mmap_offset;	/* out */
	__u64 reserved[2];
};

/*
 * HMC_IOC_BUF_PIN: pin [addr, addr + size) of the caller's anonymous or
 * shmem/memfd memory (FOLL_LONGTERM) as a ConnBuffer. Both must be page
 * aligned. File-backed, device and PFN mappings are refused (EFAULT for
 * unmapped ranges, EINVAL for other kinds of mapping). Charged like
 * BUF_ALLOC. A pinned buffer keeps its pages if the range is unmapped.
 * It can be mapped again through /dev/hmc at @mmap_offset (BUF_INFO); that
 * second mapping is a PFN mapping, so register the original range, not it,
 * with RDMA.
 */
#define HMC_BUF_PIN_F_READONLY	(1U << 0)	/* pin for reading only */
#define HMC_BUF_PIN_FLAGS	HMC_BUF_PIN_F_READONLY

struct hmc_buf_pin {
	__u64 addr;		/* in */
	__u64 size;		/* in */
	__u32 flags;		/* in: HMC_BUF_PIN_F_* */
	__u32 handle;		/* out */
	__u64 reserved[2];
};

/*
 * HMC_IOC_BUF_FREE: drop a handle. Mappings of the buffer stay valid until
 * they are unmapped. Errors: ENOENT (unknown handle), EINVAL.
 */
struct hmc_buf_free {
	__u32 handle;		/* in */
	__u32 flags;		/* in: must be 0 */
};

/*
 * HMC_IOC_BUF_INFO: describe a live handle.
 */
#define HMC_BUF_TYPE_KERNEL	1	/* BUF_ALLOC */
#define HMC_BUF_TYPE_PINNED	2	/* BUF_PIN */

struct hmc_buf_info {
	__u32 handle;		/* in */
	__u32 type;		/* out: HMC_BUF_TYPE_* */
	__u64 size;		/* out: bytes, a multiple of the page size */
	__u64 mmap_offset;	/* out */
	__u32 nr_mappings;	/* out: live VMAs of this buffer */
	__s32 numa_node;	/* out: node of the first page */
	__u64 reserved[2];
};

/*
 * HMC_IOC_GET_STATS: counters, indexed by enum hmc_stat. The caller passes
 * an array of @nr_counters __u64 at @counters_ptr; the kernel fills the
 * first min(nr_counters, HMC_STAT_COUNT) and returns in @nr_counters how
 * many it knows. Without HMC_STATS_F_GLOBAL the counters are this file's.
 */
#define HMC_STATS_F_GLOBAL	(1U << 0)
#define HMC_STATS_FLAGS		HMC_STATS_F_GLOBAL

enum hmc_stat {
	HMC_STAT_BUFS_LIVE,		/* buffers not yet released */
	HMC_STAT_BYTES_LIVE,		/* their bytes */
	HMC_STAT_PAGES_PINNED,		/* pages held and charged */
	HMC_STAT_MAPPINGS_LIVE,		/* VMAs mapping a buffer */
	HMC_STAT_HANDLES_LIVE,		/* handles not yet freed */
	HMC_STAT_BUFS_CREATED,		/* total buffers ever created */
	HMC_STAT_ERRORS,		/* failed ioctl and mmap calls */
	HMC_STAT_MEMLOCK_REFUSED,	/* requests over RLIMIT_MEMLOCK */
	/* ABI 1.1 */
	HMC_STAT_EXPORTS_LIVE,		/* dma-bufs of BUF_EXPORT not released */
	HMC_STAT_ATTACHMENTS_LIVE,	/* devices attached to them */
	HMC_STAT_IMPORTS_LIVE,		/* PEER_IMPORT handles not released */
	HMC_STAT_PEERS_CONNECTED,	/* peers reported connected */
	HMC_STAT_IMPORTS_INVALIDATED,	/* imports whose exporter moved */
	HMC_STAT_EVENTS_SENT,		/* netlink events (global only) */
	HMC_STAT_EVENTS_DROPPED,	/* events lost for memory (global) */
	HMC_STAT_COUNT
};

struct hmc_stats {
	__u32 flags;		/* in: HMC_STATS_F_* */
	__u32 nr_counters;	/* in: array length; out: HMC_STAT_COUNT */
	__u64 counters_ptr;	/* in: user pointer to __u64[nr_counters] */
	__u64 reserved[2];
};

/*
 * HMC_IOC_BUF_EXPORT: a dma-buf of buffer @handle, or of its part
 * [@offset, @offset + @size) (page aligned; @size 0: up to the end), in a
 * new file descriptor @fd. Other drivers attach to it (RDMA's
 * ibv_reg_dmabuf_mr, GPUs, vgem), and it can be mapped with
 * mmap(MAP_SHARED) (offset 0 is the part's first byte; like /dev/hmc
 * mappings, not inherited by fork); DMA_BUF_IOCTL_SYNC brackets CPU
 * access. Pass the fd to another process (SCM_RIGHTS) to share the buffer
 * with it. The dma-buf holds the buffer and its RLIMIT_MEMLOCK
 * charge: it stays valid after BUF_FREE, after /dev/hmc is closed and after
 * the process exits, until its last reference (fd, mapping, importer) is
 * gone; hmc.ko cannot be unloaded meanwhile.
 * Without HMC_BUF_EXPORT_F_RDWR the dma-buf file is read-only (O_RDONLY):
 * no writable mapping, importers map it read-only. A buffer pinned with
 * HMC_BUF_PIN_F_READONLY exports only that way (EACCES). Pinned buffers are
 * mapped by PFN, as through /dev/hmc.
 * Errors: EINVAL (unknown flags, non-zero pad/reserved, unaligned part or
 * one outside the buffer), ENOENT (unknown handle), EACCES, EMFILE,
 * ENOMEM.
 */
#define HMC_BUF_EXPORT_F_CLOEXEC	(1U << 0)	/* O_CLOEXEC on @fd */
#define HMC_BUF_EXPORT_F_RDWR		(1U << 1)	/* O_RDWR, else O_RDONLY */
#define HMC_BUF_EXPORT_FLAGS	(HMC_BUF_EXPORT_F_CLOEXEC | \
				 HMC_BUF_EXPORT_F_RDWR)

struct hmc_buf_export {
	__u32 handle;		/* in */
	__u32 flags;		/* in: HMC_BUF_EXPORT_F_* */
	__u64 offset;		/* in */
	__u64 size;		/* in */
	__s32 fd;		/* out */
	__u32 pad;
	__u64 reserved[2];
};

/*
 * HMC_IOC_PEER_IMPORT: peer-memory registration. Attaches hmc to a dma-buf
 * of any exporter (a GPU driver, vgem, BUF_EXPORT), maps it for DMA and
 * keeps the attachment under a new import handle until PEER_RELEASE or
 * close; the caller may close @fd meanwhile. [@offset, @offset + @size) of
 * the dma-buf (page aligned; @size 0: up to the end) is the registered
 * part: PEER_INFO describes its DMA segments, and it can be mapped with
 * mmap(MAP_SHARED) of /dev/hmc at @mmap_offset, through the exporter's own
 * mmap. An import of a read-only dma-buf is read-only (the device only
 * reads; no writable mapping), as is one made with HMC_PEER_IMPORT_F_READONLY.
 *
 * Without flags the attachment is static: the exporter keeps the memory in
 * place while it is mapped. HMC_PEER_IMPORT_F_DYNAMIC attaches dynamically:
 * an exporter that moves the memory notifies hmc, which unmaps the import,
 * sets its state to HMC_PEER_ST_INVALIDATED and sends
 * HMC_EVT_PEER_INVALIDATED; release it and import again.
 * HMC_PEER_IMPORT_F_P2P (with F_DYNAMIC) accepts memory without struct
 * pages (PCI peer-to-peer).
 *
 * hmc attaches as its own device (DMA addresses are then CPU physical
 * addresses, or the IOMMU's for it), which exporters that need a real PCI
 * device (NVIDIA's; the module parameter pci_exporters lists them) cannot
 * serve: those fail with EOPNOTSUPP unless HMC_PEER_IMPORT_F_PCI_DEV names
 * the PCI device that will do the DMA (@pci_domain, @pci_bus, @pci_devfn).
 * That needs CAP_SYS_ADMIN (EPERM), and the device must exist (ENODEV).
 * Errors: EBADF (@fd is not open), EINVAL (@fd is not a dma-buf; unknown
 * flags, non-zero pad/reserved/unused PCI fields, unaligned part or one
 * outside the dma-buf), EOPNOTSUPP, EPERM, ENODEV, ENOSPC, ENOMEM, and what
 * the exporter returns from attach and map.
 */
#define HMC_PEER_IMPORT_F_DYNAMIC	(1U << 0)	/* move_notify */
#define HMC_PEER_IMPORT_F_P2P		(1U << 1)	/* pages-less memory */
#define HMC_PEER_IMPORT_F_PCI_DEV	(1U << 2)	/* attach as @pci_* */
#define HMC_PEER_IMPORT_F_READONLY	(1U << 3)	/* device reads only */
#define HMC_PEER_IMPORT_FLAGS	(HMC_PEER_IMPORT_F_DYNAMIC | \
				 HMC_PEER_IMPORT_F_P2P | \
				 HMC_PEER_IMPORT_F_PCI_DEV | \
				 HMC_PEER_IMPORT_F_READONLY)

struct hmc_peer_import {
	__s32 fd;		/* in: the dma-buf */
	__u32 flags;		/* in: HMC_PEER_IMPORT_F_* */
	__u64 offset;		/* in */
	__u64 size;		/* in */
	__u32 pci_domain;	/* in: with HMC_PEER_IMPORT_F_PCI_DEV */
	__u8 pci_bus;		/* in: with HMC_PEER_IMPORT_F_PCI_DEV */
	__u8 pci_devfn;		/* in: with HMC_PEER_IMPORT_F_PCI_DEV */
	__u16 pad;
	__u32 handle;		/* out: import handle */
	__u32 nents;		/* out: DMA segments of the part */
	__u64 mmap_offset;	/* out */
	__u64 reserved[2];
};

/*
 * HMC_IOC_PEER_RELEASE: unmap and detach an import, drop its handle.
 * Mappings made through it stay valid (they belong to the exporter).
 * Errors: ENOENT (unknown handle), EINVAL.
 */
struct hmc_peer_release {
	__u32 handle;		/* in */
	__u32 flags;		/* in: must be 0 */
};

/*
 * HMC_IOC_PEER_INFO: describe an import. With HMC_PEER_INFO_F_SG, and only
 * for CAP_SYS_ADMIN (EPERM), the DMA segments of the registered part are
 * also written to the array of @nr_sg struct hmc_sg_entry at @sg_ptr
 * (min(@nr_sg, @nents) of them); @nr_sg returns @nents. DMA addresses
 * are never shown to anyone else.
 * Errors: ENOENT, EINVAL, EPERM, EFAULT, ENOMEM.
 */
#define HMC_PEER_ST_MAPPED		1	/* attached and mapped */
#define HMC_PEER_ST_INVALIDATED		2	/* the exporter moved it */

#define HMC_PEER_INFO_F_SG		(1U << 0)
#define HMC_PEER_INFO_FLAGS		HMC_PEER_INFO_F_SG
#define HMC_EXPORTER_NAME_LEN		32

struct hmc_sg_entry {
	__u64 dma_addr;
	__u64 len;
};

struct hmc_peer_info {
	__u32 handle;		/* in */
	__u32 flags;		/* in: HMC_PEER_INFO_F_* */
	__u64 size;		/* out: bytes of the registered part */
	__u64 offset;		/* out: its offset in the dma-buf */
	__u64 dmabuf_size;	/* out */
	__u64 mmap_offset;	/* out */
	__u32 state;		/* out: HMC_PEER_ST_* */
	__u32 import_flags;	/* out: HMC_PEER_IMPORT_F_* in effect */
	__u32 nents;		/* out: DMA segments (0 once invalidated) */
	__u32 nr_sg;		/* in: entries at @sg_ptr; out: @nents */
	__u64 sg_ptr;		/* in: with HMC_PEER_INFO_F_SG */
	char exporter[HMC_EXPORTER_NAME_LEN];	/* out: exporting module */
	__u64 reserved[2];
};

/*
 * HMC_IOC_PEER_STATE: libhmc reports a change of state of one of its
 * fabric peers; the kernel adds the caller's pid and the time and sends it
 * to the "events" group (HMC_EVT_PEER_CONNECTED, _DISCONNECTED, _FAILED).
 * @peer_id is the caller's name for the peer (its rank). CONNECTED enters
 * the peer in this file's table (or updates it), which the peer dump lists;
 * DISCONNECTED and FAILED remove it, and their events carry the transport
 * and address it connected with. FAILED of a peer that is not connected (a
 * connection that never came up) is reported as given. Peers still
 * connected when the file is closed are reported DISCONNECTED with error
 * ESHUTDOWN.
 * @error: a positive errno value: 0 with CONNECTED, required with FAILED,
 * optional with DISCONNECTED. @addr: the peer's fabric address (a GID, a
 * sockaddr, ...) in its first @addr_len bytes, the rest zero; libhmc passes
 * its control connection's struct sockaddr_in or sockaddr_in6, or, for a
 * peer on this host, 8 bytes: the sa_family_t AF_UNIX, 2 zero bytes, the
 * peer's pid as a u32.
 * Errors: EINVAL (state, transport, error, addr_len, non-zero bytes after
 * the address, reserved), ENOENT (DISCONNECTED of a peer that is not
 * connected), ENOSPC (HMC_PEERS_MAX peers connected in this file), ENOMEM.
 */
#define HMC_PEER_CONNECTED		1
#define HMC_PEER_DISCONNECTED		2
#define HMC_PEER_FAILED			3

/* The same values as libhmc's enum hmc_transport where both have a name. */
#define HMC_PEER_TRANSPORT_UNSPEC	0
#define HMC_PEER_TRANSPORT_UCX		1
#define HMC_PEER_TRANSPORT_VERBS	2
#define HMC_PEER_TRANSPORT_SHM		3
#define HMC_PEER_TRANSPORT_TCP		4
#define HMC_PEER_TRANSPORT_MAX		HMC_PEER_TRANSPORT_TCP

#define HMC_PEER_ADDR_MAX		64
#define HMC_PEERS_MAX			4096

struct hmc_peer_state {
	__u64 peer_id;		/* in */
	__u32 state;		/* in: HMC_PEER_* */
	__s32 error;		/* in */
	__u32 transport;	/* in: HMC_TRANSPORT_* */
	__u32 addr_len;		/* in: at most HMC_PEER_ADDR_MAX */
	__u8 addr[HMC_PEER_ADDR_MAX];	/* in */
	__u64 reserved[2];
};

/*
 * The first published size of each command's struct: a caller may pass any
 * size from this one on (an older binary's shorter struct is zero-extended,
 * see the rules at the top); a shorter one is refused with EINVAL.
 */
#define HMC_VERSION_SIZE_VER0		48
#define HMC_BUF_ALLOC_SIZE_VER0		48
#define HMC_BUF_PIN_SIZE_VER0		40
#define HMC_BUF_FREE_SIZE_VER0		8
#define HMC_BUF_INFO_SIZE_VER0		48
#define HMC_STATS_SIZE_VER0		32
#define HMC_BUF_EXPORT_SIZE_VER0	48
#define HMC_PEER_IMPORT_SIZE_VER0	64
#define HMC_PEER_RELEASE_SIZE_VER0	8
#define HMC_PEER_INFO_SIZE_VER0		112
#define HMC_PEER_STATE_SIZE_VER0	104

#define HMC_IOC_GET_VERSION	_IOR(HMC_IOC_MAGIC, 0x00, struct hmc_version)
#define HMC_IOC_BUF_ALLOC	_IOWR(HMC_IOC_MAGIC, 0x01, struct hmc_buf_alloc)
#define HMC_IOC_BUF_PIN		_IOWR(HMC_IOC_MAGIC, 0x02, struct hmc_buf_pin)
#define HMC_IOC_BUF_FREE	_IOW(HMC_IOC_MAGIC, 0x03, struct hmc_buf_free)
#define HMC_IOC_BUF_INFO	_IOWR(HMC_IOC_MAGIC, 0x04, struct hmc_buf_info)
#define HMC_IOC_GET_STATS	_IOWR(HMC_IOC_MAGIC, 0x05, struct hmc_stats)
#define HMC_IOC_BUF_EXPORT	_IOWR(HMC_IOC_MAGIC, 0x06, struct hmc_buf_export)
#define HMC_IOC_PEER_IMPORT	_IOWR(HMC_IOC_MAGIC, 0x07, struct hmc_peer_import)
#define HMC_IOC_PEER_RELEASE	_IOW(HMC_IOC_MAGIC, 0x08, struct hmc_peer_release)
#define HMC_IOC_PEER_INFO	_IOWR(HMC_IOC_MAGIC, 0x09, struct hmc_peer_info)
#define HMC_IOC_PEER_STATE	_IOW(HMC_IOC_MAGIC, 0x0a, struct hmc_peer_state)

/*
 * Generic netlink family HMC_GENL_NAME (ABI 1.1), in the initial network
 * namespace only, with strict validation: requests carry no attributes.
 *
 * Requests:
 *  HMC_CMD_GET_STATS   (do)   the global counters: HMC_A_STATS, and
 *                             HMC_A_SEQ, the last event's sequence number.
 *                             Anyone may ask.
 *  HMC_CMD_GET_BUFS    (dump) one message per live buffer: its attributes
 *                             and SIZE.                      CAP_NET_ADMIN.
 *  HMC_CMD_GET_IMPORTS (dump) one per import: its attributes. CAP_NET_ADMIN.
 *  HMC_CMD_GET_PEERS   (dump) one per connected peer: its attributes and
 *                             TIME_NS, when it was reported. CAP_NET_ADMIN.
 *
 * Events go to the multicast group HMC_GENL_MCGRP_EVENTS, which only
 * CAP_NET_ADMIN may join (they carry pids and fabric addresses of every
 * user). Each is one message whose command is the event (HMC_EVT_*), with
 * HMC_A_SEQ, a sequence number that grows by one per event while the group
 * has members (a gap means that the listener lost events: its socket
 * overran, or the kernel had no memory), and HMC_A_TIME_NS, when it
 * happened. Events are sent from process context, in sequence order,
 * shortly after they happen. No attribute is a kernel or DMA address.
 *
 *  buffer attributes  PID FILE_ID BUF_ID HANDLE BUF_TYPE NR_MAPPINGS
 *                     NR_EXPORTS [HANDLE_LIVE]
 *  import attributes  PID FILE_ID IMPORT_ID HANDLE SIZE OFFSET IMPORT_FLAGS
 *                     IMPORT_STATE NENTS EXPORTER
 *  peer attributes    PID FILE_ID PEER_ID TRANSPORT PEER_ADDR
 *
 *  BUF_CREATED        buffer, SIZE: a handle was returned
 *  BUF_FREED          buffer, SIZE: its last handle, mapping and dma-buf
 *                     are gone
 *  BUF_EXPORTED       buffer, OFFSET and SIZE of the exported part
 *  PEER_IMPORTED, PEER_RELEASED, PEER_INVALIDATED   import
 *  PEER_CONNECTED, PEER_DISCONNECTED, PEER_FAILED   peer [ERRNO]
 *  RDMA_DEV_ADDED, RDMA_DEV_REMOVED   RDMA_DEV   (sent by hmc_ib.ko, the
 *  RDMA_PORT_ACTIVE, RDMA_PORT_DOWN   RDMA_DEV RDMA_PORT   ib_client of hmc)
 *  ERROR              PID FILE_ID IOCTL ERRNO: an ioctl failed for another
 *                     reason than a malformed request (ENOMEM, EACCES,
 *                     EOPNOTSUPP, ...); PID is the caller's, who may not
 *                     own the file; at most 50 in 5 s
 */
#define HMC_GENL_NAME		"hmc"
#define HMC_GENL_VERSION	1
#define HMC_GENL_MCGRP_EVENTS	"events"

enum hmc_genl_cmd {
	HMC_CMD_UNSPEC,
	HMC_CMD_GET_STATS,
	HMC_CMD_GET_BUFS,
	HMC_CMD_GET_IMPORTS,
	HMC_CMD_GET_PEERS,
	HMC_EVT_BUF_CREATED,
	HMC_EVT_BUF_FREED,
	HMC_EVT_BUF_EXPORTED,
	HMC_EVT_PEER_IMPORTED,
	HMC_EVT_PEER_RELEASED,
	HMC_EVT_PEER_INVALIDATED,
	HMC_EVT_PEER_CONNECTED,
	HMC_EVT_PEER_DISCONNECTED,
	HMC_EVT_PEER_FAILED,
	HMC_EVT_RDMA_DEV_ADDED,
	HMC_EVT_RDMA_DEV_REMOVED,
	HMC_EVT_RDMA_PORT_ACTIVE,
	HMC_EVT_RDMA_PORT_DOWN,
	HMC_EVT_ERROR,
	__HMC_CMD_MAX,
};
#define HMC_CMD_MAX		(__HMC_CMD_MAX - 1)

enum hmc_attr {
	HMC_A_UNSPEC,
	HMC_A_PAD,
	HMC_A_SEQ,		/* u64 */
	HMC_A_TIME_NS,		/* u64: CLOCK_REALTIME */
	HMC_A_PID,		/* u32: tgid in the initial pid namespace */
	HMC_A_FILE_ID,		/* u32: an open of /dev/hmc, unique while
				 * anything of it lives */
	HMC_A_BUF_ID,		/* u32: unique while the buffer lives */
	HMC_A_HANDLE,		/* u32: buffer or import handle in its file */
	HMC_A_BUF_TYPE,		/* u32: HMC_BUF_TYPE_* */
	HMC_A_SIZE,		/* u64: bytes */
	HMC_A_OFFSET,		/* u64: bytes */
	HMC_A_NR_MAPPINGS,	/* u32 */
	HMC_A_NR_EXPORTS,	/* u32: live dma-bufs of the buffer */
	HMC_A_IMPORT_ID,	/* u32: unique while the import lives */
	HMC_A_IMPORT_STATE,	/* u32: HMC_PEER_ST_* */
	HMC_A_IMPORT_FLAGS,	/* u32: HMC_PEER_IMPORT_F_* */
	HMC_A_NENTS,		/* u32 */
	HMC_A_EXPORTER,		/* string */
	HMC_A_PEER_ID,		/* u64 */
	HMC_A_TRANSPORT,	/* u32: HMC_TRANSPORT_* */
	HMC_A_PEER_ADDR,	/* binary, at most HMC_PEER_ADDR_MAX */
	HMC_A_ERRNO,		/* u32: positive errno value */
	HMC_A_IOCTL,		/* u32: _IOC_NR() of the ioctl */
	HMC_A_RDMA_DEV,		/* string */
	HMC_A_RDMA_PORT,	/* u32 */
	HMC_A_STATS,		/* nest: see HMC_STATS_A_BASE */
	HMC_A_HANDLE_LIVE,	/* flag: the buffer's handle is not freed */
	__HMC_A_MAX,
};
#define HMC_A_MAX		(__HMC_A_MAX - 1)

/* In HMC_A_STATS: counter i (enum hmc_stat) is u64 HMC_STATS_A_BASE + i. */
#define HMC_STATS_A_PAD		1
#define HMC_STATS_A_BASE	2

#endif /* _UAPI_LINUX_HMC_H */
