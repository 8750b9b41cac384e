// SPDX-License-Identifier: GPL-2.0
/*
 * BUF_EXPORT: a ConnBuffer, or a page-aligned part of it, as a dma-buf.
 *
 * hmc is a static exporter: the pages never move, so there is no pin/unpin
 * and no move_notify; the core maps each attachment once
 * (cache_sgt_mapping) and dynamic importers (RDMA) work as with udmabuf.
 * Each mapping is made for the attaching device. The dma-buf holds the
 * buffer, with its pages and memlock charge, and (through its owner) the
 * module, so it outlives the handle, the /dev/hmc file and the process.
 *
 * Locks: the export's mutex guards its list of attachments; it is taken
 * inside the exporter callbacks only, which the core may call with the
 * dma_resv lock held, and never around anything that takes that lock.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/fcntl.h>
#include <linux/file.h>
#include <linux/iosys-map.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "compat.h"
#include "hmc.h"

MODULE_IMPORT_NS(DMA_BUF);

struct hmc_export {
	struct hmc_buf *buf;		/* referenced */
	unsigned long first;		/* first page of the part */
	unsigned long nr_pages;
	struct mutex lock;		/* attachments */
	struct list_head attachments;	/* struct hmc_export_attach */
};

/* An attached device and its mapping (the core maps each at most once). */
struct hmc_export_attach {
	struct list_head node;
	struct device *dev;
	struct sg_table *sgt;		/* NULL until mapped */
	enum dma_data_direction dir;
};

static int hmc_dmabuf_attach(struct dma_buf *dmabuf,
			     struct dma_buf_attachment *attach)
{
	struct hmc_export *exp = dmabuf->priv;
	struct hmc_export_attach *a;

	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return -ENOMEM;
	a->dev = attach->dev;
	mutex_lock(&exp->lock);
	list_add(&a->node, &exp->attachments);
	mutex_unlock(&exp->lock);
	attach->priv = a;
	hmc_stat_add(exp->buf->ctx, HMC_STAT_ATTACHMENTS_LIVE, 1);
	return 0;
}

static void hmc_dmabuf_detach(struct dma_buf *dmabuf,
			      struct dma_buf_attachment *attach)
{
	struct hmc_export *exp = dmabuf->priv;
	struct hmc_export_attach *a = attach->priv;

	mutex_lock(&exp->lock);
	list_del(&a->node);
	mutex_unlock(&exp->lock);
	kfree(a);
	hmc_stat_add(exp->buf->ctx, HMC_STAT_ATTACHMENTS_LIVE, -1);
}

static struct sg_table *hmc_dmabuf_map(struct dma_buf_attachment *attach,
				       enum dma_data_direction dir)
{
	struct hmc_export *exp = attach->dmabuf->priv;
	struct hmc_export_attach *a = attach->priv;
	struct sg_table *sgt;
	int ret;

	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	ret = sg_alloc_table_from_pages_segment(sgt,
			exp->buf->pages + exp->first, exp->nr_pages, 0,
			exp->nr_pages << PAGE_SHIFT,
			dma_get_max_seg_size(attach->dev), GFP_KERNEL);
	if (ret)
		goto err_free;
	ret = dma_map_sgtable(attach->dev, sgt, dir, 0);
	if (ret)
		goto err_table;
	mutex_lock(&exp->lock);
	a->sgt = sgt;
	a->dir = dir;
	mutex_unlock(&exp->lock);
	return sgt;

err_table:
	sg_free_table(sgt);
err_free:
	kfree(sgt);
	return ERR_PTR(ret);
}

static void hmc_dmabuf_unmap(struct dma_buf_attachment *attach,
			     struct sg_table *sgt, enum dma_data_direction dir)
{
	struct hmc_export *exp = attach->dmabuf->priv;
	struct hmc_export_attach *a = attach->priv;

