// SPDX-License-Identifier: MIT
/*
 * Control plane: framed connections, the HELLO handshake (with an optional
 * HMAC challenge-response), transport bring-up, and the life of a peer.
 *
 *   dialer                          listener
 *   HELLO(src, dst, nonce_d) ---->  checks dst, auth mode, src not in use
 *                          <----  CHALLENGE(nonce_l, mac_l)   (secret only)
 *   checks mac_l; AUTH(mac_d) --->  checks mac_d
 *                          <----  WELCOME                       (or REJECT)
 *   XPORT_REQ(transport, ...) --->  brings the transport up
 *                          <----  XPORT_ACK(status, ...)
 *
 * The listener side runs as a state machine in the progress engine, so a
 * silent or slow dialer holds up nobody and is dropped at its deadline; the
 * dialer side runs in the caller of hmc_comm_connect().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "wire/auth.h"
#include "core/comm.h"
#include "mem/devhmc.h"
#include "sys/log.h"
#include "wire/sock.h"

#define RX_MIN		4096u
#define TAGS_MAX	(1u << 20)	/* unread tags per peer before we call it a flood */
#define REJECT_WAIT_MS	100
#define CLOSE_FLUSH_MS	2000	/* a graceful close waits this long for its peer */

/* ------------------------------------------------------------------ conns */

struct conn *conn_new(int fd, bool is_unix)
{
	struct conn *cn = calloc(1, sizeof(*cn));

	if (!cn)
		return NULL;
	cn->fd = fd;
	cn->is_unix = is_unix;
	cn->src.kind = PSRC_CONN;
	cn->src.ptr = cn;
	cn->hs = HS_HELLO;
	list_init(&cn->hs_node);
	pthread_mutex_init(&cn->tx_lock, NULL);
	return cn;
}

void conn_free(struct conn *cn)
{
	if (!cn)
		return;
	while (cn->nr_rx_fds)
		close(conn_take_fd(cn));
	if (cn->fd >= 0)
		close(cn->fd);
	free(cn->rx);
	pthread_mutex_destroy(&cn->tx_lock);
	free(cn);
}

/* One whole frame (and @fd, if not -1); the caller holds cn->tx_lock. */
static int conn_write(struct conn *cn, enum frame_type type,
		      const void *payload, uint32_t len, int fd,
		      int64_t deadline)
{
	uint8_t hdr[FRAME_HDR_LEN];
	struct iovec iov[2] = {
		{ .iov_base = hdr, .iov_len = sizeof(hdr) },
		{ .iov_base = (void *)payload, .iov_len = len },
	};

	if (fd >= 0 && !cn->is_unix)
		return -EOPNOTSUPP;
	frame_encode_hdr(hdr, type, fd >= 0 ? FRAME_F_FD : 0, len);
	return sock_send_all(cn->fd, iov, len ? 2 : 1, fd, deadline);
}

int conn_send_fd(struct conn *cn, enum frame_type type, const void *payload,
		 uint32_t len, int fd, int64_t deadline)
{
	int rc;

	pthread_mutex_lock(&cn->tx_lock);
	rc = conn_write(cn, type, payload, len, fd, deadline);
	pthread_mutex_unlock(&cn->tx_lock);
	return rc;
}

int conn_send(struct conn *cn, enum frame_type type, const void *payload,
	      uint32_t len, int64_t deadline)
{
	return conn_send_fd(cn, type, payload, len, -1, deadline);
}

int conn_take_fd(struct conn *cn)
{
	int fd;

	if (!cn->nr_rx_fds)
		return -1;
	fd = cn->rx_fds[0];
	memmove(cn->rx_fds, cn->rx_fds + 1,
		--cn->nr_rx_fds * sizeof(cn->rx_fds[0]));
	return fd;
}

/* Room for @need buffered bytes from rx_off. */
static int rx_reserve(struct conn *cn, uint32_t need)
{
	uint32_t cap;
	uint8_t *rx;

	if (cn->rx_off) {
		memmove(cn->rx, cn->rx + cn->rx_off, cn->rx_len - cn->rx_off);
		cn->rx_len -= cn->rx_off;
		cn->rx_off = 0;
	}
	if (need <= cn->rx_cap)
		return 0;
	cap = cn->rx_cap ? cn->rx_cap : RX_MIN;
	while (cap < need)
		cap *= 2;
	rx = realloc(cn->rx, cap);
	if (!rx)
		return -ENOMEM;
	cn->rx = rx;
	cn->rx_cap = cap;
	return 0;
}

