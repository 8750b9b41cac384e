// SPDX-License-Identifier: MIT
/*
 * Communicator: the public API over peers, requests, the control plane and
 * the transports (see comm.h for the locking rules).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mem/buf.h"
#include "core/comm.h"
#include "mem/devhmc.h"
#include "msg/msg.h"
#include "sys/log.h"
#include "sys/opts.h"
#include "wire/sock.h"

#define DEFAULT_CONNECT_TIMEOUT_MS	10000
#define DEFAULT_OP_TIMEOUT_MS		30000
#define SECRET_MAX			4096
#define REQ_SPIN_NS			(50 * 1000)	/* poll before sleeping */

static const struct xport_ops *const xport_table[XPORT_SLOTS] = {
	[HMC_TRANSPORT_UCX] = &xport_ucx_ops,
	[HMC_TRANSPORT_VERBS] = &xport_verbs_ops,
	[HMC_TRANSPORT_SHM] = &xport_shm_ops,
};

const char *hmc_transport_name(enum hmc_transport transport)
{
	switch (transport) {
	case HMC_TRANSPORT_AUTO:
		return "auto";
	case HMC_TRANSPORT_UCX:
		return "ucx";
	case HMC_TRANSPORT_VERBS:
		return "verbs";
	case HMC_TRANSPORT_SHM:
		return "shm";
	}
	return "unknown";
}

/* -------------------------------------------------------------- peers */

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
	return p;
}

void peer_free(struct peer *p)
{
	conn_free(p->conn);
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
	rc = ctrl_push_tag(p, tag);
	pthread_mutex_unlock(&c->lock);
	if (rc)
		comm_peer_error(c, p, rc);
}

int comm_xport(struct hmc_comm *c, enum hmc_transport type,
	       struct xport_slot **slotp)
{
	struct xport_slot *slot;
	void *ctx;
	int fd, rc = 0;

	if ((unsigned int)type >= XPORT_SLOTS || !xport_table[type])
		return -EPROTONOSUPPORT;
	slot = &c->xports[type];
	pthread_mutex_lock(&c->xport_lock);
	if (slot->ctx)
		goto out;
	slot->ops = xport_table[type];
	rc = slot->ops->init(c, &ctx);
	if (rc) {
		pr_info("rank %u: %s transport: %s", c->rank,
			hmc_transport_name(type), hmc_strerror(rc));
		goto out;
	}
	fd = slot->ops->event_fd ? slot->ops->event_fd(ctx) : -1;
	slot->src.kind = PSRC_XPORT;
	slot->src.ptr = slot;
	if (fd >= 0) {
		rc = progress_watch(c, fd, &slot->src);
		if (rc) {
			slot->ops->fini(ctx);
			goto out;
		}
	}
	__atomic_store_n(&slot->ctx, ctx, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&c->xport_lock);
	*slotp = slot;
	return rc;
}

/* A reference to a connected @rank: 0, -ENOTCONN, or the failure. */
static __hot int peer_connected(struct hmc_comm *c, uint32_t rank,
				 struct peer **out)
{
	struct peer *p;
	int rc = 0;

	futex_mutex_lock(&c->peers_lock);
	p = peer_lookup_locked(c, rank);
	if (!p || p->state == PEER_DIALING || p->state == PEER_XPORT)
		rc = -ENOTCONN;
	else if (p->state == PEER_DOWN)
		rc = p->error ? p->error : -ECONNRESET;
	else
		*out = peer_get(p);
	futex_mutex_unlock(&c->peers_lock);
	return rc;
}

/* ------------------------------------------------------ create/destroy */

static int load_secret(struct hmc_comm *c, const char *secret)
{
	size_t len;

	if (!secret)
		secret = getenv("HMC_SECRET");
	if (!secret || !*secret)
		return 0;
	len = strlen(secret);
	if (len > SECRET_MAX)
		return -EINVAL;
	c->secret = malloc(len);
	if (!c->secret)
		return -ENOMEM;
	memcpy(c->secret, secret, len);
	c->secret_len = len;
	return 0;
}