	mutex_lock(&exp->lock);
	a->sgt = NULL;
	mutex_unlock(&exp->lock);
	dma_unmap_sgtable(attach->dev, sgt, dir, 0);
	sg_free_table(sgt);
	kfree(sgt);
}

/* The last reference to the dma-buf: every importer has detached. */
static void hmc_dmabuf_release(struct dma_buf *dmabuf)
{
	struct hmc_export *exp = dmabuf->priv;
	struct hmc_buf *buf = exp->buf;

	atomic_dec(&buf->nr_exports);
	hmc_stat_add(buf->ctx, HMC_STAT_EXPORTS_LIVE, -1);
	mutex_destroy(&exp->lock);
	kfree(exp);
	hmc_buf_put(buf);
}

/* CPU access through a mapping or vmap: sync every device's mapping. */
static int hmc_dmabuf_cpu_access(struct dma_buf *dmabuf,
				 enum dma_data_direction dir, bool begin)
{
	struct hmc_export *exp = dmabuf->priv;
	struct hmc_export_attach *a;

	mutex_lock(&exp->lock);
	list_for_each_entry(a, &exp->attachments, node) {
		if (!a->sgt)
			continue;
		if (begin)
			dma_sync_sgtable_for_cpu(a->dev, a->sgt, dir);
		else
			dma_sync_sgtable_for_device(a->dev, a->sgt, dir);
	}
	mutex_unlock(&exp->lock);
	return 0;
}

static int hmc_dmabuf_begin_cpu_access(struct dma_buf *dmabuf,
				       enum dma_data_direction dir)
{
	return hmc_dmabuf_cpu_access(dmabuf, dir, true);
}

static int hmc_dmabuf_end_cpu_access(struct dma_buf *dmabuf,
				     enum dma_data_direction dir)
{
	return hmc_dmabuf_cpu_access(dmabuf, dir, false);
}

/*
 * Also reached through importers (a DRM driver mapping its import calls
 * dma_buf_mmap()), which do not check the mode of our file: refuse writable
 * mappings of a read-only export here.
 */
static int hmc_dmabuf_mmap(struct dma_buf *dmabuf, struct vm_area_struct *vma)
{
	struct hmc_export *exp = dmabuf->priv;

	if (!(dmabuf->file->f_mode & FMODE_WRITE)) {
		if (vma->vm_flags & VM_WRITE)
			return -EACCES;
		vm_flags_clear(vma, VM_MAYWRITE);
	}
	/* The core checked the range against the part's size. */
	vma->vm_pgoff += exp->first;
	hmc_buf_get(exp->buf);
	return hmc_buf_mmap(exp->buf, vma);
}

static int hmc_dmabuf_vmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	struct hmc_export *exp = dmabuf->priv;
	void *vaddr;

	vaddr = vm_map_ram(exp->buf->pages + exp->first, exp->nr_pages,
			   NUMA_NO_NODE);
	if (!vaddr)
		return -ENOMEM;
	iosys_map_set_vaddr(map, vaddr);
	return 0;
}

static void hmc_dmabuf_vunmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	struct hmc_export *exp = dmabuf->priv;

	vm_unmap_ram(map->vaddr, exp->nr_pages);
	iosys_map_clear(map);
}

static const struct dma_buf_ops hmc_dmabuf_ops = {
	.cache_sgt_mapping	= true,
	.attach			= hmc_dmabuf_attach,
	.detach			= hmc_dmabuf_detach,
	.map_dma_buf		= hmc_dmabuf_map,
	.unmap_dma_buf		= hmc_dmabuf_unmap,
	.release		= hmc_dmabuf_release,
	.begin_cpu_access	= hmc_dmabuf_begin_cpu_access,
	.end_cpu_access		= hmc_dmabuf_end_cpu_access,
	.mmap			= hmc_dmabuf_mmap,
	.vmap			= hmc_dmabuf_vmap,
	.vunmap			= hmc_dmabuf_vunmap,
};

