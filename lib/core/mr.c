// SPDX-License-Identifier: MIT
/* Memory region tables (see mr.h). */
#include <errno.h>
#include <stdlib.h>

#include "core/comm.h"
#include "core/mr.h"
#include "sys/log.h"

__hot int mr_use(struct mr_table *t, uint32_t handle, struct comm_mr **out)
{
	uint32_t idx = (handle & 0xffff) - 1;
	struct comm_mr *mr;

	if (!(handle & 0xffff) ||
	    idx >= __atomic_load_n(&t->nr, __ATOMIC_ACQUIRE))
		return -ENOENT;
	mr = mr_at(t, idx);
	__atomic_add_fetch(&mr->users, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&mr->live, __ATOMIC_SEQ_CST) ||
	    __atomic_load_n(&mr->gen, __ATOMIC_RELAXED) != handle >> 16) {
		mr_unuse(mr);
		return -ENOENT;
	}
	*out = mr;
	return 0;
}

__hot const struct peer_rmr *rmr_lookup(struct rmr_table *t, uint32_t handle)
{
	uint32_t idx = handle - 1;

	if (!handle || idx >= __atomic_load_n(&t->nr, __ATOMIC_ACQUIRE))
		return NULL;
	return rmr_at(t, idx);
}

void rmr_table_free(struct rmr_table *t)
{
	uint32_t i;

	for (i = 0; i < MR_CHUNKS && t->chunks[i]; i++)
		free(t->chunks[i]);
}

void mr_xport_up(struct hmc_comm *c, struct xport_slot *slot)
{
	struct mr_table *t = &c->mrs;
	enum hmc_transport type = slot->ops->type;
	struct comm_mr *mr;
	uint32_t i;
	int rc;

	futex_mutex_lock(&t->lock);
	for (i = 0; i < t->nr; i++) {
		mr = mr_at(t, i);
		if (!mr->in_use || !mr->live || mr->xmr[type])
			continue;
		rc = slot->ops->mr_reg(slot->ctx, mr, &mr->xmr[type]);
		if (rc) {
			mr->xmr[type] = NULL;
			pr_debug("rank %u: region %u on %s: %s", c->rank, i + 1,
				 hmc_transport_name(type), hmc_strerror(rc));
		}
	}
	futex_mutex_unlock(&t->lock);
}

void mr_table_fini(struct hmc_comm *c)
{
	struct mr_table *t = &c->mrs;
	struct comm_mr *mr;
	uint32_t i;
	int x;

	for (i = 0; i < t->nr; i++) {
		mr = mr_at(t, i);
		for (x = 0; x < XPORT_SLOTS; x++)
			if (mr->xmr[x])
				c->xports[x].ops->mr_dereg(c->xports[x].ctx,
							   mr->xmr[x]);
	}
	for (i = 0; i < MR_CHUNKS && t->chunks[i]; i++)
		free(t->chunks[i]);
}
