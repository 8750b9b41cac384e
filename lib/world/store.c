// SPDX-License-Identifier: MIT
/*
 * The world store server (see store.h, proto.h): one thread, poll() over
 * the listener and every connection, non-blocking streams with an output
 * queue each, so a member that stops reading never stalls the others.
 *
 * Ranks are slots. A slot is EMPTY until its first member joins (a world
 * of known size starts with all of them EMPTY), LIVE while a member holds
 * it, LEFT or FAILED after; a joiner takes the lowest slot that is not
 * LIVE, or a new one.
 *
 * Collectives are numbered per member: a member's n-th COLL belongs to
 * collective n of the world. Its participants are fixed when it opens:
 * the slots that are EMPTY (a member still to come at start-up) or LIVE
 * and were members when it opened. It completes when all of them
 * arrived; it fails at the earliest deadline of those that did (naming
 * the ranks that did not), or when a participant fails. A failed
 * collective answers its latecomers with the same error.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "sys/log.h"
#include "wire/sock.h"
#include "sys/util.h"
#include "world/proto.h"
#include "world/shm.h"
#include "world/store.h"
#include "wire/tls.h"

enum slot_state {
	SLOT_EMPTY,
	SLOT_LIVE,
	SLOT_LEFT,
	SLOT_FAILED,
};

struct sconn;

struct slot {
	enum slot_state st;
	uint32_t next_seq;	/* the member's next collective */
	struct sconn *conn;
	uint8_t rec[WP_REC_LEN];
};

enum sconn_state {
	SC_TLS,			/* TLS handshake */
	SC_HELLO,
	SC_AUTH,		/* CHALLENGE sent */
	SC_READY,		/* authenticated: JOIN, then COLL and LEAVE */
};

struct sconn {
	struct list_node node;
	struct stream s;
	enum sconn_state st;
	int64_t hs_deadline;
	int slot;		/* -1 until JOIN */
	uint8_t cnonce[WP_NONCE_LEN], snonce[WP_NONCE_LEN];
	uint8_t *rx;
	size_t rx_len, rx_cap;
	uint8_t *tx;
	size_t tx_off, tx_len, tx_cap;
	bool dead;
};

struct coll {
	struct list_node node;
	uint32_t seq, kind, root, nslots;
	int64_t len;		/* -1 until a contribution fixes it */
	int64_t deadline;
	int err;		/* once failed: what latecomers get */
	char *msg;
	uint8_t *data;		/* nslots * len (allgather) or len (bcast) */
	uint8_t *part, *arrived;
	uint32_t *ids;
};

struct store_srv {
	int lfd, wake_fd;
	uint16_t port;
	uint8_t *secret;
	size_t secret_len;
	struct tls_ctx *tls;
	pthread_t thread;
	struct list_node conns, colls;
	struct slot *slots;
	uint32_t nslots, cap;
	bool sized;		/* a JOIN gave the world's size */
	uint32_t frontier;	/* the next collective number to open */
	struct wshm *shm;	/* the start-up members' segment, if any */
	char shm_name[WSHM_NAME_LEN];
	uint32_t published;	/* start-up members that have its name */
	pthread_mutex_t lock;	/* @live, for store_srv_wait_idle() */
	pthread_cond_t cond;
	uint32_t live;
	bool stop;
};

#define HS_TIMEOUT_MS	10000

void store_set_keepalive(int fd)
{
	int one = 1, idle = 2, intvl = 1, cnt = 3;
	unsigned int user = STORE_FAIL_DETECT_MS;

	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user, sizeof(user));
}

/* ---- output */

static int tx_reserve(struct sconn *c, size_t more)
{
	size_t need = c->tx_len + more, cap = c->tx_cap ? c->tx_cap : 4096;
	uint8_t *p;

	if (c->tx_off && c->tx_off == c->tx_len)
		c->tx_off = c->tx_len = 0;
	need = c->tx_len + more;
	if (need <= c->tx_cap)
		return 0;
	while (cap < need)
		cap *= 2;
	p = realloc(c->tx, cap);
	if (!p)
		return -ENOMEM;
	c->tx = p;
	c->tx_cap = cap;
	return 0;
}

