// SPDX-License-Identifier: GPL-2.0
/*
 * RLIMIT_MEMLOCK accounting of buffer pages, as ib_umem_get does for RDMA
 * memory regions: pages count in the owner's mm->pinned_vm (VmPin), and a
 * caller without CAP_IPC_LOCK may not exceed its limit. The charge is taken
 * back from the same mm at the buffer's final release, whichever process
 * that runs in.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/sched/signal.h>

#include "hmc.h"

int hmc_memlock_charge(struct hmc_ctx *ctx, unsigned long nr_pages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	s64 pinned = atomic64_add_return(nr_pages, &ctx->mm->pinned_vm);

	if (pinned > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(nr_pages, &ctx->mm->pinned_vm);
		hmc_stat_add(ctx, HMC_STAT_MEMLOCK_REFUSED, 1);
		pr_debug_ratelimited("%lu pages over RLIMIT_MEMLOCK (%lu)\n",
				     nr_pages, limit);
		return -ENOMEM;
	}
	return 0;
}

void hmc_memlock_uncharge(struct hmc_ctx *ctx, unsigned long nr_pages)
{
	atomic64_sub(nr_pages, &ctx->mm->pinned_vm);
}
