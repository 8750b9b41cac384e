// SPDX-License-Identifier: MIT
/*
 * TCP transport: one-sided puts and gets over plain TCP streams between
 * the ConnBuffers, for hosts without RDMA. Wire format: xport/tcp.h.
 *
 * Connections. Once the control plane has authenticated the peer, the
 * side that accepted the control connection listens for data connections
 * (one listener per communicator, on the control listener's address) and
 * sends, over the control plane, that address, a port and a random token
 * for this peer; the dialer opens the streams and presents the token on
 * each, so that nobody who did not pass the control handshake can inject
 * data. The peers use the larger of their two num_chs.
 *
 * Frames. A put is a PUT header followed by its bytes; the target's
 * progress engine receives them straight into its ConnBuffer at the
 * target offset, after checking [off, off + len) against the buffer, so a
 * peer that lies about a range fails before a single byte lands. A put
 * or get may name one of the target's regions instead (mr_reg: an index
 * and a generation from its key), checked the same way and against the
 * region's rights. A get
 * is a GET header answered by a GET_RESP carrying the bytes, which must
 * match, in order, the gets we have outstanding on that stream; a flush
 * sends FLUSH on every stream and completes when each has answered
 * FLUSH_ACK: TCP delivers in order and the target places a stream's
 * frames in order, so each ack follows the data before it. Only frame
 * headers and small payloads pass through the per-stream receive buffer.
 *
 * Sending. A put or get of at least STRIPE_MIN bytes is cut into up to
 * num_chs pieces, one per stream; anything else goes whole to the next
 * stream in turn. A put_signal travels whole on the first stream with its
 * tag in the PUT header, delivered once its bytes are placed: one stream
 * keeps the tags of put_signals in order. Sends happen in the
 * caller's thread when the stream is idle, else from progress when the
 * socket is writable. With HMC_TCP_ZEROCOPY=1 (for NICs that transmit
 * from user pages), payloads of at least ZC_MIN bytes go with
 * MSG_ZEROCOPY, the put completing when the kernel gives the pages back,
 * and headers always before them, copied; when the kernel reports that it
 * copied the pages all the same, the stream stops asking. It is off by
 * default: on loopback and on a veth to another namespace the kernel
 * always copies, so that zero-copy only adds pinning and a notification
 * per send, and under load on loopback we saw such a stream stall.
 *
 * Bounded memory and back-pressure. Per stream we hold a receive buffer
 * of RX_BUF bytes and descriptors of the operations in flight, never their
 * data; a full socket leaves them queued, in order. A peer may owe us at
 * most TCP_WINDOW answers per stream: past that, our requests wait on the
 * stream's held queue, in order, until answers come (they do: a peer never
 * stops reading, and answers never wait behind held requests); a peer
 * that asks for more than TCP_WINDOW answers at once fails.
 *
 * Failures. An error, an EOF, a frame that breaks the protocol, or no
 * byte for op_timeout_ms while a frame is half read or an answer awaited
 * fails the peer: its requests complete with the error, its descriptors
 * leave the epoll set, and the core tears it down (comm_peer_error). No
 * other peer is touched; no signal can be raised (MSG_NOSIGNAL).
 *
 * All of it runs under the transport's lock; its descriptors sit in its
 * own epoll set, whose descriptor the progress engine sleeps on.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "core/peer.h"
#include "mem/buf.h"
#include "sys/lock.h"
#include "sys/log.h"
#include "wire/sock.h"
#include "xport/tcp.h"
#include "xport/xport.h"

#define RX_BUF		(16 * 1024)	/* per stream: headers and small payloads */
#define STRIPE_MIN	(256 * 1024)	/* smaller transfers go on one stream */
#define STRIPE_ALIGN	(64 * 1024)
#define ZC_MIN		(64 * 1024)	/* MSG_ZEROCOPY from this payload on */
#define IOV_BATCH	64		/* iovecs per sendmsg */
#define RX_FRAMES	64		/* frames per stream and progress call */
#define MAX_EVENTS	64
#define OP_CACHE	64
#define CHECK_NS	(100 * 1000000LL)	/* deadline checks */
#define DRAIN_POLL_US	50		/* graceful close: between looks */

#ifndef SO_EE_ORIGIN_ZEROCOPY
#define SO_EE_ORIGIN_ZEROCOPY	5
#endif
#ifndef SO_EE_CODE_ZEROCOPY_COPIED
#define SO_EE_CODE_ZEROCOPY_COPIED	1
#endif

/* What an event in our epoll set refers to. */
enum tsrc_kind {
	TSRC_LISTEN,
	TSRC_HELLO,
	TSRC_STREAM,
	TSRC_TIMER,
};

enum op_kind {
	OP_PUT,
	OP_GET,
	OP_FLUSH,
	OP_AMO,
	OP_GET_RESP,	/* answers: no request */
	OP_FLUSH_ACK,
	OP_AMO_RESP,
};

/*
 * One frame to send: a request's piece on one stream, or an answer. A
 * request cut into several pieces is completed by its lead piece, which
 * counts the pieces left and lives until the last.
 */
struct tcp_op {
	struct list_node node;	/* stream's txq, then waitq or zcq */
	struct tcp_op *lead;	/* NULL for answers and a closing flush */
	struct req *r;		/* lead only */
	uint32_t pieces;	/* lead only: pieces not done */
	int err;		/* lead only: the first error */
	uint8_t kind;		/* enum op_kind */
	bool zc;		/* some of it went zero-copy */
	uint8_t hdr_sent;
	uint8_t hdr[TCP_HDR_LEN];
	uint8_t *data;		/* payload: in the ConnBuffer or a region */
	uint64_t data_len, data_sent;
	uint32_t zc_seq;	/* zerocopy sends that must complete first */
	uint64_t exp_off;	/* get: the offset its answer must name */
	uint32_t exp_len;
	uint8_t *exp_dst;	/* get: where its answer lands */
	struct tcp_mr *mr;	/* an answer's region, or NULL */
	uint64_t *fetch;	/* a fetching AMO: where the old value goes */
	uint8_t amo[TCP_AMO_LEN];	/* an AMO's payload */
};

struct tcp_peer;

struct tcp_stream {
	enum tsrc_kind kind;	/* TSRC_STREAM */
	struct tcp_peer *tp;
	int fd;			/* -1 until the dialer's connection comes */
	uint16_t idx;
	bool want_out;		/* EPOLLOUT in the set */
	bool zc;		/* MSG_ZEROCOPY still pays */
	struct list_node heldq;	/* requests beyond the window, in order */
	struct list_node txq;	/* to send, in order */
	struct list_node waitq;	/* sent gets and flushes, awaiting answers */
	struct list_node zcq;	/* sent puts whose pages the kernel holds */
	uint32_t nasks;		/* our gets and flushes in txq and waitq */
	uint32_t nowed;		/* answers we owe the peer */
	uint32_t zc_next;	/* zerocopy sends made */
	uint32_t zc_done;	/* zerocopy sends the kernel finished */
	/* receive side */
	uint8_t *rx;
	uint32_t rx_off, rx_len;
	uint8_t type, flags;	/* the frame whose payload is coming */
	uint64_t tag;
	uint8_t *dst;		/* where it goes; NULL: dropped */
	struct tcp_mr *mr;	/* the region it goes to, or NULL */
	/* an AMO's header fields and payload, applied once all has come */
	uint16_t amo_idx;
	uint32_t amo_gen;
	uint64_t amo_off;
	uint8_t amo[TCP_AMO_LEN];
	uint64_t left;		/* bytes of it still to come */
	int64_t last_rx;	/* ns: the last byte that came */
	int64_t last_tx;	/* ns: the last byte that left */
};

struct tcp_peer {
	struct tcp_ctx *ctx;
	struct peer *peer;
	uint32_t nch;
	uint32_t next;		/* round robin */
	uint32_t attached;	/* streams that are connected */
	bool listener;		/* the streams come to us */
	int err;		/* failed: every post fails with it */
	int64_t attach_deadline;	/* listener: the streams must come by then */
	uint8_t token[TCP_TOKEN_LEN];
	struct list_node rmrs;	/* its regions we imported */
	struct list_node node;	/* ctx->peers */
	struct tcp_stream *st;	/* nch of them */
};

/*
 * A region of ours (mr_reg): frames name it by index, and a put's or a
 * get's generation must match, so that a stale key never reaches the
 * region that took its index.
 */
