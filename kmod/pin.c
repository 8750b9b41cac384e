// SPDX-License-Identifier: GPL-2.0
/*
 * BUF_PIN: long-term pinning of the caller's anonymous or shmem (memfd,
 * tmpfs, SysV shm) memory as a ConnBuffer.
 *
 * The VMAs are checked first, under mmap_lock, for a precise error; the
 * pages are then pinned with the fast GUP path, which takes the lock itself,
 * and each pinned page is checked again, so a mapping replaced in between is
 * refused as well. File-backed pages are refused on every kernel, not only
 * where GUP itself would refuse them.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/hugetlb.h>
#include <linux/magic.h>
#include <linux/mm.h>
#include <linux/pgtable.h>
#include <linux/sched/signal.h>

#include "hmc.h"

/* Pages per pin_user_pages_fast() call: an int count, and signal checks. */
#define HMC_PIN_CHUNK	2048

static bool hmc_vma_pinnable(struct vm_area_struct *vma)
{
	struct inode *inode;

	if (vma->vm_flags & (VM_IO | VM_PFNMAP | VM_MIXEDMAP) ||
	    is_vm_hugetlb_page(vma))
		return false;
	if (vma_is_anonymous(vma))
		return true;
	if (!vma->vm_file)
		return false;
	/* shmem is not exported to modules: recognise its regular files. */
	inode = file_inode(vma->vm_file);
	return S_ISREG(inode->i_mode) && inode->i_sb->s_magic == TMPFS_MAGIC;
}

static int hmc_pin_check_vmas(unsigned long start, unsigned long end)
{
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	unsigned long addr = start;
	int ret = 0;

	mmap_read_lock(mm);
	while (addr < end) {
		vma = find_vma(mm, addr);
		if (!vma || vma->vm_start > addr) {
			ret = -EFAULT;
			break;
		}
		if (!hmc_vma_pinnable(vma)) {
			ret = -EINVAL;
			break;
		}
		addr = vma->vm_end;
	}
	mmap_read_unlock(mm);
	return ret;
}

/* Anonymous (or the shared zero page of untouched memory) or shmem. */
static bool hmc_pages_pinnable(struct page **pages, unsigned long n)
{
	struct folio *folio;

	while (n--) {
		folio = page_folio(pages[n]);
		if (!folio_test_anon(folio) && !folio_test_swapbacked(folio) &&
		    !is_zero_pfn(page_to_pfn(pages[n])))
			return false;
	}
	return true;
}

static int hmc_pin_pages(struct hmc_buf *buf, unsigned long start)
{
	unsigned int gup_flags = FOLL_LONGTERM;
	unsigned long first;
	int n, ret;

	if (!buf->readonly)
		gup_flags |= FOLL_WRITE;
	while (buf->nr_held < buf->nr_pages) {
		if (fatal_signal_pending(current))
			return -EINTR;
		first = buf->nr_held;
		n = min_t(unsigned long, buf->nr_pages - first, HMC_PIN_CHUNK);
		ret = pin_user_pages_fast(start + (first << PAGE_SHIFT), n,
					  gup_flags, buf->pages + first);
		if (ret <= 0)
			return ret ? ret : -EFAULT;
		buf->nr_held += ret;
		if (!hmc_pages_pinnable(buf->pages + first, ret)) {
			pr_debug_ratelimited("range remapped while pinning\n");
			return -EINVAL;
		}
		cond_resched();
	}
	return 0;
}

int hmc_ioctl_buf_pin(struct hmc_ctx *ctx, struct hmc_ioctl_call *call)
{
	struct hmc_buf_pin *arg = &call->arg.pin;
	struct hmc_buf *buf;
	int ret;

	if (arg->flags & ~HMC_BUF_PIN_FLAGS ||
	    hmc_nonzero(arg->reserved, ARRAY_SIZE(arg->reserved)))
		return -EINVAL;
	if (!arg->size || arg->size > HMC_BUF_MAX_SIZE ||
	    !PAGE_ALIGNED(arg->addr) || !PAGE_ALIGNED(arg->size))
		return -EINVAL;
	if (arg->addr + arg->size < arg->addr ||
	    arg->addr + arg->size > TASK_SIZE)
		return -EFAULT;
	ret = hmc_pin_check_vmas(arg->addr, arg->addr + arg->size);
	if (ret)
		return ret;

	buf = hmc_buf_new(ctx, HMC_BUF_TYPE_PINNED, arg->size >> PAGE_SHIFT);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	buf->readonly = arg->flags & HMC_BUF_PIN_F_READONLY;
	ret = hmc_pin_pages(buf, arg->addr);
	if (!ret)
		ret = hmc_ctx_reserve_handle(ctx, buf);
	if (ret) {
		hmc_buf_put(buf);
		return ret;
	}
	arg->handle = buf->handle;
	call->finish = hmc_ctx_finish_buf;
	call->obj = buf;
	return 0;
}

void hmc_pin_release(struct hmc_buf *buf)
{
	unpin_user_pages_dirty_lock(buf->pages, buf->nr_held, !buf->readonly);
}
