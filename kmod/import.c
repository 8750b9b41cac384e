// SPDX-License-Identifier: GPL-2.0
/*
 * PEER_IMPORT: peer-memory registration of a dma-buf from any exporter.
 *
 * hmc attaches with its own device (or, for exporters that need one, a PCI
 * device that the caller names), maps the dma-buf for DMA and keeps the
 * attachment under an import handle of the file. Map and unmap always run
 * under the dma-buf's dma_resv lock, as dynamic importers must and as
 * is harmless for static ones. A dynamic attachment's move_notify, also
 * called under that lock, drops the mapping and marks the import
 * invalidated; the event is queued without sleeping on any hmc lock.
 *
 * DMA addresses never leave the kernel except through PEER_INFO for
 * CAP_SYS_ADMIN; user space maps an import through the exporter's mmap.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/dma-buf.h>
#include <linux/dma-resv.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "compat.h"
#include "hmc.h"

/* Every live import, by HMC_A_IMPORT_ID, for the netlink dump. */
DEFINE_XARRAY_ALLOC1(hmc_imports);
static u32 hmc_imports_next;

/*
 * Exporters that dereference the attaching device as a PCI device (NVIDIA's
 * nv_dma_buf_attach does so unchecked): hmc's own device would crash them.
 */
static char hmc_pci_exporters[128] = "nvidia";
module_param_string(pci_exporters, hmc_pci_exporters,
		    sizeof(hmc_pci_exporters), 0644);
MODULE_PARM_DESC(pci_exporters,
		 "dma-buf exporters (module or exporter names, comma-separated) that PEER_IMPORT attaches only with HMC_PEER_IMPORT_F_PCI_DEV (default: nvidia)");

/* Whether @name is an item of the comma-separated @list. */
static bool hmc_name_listed(const char *list, const char *name)
{
	size_t len = strlen(name), n;

	while (len && *list) {
		n = strcspn(list, ",\n");
		if (n == len && !strncmp(list, name, len))
			return true;
		list += n;
		if (*list)
			list++;
	}
	return false;
}

static bool hmc_exporter_needs_pci(const struct dma_buf *dmabuf)
{
	bool listed;

	kernel_param_lock(THIS_MODULE);
	listed = (dmabuf->exp_name &&
		  hmc_name_listed(hmc_pci_exporters, dmabuf->exp_name)) ||
		 (dmabuf->owner &&
		  hmc_name_listed(hmc_pci_exporters,
				  module_name(dmabuf->owner)));
	kernel_param_unlock(THIS_MODULE);
	return listed;
}

static u64 hmc_import_mmap_offset(const struct hmc_import *imp)
{
	return HMC_MMAP_IMPORT | (u64)imp->handle << HMC_MMAP_SHIFT;
}

/*
 * Counts the DMA segments of the mapping that overlap the registered part
 * and writes the first @max of them, clipped to it, to @out.
 */
static unsigned int hmc_import_segments(const struct hmc_import *imp,
					struct hmc_sg_entry *out,
					unsigned int max)
{
	u64 pos = 0, start = imp->offset, end = imp->offset + imp->size;
	struct scatterlist *sg;
	unsigned int i, n = 0;
	u64 lo, hi;

	dma_resv_assert_held(imp->dmabuf->resv);
	for_each_sgtable_dma_sg(imp->sgt, sg, i) {
		lo = pos;
		hi = pos + sg_dma_len(sg);
		pos = hi;
		if (hi <= start)
			continue;
		if (lo >= end)
			break;
		if (n < max) {
			out[n].dma_addr = sg_dma_address(sg) + max(lo, start) -
					  lo;
			out[n].len = min(hi, end) - max(lo, start);
		}
		n++;
	}
	return n;
}

/* The exporter moves the memory: the mapping is stale. Under resv. */
static void hmc_import_move_notify(struct dma_buf_attachment *attach)
{
	struct hmc_import *imp = attach->importer_priv;

	dma_resv_assert_held(attach->dmabuf->resv);
	if (!imp->sgt)
		return;
	dma_buf_unmap_attachment(attach, imp->sgt, imp->dir);
	imp->sgt = NULL;
	imp->nents = 0;
	WRITE_ONCE(imp->state, HMC_PEER_ST_INVALIDATED);
	hmc_stat_add(imp->ctx, HMC_STAT_IMPORTS_INVALIDATED, 1);
	/*
	 * Not before PEER_IMPORTED: listeners never heard of an import still
	 * being made (or undone); PEER_IMPORTED then shows it invalidated.
	 */
	if (imp->announced)
		hmc_event_import(HMC_EVT_PEER_INVALIDATED, imp, GFP_ATOMIC);
}

