// SPDX-License-Identifier: MIT
/*
 * The listener: accepted connections go through the handshake as a state
 * machine in the progress engine, so that a silent or slow dialer holds up
 * nobody and is dropped at its deadline. A connection belongs to its
 * handshake until WELCOME, and from then on to the peer it was bound to.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctrl/ctrl.h"
#include "sys/host.h"
#include "sys/log.h"
#include "wire/auth.h"
#include "wire/sock.h"

#define REJECT_WAIT_MS	100

enum hs_state {
	HS_HELLO,		/* waiting for HELLO */
	HS_AUTH,		/* sent CHALLENGE, waiting for AUTH */
};

/* An accepted connection, until its dialer is welcomed or dropped. */
struct hs {
	struct hmc_comm *comm;
	struct conn *cn;
	struct engine_src src;
	enum hs_state state;
	int64_t deadline;
	struct frame_hello hello;
	uint8_t nonce[FRAME_NONCE_LEN];
	struct list_node node;		/* comm->handshakes */
};

/* hs_frame(): @hs is gone, handed to a peer (which may have failed since). */
#define HS_GONE		1

static void hs_drop(struct hmc_comm *c, struct hs *hs)
{
	engine_unwatch(&c->engine, hs->cn->fd);
	list_del(&hs->node);
	conn_free(hs->cn);
	free(hs);
}

static void hs_reject(struct hmc_comm *c, struct hs *hs, int err)
{
	uint8_t p[4];

	pr_info("rank %u: refused a %s control connection: %s", c->rank,
		hs->cn->is_unix ? "unix" : "tcp", hmc_strerror(err));
	conn_send(hs->cn, FRAME_REJECT, p, (uint32_t)frame_encode_s32(p, err),
		  deadline_after_ms(REJECT_WAIT_MS));
	hs_drop(c, hs);
}

/*
 * Bind the dialer's rank to a new peer, which takes the connection (and
 * its place in the engine) over, and answer WELCOME. An errno to reject
 * with while @hs is still ours; once it is not, HS_GONE, whatever became
 * of the peer: a WELCOME that cannot be sent closes it, and neither @hs
 * nor the peer may be touched afterwards.
 */
static int hs_welcome(struct hmc_comm *c, struct hs *hs)
{
	uint32_t rank = hs->hello.src_rank;
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
	p->conn = hs->cn;
	/* the transport has a deadline too */
	p->deadline = hs->deadline;
	list_add_tail(&c->pending, &p->pending_node);
	peer_link(c, p);
	pthread_mutex_unlock(&c->lock);
	if (old)
		peer_put(old);

	/* The same descriptor, now the peer's: no event can be lost. */
	rc = ctrl_watch_peer(c, p, true);
	if (rc)
		engine_unwatch(&c->engine, hs->cn->fd);
	list_del(&hs->node);
	free(hs);
	if (!rc)
		rc = conn_send(p->conn, FRAME_WELCOME, NULL, 0,
			       deadline_after_ms(c->connect_timeout_ms));
	if (rc) {
		pr_info("rank %u: welcoming rank %u: %s", c->rank, rank,
			hmc_strerror(rc));
		peer_close(c, p, rc, PEER_CLOSE_REMOVE);
	} else if (conn_has_input(p->conn)) {
		/* Frames that came right behind the handshake. */
		ctrl_peer_input(c, p);
	}
	peer_put(p);	/* the table holds it, if anyone */
	return HS_GONE;
}

/*
 * Over a Unix socket, whether we are the listener the dialer meant: on
 * the same boot; listening on the address it dialed (any, if we listen on
 * all of them); and either in its network namespace or owning that
 * (non-loopback) address in ours. 0 or -ESRCH.
 */
static int hs_check_host(struct hmc_comm *c, const struct frame_hello *h)
{
	uint8_t boot_id[HOST_BOOT_ID_LEN], bound[16];
	uint64_t netns = host_netns();
	bool any;

	if (!(h->flags & FRAME_HELLO_F_HOST))
		return -ESRCH;
	host_boot_id(boot_id);
	if (!host_same_boot(boot_id, h->boot_id))
		return -ESRCH;
	if (sock_bound_v6(c->listeners[0].fd, bound, &any) ||
	    (!any && memcmp(bound, h->addr, sizeof(bound))))
		goto other;
	if (netns && h->netns == netns)
		return 0;
	if (sock_v6_locality(h->addr) == SOCK_ADDR_LOCAL)
		return 0;
other:
	pr_debug("rank %u: a unix dialer meant another listener (another address or network namespace)",
		 c->rank);
	return -ESRCH;
}

