// SPDX-License-Identifier: MIT
/*
 * Communicators: creation, listening, connecting and disconnecting, and
 * what can be asked about peers (core/comm.h has the locking rules).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/comm.h"
#include "core/peer.h"
#include "ctrl/ctrl.h"
#include "mem/buf.h"
#include "mem/devhmc.h"
#include "msg/msg.h"
#include "sys/log.h"
#include "wire/tls.h"
#include "sys/opts.h"
#include "xport/xport.h"

#define DEFAULT_CONNECT_TIMEOUT_MS	10000
#define DEFAULT_OP_TIMEOUT_MS		30000
#define SECRET_MAX			4096

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

/* What hmc_comm_create() sets up before anything can fail, and @c. */
static void comm_free(struct hmc_comm *c)
{
	if (c->secret) {
		explicit_bzero(c->secret, c->secret_len);
		free(c->secret);
	}
	tls_ctx_destroy(c->tls_srv);
	tls_ctx_destroy(c->tls_cli);
	free(c->ib_dev);
	pthread_mutex_destroy(&c->xport_lock);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

int hmc_comm_create(struct hmc_buf *buf, const struct hmc_comm_opts *opts,
		    struct hmc_comm **out)
{
	struct hmc_comm_opts o;
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
	c->listeners[0].fd = c->listeners[1].fd = -1;
	list_init(&c->handshakes);
	list_init(&c->pending);
	list_init(&c->failing);
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->xport_lock, NULL);

	rc = load_secret(c, o.secret);
	if (rc)
		goto err;
	rc = tls_ctx_from_env(o.tls_cert, o.tls_key, o.tls_ca, true,
			      &c->tls_srv);
	if (!rc)
		rc = tls_ctx_from_env(o.tls_cert, o.tls_key, o.tls_ca, false,
				      &c->tls_cli);
	if (rc)
		goto err;
	/* TLS cannot carry descriptors: every control connection is TCP. */
	if (c->tls_srv)
		c->flags |= HMC_COMM_F_NO_UNIX;
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
	rc = engine_init(&c->engine, &ctrl_engine_ops, c, &c->lock);
	if (rc)
		goto err_msg;
	if (!(o.flags & HMC_COMM_F_NO_PROGRESS_THREAD)) {
		rc = engine_start_thread(&c->engine);
		if (rc)
			goto err_engine;
	}
	*out = c;
	return 0;

err_engine:
	engine_fini(&c->engine);
err_msg:
	c->ext->fini(c);
err_reqs:
	if (c->report_fd >= 0)
		close(c->report_fd);
	req_table_fini(&c->reqs);
err:
	comm_free(c);
	return rc;
}

void hmc_comm_destroy(struct hmc_comm *c)
{
	struct peer *p;
	unsigned int i;

	if (!c)
		return;
	engine_lock(&c->engine);
	ctrl_unlisten(c);
	peer_reap_failed(c);
	for (i = 0; i < PEER_HASH_SIZE; i++) {
		while ((p = c->peers[i])) {
			peer_get(p);
			peer_close(c, p, -ENOTCONN, PEER_CLOSE_REMOVE |
				   (p->state == PEER_CONNECTED ?
				    PEER_CLOSE_GRACEFUL : 0));
			peer_put(p);
		}
	}
	engine_unlock(&c->engine);
	engine_fini(&c->engine);
	c->ext->fini(c);

	mr_table_fini(c);
	comm_xports_fini(c);
	if (c->report_fd >= 0)
		close(c->report_fd);
	req_table_fini(&c->reqs);
	comm_free(c);
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
	int rc;

	if (!c)
		return -EINVAL;
	engine_lock(&c->engine);
	rc = ctrl_listen(c, ip, port);
	engine_unlock(&c->engine);
	return rc;
}

int hmc_comm_listen_port(const struct hmc_comm *c)
{
	if (!c)
		return -EINVAL;
	return c->listeners[0].fd >= 0 ? c->tcp_port : -ENOTCONN;
}

int hmc_comm_connect(struct hmc_comm *c, uint32_t peer, const char *ip,
		     uint16_t port, enum hmc_transport transport)
{
	if (!c || !ip)
		return -EINVAL;
	if (transport != HMC_TRANSPORT_AUTO && !xport_get(transport))
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
	engine_lock(&c->engine);
	switch (p->state) {
	case PEER_DIALING:
		rc = -EALREADY;
		break;
	case PEER_CONNECTED:
		peer_close(c, p, -ENOTCONN,
			   PEER_CLOSE_REMOVE | PEER_CLOSE_GRACEFUL);
		break;
	default:
		peer_close(c, p, -ENOTCONN, PEER_CLOSE_REMOVE);
		break;
	}
	engine_unlock(&c->engine);
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