static void tx_flush(struct sconn *c)
{
	ssize_t n;

	while (!c->dead && c->tx_off < c->tx_len) {
		n = tls_stream_write(&c->s, c->tx + c->tx_off, c->tx_len - c->tx_off);
		if (n == -EAGAIN)
			return;
		if (n < 0) {
			c->dead = true;
			return;
		}
		c->tx_off += (size_t)n;
	}
}

/* Queue one message: header, then @n pieces of body. */
static void send_msg(struct sconn *c, uint16_t op, uint32_t id, int status,
		     int n, ...)
{
	struct wp_hdr h = { .op = op, .id = id, .status = status };
	const void *part[4];
	size_t plen[4];
	va_list ap;
	int i;

	va_start(ap, n);
	for (i = 0; i < n; i++) {
		part[i] = va_arg(ap, const void *);
		plen[i] = va_arg(ap, size_t);
		h.len += (uint32_t)plen[i];
	}
	va_end(ap);
	if (c->dead)
		return;
	if (tx_reserve(c, WP_HDR_LEN + h.len)) {
		c->dead = true;
		return;
	}
	wp_hdr_encode(c->tx + c->tx_len, &h);
	c->tx_len += WP_HDR_LEN;
	for (i = 0; i < n; i++) {
		memcpy(c->tx + c->tx_len, part[i], plen[i]);
		c->tx_len += plen[i];
	}
	tx_flush(c);
}

static void send_err(struct sconn *c, uint16_t op, uint32_t id, int err,
		     const char *msg)
{
	send_msg(c, op, id, err, 1, msg, strlen(msg));
}

/* ---- membership */

static void set_live(struct store_srv *srv, int delta)
{
	pthread_mutex_lock(&srv->lock);
	srv->live += (uint32_t)delta;
	pthread_cond_broadcast(&srv->cond);
	pthread_mutex_unlock(&srv->lock);
}

static void broadcast_event(struct store_srv *srv, uint32_t type,
			    uint32_t rank, int err)
{
	uint8_t ev[16];
	uint32_t i;

	put_be32(ev, type);
	put_be32(ev + 4, rank);
	put_be32(ev + 8, srv->nslots);
	put_be32(ev + 12, (uint32_t)err);
	for (i = 0; i < srv->nslots; i++)
		if (i != rank && srv->slots[i].st == SLOT_LIVE)
			send_msg(srv->slots[i].conn, WP_EVENT, 0, 0, 1, ev,
				 sizeof(ev));
}

static bool is_pending(struct store_srv *srv, struct coll *co, uint32_t r)
{
	enum slot_state st = srv->slots[r].st;

	return co->part[r] && !co->arrived[r] &&
	       (st == SLOT_EMPTY || st == SLOT_LIVE);
}

static void coll_free(struct coll *co)
{
	list_del(&co->node);
	free(co->msg);
	free(co->data);
	free(co->part);
	free(co->arrived);
	free(co->ids);
	free(co);
}

/* A failed collective is kept until no participant can still arrive. */
static void coll_reap(struct store_srv *srv, struct coll *co)
{
	uint32_t r;

	for (r = 0; r < co->nslots; r++)
		if (is_pending(srv, co, r))
			return;
	coll_free(co);
}

static void coll_fail(struct store_srv *srv, struct coll *co, int err,
		      char *msg)
{
	uint32_t r;

	co->err = err;
	co->msg = msg;
	pr_info("store: collective %u failed: %s", co->seq, msg ? msg : "");
	for (r = 0; r < co->nslots; r++)
		if (co->arrived[r] && srv->slots[r].st == SLOT_LIVE)
			send_err(srv->slots[r].conn, WP_COLL, co->ids[r], err,
				 msg ? msg : "");
	coll_reap(srv, co);
}