int hmc_comm_create(struct hmc_buf *buf, const struct hmc_comm_opts *opts,
		    struct hmc_comm **out)
{
	struct hmc_comm_opts o;
	pthread_condattr_t attr;
	struct hmc_comm *c;
	int rc;

	if (!buf || !out)
		return -EINVAL;
	rc = OPTS_LOAD(&o, opts, hmc_comm_opts, op_timeout_ms);
	if (rc)
		return rc;
	if (o.flags & ~(HMC_COMM_F_NO_PROGRESS_THREAD | HMC_COMM_F_NO_UNIX))
		return -EINVAL;
	if (o.connect_timeout_ms < 0 || o.op_timeout_ms < 0)
		return -EINVAL;
	if (o.num_chs > HMC_VERBS_MAX_CHANNELS || o.ib_port > 255)
		return -EINVAL;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->buf = buf;
	c->rank = o.rank;
	c->flags = o.flags;
	c->connect_timeout_ms = o.connect_timeout_ms ? o.connect_timeout_ms :
				DEFAULT_CONNECT_TIMEOUT_MS;
	c->op_timeout_ms = o.op_timeout_ms ? o.op_timeout_ms :
			   DEFAULT_OP_TIMEOUT_MS;
	c->num_chs = o.num_chs ? o.num_chs : 1;
	c->ib_port = (uint8_t)o.ib_port;
	c->tcp_lfd = c->unix_lfd = -1;
	list_init(&c->handshakes);
	list_init(&c->failing);
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->xport_lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &attr);
	pthread_condattr_destroy(&attr);

	rc = load_secret(c, o.secret);
	if (rc)
		goto err;
	if (o.ib_dev) {
		c->ib_dev = strdup(o.ib_dev);
		if (!c->ib_dev) {
			rc = -ENOMEM;
			goto err;
		}
	}
	req_table_init(&c->reqs);
	/* Peer reports are for monitors: without hmc.ko there are none. */
	c->report_fd = devhmc_open(HMC_FEAT_PEER_STATE, NULL, HMC_LOG_DEBUG);
	rc = msg_init(c, o.msg_slot_size, o.msg_region);
	if (rc)
		goto err_reqs;
	rc = progress_init(c);
	if (rc)
		goto err_msg;
	if (!(o.flags & HMC_COMM_F_NO_PROGRESS_THREAD)) {
		rc = progress_start_thread(c);
		if (rc)
			goto err_progress;
	}
	*out = c;
	return 0;

err_progress:
	progress_fini(c);
err_msg:
	c->ext->fini(c);
err_reqs:
	if (c->report_fd >= 0)
		close(c->report_fd);
	req_table_fini(&c->reqs);
err:
	free(c->ib_dev);
	free(c->secret);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->xport_lock);
	pthread_mutex_destroy(&c->lock);
	free(c);
	return rc;
}

static void close_listeners(struct hmc_comm *c)
{
	if (c->tcp_lfd >= 0) {
		progress_unwatch(c, c->tcp_lfd);
		close(c->tcp_lfd);
		c->tcp_lfd = -1;
	}
	if (c->unix_lfd >= 0) {
		progress_unwatch(c, c->unix_lfd);
		close(c->unix_lfd);
		c->unix_lfd = -1;
	}
}

