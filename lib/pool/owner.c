// SPDX-License-Identifier: MIT
/*
 * Another rank's device segment, reached through its owner.
 *
 * A peer's device memory is no part of its ConnBuffer, so no transport
 * can name it by offset: the owner moves the bytes itself. The requester
 * sends a request (a message with POOL_TAG_REQ), then, for a write, the
 * data as a message the owner receives straight into its device segment;
 * for a read, the owner sends the data from its device segment after its
 * reply. The message layer stages a transfer between device memory and
 * the wire through its slots in both ConnBuffers (the pool reserves a
 * region of its own for them, POOL_MSG_REGION), copying chunks in and out
 * with the device runtime while others are on the wire; a side that lies
 * in the ConnBuffer (our host segment, the staging window) is pulled or
 * landed without a copy.
 *
 * Where the transport can take the device segment itself (verbs with a
 * dma-buf of it, or as peer memory; UCX with the device's transport), the
 * owner registers it as a memory region of the communicator, and a
 * requester asks once for its descriptor (POOL_DEV_DESC): a copy whose
 * local side lies in a region of ours (the ConnBuffer, our device
 * segment, registered user memory) then moves one-sided, NIC to device
 * memory, with no copy and no owner in between. Where the transport
 * refuses (tcp, shm) the owner answers -EOPNOTSUPP and copies go through
 * it as above.
 *
 * The owner serves requests on one thread, one at a time, in the order
 * they arrive; it never waits for another rank's service, so services
 * cannot wait on each other. Each exchange has the pool's deadline, and a
 * requester or owner that dies fails the messages in flight with it: the
 * other side gets an error, the service goes on.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "mem/mem.h"
#include "pool/pool.h"
#include "sys/log.h"

/*
 * Message tags: "POO", the kind, then the requester's id of the copy.
 * Two ranks may serve each other while each also asks the other, with
 * ids counted apart: so each direction has kinds of its own, and what a
 * rank's service receives (requests, the data of writes, under the
 * asker's ids) never matches what its askers wait for (replies, the data
 * of reads, under their own ids).
 */
#define POOL_TAG_MAGIC		0x504f4fULL
#define POOL_TAG(kind, id)	(POOL_TAG_MAGIC << 40 | (uint64_t)(kind) << 32 | \
				 (uint32_t)(id))
#define POOL_TAG_REQ		POOL_TAG(1, 0)
#define POOL_KIND_REPLY		2	/* owner to asker */
#define POOL_KIND_WRITE		3	/* asker to owner: a write's data */
#define POOL_KIND_READ		4	/* owner to asker: a read's data */
/* How often an idle service looks at its stop flag. */
#define POOL_SERVE_POLL_MS	100

enum pool_dev_op {
	POOL_DEV_WRITE = 1,
	POOL_DEV_READ,
	POOL_DEV_DESC,		/* the segment's region descriptor, as READ data */
};

/* A request to a device segment's owner; no padding. */
struct pool_dev_req {
	uint32_t op;		/* enum pool_dev_op */
	uint32_t id;		/* the requester's, in the reply and data tags */
	uint64_t off;		/* in the owner's device segment */
	uint64_t len;
};

struct pool_dev_reply {
	int32_t status;		/* 0 or a negative errno */
	uint32_t reserved;
};

static int reply(struct hmc_pool *p, uint32_t rank, uint32_t id, int status)
{
	struct pool_dev_reply r = { .status = status };

	return hmc_comm_send(p->comm, rank, POOL_TAG(POOL_KIND_REPLY, id), &r,
			     sizeof(r), HMC_MEM_CPU, p->timeout_ms);
}

/* Our segment's descriptor, or why there is none. */
static void serve_desc(struct hmc_pool *p, uint32_t rank,
		       const struct pool_dev_req *req)
{
	uint8_t desc[HMC_MR_DESC_MAX];
	size_t len = 0;
	int status = -EOPNOTSUPP;

	if (p->dev_mr)
		status = hmc_comm_mr_pack(p->comm, p->dev_mr, desc, sizeof(desc),
					  &len);
	if (!status && (req->off || req->len))
		status = -EPROTO;
	if (!reply(p, rank, req->id, status) && !status)
		hmc_comm_send(p->comm, rank, POOL_TAG(POOL_KIND_READ, req->id),
			      desc, len, HMC_MEM_CPU, p->timeout_ms);
}

