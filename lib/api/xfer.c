// SPDX-License-Identifier: MIT
/* Transfers: puts, gets, flushes and their requests. */
#include <errno.h>

#include "api/api.h"
#include "core/comm.h"
#include "core/peer.h"
#include "mem/buf.h"
#include "sys/log.h"

#define REQ_SPIN_NS	(50 * 1000)	/* poll before sleeping */

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
	/* Until peer_unuse(), p->xpeer cannot be destroyed under us. */
	rc = peer_use(c, rank, &p);
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
	comm_xport_kick(c, p->xops->type);
	if (signal)
		rc = p->xops->put_signal(ctx, p->xpeer, r, local_off,
					 remote_off, len, *signal);
	else
		rc = p->xops->post(ctx, p->xpeer, r, op, local_off, remote_off,
				   len);
	if (rc)
		req_free_unposted(&c->reqs, r);
out:
	peer_unuse(p);
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

static bool req_done_cond(void *owner, void *arg)
{
	struct hmc_comm *c = owner;

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
	rc = engine_wait(&c->engine, req_done_cond, &req, deadline_after_ms(timeout_ms),
		       REQ_SPIN_NS);
	if (rc)
		return rc;
	return req_result(&c->reqs, req, true);
}

__hot int hmc_comm_test(struct hmc_comm *c, hmc_req_t req)
{
	int rc, n;

	if (!c)
		return -EINVAL;
	rc = req_result(&c->reqs, req, true);
	if (rc == -EINPROGRESS && !engine_trylock(&c->engine)) {
		n = engine_poll(&c->engine);
		engine_unlock_quiet(&c->engine);
		if (n)
			rc = req_result(&c->reqs, req, true);
	}
	return rc;
}

struct wait_all_arg {
	const hmc_req_t *reqs;
	size_t n;
};

static bool all_done_cond(void *owner, void *arg)
{
	struct wait_all_arg *a = arg;
	struct hmc_comm *c = owner;
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
	rc = engine_wait(&c->engine, all_done_cond, &arg, deadline_after_ms(timeout_ms),
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

int comm_post_wait(struct hmc_comm *c, uint32_t peer, enum req_op op,
		     size_t local_off, size_t remote_off, size_t len,
		     const uint64_t *signal, int64_t deadline)
{
	hmc_req_t req;
	int rc;

	rc = post(c, peer, op, local_off, remote_off, len, signal, &req);
	if (rc)
		return rc;
	rc = engine_wait(&c->engine, req_done_cond, &req, deadline, REQ_SPIN_NS);
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
	return comm_post_wait(c, peer, REQ_PUT, local_off, remote_off, len, NULL,
			 deadline_after_ms(c->op_timeout_ms));
}

int hmc_comm_get(struct hmc_comm *c, uint32_t peer, size_t local_off,
		 size_t remote_off, size_t len)
{
	if (!c)
		return -EINVAL;
	return comm_post_wait(c, peer, REQ_GET, local_off, remote_off, len, NULL,
			 deadline_after_ms(c->op_timeout_ms));
}

int hmc_comm_flush(struct hmc_comm *c, uint32_t peer)
{
	if (!c)
		return -EINVAL;
	return comm_post_wait(c, peer, REQ_FLUSH, 0, 0, 0, NULL,
			 deadline_after_ms(c->op_timeout_ms));
}

int hmc_comm_put_signal(struct hmc_comm *c, uint32_t peer, size_t local_off,
			size_t remote_off, size_t len, uint64_t tag)
{
	int64_t deadline;
	int rc;

	if (!c)
		return -EINVAL;
	deadline = deadline_after_ms(c->op_timeout_ms);
	/* The tag rides behind the data, where the transport can. */
	rc = comm_post_wait(c, peer, REQ_PUT, local_off, remote_off, len, &tag,
			    deadline);
	if (rc != -EOPNOTSUPP)
		return rc;
	rc = comm_post_wait(c, peer, REQ_PUT, local_off, remote_off, len, NULL,
			    deadline);
	if (!rc)	/* the data is visible before the tag leaves */
		rc = comm_post_wait(c, peer, REQ_FLUSH, 0, 0, 0, NULL, deadline);
	if (!rc)
		rc = comm_send_frame(c, peer, FRAME_SIGNAL, tag, deadline);
	return rc;
}

__hot int hmc_comm_progress(struct hmc_comm *c)
{
	int n;

	if (!c)
		return -EINVAL;
	if (engine_trylock(&c->engine))
		return 0;
	n = engine_poll(&c->engine);
	engine_unlock_quiet(&c->engine);
	return n;
}