void hmc_comm_destroy(struct hmc_comm *c)
{
	struct list_node *n, *tmp;
	struct peer *p;
	unsigned int i;

	if (!c)
		return;
	progress_lock(c);
	close_listeners(c);
	list_for_each_safe(n, tmp, &c->handshakes) {
		struct conn *cn = container_of(n, struct conn, hs_node);

		if (cn->hs == HS_DONE)	/* a peer's: torn down below */
			continue;
		progress_unwatch(c, cn->fd);
		list_del(n);
		conn_free(cn);
	}
	ctrl_reap_failed(c);
	for (i = 0; i < PEER_HASH_SIZE; i++) {
		while ((p = c->peers[i])) {
			peer_get(p);
			ctrl_teardown(c, p, -ENOTCONN, true,
				      p->state == PEER_CONNECTED);
			peer_put(p);
		}
	}
	progress_unlock(c);
	progress_fini(c);
	c->ext->fini(c);

	for (i = 0; i < XPORT_SLOTS; i++)
		if (c->xports[i].ctx)
			c->xports[i].ops->fini(c->xports[i].ctx);
	if (c->report_fd >= 0)
		close(c->report_fd);
	req_table_fini(&c->reqs);
	if (c->secret) {
		explicit_bzero(c->secret, c->secret_len);
		free(c->secret);
	}
	free(c->ib_dev);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->xport_lock);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

uint32_t hmc_comm_rank(const struct hmc_comm *c)
{
	return c->rank;
}

struct hmc_buf *hmc_comm_buf(const struct hmc_comm *c)
{
	return c->buf;
}

/* ---------------------------------------------------------- connections */

int hmc_comm_listen(struct hmc_comm *c, const char *ip, uint16_t port)
{
	char name[64];
	uint16_t bound;
	int fd, ufd = -1, rc;

	if (!c)
		return -EINVAL;
	progress_lock(c);
	if (c->tcp_lfd >= 0) {
		rc = -EALREADY;
		goto out;
	}
	rc = sock_listen_tcp(ip, port, &fd, &bound);
	if (rc)
		goto out;
	if (!(c->flags & HMC_COMM_F_NO_UNIX)) {
		sock_unix_name(name, sizeof(name), bound);
		rc = sock_listen_unix(name, &ufd);
		if (rc) {
			/* Another listener on this host owns the name: TCP only. */
			pr_info("rank %u: no unix control listener (%s): tcp only",
				c->rank, hmc_strerror(rc));
			ufd = -1;
		}
	}
	c->tcp_lfd = fd;
	c->unix_lfd = ufd;
	c->tcp_port = bound;
	c->listen_src[0] = (struct psrc){ PSRC_LISTEN, &c->tcp_lfd };
	c->listen_src[1] = (struct psrc){ PSRC_LISTEN, &c->unix_lfd };
	rc = progress_watch(c, fd, &c->listen_src[0]);
	if (!rc && ufd >= 0)
		rc = progress_watch(c, ufd, &c->listen_src[1]);
	if (rc)
		close_listeners(c);
	else
		pr_debug("rank %u: listening on %s:%u", c->rank,
			 ip && *ip ? ip : "*", bound);
out:
	progress_unlock(c);
	return rc;
}

int hmc_comm_listen_port(const struct hmc_comm *c)
{
	if (!c)
		return -EINVAL;
	return c->tcp_lfd >= 0 ? c->tcp_port : -ENOTCONN;
}

int hmc_comm_connect(struct hmc_comm *c, uint32_t peer, const char *ip,
		     uint16_t port, enum hmc_transport transport)
{
	if (!c || !ip)
		return -EINVAL;
	if (transport != HMC_TRANSPORT_AUTO &&
	    ((unsigned int)transport >= XPORT_SLOTS || !xport_table[transport]))
		return -EPROTONOSUPPORT;
	return ctrl_connect(c, peer, ip, port, transport);
}

int hmc_comm_disconnect(struct hmc_comm *c, uint32_t rank)
{
	struct peer *p;
	int rc = 0;

	if (!c)
		return -EINVAL;
	p = peer_lookup(c, rank);
	if (!p)
		return -ENOTCONN;
	progress_lock(c);
	switch (p->state) {
	case PEER_DIALING:
		rc = -EALREADY;
		break;
	case PEER_CONNECTED:
		ctrl_teardown(c, p, -ENOTCONN, true, true);
		break;
	default:
		ctrl_teardown(c, p, -ENOTCONN, true, false);
		break;
	}
	progress_unlock(c);
	peer_put(p);
	return rc;
}

