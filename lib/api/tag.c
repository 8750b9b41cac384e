// SPDX-License-Identifier: MIT
/* Control traffic: tags and barriers, over the peers' control connections. */
#include <errno.h>
#include <stdlib.h>

#include "api/api.h"
#include "core/comm.h"
#include "core/peer.h"
#include "sys/log.h"
#include "wire/frame.h"

int comm_send_frame(struct hmc_comm *c, uint32_t rank, enum frame_type type,
		      uint64_t v, int64_t deadline)
{
	uint8_t payload[8];
	struct peer *p;
	int rc;

	rc = peer_connected(c, rank, &p);
	if (rc)
		return rc;
	rc = conn_send(p->conn, type, payload,
		       (uint32_t)frame_encode_u64(payload, v), deadline);
	if (rc)
		pr_info("rank %u: sending a %s to rank %u: %s", c->rank,
			frame_type_name(type), rank, hmc_strerror(rc));
	peer_put(p);
	return rc;
}

int hmc_comm_send_tag(struct hmc_comm *c, uint32_t peer, uint64_t tag)
{
	int64_t deadline;
	struct peer *p;
	bool in_band;
	int rc;

	if (!c)
		return -EINVAL;
	deadline = deadline_after_ms(c->op_timeout_ms);
	rc = peer_connected(c, peer, &p);
	if (rc)
		return rc;
	in_band = p->xops->tags_in_band;
	peer_put(p);
	if (in_band)	/* in line with put_signal's tags */
		return comm_post_wait(c, peer, REQ_PUT, 0, 0, 0, &tag,
				      deadline);
	return comm_send_frame(c, peer, FRAME_TAG, tag, deadline);
}

struct tag_wait {
	uint32_t rank;
	int err;
	bool got;
	uint64_t tag;
};

/*
 * Takes the next tag of the peer, or notes that it is down. A rank that
 * has not connected yet is waited for. comm->lock held.
 */
static bool tag_cond(void *owner, void *arg)
{
	struct tag_wait *w = arg;
	struct peer *p = peer_lookup_locked(owner, w->rank);

	if (!p)
		return false;
	/* tags that came before a failure still count */
	if (peer_pop_tag(p, &w->tag)) {
		w->got = true;
		return true;
	}
	if (p->state == PEER_DOWN) {
		w->err = p->error ? p->error : -ECONNRESET;
		return true;
	}
	return false;
}

int hmc_comm_recv_tag(struct hmc_comm *c, uint32_t peer, uint64_t *tag,
		      int timeout_ms)
{
	struct tag_wait w = { .rank = peer };
	int rc;

	if (!c || !tag)
		return -EINVAL;
	rc = engine_wait(&c->engine, tag_cond, &w, deadline_after_ms(timeout_ms), 0);
	if (rc)
		return rc;
	if (!w.got)
		return w.err;
	*tag = w.tag;
	return 0;
}

struct barrier_wait {
	struct peer **peers;
	size_t n;
	int err;
};

static bool barrier_cond(void *owner, void *arg)
{
	struct barrier_wait *w = arg;
	size_t i;

	for (i = 0; i < w->n; i++) {
		struct peer *p = w->peers[i];

		/* A peer that entered the barrier and left right after counts. */
		if (p->barrier_seen >= p->barrier_sent)
			continue;
		if (p->state != PEER_CONNECTED) {
			w->err = p->state == PEER_DOWN && p->error ?
				 p->error : -ECONNRESET;
			return true;
		}
		return false;
	}
	return true;
}

int hmc_comm_barrier(struct hmc_comm *c, int timeout_ms)
{
	int64_t deadline = deadline_after_ms(timeout_ms);
	struct barrier_wait w = { 0 };
	uint8_t payload[8];
	size_t i, cap = 0;
	struct peer *p;
	int rc = 0;

	if (!c)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	for (i = 0; i < PEER_HASH_SIZE; i++)
		for (p = c->peers[i]; p; p = p->hnext)
			cap += p->state == PEER_CONNECTED;
	w.peers = calloc(cap ? cap : 1, sizeof(*w.peers));
	if (!w.peers) {
		pthread_mutex_unlock(&c->lock);
		return -ENOMEM;
	}
	for (i = 0; i < PEER_HASH_SIZE; i++)
		for (p = c->peers[i]; p; p = p->hnext)
			if (p->state == PEER_CONNECTED) {
				p->barrier_sent++;
				w.peers[w.n++] = peer_get(p);
			}
	pthread_mutex_unlock(&c->lock);

	/*
	 * A send that fails to a peer that already entered and left does not
	 * matter; to any other peer, the failure shows as the peer going down.
	 */
	for (i = 0; i < w.n; i++)
		if (conn_send(w.peers[i]->conn, FRAME_BARRIER, payload,
			      (uint32_t)frame_encode_u64(payload,
						w.peers[i]->barrier_sent),
			      deadline))
			pr_debug("rank %u: barrier to rank %u not sent", c->rank,
				 w.peers[i]->rank);
	rc = engine_wait(&c->engine, barrier_cond, &w, deadline, 0);
	if (!rc)
		rc = w.err;
	for (i = 0; i < w.n; i++)
		peer_put(w.peers[i]);
	free(w.peers);
	return rc;
}
