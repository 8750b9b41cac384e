// SPDX-License-Identifier: MIT
/*
 * Memory regions (hmc_comm_mr_*()) and the transfers between them.
 *
 * Descriptor, big-endian: be32 MR_DESC_MAGIC, u8 version, u8 keys,
 * u8 the start's address modulo 64 (for the alignment of remote atomics),
 * u8 0, be32 handle, be32 access, be64 length, then per key: u8
 * transport, u8 flags (MR_KEY_F_*), be16 key length, the key (the
 * transport's, opaque).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/comm.h"
#include "core/mr.h"
#include "core/peer.h"
#include "mem/buf.h"
#include "sys/opts.h"

#define MR_DESC_MAGIC	0x484d4352u	/* "HMCR" */
#define MR_DESC_VERSION	1
#define MR_DESC_HDR	24
#define MR_KEY_HDR	4
#define MR_KEY_MAX	(HMC_MR_DESC_MAX - MR_DESC_HDR - MR_KEY_HDR)
#define MR_ACCESS	(HMC_MR_REMOTE_READ | HMC_MR_REMOTE_WRITE)
#define MR_KEY_F_NOTIFY	(1u << 0)	/* writes over it count in notify */

/* A free entry (table lock held): its index, or -ENOSPC/-ENOMEM. */
static int mr_slot(struct mr_table *t)
{
	uint32_t i;

	for (i = 0; i < t->nr; i++) {
		struct comm_mr *mr = mr_at(t, i);

		if (!mr->in_use)
			return (int)i;
	}
	if (t->nr >= MR_MAX)
		return -ENOSPC;
	if (!t->chunks[t->nr / MR_CHUNK]) {
		t->chunks[t->nr / MR_CHUNK] = calloc(MR_CHUNK,
						     sizeof(struct comm_mr));
		if (!t->chunks[t->nr / MR_CHUNK])
			return -ENOMEM;
	}
	return (int)t->nr;
}

int hmc_comm_mr_reg(struct hmc_comm *c, void *addr, size_t len,
		    const struct hmc_mr_opts *opts, uint32_t *handle)
{
	struct mr_table *t;
	struct hmc_mr_opts o;
	struct comm_mr *mr;
	int idx, x, rc, nr_xmr = 0, err = -EOPNOTSUPP;

	if (!c || !addr || !len || !handle ||
	    (uintptr_t)addr + len < (uintptr_t)addr)
		return -EINVAL;
	rc = OPTS_LOAD(&o, opts, hmc_mr_opts, reserved);
	if (rc)
		return rc;
	if (o.access & ~MR_ACCESS || o.mem_type > HMC_MEM_MUSA)
		return -EINVAL;
	t = &c->mrs;
	/* No transport comes up halfway through: each gets every region. */
	pthread_mutex_lock(&c->xport_lock);
	futex_mutex_lock(&t->lock);
	idx = mr_slot(t);
	if (idx < 0) {
		err = idx;
		goto out;
	}
	mr = mr_at(t, (uint32_t)idx);
	mr->addr = addr;
	mr->len = len;
	mr->access = o.access;
	mr->mem_type = o.mem_type;
	mr->device = o.device;
	mr->notify = o.notify;
	for (x = 0; x < XPORT_SLOTS; x++) {
		struct xport_slot *slot = &c->xports[x];

		mr->xmr[x] = NULL;
		if (!slot->ctx)
			continue;
		rc = slot->ops->mr_reg(slot->ctx, mr, &mr->xmr[x]);
		if (rc) {
			mr->xmr[x] = NULL;
			if (rc != -EOPNOTSUPP)
				err = rc;
			continue;
		}
		nr_xmr++;
	}
	/* Where no transport is up yet, the first to come up registers it. */
	for (x = 0; x < XPORT_SLOTS && !c->xports[x].ctx; x++)
		;
	if (!nr_xmr && x < XPORT_SLOTS)
		goto out;
	if (++mr->gen == 0)
		mr->gen = 1;
	mr->in_use = true;
	__atomic_store_n(&mr->live, true, __ATOMIC_SEQ_CST);
	if ((uint32_t)idx == t->nr)
		__atomic_store_n(&t->nr, t->nr + 1, __ATOMIC_RELEASE);
	*handle = (uint32_t)mr->gen << 16 | (uint32_t)(idx + 1);
	err = 0;
out:
	futex_mutex_unlock(&t->lock);
	pthread_mutex_unlock(&c->xport_lock);
	return err;
}