/*
 * One handshake frame, which it consumes: 0 to go on, HS_GONE, or an errno
 * to reject with.
 */
static int hs_frame(struct hmc_comm *c, struct hs *hs,
		    const struct frame_hdr *h, const uint8_t *payload)
{
	struct frame_challenge ch;
	uint8_t mac[FRAME_MAC_LEN], buf[FRAME_CHALLENGE_LEN];
	struct frame_hello *hello = &hs->hello;
	int rc;

	if (hs->state == HS_HELLO) {
		if (h->type != FRAME_HELLO ||
		    frame_decode_hello(payload, h->len, hello))
			return -EPROTO;
		conn_consume(hs->cn, h);
		if (hs->cn->is_unix && hs_check_host(c, hello))
			return -ESRCH;
		if (hello->dst_rank != c->rank)
			return -ESRCH;
		if (hello->src_rank == c->rank)
			return -EINVAL;
		if (!(hello->flags & FRAME_HELLO_F_AUTH) != !c->secret)
			return -EACCES;
		if (!c->secret)
			return hs_welcome(c, hs);
		rc = auth_nonce(hs->nonce);
		if (!rc)
			rc = auth_mac(c->secret, c->secret_len, AUTH_ROLE_LISTENER,
				      hello->nonce, hs->nonce, hello->src_rank,
				      c->rank, ch.mac);
		if (rc)
			return rc;
		memcpy(ch.nonce, hs->nonce, FRAME_NONCE_LEN);
		rc = conn_send(hs->cn, FRAME_CHALLENGE, buf,
			       (uint32_t)frame_encode_challenge(buf, &ch),
			       hs->deadline);
		if (rc)
			return rc;
		hs->state = HS_AUTH;
		return 0;
	}
	if (h->type != FRAME_AUTH ||
	    frame_decode_mac(payload, h->len, ch.mac))
		return -EPROTO;
	conn_consume(hs->cn, h);
	rc = auth_mac(c->secret, c->secret_len, AUTH_ROLE_DIALER, hello->nonce,
		      hs->nonce, hello->src_rank, c->rank, mac);
	if (rc)
		return rc;
	if (!auth_mac_equal(mac, ch.mac)) {
		pr_warn("rank %u: a dialer claiming rank %u failed authentication",
			c->rank, hello->src_rank);
		return -EACCES;
	}
	return hs_welcome(c, hs);
}

/* The handshake's connection is readable. */
static int hs_event(struct engine_src *src)
{
	struct hs *hs = container_of(src, struct hs, src);
	struct hmc_comm *c = hs->comm;
	const uint8_t *payload;
	struct frame_hdr h;
	ssize_t n;
	int rc;

	if (hs->cn->tls_hs) {
		/*
		 * Non-blocking: a dialer that stalls its handshake holds only
		 * its own connection, until the handshake deadline drops it.
		 */
		rc = tls_stream_handshake(hs->cn->tls);
		if (rc == -EAGAIN)
			return 1;
		if (rc) {
			pr_warn("rank %u: TLS handshake of a control connection "
				"refused: %s", c->rank, hmc_strerror(rc));
			hs_drop(c, hs);
			return 1;
		}
		hs->cn->tls_hs = false;
	}
	n = conn_fill(hs->cn);
	if (n < 0 && n != -EAGAIN) {
		hs_drop(c, hs);
		return 1;
	}
	for (;;) {
		rc = conn_next_frame(hs->cn, &h, &payload);
		if (rc == 0)
			return 1;
		if (rc > 0)
			rc = hs_frame(c, hs, &h, payload);
		if (rc == HS_GONE)
			return 1;
		if (rc) {
			hs_reject(c, hs, rc);
			return 1;
		}
	}
}

static void hs_accept(struct hmc_comm *c, int fd, bool is_unix)
{
	struct hs *hs = calloc(1, sizeof(*hs));

	if (hs)
		hs->cn = conn_new(fd, is_unix);
	if (!hs || !hs->cn) {
		free(hs);
		close(fd);
		return;
	}
	if (c->tls_srv && conn_start_tls(hs->cn, c->tls_srv, true)) {
		conn_free(hs->cn);
		free(hs);
		return;
	}
	hs->cn->tls_hs = hs->cn->tls != NULL;
	hs->comm = c;
	hs->state = HS_HELLO;
	hs->deadline = deadline_after_ms(c->connect_timeout_ms);
	hs->src.handle = hs_event;
	if (engine_watch(&c->engine, fd, &hs->src)) {
		conn_free(hs->cn);
		free(hs);
		return;
	}
	list_add_tail(&c->handshakes, &hs->node);
}