struct tcp_mr {
	uint8_t *base;
	uint64_t len;
	uint32_t *notify;	/* or NULL */
	uint32_t access;	/* HMC_MR_REMOTE_* */
	uint32_t gen;
	uint16_t idx;		/* in ctx->mrs, from 1 */
};

/* A peer's region we imported: its key. */
struct tcp_rmr {
	struct list_node node;	/* tcp_peer.rmrs */
	uint16_t idx;
	uint32_t gen;
};

/* An accepted data connection until its hello names a peer and stream. */
struct tcp_hello {
	enum tsrc_kind kind;	/* TSRC_HELLO */
	int fd;
	uint32_t have;
	int64_t deadline;
	struct list_node node;	/* ctx->hellos */
	uint8_t buf[TCP_HELLO_LEN];
};

struct tcp_ctx {
	struct hmc_comm *comm;
	struct futex_mutex lock;
	uint8_t *base;
	uint64_t size;
	uint32_t want_ch;	/* our num_chs */
	bool zerocopy;		/* HMC_TCP_ZEROCOPY=1: MSG_ZEROCOPY for big payloads */
	int epfd;
	int timerfd;		/* wakes the engine for deadlines (arm()) */
	enum tsrc_kind timer_kind;	/* TSRC_TIMER */
	bool timer_set;
	enum tsrc_kind listen_kind;	/* TSRC_LISTEN: lfd's epoll tag */
	int lfd;		/* data listener, once we are a listener */
	uint16_t lport;
	struct list_node peers;
	struct list_node hellos;
	int64_t next_check;
	struct tcp_op *cache[OP_CACHE];
	uint32_t ncache;
	struct tcp_mr **mrs;	/* [idx - 1]: NULL where free */
	uint32_t nr_mrs;	/* slots */
	uint32_t mr_gen;
};

static void peer_fail(struct tcp_peer *tp, int err);

/* ---------------------------------------------------------------- ops */

static __hot struct tcp_op *op_get(struct tcp_ctx *t)
{
	struct tcp_op *op;

	op = t->ncache ? t->cache[--t->ncache] : malloc(sizeof(*op));
	if (op)
		memset(op, 0, sizeof(*op));
	return op;
}

static __hot void op_put(struct tcp_ctx *t, struct tcp_op *op)
{
	if (t->ncache < OP_CACHE)
		t->cache[t->ncache++] = op;
	else
		free(op);
}

static void hdr_encode(uint8_t *h, uint8_t type, uint8_t flags, uint16_t mr,
		       uint32_t len, uint64_t off, uint64_t arg)
{
	h[0] = type;
	h[1] = flags;
	put_be16(h + 2, mr);
	put_be32(h + 4, len);
	put_be64(h + 8, off);
	put_be64(h + 16, arg);
}

/* A piece is done (or failed): the request completes with its last piece. */
static __hot void op_done(struct tcp_ctx *t, struct tcp_op *op, int err)
{
	struct tcp_op *lead = op->lead;

	if (lead) {
		if (err && !lead->err)
			lead->err = err;
		if (!--lead->pieces) {
			req_complete(lead->r, lead->err);
			if (lead != op)
				op_put(t, lead);
		} else if (lead == op) {
			return;		/* the others still count on it */
		}
	}
	op_put(t, op);
}

static void fail_list(struct tcp_ctx *t, struct list_node *head, int err)
{
	struct list_node *pos, *tmp;

	list_for_each_safe(pos, tmp, head) {
		list_del(pos);
		op_done(t, container_of(pos, struct tcp_op, node), err);
	}
}

/* ------------------------------------------------------------- epoll */

static int ep_set(struct tcp_ctx *t, int op, int fd, uint32_t events,
		  void *ptr)
{
	struct epoll_event ev = { .events = events, .data.ptr = ptr };

	if (epoll_ctl(t->epfd, op, fd, &ev))
		return -errno;
	return 0;
}

static void want_out(struct tcp_stream *s, bool on)
{
	if (s->want_out == on || s->fd < 0)
		return;
	if (!ep_set(s->tp->ctx, EPOLL_CTL_MOD, s->fd,
		    EPOLLIN | (on ? EPOLLOUT : 0), s))
		s->want_out = on;
}

/* ---------------------------------------------------------- sending */

/*
 * Account for @n bytes that left: pieces fully sent move on (puts
 * complete, or wait for their pages if sent zero-copy; gets and flushes
 * await their answers; answers are done).
 */
static __hot void sent(struct tcp_stream *s, size_t n, bool zc)
{
	struct tcp_ctx *t = s->tp->ctx;

	while (!list_empty(&s->txq)) {
		struct tcp_op *op = container_of(s->txq.next, struct tcp_op,
						 node);
		size_t take;

		take = min_t(size_t, n, TCP_HDR_LEN - op->hdr_sent);
		op->hdr_sent += take;
		n -= take;
		take = min_t(size_t, n, op->data_len - op->data_sent);
		if (take && zc) {
			op->zc = true;
			op->zc_seq = s->zc_next;	/* this send counted */
		}
		op->data_sent += take;
		n -= take;
		if (op->hdr_sent < TCP_HDR_LEN ||
		    op->data_sent < op->data_len)
			break;
		list_del(&op->node);
		switch (op->kind) {
		case OP_PUT:
			/* its zero-copy part may be reported done already */
			if (op->zc && (int32_t)(s->zc_done - op->zc_seq) < 0)
				list_add_tail(&s->zcq, &op->node);
			else
				op_done(t, op, 0);
			break;
		case OP_AMO:
			if (op->fetch)	/* it awaits its answer */
				list_add_tail(&s->waitq, &op->node);
			else
				op_done(t, op, 0);
			break;
		case OP_GET:
		case OP_FLUSH:
			list_add_tail(&s->waitq, &op->node);
			break;
		default:	/* our answers: their bytes are ours again at once */
			s->nowed--;
			op_put(t, op);
			break;
		}
	}
}

static bool is_ask(const struct tcp_op *op)
{
	return op->kind == OP_GET || op->kind == OP_FLUSH ||
	       (op->kind == OP_AMO && op->fetch);
}

/* Requests the window admits again move from the held queue to the wire. */
static void release_held(struct tcp_stream *s)
{
	while (!list_empty(&s->heldq)) {
		struct tcp_op *op = container_of(s->heldq.next, struct tcp_op,
						 node);

		if (is_ask(op) && s->nasks >= TCP_WINDOW)
			break;
		s->nasks += is_ask(op);
		list_del(&op->node);
		list_add_tail(&s->txq, &op->node);
	}
}

/*
 * Send what the stream has queued until the socket is full: 0 or the
 * error that fails the peer. Small frames go many to one sendmsg; a
 * payload of ZC_MIN bytes or more goes alone, zero-copy while that pays.
 */
static __hot int push(struct tcp_stream *s)
{
	struct iovec iov[IOV_BATCH];
	struct msghdr msg = { .msg_iov = iov };
	struct list_node *pos;
	ssize_t n;
	bool zc;

	if (s->fd < 0)
		return 0;
	while (!list_empty(&s->txq)) {
		msg.msg_iovlen = 0;
		zc = false;
		for (pos = s->txq.next; pos != &s->txq &&
		     msg.msg_iovlen + 2 <= IOV_BATCH; pos = pos->next) {
			struct tcp_op *op = container_of(pos, struct tcp_op,
							 node);
			uint64_t rest = op->data_len - op->data_sent;
			bool big = s->zc && rest >= ZC_MIN;

			if (op->hdr_sent < TCP_HDR_LEN)
				iov[msg.msg_iovlen++] = (struct iovec){
					op->hdr + op->hdr_sent,
					TCP_HDR_LEN - op->hdr_sent };
			/*
			 * The kernel reads a zero-copy send's pages until it
			 * reports them done: never the header, whose op an
			 * answer reuses at once, so that goes before, copied.
			 */
			if (big) {
				if (op->hdr_sent == TCP_HDR_LEN &&
				    !msg.msg_iovlen) {
					iov[msg.msg_iovlen++] = (struct iovec){
						op->data + op->data_sent,
						rest };
					zc = true;
				}
				break;
			}
			if (rest)
				iov[msg.msg_iovlen++] = (struct iovec){
					op->data + op->data_sent, rest };
		}
		n = sendmsg(s->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT |
			    (zc ? MSG_ZEROCOPY : 0));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				want_out(s, true);
				return 0;
			}
			if (errno == ENOBUFS && zc) {
				/* out of optmem for notifications: copy */
				s->zc = false;
				continue;
			}
			return -errno;
		}
		s->last_tx = now_ns();
		if (zc)
			s->zc_next++;
		sent(s, (size_t)n, zc);
	}
	want_out(s, false);
	return 0;
}