ssize_t conn_fill(struct conn *cn)
{
	ssize_t n;
	int rc;

	if (cn->rx_len == cn->rx_cap || cn->rx_off) {
		rc = rx_reserve(cn, cn->rx_len - cn->rx_off + RX_MIN);
		if (rc)
			return rc;
	}
	n = sock_recv_some(cn->fd, cn->rx + cn->rx_len, cn->rx_cap - cn->rx_len,
			   cn->rx_fds, &cn->nr_rx_fds, SOCK_MAX_FDS);
	if (n > 0)
		cn->rx_len += (uint32_t)n;
	return n;
}

int conn_next_frame(struct conn *cn, struct frame_hdr *hdr,
		    const uint8_t **payload)
{
	uint32_t avail = cn->rx_len - cn->rx_off;
	int rc;

	if (avail < FRAME_HDR_LEN)
		return 0;
	rc = frame_decode_hdr(cn->rx + cn->rx_off, hdr);
	if (rc)
		return rc;
	if (avail < FRAME_HDR_LEN + hdr->len) {
		rc = rx_reserve(cn, FRAME_HDR_LEN + hdr->len);
		return rc ? rc : 0;
	}
	*payload = cn->rx + cn->rx_off + FRAME_HDR_LEN;
	return 1;
}

void conn_consume(struct conn *cn, const struct frame_hdr *hdr)
{
	cn->rx_off += FRAME_HDR_LEN + hdr->len;
	if (cn->rx_off == cn->rx_len)
		cn->rx_off = cn->rx_len = 0;
}

int conn_recv_frame(struct conn *cn, struct frame_hdr *hdr,
		    const uint8_t **payload, int64_t deadline)
{
	ssize_t n;
	int rc;

	for (;;) {
		rc = conn_next_frame(cn, hdr, payload);
		if (rc)
			return rc < 0 ? rc : 0;
		n = conn_fill(cn);
		if (n > 0)
			continue;
		if (n != -EAGAIN)
			return (int)n;
		rc = sock_wait_readable(cn->fd, deadline);
		if (rc)
			return rc;
	}
}

/* ------------------------------------------------------------------ peers */

/*
 * The address hmc.ko shows for a peer: its control connection's
 * sockaddr_in or sockaddr_in6, or, over a Unix socket, { AF_UNIX, pid }.
 */