/* One request from @rank, answered whatever becomes of it. */
static void serve_one(struct hmc_pool *p, uint32_t rank,
		      const struct pool_dev_req *req)
{
	uint64_t size = p->ranks[p->rank].dev_size;
	char *at = NULL;
	int status = 0, ret;

	if (req->op == POOL_DEV_DESC) {
		serve_desc(p, rank, req);
		return;
	}
	if (req->len > size || req->off > size - req->len)
		status = -ERANGE;
	else if (req->op != POOL_DEV_WRITE && req->op != POOL_DEV_READ)
		status = -EPROTO;
	else
		at = (char *)p->dev_ptr + req->off;
	if (req->op == POOL_DEV_WRITE) {
		/*
		 * The data is on its way whatever we say: take it, or refuse
		 * it with a zero-length receive (-EMSGSIZE on both sides).
		 */
		ret = hmc_comm_recv(p->comm, rank,
				    POOL_TAG(POOL_KIND_WRITE, req->id), at,
				    status ? 0 : req->len,
				    status ? HMC_MEM_CPU : p->dev_type, NULL,
				    p->timeout_ms);
		if (!status)
			status = ret;
		ret = reply(p, rank, req->id, status);
	} else {
		ret = reply(p, rank, req->id, status);
		if (!ret && !status)
			ret = hmc_comm_send(p->comm, rank,
					    POOL_TAG(POOL_KIND_READ, req->id),
					    at, req->len, p->dev_type,
					    p->timeout_ms);
	}
	if (ret || status)
		pr_debug("pool: rank %u's %s of %llu bytes at %llu of our device segment: %s",
			 rank, req->op == POOL_DEV_WRITE ? "write" : "read",
			 (unsigned long long)req->len,
			 (unsigned long long)req->off,
			 hmc_strerror(status ? status : ret));
}

static void *serve_main(void *arg)
{
	struct hmc_pool *p = arg;
	struct hmc_msg_status st;
	struct pool_dev_req req;
	int ret;

	while (!__atomic_load_n(&p->serve_stop, __ATOMIC_ACQUIRE)) {
		ret = hmc_comm_recv(p->comm, HMC_ANY_SOURCE, POOL_TAG_REQ, &req,
				    sizeof(req), HMC_MEM_CPU, &st,
				    POOL_SERVE_POLL_MS);
		if (ret == -ETIMEDOUT)
			continue;
		if (ret) {
			/* Never a hot loop on an error that stays. */
			pr_debug("pool: receiving device requests: %s",
				 hmc_strerror(ret));
			usleep(1000);
			continue;
		}
		if (st.len != sizeof(req)) {
			pr_debug("pool: a device request of %llu bytes from rank %u",
				 (unsigned long long)st.len, st.source);
			continue;
		}
		serve_one(p, st.source, &req);
	}
	return NULL;
}

int pool_serve_start(struct hmc_pool *p)
{
	int ret;

	if (!p->dev_ptr)
		return 0;	/* nothing to serve */
	ret = -pthread_create(&p->server, NULL, serve_main, p);
	p->serve_started = !ret;
	return ret;
}

void pool_serve_stop(struct hmc_pool *p)
{
	if (!p->serve_started)
		return;
	__atomic_store_n(&p->serve_stop, true, __ATOMIC_RELEASE);
	pthread_join(p->server, NULL);
	p->serve_started = false;
}

/* A failure that is the owner's going away reads as that. */
static int owner_err(struct hmc_pool *p, uint32_t rank, int ret)
{
	int gone = pool_rank_check(p, rank);

	if (gone || (ret != -EPIPE && ret != -ECONNRESET && ret != -ENOTCONN))
		return gone ?: ret;
	/*
	 * Its connection broke under the exchange before the communicator's
	 * progress saw it close (a send met the closed socket): it stays
	 * broken, so the rank is gone from now on for every copy, and not
	 * only for the exchanges (one through its mapped host segment would
	 * still go on).
	 */
	pthread_mutex_lock(&p->lock);
	if (p->ranks[rank].state == POOL_RANK_LIVE)
		p->ranks[rank].state = POOL_RANK_GONE;
	pthread_mutex_unlock(&p->lock);
	return -ECONNRESET;
}

void pool_dev_region(struct hmc_pool *p)
{
	HMC_OPTS(hmc_mr_opts, o, .access = HMC_MR_REMOTE_READ |
		 HMC_MR_REMOTE_WRITE, .mem_type = p->dev_type,
		 .device = p->dev_id);
	int ret;

	ret = hmc_comm_mr_reg(p->comm, p->dev_ptr,
			      p->ranks[p->rank].dev_size, &o, &p->dev_mr);
	if (ret) {
		p->dev_mr = 0;
		pr_debug("pool: our device segment is no memory region (%s): its owner serves it",
			 hmc_strerror(ret));
	}
}

void pool_dev_unregion(struct hmc_pool *p)
{
	if (p->dev_mr)
		hmc_comm_mr_dereg(p->comm, p->dev_mr);
	p->dev_mr = 0;
}

/*
 * @rank's device segment as a region we imported: its handle, or 0 where
 * its owner has none the transport takes (asked once per member).
 */
