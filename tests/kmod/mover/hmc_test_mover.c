// SPDX-License-Identifier: GPL-2.0
/*
 * hmc_test_mover.ko: a dma-buf exporter for hmc's tests only, of the
 * dynamic kind that moves its memory, as GPU drivers move VRAM: importers
 * that attached dynamically are told (move_notify) before it moves, static
 * ones keep it pinned. The stock kernel has no such exporter without a
 * GPU. /dev/hmc_test_mover: HMC_TEST_MOVER_CREATE, HMC_TEST_MOVER_MOVE.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/fcntl.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "hmc_test_mover.h"

MODULE_IMPORT_NS(DMA_BUF);

/* Caps a test buffer at 64 MiB. */
#define MOVER_MAX_PAGES	(64UL << (20 - PAGE_SHIFT))

struct mover_buf {
	unsigned long nr_pages;
	struct page **pages;		/* under the dma-buf's resv */
	unsigned int pins;		/* under the dma-buf's resv */
};

static const struct dma_buf_ops mover_ops;

static void mover_free_pages(struct page **pages, unsigned long n)
{
	while (n--)
		__free_page(pages[n]);
	kvfree(pages);
}

static struct page **mover_alloc_pages(unsigned long n)
{
	struct page **pages = kvcalloc(n, sizeof(*pages), GFP_KERNEL);
	unsigned long i;

	if (!pages)
		return NULL;
	for (i = 0; i < n; i++) {
		pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!pages[i]) {
			mover_free_pages(pages, i);
			return NULL;
		}
	}
	return pages;
}

static int mover_pin(struct dma_buf_attachment *attach)
{
	struct mover_buf *buf = attach->dmabuf->priv;

	dma_resv_assert_held(attach->dmabuf->resv);
	buf->pins++;
	return 0;
}

static void mover_unpin(struct dma_buf_attachment *attach)
{
	struct mover_buf *buf = attach->dmabuf->priv;

	dma_resv_assert_held(attach->dmabuf->resv);
	buf->pins--;
}

/* Dynamic exporters are always called with the resv lock held. */
static struct sg_table *mover_map(struct dma_buf_attachment *attach,
				  enum dma_data_direction dir)
{
	struct mover_buf *buf = attach->dmabuf->priv;
	struct sg_table *sgt;
	int ret;

	dma_resv_assert_held(attach->dmabuf->resv);
	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	ret = sg_alloc_table_from_pages(sgt, buf->pages, buf->nr_pages, 0,
					buf->nr_pages << PAGE_SHIFT,
					GFP_KERNEL);
	if (!ret) {
		ret = dma_map_sgtable(attach->dev, sgt, dir, 0);
		if (ret)
			sg_free_table(sgt);
	}
	if (ret) {
		kfree(sgt);
		return ERR_PTR(ret);
	}
	return sgt;
}

static void mover_unmap(struct dma_buf_attachment *attach,
			struct sg_table *sgt, enum dma_data_direction dir)
{
	dma_unmap_sgtable(attach->dev, sgt, dir, 0);
	sg_free_table(sgt);
	kfree(sgt);
}

static void mover_release(struct dma_buf *dmabuf)
{
	struct mover_buf *buf = dmabuf->priv;

	mover_free_pages(buf->pages, buf->nr_pages);
	kfree(buf);
}

/*
 * The pages as they are now; a later move leaves this mapping behind. No
 * resv lock: the core may hold it here, and the tests do not move buffers
 * while they map them.
 */
static int mover_mmap(struct dma_buf *dmabuf, struct vm_area_struct *vma)
{
	struct mover_buf *buf = dmabuf->priv;
	unsigned long nr = vma_pages(vma);

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	return vm_insert_pages(vma, vma->vm_start, buf->pages + vma->vm_pgoff,
			       &nr);
}

static const struct dma_buf_ops mover_ops = {
	.pin		= mover_pin,
	.unpin		= mover_unpin,
	.map_dma_buf	= mover_map,
	.unmap_dma_buf	= mover_unmap,
	.release	= mover_release,
	.mmap		= mover_mmap,
};

static int mover_create(struct hmc_test_mover_create __user *uarg)
{
	DEFINE_DMA_BUF_EXPORT_INFO(info);
	struct hmc_test_mover_create arg;
	struct dma_buf *dmabuf;
	struct mover_buf *buf;
	int fd;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (!arg.size || !PAGE_ALIGNED(arg.size) || arg.pad ||
	    arg.size >> PAGE_SHIFT > MOVER_MAX_PAGES)
		return -EINVAL;
	buf = kzalloc(sizeof(*buf), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	buf->nr_pages = arg.size >> PAGE_SHIFT;
	buf->pages = mover_alloc_pages(buf->nr_pages);
	if (!buf->pages) {
		kfree(buf);
		return -ENOMEM;
	}
	info.ops = &mover_ops;
	info.size = arg.size;
	info.flags = O_RDWR;
	info.priv = buf;
	dmabuf = dma_buf_export(&info);
	if (IS_ERR(dmabuf)) {
		mover_free_pages(buf->pages, buf->nr_pages);
		kfree(buf);
		return PTR_ERR(dmabuf);
	}
	fd = dma_buf_fd(dmabuf, O_CLOEXEC);
	if (fd < 0) {
		dma_buf_put(dmabuf);
		return fd;
	}
	/* A test module: the fd stays installed if this copy fails. */
	return put_user(fd, &uarg->fd);
}

static int mover_move(struct hmc_test_mover_move __user *uarg)
{
	struct hmc_test_mover_move arg;
	struct page **pages;
	struct mover_buf *buf;
	struct dma_buf *dmabuf;
	unsigned long i;
	int ret = 0;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.pad)
		return -EINVAL;
	dmabuf = dma_buf_get(arg.fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	if (dmabuf->ops != &mover_ops) {
		dma_buf_put(dmabuf);
		return -EINVAL;
	}
	buf = dmabuf->priv;
	pages = mover_alloc_pages(buf->nr_pages);
	if (!pages) {
		dma_buf_put(dmabuf);
		return -ENOMEM;
	}
	dma_resv_lock(dmabuf->resv, NULL);
	dma_buf_move_notify(dmabuf);
	if (buf->pins) {
		ret = -EBUSY;
	} else {
		for (i = 0; i < buf->nr_pages; i++)
			copy_highpage(pages[i], buf->pages[i]);
		swap(pages, buf->pages);
	}
	dma_resv_unlock(dmabuf->resv);
	mover_free_pages(pages, buf->nr_pages);
	dma_buf_put(dmabuf);
	return ret;
}

static long mover_ioctl(struct file *file, unsigned int cmd,
			unsigned long arg)
{
	switch (cmd) {
	case HMC_TEST_MOVER_CREATE:
		return mover_create((void __user *)arg);
	case HMC_TEST_MOVER_MOVE:
		return mover_move((void __user *)arg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations mover_fops = {
	.owner		= THIS_MODULE,
	.unlocked_ioctl	= mover_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

static struct miscdevice mover_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "hmc_test_mover",
	.fops	= &mover_fops,
};

module_misc_device(mover_misc);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("HMC tests: a dma-buf exporter that moves its memory");
