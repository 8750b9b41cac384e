/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internal interfaces of hmc.ko.
 *
 * Object lifetimes: a context (one per open file) is held by its file and by
 * each of its buffers. A buffer is held by its handle, by each VMA mapping
 * it, by each dma-buf exported from it and, briefly, by ioctls using it. A
 * /dev/hmc VMA also holds the file, and a dma-buf holds the module, so the
 * module outlives every mapping and export. Imports and peer reports belong
 * to their file and go when it is closed.
 *
 * Locking: there is no driver-wide mutex. The handle tables are xarrays
 * whose spinlock covers lookup + reference, so the mmap handler (which runs
 * under mmap_lock) and the ioctls (which copy from and to user memory) never
 * wait on each other. Buffers, imports and peers are also entered in global
 * xarrays (hmc_bufs, hmc_imports, hmc_peers) that the netlink dumps read
 * under their spinlock. The dma_resv lock of an imported dma-buf guards the
 * import's mapping against the exporter's move_notify.
 */
#ifndef HMC_KMOD_HMC_H
#define HMC_KMOD_HMC_H

#include <linux/atomic.h>
#include <linux/dma-direction.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mm_types.h>
#include <linux/mutex.h>
#include <linux/xarray.h>
#include <linux/hmc.h>

/*
 * Page offset of a handle's mmap window. Handles keep offsets below
 * HMC_MMAP_IMPORT, which marks the windows of imports.
 */
#define HMC_PGOFF_SHIFT		(HMC_MMAP_SHIFT - PAGE_SHIFT)
#define HMC_PGOFF_MASK		((1UL << HMC_PGOFF_SHIFT) - 1)
#define HMC_PGOFF_IMPORT	(HMC_MMAP_IMPORT >> PAGE_SHIFT)
#define HMC_HANDLE_MAX		((1U << (62 - HMC_MMAP_SHIFT)) - 1)

struct dma_buf;
struct dma_buf_attachment;
struct genl_family;
struct pci_dev;
struct sg_table;
struct sk_buff;

struct hmc_counters {
	atomic64_t val[HMC_STAT_COUNT];
};

struct hmc_ctx {
	struct kref ref;
	u32 id;				/* HMC_A_FILE_ID */
	pid_t tgid;			/* pid_nr(owner), for events */
	u32 next_handle;		/* cursor of xa_alloc_cyclic */
	u32 next_import;		/* the same for imports */
	unsigned int nr_peers;		/* under peer_lock */
	struct pid *owner;		/* thread group of the opener */
	struct mm_struct *mm;		/* its mm (mmgrab): memlock charges */
	struct xarray bufs;		/* handle -> struct hmc_buf */
	struct xarray imports;		/* handle -> struct hmc_import */
	struct mutex peer_lock;		/* peers, nr_peers */
	struct list_head peers;		/* struct hmc_peer, connected */
	struct hmc_counters stats;
};

struct hmc_buf {
	struct kref ref;
	atomic_t nr_mappings;
	atomic_t nr_exports;		/* live dma-bufs */
	u32 id;				/* in hmc_bufs */
	struct hmc_ctx *ctx;		/* referenced */
	u32 type;			/* HMC_BUF_TYPE_* */
	u32 handle;
	unsigned long nr_pages;		/* size, charged to memlock */
	unsigned long nr_held;		/* pages[] entries holding a page */
	struct page **pages;
	bool readonly;			/* pinned without FOLL_WRITE */
	bool handle_live;		/* published, not yet freed */
	bool announced;			/* published: BUF_FREED is due */
};

/* A dma-buf attached by PEER_IMPORT, kept under a handle of its file. */
struct hmc_import {
	struct kref ref;		/* handle, and ioctls using it */
	u32 id;				/* in hmc_imports */
	struct hmc_ctx *ctx;		/* referenced */
	u64 offset, size;		/* the registered part */
	struct dma_buf *dmabuf;		/* referenced */
	struct dma_buf_attachment *attach;
	struct sg_table *sgt;		/* NULL once invalidated; under resv */
	struct pci_dev *pdev;		/* the attach device, if given */
	u32 handle;
	u32 flags;			/* HMC_PEER_IMPORT_F_* in effect */
	u32 state;			/* HMC_PEER_ST_*: READ_ONCE */
	unsigned int nents;		/* its DMA segments, under resv */
	enum dma_data_direction dir;
	bool announced;			/* PEER_IMPORTED sent; under resv */
	char exporter[HMC_EXPORTER_NAME_LEN];
};

/* A fabric peer that the file's process reported connected. */
struct hmc_peer {
	struct list_head node;		/* ctx->peers */
	struct hmc_ctx *ctx;
	/* Updated under the xa_lock of hmc_peers, which the dump holds. */
	u64 peer_id;
	u64 since_ns;			/* CLOCK_REALTIME of the report */
	u32 transport;
	u32 addr_len;
	u8 addr[HMC_PEER_ADDR_MAX];
	u32 id;				/* in hmc_peers */
};