/* Zerocopy notifications: puts whose pages the kernel released complete. */
static int reap_zc(struct tcp_stream *s)
{
	struct tcp_ctx *t = s->tp->ctx;
	char control[128];
	struct msghdr msg = { .msg_control = control };
	struct sock_extended_err *ee;
	struct cmsghdr *cm;
	struct list_node *pos, *tmp;

	for (;;) {
		msg.msg_controllen = sizeof(control);
		if (recvmsg(s->fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
			break;
		for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
			if (!((cm->cmsg_level == SOL_IP &&
			       cm->cmsg_type == IP_RECVERR) ||
			      (cm->cmsg_level == SOL_IPV6 &&
			       cm->cmsg_type == IPV6_RECVERR)))
				continue;
			ee = (struct sock_extended_err *)CMSG_DATA(cm);
			if (ee->ee_origin != SO_EE_ORIGIN_ZEROCOPY)
				return ee->ee_errno ? -(int)ee->ee_errno : -EIO;
			/* [ee_info, ee_data] finished; sends are numbered from 0 */
			if ((int32_t)(ee->ee_data + 1 - s->zc_done) > 0)
				s->zc_done = ee->ee_data + 1;
			if (ee->ee_code & SO_EE_CODE_ZEROCOPY_COPIED)
				s->zc = false;
		}
	}
	list_for_each_safe(pos, tmp, &s->zcq) {
		struct tcp_op *op = container_of(pos, struct tcp_op, node);

		if ((int32_t)(s->zc_done - op->zc_seq) < 0)
			break;
		list_del(pos);
		op_done(t, op, 0);
	}
	return 0;
}

/* Queue request @op on @s and send what can go (lock held). */
static __hot void queue_op(struct tcp_stream *s, struct tcp_op *op)
{
	bool idle = list_empty(&s->txq);
	int rc;

	list_add_tail(&s->heldq, &op->node);
	release_held(s);
	if (idle && !list_empty(&s->txq)) {
		rc = push(s);
		if (rc)
			peer_fail(s->tp, rc);
	}
}

/* -------------------------------------------------------- receiving */

/*
 * Queue an answer the peer asked for: a GET_RESP of @len bytes from @data
 * naming @resp_off, an AMO_RESP naming @resp_off with the old value
 * @arg, or a FLUSH_ACK.
 */
static int answer(struct tcp_stream *s, uint8_t kind, struct tcp_mr *mr,
		  uint8_t *data, uint32_t len, uint64_t resp_off, uint64_t arg)
{
	struct tcp_ctx *t = s->tp->ctx;
	struct tcp_op *op;

	if (s->nowed >= TCP_WINDOW)
		return -EPROTO;		/* it asks for more than it may */
	op = op_get(t);
	if (!op)
		return -ENOMEM;
	op->kind = kind;
	if (kind == OP_GET_RESP) {
		hdr_encode(op->hdr, TCP_GET_RESP, 0, 0, len, resp_off, 0);
		op->data = data;
		op->data_len = len;
		op->mr = mr;
	} else if (kind == OP_AMO_RESP) {
		hdr_encode(op->hdr, TCP_AMO_RESP, 0, 0, 0, resp_off, arg);
	} else {
		hdr_encode(op->hdr, TCP_FLUSH_ACK, 0, 0, 0, 0, 0);
	}
	s->nowed++;
	list_add_tail(&s->txq, &op->node);
	return 0;
}

/* The oldest answer we await on @s, if it is a @kind. */
static struct tcp_op *awaited(struct tcp_stream *s, uint8_t kind)
{
	struct tcp_op *op;

	if (list_empty(&s->waitq))
		return NULL;
	op = container_of(s->waitq.next, struct tcp_op, node);
	return op->kind == kind ? op : NULL;
}

static int amo_serve(struct tcp_stream *s);

/* @op, the oldest we await on @s, got its answer: it is done. */
static void answered(struct tcp_stream *s, struct tcp_op *op)
{
	list_del(&op->node);
	s->nasks--;
	op_done(s->tp->ctx, op, 0);
	release_held(s);
}

/* A peer's write into @mr landed: its owner's sleepers may look. */
static void notify(const struct tcp_mr *mr)
{
	if (!mr->notify)
		return;
	__atomic_add_fetch(mr->notify, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, mr->notify, FUTEX_WAKE_PRIVATE, INT_MAX, NULL,
		NULL, 0);
}

/* The frame whose payload just finished: 0 or the error that fails the peer. */
static int frame_done(struct tcp_stream *s)
{
	struct tcp_ctx *t = s->tp->ctx;

	if (s->type == TCP_PUT) {
		if (s->flags & TCP_F_SIGNAL) {
			/* the bytes are in memory before the tag is seen */
			__atomic_thread_fence(__ATOMIC_RELEASE);
			comm_deliver_tag(t->comm, s->tp->peer, s->tag);
		}
		if (s->mr && s->dst)
			notify(s->mr);
		return 0;
	}
	if (s->type == TCP_AMO)
		return amo_serve(s);
	answered(s, awaited(s, OP_GET));	/* checked when the header came */
	return 0;
}

/*
 * Where a peer's put or get of [@off, @off + @len) in our region @idx
 * (0: the ConnBuffer) with generation @gen goes, if it may: NULL for a
 * region that is not there any more, a stale key, missing rights or a
 * range outside it.
 */
static uint8_t *target(struct tcp_ctx *t, uint16_t idx, uint32_t gen,
		       uint32_t right, uint64_t off, uint32_t len,
		       struct tcp_mr **mrp)
{
	struct tcp_mr *mr;

	*mrp = NULL;
	if (!idx)
		return range_check(t->size, off, len) ? NULL : t->base + off;
	if (idx > t->nr_mrs)
		return NULL;
	mr = t->mrs[idx - 1];
	if (!mr || mr->gen != gen || (mr->access & right) != right ||
	    range_check(mr->len, off, len))
		return NULL;
	*mrp = mr;
	return mr->base + off;
}

/* A frame header: check it against our memory and what we await. */
static int frame_start(struct tcp_stream *s, const uint8_t *h)
{
	struct tcp_ctx *t = s->tp->ctx;
	uint16_t idx = get_be16(h + 2);
	uint32_t len = get_be32(h + 4);
	uint64_t off = get_be64(h + 8), arg = get_be64(h + 16);
	struct tcp_mr *mr;
	struct tcp_op *op;
	uint8_t *p;

	if (len > TCP_FRAME_MAX)
		return -EPROTO;
	s->type = h[0];
	s->flags = h[1];
	switch (h[0]) {
	case TCP_PUT:
		/* a put to a region carries its generation, never a tag */
		if (h[1] & ~TCP_F_SIGNAL || (idx && h[1]))
			return -EPROTO;
		s->dst = target(t, idx, (uint32_t)arg, HMC_MR_REMOTE_WRITE,
				off, len, &s->mr);
		if (!s->dst)
			return -EPROTO;
		s->tag = arg;
		break;
	case TCP_GET:
		if (h[1] || !len)
			return -EPROTO;
		p = target(t, idx, (uint32_t)arg, HMC_MR_REMOTE_READ, off,
			   len, &mr);
		if (!p)
			return -EPROTO;
		/* A ConnBuffer get names where it lands, a region get itself. */
		return answer(s, OP_GET_RESP, mr, p, len, idx ? off : arg, 0);
	case TCP_GET_RESP:
		op = awaited(s, OP_GET);
		if (h[1] || idx || arg || !op || op->exp_off != off ||
		    op->exp_len != len)
			return -EPROTO;
		s->dst = op->exp_dst;
		s->mr = NULL;
		break;
	case TCP_AMO:
		if (h[1] & ~TCP_F_FETCH || len != TCP_AMO_LEN)
			return -EPROTO;
		s->amo_idx = idx;
		s->amo_gen = (uint32_t)arg;
		s->amo_off = off;
		s->dst = s->amo;
		s->mr = NULL;
		break;
	case TCP_AMO_RESP:
		op = awaited(s, OP_AMO);
		if (h[1] || idx || len || !op || op->exp_off != off)
			return -EPROTO;
		*op->fetch = arg;
		answered(s, op);
		return 0;
	case TCP_FLUSH:
		if (h[1] || idx || len || off || arg)
			return -EPROTO;
		return answer(s, OP_FLUSH_ACK, NULL, NULL, 0, 0, 0);
	case TCP_FLUSH_ACK:
		op = awaited(s, OP_FLUSH);
		if (h[1] || idx || len || off || arg || !op)
			return -EPROTO;
		answered(s, op);
		return 0;
	default:
		return -EPROTO;
	}
	s->left = len;
	return len ? 0 : frame_done(s);
}

/* The CPU atomic @op on @p (aligned): the value found there. */
static uint64_t amo_apply(uint8_t *p, unsigned int size, uint8_t op,
			  uint64_t v, uint64_t c)
{
#define AMO_APPLY(T)							\
	do {								\
		T *a = (T *)p, x = (T)v, e = (T)c;			\
									\
		switch (op) {						\
		case HMC_AMO_FETCH:					\
			return __atomic_load_n(a, __ATOMIC_SEQ_CST);	\
		case HMC_AMO_SET:	/* with the old value for @fetch */ \
		case HMC_AMO_SWAP:					\
			return __atomic_exchange_n(a, x, __ATOMIC_SEQ_CST); \
		case HMC_AMO_CSWAP:	/* @e gets what was found */	\
			__atomic_compare_exchange_n(a, &e, x, false,	\
						    __ATOMIC_SEQ_CST,	\
						    __ATOMIC_SEQ_CST);	\
			return e;					\
		case HMC_AMO_ADD:					\
			return __atomic_fetch_add(a, x, __ATOMIC_SEQ_CST); \
		case HMC_AMO_AND:					\
			return __atomic_fetch_and(a, x, __ATOMIC_SEQ_CST); \
		case HMC_AMO_OR:					\
			return __atomic_fetch_or(a, x, __ATOMIC_SEQ_CST); \
		default:						\
			return __atomic_fetch_xor(a, x, __ATOMIC_SEQ_CST); \
		}							\
	} while (0)

	if (size == 4)
		AMO_APPLY(uint32_t);
	AMO_APPLY(uint64_t);
#undef AMO_APPLY
}

/* A peer's AMO, all of it here: check it, apply it, answer if asked. */
static int amo_serve(struct tcp_stream *s)
{
	struct tcp_ctx *t = s->tp->ctx;
	const uint8_t *b = s->amo;
	bool fetch = s->flags & TCP_F_FETCH;
	uint8_t op = b[16], size = b[17];
	struct tcp_mr *mr;
	uint64_t old;
	uint8_t *p;

	if ((size != 4 && size != 8) || op > HMC_AMO_XOR ||
	    get_be16(b + 18) || get_be32(b + 20) ||
	    (op == HMC_AMO_FETCH && !fetch))
		return -EPROTO;
	p = target(t, s->amo_idx, s->amo_gen, HMC_MR_REMOTE_WRITE |
		   (fetch ? HMC_MR_REMOTE_READ : 0), s->amo_off, size, &mr);
	if (!p || (uintptr_t)p % size)
		return -EPROTO;
	old = amo_apply(p, size, op, get_be64(b), get_be64(b + 8));
	if (mr)
		notify(mr);
	if (!fetch)
		return 0;
	return answer(s, OP_AMO_RESP, NULL, NULL, 0, s->amo_off, old);
}

static int recv_into(struct tcp_stream *s, void *dst, size_t len)
{
	ssize_t n;

	do {
		n = recv(s->fd, dst, len, MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n > 0) {
		s->last_rx = now_ns();
		return (int)min_t(size_t, n, INT32_MAX);
	}
	if (!n)
		return -ECONNRESET;
	return errno == EAGAIN ? 0 : -errno;
}

/*
 * Read what the stream has, up to RX_FRAMES frames and what the receive
 * buffer holds: 0 or the error that fails the peer. A payload goes straight to its place in the buffer; the
 * receive buffer only carries headers and what came along with them.
 */
static __hot int pull(struct tcp_stream *s)
{
	uint32_t avail, frames = 0;
	int n;

	for (;;) {
		avail = s->rx_len - s->rx_off;
		/* what the buffer holds must go: epoll only tells of the socket */
		if (frames >= RX_FRAMES && !avail && !s->left)
			return 0;
		if (s->left) {
			if (avail) {
				n = (int)min_t(uint64_t, avail, s->left);
				if (s->dst)
					memcpy(s->dst, s->rx + s->rx_off, n);
				s->rx_off += n;
			} else if (s->dst) {
				n = recv_into(s, s->dst,
					      min_t(uint64_t, s->left,
						    INT32_MAX));
				if (n <= 0)
					return n;
			} else {
				/* its region went (mr_dereg): read, drop */
				s->rx_off = s->rx_len = 0;
				n = recv_into(s, s->rx,
					      min_t(uint64_t, s->left, RX_BUF));
				if (n <= 0)
					return n;
			}
			if (s->dst)
				s->dst += n;
			s->left -= n;
			if (!s->left) {
				n = frame_done(s);
				if (n)
					return n;
				frames++;
			}
			continue;
		}
		if (avail >= TCP_HDR_LEN) {
			n = frame_start(s, s->rx + s->rx_off);
			if (n)
				return n;
			s->rx_off += TCP_HDR_LEN;
			frames += !s->left;
			continue;
		}
		if (s->rx_off) {
			memmove(s->rx, s->rx + s->rx_off, avail);
			s->rx_off = 0;
			s->rx_len = avail;
		}
		n = recv_into(s, s->rx + s->rx_len, RX_BUF - s->rx_len);
		if (n <= 0)
			return n;
		s->rx_len += n;
	}
	return 0;
}

/* ------------------------------------------------------------ peers */

static void st_close(struct tcp_stream *s)
{
	if (s->fd < 0)
		return;
	epoll_ctl(s->tp->ctx->epfd, EPOLL_CTL_DEL, s->fd, NULL);
	close(s->fd);
	s->fd = -1;
}

/* Fail every request of @tp's streams with @err (lock held). */
static void fail_ops(struct tcp_peer *tp, int err)
{
	struct tcp_ctx *t = tp->ctx;
	uint32_t i;

	for (i = 0; i < tp->nch; i++) {
		struct tcp_stream *s = &tp->st[i];

		fail_list(t, &s->heldq, err);
		fail_list(t, &s->txq, err);
		fail_list(t, &s->waitq, err);
		fail_list(t, &s->zcq, err);
		s->nasks = s->nowed = 0;
	}
}

/*
 * @tp is broken: its requests fail, its streams leave the epoll set (an
 * EOF would fire forever) and the core tears it down.
 */
static void peer_fail(struct tcp_peer *tp, int err)
{
	uint32_t i;

	if (tp->err)
		return;
	tp->err = err;
	pr_debug("rank %u: tcp transport to rank %u failed: %s",
		 tp->ctx->comm->rank, tp->peer->rank, hmc_strerror(err));
	for (i = 0; i < tp->nch; i++)
		if (tp->st[i].fd >= 0)
			epoll_ctl(tp->ctx->epfd, EPOLL_CTL_DEL, tp->st[i].fd,
				  NULL);
	fail_ops(tp, err);
	comm_peer_error(tp->ctx->comm, tp->peer, err);
}

static int set_sockopts(struct tcp_ctx *t, int fd)
{
	unsigned int tmo = (unsigned int)t->comm->op_timeout_ms;
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		return -errno;
	/* a peer whose host vanished: unacknowledged data fails the socket */
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &tmo, sizeof(tmo));
	return 0;
}

/* @fd is stream @s from now on. */
static int st_attach(struct tcp_stream *s, int fd, bool in_set)
{
	struct tcp_ctx *t = s->tp->ctx;
	int one = 1, rc;

	rc = set_sockopts(t, fd);
	if (rc)
		return rc;
	s->zc = t->zerocopy &&
		!setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one));
	rc = ep_set(t, in_set ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, EPOLLIN, s);
	if (rc)
		return rc;
	s->fd = fd;
	s->want_out = false;
	s->last_rx = s->last_tx = now_ns();
	s->tp->attached++;
	return 0;
}

