// SPDX-License-Identifier: MIT
/*
 * Transport negotiation: the dialer asks for a transport with its
 * metadata (XPORT_REQ), the listener brings it up and answers with its
 * own (XPORT_ACK), or with the error that kept it from coming up, and the
 * dialer may then ask for another (HMC_TRANSPORT_AUTO).
 */
#include <errno.h>
#include <stdlib.h>

#include "ctrl/ctrl.h"
#include "mem/buf.h"
#include "sys/log.h"
#include "xport/xport.h"

/* Hand a descriptor that came with an XPORT frame to the transport. */
static int attach_fd(struct xport_slot *slot, void *xpeer, struct conn *cn,
		     const struct frame_hdr *h)
{
	int fd;

	if (!(h->flags & FRAME_F_FD))
		return 0;
	fd = conn_take_fd(cn);
	if (fd < 0)
		return -EPROTO;
	return slot->ops->peer_attach_fd(slot->ctx, xpeer, fd);
}

/* The slot of transport @type: 0 or a negative errno. */
static int get_slot(struct hmc_comm *c, uint32_t type, struct xport_slot **slot)
{
	const struct xport_ops *ops = xport_get(type);

	if (!ops)
		return -EPROTONOSUPPORT;
	return comm_xport(c, ops, slot);
}

/*
 * A transport that cannot come up is answered with its error; only a
 * malformed request or a failed answer is fatal.
 */
int ctrl_xport_accept(struct hmc_comm *c, struct peer *p,
		      const struct frame_hdr *h, const uint8_t *payload)
{
	uint8_t *blob = malloc(FRAME_MAX_PAYLOAD);
	struct frame_xport x, ack = { 0 };
	struct xport_slot *slot = NULL;
	void *xpeer = NULL;
	uint32_t blob_len = 0;
	int rc, send_rc, fatal = 0;

	if (!blob)
		return -ENOMEM;
	rc = frame_decode_xport(payload, h->len, &x);
	if (rc || x.status || p->state != PEER_XPORT) {
		fatal = -EPROTO;
		goto out;
	}
	rc = get_slot(c, x.transport, &slot);
	if (!rc)
		rc = slot->ops->peer_create(slot->ctx, p, &xpeer);
	if (!rc)
		rc = attach_fd(slot, xpeer, p->conn, h);
	if (!rc)
		rc = slot->ops->peer_connect(slot->ctx, xpeer, x.blob, x.blob_len);
	if (!rc)
		rc = slot->ops->peer_info(slot->ctx, xpeer,
					  blob + FRAME_XPORT_HDR_LEN,
					  FRAME_XPORT_MAX_BLOB, &blob_len);

	if (rc && xpeer)
		slot->ops->peer_destroy(slot->ctx, xpeer, false,
					deadline_after_ms(0));
	ack.status = rc;
	ack.transport = x.transport;
	ack.buf_size = hmc_buf_size(c->buf);
	ack.blob_len = rc ? 0 : blob_len;
	send_rc = frame_encode_xport(blob, &ack);

	/*
	 * Connected before the ACK leaves, so that once the dialer's connect
	 * returns, this side already counts it as a peer; under the send lock,
	 * so that a tag another thread sends as soon as it sees the peer
	 * cannot overtake the ACK. A failed send then fails the peer like any
	 * broken connection.
	 */
	pthread_mutex_lock(&p->conn->tx_lock);
	if (!rc) {
		pthread_mutex_lock(&c->lock);
		p->xops = slot->ops;
		p->xpeer = xpeer;
		p->buf_size = x.buf_size;
		peer_set_state(c, p, PEER_CONNECTED);
		list_del(&p->pending_node);	/* no deadline any more */
		pthread_mutex_unlock(&c->lock);
	}
	if (send_rc >= 0)
		send_rc = conn_send_locked(p->conn, FRAME_XPORT_ACK, blob,
					   (uint32_t)send_rc,
					   rc ? -1 : slot->ops->peer_fd(slot->ctx, xpeer),
					   deadline_after_ms(c->connect_timeout_ms));
	pthread_mutex_unlock(&p->conn->tx_lock);
	if (!rc && send_rc >= 0)
		peer_report(c, p, HMC_PEER_CONNECTED, 0);
	if (send_rc < 0)
		fatal = send_rc;
	else if (rc)
		pr_info("rank %u: no %s transport for rank %u: %s", c->rank,
			hmc_transport_name(x.transport), p->rank,
			hmc_strerror(rc));
	else
		pr_debug("rank %u: rank %u connected over %s", c->rank, p->rank,
			 hmc_transport_name(x.transport));
out:
	free(blob);
	return fatal;
}

/*
 * Bring up @transport to @p over @cn. On failure, *@retry says whether the
 * control connection can still ask for another transport: we failed before
 * asking, or the peer answered with an error.
 */