static void peer_address(struct peer *p, struct conn *cn)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct ucred cred;
	uint32_t pid;

	p->addr_len = 0;
	if (cn->is_unix) {
		len = sizeof(cred);
		if (getsockopt(cn->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
			return;
		ss.ss_family = AF_UNIX;
		memcpy(p->addr, &ss.ss_family, sizeof(ss.ss_family));
		pid = (uint32_t)cred.pid;
		memcpy(p->addr + 4, &pid, sizeof(pid));
		p->addr_len = 8;
	} else if (!getpeername(cn->fd, (struct sockaddr *)&ss, &len) &&
		   len <= sizeof(p->addr)) {
		memcpy(p->addr, &ss, len);
		p->addr_len = len;
	}
}

/*
 * Tell hmc.ko what became of @p, for hmcstat and other monitors: that it
 * connected, or, if it had, that it disconnected (@err -ENOTCONN) or
 * failed. Progress lock held.
 */
static void report_peer(struct hmc_comm *c, struct peer *p, uint32_t state,
			int err)
{
	int rc;

	if (c->report_fd < 0 || (state != HMC_PEER_CONNECTED && !p->reported))
		return;
	if (state == HMC_PEER_CONNECTED)
		peer_address(p, p->conn);
	rc = devhmc_peer_state(c->report_fd, p->rank, state,
			       state == HMC_PEER_DISCONNECTED ? 0 : err,
			       p->xops->type, p->addr, p->addr_len);
	if (rc)
		pr_debug("rank %u: PEER_STATE of rank %u: %s", c->rank, p->rank,
			 hmc_strerror(rc));
	else
		p->reported = state == HMC_PEER_CONNECTED;
}

/* An errno carried in a REJECT frame, sanitised. */
static int reject_errno(const uint8_t *p, uint32_t len)
{
	int32_t err;

	if (frame_decode_s32(p, len, &err) || err >= 0 || err < -4095)
		return -EPROTO;
	return err;
}

int ctrl_push_tag(struct peer *p, uint64_t tag)
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

/* Hand a descriptor that came with an XPORT frame to the transport. */
static int xport_attach_fd(struct xport_slot *slot, void *xpeer,
			   struct conn *cn, const struct frame_hdr *h)
{
	int fd;

	if (!(h->flags & FRAME_F_FD))
		return 0;
	fd = conn_take_fd(cn);
	if (fd < 0)
		return -EPROTO;
	if (!slot->ops->peer_attach_fd) {
		close(fd);
		return -EPROTO;
	}
	return slot->ops->peer_attach_fd(slot->ctx, xpeer, fd);
}

/* The descriptor our transport passes along with its metadata, or -1. */
static int xport_local_fd(struct xport_slot *slot, void *xpeer)
{
	return slot->ops->peer_fd ? slot->ops->peer_fd(slot->ctx, xpeer) : -1;
}

/*
 * The listener brings up the transport the dialer asked for. A transport
 * that cannot come up is answered with its error and the dialer may ask
 * for another (HMC_TRANSPORT_AUTO); only a malformed request or a failed
 * answer is fatal.
 */
static int xport_accept(struct hmc_comm *c, struct peer *p,
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
	rc = comm_xport(c, x.transport, &slot);
	if (!rc)
		rc = slot->ops->peer_create(slot->ctx, p, &xpeer);
	if (!rc)
		rc = xport_attach_fd(slot, xpeer, p->conn, h);
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
		pthread_mutex_unlock(&c->lock);
		list_del(&p->conn->hs_node);	/* no deadline any more */
	}
	if (send_rc >= 0)
		send_rc = conn_write(p->conn, FRAME_XPORT_ACK, blob,
				     (uint32_t)send_rc,
				     rc ? -1 : xport_local_fd(slot, xpeer),
				     deadline_after_ms(c->connect_timeout_ms));
	pthread_mutex_unlock(&p->conn->tx_lock);
	if (!rc && send_rc >= 0)
		report_peer(c, p, HMC_PEER_CONNECTED, 0);
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

/* One frame from an established peer: 0, 1 (peer gone), or an error. */
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
		rc = p->state == PEER_CONNECTED ? ctrl_push_tag(p, v) : -EPROTO;
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
		return xport_accept(c, p, h, payload);
	case FRAME_MSG:
		if (p->state != PEER_CONNECTED || !c->ext)
			return -EPROTO;
		return c->ext->frame(c, p, payload, h->len);
	case FRAME_BYE:
		pr_debug("rank %u: rank %u disconnected", c->rank, p->rank);
		ctrl_teardown(c, p, -ENOTCONN, false, false);
		return 1;
	default:
		return -EPROTO;
	}
}

static void peer_input(struct hmc_comm *c, struct peer *p, struct conn *cn)
{
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
	ctrl_teardown(c, p, rc == -EPROTO ? -EPROTO : -ECONNRESET, false, false);
}

/* ------------------------------------------------------ listener side */

static void hs_drop(struct hmc_comm *c, struct conn *cn)
{
	progress_unwatch(c, cn->fd);
	list_del(&cn->hs_node);
	conn_free(cn);
}

static void hs_reject(struct hmc_comm *c, struct conn *cn, int err)
{
	uint8_t p[4];

	pr_info("rank %u: refused a %s control connection: %s", c->rank,
		cn->is_unix ? "unix" : "tcp", hmc_strerror(err));
	conn_send(cn, FRAME_REJECT, p, (uint32_t)frame_encode_s32(p, err),
		  deadline_after_ms(REJECT_WAIT_MS));
	hs_drop(c, cn);
}