static void tcp_fini(void *ctx)
{
	struct tcp_ctx *t = ctx;
	struct list_node *pos, *tmp;

	list_for_each_safe(pos, tmp, &t->hellos) {
		struct tcp_hello *h = container_of(pos, struct tcp_hello, node);

		close(h->fd);
		free(h);
	}
	if (t->lfd >= 0)
		close(t->lfd);
	close(t->timerfd);
	close(t->epfd);
	while (t->ncache)
		free(t->cache[--t->ncache]);
	free(t->mrs);
	free(t);
}

static bool env_flag(const char *name)
{
	const char *v = getenv(name);

	return v && !strcmp(v, "1");
}

static int tcp_init(struct hmc_comm *comm, void **ctx)
{
	struct tcp_ctx *t;
	int rc;

	if (hmc_buf_mem_type(comm->buf) != HMC_MEM_CPU)
		return -EOPNOTSUPP;	/* the kernel reads and writes it */
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->timerfd = -1;
	t->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (t->epfd < 0)
		goto err;
	t->timerfd = timerfd_create(CLOCK_MONOTONIC,
				    TFD_NONBLOCK | TFD_CLOEXEC);
	if (t->timerfd < 0)
		goto err;
	t->timer_kind = TSRC_TIMER;
	if (ep_set(t, EPOLL_CTL_ADD, t->timerfd, EPOLLIN, &t->timer_kind))
		goto err;
	t->comm = comm;
	t->base = hmc_buf_ptr(comm->buf);
	t->size = hmc_buf_size(comm->buf);
	t->want_ch = min_t(uint32_t, comm->num_chs, TCP_MAX_STREAMS);
	t->zerocopy = env_flag("HMC_TCP_ZEROCOPY");
	t->listen_kind = TSRC_LISTEN;
	t->lfd = -1;
	list_init(&t->peers);
	list_init(&t->hellos);
	*ctx = t;
	return 0;
err:
	rc = -errno;
	if (t->timerfd >= 0)
		close(t->timerfd);
	if (t->epfd >= 0)
		close(t->epfd);
	free(t);
	return rc;
}