static void coll_check(struct store_srv *srv, struct coll *co)
{
	uint8_t hdr[4];
	size_t dlen;
	uint32_t r;

	if (co->err)
		return coll_reap(srv, co);
	for (r = 0; r < co->nslots; r++)
		if (is_pending(srv, co, r))
			return;
	put_be32(hdr, co->nslots);
	dlen = co->len < 0 ? 0 : (size_t)co->len;
	if (co->kind == WP_COLL_ALLGATHER)
		dlen *= co->nslots;
	for (r = 0; r < co->nslots; r++)
		if (co->arrived[r] && srv->slots[r].st == SLOT_LIVE)
			send_msg(srv->slots[r].conn, WP_COLL, co->ids[r], 0, 2,
				 hdr, sizeof(hdr), co->data, dlen);
	coll_free(co);
}

/* "ranks 2, 5 (never joined: 5)": who an unfinished collective waits for. */
static char *missing_ranks(struct store_srv *srv, struct coll *co)
{
	size_t cap = 64 + (size_t)co->nslots * 24, n;
	char *m = malloc(cap);
	uint32_t r, nr = 0;
	bool any_empty = false;

	if (!m)
		return NULL;
	n = (size_t)snprintf(m, cap, "timed out waiting for rank");
	for (r = 0; r < co->nslots; r++) {
		if (!is_pending(srv, co, r))
			continue;
		any_empty |= srv->slots[r].st == SLOT_EMPTY;
		n += (size_t)snprintf(m + n, cap - n, "%s %u",
				      nr++ ? "," : (co->nslots > 1 ? "s" : ""),
				      r);
	}
	if (any_empty) {
		n += (size_t)snprintf(m + n, cap - n, " (never joined:");
		nr = 0;
		for (r = 0; r < co->nslots; r++)
			if (is_pending(srv, co, r) &&
			    srv->slots[r].st == SLOT_EMPTY)
				n += (size_t)snprintf(m + n, cap - n, "%s %u",
						      nr++ ? "," : "", r);
		snprintf(m + n, cap - n, ")");
	}
	return m;
}

/* Slot @r is no longer a member: @failed says how it went. */
static void slot_release(struct store_srv *srv, uint32_t r, bool failed)
{
	struct list_node *pos, *tmp;
	struct slot *s = &srv->slots[r];
	char *msg;

	s->st = failed ? SLOT_FAILED : SLOT_LEFT;
	s->conn = NULL;
	if (srv->shm)
		wshm_changed(srv->shm, r);
	set_live(srv, -1);
	pr_info("store: rank %u %s", r, failed ? "failed" : "left");
	broadcast_event(srv, failed ? WP_EV_FAILED : WP_EV_LEFT, r,
			failed ? ECONNRESET : 0);
	list_for_each_safe(pos, tmp, &srv->colls) {
		struct coll *co = container_of(pos, struct coll, node);

		if (r >= co->nslots || !co->part[r])
			continue;
		if (!failed || co->err) {
			co->part[r] = 0;
			coll_check(srv, co);
			continue;
		}
		msg = malloc(64);
		if (msg)
			snprintf(msg, 64, "rank %u failed", r);
		coll_fail(srv, co, -ECONNRESET, msg);
	}
}