/* Bind the dialer's rank to @cn: 0, or an error to reject with. */
static int hs_welcome(struct hmc_comm *c, struct conn *cn)
{
	uint32_t rank = cn->hello.src_rank;
	struct peer *p, *old;
	int rc;

	p = peer_new(c, rank);
	if (!p)
		return -ENOMEM;
	pthread_mutex_lock(&c->lock);
	old = peer_lookup_locked(c, rank);
	if (old && old->state != PEER_DOWN) {
		pthread_mutex_unlock(&c->lock);
		peer_put(p);
		return -EEXIST;
	}
	if (old)
		peer_unlink(c, old);	/* a failed incarnation is replaced */
	p->state = PEER_XPORT;	/* not in the table yet */
	p->conn = cn;
	peer_link(c, p);
	pthread_mutex_unlock(&c->lock);
	if (old)
		peer_put(old);

	cn->hs = HS_DONE;	/* stays listed: the transport has a deadline too */
	cn->peer = p;
	rc = conn_send(cn, FRAME_WELCOME, NULL, 0,
		       deadline_after_ms(c->connect_timeout_ms));
	if (rc)
		ctrl_teardown(c, p, rc, true, false);
	peer_put(p);	/* the table holds it now */
	return 0;
}

/* Handle one handshake frame: 0 to continue, or an errno to reject with. */
static int hs_frame(struct hmc_comm *c, struct conn *cn,
		    const struct frame_hdr *h, const uint8_t *payload)
{
	struct frame_challenge ch;
	uint8_t mac[FRAME_MAC_LEN], buf[FRAME_CHALLENGE_LEN];
	struct frame_hello *hello = &cn->hello;
	int rc;

	if (cn->hs == HS_HELLO) {
		if (h->type != FRAME_HELLO ||
		    frame_decode_hello(payload, h->len, hello))
			return -EPROTO;
		if (hello->dst_rank != c->rank)
			return -ESRCH;
		if (hello->src_rank == c->rank)
			return -EINVAL;
		if (!(hello->flags & FRAME_HELLO_F_AUTH) != !c->secret)
			return -EACCES;
		if (!c->secret)
			return hs_welcome(c, cn);
		rc = auth_nonce(cn->nonce);
		if (!rc)
			rc = auth_mac(c->secret, c->secret_len, AUTH_ROLE_LISTENER,
				      hello->nonce, cn->nonce, hello->src_rank,
				      c->rank, ch.mac);
		if (rc)
			return rc;
		memcpy(ch.nonce, cn->nonce, FRAME_NONCE_LEN);
		rc = conn_send(cn, FRAME_CHALLENGE, buf,
			       (uint32_t)frame_encode_challenge(buf, &ch),
			       cn->deadline);
		if (rc)
			return rc;
		cn->hs = HS_AUTH;
		return 0;
	}
	if (h->type != FRAME_AUTH ||
	    frame_decode_mac(payload, h->len, ch.mac))
		return -EPROTO;
	rc = auth_mac(c->secret, c->secret_len, AUTH_ROLE_DIALER, hello->nonce,
		      cn->nonce, hello->src_rank, c->rank, mac);
	if (rc)
		return rc;
	if (!auth_mac_equal(mac, ch.mac)) {
		pr_warn("rank %u: a dialer claiming rank %u failed authentication",
			c->rank, hello->src_rank);
		return -EACCES;
	}
	return hs_welcome(c, cn);
}

static int hs_input(struct hmc_comm *c, struct conn *cn)
{
	const uint8_t *payload;
	struct frame_hdr h;
	ssize_t n;
	int rc;

	n = conn_fill(cn);
	if (n < 0 && n != -EAGAIN) {
		hs_drop(c, cn);
		return 1;
	}
	while (cn->hs != HS_DONE) {
		rc = conn_next_frame(cn, &h, &payload);
		if (rc == 0)
			return 1;
		if (rc < 0) {
			hs_reject(c, cn, rc);
			return 1;
		}
		rc = hs_frame(c, cn, &h, payload);
		if (rc) {
			hs_reject(c, cn, rc);
			return 1;
		}
		conn_consume(cn, &h);
	}
	/* Frames that came right behind the handshake. */
	if (cn->rx_len > cn->rx_off && cn->peer->state != PEER_GONE)
		peer_input(c, cn->peer, cn);
	return 1;
}

int ctrl_accept(struct hmc_comm *c, int lfd, bool is_unix)
{
	struct conn *cn;
	int fd, n = 0;

	for (;;) {
		fd = sock_accept(lfd);
		if (fd == -EAGAIN)
			break;
		if (fd < 0) {
			pr_debug("accept: %s", hmc_strerror(fd));
			break;
		}
		if (is_unix && sock_check_peer_cred(fd)) {
			close(fd);
			continue;
		}
		cn = conn_new(fd, is_unix);
		if (!cn) {
			close(fd);
			continue;
		}
		cn->deadline = deadline_after_ms(c->connect_timeout_ms);
		if (progress_watch(c, fd, &cn->src)) {
			conn_free(cn);
			continue;
		}
		cn->in_epoll = true;
		list_add_tail(&c->handshakes, &cn->hs_node);
		n++;
	}
	return n;
}

