/* SPDX-License-Identifier: GPL-2.0 */
/* Shims for the kernels hmc.ko builds against (6.1 first). */
#ifndef HMC_KMOD_COMPAT_H
#define HMC_KMOD_COMPAT_H

#include <linux/mm.h>
#include <linux/version.h>

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
/* vm_flags became read-only behind these helpers in 6.3. */
static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}

static inline void vm_flags_clear(struct vm_area_struct *vma,
				  vm_flags_t flags)
{
	vma->vm_flags &= ~flags;
}
#endif

/*
 * The largest order alloc_pages() takes. 6.4 made MAX_ORDER that order
 * (before, it was one past it); 6.8 renamed it MAX_PAGE_ORDER.
 */
#ifndef MAX_PAGE_ORDER
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 4, 0)
#define MAX_PAGE_ORDER		(MAX_ORDER - 1)
#else
#define MAX_PAGE_ORDER		MAX_ORDER
#endif
#endif

#endif /* HMC_KMOD_COMPAT_H */
