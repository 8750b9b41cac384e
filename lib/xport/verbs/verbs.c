// SPDX-License-Identifier: MIT
/*
 * Verbs transport: RC queue pairs over libibverbs.
 *
 * Per communicator: one device context, one protection domain, one memory
 * region for the whole ConnBuffer (its real rkey is what peers get) and one
 * completion channel, whose descriptor the progress engine sleeps on.
 *
 * Per peer: num_chs RC queue pairs ("channels") sharing one completion
 * queue, sized for every send and receive WR of all of them, and a small
 * registered area for put_signal tags. The peers exchange versioned,
 * big-endian metadata over the control plane (QP numbers, random PSNs, GID
 * or LID, MTU, READ depth, rkey, buffer address and size; see BLOB_*) and
 * both sides must use the same number of channels.
 *
 * Requests: a put or get is cut into chunks of HMC_VERBS_CHUNK bytes (1 MiB
 * by default) posted round-robin over the channels, each one signalled, so
 * every work request ends in exactly one completion. A wr_id names the
 * channel and the send-queue slot, and the slot names the request: a
 * completion can never be lost or given to another request. A request
 * completes when all its chunks have; its first error wins, and an error
 * completion also fails the peer (comm_peer_error). A full send queue is
 * back-pressure: what does not fit waits on the peer's pending list, in
 * order, and is posted from progress as completions free slots.
 *
 * Staging: a GPU buffer that the device can register neither as a dma-buf
 * nor as peer memory (vb_reg_buf says -EOPNOTSUPP) is reached through
 * bounce buffers: per peer STAGE_PER_CH registered host chunks per channel
 * (at most STAGE_MAX, chunks of at most STAGE_CHUNK_MAX bytes). A put's
 * chunk is copied from the GPU into a free one just before it is posted,
 * a get's chunk is copied to the GPU when its READ completes, before the
 * chunk counts as done; a chunk waits on the pending list while none is
 * free. So the copy of one chunk overlaps the transfer of the others, the
 * memory stays bounded, and what follows holds unchanged. Such a buffer
 * has no remote access: its metadata says so (BLOB_F_NO_REMOTE), and a
 * peer's put, get or put_signal to it fails with -EOPNOTSUPP.
 *
 * Regions (hmc_comm_mr_reg()): each is a memory region of its own in the
 * PD, with the remote rights it was registered with, and its key is its
 * address, length and rkey. A peer's key is kept on the peer (freed with
 * it). A put or get between regions is an op like any other, its WRs
 * taking the local region's lkey and the remote region's rkey and address
 * instead of the ConnBuffers'. The core refuses what the owner's
 * descriptor does not allow before a WR is posted, so that a refused
 * access costs no connection; the NIC still checks every access against
 * the owner's MR, and an access to a region gone or never granted (a
 * stale or forged key) ends in a remote access error, which fails the
 * request and the connection (-EACCES), as any error completion does.
 *
 * Ordering: a flush completes once every request posted to the peer before
 * it has completed (on RC a completion means the data was placed in the
 * peer's memory). put_signal sends its tag as a SEND behind the data: on
 * the same queue pair when the data travels on one (RC delivers in order),
 * else only after every data chunk has completed, so a tag never overtakes
 * data on another channel.
 *
 * Receive-side flow control: every channel keeps RQ_DEPTH receives posted
 * for tags and reposts each one as soon as its tag is queued for
 * hmc_comm_recv_tag(). A sender that outruns a receiver is held back by RC
 * itself (RNR NAK, retried every MIN_RNR_TIMER, RNR_RETRY = 7: without
 * limit), so no tag is dropped and no memory grows; the communicator's tag
 * queue bounds what the application has not read yet.
 *
 * A vanished peer: unacknowledged packets are resent as ACK_TIMEOUT_EXP
 * and RETRY_CNT say (see below): after about 1.9 s the work request fails
 * with a retry-exceeded error, and the peer with it. Teardown moves every
 * QP to the error state, collects the flushed completions (each request is
 * handed back with an error), then destroys QPs, CQ, the tag region's MR;
 * fini() then the buffer's MR, the channel and the PD, in that order.
 *
 * All of it runs under the transport's own lock, so any number of threads
 * may post on one communicator.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/mr.h"
#include "core/peer.h"
#include "mem/buf.h"
#include "sys/lock.h"
#include "sys/log.h"
#include "xport/verbs/verbs.h"

/*
 * Queue pair attributes, chosen on purpose:
 *  - SQ_DEPTH send WRs per QP (perftest's default tx depth) and RQ_DEPTH
 *    receives for tags, both bounded by the device;
 *  - ACK_TIMEOUT_EXP 16: 4.096 us * 2^16 = 268 ms before a packet is
 *    resent, long enough for a software RoCE peer under emulation;
 *    RETRY_CNT 6 resends (not 7, which soft-RoCE takes as "forever"): a
 *    peer that stopped answering fails within 7 * 268 ms, about 1.9 s;
 *  - MIN_RNR_TIMER 12 (0.64 ms) is what we ask senders to wait when our
 *    receive queue is empty, RNR_RETRY 7 lets them wait without limit;
 *  - at most MAX_RD_ATOMIC RDMA READs in flight per QP each way, bounded
 *    by the device and by what the peer accepts;
 *  - writes of up to MAX_INLINE bytes of host memory travel inline (the
 *    CPU copies them into the WR: it cannot read device memory).
 */
#define SQ_DEPTH		128
#define RQ_DEPTH		64
#define ACK_TIMEOUT_EXP		16
#define RETRY_CNT		6
#define MIN_RNR_TIMER		12
#define RNR_RETRY		7
#define MAX_RD_ATOMIC		16
#define MAX_INLINE		64
#define OP_CACHE		64	/* finished ops kept for reuse */
#define HOP_LIMIT		64

#define STAGE_PER_CH		2
#define STAGE_MAX		16
#define STAGE_CHUNK_MAX		(1ULL << 20)

#define CHUNK_DEFAULT		(1ULL << 20)
#define CHUNK_MAX		(1ULL << 30)
#define POLL_BATCH		32
#define DRAIN_MS		2000	/* flushed completions after QPs go to ERR */
#define CLOSE_POLL_US		100

/*
 * Metadata blob (big-endian): u8 version, u8 link (1 InfiniBand, 2
 * Ethernet), u8 active MTU (enum ibv_mtu), u8 READs we accept per QP,
 * be16 LID, be16 channels, 16 B GID, be64 buffer address, be64 buffer
 * size, be32 rkey, be32 flags (BLOB_F_*; others are refused), then per
 * channel be32 QP number and be32 first PSN. Version 2 added the flags.
 */
#define BLOB_VERSION		2
#define BLOB_HDR		48
#define BLOB_CH			8
#define LINK_IB			1
#define LINK_ETH		2
#define BLOB_F_NO_REMOTE	(1U << 0)	/* staged: address and rkey 0 */
#define BLOB_FLAGS		BLOB_F_NO_REMOTE