int64_t ctrl_expire_handshakes(struct hmc_comm *c)
{
	int64_t next = DEADLINE_NEVER, now;
	struct list_node *n, *tmp;

	if (list_empty(&c->handshakes))
		return DEADLINE_NEVER;
	now = now_ns();

	list_for_each_safe(n, tmp, &c->handshakes) {
		struct conn *cn = container_of(n, struct conn, hs_node);

		if (cn->deadline <= now && cn->hs == HS_DONE) {
			pr_info("rank %u: rank %u brought up no transport in time",
				c->rank, cn->peer->rank);
			ctrl_teardown(c, cn->peer, -ETIMEDOUT, true, false);
		} else if (cn->deadline <= now) {
			pr_info("rank %u: control handshake timed out", c->rank);
			hs_drop(c, cn);
		} else if (cn->deadline < next) {
			next = cn->deadline;
		}
	}
	return next;
}

int ctrl_input(struct hmc_comm *c, struct conn *cn)
{
	if (cn->hs != HS_DONE)
		return hs_input(c, cn);
	if (cn->peer->state == PEER_GONE || cn->peer->state == PEER_DOWN)
		return 0;
	peer_input(c, cn->peer, cn);
	return 1;
}

/* -------------------------------------------------------- dialer side */

static int dial_handshake(struct hmc_comm *c, struct conn *cn, uint32_t rank,
			  int64_t deadline)
{
	struct frame_hello hello = {
		.src_rank = c->rank,
		.dst_rank = rank,
		.flags = c->secret ? FRAME_HELLO_F_AUTH : 0,
	};
	uint8_t buf[FRAME_HELLO_LEN], mac[FRAME_MAC_LEN];
	struct frame_challenge ch;
	const uint8_t *payload;
	struct frame_hdr h;
	bool challenged = false;
	int rc;

	rc = auth_nonce(hello.nonce);
	if (rc)
		return rc;
	rc = conn_send(cn, FRAME_HELLO, buf,
		       (uint32_t)frame_encode_hello(buf, &hello), deadline);
	for (;;) {
		if (rc)
			return rc;
		rc = conn_recv_frame(cn, &h, &payload, deadline);
		if (rc)
			return rc == -ECONNRESET ? -ECONNREFUSED : rc;
		switch (h.type) {
		case FRAME_REJECT:
			return reject_errno(payload, h.len);
		case FRAME_WELCOME:
			conn_consume(cn, &h);
			/* with a secret, the listener must have proven itself */
			return c->secret && !challenged ? -EACCES : 0;
		case FRAME_CHALLENGE:
			if (!c->secret || challenged ||
			    frame_decode_challenge(payload, h.len, &ch))
				return -EPROTO;
			conn_consume(cn, &h);
			challenged = true;
			rc = auth_mac(c->secret, c->secret_len,
				      AUTH_ROLE_LISTENER, hello.nonce, ch.nonce,
				      c->rank, rank, mac);
			if (rc)
				return rc;
			if (!auth_mac_equal(mac, ch.mac)) {
				pr_warn("rank %u: listener for rank %u failed authentication",
					c->rank, rank);
				return -EACCES;
			}
			rc = auth_mac(c->secret, c->secret_len, AUTH_ROLE_DIALER,
				      hello.nonce, ch.nonce, c->rank, rank, mac);
			if (!rc)
				rc = conn_send(cn, FRAME_AUTH, mac, FRAME_MAC_LEN,
					       deadline);
			break;
		default:
			return -EPROTO;
		}
	}
}

/* Which control socket to try: HMC_CTRL_TRANSPORT=tcp|unix forces one. */
static bool want_unix(struct hmc_comm *c, const char *ip, bool *forced)
{
	const char *env = getenv("HMC_CTRL_TRANSPORT");

	*forced = env && (!strcmp(env, "tcp") || !strcmp(env, "unix"));
	if (*forced)
		return !strcmp(env, "unix");
	return !(c->flags & HMC_COMM_F_NO_UNIX) && sock_addr_is_local(ip);
}

