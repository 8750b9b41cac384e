// SPDX-License-Identifier: MIT
/*
 * Frames of established peers, handed to the core, and the communicator's
 * progress round.
 */
#include <errno.h>

#include "ctrl/ctrl.h"
#include "sys/log.h"

/* One frame from an established peer: 0, 1 (peer closed), or an error. */
static int peer_frame(struct hmc_comm *c, struct peer *p,
		      const struct frame_hdr *h, const uint8_t *payload)
{
	uint64_t v;
	int rc;

	switch (h->type) {
	case FRAME_TAG:
	case FRAME_SIGNAL:
		frame_decode_u64(payload, h->len, &v);
		pthread_mutex_lock(&c->lock);
		rc = p->state == PEER_CONNECTED ? peer_push_tag(p, v) : -EPROTO;
		pthread_mutex_unlock(&c->lock);
		return rc;
	case FRAME_BARRIER:
		frame_decode_u64(payload, h->len, &v);
		pthread_mutex_lock(&c->lock);
		rc = v == p->barrier_seen + 1 ? 0 : -EPROTO;
		if (!rc)
			p->barrier_seen = v;
		pthread_mutex_unlock(&c->lock);
		return rc;
	case FRAME_XPORT_REQ:
		return ctrl_xport_accept(c, p, h, payload);
	case FRAME_MSG:
		if (p->state != PEER_CONNECTED || !c->ext)
			return -EPROTO;
		return c->ext->frame(c, p, payload, h->len);
	case FRAME_BYE:
		pr_debug("rank %u: rank %u disconnected", c->rank, p->rank);
		peer_close(c, p, -ENOTCONN, 0);
		return 1;
	default:
		return -EPROTO;
	}
}

void ctrl_peer_input(struct hmc_comm *c, struct peer *p)
{
	struct conn *cn = p->conn;
	const uint8_t *payload;
	struct frame_hdr h;
	bool drained = false;
	ssize_t n;
	int rc;

	for (;;) {
		while ((rc = conn_next_frame(cn, &h, &payload)) == 1) {
			rc = peer_frame(c, p, &h, payload);
			if (rc == 1)
				return;
			conn_consume(cn, &h);
			if (rc)
				goto fail;
		}
		if (rc)
			goto fail;
		if (drained)	/* epoll reports what comes next */
			return;
		n = conn_fill(cn);
		if (n == -EAGAIN)
			return;
		if (n < 0) {
			rc = (int)n;
			goto fail;
		}
		drained = cn->rx_len < cn->rx_cap;	/* a short read */
	}
fail:
	if (rc == -EPROTO)
		pr_warn("rank %u: protocol error from rank %u: dropped", c->rank,
			p->rank);
	else
		pr_info("rank %u: rank %u failed: %s", c->rank, p->rank,
			hmc_strerror(rc));
	peer_close(c, p, rc == -EPROTO ? -EPROTO : -ECONNRESET, 0);
}

/*
 * The peer's connection is readable. The table's reference keeps @p: only
 * a close with PEER_CLOSE_REMOVE drops it, and that takes the connection
 * out of the engine first.
 */
static int peer_event(struct engine_src *src)
{
	struct peer *p = container_of(src, struct peer, src);

	if (p->state == PEER_GONE || p->state == PEER_DOWN)
		return 0;
	ctrl_peer_input(p->comm, p);
	return 1;
}

int ctrl_watch_peer(struct hmc_comm *c, struct peer *p, bool rewatch)
{
	int rc;

	p->src.handle = peer_event;
	rc = rewatch ? engine_rewatch(&c->engine, p->conn->fd, &p->src) :
		       engine_watch(&c->engine, p->conn->fd, &p->src);
	p->watched = !rc;
	return rc;
}

/* ------------------------------------------------------ progress round */

/* The layer above (lib/msg) moves its messages in every round. */
static int ext_progress(struct hmc_comm *c)
{
	return c->ext ? c->ext->progress(c) : 0;
}

static int round_poll(void *arg)
{
	return comm_xports_poll(arg) + ext_progress(arg);
}

static int round_prepare(void *arg, int64_t *deadline)
{
	struct hmc_comm *c = arg;
	int64_t next;
	int n;

	n = comm_xports_poll_unarmed(c);
	n += peer_reap_failed(c);
	n += ext_progress(c);
	next = ctrl_expire(c);
	if (next < *deadline)
		*deadline = next;
	return n;
}

static int round_arm(void *arg)
{
	struct hmc_comm *c = arg;

	if (c->ext && c->ext->arm(c) == -EBUSY)
		return -EBUSY;
	return comm_xports_arm(c);
}

static void round_unwatch(void *arg)
{
	comm_xports_unwatch(arg);
}

static int round_finish(void *arg)
{
	return peer_reap_failed(arg) + ext_progress(arg);
}

const struct engine_ops ctrl_engine_ops = {
	.poll = round_poll,
	.prepare = round_prepare,
	.arm = round_arm,
	.unwatch = round_unwatch,
	.finish = round_finish,
};
