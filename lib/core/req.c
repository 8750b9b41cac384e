// SPDX-License-Identifier: MIT
/* Request table (see req.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/peer.h"
#include "core/req.h"

#define REQ_CHUNK	1024u
#define REQ_MAX_SLOTS	(1u << 24)

static struct req *slot(struct req_table *t, uint32_t idx)
{
	return &t->chunks[idx / REQ_CHUNK][idx % REQ_CHUNK];
}

void req_table_init(struct req_table *t)
{
	memset(t, 0, sizeof(*t));
}

void req_table_fini(struct req_table *t)
{
	uint32_t c;

	for (c = 0; c < t->nr_chunks; c++)
		free(t->chunks[c]);
	free(t->chunks);
}

static int grow(struct req_table *t)
{
	struct req **chunks, *chunk;
	uint32_t i, base = t->nr_slots;

	if (t->nr_slots >= REQ_MAX_SLOTS)
		return -EAGAIN;
	chunks = realloc(t->chunks, (t->nr_chunks + 1) * sizeof(*chunks));
	if (!chunks)
		return -ENOMEM;
	t->chunks = chunks;
	chunk = calloc(REQ_CHUNK, sizeof(*chunk));
	if (!chunk)
		return -ENOMEM;
	t->chunks[t->nr_chunks++] = chunk;
	t->nr_slots += REQ_CHUNK;
	for (i = REQ_CHUNK; i-- > 0;) {
		chunk[i].table = t;
		chunk[i].idx = base + i;
		chunk[i].next_free = t->free_head;
		t->free_head = base + i + 1;
	}
	return 0;
}

static __hot void release_slot(struct req_table *t, struct req *r)
{
	r->state = REQ_FREE;
	r->next_free = t->free_head;
	t->free_head = r->idx + 1;
	t->active--;
}

/* Leave ACTIVE: record the result and drop the peer. Lock held. */
static __hot void finish(struct req *r, int status)
{
	r->state = REQ_DONE;
	r->status = status;
	list_del(&r->peer_node);
	peer_put(r->peer);
	r->peer = NULL;
}

__hot struct req *req_alloc(struct req_table *t, struct peer *peer,
			    enum req_op op, hmc_req_t *id)
{
	struct req *r = NULL;
	uint32_t idx;

	futex_mutex_lock(&t->lock);
	if (!t->free_head && grow(t))
		goto out;
	idx = t->free_head - 1;
	r = slot(t, idx);
	t->free_head = r->next_free;
	t->active++;
	if (++r->gen == 0)
		r->gen = 1;
	r->state = REQ_ACTIVE;
	r->op = (uint8_t)op;
	r->in_xport = true;
	r->abandoned = false;
	r->status = 0;
	r->pin = NULL;
	if (peer) {
		r->peer = peer_get(peer);
		list_add_tail(&peer->reqs, &r->peer_node);
	} else {	/* fails with no peer (a receive from any source) */
		r->peer = NULL;
		list_init(&r->peer_node);
	}
	*id = (uint64_t)r->gen << 32 | (idx + 1);
out:
	futex_mutex_unlock(&t->lock);
	return r;
}

/* The transport lets go of @r: so does its pin. Lock held. */
static inline void unpin(struct req *r)
{
	if (r->pin) {
		__atomic_sub_fetch(r->pin, 1, __ATOMIC_SEQ_CST);
		r->pin = NULL;
	}
}

void req_free_unposted(struct req_table *t, struct req *r)
{
	futex_mutex_lock(&t->lock);
	unpin(r);
	finish(r, 0);
	release_slot(t, r);
	futex_mutex_unlock(&t->lock);
}

__hot void req_complete(struct req *r, int status)
{
	struct req_table *t = r->table;

	futex_mutex_lock(&t->lock);
	unpin(r);
	if (r->state == REQ_ACTIVE)
		finish(r, status);
	r->in_xport = false;
	if (r->state == REQ_DONE && r->abandoned)
		release_slot(t, r);
	futex_mutex_unlock(&t->lock);
}

void req_fail_peer(struct req_table *t, struct peer *peer, int err)
{
	struct list_node *n, *tmp;

	futex_mutex_lock(&t->lock);
	list_for_each_safe(n, tmp, &peer->reqs)
		finish(container_of(n, struct req, peer_node), err);
	futex_mutex_unlock(&t->lock);
}

/* The slot for handle @id if it is live. Lock held. */
static inline struct req *lookup(struct req_table *t, hmc_req_t id)
{
	uint32_t idx = (uint32_t)id;
	struct req *r;

	if (idx == 0 || idx > t->nr_slots)
		return NULL;
	r = slot(t, idx - 1);
	if (r->state == REQ_FREE || r->abandoned || r->gen != (uint32_t)(id >> 32))
		return NULL;
	return r;
}

__hot int req_result(struct req_table *t, hmc_req_t id, bool collect)
{
	struct req *r;
	int rc;

	futex_mutex_lock(&t->lock);
	r = lookup(t, id);
	if (!r) {
		rc = -ENOENT;
	} else if (r->state == REQ_ACTIVE) {
		rc = -EINPROGRESS;
	} else {
		rc = r->status;
		if (collect) {
			r->abandoned = true;	/* no further lookups */
			if (!r->in_xport)
				release_slot(t, r);
		}
	}
	futex_mutex_unlock(&t->lock);
	return rc;
}

void req_abandon(struct req_table *t, hmc_req_t id)
{
	struct req *r;

	futex_mutex_lock(&t->lock);
	r = lookup(t, id);
	if (r) {
		r->abandoned = true;
		if (r->state == REQ_DONE && !r->in_xport)
			release_slot(t, r);
	}
	futex_mutex_unlock(&t->lock);
}

bool req_is_done(struct req_table *t, hmc_req_t id)
{
	struct req *r;
	bool done;

	futex_mutex_lock(&t->lock);
	r = lookup(t, id);
	done = !r || r->state != REQ_ACTIVE;
	futex_mutex_unlock(&t->lock);
	return done;
}
