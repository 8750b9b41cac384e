// SPDX-License-Identifier: GPL-2.0
/*
 * Counters (enum hmc_stat), kept per file and globally. The live ones
 * return to zero once every buffer, handle and mapping is gone; tests and
 * module unload rely on that.
 */
#include <linux/bug.h>
#include <linux/uaccess.h>

#include "hmc.h"

static struct hmc_counters hmc_global;

static const enum hmc_stat hmc_live_stats[] = {
	HMC_STAT_BUFS_LIVE,
	HMC_STAT_BYTES_LIVE,
	HMC_STAT_PAGES_PINNED,
	HMC_STAT_MAPPINGS_LIVE,
	HMC_STAT_HANDLES_LIVE,
	HMC_STAT_EXPORTS_LIVE,
	HMC_STAT_ATTACHMENTS_LIVE,
	HMC_STAT_IMPORTS_LIVE,
	HMC_STAT_PEERS_CONNECTED,
};

void hmc_stat_add(struct hmc_ctx *ctx, enum hmc_stat stat, s64 delta)
{
	atomic64_add(delta, &ctx->stats.val[stat]);
	atomic64_add(delta, &hmc_global.val[stat]);
}

/* Counters of no file in particular (events). */
void hmc_stat_add_global(enum hmc_stat stat, s64 delta)
{
	atomic64_add(delta, &hmc_global.val[stat]);
}

u64 hmc_stat_global(enum hmc_stat stat)
{
	return atomic64_read(&hmc_global.val[stat]);
}

/*
 * Module exit: files, mappings and dma-bufs pin the module, so this cannot
 * fire.
 */
void hmc_stats_check_idle(void)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(hmc_live_stats); i++)
		WARN_ON_ONCE(atomic64_read(&hmc_global.val[hmc_live_stats[i]]));
}

int hmc_ioctl_get_stats(struct hmc_ctx *ctx, struct hmc_ioctl_call *call)
{
	struct hmc_stats *arg = &call->arg.stats;
	const struct hmc_counters *src;
	u64 snap[HMC_STAT_COUNT];
	unsigned int i, n;

	if (arg->flags & ~HMC_STATS_FLAGS ||
	    hmc_nonzero(arg->reserved, ARRAY_SIZE(arg->reserved)))
		return -EINVAL;
	src = arg->flags & HMC_STATS_F_GLOBAL ? &hmc_global : &ctx->stats;
	for (i = 0; i < HMC_STAT_COUNT; i++)
		snap[i] = atomic64_read(&src->val[i]);
	n = min_t(u32, arg->nr_counters, HMC_STAT_COUNT);
	if (copy_to_user(u64_to_user_ptr(arg->counters_ptr), snap,
			 n * sizeof(snap[0])))
		return -EFAULT;
	arg->nr_counters = HMC_STAT_COUNT;
	return 0;
}