static const struct dma_buf_attach_ops hmc_import_dynamic_ops = {
	.move_notify	= hmc_import_move_notify,
};

static const struct dma_buf_attach_ops hmc_import_p2p_ops = {
	.allow_peer2peer = true,
	.move_notify	= hmc_import_move_notify,
};

/* Undoes as much of hmc_ioctl_peer_import() as was done. */
static void hmc_import_destroy(struct kref *ref)
{
	struct hmc_import *imp = container_of(ref, struct hmc_import, ref);
	struct hmc_ctx *ctx = imp->ctx;

	if (imp->id) {
		xa_erase(&hmc_imports, imp->id);
		hmc_stat_add(ctx, HMC_STAT_IMPORTS_LIVE, -1);
	}
	if (imp->attach) {
		/* After detach, no move_notify can come. */
		dma_resv_lock(imp->dmabuf->resv, NULL);
		if (imp->sgt)
			dma_buf_unmap_attachment(imp->attach, imp->sgt,
						 imp->dir);
		imp->sgt = NULL;
		dma_resv_unlock(imp->dmabuf->resv);
		dma_buf_detach(imp->dmabuf, imp->attach);
	}
	/* Only now: a move_notify before the detach may still send events. */
	if (imp->announced)
		hmc_event_import(HMC_EVT_PEER_RELEASED, imp, GFP_KERNEL);
	if (imp->dmabuf)
		dma_buf_put(imp->dmabuf);
	pci_dev_put(imp->pdev);
	kfree(imp);
	hmc_ctx_put(ctx);
}

static void hmc_import_put(struct hmc_import *imp)
{
	kref_put(&imp->ref, hmc_import_destroy);
}

static struct hmc_import *hmc_import_lookup(struct hmc_ctx *ctx,
					    unsigned long handle)
{
	struct hmc_import *imp;

	xa_lock(&ctx->imports);
	imp = xa_load(&ctx->imports, handle);
	if (imp)
		kref_get(&imp->ref);
	xa_unlock(&ctx->imports);
	return imp;
}