/* Arguments of one ioctl, as copied from and back to user space. */
union hmc_ioctl_arg {
	struct hmc_version version;
	struct hmc_buf_alloc alloc;
	struct hmc_buf_pin pin;
	struct hmc_buf_free free;
	struct hmc_buf_info info;
	struct hmc_stats stats;
	struct hmc_buf_export export;
	struct hmc_peer_import import;
	struct hmc_peer_release release;
	struct hmc_peer_info peer_info;
	struct hmc_peer_state peer_state;
};

struct hmc_ioctl_call {
	union hmc_ioctl_arg arg;
	/*
	 * Set by a command that made something (@obj) which user space may
	 * see only once the results were copied back: called after the copy
	 * with whether it succeeded, to publish or undo it.
	 */
	void (*finish)(struct hmc_ctx *ctx, struct hmc_ioctl_call *call,
		       bool ok);
	void *obj;
};

extern struct xarray hmc_bufs, hmc_imports, hmc_peers;

/* main.c */
struct device *hmc_dma_device(void);

/* ctx.c */
struct hmc_ctx *hmc_ctx_create(void);
void hmc_ctx_get(struct hmc_ctx *ctx);
void hmc_ctx_put(struct hmc_ctx *ctx);
void hmc_ctx_release(struct hmc_ctx *ctx);
int hmc_ctx_check_owner(const struct hmc_ctx *ctx);
int hmc_ctx_reserve_handle(struct hmc_ctx *ctx, struct hmc_buf *buf);
void hmc_ctx_finish_buf(struct hmc_ctx *ctx, struct hmc_ioctl_call *call,
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
int hmc_buf_mmap(struct hmc_buf *buf, struct vm_area_struct *vma);

/* export.c */
int hmc_ioctl_buf_export(struct hmc_ctx *ctx, struct hmc_ioctl_call *call);

/* import.c */
int hmc_ioctl_peer_import(struct hmc_ctx *ctx, struct hmc_ioctl_call *call);
int hmc_ioctl_peer_release(struct hmc_ctx *ctx, struct hmc_ioctl_call *call);
int hmc_ioctl_peer_info(struct hmc_ctx *ctx, struct hmc_ioctl_call *call);
int hmc_import_mmap(struct hmc_ctx *ctx, struct vm_area_struct *vma);
void hmc_imports_release(struct hmc_ctx *ctx);

/* peer.c */
int hmc_ioctl_peer_state(struct hmc_ctx *ctx, struct hmc_ioctl_call *call);
void hmc_peers_release(struct hmc_ctx *ctx);

/* memlock.c */
int hmc_memlock_charge(struct hmc_ctx *ctx, unsigned long nr_pages);
void hmc_memlock_uncharge(struct hmc_ctx *ctx, unsigned long nr_pages);

/* stats.c */
void hmc_stat_add(struct hmc_ctx *ctx, enum hmc_stat stat, s64 delta);
void hmc_stat_add_global(enum hmc_stat stat, s64 delta);
u64 hmc_stat_global(enum hmc_stat stat);
void hmc_stats_check_idle(void);
int hmc_ioctl_get_stats(struct hmc_ctx *ctx, struct hmc_ioctl_call *call);

/* ioctl.c */
long hmc_ioctl(struct file *file, unsigned int cmd, unsigned long uarg);

/* genl.c: the family, its requests and the attributes of objects */
extern struct genl_family hmc_genl_family;
int hmc_genl_init(void);
void hmc_genl_exit(void);
int hmc_nl_put_ctx(struct sk_buff *skb, const struct hmc_ctx *ctx);
int hmc_nl_put_buf(struct sk_buff *skb, const struct hmc_buf *buf);
int hmc_nl_put_import(struct sk_buff *skb, const struct hmc_import *imp);
int hmc_nl_put_peer(struct sk_buff *skb, const struct hmc_peer *peer);

/* event.c: multicast events, sent in order from a work item */
void hmc_event_init(void);
struct sk_buff *hmc_event_new(u8 cmd, gfp_t gfp);
void hmc_event_send(struct sk_buff *skb, int err);
u64 hmc_event_last_seq(void);
void hmc_event_flush(void);
void hmc_event_buf(u8 cmd, const struct hmc_buf *buf);
void hmc_event_export(const struct hmc_buf *buf, u64 offset, u64 size);
void hmc_event_import(u8 cmd, const struct hmc_import *imp, gfp_t gfp);
void hmc_event_peer(u8 cmd, const struct hmc_peer *peer, u32 error);
void hmc_event_error(const struct hmc_ctx *ctx, unsigned int nr, int err);
/* For hmc_ib.ko (namespace HMC): RDMA_DEV_* (port 0) and RDMA_PORT_*. */
void hmc_event_rdma(u8 cmd, const char *dev, u32 port);

/* True if any of @n u64 words is non-zero (reserved fields). */
static inline bool hmc_nonzero(const __u64 *words, unsigned int n)
{
	while (n--)
		if (words[n])
			return true;
	return false;
}

#endif /* HMC_KMOD_HMC_H */