static int tcp_peer_create(void *ctx, struct peer *peer, void **xpeer)
{
	struct tcp_ctx *t = ctx;
	struct tcp_peer *tp = calloc(1, sizeof(*tp));

	if (!tp)
		return -ENOMEM;
	tp->ctx = t;
	tp->peer = peer;
	list_init(&tp->node);
	list_init(&tp->rmrs);
	*xpeer = tp;
	return 0;
}

/* Allocate @nch streams, not connected yet. */
static int st_alloc(struct tcp_peer *tp, uint32_t nch)
{
	uint32_t i;

	tp->st = calloc(nch, sizeof(*tp->st));
	if (!tp->st)
		return -ENOMEM;
	tp->nch = nch;
	for (i = 0; i < nch; i++) {
		struct tcp_stream *s = &tp->st[i];

		s->kind = TSRC_STREAM;
		s->tp = tp;
		s->fd = -1;
		s->idx = (uint16_t)i;
		list_init(&s->heldq);
		list_init(&s->txq);
		list_init(&s->waitq);
		list_init(&s->zcq);
		s->rx = malloc(RX_BUF);
		if (!s->rx)
			return -ENOMEM;
	}
	return 0;
}

/* The data listener, on the control listener's address (lock held). */
static int listen_data(struct tcp_ctx *t)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char ip[INET6_ADDRSTRLEN];
	const void *a;
	int rc;

	if (t->lfd >= 0)
		return 0;
	if (t->comm->listeners[0].fd < 0 ||
	    getsockname(t->comm->listeners[0].fd, (struct sockaddr *)&ss, &sl))
		return -ENOTCONN;
	a = ss.ss_family == AF_INET6 ?
	    (const void *)&((struct sockaddr_in6 *)&ss)->sin6_addr :
	    (const void *)&((struct sockaddr_in *)&ss)->sin_addr;
	if (!inet_ntop(ss.ss_family, a, ip, sizeof(ip)))
		return -errno;
	rc = sock_listen_tcp(ip, 0, &t->lfd, &t->lport);
	if (rc)
		return rc;
	rc = ep_set(t, EPOLL_CTL_ADD, t->lfd, EPOLLIN, &t->listen_kind);
	if (rc) {
		close(t->lfd);
		t->lfd = -1;
	}
	return rc;
}

/*
 * The address the dialer reaches our data listener at: the listener's own
 * if it is bound to one; else the one the control connection came to: over
 * TCP its local address, over a Unix socket the address the dialer dialed
 * (which may be in another network namespace of this host), loopback if
 * it did not say.
 */
/* The address the Unix dialer dialed into @ss: false if it named none. */
static bool dialed_addr(const struct peer *p, struct sockaddr_storage *ss)
{
	static const uint8_t zero[16];
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct in6_addr a;

	if (!memcmp(p->dialed, zero, sizeof(zero)))
		return false;
	memcpy(&a, p->dialed, sizeof(a));
	memset(ss, 0, sizeof(*ss));
	if (IN6_IS_ADDR_V4MAPPED(&a)) {
		s4->sin_family = AF_INET;
		memcpy(&s4->sin_addr, &a.s6_addr[12], 4);
	} else {
		s6->sin6_family = AF_INET6;
		s6->sin6_addr = a;
	}
	return true;
}

static int data_addr(struct tcp_ctx *t, struct tcp_peer *tp, uint8_t *family,
		     uint8_t *addr)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	bool any;

	if (getsockname(t->lfd, (struct sockaddr *)&ss, &sl))
		return -errno;
	any = ss.ss_family == AF_INET6 ?
	      IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr) :
	      s4->sin_addr.s_addr == htonl(INADDR_ANY);
	if (any) {
		struct conn *cn = tp->peer->conn;
		int fam = ss.ss_family;

		sl = sizeof(ss);
		if (cn && !cn->is_unix) {
			if (getsockname(cn->fd, (struct sockaddr *)&ss, &sl))
				return -errno;
		} else if (dialed_addr(tp->peer, &ss)) {
			/* ss holds it */
		} else if (fam == AF_INET6) {
			s6->sin6_family = AF_INET6;
			s6->sin6_addr = in6addr_loopback;
		} else {
			s4->sin_family = AF_INET;
			s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		}
	}
	memset(addr, 0, 16);
	if (ss.ss_family == AF_INET6) {
		*family = 6;
		memcpy(addr, &s6->sin6_addr, 16);
	} else {
		*family = 4;
		memcpy(addr, &s4->sin_addr, 4);
	}
	return 0;
}

static int tcp_peer_info(void *ctx, void *xpeer, uint8_t *blob, uint32_t cap,
			 uint32_t *len)
{
	struct tcp_ctx *t = ctx;
	struct tcp_peer *tp = xpeer;
	uint8_t family = 0;
	int rc = 0;

	if (cap < TCP_BLOB_LEN)
		return -EMSGSIZE;
	memset(blob, 0, TCP_BLOB_LEN);
	futex_mutex_lock(&t->lock);
	if (tp->listener) {	/* we have the dialer's blob: tell where to come */
		rc = listen_data(t);
		if (!rc)
			rc = data_addr(t, tp, &family, blob + 8);
		if (!rc && getrandom(tp->token, sizeof(tp->token), 0) !=
			   sizeof(tp->token))
			rc = -EIO;
		if (!rc) {
			put_be16(blob + 4, t->lport);
			memcpy(blob + 24, tp->token, TCP_TOKEN_LEN);
			tp->attach_deadline =
				deadline_after_ms(t->comm->connect_timeout_ms);
			list_add_tail(&t->peers, &tp->node);
		}
	}
	futex_mutex_unlock(&t->lock);
	if (rc)
		return rc;
	blob[0] = TCP_VERSION;
	blob[1] = family;
	put_be16(blob + 2, (uint16_t)(tp->nch ? tp->nch : t->want_ch));
	*len = TCP_BLOB_LEN;
	return 0;
}

/* Read exactly @len bytes before @deadline (the dialer's handshake). */
static int read_exact(int fd, uint8_t *buf, size_t len, int64_t deadline)
{
	size_t have = 0;
	ssize_t n;
	int rc;

	while (have < len) {
		rc = sock_wait_readable(fd, deadline);
		if (rc)
			return rc;
		n = recv(fd, buf + have, len - have, MSG_DONTWAIT);
		if (n > 0)
			have += (size_t)n;
		else if (!n)
			return -ECONNRESET;
		else if (errno != EAGAIN && errno != EINTR)
			return -errno;
	}
	return 0;
}