static int hmc_import_check(const struct hmc_peer_import *arg)
{
	if (arg->flags & ~HMC_PEER_IMPORT_FLAGS || arg->pad ||
	    hmc_nonzero(arg->reserved, ARRAY_SIZE(arg->reserved)))
		return -EINVAL;
	if (arg->flags & HMC_PEER_IMPORT_F_P2P &&
	    !(arg->flags & HMC_PEER_IMPORT_F_DYNAMIC))
		return -EINVAL;
	if (!(arg->flags & HMC_PEER_IMPORT_F_PCI_DEV) &&
	    (arg->pci_domain || arg->pci_bus || arg->pci_devfn))
		return -EINVAL;
	if (!PAGE_ALIGNED(arg->offset) || !PAGE_ALIGNED(arg->size))
		return -EINVAL;
	if (arg->flags & HMC_PEER_IMPORT_F_PCI_DEV && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	return 0;
}

/* The device to attach with: hmc's own, or the PCI device named. */
static struct device *hmc_import_device(struct hmc_import *imp,
					const struct hmc_peer_import *arg)
{
	if (!(arg->flags & HMC_PEER_IMPORT_F_PCI_DEV)) {
		if (hmc_exporter_needs_pci(imp->dmabuf)) {
			pr_debug_ratelimited("exporter %s needs a PCI device to attach to\n",
					     imp->exporter);
			return ERR_PTR(-EOPNOTSUPP);
		}
		return hmc_dma_device();
	}
	imp->pdev = pci_get_domain_bus_and_slot(arg->pci_domain, arg->pci_bus,
						arg->pci_devfn);
	return imp->pdev ? &imp->pdev->dev : ERR_PTR(-ENODEV);
}

/* Attaches and maps; the attachment is undone by hmc_import_destroy(). */
static int hmc_import_attach(struct hmc_import *imp, struct device *dev)
{
	const struct dma_buf_attach_ops *ops = NULL;
	struct dma_buf_attachment *attach;
	struct sg_table *sgt;
	int ret;

	if (imp->flags & HMC_PEER_IMPORT_F_P2P)
		ops = &hmc_import_p2p_ops;
	else if (imp->flags & HMC_PEER_IMPORT_F_DYNAMIC)
		ops = &hmc_import_dynamic_ops;
	attach = dma_buf_dynamic_attach(imp->dmabuf, dev, ops, imp);
	if (IS_ERR(attach))
		return PTR_ERR(attach);
	imp->attach = attach;

	ret = dma_resv_lock_interruptible(imp->dmabuf->resv, NULL);
	if (ret)
		return ret;
	sgt = dma_buf_map_attachment(attach, imp->dir);
	if (!IS_ERR(sgt)) {
		imp->sgt = sgt;
		imp->nents = hmc_import_segments(imp, NULL, 0);
	}
	dma_resv_unlock(imp->dmabuf->resv);
	return PTR_ERR_OR_ZERO(sgt);
}

/* Publish the reserved handle once user space has it, or undo it all. */
static void hmc_import_finish(struct hmc_ctx *ctx, struct hmc_ioctl_call *call,
			      bool ok)
{
	struct hmc_import *imp = call->obj;
	struct sk_buff *skb;

	if (!ok) {
		xa_release(&ctx->imports, imp->handle);
		hmc_import_put(imp);
		return;
	}
	/*
	 * Announced under resv, which move_notify holds: PEER_INVALIDATED
	 * comes after PEER_IMPORTED or not at all. The message is allocated
	 * first, since exporters may take resv in memory reclaim.
	 */
	skb = hmc_event_new(HMC_EVT_PEER_IMPORTED, GFP_KERNEL);
	dma_resv_lock(imp->dmabuf->resv, NULL);
	imp->announced = true;
	if (skb)
		hmc_event_send(skb, hmc_nl_put_import(skb, imp));
	dma_resv_unlock(imp->dmabuf->resv);
	/*
	 * Published last: from the table, another thread may release the
	 * import (and free it) at once.
	 */
	xa_store(&ctx->imports, imp->handle, imp, GFP_KERNEL);
}

int hmc_ioctl_peer_import(struct hmc_ctx *ctx, struct hmc_ioctl_call *call)
{
	struct hmc_peer_import *arg = &call->arg.import;
	struct hmc_import *imp;
	struct dma_buf *dmabuf;
	struct device *dev;
	int ret;

	ret = hmc_import_check(arg);
	if (ret)
		return ret;
	imp = kzalloc(sizeof(*imp), GFP_KERNEL);
	if (!imp)
		return -ENOMEM;
	kref_init(&imp->ref);
	hmc_ctx_get(ctx);
	imp->ctx = ctx;
	imp->flags = arg->flags;

	dmabuf = dma_buf_get(arg->fd);
	if (IS_ERR(dmabuf)) {
		ret = PTR_ERR(dmabuf);
		goto err_put;
	}
	imp->dmabuf = dmabuf;
	ret = -EINVAL;
	if (arg->offset >= dmabuf->size ||
	    arg->size > dmabuf->size - arg->offset)
		goto err_put;
	imp->offset = arg->offset;
	imp->size = arg->size ? arg->size : dmabuf->size - arg->offset;
	strscpy(imp->exporter, dmabuf->owner ? module_name(dmabuf->owner) :
		dmabuf->exp_name ?: "", sizeof(imp->exporter));
	if (!(dmabuf->file->f_mode & FMODE_WRITE))
		imp->flags |= HMC_PEER_IMPORT_F_READONLY;
	imp->dir = imp->flags & HMC_PEER_IMPORT_F_READONLY ? DMA_TO_DEVICE :
							      DMA_BIDIRECTIONAL;
	imp->state = HMC_PEER_ST_MAPPED;

	dev = hmc_import_device(imp, arg);
	if (IS_ERR(dev)) {
		ret = PTR_ERR(dev);
		goto err_put;
	}
	ret = hmc_import_attach(imp, dev);
	if (ret)
		goto err_put;

	ret = xa_alloc_cyclic(&ctx->imports, &imp->handle, NULL,
			      XA_LIMIT(1, HMC_HANDLE_MAX), &ctx->next_import,
			      GFP_KERNEL);
	if (ret < 0)
		goto err_handle;
	ret = xa_alloc_cyclic(&hmc_imports, &imp->id, imp, xa_limit_32b,
			      &hmc_imports_next, GFP_KERNEL);
	if (ret < 0) {
		xa_release(&ctx->imports, imp->handle);
		goto err_handle;
	}
	hmc_stat_add(ctx, HMC_STAT_IMPORTS_LIVE, 1);

	arg->handle = imp->handle;
	arg->nents = imp->nents;
	arg->mmap_offset = hmc_import_mmap_offset(imp);
	call->finish = hmc_import_finish;
	call->obj = imp;
	return 0;

err_handle:
	ret = ret == -EBUSY ? -ENOSPC : ret;
err_put:
	hmc_import_put(imp);
	return ret;
}

int hmc_ioctl_peer_release(struct hmc_ctx *ctx, struct hmc_ioctl_call *call)
{
	const struct hmc_peer_release *arg = &call->arg.release;
	struct hmc_import *imp;

	if (arg->flags)
		return -EINVAL;
	/* xa_load() skips reserved entries, which stay reserved. */
	xa_lock(&ctx->imports);
	imp = xa_load(&ctx->imports, arg->handle);
	if (imp)
		__xa_erase(&ctx->imports, arg->handle);
	xa_unlock(&ctx->imports);
	if (!imp)
		return -ENOENT;
	hmc_import_put(imp);
	return 0;
}

/* The DMA segments for PEER_INFO: at most @max, in a kernel array. */
static int hmc_import_copy_segments(struct hmc_import *imp,
				    struct hmc_peer_info *arg)
{
	struct hmc_sg_entry *entries = NULL;
	unsigned int max;
	int ret;

	/* nents only ever drops (to 0, by invalidation). */
	max = min(arg->nr_sg, READ_ONCE(imp->nents));
	if (max) {
		entries = kvcalloc(max, sizeof(*entries), GFP_KERNEL);
		if (!entries)
			return -ENOMEM;
	}
	ret = dma_resv_lock_interruptible(imp->dmabuf->resv, NULL);
	if (ret)
		goto out;
	arg->state = imp->state;
	arg->nents = imp->nents;
	if (imp->sgt)
		max = min(max, hmc_import_segments(imp, entries, max));
	else
		max = 0;
	dma_resv_unlock(imp->dmabuf->resv);
	/* Copied without the lock: the array may be a mapping of the dma-buf. */
	if (max && copy_to_user(u64_to_user_ptr(arg->sg_ptr), entries,
				max * sizeof(*entries)))
		ret = -EFAULT;
	arg->nr_sg = arg->nents;
out:
	kvfree(entries);
	return ret;
}

int hmc_ioctl_peer_info(struct hmc_ctx *ctx, struct hmc_ioctl_call *call)
{
	struct hmc_peer_info *arg = &call->arg.peer_info;
	struct hmc_import *imp;
	int ret = 0;

	if (arg->flags & ~HMC_PEER_INFO_FLAGS ||
	    hmc_nonzero(arg->reserved, ARRAY_SIZE(arg->reserved)))
		return -EINVAL;
	if (!(arg->flags & HMC_PEER_INFO_F_SG) && (arg->nr_sg || arg->sg_ptr))
		return -EINVAL;
	if (arg->flags & HMC_PEER_INFO_F_SG && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	imp = hmc_import_lookup(ctx, arg->handle);
	if (!imp)
		return -ENOENT;
	arg->size = imp->size;
	arg->offset = imp->offset;
	arg->dmabuf_size = imp->dmabuf->size;
	arg->mmap_offset = hmc_import_mmap_offset(imp);
	arg->import_flags = imp->flags;
	memcpy(arg->exporter, imp->exporter, sizeof(arg->exporter));
	arg->state = READ_ONCE(imp->state);
	arg->nents = READ_ONCE(imp->nents);
	if (arg->flags & HMC_PEER_INFO_F_SG)
		ret = hmc_import_copy_segments(imp, arg);
	hmc_import_put(imp);
	return ret;
}

/*
 * mmap of an import's window: the part [offset, offset + size) of the
 * dma-buf, through the exporter's mmap (the VMA then holds the dma-buf, not
 * /dev/hmc, and outlives the import). Runs under mmap_lock.
 */
int hmc_import_mmap(struct hmc_ctx *ctx, struct vm_area_struct *vma)
{
	unsigned long handle = (vma->vm_pgoff & ~HMC_PGOFF_IMPORT) >>
			       HMC_PGOFF_SHIFT;
	unsigned long first = vma->vm_pgoff & HMC_PGOFF_MASK;
	unsigned long nr = vma_pages(vma), part;
	struct hmc_import *imp;
	int ret;

	if (handle > HMC_HANDLE_MAX)
		return -EINVAL;
	imp = hmc_import_lookup(ctx, handle);
	if (!imp)
		return -EINVAL;
	part = imp->size >> PAGE_SHIFT;
	ret = -EINVAL;
	if (!(vma->vm_flags & VM_MAYSHARE) || first >= part ||
	    nr > part - first)
		goto out;
	if (imp->flags & HMC_PEER_IMPORT_F_READONLY) {
		ret = -EACCES;
		if (vma->vm_flags & VM_WRITE)
			goto out;
		vm_flags_clear(vma, VM_MAYWRITE);
	}
	ret = dma_buf_mmap(imp->dmabuf, vma,
			   (imp->offset >> PAGE_SHIFT) + first);
out:
	hmc_import_put(imp);
	return ret;
}

/* The file is closed: release every import it holds. */
void hmc_imports_release(struct hmc_ctx *ctx)
{
	struct hmc_import *imp;
	unsigned long handle;

	xa_for_each(&ctx->imports, handle, imp) {
		xa_erase(&ctx->imports, handle);
		hmc_import_put(imp);
	}
}