/* wr_id: bit 63 for receives, the channel in 32..39, a slot in 0..31. */
#define WRID_RECV		(1ULL << 63)
#define WRID(ch, slot)		((uint64_t)(ch) << 32 | (uint32_t)(slot))
#define WRID_CH(id)		((uint32_t)((id) >> 32) & 0xff)
#define WRID_SLOT(id)		((uint32_t)(id))

#define OP_SIGNAL		(REQ_AMO + 1)	/* besides enum req_op */

struct vb_ctx {
	struct hmc_comm *comm;
	struct futex_mutex lock;
	struct vb_port port;
	struct ibv_pd *pd;
	struct ibv_mr *mr;		/* NULL when staged */
	bool staged;			/* the buffer goes through bounce buffers */
	bool buf_host;			/* the buffer is host memory */
	struct ibv_comp_channel *chan;
	uint8_t *base;
	uint64_t chunk;
	struct list_node peers;
	uint32_t armed_cqs;	/* CQs that may have an event for us */
	struct list_node free_ops;	/* finished ops kept for reuse */
	uint32_t nfree_ops;
};

/* A region of ours. */
struct vb_mr {
	struct ibv_mr *mr;
	bool host;		/* host memory: the CPU may read it (inline) */
};

/* A region of a peer's, as its key says. */
struct vb_rmr {
	struct vb_rmr *next;	/* vb_peer.rmrs */
	uint64_t base;
	uint32_t rkey;
};

/* Region key (big-endian): be64 address, be64 length, be32 rkey. */
#define KEY_LEN			20

struct vb_op {
	struct req *r;
	const struct vb_mr *lmr;	/* our region, NULL: the ConnBuffer */
	const struct vb_rmr *rmr;	/* the peer's, NULL: its ConnBuffer */
	uint8_t kind;		/* enum req_op or OP_SIGNAL */
	bool tag_left;		/* put_signal: the tag is still to post */
	int pin;		/* the channel all WRs must use, or -1 */
	int status;		/* the first error */
	uint64_t loff, roff, left;	/* what is still to post */
	uint64_t tag;
	uint32_t inflight;	/* posted WRs not completed yet */
	struct list_node node;	/* vp->ops, in post order */
	struct list_node pnode;	/* vp->pending while WRs wait for room */
};

/* A posted send WR: its op and, staged, its bounce chunk and local range. */
struct vb_wr {
	struct vb_op *op;
	int32_t stage;		/* bounce chunk, or -1 */
	uint32_t len;
	uint64_t loff;
};

struct vb_chan {
	struct ibv_qp *qp;
	uint32_t psn;
	uint32_t sq_head, sq_tail;	/* send WRs posted, completed */
	struct vb_wr *ring;		/* the WR of each send slot */
};

struct vb_peer {
	struct vb_ctx *v;
	struct peer *peer;
	struct list_node node;	/* v->peers */
	struct ibv_cq *cq;
	struct ibv_mr *tag_mr;
	uint64_t *tags;		/* receive slots, then send slots */
	struct ibv_mr *stage_mr;	/* staged: the bounce chunks */
	uint8_t *stage;
	uint32_t *stage_free;	/* free chunks, a stack */
	uint32_t nstage, nstage_free;
	uint32_t nch, sq_depth, rq_depth, max_inline;
	struct vb_chan *ch;
	uint32_t rr;		/* next channel, round-robin */
	uint8_t rd_atomic;	/* READs we accept per QP */
	bool armed;		/* the CQ will raise an event (see set_armed) */
	bool connected, closing;
	int error;
	struct list_node ops;
	struct list_node pending;
	uint64_t rbase, rsize;
	uint32_t rkey;
	bool no_remote;		/* the peer's buffer is staged */
	struct vb_rmr *rmrs;	/* imported regions, under v->lock */
};

static const char *vb_dev_name(const struct vb_ctx *v)
{
	return ibv_get_device_name(v->port.dev->device);
}

/*
 * A CQ is armed from ibv_req_notify_cq() until we read the one event it
 * raises; with none armed the channel holds no event and progress need
 * not ask it (a system call) on every poll.
 */
static void set_armed(struct vb_peer *vp, bool armed)
{
	if (vp->armed != armed) {
		vp->armed = armed;
		if (armed)
			vp->v->armed_cqs++;
		else
			vp->v->armed_cqs--;
	}
}

/* Teardown calls return an errno; they should never fail, but say so. */
static void warn_on(int rc, const char *what)
{
	if (rc)
		pr_warn("verbs: %s: %s", what, hmc_strerror(-rc));
}

/* --------------------------------------------------------- init, fini */

static uint64_t chunk_from_env(void)
{
	const char *env = getenv("HMC_VERBS_CHUNK");
	unsigned long long v;
	char *end;

	if (!env || !*env)
		return CHUNK_DEFAULT;
	errno = 0;
	v = strtoull(env, &end, 0);
	if (errno || *end || !v || v > CHUNK_MAX) {
		pr_info("verbs: HMC_VERBS_CHUNK='%s' is not 1..%llu bytes: using %llu",
			env, CHUNK_MAX, CHUNK_DEFAULT);
		return CHUNK_DEFAULT;
	}
	return v;
}

static void vb_fini(void *ctx)
{
	struct vb_ctx *v = ctx;

	if (v->mr)
		warn_on(ibv_dereg_mr(v->mr), "ibv_dereg_mr");
	if (v->chan)
		warn_on(ibv_destroy_comp_channel(v->chan),
			"ibv_destroy_comp_channel");
	if (v->pd)
		warn_on(ibv_dealloc_pd(v->pd), "ibv_dealloc_pd");
	if (v->port.dev)
		warn_on(ibv_close_device(v->port.dev), "ibv_close_device");
	while (!list_empty(&v->free_ops)) {
		struct list_node *n = v->free_ops.next;

		list_del(n);
		free(container_of(n, struct vb_op, node));
	}
	free(v);
}