static bool mr_idle_cond(void *owner, void *arg)
{
	struct comm_mr *mr = arg;

	return !__atomic_load_n(&mr->users, __ATOMIC_SEQ_CST);
}

int hmc_comm_mr_dereg(struct hmc_comm *c, uint32_t handle)
{
	struct comm_mr *mr;
	int rc, x;

	if (!c)
		return -EINVAL;
	rc = mr_use(&c->mrs, handle, &mr);
	if (rc)
		return rc;
	pthread_mutex_lock(&c->xport_lock);
	futex_mutex_lock(&c->mrs.lock);
	/* A racing dereg of the same handle took it first. */
	rc = __atomic_exchange_n(&mr->live, false, __ATOMIC_SEQ_CST) ? 0 :
	     -ENOENT;
	futex_mutex_unlock(&c->mrs.lock);
	pthread_mutex_unlock(&c->xport_lock);
	mr_unuse(mr);
	if (rc)
		return rc;
	/* No new user from here on; wait for the transfers that hold it. */
	rc = engine_wait(&c->engine, mr_idle_cond, mr,
			 deadline_after_ms(c->op_timeout_ms), 0);
	if (rc) {
		__atomic_store_n(&mr->live, true, __ATOMIC_SEQ_CST);
		return rc;
	}
	pthread_mutex_lock(&c->xport_lock);
	futex_mutex_lock(&c->mrs.lock);
	for (x = 0; x < XPORT_SLOTS; x++) {
		if (mr->xmr[x])
			c->xports[x].ops->mr_dereg(c->xports[x].ctx, mr->xmr[x]);
		mr->xmr[x] = NULL;
	}
	mr->in_use = false;
	futex_mutex_unlock(&c->mrs.lock);
	pthread_mutex_unlock(&c->xport_lock);
	return 0;
}

int hmc_comm_mr_pack(struct hmc_comm *c, uint32_t handle, void *desc,
		     size_t cap, size_t *len)
{
	uint8_t *d = desc, key[MR_KEY_MAX];
	uint32_t klen, pos = MR_DESC_HDR, nkeys = 0;
	struct comm_mr *mr;
	int rc, x;

	if (!c || !desc || !len)
		return -EINVAL;
	rc = mr_use(&c->mrs, handle, &mr);
	if (rc)
		return rc;
	futex_mutex_lock(&c->mrs.lock);
	for (x = 0; x < XPORT_SLOTS; x++) {
		if (!mr->xmr[x])
			continue;
		rc = c->xports[x].ops->mr_pack(c->xports[x].ctx, mr->xmr[x],
					       key, sizeof(key), &klen);
		if (rc)
			goto out;
		if (pos + MR_KEY_HDR + klen > cap) {
			rc = -ENOSPC;
			goto out;
		}
		d[pos] = (uint8_t)x;
		d[pos + 1] = mr->notify && c->xports[x].ops->notifies_writes ?
			     MR_KEY_F_NOTIFY : 0;
		put_be16(d + pos + 2, (uint16_t)klen);
		memcpy(d + pos + MR_KEY_HDR, key, klen);
		pos += MR_KEY_HDR + klen;
		nkeys++;
	}
	if (cap < MR_DESC_HDR) {
		rc = -ENOSPC;
		goto out;
	}
	put_be32(d, MR_DESC_MAGIC);
	d[4] = MR_DESC_VERSION;
	d[5] = (uint8_t)nkeys;
	d[6] = (uint8_t)((uintptr_t)mr->addr % 64);
	d[7] = 0;
	put_be32(d + 8, handle);
	put_be32(d + 12, mr->access);
	put_be64(d + 16, mr->len);
	*len = pos;
out:
	futex_mutex_unlock(&c->mrs.lock);
	mr_unuse(mr);
	return rc;
}

/*
 * The key in descriptor @d for transport @type: 0 and its place, -EINVAL
 * for a descriptor that does not parse, -ENOENT without one.
 */
