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
 * (EACCES otherwise). Buffers are released when the file is closed.
 */
#ifndef _UAPI_LINUX_HMC_H
#define _UAPI_LINUX_HMC_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define HMC_DEVICE_NAME		"hmc"
#define HMC_DEVICE_PATH		"/dev/hmc"

#define HMC_ABI_MAJOR		1
#define HMC_ABI_MINOR		0

#define HMC_IOC_MAGIC		0xE8

/* Features reported by GET_VERSION. */
#define HMC_FEAT_BUF_ALLOC	(1ULL << 0)	/* kernel-page ConnBuffers, mmap */
#define HMC_FEAT_BUF_PIN	(1ULL << 1)	/* long-term pinning of user memory */
#define HMC_FEAT_NUMA		(1ULL << 2)	/* HMC_BUF_ALLOC_F_NUMA */

/*
 * mmap offsets: buffer handle h is mapped at (h << HMC_MMAP_SHIFT). A buffer
 * is at most HMC_BUF_MAX_SIZE bytes, so the ranges never overlap.
 */
#define HMC_MMAP_SHIFT		40
#define HMC_BUF_MAX_SIZE	(1ULL << HMC_MMAP_SHIFT)

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
	HMC_STAT_COUNT
};

struct hmc_stats {
	__u32 flags;		/* in: HMC_STATS_F_* */
	__u32 nr_counters;	/* in: array length; out: HMC_STAT_COUNT */
	__u64 counters_ptr;	/* in: user pointer to __u64[nr_counters] */
	__u64 reserved[2];
};

#define HMC_IOC_GET_VERSION	_IOR(HMC_IOC_MAGIC, 0x00, struct hmc_version)
#define HMC_IOC_BUF_ALLOC	_IOWR(HMC_IOC_MAGIC, 0x01, struct hmc_buf_alloc)
#define HMC_IOC_BUF_PIN		_IOWR(HMC_IOC_MAGIC, 0x02, struct hmc_buf_pin)
#define HMC_IOC_BUF_FREE	_IOW(HMC_IOC_MAGIC, 0x03, struct hmc_buf_free)
#define HMC_IOC_BUF_INFO	_IOWR(HMC_IOC_MAGIC, 0x04, struct hmc_buf_info)
#define HMC_IOC_GET_STATS	_IOWR(HMC_IOC_MAGIC, 0x05, struct hmc_stats)

#endif /* _UAPI_LINUX_HMC_H */
