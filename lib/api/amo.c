// SPDX-License-Identifier: MIT
/* Remote atomics (hmc_comm_amo_nb()). */
#include <errno.h>

#include "api/api.h"
#include "core/comm.h"
#include "core/mr.h"
#include "core/peer.h"
#include "mem/buf.h"

__hot int hmc_comm_amo_nb(struct hmc_comm *c, uint32_t rank, uint32_t rhandle,
			  size_t remote_off, unsigned int size,
			  enum hmc_amo_op op, uint64_t operand,
			  uint64_t compare, uint64_t *fetch, hmc_req_t *id)
{
	struct xport_amo a = { .off = remote_off, .operand = operand,
			       .compare = compare, .fetch = fetch,
			       .op = (uint8_t)op, .size = (uint8_t)size };
	uint32_t need = HMC_MR_REMOTE_WRITE | (fetch ? HMC_MR_REMOTE_READ : 0);
	const struct peer_rmr *e = NULL;
	uint64_t rsize;
	struct peer *p;
	struct req *r;
	int rc;

	if (!c || !id || (size != 4 && size != 8) || (unsigned int)op > HMC_AMO_XOR)
		return -EINVAL;
	if (op == HMC_AMO_FETCH && !fetch)
		return -EINVAL;
	if (size == 4) {
		a.operand &= UINT32_MAX;
		a.compare &= UINT32_MAX;
	}
	rc = peer_use(c, rank, &p);
	if (rc)
		return rc;
	rsize = p->buf_size;
	if (rhandle) {
		e = rmr_lookup(&p->rmrs, rhandle);
		rc = -ENOENT;
		if (!e)
			goto out;
		rc = -EACCES;
		if ((e->access & need) != need)
			goto out;
		rsize = e->len;
	}
	rc = -ERANGE;
	if (range_check(rsize, remote_off, size))
		goto out;
	/* the owner's address, not the offset, must be aligned */
	rc = -EINVAL;
	if (((e ? e->misalign : 0) + remote_off) % size)
		goto out;
	rc = -ENOMEM;
	r = req_alloc(&c->reqs, p, REQ_AMO, id);
	if (!r)
		goto out;
	comm_xport_kick(c, p->xops->type);
	rc = p->xops->amo(c->xports[p->xops->type].ctx, p->xpeer, r,
			  e ? e->xrmr : NULL, &a);
	if (rc)
		req_free_unposted(&c->reqs, r);
out:
	peer_unuse(p);
	return rc;
}