bool hmc_comm_is_connected(struct hmc_comm *c, uint32_t rank)
{
	struct peer *p;
	bool up;

	if (!c)
		return false;
	pthread_mutex_lock(&c->lock);
	p = peer_lookup_locked(c, rank);
	up = p && p->state == PEER_CONNECTED;
	pthread_mutex_unlock(&c->lock);
	return up;
}

int hmc_comm_peer_transport(struct hmc_comm *c, uint32_t rank)
{
	struct peer *p;
	int rc;

	if (!c)
		return -EINVAL;
	rc = peer_connected(c, rank, &p);
	if (rc)
		return rc;
	rc = p->xops->type;
	peer_put(p);
	return rc;
}

int hmc_comm_peers(struct hmc_comm *c, uint32_t *ranks, size_t max)
{
	struct peer *p;
	unsigned int i;
	int n = 0;

	if (!c || (!ranks && max))
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	for (i = 0; i < PEER_HASH_SIZE; i++)
		for (p = c->peers[i]; p; p = p->hnext)
			if (p->state == PEER_CONNECTED) {
				if ((size_t)n < max)
					ranks[n] = p->rank;
				n++;
			}
	pthread_mutex_unlock(&c->lock);
	return n;
}

int64_t hmc_comm_peer_buf_size(struct hmc_comm *c, uint32_t rank)
{
	struct peer *p;
	int64_t size;
	int rc;

	if (!c)
		return -EINVAL;
	rc = peer_connected(c, rank, &p);
	if (rc)
		return rc;
	size = (int64_t)p->buf_size;
	peer_put(p);
	return size;
}

/* ----------------------------------------------------------- transfers */

/* A put, get or flush (or a put_signal when @signal). */
static __hot int post(struct hmc_comm *c, uint32_t rank, enum req_op op,
		      size_t local_off, size_t remote_off, size_t len,
		      const uint64_t *signal, hmc_req_t *id)
{
	struct peer *p;
	struct req *r;
	void *ctx;
	int rc;

	if (!c || !id)
		return -EINVAL;
	if (op != REQ_FLUSH && range_check(hmc_buf_size(c->buf), local_off, len))
		return -ERANGE;
	rc = peer_connected(c, rank, &p);
	if (rc)
		return rc;
	if (op != REQ_FLUSH && range_check(p->buf_size, remote_off, len)) {
		rc = -ERANGE;
		goto out;
	}
	r = req_alloc(&c->reqs, p, op, id);
	if (!r) {
		rc = -ENOMEM;
		goto out;
	}
	if (op != REQ_FLUSH && len == 0 && !signal) {
		req_complete(r, 0);
		goto out;
	}
	ctx = c->xports[p->xops->type].ctx;
	/* New work: the next round must progress the transport before sleeping. */
	__atomic_store_n(&c->xports[p->xops->type].armed, false,
			 __ATOMIC_RELAXED);
	if (signal)
		rc = p->xops->put_signal(ctx, p->xpeer, r, local_off,
					 remote_off, len, *signal);
	else
		rc = p->xops->post(ctx, p->xpeer, r, op, local_off, remote_off,
				   len);
	if (rc)
		req_free_unposted(&c->reqs, r);
out:
	peer_put(p);
	return rc;
}

__hot int hmc_comm_put_nb(struct hmc_comm *c, uint32_t peer, size_t local_off,
			  size_t remote_off, size_t len, hmc_req_t *req)
{
	return post(c, peer, REQ_PUT, local_off, remote_off, len, NULL, req);
}

__hot int hmc_comm_get_nb(struct hmc_comm *c, uint32_t peer, size_t local_off,
			  size_t remote_off, size_t len, hmc_req_t *req)
{
	return post(c, peer, REQ_GET, local_off, remote_off, len, NULL, req);
}