static int dial(struct hmc_comm *c, uint32_t rank, const char *ip,
		uint16_t port, int64_t deadline, struct conn **out)
{
	char name[64];
	bool forced, is_unix = want_unix(c, ip, &forced);
	struct conn *cn;
	int fd, rc;

	for (;;) {
		if (is_unix) {
			sock_unix_name(name, sizeof(name), port);
			rc = sock_dial_unix(name, deadline, &fd);
			if (!rc) {
				rc = sock_check_peer_cred(fd);
				if (rc)
					close(fd);
			}
		} else {
			rc = sock_dial_tcp(ip, port, deadline, &fd);
		}
		if (!rc) {
			cn = conn_new(fd, is_unix);
			if (!cn) {
				close(fd);
				return -ENOMEM;
			}
			rc = dial_handshake(c, cn, rank, deadline);
			if (!rc) {
				*out = cn;
				return 0;
			}
			conn_free(cn);
		}
		/*
		 * The Unix name is per port, not per address: another listener
		 * may own it (-ESRCH: not the rank we want). TCP decides.
		 */
		if (!is_unix || forced || rc == -EACCES || rc == -EEXIST ||
		    rc == -ETIMEDOUT)
			return rc;
		pr_debug("rank %u: unix control to rank %u: %s; trying tcp",
			 c->rank, rank, hmc_strerror(rc));
		is_unix = false;
	}
}

static int dial_xport(struct hmc_comm *c, struct peer *p, struct conn *cn,
		      enum hmc_transport transport, int64_t deadline,
		      struct xport_slot **slotp, void **xpeerp)
{
	uint8_t *buf = malloc(FRAME_MAX_PAYLOAD);
	struct frame_xport req = { .transport = transport }, ack;
	struct xport_slot *slot;
	const uint8_t *payload;
	struct frame_hdr h;
	void *xpeer = NULL;
	int rc;