static int grow_slots(struct store_srv *srv, uint32_t n)
{
	struct slot *p;
	uint32_t cap = srv->cap ? srv->cap : 16;

	if (n > WP_MAX_SLOTS)
		return -ENOSPC;
	if (n <= srv->cap)
		goto init;
	while (cap < n)
		cap *= 2;
	p = realloc(srv->slots, cap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	srv->slots = p;
	srv->cap = cap;
init:
	memset(srv->slots + srv->nslots, 0,
	       (n - srv->nslots) * sizeof(*srv->slots));
	srv->nslots = n;
	return 0;
}

static void handle_join(struct store_srv *srv, struct sconn *c,
			const struct wp_hdr *h, const uint8_t *b)
{
	uint32_t rank, size, r;
	uint8_t reply[8];
	bool initial;
	char msg[128];
	struct slot *s;
	int rc;

	if (c->slot >= 0 || h->len != 8)
		return send_err(c, WP_JOIN, h->id, -EPROTO, "malformed JOIN");
	rank = get_be32(b);
	size = get_be32(b + 4);
	if (size > WP_MAX_SLOTS || (rank != WP_RANK_ANY && size &&
				    rank >= size))
		return send_err(c, WP_JOIN, h->id, -EINVAL,
				"rank or size out of range");
	if (size && !srv->sized) {
		if (size < srv->nslots)
			return send_err(c, WP_JOIN, h->id, -EINVAL,
					"world size smaller than its members");
		rc = grow_slots(srv, size);
		if (rc)
			return send_err(c, WP_JOIN, h->id, rc, "out of memory");
		srv->sized = true;
		/* Small one-host worlds collect through memory; else not. */
		if (size <= WSHM_MAX_RANKS &&
		    wshm_create(size, srv->shm_name, &srv->shm))
			srv->shm = NULL;
	} else if (size && size != srv->nslots) {
		snprintf(msg, sizeof(msg), "world size %u, not %u",
			 srv->nslots, size);
		return send_err(c, WP_JOIN, h->id, -EINVAL, msg);
	}
	if (rank == WP_RANK_ANY) {
		/* Arrival order: the lowest slot never taken, else a freed one. */
		for (r = 0; r < srv->nslots; r++)
			if (srv->slots[r].st == SLOT_EMPTY)
				break;
		if (r == srv->nslots)
			for (r = 0; r < srv->nslots; r++)
				if (srv->slots[r].st != SLOT_LIVE)
					break;
		if (r == srv->nslots) {
			if (size)
				return send_err(c, WP_JOIN, h->id, -ENOSPC,
						"every rank is taken");
			rc = grow_slots(srv, srv->nslots + 1);
			if (rc)
				return send_err(c, WP_JOIN, h->id, rc,
						"no free rank");
		}
	} else {
		r = rank;
		if (r >= srv->nslots) {
			rc = grow_slots(srv, r + 1);
			if (rc)
				return send_err(c, WP_JOIN, h->id, rc,
						"no such rank");
		}
		if (srv->slots[r].st == SLOT_LIVE) {
			snprintf(msg, sizeof(msg),
				 "rank %u is already a member", r);
			return send_err(c, WP_JOIN, h->id, -EADDRINUSE, msg);
		}
	}
	s = &srv->slots[r];
	/*
	 * A member of the world's first collectives starts at 0; anyone else
	 * (a joiner, a rank that comes back) at the next one to open.
	 */
	initial = s->st == SLOT_EMPTY && size;
	s->next_seq = initial ? 0 : srv->frontier;
	if (!initial && srv->shm)
		wshm_changed(srv->shm, UINT32_MAX);
	s->st = SLOT_LIVE;
	s->conn = c;
	memset(s->rec, 0, WP_REC_LEN);
	c->slot = (int)r;
	set_live(srv, 1);
	put_be32(reply, r);
	put_be32(reply + 4, srv->nslots);
	if (initial && srv->shm)
		send_msg(c, WP_JOIN, h->id, 0, 2, reply, sizeof(reply),
			 srv->shm_name, strlen(srv->shm_name) + 1);
	else
		send_msg(c, WP_JOIN, h->id, 0, 1, reply, sizeof(reply));
	pr_info("store: rank %u joined (%u slots)", r, srv->nslots);
}

static void handle_publish(struct store_srv *srv, struct sconn *c,
			   const struct wp_hdr *h, const uint8_t *b)
{
	uint32_t i, nlive = 0;
	uint8_t *reply, *p;

	if (c->slot < 0 || h->len != WP_REC_LEN)
		return send_err(c, WP_PUBLISH, h->id, -EPROTO,
				"malformed PUBLISH");
	memcpy(srv->slots[c->slot].rec, b, WP_REC_LEN);
	/* Every start-up member has mapped the segment: its name may go. */
	if (srv->shm && ++srv->published == srv->nslots)
		wshm_unlink(srv->shm);
	for (i = 0; i < srv->nslots; i++)
		nlive += srv->slots[i].st == SLOT_LIVE;
	reply = malloc(4 + (size_t)nlive * (4 + WP_REC_LEN));
	if (!reply) {
		c->dead = true;
		return;
	}
	put_be32(reply, srv->nslots);
	p = reply + 4;
	for (i = 0; i < srv->nslots; i++) {
		if (srv->slots[i].st != SLOT_LIVE)
			continue;
		put_be32(p, i);
		memcpy(p + 4, srv->slots[i].rec, WP_REC_LEN);
		p += 4 + WP_REC_LEN;
	}
	send_msg(c, WP_PUBLISH, h->id, 0, 1, reply, (size_t)(p - reply));
	free(reply);
}

static struct coll *coll_open(struct store_srv *srv, uint32_t seq,
			      uint32_t kind, uint32_t root, uint32_t opener)
{
	struct coll *co = calloc(1, sizeof(*co));
	uint32_t r, n = srv->nslots;

	if (!co)
		return NULL;
	co->part = calloc(n, 1);
	co->arrived = calloc(n, 1);
	co->ids = calloc(n, sizeof(*co->ids));
	if (!co->part || !co->arrived || !co->ids) {
		free(co->part);
		free(co->arrived);
		free(co->ids);
		free(co);
		return NULL;
	}
	co->seq = seq;
	co->kind = kind;
	co->root = root;
	co->nslots = n;
	co->len = -1;
	co->deadline = DEADLINE_NEVER;
	for (r = 0; r < n; r++) {
		const struct slot *s = &srv->slots[r];

		co->part[r] = r == opener || s->st == SLOT_EMPTY ||
			      (s->st == SLOT_LIVE && s->next_seq <= seq);
	}
	if (seq >= srv->frontier)
		srv->frontier = seq + 1;
	list_add_tail(&srv->colls, &co->node);
	return co;
}

static void handle_coll(struct store_srv *srv, struct sconn *c,
			const struct wp_hdr *h, const uint8_t *b)
{
	uint32_t kind, root, timeout, seen, seq, r = (uint32_t)c->slot;
	struct list_node *pos;
	struct coll *co = NULL;
	size_t len;
	char msg[128];

	if (c->slot < 0 || h->len < 16)
		return send_err(c, WP_COLL, h->id, -EPROTO, "malformed COLL");
	kind = get_be32(b);
	root = get_be32(b + 4);
	timeout = get_be32(b + 8);
	seen = get_be32(b + 12);
	len = h->len - 16;
	seq = srv->slots[r].next_seq++;
	for (pos = srv->colls.next; pos != &srv->colls; pos = pos->next) {
		co = container_of(pos, struct coll, node);
		if (co->seq == seq)
			break;
		co = NULL;
	}
	if (!co) {
		co = coll_open(srv, seq, kind, root, r);
		if (!co)
			return send_err(c, WP_COLL, h->id, -ENOMEM,
					"out of memory");
	}
	if (r >= co->nslots || !co->part[r] || co->arrived[r])
		return send_err(c, WP_COLL, h->id, -EPROTO,
				"not a participant of this collective");
	co->arrived[r] = 1;
	co->ids[r] = h->id;
	if (co->err) {
		send_err(c, WP_COLL, h->id, co->err, co->msg ? co->msg : "");
		return coll_reap(srv, co);
	}
	if (seen != co->nslots) {
		snprintf(msg, sizeof(msg), "the world has %u ranks, not %u: "
			 "read its membership events", co->nslots, seen);
		return coll_fail(srv, co, -ESTALE, strdup(msg));
	}
	if (kind != co->kind || root != co->root || root >= co->nslots) {
		snprintf(msg, sizeof(msg), "rank %u called another collective "
			 "(kind %u root %u, not kind %u root %u)", r, kind,
			 root, co->kind, co->root);
		return coll_fail(srv, co, -EINVAL, strdup(msg));
	}
	if (kind == WP_COLL_ALLGATHER || r == root) {
		if (co->len >= 0 && (size_t)co->len != len) {
			snprintf(msg, sizeof(msg), "rank %u gave %zu bytes, "
				 "others %lld", r, len, (long long)co->len);
			return coll_fail(srv, co, -EINVAL, strdup(msg));
		}
		if (co->len < 0) {
			co->len = (int64_t)len;
			co->data = calloc(1, kind == WP_COLL_ALLGATHER ?
					  len * co->nslots + 1 : len + 1);
			if (!co->data)
				return coll_fail(srv, co, -ENOMEM, NULL);
		}
		memcpy(co->data + (kind == WP_COLL_ALLGATHER ? len * r : 0),
		       b + 16, len);
	}
	if (timeout != UINT32_MAX) {
		int64_t d = now_ns() + (int64_t)timeout * 1000000;

		if (d < co->deadline)
			co->deadline = d;
	}
	coll_check(srv, co);
}

static void handle_ready(struct store_srv *srv, struct sconn *c,
			 const struct wp_hdr *h, const uint8_t *b)
{
	switch (h->op) {
	case WP_JOIN:
		return handle_join(srv, c, h, b);
	case WP_PUBLISH:
		return handle_publish(srv, c, h, b);
	case WP_READY:
		if (c->slot < 0)
			break;
		broadcast_event(srv, WP_EV_JOINED, (uint32_t)c->slot, 0);
		return send_msg(c, WP_READY, h->id, 0, 0);
	case WP_COLL:
		return handle_coll(srv, c, h, b);
	case WP_LEAVE:
		if (c->slot >= 0) {
			uint32_t r = (uint32_t)c->slot;

			c->slot = -1;
			slot_release(srv, r, false);
		}
		return send_msg(c, WP_LEAVE, h->id, 0, 0);
	default:
		break;
	}
	c->dead = true;
}

static void handle_msg(struct store_srv *srv, struct sconn *c,
		       const struct wp_hdr *h, const uint8_t *b)
{
	uint8_t mac[WP_MAC_LEN];

	switch (c->st) {
	case SC_HELLO:
		if (h->op != WP_HELLO || h->len != 8 + WP_NONCE_LEN ||
		    get_be32(b) != WP_MAGIC || get_be32(b + 4) != WP_VERSION) {
			c->dead = true;
			return;
		}
		memcpy(c->cnonce, b + 8, WP_NONCE_LEN);
		if (RAND_bytes(c->snonce, WP_NONCE_LEN) != 1 ||
		    wp_mac(srv->secret, srv->secret_len, WP_SIDE_SERVER,
			   c->cnonce, c->snonce, mac)) {
			c->dead = true;
			return;
		}
		send_msg(c, WP_CHALLENGE, h->id, 0, 2, c->snonce,
			 (size_t)WP_NONCE_LEN, mac, (size_t)WP_MAC_LEN);
		c->st = SC_AUTH;
		return;
	case SC_AUTH:
		if (h->op != WP_AUTH || h->len != WP_MAC_LEN ||
		    wp_mac(srv->secret, srv->secret_len, WP_SIDE_CLIENT,
			   c->cnonce, c->snonce, mac) ||
		    CRYPTO_memcmp(mac, b, WP_MAC_LEN)) {
			pr_warn("store: a client failed authentication");
			send_err(c, WP_AUTH, h->id, -EACCES,
				 "authentication failed: wrong secret");
			c->dead = true;	/* after the reply is flushed, below */
			return;
		}
		send_msg(c, WP_AUTH, h->id, 0, 0);
		c->st = SC_READY;
		return;
	case SC_READY:
		return handle_ready(srv, c, h, b);
	case SC_TLS:
		break;
	}
	c->dead = true;
}

/* ---- connections */

static void conn_close(struct store_srv *srv, struct sconn *c)
{
	if (c->slot >= 0)
		slot_release(srv, (uint32_t)c->slot, true);
	list_del(&c->node);
	tls_stream_close(&c->s);
	free(c->rx);
	free(c->tx);
	free(c);
}

static void conn_read(struct store_srv *srv, struct sconn *c)
{
	struct wp_hdr h;
	ssize_t n;
	size_t off;
	int rc;

	if (c->st == SC_TLS) {
		rc = tls_stream_handshake(&c->s);
		if (rc == -EAGAIN)
			return;
		if (rc) {
			pr_warn("store: TLS handshake refused: %s",
				strerror(-rc));
			c->dead = true;
			return;
		}
		c->st = SC_HELLO;
	}
	do {
		if (c->rx_cap - c->rx_len < 65536) {
			size_t cap = c->rx_cap ? c->rx_cap * 2 : 65536;
			uint8_t *p = realloc(c->rx, cap);

			if (!p) {
				c->dead = true;
				return;
			}
			c->rx = p;
			c->rx_cap = cap;
		}
		n = tls_stream_read(&c->s, c->rx + c->rx_len, c->rx_cap - c->rx_len);
		if (n == -EAGAIN)
			break;
		if (n < 0) {
			c->dead = true;
			return;
		}
		c->rx_len += (size_t)n;
	} while (tls_stream_pending(&c->s) || c->rx_len == c->rx_cap);

	off = 0;
	while (!c->dead && c->rx_len - off >= WP_HDR_LEN) {
		wp_hdr_decode(c->rx + off, &h);
		if (h.len > WP_MAX_BODY || h.flags) {
			c->dead = true;
			return;
		}
		if (c->rx_len - off < WP_HDR_LEN + h.len)
			break;
		handle_msg(srv, c, &h, c->rx + off + WP_HDR_LEN);
		off += WP_HDR_LEN + h.len;
	}
	memmove(c->rx, c->rx + off, c->rx_len - off);
	c->rx_len -= off;
}

static void accept_all(struct store_srv *srv)
{
	struct sconn *c;
	int fd, rc;

	while ((fd = sock_accept(srv->lfd)) >= 0) {
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		store_set_keepalive(fd);
		rc = tls_stream_init(&c->s, fd, srv->tls, true);
		if (rc) {
			free(c);
			continue;
		}
		c->st = srv->tls ? SC_TLS : SC_HELLO;
		c->slot = -1;
		c->hs_deadline = deadline_after_ms(HS_TIMEOUT_MS);
		list_add_tail(&srv->conns, &c->node);
		if (srv->tls)
			conn_read(srv, c);
	}
}

static int next_timeout(struct store_srv *srv)
{
	int64_t d = DEADLINE_NEVER;
	struct list_node *pos;

	for (pos = srv->colls.next; pos != &srv->colls; pos = pos->next) {
		struct coll *co = container_of(pos, struct coll, node);

		if (!co->err && co->deadline < d)
			d = co->deadline;
	}
	for (pos = srv->conns.next; pos != &srv->conns; pos = pos->next) {
		struct sconn *c = container_of(pos, struct sconn, node);

		if (c->st != SC_READY && c->hs_deadline < d)
			d = c->hs_deadline;
	}
	return deadline_remaining_ms(d);
}

static void expire(struct store_srv *srv)
{
	struct list_node *pos, *tmp;
	int64_t now = now_ns();

	list_for_each_safe(pos, tmp, &srv->colls) {
		struct coll *co = container_of(pos, struct coll, node);

		if (!co->err && co->deadline <= now)
			coll_fail(srv, co, -ETIMEDOUT, missing_ranks(srv, co));
	}
	list_for_each_safe(pos, tmp, &srv->conns) {
		struct sconn *c = container_of(pos, struct sconn, node);

		if (c->st != SC_READY && c->hs_deadline <= now)
			c->dead = true;
	}
}

static void *store_thread(void *arg)
{
	struct store_srv *srv = arg;
	struct list_node *pos, *tmp;
	struct pollfd *pfd = NULL;
	struct sconn **pc = NULL;
	size_t cap = 0, n, i;

	for (;;) {
		n = 2;
		for (pos = srv->conns.next; pos != &srv->conns; pos = pos->next)
			n++;
		if (n > cap) {
			cap = n * 2;
			free(pfd);
			free(pc);
			pfd = calloc(cap, sizeof(*pfd));
			pc = calloc(cap, sizeof(*pc));
			if (!pfd || !pc) {
				/* Nothing can be served: every member sees EOF. */
				pr_err("store: out of memory, stopping");
				break;
			}
		}
		pfd[0] = (struct pollfd){ .fd = srv->wake_fd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = srv->lfd, .events = POLLIN };
		i = 2;
		for (pos = srv->conns.next; pos != &srv->conns; pos = pos->next) {
			struct sconn *c = container_of(pos, struct sconn, node);

			pc[i] = c;
			pfd[i].fd = c->s.fd;
			pfd[i].events = c->s.want | POLLIN |
					(c->tx_off < c->tx_len ? POLLOUT : 0);
			pfd[i].revents = 0;
			i++;
		}
		if (poll(pfd, (nfds_t)n, next_timeout(srv)) < 0 &&
		    errno != EINTR) {
			pr_err("store: poll: %s", strerror(errno));
			break;
		}
		if (pfd[0].revents) {
			uint64_t v;

			if (read(srv->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				break;
			if (__atomic_load_n(&srv->stop, __ATOMIC_ACQUIRE))
				break;
		}
		if (pfd[1].revents)
			accept_all(srv);
		for (i = 2; i < n; i++) {
			struct sconn *c = pc[i];

			if (!pfd[i].revents)
				continue;
			if (pfd[i].revents & POLLOUT)
				tx_flush(c);
			if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
				conn_read(srv, c);
		}
		expire(srv);
		/* Dead connections go after every message of this round was handled. */
		list_for_each_safe(pos, tmp, &srv->conns) {
			struct sconn *c = container_of(pos, struct sconn, node);

			if (c->dead)
				conn_close(srv, c);
		}
	}
	free(pfd);
	free(pc);
	return NULL;
}

int store_srv_start(const char *ip, uint16_t port, const void *secret,
		    size_t secret_len, struct tls_ctx *tls,
		    struct store_srv **out)
{
	struct store_srv *srv;
	int rc;

	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return -ENOMEM;
	list_init(&srv->conns);
	list_init(&srv->colls);
	pthread_mutex_init(&srv->lock, NULL);
	pthread_cond_init(&srv->cond, NULL);
	srv->lfd = srv->wake_fd = -1;
	if (secret_len) {
		rc = -ENOMEM;
		srv->secret = malloc(secret_len);
		if (!srv->secret)
			goto err;
		memcpy(srv->secret, secret, secret_len);
		srv->secret_len = secret_len;
	}
	rc = sock_listen_tcp(ip, port, &srv->lfd, &srv->port);
	if (rc)
		goto err;
	srv->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (srv->wake_fd < 0) {
		rc = -errno;
		goto err;
	}
	srv->tls = tls;
	rc = -pthread_create(&srv->thread, NULL, store_thread, srv);
	if (rc)
		goto err;
	*out = srv;
	return 0;

err:
	if (srv->wake_fd >= 0)
		close(srv->wake_fd);
	if (srv->lfd >= 0)
		close(srv->lfd);
	free(srv->secret);
	free(srv);
	return rc;
}

uint16_t store_srv_port(const struct store_srv *srv)
{
	return srv->port;
}

int store_srv_wait_idle(struct store_srv *srv, int64_t deadline)
{
	struct timespec ts;
	int rc = 0;

	pthread_mutex_lock(&srv->lock);
	while (srv->live && !rc) {
		if (deadline == DEADLINE_NEVER) {
			pthread_cond_wait(&srv->cond, &srv->lock);
			continue;
		}
		if (deadline_passed(deadline)) {
			rc = -ETIMEDOUT;
			break;
		}
		/* The condition uses CLOCK_REALTIME: wait in short steps. */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 20000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&srv->cond, &srv->lock, &ts);
	}
	pthread_mutex_unlock(&srv->lock);
	return rc;
}

void store_srv_stop(struct store_srv *srv)
{
	struct list_node *pos, *tmp;
	uint64_t one = 1;

	__atomic_store_n(&srv->stop, true, __ATOMIC_RELEASE);
	if (write(srv->wake_fd, &one, sizeof(one)) < 0)
		pr_warn("store: cannot wake the server thread: %s",
			strerror(errno));
	pthread_join(srv->thread, NULL);
	list_for_each_safe(pos, tmp, &srv->conns) {
		struct sconn *c = container_of(pos, struct sconn, node);

		c->slot = -1;	/* no events: the store itself goes away */
		conn_close(srv, c);
	}
	list_for_each_safe(pos, tmp, &srv->colls)
		coll_free(container_of(pos, struct coll, node));
	close(srv->wake_fd);
	close(srv->lfd);
	wshm_close(srv->shm);
	tls_ctx_destroy(srv->tls);
	free(srv->secret);
	free(srv->slots);
	pthread_cond_destroy(&srv->cond);
	pthread_mutex_destroy(&srv->lock);
	free(srv);
}