static bool req_done_cond(struct hmc_comm *c, void *arg)
{
	return req_is_done(&c->reqs, *(hmc_req_t *)arg);
}

int hmc_comm_wait(struct hmc_comm *c, hmc_req_t req, int timeout_ms)
{
	int rc;

	if (!c)
		return -EINVAL;
	rc = req_result(&c->reqs, req, true);
	if (rc != -EINPROGRESS)
		return rc;
	rc = comm_wait(c, req_done_cond, &req, deadline_after_ms(timeout_ms),
		       REQ_SPIN_NS);
	if (rc)
		return rc;
	return req_result(&c->reqs, req, true);
}

/*
 * Callers that spin (hmc_comm_progress() while polling memory,
 * hmc_comm_test() in a loop) poll at the lowest latency: the transports
 * only, without a system call, and a full round (control sockets,
 * handshakes) once PROGRESS_FULL_NS have passed since the last one. By
 * time, not by count: a poll of RDMA or shared memory takes a few dozen
 * nanoseconds, and a system call every few polls would then be most of
 * what a spinning caller does. A millisecond, not less: a full round costs
 * a system call and a look at every peer, and a ping-pong that met one
 * every few round trips paid it in most of them (put_lat over soft-RoCE
 * under emulation, where a round trip takes 50 us). What waits for the
 * control sockets (hmc_comm_recv_tag(), hmc_comm_wait()) drives them
 * itself. Progress lock held.
 */
#define PROGRESS_FULL_NS	(1000 * 1000)

static __hot int progress_poll(struct hmc_comm *c)
{
	struct progress *pr = &c->progress;
	int64_t now = now_ns();
	int n;

	if (now - pr->last_full_ns < PROGRESS_FULL_NS) {
		n = progress_xports(c);
		if (n)
			comm_broadcast(c);
		return n;
	}
	pr->last_full_ns = now;
	__atomic_store_n(&pr->last_caller_ns, now, __ATOMIC_RELAXED);
	return progress_once(c, 0);
}

__hot int hmc_comm_test(struct hmc_comm *c, hmc_req_t req)
{
	int rc, n;

	if (!c)
		return -EINVAL;
	rc = req_result(&c->reqs, req, true);
	if (rc == -EINPROGRESS && !pthread_mutex_trylock(&c->progress.lock)) {
		n = progress_poll(c);
		pthread_mutex_unlock(&c->progress.lock);
		if (n)
			rc = req_result(&c->reqs, req, true);
	}
	return rc;
}

struct wait_all_arg {
	const hmc_req_t *reqs;
	size_t n;
};

static bool all_done_cond(struct hmc_comm *c, void *arg)
{
	struct wait_all_arg *a = arg;
	size_t i;

	for (i = 0; i < a->n; i++)
		if (!req_is_done(&c->reqs, a->reqs[i]))
			return false;
	return true;
}

int hmc_comm_wait_all(struct hmc_comm *c, const hmc_req_t *reqs, size_t n,
		      int timeout_ms, int *status)
{
	struct wait_all_arg arg = { reqs, n };
	int rc, first = 0;
	size_t i;

	if (!c || (!reqs && n))
		return -EINVAL;
	rc = comm_wait(c, all_done_cond, &arg, deadline_after_ms(timeout_ms),
		       REQ_SPIN_NS);
	for (i = 0; i < n; i++) {
		int st = req_result(&c->reqs, reqs[i], true);

		if (status)
			status[i] = st;
		if (st && st != -EINPROGRESS && !first)
			first = st;
	}
	return first ? first : rc;
}

/* Post and wait until @deadline; a timed-out request is abandoned. */
static int post_wait(struct hmc_comm *c, uint32_t peer, enum req_op op,
		     size_t local_off, size_t remote_off, size_t len,
		     const uint64_t *signal, int64_t deadline)
{
	hmc_req_t req;
	int rc;

	rc = post(c, peer, op, local_off, remote_off, len, signal, &req);
	if (rc)
		return rc;
	rc = comm_wait(c, req_done_cond, &req, deadline, REQ_SPIN_NS);
	if (rc) {
		req_abandon(&c->reqs, req);
		return rc;
	}
	return req_result(&c->reqs, req, true);
}