/* Dialer: open stream @s to @ip:@port and present the token. */
static int dial_stream(struct tcp_peer *tp, struct tcp_stream *s,
		       const char *ip, uint16_t port, int64_t deadline)
{
	struct tcp_ctx *t = tp->ctx;
	uint8_t hello[TCP_HELLO_LEN] = { 0 }, ack[TCP_ACK_LEN];
	struct iovec iov = { hello, sizeof(hello) };
	int fd, rc;

	rc = sock_dial_tcp(ip, port, deadline, &fd);
	if (rc)
		return rc;
	put_be32(hello, TCP_HELLO_MAGIC);
	hello[4] = TCP_VERSION;
	put_be16(hello + 6, s->idx);
	put_be16(hello + 8, (uint16_t)tp->nch);
	memcpy(hello + 12, tp->token, TCP_TOKEN_LEN);
	put_be32(hello + 28, t->comm->rank);
	rc = sock_send_all(fd, &iov, 1, -1, deadline);
	if (!rc)
		rc = read_exact(fd, ack, sizeof(ack), deadline);
	if (!rc && (get_be32(ack) != TCP_ACK_MAGIC ||
		    get_be16(ack + 4) != s->idx || get_be16(ack + 6)))
		rc = -EPROTO;
	if (!rc) {
		futex_mutex_lock(&t->lock);
		rc = st_attach(s, fd, false);
		futex_mutex_unlock(&t->lock);
	}
	if (rc)
		close(fd);
	return rc;
}

static int tcp_peer_connect(void *ctx, void *xpeer, const uint8_t *blob,
			    uint32_t len)
{
	struct tcp_ctx *t = ctx;
	struct tcp_peer *tp = xpeer;
	int64_t deadline = deadline_after_ms(t->comm->connect_timeout_ms);
	char ip[INET6_ADDRSTRLEN];
	uint32_t nch, i;
	uint16_t port;
	int rc;

	if (len != TCP_BLOB_LEN || blob[0] != TCP_VERSION)
		return -EPROTO;
	nch = get_be16(blob + 2);
	port = get_be16(blob + 4);
	if (!nch || nch > TCP_MAX_STREAMS || get_be16(blob + 6))
		return -EPROTO;
	if (!blob[1]) {		/* the dialer's: its streams will come to us */
		if (port || tp->st)
			return -EPROTO;
		tp->listener = true;
		return st_alloc(tp, nch > t->want_ch ? nch : t->want_ch);
	}
	/* The listener's answer: it chose the count, we dial. */
	if ((blob[1] != 4 && blob[1] != 6) || !port || tp->st ||
	    nch < t->want_ch)
		return -EPROTO;
	if (!inet_ntop(blob[1] == 4 ? AF_INET : AF_INET6, blob + 8, ip,
		       sizeof(ip)))
		return -EPROTO;
	memcpy(tp->token, blob + 24, TCP_TOKEN_LEN);
	rc = st_alloc(tp, nch);
	if (rc)
		return rc;
	tp->attach_deadline = deadline;
	futex_mutex_lock(&t->lock);
	list_add_tail(&t->peers, &tp->node);
	futex_mutex_unlock(&t->lock);
	for (i = 0; i < nch && !rc; i++)
		rc = dial_stream(tp, &tp->st[i], ip, port, deadline);
	if (rc)
		pr_info("rank %u: tcp data connection to rank %u at %s:%u: %s",
			t->comm->rank, tp->peer->rank, ip, port,
			hmc_strerror(rc));
	return rc;
}

static bool peer_idle(struct tcp_peer *tp)
{
	uint32_t i;

	for (i = 0; i < tp->nch; i++)
		if (!list_empty(&tp->st[i].heldq) ||
		    !list_empty(&tp->st[i].txq) ||
		    !list_empty(&tp->st[i].waitq) ||
		    !list_empty(&tp->st[i].zcq) || tp->st[i].left)
			return false;
	return true;
}

static void drive_stream(struct tcp_stream *s, uint32_t events);

/*
 * Graceful close: let what was posted finish, until @deadline, and end
 * with a flush of every stream, so that the peer has placed all we sent,
 * tags included, before the control plane says goodbye.
 */
static void drain_peer(struct tcp_ctx *t, struct tcp_peer *tp,
		       int64_t deadline)
{
	struct tcp_op *op;
	uint32_t i;

	for (i = 0; i < tp->nch && !tp->err && tp->attached == tp->nch; i++) {
		op = op_get(t);
		if (!op)
			break;
		op->kind = OP_FLUSH;	/* no request: lead stays NULL */
		hdr_encode(op->hdr, TCP_FLUSH, 0, 0, 0, 0, 0);
		queue_op(&tp->st[i], op);
	}
	while (!tp->err && tp->attached == tp->nch && !peer_idle(tp) &&
	       !deadline_passed(deadline)) {
		for (i = 0; i < tp->nch && !tp->err; i++)
			drive_stream(&tp->st[i], EPOLLIN | EPOLLOUT | EPOLLERR);
		futex_mutex_unlock(&t->lock);
		usleep(DRAIN_POLL_US);
		futex_mutex_lock(&t->lock);
	}
}

static void tcp_peer_destroy(void *ctx, void *xpeer, bool graceful,
			     int64_t deadline)
{
	struct tcp_ctx *t = ctx;
	struct tcp_peer *tp = xpeer;
	struct list_node *pos, *tmp;
	uint32_t i;

	futex_mutex_lock(&t->lock);
	if (graceful && tp->st)
		drain_peer(t, tp, deadline);
	fail_ops(tp, tp->err ? tp->err : -ENOTCONN);
	for (i = 0; i < tp->nch; i++) {
		st_close(&tp->st[i]);
		free(tp->st[i].rx);
	}
	list_del(&tp->node);
	futex_mutex_unlock(&t->lock);
	list_for_each_safe(pos, tmp, &tp->rmrs)
		free(container_of(pos, struct tcp_rmr, node));
	free(tp->st);
	free(tp);
}

/* ---------------------------------------------------------- posting */

/*
 * Cut a put or get into pieces: one per stream from STRIPE_MIN bytes on
 * (at least STRIPE_ALIGN bytes each), none over TCP_FRAME_MAX.
 */
static uint64_t piece_len(const struct tcp_peer *tp, uint64_t len)
{
	uint64_t piece = len;

	if (len >= STRIPE_MIN && tp->nch > 1) {
		piece = (len + tp->nch - 1) / tp->nch;
		piece = (piece + STRIPE_ALIGN - 1) & ~(uint64_t)(STRIPE_ALIGN - 1);
	}
	return piece > TCP_FRAME_MAX ? TCP_FRAME_MAX : piece;
}

/*
 * Post a put, get or flush between [@loff, @loff + @len) of @lbase (our
 * ConnBuffer or a region) and the peer's ConnBuffer or region @rr.
 */
static __hot int post_op(struct tcp_ctx *t, struct tcp_peer *tp, struct req *r,
			 enum req_op kind, uint8_t *lbase, uint64_t loff,
			 const struct tcp_rmr *rr, uint64_t roff, uint64_t len,
			 const uint64_t *tag)
{
	uint16_t ridx = rr ? rr->idx : 0;
	uint64_t piece = piece_len(tp, len), done = 0;
	uint32_t n, i, first = tp->next;
	struct tcp_op *lead = NULL, *op;
	int rc = 0;

	if (tp->err)
		return tp->err;
	if (kind == REQ_MSG || kind == REQ_AMO)	/* not puts nor gets */
		return -EINVAL;
	if (kind == REQ_FLUSH)
		n = tp->nch;
	else
		n = len ? (uint32_t)((len + piece - 1) / piece) : 1;
	for (i = 0; i < n && !tp->err; i++) {
		struct tcp_stream *s;
		uint64_t plen = kind == REQ_FLUSH ? 0 :
				min_t(uint64_t, piece, len - done);

		op = op_get(t);
		if (!op) {
			rc = -ENOMEM;
			break;
		}
		if (!lead) {
			lead = op;
			lead->r = r;
			lead->pieces = n + 1;	/* + ours until all are queued */
		}
		op->lead = lead;
		/*
		 * A put_signal goes whole on the first stream: its tag
		 * follows its bytes, and the tags of put_signals their order.
		 */
		s = &tp->st[tag ? 0 : (first + i) % tp->nch];
		switch (kind) {
		case REQ_PUT:
			op->kind = OP_PUT;
			hdr_encode(op->hdr, TCP_PUT,
				   tag && i == n - 1 ? TCP_F_SIGNAL : 0, ridx,
				   (uint32_t)plen, roff + done,
				   tag && i == n - 1 ? *tag : rr ? rr->gen : 0);
			op->data = lbase + loff + done;
			op->data_len = plen;
			break;
		case REQ_GET:
			op->kind = OP_GET;
			/* the answer names a region get's own range */
			op->exp_off = rr ? roff + done : loff + done;
			hdr_encode(op->hdr, TCP_GET, 0, ridx, (uint32_t)plen,
				   roff + done, rr ? rr->gen : op->exp_off);
			op->exp_len = (uint32_t)plen;
			op->exp_dst = lbase + loff + done;
			break;
		case REQ_FLUSH:
			op->kind = OP_FLUSH;
			hdr_encode(op->hdr, TCP_FLUSH, 0, 0, 0, 0, 0);
			break;
		case REQ_MSG:	/* refused above */
		case REQ_AMO:
			break;
		}
		done += plen;
		queue_op(s, op);
	}
	if (!tag)
		tp->next = (first + n) % tp->nch;
	if (!lead)
		return rc;
	/*
	 * Pieces never made count as failed; the request is the
	 * transport's once any piece is queued.
	 */
	if (i < n) {
		lead->pieces -= n - i;
		if (!lead->err)
			lead->err = rc ? rc : tp->err;
	}
	op_done(t, lead, 0);	/* drops our own count */
	return 0;
}

