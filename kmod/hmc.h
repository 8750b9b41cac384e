/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internal interfaces of hmc.ko.
 *
 * Object lifetimes: a context (one per open file) is held by its file and by
 * each of its buffers. A buffer is held by its handle, by each VMA mapping
 * it and, briefly, by ioctls using it. A VMA also holds the file, so the file
 * (and the module) outlive every mapping.
 *
 * Locking: there is no driver mutex. The handle table is an xarray whose
 * spinlock covers lookup + reference, so the mmap handler (which runs under
 * mmap_lock) and the ioctls (which copy from and to user memory) never wait
 * on each other.
 */
#ifndef HMC_KMOD_HMC_H
#define HMC_KMOD_HMC_H

#include <linux/atomic.h>
#include <linux/kref.h>
#include <linux/mm_types.h>
#include <linux/xarray.h>
#include <linux/hmc.h>

/* Page offset of a handle's mmap window; handles keep offsets below 2^63. */
#define HMC_PGOFF_SHIFT		(HMC_MMAP_SHIFT - PAGE_SHIFT)
#define HMC_PGOFF_MASK		((1UL << HMC_PGOFF_SHIFT) - 1)
#define HMC_HANDLE_MAX		((1U << (63 - HMC_MMAP_SHIFT)) - 1)

struct hmc_counters {
	atomic64_t val[HMC_STAT_COUNT];
};

struct hmc_ctx {
	struct kref ref;
	u32 next_handle;		/* cursor of xa_alloc_cyclic */
	struct pid *owner;		/* thread group of the opener */
	struct mm_struct *mm;		/* its mm (mmgrab): memlock charges */
	struct xarray bufs;		/* handle -> struct hmc_buf */
	struct hmc_counters stats;
};

struct hmc_buf {
	struct kref ref;
	atomic_t nr_mappings;
	struct hmc_ctx *ctx;		/* referenced */
	u32 type;			/* HMC_BUF_TYPE_* */
	u32 handle;
	unsigned long nr_pages;		/* size, charged to memlock */
	unsigned long nr_held;		/* pages[] entries holding a page */
	struct page **pages;
	bool readonly;			/* pinned without FOLL_WRITE */
};

/* Arguments of one ioctl, as copied from and back to user space. */
union hmc_ioctl_arg {
	struct hmc_version version;
	struct hmc_buf_alloc alloc;
	struct hmc_buf_pin pin;
	struct hmc_buf_free free;
	struct hmc_buf_info info;
	struct hmc_stats stats;
};

struct hmc_ioctl_call {
	union hmc_ioctl_arg arg;
	/* A new buffer whose reserved handle is published on success. */
	struct hmc_buf *created;
};

/* ctx.c */
struct hmc_ctx *hmc_ctx_create(void);
void hmc_ctx_get(struct hmc_ctx *ctx);
void hmc_ctx_put(struct hmc_ctx *ctx);
void hmc_ctx_release(struct hmc_ctx *ctx);
int hmc_ctx_check_owner(const struct hmc_ctx *ctx);
int hmc_ctx_reserve_handle(struct hmc_ctx *ctx, struct hmc_buf *buf);
void hmc_ctx_finish_handle(struct hmc_ctx *ctx, struct hmc_buf *buf,
			   bool publish);
struct hmc_buf *hmc_ctx_get_buf(struct hmc_ctx *ctx, unsigned long handle);
int hmc_ctx_free_handle(struct hmc_ctx *ctx, u32 handle);

/* buf.c */
struct hmc_buf *hmc_buf_new(struct hmc_ctx *ctx, u32 type,
			    unsigned long nr_pages);
void hmc_buf_get(struct hmc_buf *buf);
void hmc_buf_put(struct hmc_buf *buf);
u64 hmc_buf_mmap_offset(const struct hmc_buf *buf);
int hmc_ioctl_buf_alloc(struct hmc_ctx *ctx, struct hmc_ioctl_call *call);
int hmc_ioctl_buf_free(struct hmc_ctx *ctx, struct hmc_ioctl_call *call);
int hmc_ioctl_buf_info(struct hmc_ctx *ctx, struct hmc_ioctl_call *call);

/* pin.c */
int hmc_ioctl_buf_pin(struct hmc_ctx *ctx, struct hmc_ioctl_call *call);
void hmc_pin_release(struct hmc_buf *buf);

/* mmap.c */
int hmc_mmap(struct file *file, struct vm_area_struct *vma);

/* memlock.c */
int hmc_memlock_charge(struct hmc_ctx *ctx, unsigned long nr_pages);
void hmc_memlock_uncharge(struct hmc_ctx *ctx, unsigned long nr_pages);

/* stats.c */
void hmc_stat_add(struct hmc_ctx *ctx, enum hmc_stat stat, s64 delta);
void hmc_stats_check_idle(void);
int hmc_ioctl_get_stats(struct hmc_ctx *ctx, struct hmc_ioctl_call *call);

/* ioctl.c */
long hmc_ioctl(struct file *file, unsigned int cmd, unsigned long uarg);

/* True if any of @n u64 words is non-zero (reserved fields). */
static inline bool hmc_nonzero(const __u64 *words, unsigned int n)
{
	while (n--)
		if (words[n])
			return true;
	return false;
}

#endif /* HMC_KMOD_HMC_H */