	if (!buf)
		return -ENOMEM;
	rc = comm_xport(c, transport, &slot);
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
	rc = conn_send_fd(cn, FRAME_XPORT_REQ, buf, (uint32_t)rc,
			  xport_local_fd(slot, xpeer), deadline);
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
	if (!rc)
		rc = xport_attach_fd(slot, xpeer, cn, &h);
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

/* HMC_TRANSPORT_AUTO: shm where both sides can (same host, /dev/hmc), else UCX. */
static int dial_xport_auto(struct hmc_comm *c, struct peer *p,
			   struct conn *cn, enum hmc_transport transport,
			   int64_t deadline, struct xport_slot **slotp,
			   void **xpeerp)
{
	int rc;

	if (transport != HMC_TRANSPORT_AUTO)
		return dial_xport(c, p, cn, transport, deadline, slotp, xpeerp);
	if (cn->is_unix) {
		rc = dial_xport(c, p, cn, HMC_TRANSPORT_SHM, deadline, slotp,
				xpeerp);
		if (rc != -EOPNOTSUPP && rc != -EPROTONOSUPPORT)
			return rc;
		pr_debug("rank %u: no shm transport to rank %u (%s): ucx",
			 c->rank, p->rank, hmc_strerror(rc));
	}
	return dial_xport(c, p, cn, HMC_TRANSPORT_UCX, deadline, slotp, xpeerp);
}

int ctrl_connect(struct hmc_comm *c, uint32_t rank, const char *ip,
		 uint16_t port, enum hmc_transport transport)
{
	int64_t deadline = deadline_after_ms(c->connect_timeout_ms);
	struct xport_slot *slot;
	struct peer *p, *old;
	struct conn *cn;
	void *xpeer;
	int rc;

	if (rank == c->rank || !ip)
		return -EINVAL;
	p = peer_new(c, rank);
	if (!p)
		return -ENOMEM;
	pthread_mutex_lock(&c->lock);
	old = peer_lookup_locked(c, rank);
	if (old && old->state != PEER_DOWN) {
		rc = old->state == PEER_CONNECTED ? -EISCONN : -EALREADY;
		pthread_mutex_unlock(&c->lock);
		peer_put(p);
		return rc;
	}
	if (old)
		peer_unlink(c, old);
	p->state = PEER_DIALING;	/* not in the table yet */
	peer_link(c, p);
	pthread_mutex_unlock(&c->lock);
	if (old)
		peer_put(old);

	rc = dial(c, rank, ip, port, deadline, &cn);
	if (rc)
		goto err;
	rc = dial_xport_auto(c, p, cn, transport, deadline, &slot, &xpeer);
	if (rc) {
		conn_free(cn);
		goto err;
	}

	progress_lock(c);
	pthread_mutex_lock(&c->lock);
	p->conn = cn;
	cn->peer = p;
	cn->hs = HS_DONE;
	p->xops = slot->ops;
	p->xpeer = xpeer;
	peer_set_state(c, p, PEER_CONNECTED);
	pthread_mutex_unlock(&c->lock);
	rc = progress_watch(c, cn->fd, &cn->src);
	if (rc) {
		ctrl_teardown(c, p, rc, true, false);
	} else {
		cn->in_epoll = true;
		report_peer(c, p, HMC_PEER_CONNECTED, 0);
		if (cn->rx_len > cn->rx_off)	/* frames behind the ACK */
			peer_input(c, p, cn);
	}
	progress_unlock(c);
	if (!rc)
		pr_debug("rank %u: connected to rank %u at %s:%u over %s (%s control)",
			 c->rank, rank, ip, port,
			 hmc_transport_name(slot->ops->type),
			 cn->is_unix ? "unix" : "tcp");
	peer_put(p);
	return rc;
err:
	pthread_mutex_lock(&c->lock);
	peer_unlink(c, p);
	pthread_mutex_unlock(&c->lock);
	peer_put(p);	/* the table's */
	peer_put(p);	/* ours */
	pr_info("rank %u: connect to rank %u at %s:%u: %s", c->rank, rank, ip,
		port, hmc_strerror(rc));
	return rc;
}

/* ------------------------------------------------------------ teardown */

/*
 * What a failing peer sent before it went: its tags and barriers still
 * count, even when the transport noticed the failure before the control
 * socket was read. Stops at anything else.
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
				ctrl_push_tag(p, v);
			else if (v == p->barrier_seen + 1)
				p->barrier_seen = v;
			pthread_mutex_unlock(&c->lock);
			conn_consume(cn, &h);
		}
		if (conn_fill(cn) <= 0)
			return false;
	}
}

void ctrl_teardown(struct hmc_comm *c, struct peer *p, int err, bool remove,
		   bool graceful)
{
	const struct xport_ops *xops;
	struct conn *cn;
	void *xpeer;
	int64_t deadline = deadline_after_ms(graceful ? min_t(int, c->op_timeout_ms,
							   CLOSE_FLUSH_MS) : 0);

	pthread_mutex_lock(&c->lock);
	if (p->state == PEER_GONE || (p->state == PEER_DOWN && !remove)) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	if (!graceful && p->conn && p->conn->in_epoll &&
	    p->state == PEER_CONNECTED) {
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
	xops = p->xops;
	xpeer = p->xpeer;
	p->xpeer = NULL;
	if (p->state != PEER_DOWN)
		p->error = err;
	peer_set_state(c, p, remove ? PEER_GONE : PEER_DOWN);
	if (remove)
		peer_unlink(c, p);
	pthread_mutex_unlock(&c->lock);

	report_peer(c, p, err == -ENOTCONN ? HMC_PEER_DISCONNECTED :
		    HMC_PEER_FAILED, err);
	if (xpeer)
		xops->peer_destroy(c->xports[xops->type].ctx, xpeer, graceful,
				   deadline);
	req_fail_peer(&c->reqs, p, err);
	if (cn) {
		list_del(&cn->hs_node);
		if (graceful)
			conn_send(cn, FRAME_BYE, NULL, 0,
				  deadline_after_ms(REJECT_WAIT_MS));
		if (cn->in_epoll) {
			progress_unwatch(c, cn->fd);
			cn->in_epoll = false;
		}
		/* The fd stays open until the peer is freed: senders may race. */
		shutdown(cn->fd, SHUT_RDWR);
	}
	comm_broadcast(c);
	if (remove)
		peer_put(p);	/* the table's reference */
}

int ctrl_reap_failed(struct hmc_comm *c)
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
		ctrl_teardown(c, p, p->pending_error, false, false);
		peer_put(p);
		count++;
	}
	return count;
}