static __hot int tcp_post_mr(void *ctx, void *xpeer, struct req *r,
			     enum req_op op, void *xmr, uint64_t local_off,
			     void *xrmr, uint64_t remote_off, uint64_t len)
{
	struct tcp_ctx *t = ctx;
	struct tcp_mr *mr = xmr;
	int rc;

	futex_mutex_lock(&t->lock);
	rc = post_op(t, xpeer, r, op, mr ? mr->base : t->base, local_off,
		     xrmr, remote_off, len, NULL);
	futex_mutex_unlock(&t->lock);
	return rc;
}

static __hot int tcp_post(void *ctx, void *xpeer, struct req *r,
			  enum req_op op, uint64_t local_off,
			  uint64_t remote_off, uint64_t len)
{
	return tcp_post_mr(ctx, xpeer, r, op, NULL, local_off, NULL,
			   remote_off, len);
}

static int tcp_put_signal(void *ctx, void *xpeer, struct req *r,
			  uint64_t local_off, uint64_t remote_off, uint64_t len,
			  uint64_t tag)
{
	struct tcp_ctx *t = ctx;
	int rc;

	futex_mutex_lock(&t->lock);
	rc = post_op(t, xpeer, r, REQ_PUT, t->base, local_off, NULL,
		     remote_off, len, &tag);
	futex_mutex_unlock(&t->lock);
	return rc;
}

/* An atomic, on the first stream: AMOs to one peer apply in order. */
static int tcp_amo(void *ctx, void *xpeer, struct req *r, void *xrmr,
		   const struct xport_amo *a)
{
	struct tcp_ctx *t = ctx;
	struct tcp_peer *tp = xpeer;
	const struct tcp_rmr *rr = xrmr;
	struct tcp_op *op;
	int rc = 0;

	futex_mutex_lock(&t->lock);
	if (tp->err) {
		rc = tp->err;
		goto out;
	}
	op = op_get(t);
	if (!op) {
		rc = -ENOMEM;
		goto out;
	}
	op->kind = OP_AMO;
	op->lead = op;
	op->r = r;
	op->pieces = 1;
	op->fetch = a->fetch;
	op->exp_off = a->off;
	put_be64(op->amo, a->operand);
	put_be64(op->amo + 8, a->compare);
	op->amo[16] = a->op;
	op->amo[17] = a->size;
	op->data = op->amo;
	op->data_len = TCP_AMO_LEN;
	hdr_encode(op->hdr, TCP_AMO, a->fetch ? TCP_F_FETCH : 0,
		   rr ? rr->idx : 0, TCP_AMO_LEN, a->off, rr ? rr->gen : 0);
	queue_op(&tp->st[0], op);
out:
	futex_mutex_unlock(&t->lock);
	return rc;
}

/* ---------------------------------------------------------- regions */

#define TCP_MR_KEY_LEN	8	/* be16 index, be16 0, be32 generation */
#define TCP_MR_MAX	UINT16_MAX

static int tcp_mr_reg(void *ctx, const struct comm_mr *cmr, void **xmr)
{
	struct tcp_ctx *t = ctx;
	struct tcp_mr *mr, **mrs;
	uint32_t i, n;
	int rc = 0;

	if (cmr->mem_type != HMC_MEM_CPU)
		return -EOPNOTSUPP;	/* the kernel reads and writes it */
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	mr->base = cmr->addr;
	mr->len = cmr->len;
	mr->notify = cmr->notify;
	mr->access = cmr->access;
	futex_mutex_lock(&t->lock);
	for (i = 0; i < t->nr_mrs && t->mrs[i]; i++)
		;
	if (i == t->nr_mrs) {
		n = t->nr_mrs ? t->nr_mrs * 2 : 16;
		if (n > TCP_MR_MAX)
			n = TCP_MR_MAX;
		mrs = n > t->nr_mrs ? realloc(t->mrs, n * sizeof(*mrs)) : NULL;
		if (!mrs) {
			rc = n > t->nr_mrs ? -ENOMEM : -ENOSPC;
			goto out;
		}
		memset(mrs + t->nr_mrs, 0, (n - t->nr_mrs) * sizeof(*mrs));
		t->mrs = mrs;
		t->nr_mrs = n;
	}
	if (++t->mr_gen == 0)
		t->mr_gen = 1;
	mr->gen = t->mr_gen;
	mr->idx = (uint16_t)(i + 1);
	t->mrs[i] = mr;
	*xmr = mr;
out:
	futex_mutex_unlock(&t->lock);
	if (rc)
		free(mr);
	return rc;
}

/*
 * Peers' accesses to @mr stop here: a put arriving into it is read and
 * dropped, and a peer with an answer from it still queued fails (its get
 * raced the deregistration, and the memory may be gone once we return).
 */
static void tcp_mr_dereg(void *ctx, void *xmr)
{
	struct tcp_ctx *t = ctx;
	struct tcp_mr *mr = xmr;
	struct list_node *pos, *n;
	uint32_t i;

	futex_mutex_lock(&t->lock);
	t->mrs[mr->idx - 1] = NULL;
	list_for_each_safe(pos, n, &t->peers) {
		struct tcp_peer *tp = container_of(pos, struct tcp_peer, node);
		bool raced = false;

		for (i = 0; i < tp->nch; i++) {
			struct tcp_stream *s = &tp->st[i];
			struct list_node *q;

			if (s->left && s->mr == mr) {
				s->dst = NULL;
				s->mr = NULL;
			}
			for (q = s->txq.next; q != &s->txq; q = q->next)
				if (container_of(q, struct tcp_op, node)->mr == mr)
					raced = true;
		}
		if (raced)
			peer_fail(tp, -ECONNABORTED);
	}
	futex_mutex_unlock(&t->lock);
	free(mr);
}

static int tcp_mr_pack(void *ctx, void *xmr, uint8_t *key, uint32_t cap,
		       uint32_t *len)
{
	struct tcp_mr *mr = xmr;

	if (cap < TCP_MR_KEY_LEN)
		return -ENOSPC;
	put_be16(key, mr->idx);
	put_be16(key + 2, 0);
	put_be32(key + 4, mr->gen);
	*len = TCP_MR_KEY_LEN;
	return 0;
}

static int tcp_rmr_import(void *ctx, void *xpeer, const uint8_t *key,
			  uint32_t len, uint64_t size, void **xrmr)
{
	struct tcp_ctx *t = ctx;
	struct tcp_peer *tp = xpeer;
	struct tcp_rmr *rr;

	if (len != TCP_MR_KEY_LEN || !get_be16(key) || get_be16(key + 2))
		return -EINVAL;
	rr = calloc(1, sizeof(*rr));
	if (!rr)
		return -ENOMEM;
	rr->idx = get_be16(key);
	rr->gen = get_be32(key + 4);
	futex_mutex_lock(&t->lock);
	list_add_tail(&tp->rmrs, &rr->node);
	futex_mutex_unlock(&t->lock);
	*xrmr = rr;
	return 0;
}

/* --------------------------------------------------------- progress */