/* A listening socket is readable: accept what is waiting. */
static int listener_event(struct engine_src *src)
{
	struct comm_listener *l = container_of(src, struct comm_listener, src);
	int fd, n = 0;

	for (;;) {
		fd = sock_accept(l->fd);
		if (fd == -EAGAIN)
			break;
		if (fd < 0) {
			pr_debug("accept: %s", hmc_strerror(fd));
			break;
		}
		if (l->is_unix && sock_check_peer_cred(fd)) {
			close(fd);
			continue;
		}
		hs_accept(l->comm, fd, l->is_unix);
		n++;
	}
	return n;
}

int64_t ctrl_expire(struct hmc_comm *c)
{
	int64_t next = DEADLINE_NEVER, now;
	struct list_node *n, *tmp;

	if (list_empty(&c->handshakes) && list_empty(&c->pending))
		return DEADLINE_NEVER;
	now = now_ns();

	list_for_each_safe(n, tmp, &c->handshakes) {
		struct hs *hs = container_of(n, struct hs, node);

		if (hs->deadline <= now) {
			pr_info("rank %u: control handshake timed out", c->rank);
			hs_drop(c, hs);
		} else if (hs->deadline < next) {
			next = hs->deadline;
		}
	}
	list_for_each_safe(n, tmp, &c->pending) {
		struct peer *p = container_of(n, struct peer, pending_node);

		if (p->deadline <= now) {
			pr_info("rank %u: rank %u brought up no transport in time",
				c->rank, p->rank);
			peer_close(c, p, -ETIMEDOUT, PEER_CLOSE_REMOVE);
		} else if (p->deadline < next) {
			next = p->deadline;
		}
	}
	return next;
}

static int listener_open(struct hmc_comm *c, struct comm_listener *l, int fd,
			 bool is_unix)
{
	int rc;

	l->fd = fd;
	l->is_unix = is_unix;
	l->comm = c;
	l->src.handle = listener_event;
	rc = engine_watch(&c->engine, fd, &l->src);
	if (rc) {
		close(fd);
		l->fd = -1;
	}
	return rc;
}

/*
 * The Unix control listener for TCP @port: at a filesystem path, which
 * dialers in other network namespaces of this host reach too, else under
 * an abstract name (this namespace only), else none (TCP only). -1 or fd.
 */
static int listen_unix(struct hmc_comm *c, uint16_t port)
{
	char name[sizeof(c->unix_path)];
	int fd, rc;

	rc = sock_unix_path(c->unix_path, sizeof(c->unix_path), port, true);
	if (!rc)
		rc = sock_listen_unix_path(c->unix_path, &fd, &c->unix_ino);
	if (!rc)
		return fd;
	pr_info("rank %u: no unix control socket at %s (%s): this network namespace only",
		c->rank, c->unix_path, hmc_strerror(rc));
	c->unix_path[0] = '\0';
	sock_unix_name(name, sizeof(name), port);
	rc = sock_listen_unix(name, &fd);
	if (!rc)
		return fd;
	/* Another listener in this namespace owns the name: TCP only. */
	pr_info("rank %u: no unix control listener (%s): tcp only", c->rank,
		hmc_strerror(rc));
	return -1;
}

int ctrl_listen(struct hmc_comm *c, const char *ip, uint16_t port)
{
	uint16_t bound;
	int fd, ufd = -1, rc;

	if (c->listeners[0].fd >= 0)
		return -EALREADY;
	rc = sock_listen_tcp(ip, port, &fd, &bound);
	if (rc)
		return rc;
	if (!(c->flags & HMC_COMM_F_NO_UNIX))
		ufd = listen_unix(c, bound);
	c->tcp_port = bound;
	rc = listener_open(c, &c->listeners[0], fd, false);
	if (!rc && ufd >= 0)
		rc = listener_open(c, &c->listeners[1], ufd, true);
	else if (ufd >= 0)
		close(ufd);
	if (rc) {
		ctrl_unlisten(c);
		return rc;
	}
	pr_debug("rank %u: listening on %s:%u", c->rank, ip && *ip ? ip : "*",
		 bound);
	return 0;
}

void ctrl_unlisten(struct hmc_comm *c)
{
	struct list_node *n, *tmp;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(c->listeners); i++) {
		struct comm_listener *l = &c->listeners[i];

		if (l->fd < 0)
			continue;
		engine_unwatch(&c->engine, l->fd);
		if (l->is_unix && c->unix_path[0])
			sock_unlink_unix_path(c->unix_path, c->unix_ino);
		close(l->fd);
		l->fd = -1;
	}
	c->unix_path[0] = '\0';
	list_for_each_safe(n, tmp, &c->handshakes)
		hs_drop(c, container_of(n, struct hs, node));
}