/* Creates the dma-buf, which owns @exp (and its buffer reference) on success. */
static struct dma_buf *hmc_export_create(struct hmc_export *exp, bool rdwr)
{
	DEFINE_DMA_BUF_EXPORT_INFO(info);
	struct dma_buf *dmabuf;

	info.ops = &hmc_dmabuf_ops;
	info.size = exp->nr_pages << PAGE_SHIFT;
	info.flags = rdwr ? O_RDWR : O_RDONLY;
	info.priv = exp;
	dmabuf = dma_buf_export(&info);
	if (IS_ERR(dmabuf))
		return dmabuf;
	atomic_inc(&exp->buf->nr_exports);
	hmc_stat_add(exp->buf->ctx, HMC_STAT_EXPORTS_LIVE, 1);
	return dmabuf;
}

/* The fd reaches user space only once the results did. */
static void hmc_export_finish(struct hmc_ctx *ctx, struct hmc_ioctl_call *call,
			      bool ok)
{
	const struct hmc_buf_export *arg = &call->arg.export;
	struct dma_buf *dmabuf = call->obj;
	struct hmc_export *exp = dmabuf->priv;

	if (!ok) {
		put_unused_fd(arg->fd);
		/* The release callback frees the export. */
		dma_buf_put(dmabuf);
		return;
	}
	hmc_event_export(exp->buf, arg->offset, dmabuf->size);
	fd_install(arg->fd, dmabuf->file);
}

int hmc_ioctl_buf_export(struct hmc_ctx *ctx, struct hmc_ioctl_call *call)
{
	struct hmc_buf_export *arg = &call->arg.export;
	struct hmc_export *exp;
	struct dma_buf *dmabuf;
	struct hmc_buf *buf;
	u64 buf_size;
	int fd, ret;

	if (arg->flags & ~HMC_BUF_EXPORT_FLAGS || arg->pad ||
	    hmc_nonzero(arg->reserved, ARRAY_SIZE(arg->reserved)))
		return -EINVAL;
	if (!PAGE_ALIGNED(arg->offset) || !PAGE_ALIGNED(arg->size))
		return -EINVAL;
	buf = hmc_ctx_get_buf(ctx, arg->handle);
	if (!buf)
		return -ENOENT;
	buf_size = (u64)buf->nr_pages << PAGE_SHIFT;
	ret = -EINVAL;
	if (arg->offset >= buf_size || arg->size > buf_size - arg->offset)
		goto err_put;
	ret = -EACCES;
	if (buf->readonly && arg->flags & HMC_BUF_EXPORT_F_RDWR)
		goto err_put;

	ret = -ENOMEM;
	exp = kzalloc(sizeof(*exp), GFP_KERNEL);
	if (!exp)
		goto err_put;
	exp->buf = buf;		/* the lookup's reference */
	exp->first = arg->offset >> PAGE_SHIFT;
	exp->nr_pages = arg->size ? arg->size >> PAGE_SHIFT :
				    buf->nr_pages - exp->first;
	mutex_init(&exp->lock);
	INIT_LIST_HEAD(&exp->attachments);
	dmabuf = hmc_export_create(exp, arg->flags & HMC_BUF_EXPORT_F_RDWR);
	if (IS_ERR(dmabuf)) {
		ret = PTR_ERR(dmabuf);
		mutex_destroy(&exp->lock);
		kfree(exp);
		goto err_put;
	}

	/* From here on only dma_buf_put(): the dma-buf owns the export. */
	fd = get_unused_fd_flags(arg->flags & HMC_BUF_EXPORT_F_CLOEXEC ?
				 O_CLOEXEC : 0);
	if (fd < 0) {
		dma_buf_put(dmabuf);
		return fd;
	}
	arg->fd = fd;
	call->finish = hmc_export_finish;
	call->obj = dmabuf;
	return 0;

err_put:
	hmc_buf_put(buf);
	return ret;
}