static void disarm_timer(struct tcp_ctx *t)
{
	struct itimerspec its = { 0 };
	uint64_t n;

	if (!t->timer_set)
		return;
	timerfd_settime(t->timerfd, 0, &its, NULL);
	if (read(t->timerfd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		pr_debug("tcp transport timer: %s", hmc_strerror(errno));
	t->timer_set = false;
}

static __hot void drive_stream(struct tcp_stream *s, uint32_t events)
{
	int rc = 0;

	if (s->fd < 0 || s->tp->err)
		return;
	if (events & EPOLLERR)
		rc = reap_zc(s);
	if (!rc && events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		rc = pull(s);
	/* answers queued by what we read, or room the socket made */
	if (!rc && !list_empty(&s->txq))
		rc = push(s);
	if (rc)
		peer_fail(s->tp, rc);
}

/* Drop an accepted connection that failed its hello. */
static void hello_drop(struct tcp_ctx *t, struct tcp_hello *h)
{
	epoll_ctl(t->epfd, EPOLL_CTL_DEL, h->fd, NULL);
	close(h->fd);
	list_del(&h->node);
	free(h);
}

static bool token_eq(const uint8_t *a, const uint8_t *b)
{
	uint8_t d = 0;
	int i;

	for (i = 0; i < TCP_TOKEN_LEN; i++)
		d |= a[i] ^ b[i];
	return !d;
}

/* A complete hello: attach its connection to the stream it names. */
static int hello_done(struct tcp_ctx *t, struct tcp_hello *h)
{
	const uint8_t *b = h->buf;
	uint8_t ack[TCP_ACK_LEN];
	struct tcp_stream *s = NULL;
	struct list_node *pos;
	uint16_t idx = get_be16(b + 6);
	int rc;

	if (get_be32(b) != TCP_HELLO_MAGIC || b[4] != TCP_VERSION || b[5] ||
	    get_be16(b + 10) || get_be32(b + 32))
		return -EPROTO;
	for (pos = t->peers.next; pos != &t->peers; pos = pos->next) {
		struct tcp_peer *tp = container_of(pos, struct tcp_peer, node);

		if (tp->listener && !tp->err && token_eq(tp->token, b + 12) &&
		    get_be16(b + 8) == tp->nch && idx < tp->nch &&
		    tp->st[idx].fd < 0 && get_be32(b + 28) == tp->peer->rank) {
			s = &tp->st[idx];
			break;
		}
	}
	if (!s)
		return -EACCES;
	put_be32(ack, TCP_ACK_MAGIC);
	put_be16(ack + 4, idx);
	put_be16(ack + 6, 0);
	/* a fresh socket's buffer takes 8 bytes */
	if (send(h->fd, ack, sizeof(ack), MSG_NOSIGNAL | MSG_DONTWAIT) !=
	    sizeof(ack))
		return -EIO;
	rc = st_attach(s, h->fd, true);
	if (rc) {
		peer_fail(s->tp, rc);
		return rc;
	}
	list_del(&h->node);
	free(h);
	rc = push(s);		/* what was posted before it came */
	if (rc)
		peer_fail(s->tp, rc);
	return 0;
}

static void hello_input(struct tcp_ctx *t, struct tcp_hello *h)
{
	ssize_t n;
	int rc;

	n = recv(h->fd, h->buf + h->have, TCP_HELLO_LEN - h->have,
		 MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		hello_drop(t, h);
		return;
	}
	h->have += (uint32_t)n;
	if (h->have < TCP_HELLO_LEN)
		return;
	rc = hello_done(t, h);
	if (rc) {
		pr_debug("rank %u: tcp data connection refused: %s",
			 t->comm->rank, hmc_strerror(rc));
		hello_drop(t, h);
	}
}

static void accept_all(struct tcp_ctx *t)
{
	struct tcp_hello *h;
	int fd;

	while ((fd = sock_accept(t->lfd)) >= 0) {
		h = calloc(1, sizeof(*h));
		if (!h) {
			close(fd);
			continue;
		}
		h->kind = TSRC_HELLO;
		h->fd = fd;
		h->deadline = deadline_after_ms(t->comm->connect_timeout_ms);
		list_add_tail(&t->hellos, &h->node);
		if (ep_set(t, EPOLL_CTL_ADD, fd, EPOLLIN, h))
			hello_drop(t, h);
	}
}

/*
 * Deadlines: hellos that did not come, listeners' streams that did not
 * come, and streams silent for op_timeout_ms while something is awaited.
 */
static void check_deadlines(struct tcp_ctx *t, int64_t now)
{
	int64_t stall = (int64_t)t->comm->op_timeout_ms * 1000000;
	struct list_node *pos, *tmp;
	uint32_t i;

	t->next_check = now + CHECK_NS;
	list_for_each_safe(pos, tmp, &t->hellos) {
		struct tcp_hello *h = container_of(pos, struct tcp_hello, node);

		if (now >= h->deadline)
			hello_drop(t, h);
	}
	list_for_each_safe(pos, tmp, &t->peers) {
		struct tcp_peer *tp = container_of(pos, struct tcp_peer, node);

		if (tp->err)
			continue;
		if (tp->attached < tp->nch) {
			if (now >= tp->attach_deadline)
				peer_fail(tp, -ETIMEDOUT);
			continue;
		}
		for (i = 0; i < tp->nch && !tp->err; i++) {
			struct tcp_stream *s = &tp->st[i];
			bool rx_wait = s->left || s->rx_len > s->rx_off ||
				       !list_empty(&s->waitq);
			bool tx_wait = !list_empty(&s->txq) && s->want_out;

			if ((rx_wait && now - s->last_rx > stall) ||
			    (tx_wait && now - s->last_tx > stall))
				peer_fail(tp, -ETIMEDOUT);
		}
	}
}

static __hot int tcp_progress(void *ctx)
{
	struct tcp_ctx *t = ctx;
	struct epoll_event evs[MAX_EVENTS];
	int i, nev;
	int64_t now;

	futex_mutex_lock(&t->lock);
	nev = epoll_wait(t->epfd, evs, MAX_EVENTS, 0);
	for (i = 0; i < nev; i++) {
		enum tsrc_kind *k = evs[i].data.ptr;

		switch (*k) {
		case TSRC_LISTEN:
			accept_all(t);
			break;
		case TSRC_HELLO:
			hello_input(t, container_of(k, struct tcp_hello, kind));
			break;
		case TSRC_STREAM:
			drive_stream(container_of(k, struct tcp_stream, kind),
				     evs[i].events);
			break;
		case TSRC_TIMER:
			disarm_timer(t);
			t->next_check = 0;	/* look now */
			break;
		}
	}
	if (!list_empty(&t->peers) || !list_empty(&t->hellos)) {
		now = now_ns();
		if (now >= t->next_check)
			check_deadlines(t, now);
	}
	futex_mutex_unlock(&t->lock);
	return nev > 0 ? nev : 0;
}

/* Whether a deadline is running: a hello, a stream or an answer to come. */
static bool deadlines_pending(struct tcp_ctx *t)
{
	struct list_node *pos;
	uint32_t i;

	if (!list_empty(&t->hellos))
		return true;
	for (pos = t->peers.next; pos != &t->peers; pos = pos->next) {
		struct tcp_peer *tp = container_of(pos, struct tcp_peer, node);

		if (tp->err)
			continue;
		if (tp->attached < tp->nch)
			return true;
		for (i = 0; i < tp->nch; i++)
			if (tp->st[i].left || !list_empty(&tp->st[i].waitq) ||
			    tp->st[i].want_out)
				return true;
	}
	return false;
}

/*
 * The epoll set is level-triggered, so nothing is lost between progress()
 * and the engine's sleep; a running deadline sets the timer so that the
 * engine wakes to check it even when no byte comes.
 */
static int tcp_arm(void *ctx)
{
	struct tcp_ctx *t = ctx;
	struct itimerspec its = { 0 };
	int64_t wait;

	futex_mutex_lock(&t->lock);
	if (deadlines_pending(t)) {
		wait = t->next_check - now_ns();
		if (wait < 1000000)
			wait = 1000000;
		its.it_value.tv_sec = wait / 1000000000;
		its.it_value.tv_nsec = wait % 1000000000;
		if (!timerfd_settime(t->timerfd, 0, &its, NULL))
			t->timer_set = true;
	} else {
		disarm_timer(t);
	}
	futex_mutex_unlock(&t->lock);
	return 0;
}

static int tcp_event_fd(void *ctx)
{
	return ((struct tcp_ctx *)ctx)->epfd;
}

const struct xport_ops xport_tcp_ops = {
	.type = HMC_TRANSPORT_TCP,
	.init = tcp_init,
	.fini = tcp_fini,
	.peer_create = tcp_peer_create,
	.peer_info = tcp_peer_info,
	.peer_connect = tcp_peer_connect,
	.peer_destroy = tcp_peer_destroy,
	.post = tcp_post,
	.put_signal = tcp_put_signal,
	.tags_in_band = true,
	.mr_reg = tcp_mr_reg,
	.mr_dereg = tcp_mr_dereg,
	.mr_pack = tcp_mr_pack,
	.rmr_import = tcp_rmr_import,
	.post_mr = tcp_post_mr,
	.amo = tcp_amo,
	.notifies_writes = true,
	.progress = tcp_progress,
	.arm = tcp_arm,
	.event_fd = tcp_event_fd,
};
