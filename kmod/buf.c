// SPDX-License-Identifier: GPL-2.0
/*
 * ConnBuffers: the refcounted buffer object and the kernel-page buffers of
 * BUF_ALLOC.
 *
 * Kernel pages come from the buddy allocator in the highest order available
 * and are split into order-0 pages, so each can be inserted into user page
 * tables (vm_insert_pages) and pinned by get_user_pages like any page.
 * Allocation never invokes the OOM killer: a request that does not fit fails
 * with ENOMEM.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/gfp.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/nodemask.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "compat.h"
#include "hmc.h"

/* Every live buffer, by HMC_A_BUF_ID, for the netlink dump. */
DEFINE_XARRAY_ALLOC1(hmc_bufs);
static u32 hmc_bufs_next;

/* Charges the pages and counts a live buffer holding none of them yet. */
struct hmc_buf *hmc_buf_new(struct hmc_ctx *ctx, u32 type,
			    unsigned long nr_pages)
{
	struct hmc_buf *buf;
	int ret;

	/* Also keeps the page array below what kvmalloc can ever give. */
	if (nr_pages > totalram_pages())
		return ERR_PTR(-ENOMEM);
	ret = hmc_memlock_charge(ctx, nr_pages);
	if (ret)
		return ERR_PTR(ret);

	ret = -ENOMEM;
	buf = kzalloc(sizeof(*buf), GFP_KERNEL);
	if (!buf)
		goto err_uncharge;
	buf->pages = kvcalloc(nr_pages, sizeof(*buf->pages),
			      GFP_KERNEL | __GFP_NOWARN);
	if (!buf->pages)
		goto err_free;

	kref_init(&buf->ref);
	buf->ctx = ctx;
	buf->type = type;
	buf->nr_pages = nr_pages;
	atomic_set(&buf->nr_mappings, 0);
	atomic_set(&buf->nr_exports, 0);
	/* Entered last: the dump may read it from now on. */
	ret = xa_alloc_cyclic(&hmc_bufs, &buf->id, buf, xa_limit_32b,
			      &hmc_bufs_next, GFP_KERNEL);
	if (ret < 0)
		goto err_free_pages;
	hmc_ctx_get(ctx);
	hmc_stat_add(ctx, HMC_STAT_BUFS_LIVE, 1);
	hmc_stat_add(ctx, HMC_STAT_BYTES_LIVE, nr_pages << PAGE_SHIFT);
	hmc_stat_add(ctx, HMC_STAT_PAGES_PINNED, nr_pages);
	hmc_stat_add(ctx, HMC_STAT_BUFS_CREATED, 1);
	return buf;

err_free_pages:
	kvfree(buf->pages);
	ret = ret == -EBUSY ? -ENOSPC : ret;
err_free:
	kfree(buf);
err_uncharge:
	hmc_memlock_uncharge(ctx, nr_pages);
	return ERR_PTR(ret);
}

void hmc_buf_get(struct hmc_buf *buf)
{
	kref_get(&buf->ref);
}

/* The last reference: may run in any process (munmap, close, exit). */
static void hmc_buf_release(struct kref *ref)
{
	struct hmc_buf *buf = container_of(ref, struct hmc_buf, ref);
	struct hmc_ctx *ctx = buf->ctx;
	unsigned long i;

	xa_erase(&hmc_bufs, buf->id);
	if (buf->announced)
		hmc_event_buf(HMC_EVT_BUF_FREED, buf);
	if (buf->type == HMC_BUF_TYPE_PINNED) {
		hmc_pin_release(buf);
	} else {
		for (i = 0; i < buf->nr_held; i++)
			put_page(buf->pages[i]);
	}
	kvfree(buf->pages);
	hmc_memlock_uncharge(ctx, buf->nr_pages);
	hmc_stat_add(ctx, HMC_STAT_BUFS_LIVE, -1);
	hmc_stat_add(ctx, HMC_STAT_BYTES_LIVE,
		     -(s64)(buf->nr_pages << PAGE_SHIFT));
	hmc_stat_add(ctx, HMC_STAT_PAGES_PINNED, -(s64)buf->nr_pages);
	kfree(buf);
	hmc_ctx_put(ctx);
}

void hmc_buf_put(struct hmc_buf *buf)
{
	kref_put(&buf->ref, hmc_buf_release);
}

u64 hmc_buf_mmap_offset(const struct hmc_buf *buf)
{
	return (u64)buf->handle << HMC_MMAP_SHIFT;
}

/*
 * One block of 2^*order zeroed pages, lowering *order until an allocation
 * succeeds. Orders above 0 neither reclaim nor retry: splitting smaller
 * blocks is cheaper than compacting memory for a large one.
 */
