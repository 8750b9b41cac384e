// SPDX-License-Identifier: GPL-2.0
/*
 * mmap of /dev/hmc: buffer handle h is mapped at offset h << HMC_MMAP_SHIFT,
 * whole or in part, MAP_SHARED only; the windows of imports lie above
 * HMC_MMAP_IMPORT (import.c). Exported dma-bufs map their buffer with the
 * same code.
 *
 * Kernel pages are inserted up front with vm_insert_pages, which keeps them
 * ordinary refcounted pages in a VM_MIXEDMAP VMA: get_user_pages, and thus
 * ibv_reg_mr, work on the mapping. Pinned user pages are anonymous or shmem
 * pages that may not be inserted that way, so they are mapped by PFN on
 * fault. Each VMA holds a buffer reference (and, through vm_file, the file),
 * so a mapping outlives BUF_FREE and close().
 *
 * The handler runs under mmap_lock: it takes no sleeping driver lock.
 */
#include <linux/mm.h>

#include "compat.h"
#include "hmc.h"

static void hmc_vma_count(struct hmc_buf *buf, int delta)
{
	atomic_add(delta, &buf->nr_mappings);
	hmc_stat_add(buf->ctx, HMC_STAT_MAPPINGS_LIVE, delta);
}

/* A VMA was split or copied (not forked: VM_DONTCOPY). */
static void hmc_vm_open(struct vm_area_struct *vma)
{
	struct hmc_buf *buf = vma->vm_private_data;

	hmc_buf_get(buf);
	hmc_vma_count(buf, 1);
}

static void hmc_vm_close(struct vm_area_struct *vma)
{
	struct hmc_buf *buf = vma->vm_private_data;

	hmc_vma_count(buf, -1);
	hmc_buf_put(buf);
}

static struct page *hmc_vm_fault_page(struct vm_fault *vmf)
{
	struct hmc_buf *buf = vmf->vma->vm_private_data;
	unsigned long idx = vmf->pgoff & HMC_PGOFF_MASK;

	return idx < buf->nr_pages ? buf->pages[idx] : NULL;
}

/* Kernel pages: only after the PTEs were zapped (MADV_DONTNEED). */
static vm_fault_t hmc_vm_fault_kernel(struct vm_fault *vmf)
{
	struct page *page = hmc_vm_fault_page(vmf);

	if (!page)
		return VM_FAULT_SIGBUS;
	get_page(page);
	vmf->page = page;
	return 0;
}

static vm_fault_t hmc_vm_fault_pinned(struct vm_fault *vmf)
{
	struct page *page = hmc_vm_fault_page(vmf);

	if (!page)
		return VM_FAULT_SIGBUS;
	return vmf_insert_pfn(vmf->vma, vmf->address, page_to_pfn(page));
}

static const struct vm_operations_struct hmc_vm_ops_kernel = {
	.open	= hmc_vm_open,
	.close	= hmc_vm_close,
	.fault	= hmc_vm_fault_kernel,
};

static const struct vm_operations_struct hmc_vm_ops_pinned = {
	.open	= hmc_vm_open,
	.close	= hmc_vm_close,
	.fault	= hmc_vm_fault_pinned,
};

/*
 * Maps @vma onto @buf from page (vm_pgoff & HMC_PGOFF_MASK) on and takes
 * over the caller's reference to @buf, which the VMA then holds (on error
 * it is dropped). Used for /dev/hmc and for exported dma-bufs alike.
 */
int hmc_buf_mmap(struct hmc_buf *buf, struct vm_area_struct *vma)
{
	unsigned long first = vma->vm_pgoff & HMC_PGOFF_MASK;
	unsigned long nr = vma_pages(vma);
	int ret;

	/* VM_MAYSHARE: MAP_SHARED, even of a read-only file. */
	ret = -EINVAL;
	if (!(vma->vm_flags & VM_MAYSHARE))
		goto err_put;
	if (first >= buf->nr_pages || nr > buf->nr_pages - first)
		goto err_put;
	if (buf->readonly) {
		ret = -EACCES;
		if (vma->vm_flags & VM_WRITE)
			goto err_put;
		vm_flags_clear(vma, VM_MAYWRITE);
	}

	vm_flags_set(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_private_data = buf;
	if (buf->type == HMC_BUF_TYPE_KERNEL) {
		vma->vm_ops = &hmc_vm_ops_kernel;
		ret = vm_insert_pages(vma, vma->vm_start, buf->pages + first,
				      &nr);
		/* On error the caller unmaps the VMA without ->close. */
		if (ret)
			goto err_put;
	} else {
		vm_flags_set(vma, VM_PFNMAP);
		vma->vm_ops = &hmc_vm_ops_pinned;
	}
	hmc_vma_count(buf, 1);
	return 0;

err_put:
	hmc_buf_put(buf);
	return ret;
}

static int hmc_mmap_buf(struct hmc_ctx *ctx, struct vm_area_struct *vma)
{
	struct hmc_buf *buf;

	if (vma->vm_pgoff >> HMC_PGOFF_SHIFT > HMC_HANDLE_MAX)
		return -EINVAL;
	buf = hmc_ctx_get_buf(ctx, vma->vm_pgoff >> HMC_PGOFF_SHIFT);
	if (!buf)
		return -EINVAL;
	return hmc_buf_mmap(buf, vma);
}

int hmc_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct hmc_ctx *ctx = file->private_data;
	int ret;

	ret = hmc_ctx_check_owner(ctx);
	if (!ret && vma->vm_pgoff & HMC_PGOFF_IMPORT)
		ret = hmc_import_mmap(ctx, vma);
	else if (!ret)
		ret = hmc_mmap_buf(ctx, vma);
	if (ret)
		hmc_stat_add(ctx, HMC_STAT_ERRORS, 1);
	return ret;
}
