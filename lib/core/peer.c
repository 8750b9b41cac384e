// SPDX-License-Identifier: MIT
/* Peers: the table, references, tags and closing (see peer.h). */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "core/peer.h"
#include "core/req.h"
#include "sys/log.h"
#include "wire/frame.h"

#define TAGS_MAX	(1u << 20)	/* unread tags per peer before we call it a flood */
#define BYE_WAIT_MS	100
#define CLOSE_FLUSH_MS	2000	/* a graceful close waits this long for its peer */

struct peer *peer_new(struct hmc_comm *c, uint32_t rank)
{
	struct peer *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->rank = rank;
	p->refs = 1;
	p->comm = c;
	list_init(&p->reqs);
	list_init(&p->fail_node);
	list_init(&p->pending_node);
	return p;
}

void peer_free(struct peer *p)
{
	conn_free(p->conn);
	rmr_table_free(&p->rmrs);
	free(p->tags);
	free(p);
}

struct peer *peer_lookup(struct hmc_comm *c, uint32_t rank)
{
	struct peer *p;

	pthread_mutex_lock(&c->lock);
	p = peer_lookup_locked(c, rank);
	if (p)
		peer_get(p);
	pthread_mutex_unlock(&c->lock);
	return p;
}

void peer_link(struct hmc_comm *c, struct peer *p)
{
	struct peer **b = peer_bucket(c, p->rank);

	peer_get(p);
	futex_mutex_lock(&c->peers_lock);
	p->hnext = *b;
	*b = p;
	futex_mutex_unlock(&c->peers_lock);
}

void peer_unlink(struct hmc_comm *c, struct peer *p)
{
	struct peer **pp;

	futex_mutex_lock(&c->peers_lock);
	for (pp = peer_bucket(c, p->rank); *pp; pp = &(*pp)->hnext) {
		if (*pp == p) {
			*pp = p->hnext;
			p->hnext = NULL;
			break;
		}
	}
	futex_mutex_unlock(&c->peers_lock);
}

void peer_set_state(struct hmc_comm *c, struct peer *p, enum peer_state state)
{
	futex_mutex_lock(&c->peers_lock);
	p->state = state;
	futex_mutex_unlock(&c->peers_lock);
}

/* @rank's peer if connected (peers_lock held): 0, -ENOTCONN or its failure. */
static __hot int connected_locked(struct hmc_comm *c, uint32_t rank,
				  struct peer **out)
{
	struct peer *p = peer_lookup_locked(c, rank);

	if (!p || p->state == PEER_DIALING || p->state == PEER_XPORT)
		return -ENOTCONN;
	if (p->state != PEER_CONNECTED)
		return p->error ? p->error : -ECONNRESET;
	*out = p;
	return 0;
}

__hot int peer_connected(struct hmc_comm *c, uint32_t rank, struct peer **out)
{
	int rc;

	futex_mutex_lock(&c->peers_lock);
	rc = connected_locked(c, rank, out);
	if (!rc)
		peer_get(*out);
	futex_mutex_unlock(&c->peers_lock);
	return rc;
}

/*
 * A user counts itself under peers_lock while the peer is CONNECTED;
 * peer_close() moves it on under the same lock before it waits for the
 * count: either the user saw the new state or the closer sees the user.
 */
__hot int peer_use(struct hmc_comm *c, uint32_t rank, struct peer **out)
{
	int rc;

	futex_mutex_lock(&c->peers_lock);
	rc = connected_locked(c, rank, out);
	if (!rc)
		__atomic_add_fetch(&(*out)->users, 1, __ATOMIC_RELAXED);
	futex_mutex_unlock(&c->peers_lock);
	return rc;
}

int peer_push_tag(struct peer *p, uint64_t tag)
{
	uint32_t cap, i;
	uint64_t *tags;

	if (p->tag_count == p->tag_cap) {
		if (p->tag_cap >= TAGS_MAX)
			return -ENOBUFS;
		cap = p->tag_cap ? p->tag_cap * 2 : 16;
		tags = malloc(cap * sizeof(*tags));
		if (!tags)
			return -ENOMEM;
		for (i = 0; i < p->tag_count; i++)
			tags[i] = p->tags[(p->tag_head + i) % p->tag_cap];
		free(p->tags);
		p->tags = tags;
		p->tag_cap = cap;
		p->tag_head = 0;
	}
	p->tags[(p->tag_head + p->tag_count++) % p->tag_cap] = tag;
	return 0;
}

bool peer_pop_tag(struct peer *p, uint64_t *tag)
{
	if (!p->tag_count)
		return false;
	*tag = p->tags[p->tag_head];
	p->tag_head = (p->tag_head + 1) % p->tag_cap;
	p->tag_count--;
	return true;
}