static struct page *hmc_alloc_block(int nid, unsigned int *order)
{
	const gfp_t base = GFP_HIGHUSER | __GFP_ZERO | __GFP_NOWARN |
			   (nid == NUMA_NO_NODE ? 0 : __GFP_THISNODE);
	struct page *page;
	gfp_t gfp;

	for (;;) {
		if (*order)
			gfp = (base | __GFP_NORETRY | __GFP_NOMEMALLOC) &
			      ~__GFP_DIRECT_RECLAIM;
		else
			gfp = base | __GFP_RETRY_MAYFAIL;
		if (nid == NUMA_NO_NODE)
			page = alloc_pages(gfp, *order);
		else
			page = alloc_pages_node(nid, gfp, *order);
		if (page || !*order)
			return page;
		(*order)--;
	}
}

static int hmc_buf_fill_kernel(struct hmc_buf *buf, int nid)
{
	unsigned int order = MAX_PAGE_ORDER;
	struct page *page;
	unsigned long i;

	while (buf->nr_held < buf->nr_pages) {
		if (fatal_signal_pending(current))
			return -EINTR;
		order = min_t(unsigned int, order,
			      ilog2(buf->nr_pages - buf->nr_held));
		page = hmc_alloc_block(nid, &order);
		if (!page) {
			pr_debug_ratelimited("no memory at page %lu of %lu\n",
					     buf->nr_held, buf->nr_pages);
			return -ENOMEM;
		}
		if (order)
			split_page(page, order);
		for (i = 0; i < (1UL << order); i++)
			buf->pages[buf->nr_held++] = page + i;
		cond_resched();
	}
	return 0;
}

static int hmc_buf_alloc_node(const struct hmc_buf_alloc *arg)
{
	if (!(arg->flags & HMC_BUF_ALLOC_F_NUMA))
		return arg->numa_node ? -EINVAL : NUMA_NO_NODE;
	if (arg->numa_node < 0 || arg->numa_node >= MAX_NUMNODES ||
	    !node_state(arg->numa_node, N_MEMORY))
		return -EINVAL;
	return arg->numa_node;
}

int hmc_ioctl_buf_alloc(struct hmc_ctx *ctx, struct hmc_ioctl_call *call)
{
	struct hmc_buf_alloc *arg = &call->arg.alloc;
	struct hmc_buf *buf;
	int nid, ret;

	if (arg->flags & ~HMC_BUF_ALLOC_FLAGS || arg->pad ||
	    hmc_nonzero(arg->reserved, ARRAY_SIZE(arg->reserved)))
		return -EINVAL;
	if (!arg->size || arg->size > HMC_BUF_MAX_SIZE)
		return -EINVAL;
	nid = hmc_buf_alloc_node(arg);
	if (nid < NUMA_NO_NODE)
		return nid;

	buf = hmc_buf_new(ctx, HMC_BUF_TYPE_KERNEL,
			  PAGE_ALIGN(arg->size) >> PAGE_SHIFT);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	ret = hmc_buf_fill_kernel(buf, nid);
	if (!ret)
		ret = hmc_ctx_reserve_handle(ctx, buf);
	if (ret) {
		hmc_buf_put(buf);
		return ret;
	}
	arg->handle = buf->handle;
	arg->mmap_offset = hmc_buf_mmap_offset(buf);
	call->finish = hmc_ctx_finish_buf;
	call->obj = buf;
	return 0;
}

int hmc_ioctl_buf_free(struct hmc_ctx *ctx, struct hmc_ioctl_call *call)
{
	const struct hmc_buf_free *arg = &call->arg.free;

	if (arg->flags)
		return -EINVAL;
	return hmc_ctx_free_handle(ctx, arg->handle);
}

int hmc_ioctl_buf_info(struct hmc_ctx *ctx, struct hmc_ioctl_call *call)
{
	struct hmc_buf_info *arg = &call->arg.info;
	struct hmc_buf *buf;

	if (hmc_nonzero(arg->reserved, ARRAY_SIZE(arg->reserved)))
		return -EINVAL;
	buf = hmc_ctx_get_buf(ctx, arg->handle);
	if (!buf)
		return -ENOENT;
	arg->type = buf->type;
	arg->size = (u64)buf->nr_pages << PAGE_SHIFT;
	arg->mmap_offset = hmc_buf_mmap_offset(buf);
	arg->nr_mappings = atomic_read(&buf->nr_mappings);
	arg->numa_node = page_to_nid(buf->pages[0]);
	hmc_buf_put(buf);
	return 0;
}