int hmc_comm_put(struct hmc_comm *c, uint32_t peer, size_t local_off,
		 size_t remote_off, size_t len)
{
	if (!c)
		return -EINVAL;
	return post_wait(c, peer, REQ_PUT, local_off, remote_off, len, NULL,
			 deadline_after_ms(c->op_timeout_ms));
}

int hmc_comm_get(struct hmc_comm *c, uint32_t peer, size_t local_off,
		 size_t remote_off, size_t len)
{
	if (!c)
		return -EINVAL;
	return post_wait(c, peer, REQ_GET, local_off, remote_off, len, NULL,
			 deadline_after_ms(c->op_timeout_ms));
}

int hmc_comm_flush(struct hmc_comm *c, uint32_t peer)
{
	if (!c)
		return -EINVAL;
	return post_wait(c, peer, REQ_FLUSH, 0, 0, 0, NULL,
			 deadline_after_ms(c->op_timeout_ms));
}

/* ------------------------------------------------------ control traffic */

static int send_frame(struct hmc_comm *c, uint32_t rank, enum frame_type type,
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

int hmc_comm_put_signal(struct hmc_comm *c, uint32_t peer, size_t local_off,
			size_t remote_off, size_t len, uint64_t tag)
{
	const struct xport_ops *xops = NULL;
	int64_t deadline;
	struct peer *p;
	int rc;

	if (!c)
		return -EINVAL;
	deadline = deadline_after_ms(c->op_timeout_ms);
	rc = peer_connected(c, peer, &p);
	if (rc)
		return rc;
	xops = p->xops;
	peer_put(p);
	if (xops->put_signal)	/* the tag rides behind the data */
		return post_wait(c, peer, REQ_PUT, local_off, remote_off, len,
				 &tag, deadline);
	rc = post_wait(c, peer, REQ_PUT, local_off, remote_off, len, NULL,
		       deadline);
	if (!rc)	/* the data is visible before the tag leaves */
		rc = post_wait(c, peer, REQ_FLUSH, 0, 0, 0, NULL, deadline);
	if (!rc)
		rc = send_frame(c, peer, FRAME_SIGNAL, tag, deadline);
	return rc;
}

int hmc_comm_send_tag(struct hmc_comm *c, uint32_t peer, uint64_t tag)
{
	if (!c)
		return -EINVAL;
	return send_frame(c, peer, FRAME_TAG, tag,
			  deadline_after_ms(c->op_timeout_ms));
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
static bool tag_cond(struct hmc_comm *c, void *arg)
{
	struct tag_wait *w = arg;
	struct peer *p = peer_lookup_locked(c, w->rank);

	if (!p)
		return false;
	if (p->tag_count) {	/* tags that came before a failure still count */
		w->tag = p->tags[p->tag_head];
		p->tag_head = (p->tag_head + 1) % p->tag_cap;
		p->tag_count--;
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
	rc = comm_wait(c, tag_cond, &w, deadline_after_ms(timeout_ms), 0);
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

static bool barrier_cond(struct hmc_comm *c, void *arg)
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
	rc = comm_wait(c, barrier_cond, &w, deadline, 0);
	if (!rc)
		rc = w.err;
	for (i = 0; i < w.n; i++)
		peer_put(w.peers[i]);
	free(w.peers);
	return rc;
}

__hot int hmc_comm_progress(struct hmc_comm *c)
{
	int n;

	if (!c)
		return -EINVAL;
	if (pthread_mutex_trylock(&c->progress.lock))
		return 0;
	n = progress_poll(c);
	pthread_mutex_unlock(&c->progress.lock);
	return n;
}