void comm_peer_error(struct hmc_comm *c, struct peer *p, int err)
{
	pthread_mutex_lock(&c->lock);
	if ((p->state == PEER_CONNECTED || p->state == PEER_XPORT) &&
	    !p->pending_error) {
		p->pending_error = err ? err : -EIO;
		list_add_tail(&c->failing, &peer_get(p)->fail_node);
		__atomic_add_fetch(&c->nr_failing, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&c->lock);
}

void comm_deliver_tag(struct hmc_comm *c, struct peer *p, uint64_t tag)
{
	int rc;

	pthread_mutex_lock(&c->lock);
	rc = peer_push_tag(p, tag);
	pthread_mutex_unlock(&c->lock);
	if (rc)
		comm_peer_error(c, p, rc);
}

/*
 * What a failing peer sent before it went: its tags and barriers still
 * count, even when the transport noticed the failure before the control
 * socket was read. Stops at anything else; whether it said BYE.
 */
static bool peer_drain(struct hmc_comm *c, struct peer *p, struct conn *cn)
{
	const uint8_t *payload;
	struct frame_hdr h;
	uint64_t v;

	for (;;) {
		while (conn_next_frame(cn, &h, &payload) == 1) {
			if (h.type == FRAME_BYE)
				return true;
			if (h.type != FRAME_TAG && h.type != FRAME_SIGNAL &&
			    h.type != FRAME_BARRIER)
				return false;
			frame_decode_u64(payload, h.len, &v);
			pthread_mutex_lock(&c->lock);
			if (h.type != FRAME_BARRIER)
				peer_push_tag(p, v);
			else if (v == p->barrier_seen + 1)
				p->barrier_seen = v;
			pthread_mutex_unlock(&c->lock);
			conn_consume(cn, &h);
		}
		if (conn_fill(cn) <= 0)
			return false;
	}
}

/* Posters that saw @p connected are done with its transport peer. */
static void wait_users(struct peer *p)
{
	while (__atomic_load_n(&p->users, __ATOMIC_ACQUIRE))
		sched_yield();
}

void peer_close(struct hmc_comm *c, struct peer *p, int err, unsigned int flags)
{
	bool remove = flags & PEER_CLOSE_REMOVE;
	bool graceful = flags & PEER_CLOSE_GRACEFUL;
	int64_t deadline = deadline_after_ms(graceful ? min_t(int, c->op_timeout_ms,
							   CLOSE_FLUSH_MS) : 0);
	struct conn *cn;
	void *xpeer;

	pthread_mutex_lock(&c->lock);
	if (p->state == PEER_GONE || (p->state == PEER_DOWN && !remove)) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	/*
	 * Ours until the end: once it is PEER_DOWN, a connect to its rank
	 * may replace it and drop the table's reference under us.
	 */
	peer_get(p);
	if (!graceful && p->watched && p->state == PEER_CONNECTED) {
		pthread_mutex_unlock(&c->lock);
		/*
		 * A peer that said goodbye disconnected, even if its transport
		 * (closing after the goodbye was sent) is what we noticed first.
		 */
		if (peer_drain(c, p, p->conn))
			err = -ENOTCONN;
		pthread_mutex_lock(&c->lock);
	}
	cn = p->conn;
	if (p->state != PEER_DOWN)
		p->error = err;
	peer_set_state(c, p, remove ? PEER_GONE : PEER_DOWN);
	if (remove)
		peer_unlink(c, p);
	list_del(&p->pending_node);
	pthread_mutex_unlock(&c->lock);

	/* No new user from here on; the transport peer goes after the last. */
	wait_users(p);
	xpeer = p->xpeer;
	p->xpeer = NULL;
	peer_report(c, p, err == -ENOTCONN ? HMC_PEER_DISCONNECTED :
		    HMC_PEER_FAILED, err);
	if (xpeer)
		p->xops->peer_destroy(c->xports[p->xops->type].ctx, xpeer,
				      graceful, deadline);
	req_fail_peer(&c->reqs, p, err);
	if (cn) {
		if (graceful)
			conn_send(cn, FRAME_BYE, NULL, 0,
				  deadline_after_ms(BYE_WAIT_MS));
		if (p->watched) {
			engine_unwatch(&c->engine, cn->fd);
			p->watched = false;
		}
		/* The fd stays open until the peer is freed: senders may race. */
		shutdown(cn->fd, SHUT_RDWR);
	}
	comm_broadcast(c);
	if (remove)
		peer_put(p);	/* the table's reference */
	peer_put(p);
}

int peer_reap_failed(struct hmc_comm *c)
{
	struct list_node *n, *tmp, todo;
	int count = 0;

	/* Checked on every round: only a reported failure takes the lock. */
	if (!__atomic_load_n(&c->nr_failing, __ATOMIC_ACQUIRE))
		return 0;
	list_init(&todo);
	pthread_mutex_lock(&c->lock);
	list_for_each_safe(n, tmp, &c->failing) {
		list_del(n);
		list_add_tail(&todo, n);
	}
	__atomic_store_n(&c->nr_failing, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&c->lock);

	list_for_each_safe(n, tmp, &todo) {
		struct peer *p = container_of(n, struct peer, fail_node);

		list_del(n);
		pr_info("rank %u: rank %u failed: %s", c->rank, p->rank,
			hmc_strerror(p->pending_error));
		peer_close(c, p, p->pending_error, 0);
		peer_put(p);
		count++;
	}
	return count;
}