static int desc_key(const uint8_t *d, size_t len, enum hmc_transport type,
		    const uint8_t **key, uint32_t *klen, uint8_t *kflags)
{
	size_t pos = MR_DESC_HDR;
	int found = -ENOENT;
	unsigned int i;

	if (len < MR_DESC_HDR || len > HMC_MR_DESC_MAX ||
	    get_be32(d) != MR_DESC_MAGIC || d[4] != MR_DESC_VERSION ||
	    d[6] >= 64 || d[7] || !(get_be32(d + 8) & 0xffff) ||
	    get_be32(d + 12) & ~MR_ACCESS || !get_be64(d + 16))
		return -EINVAL;
	for (i = 0; i < d[5]; i++) {
		uint32_t n;

		if (len - pos < MR_KEY_HDR || d[pos + 1] & ~MR_KEY_F_NOTIFY)
			return -EINVAL;
		n = get_be16(d + pos + 2);
		if (len - pos - MR_KEY_HDR < n)
			return -EINVAL;
		if (d[pos] == type && found) {
			*key = d + pos + MR_KEY_HDR;
			*klen = n;
			*kflags = d[pos + 1];
			found = 0;
		}
		pos += MR_KEY_HDR + n;
	}
	return pos == len ? found : -EINVAL;
}

int hmc_comm_mr_import(struct hmc_comm *c, uint32_t rank, const void *desc,
		       size_t len, uint32_t *handle)
{
	const uint8_t *d = desc, *key = NULL;
	struct rmr_table *t;
	struct peer_rmr *e;
	uint32_t klen = 0, owner_mr, i;
	uint8_t kflags = 0;
	struct peer *p;
	void *xrmr;
	int rc;

	if (!c || !desc || !handle)
		return -EINVAL;
	rc = peer_use(c, rank, &p);
	if (rc)
		return rc;
	rc = desc_key(d, len, p->xops->type, &key, &klen, &kflags);
	if (rc)
		goto out;
	owner_mr = get_be32(d + 8);
	t = &p->rmrs;
	futex_mutex_lock(&t->lock);
	for (i = 0; i < t->nr; i++) {
		e = rmr_at(t, i);
		if (e->owner_mr == owner_mr) {
			*handle = i + 1;
			goto unlock;
		}
	}
	if (t->nr >= MR_MAX) {
		rc = -ENOSPC;
		goto unlock;
	}
	if (!t->chunks[t->nr / MR_CHUNK]) {
		t->chunks[t->nr / MR_CHUNK] = calloc(MR_CHUNK, sizeof(*e));
		if (!t->chunks[t->nr / MR_CHUNK]) {
			rc = -ENOMEM;
			goto unlock;
		}
	}
	rc = p->xops->rmr_import(c->xports[p->xops->type].ctx, p->xpeer, key,
				 klen, get_be64(d + 16), &xrmr);
	if (rc)
		goto unlock;
	e = rmr_at(t, t->nr);
	e->owner_mr = owner_mr;
	e->misalign = d[6];
	e->notifies = kflags & MR_KEY_F_NOTIFY;
	e->access = get_be32(d + 12);
	e->len = get_be64(d + 16);
	e->xrmr = xrmr;
	*handle = t->nr + 1;
	__atomic_store_n(&t->nr, t->nr + 1, __ATOMIC_RELEASE);
unlock:
	futex_mutex_unlock(&t->lock);
out:
	peer_unuse(p);
	return rc;
}

/* A copy of @rank's imported region @handle: 0 or a negative errno. */
static int rmr_get(struct hmc_comm *c, uint32_t rank, uint32_t handle,
		   struct peer_rmr *out)
{
	const struct peer_rmr *e;
	struct peer *p;
	int rc;

	if (!c)
		return -EINVAL;
	rc = peer_use(c, rank, &p);
	if (rc)
		return rc;
	e = rmr_lookup(&p->rmrs, handle);
	if (e)
		*out = *e;
	peer_unuse(p);
	return e ? 0 : -ENOENT;
}

