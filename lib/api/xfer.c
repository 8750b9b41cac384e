// SPDX-License-Identifier: MIT
/* Transfers: puts, gets, flushes and their requests. */
#include <errno.h>

#include "api/api.h"
#include "core/comm.h"

#define REQ_SPIN_NS	(50 * 1000)	/* poll before sleeping */

__hot int hmc_comm_put_nb(struct hmc_comm *c, uint32_t peer, size_t local_off,
			  size_t remote_off, size_t len, hmc_req_t *req)
{
	return comm_post(c, peer, REQ_PUT, 0, local_off, 0, remote_off, len,
			 NULL, req);
}

__hot int hmc_comm_get_nb(struct hmc_comm *c, uint32_t peer, size_t local_off,
			  size_t remote_off, size_t len, hmc_req_t *req)
{
	return comm_post(c, peer, REQ_GET, 0, local_off, 0, remote_off, len,
			 NULL, req);
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

	rc = comm_post(c, peer, op, 0, local_off, 0, remote_off, len, signal,
		       &req);
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