static int dial_one(struct hmc_comm *c, struct peer *p, struct conn *cn,
		    enum hmc_transport transport, int64_t deadline,
		    struct xport_slot **slotp, void **xpeerp, bool *retry)
{
	uint8_t *buf = malloc(FRAME_MAX_PAYLOAD);
	struct frame_xport req = { .transport = transport }, ack;
	struct xport_slot *slot;
	const uint8_t *payload;
	struct frame_hdr h;
	void *xpeer = NULL;
	int rc;

	*retry = true;
	if (!buf)
		return -ENOMEM;
	rc = get_slot(c, transport, &slot);
	if (rc)
		goto out;
	rc = slot->ops->peer_create(slot->ctx, p, &xpeer);
	if (rc)
		goto out;
	rc = slot->ops->peer_info(slot->ctx, xpeer, buf + FRAME_XPORT_HDR_LEN,
				  FRAME_XPORT_MAX_BLOB, &req.blob_len);
	if (rc)
		goto err_peer;
	req.buf_size = hmc_buf_size(c->buf);
	rc = frame_encode_xport(buf, &req);
	if (rc < 0)
		goto err_peer;
	*retry = false;
	rc = conn_send_fd(cn, FRAME_XPORT_REQ, buf, (uint32_t)rc,
			  slot->ops->peer_fd(slot->ctx, xpeer), deadline);
	if (rc)
		goto err_peer;
	rc = conn_recv_frame(cn, &h, &payload, deadline);
	if (rc)
		goto err_peer;
	if (h.type != FRAME_XPORT_ACK ||
	    frame_decode_xport(payload, h.len, &ack) ||
	    (!ack.status && ack.transport != (uint32_t)transport)) {
		rc = -EPROTO;
		goto err_peer;
	}
	rc = ack.status;
	*retry = rc != 0;	/* the peer is not connected on its side */
	if (!rc)
		rc = attach_fd(slot, xpeer, cn, &h);
	if (!rc)
		rc = slot->ops->peer_connect(slot->ctx, xpeer, ack.blob,
					     ack.blob_len);
	p->buf_size = ack.buf_size;
	conn_consume(cn, &h);
	if (rc)
		goto err_peer;
	*slotp = slot;
	*xpeerp = xpeer;
	goto out;
err_peer:
	slot->ops->peer_destroy(slot->ctx, xpeer, false, deadline_after_ms(0));
out:
	free(buf);
	return rc;
}

/*
 * Whether AUTO should ask the peer for @t: shm over a Unix control
 * connection only (the descriptor travels over it, and the dialer made
 * sure it leads to the listener meant, on this boot); verbs over TCP only,
 * where our port is up and reaches the peer (xport_ops.reaches).
 */
static bool auto_candidate(struct hmc_comm *c, struct conn *cn,
			   enum hmc_transport t)
{
	struct xport_slot *slot;
	int rc;

	switch (t) {
	case HMC_TRANSPORT_SHM:
		return cn->is_unix;
	case HMC_TRANSPORT_VERBS:
		if (cn->is_unix)
			return false;
		rc = get_slot(c, t, &slot);
		if (!rc)
			rc = slot->ops->reaches(slot->ctx, cn->fd);
		if (rc)
			pr_debug("rank %u: AUTO: no verbs (%s)", c->rank,
				 hmc_strerror(rc));
		return !rc;
	default:
		return true;
	}
}

/*
 * HMC_TRANSPORT_AUTO: shm for a peer on this host whose buffer can be
 * shared, verbs where both ends have an RDMA port that reaches the other,
 * else TCP; UCX only for what TCP cannot carry (device memory), since its
 * emulated RMA over TCP is slow and aborts the process when the peer dies
 * mid-transfer. A transport the peer cannot bring up is answered with an
 * error, and the next one is asked for.
 */
int ctrl_xport_dial(struct hmc_comm *c, struct peer *p, struct conn *cn,
		    enum hmc_transport transport, int64_t deadline,
		    struct xport_slot **slotp, void **xpeerp)
{
	static const enum hmc_transport order[] = {
		HMC_TRANSPORT_SHM, HMC_TRANSPORT_VERBS, HMC_TRANSPORT_TCP,
		HMC_TRANSPORT_UCX,
	};
	bool retry;
	unsigned int i;
	int rc = -EPROTONOSUPPORT;

	if (transport != HMC_TRANSPORT_AUTO)
		return dial_one(c, p, cn, transport, deadline, slotp, xpeerp,
				&retry);
	for (i = 0; i < ARRAY_SIZE(order); i++) {
		if (!auto_candidate(c, cn, order[i]))
			continue;
		rc = dial_one(c, p, cn, order[i], deadline, slotp, xpeerp,
			      &retry);
		if (!rc || !retry || rc == -ETIMEDOUT)
			return rc;
		pr_debug("rank %u: AUTO: no %s transport to rank %u (%s)",
			 c->rank, hmc_transport_name(order[i]), p->rank,
			 hmc_strerror(rc));
	}
	return rc;
}