int64_t hmc_comm_rmr_size(struct hmc_comm *c, uint32_t rank, uint32_t handle)
{
	struct peer_rmr e;
	int rc = rmr_get(c, rank, handle, &e);

	return rc ? rc : (int64_t)e.len;
}

int hmc_comm_rmr_notifies(struct hmc_comm *c, uint32_t rank, uint32_t handle)
{
	struct peer_rmr e;
	int rc = rmr_get(c, rank, handle, &e);

	return rc ? rc : e.notifies;
}

__hot int comm_post(struct hmc_comm *c, uint32_t rank, enum req_op op,
		    uint32_t handle, size_t local_off, uint32_t rhandle,
		    size_t remote_off, size_t len, const uint64_t *signal,
		    hmc_req_t *id)
{
	bool ranged = op != REQ_FLUSH;
	const struct peer_rmr *e = NULL;
	struct comm_mr *mr = NULL;
	uint64_t lsize, rsize;
	void *xmr = NULL;
	struct peer *p;
	struct req *r;
	void *ctx;
	int rc;

	if (!c || !id)
		return -EINVAL;
	if (handle) {
		rc = mr_use(&c->mrs, handle, &mr);
		if (rc)
			return rc;
		lsize = mr->len;
	} else {
		lsize = hmc_buf_size(c->buf);
	}
	rc = -ERANGE;
	if (ranged && range_check(lsize, local_off, len))
		goto out_mr;
	/* Until peer_unuse(), p->xpeer cannot be destroyed under us. */
	rc = peer_use(c, rank, &p);
	if (rc)
		goto out_mr;
	if (rhandle) {
		e = rmr_lookup(&p->rmrs, rhandle);
		if (!e) {
			rc = -ENOENT;
			goto out;
		}
		rsize = e->len;
		if (!(e->access & (op == REQ_PUT ? HMC_MR_REMOTE_WRITE :
				   HMC_MR_REMOTE_READ))) {
			rc = -EACCES;
			goto out;
		}
	} else {
		rsize = p->buf_size;
	}
	if (ranged && range_check(rsize, remote_off, len)) {
		rc = -ERANGE;
		goto out;
	}
	if (mr) {
		xmr = mr->xmr[p->xops->type];
		if (!xmr) {
			rc = -EOPNOTSUPP;
			goto out;
		}
	}
	r = req_alloc(&c->reqs, p, op, id);
	if (!r) {
		rc = -ENOMEM;
		goto out;
	}
	if (ranged && !len && !signal) {
		req_complete(r, 0);
		goto out;
	}
	if (mr) {
		/* The request keeps the region registered until it is done. */
		__atomic_add_fetch(&mr->users, 1, __ATOMIC_SEQ_CST);
		r->pin = &mr->users;
	}
	ctx = c->xports[p->xops->type].ctx;
	/* New work: the next round must progress the transport before sleeping. */
	comm_xport_kick(c, p->xops->type);
	if (signal)
		rc = p->xops->put_signal(ctx, p->xpeer, r, local_off,
					 remote_off, len, *signal);
	else if (!xmr && !e)
		rc = p->xops->post(ctx, p->xpeer, r, op, local_off, remote_off,
				   len);
	else
		rc = p->xops->post_mr(ctx, p->xpeer, r, op, xmr, local_off,
				      e ? e->xrmr : NULL, remote_off, len);
	if (rc)
		req_free_unposted(&c->reqs, r);
out:
	peer_unuse(p);
out_mr:
	if (mr)
		mr_unuse(mr);
	return rc;
}

__hot int hmc_comm_put_mr_nb(struct hmc_comm *c, uint32_t peer, uint32_t mr,
			     size_t local_off, uint32_t rmr, size_t remote_off,
			     size_t len, hmc_req_t *req)
{
	return comm_post(c, peer, REQ_PUT, mr, local_off, rmr, remote_off, len,
			 NULL, req);
}

__hot int hmc_comm_get_mr_nb(struct hmc_comm *c, uint32_t peer, uint32_t mr,
			     size_t local_off, uint32_t rmr, size_t remote_off,
			     size_t len, hmc_req_t *req)
{
	return comm_post(c, peer, REQ_GET, mr, local_off, rmr, remote_off, len,
			 NULL, req);
}