static uint32_t dev_rmr(struct hmc_pool *p, uint32_t rank)
{
	uint32_t id, h;
	struct pool_dev_req req = { .op = POOL_DEV_DESC };
	struct pool_dev_reply r = { 0 };
	uint8_t desc[HMC_MR_DESC_MAX];
	struct hmc_msg_status st;
	int ret;

	pthread_mutex_lock(&p->lock);
	h = p->dev_rmr[rank];
	pthread_mutex_unlock(&p->lock);
	if (h != POOL_RMR_UNKNOWN)
		return h == POOL_RMR_NONE ? 0 : h;
	id = __atomic_add_fetch(&p->next_id, 1, __ATOMIC_RELAXED);
	req.id = id;
	ret = hmc_comm_send(p->comm, rank, POOL_TAG_REQ, &req, sizeof(req),
			    HMC_MEM_CPU, p->timeout_ms);
	if (!ret)
		ret = hmc_comm_recv(p->comm, rank, POOL_TAG(POOL_KIND_REPLY, id),
				    &r, sizeof(r), HMC_MEM_CPU, NULL,
				    p->timeout_ms);
	if (ret)
		return 0;	/* the exchange itself fails the copy, and tells why */
	h = POOL_RMR_NONE;
	if (!r.status &&
	    !hmc_comm_recv(p->comm, rank, POOL_TAG(POOL_KIND_READ, id), desc,
			   sizeof(desc), HMC_MEM_CPU, &st, p->timeout_ms) &&
	    hmc_comm_mr_import(p->comm, rank, desc, st.len, &h))
		h = POOL_RMR_NONE;
	pthread_mutex_lock(&p->lock);
	if (p->dev_rmr[rank] == POOL_RMR_UNKNOWN)
		p->dev_rmr[rank] = h;
	pthread_mutex_unlock(&p->lock);
	return h == POOL_RMR_NONE ? 0 : h;
}

/* One-sided between region @ref of ours and @rank's device segment. */
static int dev_one_sided(struct hmc_pool *p, uint32_t rank, bool write,
			 uint64_t off, uint32_t rmr,
			 const struct pool_lref *ref, size_t len)
{
	hmc_req_t req;
	int ret;

	ret = write ? hmc_comm_put_mr_nb(p->comm, rank, ref->mr, ref->off, rmr,
					 off, len, &req) :
		      hmc_comm_get_mr_nb(p->comm, rank, ref->mr, ref->off, rmr,
					 off, len, &req);
	if (!ret)
		ret = hmc_comm_wait(p->comm, req, p->timeout_ms);
	if (!ret && write)
		ret = hmc_comm_flush(p->comm, rank);
	return ret ? owner_err(p, rank, ret) : 0;
}

int pool_dev_write(struct hmc_pool *p, uint32_t rank, uint64_t off,
		   const void *src, uint32_t src_type,
		   const struct pool_lref *ref, size_t len)
{
	uint32_t id, rmr = ref->ok ? dev_rmr(p, rank) : 0;
	struct pool_dev_req req = { .op = POOL_DEV_WRITE, .off = off,
				    .len = len };
	struct pool_dev_reply r = { 0 };
	int ret, sent;

	if (rmr)
		return dev_one_sided(p, rank, true, off, rmr, ref, len);
	id = __atomic_add_fetch(&p->next_id, 1, __ATOMIC_RELAXED);
	req.id = id;
	ret = hmc_comm_send(p->comm, rank, POOL_TAG_REQ, &req, sizeof(req),
			    HMC_MEM_CPU, p->timeout_ms);
	if (ret)
		return owner_err(p, rank, ret);
	sent = hmc_comm_send(p->comm, rank, POOL_TAG(POOL_KIND_WRITE, id), src,
			     len, (enum hmc_mem_type)src_type, p->timeout_ms);
	/* The owner's word says why it refused, so wait for it either way. */
	ret = hmc_comm_recv(p->comm, rank, POOL_TAG(POOL_KIND_REPLY, id), &r,
			    sizeof(r), HMC_MEM_CPU, NULL, p->timeout_ms);
	if (ret)
		return owner_err(p, rank, ret);
	return r.status ?: sent;
}

int pool_dev_read(struct hmc_pool *p, uint32_t rank, uint64_t off, void *dst,
		  uint32_t dst_type, const struct pool_lref *ref, size_t len)
{
	uint32_t id, rmr = ref->ok ? dev_rmr(p, rank) : 0;
	struct pool_dev_req req = { .op = POOL_DEV_READ, .off = off,
				    .len = len };
	struct pool_dev_reply r = { 0 };
	struct hmc_msg_status st;
	int ret;

	if (rmr)
		return dev_one_sided(p, rank, false, off, rmr, ref, len);
	id = __atomic_add_fetch(&p->next_id, 1, __ATOMIC_RELAXED);
	req.id = id;

	ret = hmc_comm_send(p->comm, rank, POOL_TAG_REQ, &req, sizeof(req),
			    HMC_MEM_CPU, p->timeout_ms);
	if (!ret)
		ret = hmc_comm_recv(p->comm, rank,
				    POOL_TAG(POOL_KIND_REPLY, id), &r,
				    sizeof(r), HMC_MEM_CPU, NULL,
				    p->timeout_ms);
	if (ret)
		return owner_err(p, rank, ret);
	if (r.status)
		return r.status;
	ret = hmc_comm_recv(p->comm, rank, POOL_TAG(POOL_KIND_READ, id), dst,
			    len, (enum hmc_mem_type)dst_type, &st,
			    p->timeout_ms);
	if (ret)
		return owner_err(p, rank, ret);
	return st.len == len ? 0 : -EPROTO;
}