static int vb_init(struct hmc_comm *comm, void **ctx)
{
	struct vb_ctx *v = calloc(1, sizeof(*v));
	char where[64], how[64];
	int rc, fl;

	if (!v)
		return -ENOMEM;
	v->comm = comm;
	list_init(&v->peers);
	list_init(&v->free_ops);
	rc = vb_port_open(comm->ib_dev, comm->ib_port, &v->port);
	if (rc)
		goto err;
	v->pd = ibv_alloc_pd(v->port.dev);
	if (!v->pd) {
		rc = errno ? -errno : -ENOMEM;
		goto err;
	}
	v->chan = ibv_create_comp_channel(v->port.dev);
	if (!v->chan) {
		rc = errno ? -errno : -ENOMEM;
		goto err;
	}
	fl = fcntl(v->chan->fd, F_GETFL);
	if (fl < 0 || fcntl(v->chan->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		rc = -errno;
		goto err;
	}
	v->mr = vb_reg_buf(&v->port, v->pd, comm->buf, &rc);
	if (!v->mr) {
		if (rc != -EOPNOTSUPP ||
		    hmc_buf_mem_type(comm->buf) == HMC_MEM_CPU)
			goto err;
		v->staged = true;
	}
	v->base = hmc_buf_ptr(comm->buf);
	v->buf_host = hmc_buf_mem_type(comm->buf) == HMC_MEM_CPU;
	v->chunk = chunk_from_env();
	if (v->chunk > v->port.max_msg_sz)
		v->chunk = v->port.max_msg_sz;
	if (v->staged && v->chunk > STAGE_CHUNK_MAX)
		v->chunk = STAGE_CHUNK_MAX;
	if (v->port.roce)
		snprintf(where, sizeof(where), "RoCE GID index %d",
			 v->port.gid_index);
	else
		snprintf(where, sizeof(where), "InfiniBand LID %u", v->port.lid);
	if (v->staged)
		snprintf(how, sizeof(how),
			 "staged through host memory: no remote access to it");
	else
		snprintf(how, sizeof(how), "registered (rkey 0x%x)",
			 v->mr->rkey);
	pr_debug("verbs: rank %u: %s port %u, %s, MTU %d, chunk %llu B, %zu-byte %s buffer %s",
		 comm->rank, vb_dev_name(v), v->port.num, where,
		 128 << v->port.mtu, (unsigned long long)v->chunk,
		 hmc_buf_size(comm->buf),
		 hmc_buf_mem_type(comm->buf) == HMC_MEM_CPU ?
		 hmc_buf_backing_name(hmc_buf_backing(comm->buf)) :
		 hmc_mem_type_name(hmc_buf_mem_type(comm->buf)), how);
	*ctx = v;
	return 0;
err:
	vb_fini(v);
	return rc;
}

/*
 * AUTO: whether our port reaches the peer behind the TCP control socket
 * @fd. On RoCE, the GID we talk through must be the address that control
 * connection leaves from: the port then sits on the interface that reaches
 * the peer (an rxe on another interface, or loopback control, says
 * nothing about it). InfiniBand has no such address: an active port is
 * taken as reaching.
 */
static int vb_reaches(void *ctx, int fd)
{
	struct vb_ctx *v = ctx;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	uint8_t want[16] = { 0 };

	if (!v->port.roce)
		return 0;
	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return -errno;
	if (ss.ss_family == AF_INET) {
		want[10] = want[11] = 0xff;	/* the v4-mapped GID */
		memcpy(want + 12, &((struct sockaddr_in *)&ss)->sin_addr, 4);
	} else if (ss.ss_family == AF_INET6) {
		memcpy(want, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
	} else {
		return -ENETUNREACH;
	}
	if (memcmp(want, v->port.gid.raw, sizeof(want))) {
		pr_debug("verbs: rank %u: %s's GID is not the control connection's address: not for AUTO",
			 v->comm->rank, vb_dev_name(v));
		return -ENETUNREACH;
	}
	return 0;
}

/* ------------------------------------------------------ requests */

static bool chan_has_room(const struct vb_peer *vp, const struct vb_chan *ch)
{
	return ch->sq_head - ch->sq_tail < vp->sq_depth;
}

/* Whether @op has a WR that may go now, room permitting. */
static bool op_wants(const struct vb_op *op)
{
	return op->left || (op->tag_left && (op->pin >= 0 || !op->inflight));
}

/*
 * A zeroed op. Finished ops are kept for the next posts (up to OP_CACHE):
 * a put should not cost a malloc and a free. Lock held.
 */
static __hot struct vb_op *op_get(struct vb_ctx *v)
{
	struct vb_op *op;

	if (list_empty(&v->free_ops))
		return calloc(1, sizeof(*op));
	/* the last one put back: its memory is the likeliest to be cached */
	op = container_of(v->free_ops.prev, struct vb_op, node);
	list_del(&op->node);
	v->nfree_ops--;
	memset(op, 0, sizeof(*op));
	return op;
}

static __hot void op_put(struct vb_ctx *v, struct vb_op *op)
{
	if (v->nfree_ops >= OP_CACHE) {
		free(op);
		return;
	}
	list_add_tail(&v->free_ops, &op->node);
	v->nfree_ops++;
}

/*
 * Hand @op back and take it off the peer; flushes that waited only for it
 * (and whatever came before it) complete too.
 */
static __hot void op_finish(struct vb_peer *vp, struct vb_op *op)
{
	struct vb_op *head;

	list_del(&op->node);
	list_del(&op->pnode);	/* a no-op unless it still waited for room */
	req_complete(op->r, op->status);
	op_put(vp->v, op);
	while (!list_empty(&vp->ops)) {
		head = container_of(vp->ops.next, struct vb_op, node);
		if (head->kind != REQ_FLUSH)
			break;
		list_del(&head->node);
		req_complete(head->r, vp->error);
		op_put(vp->v, head);
	}
}

static __hot void op_maybe_finish(struct vb_peer *vp, struct vb_op *op)
{
	if (!op->left && !op->tag_left && !op->inflight)
		op_finish(vp, op);
}

/* Nothing more of @op will be posted; it ends with @err. */
static void op_abort(struct vb_op *op, int err)
{
	op->left = 0;
	op->tag_left = false;
	if (!op->status)
		op->status = err;
}

/* Fail everything that still waits to be posted. */
static void fail_pending(struct vb_peer *vp, int err)
{
	struct list_node *n, *tmp;

	list_for_each_safe(n, tmp, &vp->pending) {
		struct vb_op *op = container_of(n, struct vb_op, pnode);

		list_del(n);
		op_abort(op, err);
		op_maybe_finish(vp, op);
	}
}

/* The peer is broken: fail it, once, and everything not yet posted. */
static void peer_fail(struct vb_peer *vp, int err)
{
	if (vp->error)
		return;
	vp->error = err;
	if (!vp->closing) {
		pr_info("verbs: rank %u: rank %u failed: %s", vp->v->comm->rank,
			vp->peer->rank, hmc_strerror(err));
		comm_peer_error(vp->v->comm, vp->peer, err);
	}
	fail_pending(vp, err);
}

static uint8_t *stage_at(const struct vb_peer *vp, int32_t stage)
{
	return vp->stage + (size_t)stage * vp->v->chunk;
}

/* Copy between the staged buffer at @loff and bounce chunk @stage. */
static int stage_copy(struct vb_peer *vp, int32_t stage, uint64_t loff,
		      uint32_t len, bool to_buf)
{
	struct hmc_buf *buf = vp->v->comm->buf;
	uint8_t *at = vp->v->base + loff, *bounce = stage_at(vp, stage);
	int rc;

	rc = hmc_mem_copy(hmc_buf_mem_type(buf), hmc_buf_device(buf),
			  to_buf ? at : bounce, to_buf ? bounce : at, len,
			  to_buf ? HMC_COPY_H2D : HMC_COPY_D2H);
	if (rc)
		pr_info("verbs: rank %u: staging %u bytes %s the %s buffer: %s",
			vp->v->comm->rank, len, to_buf ? "into" : "out of",
			hmc_mem_type_name(hmc_buf_mem_type(buf)),
			hmc_strerror(rc));
	return rc;
}

/*
 * Post one WR of @op on channel @c: a chunk of data (from or into bounce
 * chunk @stage when staged, else -1), or the tag.
 */
static __hot int post_wr(struct vb_peer *vp, uint32_t c, struct vb_op *op,
			 uint32_t len, int32_t stage)
{
	struct vb_ctx *v = vp->v;
	struct vb_chan *ch = &vp->ch[c];
	uint32_t slot = ch->sq_head % vp->sq_depth;
	struct ibv_send_wr wr = {
		.wr_id = WRID(c, ch->sq_head),
		.num_sge = 1,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_sge sge;
	int rc;

	wr.sg_list = &sge;
	if (!len) {
		uint64_t *t = &vp->tags[vp->nch * vp->rq_depth +
					c * vp->sq_depth + slot];

		put_be64((uint8_t *)t, op->tag);
		sge = (struct ibv_sge){ (uintptr_t)t, sizeof(*t),
					vp->tag_mr->lkey };
		wr.opcode = IBV_WR_SEND;
	} else {
		if (stage >= 0)
			sge = (struct ibv_sge){ (uintptr_t)stage_at(vp, stage),
						len, vp->stage_mr->lkey };
		else if (op->lmr)
			sge = (struct ibv_sge){
				(uintptr_t)op->lmr->mr->addr + op->loff, len,
				op->lmr->mr->lkey };
		else
			sge = (struct ibv_sge){ (uintptr_t)(v->base + op->loff),
						len, v->mr->lkey };
		wr.opcode = op->kind == REQ_GET ? IBV_WR_RDMA_READ :
						  IBV_WR_RDMA_WRITE;
		if (op->rmr) {
			wr.wr.rdma.remote_addr = op->rmr->base + op->roff;
			wr.wr.rdma.rkey = op->rmr->rkey;
		} else {
			wr.wr.rdma.remote_addr = vp->rbase + op->roff;
			wr.wr.rdma.rkey = vp->rkey;
		}
		/* inline data is read by the CPU: never from device memory */
		if (op->kind != REQ_GET && len <= vp->max_inline &&
		    (stage >= 0 || (op->lmr ? op->lmr->host : v->buf_host)))
			wr.send_flags |= IBV_SEND_INLINE;
	}
	rc = ibv_post_send(ch->qp, &wr, &bad);
	if (rc)
		return -rc;
	ch->ring[slot] = (struct vb_wr){ op, stage, len, op->loff };
	ch->sq_head++;
	op->inflight++;
	return 0;
}

/* A channel with a free send slot for @op, or -1. */
static __hot int pick_chan(struct vb_peer *vp, const struct vb_op *op)
{
	uint32_t i, c;

	if (op->pin >= 0)
		return chan_has_room(vp, &vp->ch[op->pin]) ? op->pin : -1;
	for (i = 0; i < vp->nch; i++) {
		c = (vp->rr + i) % vp->nch;
		if (chan_has_room(vp, &vp->ch[c])) {
			vp->rr = c + 1;
			return (int)c;
		}
	}
	return -1;
}

/*
 * Post what fits of @op: 0, -EAGAIN when out of room or bounce chunks, or
 * a post error. A put's chunk that cannot be staged ends @op, not the peer.
 */
static __hot int op_push(struct vb_peer *vp, struct vb_op *op)
{
	int32_t stage;
	uint32_t len;
	int c, rc;

	while (op_wants(op)) {
		c = pick_chan(vp, op);
		if (c < 0)
			return -EAGAIN;
		len = (uint32_t)min_t(uint64_t, op->left, vp->v->chunk);
		stage = -1;
		if (len && vp->v->staged && !op->lmr) {
			if (!vp->nstage_free)
				return -EAGAIN;
			stage = (int32_t)vp->stage_free[vp->nstage_free - 1];
			rc = op->kind == REQ_GET ? 0 :
			     stage_copy(vp, stage, op->loff, len, false);
			if (rc) {
				op_abort(op, rc);
				return 0;
			}
		}
		rc = post_wr(vp, (uint32_t)c, op, len, stage);
		if (rc)
			return rc;
		if (stage >= 0)
			vp->nstage_free--;
		if (len) {
			op->loff += len;
			op->roff += len;
			op->left -= len;
		} else {
			op->tag_left = false;
		}
	}
	return 0;
}

/* Post waiting ops in order while there is room. */
static __hot void push_pending(struct vb_peer *vp)
{
	struct list_node *n, *tmp;
	int rc;

	list_for_each_safe(n, tmp, &vp->pending) {
		struct vb_op *op = container_of(n, struct vb_op, pnode);

		rc = op_push(vp, op);
		if (rc == -EAGAIN) {
			if (op->pin < 0)	/* every channel is full */
				return;
			continue;
		}
		list_del(n);
		if (!rc) {
			op_maybe_finish(vp, op);	/* ended while staging */
			continue;
		}
		pr_info("verbs: rank %u: ibv_post_send to rank %u: %s",
			vp->v->comm->rank, vp->peer->rank, hmc_strerror(rc));
		op_abort(op, rc);
		op_maybe_finish(vp, op);
		peer_fail(vp, rc);
		return;
	}
}

static int wc_errno(const struct vb_peer *vp, enum ibv_wc_status st)
{
	switch (st) {
	case IBV_WC_WR_FLUSH_ERR:	/* the QP failed before */
		return vp->error ? vp->error : -ECONNRESET;
	case IBV_WC_RETRY_EXC_ERR:	/* no answer within the retries */
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return -ECONNRESET;
	case IBV_WC_REM_ACCESS_ERR:
		return -EACCES;
	case IBV_WC_LOC_LEN_ERR:
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_LOC_ACCESS_ERR:
		return -EFAULT;
	case IBV_WC_REM_INV_REQ_ERR:
	case IBV_WC_BAD_RESP_ERR:
		return -EPROTO;
	default:
		return -EIO;
	}
}

static __hot void send_done(struct vb_peer *vp, const struct ibv_wc *wc)
{
	uint32_t c = WRID_CH(wc->wr_id);
	struct vb_chan *ch;
	struct vb_op *op;
	struct vb_wr wr;
	int err;

	if (c >= vp->nch || WRID_SLOT(wc->wr_id) != vp->ch[c].sq_tail) {
		/* RC completes a send queue in order: this cannot happen */
		pr_err("verbs: rank %u: completion 0x%llx from rank %u out of order",
		       vp->v->comm->rank, (unsigned long long)wc->wr_id,
		       vp->peer->rank);
		peer_fail(vp, -EPROTO);
		return;
	}
	ch = &vp->ch[c];
	wr = ch->ring[ch->sq_tail % vp->sq_depth];
	ch->sq_tail++;
	op = wr.op;
	op->inflight--;
	if (wr.stage >= 0) {
		/* a staged get's chunk is done once it is in the buffer */
		if (wc->status == IBV_WC_SUCCESS && op->kind == REQ_GET) {
			err = stage_copy(vp, wr.stage, wr.loff, wr.len, true);
			if (err)
				op_abort(op, err);
		}
		vp->stage_free[vp->nstage_free++] = (uint32_t)wr.stage;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		err = wc_errno(vp, wc->status);
		if (wc->status != IBV_WC_WR_FLUSH_ERR)
			pr_info("verbs: rank %u: work request to rank %u failed: %s (vendor error 0x%x)",
				vp->v->comm->rank, vp->peer->rank,
				ibv_wc_status_str(wc->status), wc->vendor_err);
		op_abort(op, err);
		peer_fail(vp, err);
	}
	/* a striped put_signal's tag goes once all its data has landed */
	if (op_wants(op) && list_empty(&op->pnode))
		list_add_tail(&vp->pending, &op->pnode);
	op_maybe_finish(vp, op);
}

static int post_recv(struct vb_peer *vp, uint32_t c, uint32_t i)
{
	uint64_t *slot = &vp->tags[c * vp->rq_depth + i];
	struct ibv_sge sge = { (uintptr_t)slot, sizeof(*slot), vp->tag_mr->lkey };
	struct ibv_recv_wr wr = {
		.wr_id = WRID_RECV | WRID(c, i),
		.sg_list = &sge,
		.num_sge = 1,
	}, *bad;

	return -ibv_post_recv(vp->ch[c].qp, &wr, &bad);
}

static void recv_done(struct vb_peer *vp, const struct ibv_wc *wc)
{
	uint32_t c = WRID_CH(wc->wr_id), i = WRID_SLOT(wc->wr_id);
	int rc;

	if (wc->status == IBV_WC_WR_FLUSH_ERR)
		return;
	if (wc->status != IBV_WC_SUCCESS) {
		pr_info("verbs: rank %u: receive from rank %u failed: %s",
			vp->v->comm->rank, vp->peer->rank,
			ibv_wc_status_str(wc->status));
		peer_fail(vp, wc_errno(vp, wc->status));
		return;
	}
	if (c >= vp->nch || i >= vp->rq_depth || wc->opcode != IBV_WC_RECV ||
	    wc->byte_len != sizeof(uint64_t)) {
		pr_warn("verbs: rank %u: a %u-byte message from rank %u is no tag",
			vp->v->comm->rank, wc->byte_len, vp->peer->rank);
		peer_fail(vp, -EPROTO);
		return;
	}
	/* RC placed the data before this SEND: the tag may be seen */
	comm_deliver_tag(vp->v->comm, vp->peer,
			 get_be64((uint8_t *)&vp->tags[c * vp->rq_depth + i]));
	if (vp->closing)
		return;
	rc = post_recv(vp, c, i);
	if (rc)
		peer_fail(vp, rc);
}

/* Handle what @vp's CQ has: completions, or a negative errno. */
static __hot int poll_peer(struct vb_peer *vp)
{
	struct ibv_wc wc[POLL_BATCH];
	int i, n, total = 0;

	do {
		n = ibv_poll_cq(vp->cq, POLL_BATCH, wc);
		if (n < 0) {
			pr_err("verbs: rank %u: ibv_poll_cq for rank %u failed",
			       vp->v->comm->rank, vp->peer->rank);
			peer_fail(vp, -EIO);
			return -EIO;
		}
		for (i = 0; i < n; i++) {
			if (wc[i].wr_id & WRID_RECV)
				recv_done(vp, &wc[i]);
			else
				send_done(vp, &wc[i]);
		}
		total += n;
	} while (n == POLL_BATCH);
	if (total && !list_empty(&vp->pending))
		push_pending(vp);
	return total;
}

/* ------------------------------------------------------------ peers */

static int create_qp(struct vb_ctx *v, struct vb_peer *vp, struct vb_chan *ch)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = vp->cq,
		.recv_cq = vp->cq,
		.cap = {
			.max_send_wr = vp->sq_depth,
			.max_recv_wr = vp->rq_depth,
			.max_send_sge = 1,
			.max_recv_sge = 1,
			.max_inline_data = MAX_INLINE,
		},
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = v->port.num,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ,
	};
	int rc;

	ch->qp = ibv_create_qp(v->pd, &ia);
	if (!ch->qp) {	/* a device without inline data */
		ia.cap.max_inline_data = 0;
		ch->qp = ibv_create_qp(v->pd, &ia);
	}
	if (!ch->qp)
		return errno ? -errno : -ENOMEM;
	if (ia.cap.max_inline_data < vp->max_inline)
		vp->max_inline = ia.cap.max_inline_data;
	rc = ibv_modify_qp(ch->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			   IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (rc)
		return -rc;
	if (getrandom(&ch->psn, sizeof(ch->psn), 0) != sizeof(ch->psn))
		return -errno;
	ch->psn &= 0xffffff;
	ch->ring = calloc(vp->sq_depth, sizeof(*ch->ring));
	return ch->ring ? 0 : -ENOMEM;
}

/* Destroy the QPs, then the CQ they use; @vp may be half built. */
static void destroy_qps(struct vb_peer *vp)
{
	uint32_t c;

	for (c = 0; vp->ch && c < vp->nch; c++) {
		if (vp->ch[c].qp)
			warn_on(ibv_destroy_qp(vp->ch[c].qp), "ibv_destroy_qp");
		vp->ch[c].qp = NULL;
	}
	if (vp->cq)
		warn_on(ibv_destroy_cq(vp->cq), "ibv_destroy_cq");
	vp->cq = NULL;
}

/* QPs, CQ, then the tag and bounce MRs, and the memory. */
static void free_peer(struct vb_peer *vp)
{
	uint32_t c;

	destroy_qps(vp);
	for (c = 0; vp->ch && c < vp->nch; c++)
		free(vp->ch[c].ring);
	if (vp->tag_mr)
		warn_on(ibv_dereg_mr(vp->tag_mr), "ibv_dereg_mr");
	if (vp->stage_mr)
		warn_on(ibv_dereg_mr(vp->stage_mr), "ibv_dereg_mr");
	while (vp->rmrs) {
		struct vb_rmr *rm = vp->rmrs;

		vp->rmrs = rm->next;
		free(rm);
	}
	free(vp->tags);
	free(vp->stage);
	free(vp->stage_free);
	free(vp->ch);
	free(vp);
}

/* Staged: the registered bounce chunks, all free. */
static int stage_alloc(struct vb_peer *vp)
{
	struct vb_ctx *v = vp->v;
	uint32_t i;

	vp->nstage = min_t(uint32_t, vp->nch * STAGE_PER_CH, STAGE_MAX);
	vp->stage = aligned_alloc(64, (size_t)vp->nstage * v->chunk);
	vp->stage_free = calloc(vp->nstage, sizeof(*vp->stage_free));
	if (!vp->stage || !vp->stage_free)
		return -ENOMEM;
	vp->stage_mr = ibv_reg_mr(v->pd, vp->stage,
				  (size_t)vp->nstage * v->chunk,
				  IBV_ACCESS_LOCAL_WRITE);
	if (!vp->stage_mr)
		return errno ? -errno : -ENOMEM;
	for (i = 0; i < vp->nstage; i++)
		vp->stage_free[i] = vp->nstage - 1 - i;
	vp->nstage_free = vp->nstage;
	return 0;
}

static int vb_peer_create(void *ctx, struct peer *peer, void **xpeer)
{
	struct vb_ctx *v = ctx;
	struct ibv_device_attr *da = &v->port.attr;
	struct vb_peer *vp = calloc(1, sizeof(*vp));
	uint32_t c, i, ncqe;
	size_t tag_bytes;
	int rc;

	if (!vp)
		return -ENOMEM;
	vp->v = v;
	vp->peer = peer;
	vp->nch = v->comm->num_chs;
	list_init(&vp->ops);
	list_init(&vp->pending);
	list_init(&vp->node);
	vp->sq_depth = min_t(uint32_t, SQ_DEPTH, da->max_qp_wr);
	vp->rq_depth = min_t(uint32_t, RQ_DEPTH, da->max_qp_wr);
	ncqe = vp->nch * (vp->sq_depth + vp->rq_depth);
	if (vp->nch > HMC_VERBS_MAX_CHANNELS || !vp->nch ||
	    ncqe > (uint32_t)da->max_cqe) {
		pr_info("verbs: %u channels of %u+%u WRs need %u CQEs; %s has %d",
			vp->nch, vp->sq_depth, vp->rq_depth, ncqe,
			vb_dev_name(v), da->max_cqe);
		free(vp);
		return -EINVAL;
	}
	vp->rd_atomic = (uint8_t)min_t(int, MAX_RD_ATOMIC, da->max_qp_rd_atom);
	vp->max_inline = MAX_INLINE;

	rc = -ENOMEM;
	tag_bytes = (size_t)vp->nch * (vp->rq_depth + vp->sq_depth) *
		    sizeof(uint64_t);
	vp->ch = calloc(vp->nch, sizeof(*vp->ch));
	vp->tags = aligned_alloc(64, tag_bytes);
	if (!vp->ch || !vp->tags)
		goto err;
	vp->tag_mr = ibv_reg_mr(v->pd, vp->tags, tag_bytes,
				IBV_ACCESS_LOCAL_WRITE);
	vp->cq = vp->tag_mr ? ibv_create_cq(v->port.dev, (int)ncqe, vp,
					    v->chan, 0) : NULL;
	if (!vp->cq) {
		rc = errno ? -errno : -ENOMEM;
		goto err;
	}
	if (v->staged) {
		rc = stage_alloc(vp);
		if (rc)
			goto err;
	}
	/*
	 * Armed from the start: the core may already sleep on an armed
	 * transport, and the first completion here must wake it.
	 */
	rc = -ibv_req_notify_cq(vp->cq, 0);
	if (rc)
		goto err;
	for (c = 0; c < vp->nch; c++) {
		rc = create_qp(v, vp, &vp->ch[c]);
		for (i = 0; !rc && i < vp->rq_depth; i++)
			rc = post_recv(vp, c, i);
		if (rc)
			goto err;
	}
	futex_mutex_lock(&v->lock);
	list_add_tail(&v->peers, &vp->node);
	set_armed(vp, true);
	futex_mutex_unlock(&v->lock);
	*xpeer = vp;
	return 0;
err:
	pr_info("verbs: rank %u: resources for rank %u: %s", v->comm->rank,
		peer->rank, hmc_strerror(rc));
	free_peer(vp);
	return rc;
}

static int vb_peer_info(void *ctx, void *xpeer, uint8_t *blob, uint32_t cap,
			uint32_t *len)
{
	struct vb_peer *vp = xpeer;
	struct vb_ctx *v = ctx;
	uint32_t c, need = BLOB_HDR + vp->nch * BLOB_CH;

	if (need > cap)
		return -EMSGSIZE;
	blob[0] = BLOB_VERSION;
	blob[1] = v->port.roce ? LINK_ETH : LINK_IB;
	blob[2] = (uint8_t)v->port.mtu;
	blob[3] = vp->rd_atomic;
	put_be16(blob + 4, v->port.lid);
	put_be16(blob + 6, (uint16_t)vp->nch);
	memcpy(blob + 8, v->port.gid.raw, 16);
	put_be64(blob + 24, v->staged ? 0 : (uint64_t)(uintptr_t)v->base);
	put_be64(blob + 32, hmc_buf_size(v->comm->buf));
	put_be32(blob + 40, v->staged ? 0 : v->mr->rkey);
	put_be32(blob + 44, v->staged ? BLOB_F_NO_REMOTE : 0);
	for (c = 0; c < vp->nch; c++) {
		put_be32(blob + BLOB_HDR + c * BLOB_CH, vp->ch[c].qp->qp_num);
		put_be32(blob + BLOB_HDR + c * BLOB_CH + 4, vp->ch[c].psn);
	}
	*len = need;
	return 0;
}

/* INIT -> RTR -> RTS for channel @c toward the peer's QP @qpn/@psn. */
static int connect_qp(struct vb_ctx *v, struct vb_peer *vp, struct vb_chan *ch,
		      const uint8_t *blob, uint32_t qpn, uint32_t psn,
		      uint8_t peer_rd)
{
	enum ibv_mtu mtu = min_t(enum ibv_mtu, v->port.mtu, blob[2]);
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = mtu,
		.dest_qp_num = qpn,
		.rq_psn = psn,
		.max_dest_rd_atomic = vp->rd_atomic,
		.min_rnr_timer = MIN_RNR_TIMER,
		.ah_attr = {
			.port_num = v->port.num,
			.dlid = get_be16(blob + 4),
		},
	};
	int rc;

	/* RoCE needs a GRH; InfiniBand one only across subnets */
	if (v->port.roce || memcmp(blob + 8, v->port.gid.raw, 8)) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, blob + 8, 16);
		a.ah_attr.grh.sgid_index = (uint8_t)v->port.gid_index;
		a.ah_attr.grh.hop_limit = HOP_LIMIT;
	}
	rc = ibv_modify_qp(ch->qp, &a, IBV_QP_STATE | IBV_QP_AV |
			   IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (rc)
		return -rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = ACK_TIMEOUT_EXP;
	a.retry_cnt = RETRY_CNT;
	a.rnr_retry = RNR_RETRY;
	a.sq_psn = ch->psn;
	a.max_rd_atomic = (uint8_t)min_t(int, peer_rd,
					 min_t(int, MAX_RD_ATOMIC,
					       v->port.attr.max_qp_init_rd_atom));
	rc = ibv_modify_qp(ch->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			   IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			   IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	return -rc;
}

static int vb_peer_connect(void *ctx, void *xpeer, const uint8_t *blob,
			   uint32_t len)
{
	struct vb_peer *vp = xpeer;
	struct vb_ctx *v = ctx;
	uint32_t c, nch, qpn, psn;
	int rc;

	if (len < BLOB_HDR)
		return -EPROTO;
	if (blob[0] != BLOB_VERSION) {
		pr_info("verbs: rank %u speaks metadata version %u, we %u",
			vp->peer->rank, blob[0], BLOB_VERSION);
		return -EPROTONOSUPPORT;
	}
	nch = get_be16(blob + 6);
	if (nch != vp->nch) {
		pr_info("verbs: rank %u uses %u channels, rank %u %u: both sides must set the same num_chs",
			vp->peer->rank, nch, v->comm->rank, vp->nch);
		return -EINVAL;
	}
	if (len != BLOB_HDR + nch * BLOB_CH || blob[2] < IBV_MTU_256 ||
	    blob[2] > IBV_MTU_4096 || !blob[3] ||
	    (get_be32(blob + 44) & ~BLOB_FLAGS))
		return -EPROTO;
	if (blob[1] != (v->port.roce ? LINK_ETH : LINK_IB)) {
		pr_info("verbs: rank %u is on %s, we are on %s",
			vp->peer->rank, blob[1] == LINK_ETH ? "Ethernet" :
			"InfiniBand", v->port.roce ? "Ethernet" : "InfiniBand");
		return -ENETUNREACH;
	}
	vp->rbase = get_be64(blob + 24);
	vp->rsize = get_be64(blob + 32);
	vp->rkey = get_be32(blob + 40);
	vp->no_remote = get_be32(blob + 44) & BLOB_F_NO_REMOTE;
	for (c = 0; c < nch; c++) {
		qpn = get_be32(blob + BLOB_HDR + c * BLOB_CH);
		psn = get_be32(blob + BLOB_HDR + c * BLOB_CH + 4);
		if (qpn > 0xffffff || psn > 0xffffff)
			return -EPROTO;
		rc = connect_qp(v, vp, &vp->ch[c], blob, qpn, psn, blob[3]);
		if (rc) {
			pr_info("verbs: rank %u: bringing up channel %u to rank %u: %s",
				v->comm->rank, c, vp->peer->rank,
				hmc_strerror(rc));
			return rc;
		}
	}
	futex_mutex_lock(&v->lock);
	vp->connected = true;
	futex_mutex_unlock(&v->lock);
	return 0;
}

/* Poll @vp until @done holds or @deadline passes, letting others in. */
static void poll_until(struct vb_peer *vp, bool (*done)(struct vb_peer *),
		       int64_t deadline)
{
	struct vb_ctx *v = vp->v;

	for (;;) {
		poll_peer(vp);
		if (done(vp) || deadline_passed(deadline))
			return;
		futex_mutex_unlock(&v->lock);
		usleep(CLOSE_POLL_US);
		futex_mutex_lock(&v->lock);
	}
}

static bool no_ops(struct vb_peer *vp)
{
	return list_empty(&vp->ops) || vp->error;
}

static bool sends_drained(struct vb_peer *vp)
{
	uint32_t c;

	for (c = 0; c < vp->nch; c++)
		if (vp->ch[c].sq_head != vp->ch[c].sq_tail)
			return false;
	return true;
}

static void vb_peer_destroy(void *ctx, void *xpeer, bool graceful,
			    int64_t deadline)
{
	struct ibv_qp_attr err_state = { .qp_state = IBV_QPS_ERR };
	struct vb_peer *vp = xpeer;
	struct vb_ctx *v = ctx;
	uint32_t c;
	int err;

	futex_mutex_lock(&v->lock);
	vp->closing = true;	/* posts fail from now on */
	if (graceful)
		poll_until(vp, no_ops, deadline);
	err = vp->error ? vp->error : graceful ? -ENOTCONN : -ECONNRESET;
	peer_fail(vp, err);

	/* Every WR still queued comes back flushed, with its request. */
	for (c = 0; c < vp->nch; c++)
		warn_on(ibv_modify_qp(vp->ch[c].qp, &err_state, IBV_QP_STATE),
			"QP to the error state");
	poll_until(vp, sends_drained, deadline_after_ms(DRAIN_MS));
	if (!sends_drained(vp))
		pr_warn("verbs: rank %u: %s did not flush every WR to rank %u within %d ms",
			v->comm->rank, vb_dev_name(v), vp->peer->rank, DRAIN_MS);
	/*
	 * Under the lock nobody else polls or reads events of this CQ; once
	 * QPs and CQ are gone, no completion can refer to an op.
	 */
	list_del(&vp->node);
	set_armed(vp, false);	/* its event, if any, goes with the CQ */
	destroy_qps(vp);
	while (!list_empty(&vp->ops)) {
		struct vb_op *op = container_of(vp->ops.next, struct vb_op,
						node);

		op_abort(op, err);
		op->inflight = 0;
		op_finish(vp, op);
	}
	futex_mutex_unlock(&v->lock);
	free_peer(vp);
}

/* ------------------------------------------------------------ posting */

/*
 * Post @kind of @len bytes between @loff of our region @lmr (NULL: the
 * ConnBuffer) and @roff of the peer's @rmr (NULL: its ConnBuffer).
 */
static __hot int post_op(struct vb_ctx *v, struct vb_peer *vp, struct req *r,
			 int kind, const struct vb_mr *lmr, uint64_t loff,
			 const struct vb_rmr *rmr, uint64_t roff, uint64_t len,
			 uint64_t tag)
{
	struct vb_op *op;
	int rc = 0, reaped = 0;

	futex_mutex_lock(&v->lock);
	op = op_get(v);
	if (!op) {
		futex_mutex_unlock(&v->lock);
		return -ENOMEM;
	}
	op->r = r;
	op->kind = (uint8_t)kind;
	op->lmr = lmr;
	op->rmr = rmr;
	op->loff = loff;
	op->roff = roff;
	op->left = kind == REQ_FLUSH ? 0 : len;
	op->tag = tag;
	op->tag_left = kind == OP_SIGNAL;
	op->pin = -1;
	list_init(&op->pnode);

	if (vp->error || vp->closing || !vp->connected) {
		rc = vp->error ? vp->error : -ENOTCONN;
		goto err;
	}
	/* the core checked a region's range and rights against its key */
	if (!rmr && kind != REQ_FLUSH && range_check(vp->rsize, roff, len)) {
		rc = -ERANGE;
		goto err;
	}
	if (kind != REQ_FLUSH && !rmr && vp->no_remote) {
		pr_debug("verbs: rank %u: rank %u's ConnBuffer is GPU memory its RDMA device cannot reach (staged through host memory): no put, get or put_signal to it",
			 v->comm->rank, vp->peer->rank);
		rc = -EOPNOTSUPP;
		goto err;
	}
	/* one QP carries a put_signal whose data fits on it: tag behind it */
	if (kind == OP_SIGNAL && (vp->nch == 1 || len <= v->chunk))
		op->pin = (int)(vp->rr++ % vp->nch);
	list_add_tail(&vp->ops, &op->node);
	if (kind == REQ_FLUSH) {
		if (vp->ops.next == &op->node)	/* nothing before it */
			op_finish(vp, op);
	} else {	/* in order: behind what already waits for room */
		list_add_tail(&vp->pending, &op->pnode);
		push_pending(vp);
		/*
		 * Soft-RoCE carries out a loopback WR inside ibv_post_send():
		 * its completion is there now. Taking it here spares the
		 * caller a progress round to learn that the put is done.
		 */
		reaped = poll_peer(vp);
	}
	futex_mutex_unlock(&v->lock);
	if (reaped > 0)
		comm_broadcast(v->comm);
	return 0;
err:
	op_put(v, op);
	futex_mutex_unlock(&v->lock);
	return rc;
}

static __hot int vb_post(void *ctx, void *xpeer, struct req *r, enum req_op op,
			 uint64_t local_off, uint64_t remote_off, uint64_t len)
{
	return post_op(ctx, xpeer, r, op, NULL, local_off, NULL, remote_off,
		       len, 0);
}

static int vb_put_signal(void *ctx, void *xpeer, struct req *r,
			 uint64_t local_off, uint64_t remote_off, uint64_t len,
			 uint64_t tag)
{
	return post_op(ctx, xpeer, r, OP_SIGNAL, NULL, local_off, NULL,
		       remote_off, len, tag);
}

/* ------------------------------------------------------------ regions */

/* A region of ours is an ibv_mr, whose rights the NIC enforces. */
static int vb_mr_reg(void *ctx, const struct comm_mr *mr, void **xmr)
{
	struct vb_ctx *v = ctx;
	struct vb_mr *m = malloc(sizeof(*m));
	int rc = -EIO;

	if (!m)
		return -ENOMEM;
	/* LOCAL_WRITE always: a get lands in it, and REMOTE_WRITE needs it */
	m->mr = vb_reg_mem(&v->port, v->pd, mr->addr, mr->len, mr->mem_type,
			   mr->device, IBV_ACCESS_LOCAL_WRITE |
			   (mr->access & HMC_MR_REMOTE_READ ?
			    IBV_ACCESS_REMOTE_READ : 0) |
			   (mr->access & HMC_MR_REMOTE_WRITE ?
			    IBV_ACCESS_REMOTE_WRITE : 0), &rc);
	if (!m->mr) {
		free(m);
		return rc;
	}
	m->host = mr->mem_type == HMC_MEM_CPU;
	*xmr = m;
	return 0;
}

static void vb_mr_dereg(void *ctx, void *xmr)
{
	struct vb_mr *m = xmr;

	warn_on(ibv_dereg_mr(m->mr), "ibv_dereg_mr");
	free(m);
}

static int vb_mr_pack(void *ctx, void *xmr, uint8_t *key, uint32_t cap,
		      uint32_t *len)
{
	const struct ibv_mr *m = ((struct vb_mr *)xmr)->mr;

	if (cap < KEY_LEN)
		return -ENOSPC;
	put_be64(key, (uint64_t)(uintptr_t)m->addr);
	put_be64(key + 8, m->length);
	put_be32(key + 16, m->rkey);
	*len = KEY_LEN;
	return 0;
}

static int vb_rmr_import(void *ctx, void *xpeer, const uint8_t *key,
			 uint32_t len, uint64_t size, void **xrmr)
{
	struct vb_peer *vp = xpeer;
	struct vb_ctx *v = ctx;
	struct vb_rmr *rm;

	if (len != KEY_LEN || get_be64(key + 8) != size ||
	    get_be64(key) + size < get_be64(key))
		return -EINVAL;
	rm = calloc(1, sizeof(*rm));
	if (!rm)
		return -ENOMEM;
	rm->base = get_be64(key);
	rm->rkey = get_be32(key + 16);
	futex_mutex_lock(&v->lock);
	rm->next = vp->rmrs;
	vp->rmrs = rm;
	futex_mutex_unlock(&v->lock);
	*xrmr = rm;
	return 0;
}

static __hot int vb_post_mr(void *ctx, void *xpeer, struct req *r,
			    enum req_op op, void *xmr, uint64_t local_off,
			    void *xrmr, uint64_t remote_off, uint64_t len)
{
	return post_op(ctx, xpeer, r, op, xmr, local_off, xrmr, remote_off,
		       len, 0);
}

/* ----------------------------------------------------------- progress */

/* Take the events the channel has (each CQ it names needs re-arming). */
static __hot void drain_events(struct vb_ctx *v)
{
	struct ibv_cq *cq;
	void *cq_ctx;

	while (v->armed_cqs && !ibv_get_cq_event(v->chan, &cq, &cq_ctx)) {
		set_armed(cq_ctx, false);
		ibv_ack_cq_events(cq, 1);
	}
}

static __hot int vb_progress(void *ctx)
{
	struct vb_ctx *v = ctx;
	struct list_node *n, *tmp;
	int rc, total = 0;

	futex_mutex_lock(&v->lock);
	drain_events(v);
	list_for_each_safe(n, tmp, &v->peers) {
		rc = poll_peer(container_of(n, struct vb_peer, node));
		if (rc > 0)
			total += rc;
	}
	futex_mutex_unlock(&v->lock);
	return total;
}

/*
 * Ask for an event on the next completion of every CQ, then look once
 * more: what completed before the request would raise no event.
 */
static int vb_arm(void *ctx)
{
	struct vb_ctx *v = ctx;
	struct list_node *n;
	int busy = 0;

	futex_mutex_lock(&v->lock);
	drain_events(v);
	for (n = v->peers.next; n != &v->peers; n = n->next) {
		struct vb_peer *vp = container_of(n, struct vb_peer, node);

		if (!vp->armed) {
			if (ibv_req_notify_cq(vp->cq, 0)) {
				busy = 1;	/* we cannot sleep on it */
				continue;
			}
			set_armed(vp, true);
		}
		if (poll_peer(vp))
			busy = 1;
	}
	futex_mutex_unlock(&v->lock);
	return busy ? -EBUSY : 0;
}

static int vb_event_fd(void *ctx)
{
	return ((struct vb_ctx *)ctx)->chan->fd;
}

const struct xport_ops xport_verbs_ops = {
	.type = HMC_TRANSPORT_VERBS,
	.init = vb_init,
	.reaches = vb_reaches,
	.fini = vb_fini,
	.peer_create = vb_peer_create,
	.peer_info = vb_peer_info,
	.peer_connect = vb_peer_connect,
	.peer_destroy = vb_peer_destroy,
	.post = vb_post,
	.put_signal = vb_put_signal,
	.progress = vb_progress,
	.arm = vb_arm,
	.event_fd = vb_event_fd,
	.mr_reg = vb_mr_reg,
	.mr_dereg = vb_mr_dereg,
	.mr_pack = vb_mr_pack,
	.rmr_import = vb_rmr_import,
	.post_mr = vb_post_mr,
};
