// SPDX-License-Identifier: MIT
/*
 * Two-sided messages over the control connections and the transports'
 * gets (see hmc.h, "Messages", for what callers get).
 *
 * Protocol, in FRAME_MSG frames on the control connection (so in order per
 * peer, which is what makes matching non-overtaking):
 *   EAGER  sender -> receiver: tag and data (up to HMC_MSG_EAGER_MAX);
 *   RTS    sender -> receiver: id, tag, size, and the source's offset in
 *          the sender's ConnBuffer when it lies there (DIRECT);
 *   CTS    receiver -> sender: matched, start staging (not for DIRECT);
 *   DATA   sender -> receiver: bytes [msg_off, +len) are in my slot at
 *          slot_off, in message order;
 *   GOT    receiver -> sender: my get of your slot is done, reuse it;
 *   FIN    receiver -> sender: all of a DIRECT message is here, or the
 *          message failed (status);
 *   CREDIT receiver -> sender: envelope bytes taken off the wire;
 *   RING   receiver -> sender: write your envelopes into my ring (below);
 *   RING_ON sender -> receiver: from here on they are there;
 *   WAKE   either way: a ring has a record, or room, for a sleeper.
 * A sender has at most MSG_WINDOW bytes of envelopes (EAGER with its data,
 * RTS) unacknowledged per peer, so that control sockets never fill and
 * block a progress round on both sides at once; the other kinds are
 * bounded by the slots.
 *
 * Rings: between peers on the shm transport (each maps the other's
 * ConnBuffer), envelopes travel through a ring in the receiver's message
 * region instead (ring.h): an 8-byte message is one cache line written by
 * the sender and read by the receiver, no system call on either side.
 * Each side offers the peer a ring as soon as it has state for it; the
 * peer answers RING_ON on the control connection and from then on puts
 * every envelope, EAGER and RTS alike, into the ring, never on the
 * socket. The receiver reads the ring only once it has read that RING_ON,
 * that is after every envelope sent before it: one path at a time per
 * direction, switched once, in order, so nothing overtakes. Everything
 * but envelopes (CTS, DATA, GOT, FIN) stays on the socket: those follow a
 * match, which follows the envelope. The ring is the credit (a full ring
 * keeps sends queued until the receiver makes room) and its records are
 * whole or unseen. Receivers poll their rings in every progress round
 * (blocking forms spin for a while first) and, before they sleep, say so
 * in a word of the ring area, which a sender that finds it cleared
 * answers with a WAKE frame; a sender that finds the ring full is woken
 * the same way when room is made. A ring's records die with its
 * connection, as unread socket frames do.
 *
 * Slots: the last msg_region bytes of our ConnBuffer, the first half for
 * data we send, the second for data we receive. Sending slots are freed by
 * the peer (GOT), receiving ones by our own copy out, so two peers that
 * send to each other at once can never wait on each other's slots.
 *
 * Every frame is handled and every transfer driven inside progress rounds
 * (engine.lock held), as are peer teardowns: a round that finds a peer
 * down (its requests already failed by the core) drops its messages
 * without touching their memory again. msg->lock nests inside
 * engine.lock and outside comm->lock and the request table's lock.
 */
#include <errno.h>
#include <sched.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "core/peer.h"
#include "core/xport.h"
#include "mem/buf.h"
#include "mem/mem.h"
#include "msg/msg.h"
#include "msg/ring.h"
#include "sys/log.h"
#include "wire/conn.h"
#include "xport/xport.h"

#define MSG_SLOT_DEFAULT	(256u * 1024)
#define MSG_REGION_MAX_DEFAULT	(64ull << 20)
/*
 * Envelope bytes (eager data included) a sender may have unacknowledged
 * per peer: below what a Unix or TCP socket buffers by default (208 KiB),
 * so that a send holding msg->lock never blocks on a full socket while
 * the peer's progress waits for its own msg->lock to read ours.
 */
#define MSG_WINDOW		(128u * 1024)
#define MSG_ENVELOPE_COST	64u	/* what an envelope counts besides its data */
#define MSG_DIRECT_CHUNK	(4ull << 20)	/* one get of a direct message */
#define MSG_DIRECT_INFLIGHT	4	/* gets in flight per direct message */
#define MSG_SPIN_NS		(50 * 1000)	/* a large blocking one polls first */
#define MSG_RINGS_MAX		8	/* peers with a ring into us, at most */
#define MSG_RING_CELLS		1024u	/* 64 KiB: any eager message fits */
/*
 * The ring area at the start of the message region: the awake word's
 * line, each ring's control line, then the rings' cells.
 */
#define MSG_RING_HDR		4096u
#define MSG_RING_BYTES		((uint64_t)MSG_RING_CELLS * RING_CELL)
#define MSG_RTS_REC_LEN		24u	/* id, size, source offset */

enum msg_kind {
	MK_EAGER = 1,
	MK_RTS,
	MK_CTS,
	MK_DATA,
	MK_GOT,
	MK_FIN,
	MK_CREDIT,
	MK_RING,
	MK_RING_ON,
	MK_WAKE,
};

#define MSG_HDR_LEN		8	/* kind, flags, 0, 0, s32 status */
#define MSG_EAGER_HDR_LEN	(MSG_HDR_LEN + 8)
#define MSG_RTS_LEN		(MSG_HDR_LEN + 32)
#define MSG_ID_LEN		(MSG_HDR_LEN + 8)	/* CTS, FIN, CREDIT, RING_ON, WAKE */
#define MSG_RING_LEN		(MSG_HDR_LEN + 24)
#define MSG_DATA_LEN		(MSG_HDR_LEN + 32)
#define MSG_GOT_LEN		(MSG_HDR_LEN + 24)
#define MSG_F_DIRECT		(1u << 0)	/* RTS: src_off is valid */

enum op_state {
	OP_QUEUED,	/* send: envelope waits for the window */
	OP_POSTED,	/* recv: waits for a match */
	OP_WAIT_CTS,	/* send: RTS out */
	OP_STAGING,	/* send: CTS in, staging through our slots */
	OP_WAIT_FIN,	/* send: DIRECT, the receiver pulls */
	OP_RECV,	/* recv: matched, pulling */
};

struct msg_peer;

/*
 * A chunk announced to a receive, until it has landed; or one a send
 * stages, until it is announced.
 */
struct msg_chunk {
	struct list_node node;
	uint64_t msg_off, len;
	uint64_t remote_off;	/* in the sender's ConnBuffer */
	bool remote_slot;	/* the sender's slot: give it back (GOT) */
	int slot;		/* our receiving slot, or -1: straight in */
	hmc_req_t get;		/* 0 until posted */
	bool copied;		/* got, or copied out of the shm mapping */
	void *ev;		/* its GPU copy on the runtime's stream, if any */
	int dev;		/* that copy's device */
};

struct msg_op {
	struct list_node node;
	bool is_send;
	enum op_state state;
	struct msg_peer *mp;	/* once bound to a connection */
	uint32_t rank;		/* peer, or HMC_ANY_SOURCE */
	uint64_t tag;
	uint8_t *data;
	uint64_t cap;		/* bytes at data */
	enum hmc_mem_type mem_type;
	bool in_buf;		/* data lies in our ConnBuffer, at buf_off */
	uint64_t buf_off;
	struct hmc_msg_status *status;
	struct req *r;
	hmc_req_t id;
	/* the message */
	uint64_t msg_id;
	uint64_t size;
	uint64_t staged;	/* send: bytes announced; recv: bytes announced or posted */
	uint64_t done;		/* bytes given back (send) or landed (recv) */
	bool direct;		/* recv: pull from src_off */
	uint64_t src_off;
	struct list_node chunks;	/* recv; send: staged, not announced */
	unsigned int inflight;	/* recv: gets posted */
};

/* A message that arrived before a receive matched it. */
struct msg_in {
	struct list_node node;
	struct msg_peer *mp;	/* holds a reference on it */
	uint32_t rank;
	uint64_t tag;
	uint64_t size;
	uint8_t *data;		/* EAGER */
	bool rts;
	bool direct;
	uint64_t msg_id;
	uint64_t src_off;
};

/* One connection to a peer (a peer that reconnects gets a new one). */
struct msg_peer {
	struct list_node node;
	struct peer *peer;	/* referenced */
	int refs;		/* ops and arrivals bound to it, + 1 while linked */
	bool down;
	uint64_t next_id;
	uint64_t window_used;	/* our envelopes not credited by the peer */
	uint64_t rx_uncredited;	/* its envelopes we have not credited */
	struct list_node outq;	/* sends whose envelope waits */
	struct list_node sends;	/* sends whose envelope left */
	struct list_node recvs;	/* matched receives */
	/* Its envelopes to us: our ring rx_ring (or -1), read once rx_on. */
	int rx_ring;
	bool rx_on;
	struct ring_rx rx;
	/* Ours to it, in its ring once tx_on (in its ConnBuffer: pin it). */
	bool tx_on;
	struct ring_tx tx;
	uint32_t *tx_awake;	/* its awake word */
};

struct msg {
	pthread_mutex_t lock;
	struct hmc_comm *c;
	uint64_t region_off, slot_size;
	uint32_t nr_send, nr_recv;	/* slots of each half */
	struct msg_op **send_owner;	/* sending slot -> its message */
	int *free_send, *free_recv;	/* stacks of free slot numbers */
	uint32_t nr_free_send, nr_free_recv;
	struct list_node peers;
	struct list_node posted;	/* receives not matched, in post order */
	struct list_node unexpected;	/* arrivals not matched, in order */
	unsigned int busy;	/* atomic: ops in flight (progress has work) */
	unsigned int nr_copies;	/* atomic: GPU copies on a stream (no fd wakes us) */
	/* Our rings, in the ring area at ring_off (nr_rings 0: none). */
	uint64_t ring_off;
	uint32_t nr_rings;
	unsigned int nr_rx_on;	/* atomic: rings being read */
	unsigned int nr_cpus;	/* ours to run on */
	uint32_t *awake;	/* our awake word (ring.h) */
	struct msg_peer *ring_owner[MSG_RINGS_MAX];
	uint16_t ring_gen[MSG_RINGS_MAX];
};

static inline struct msg *msg_of(struct hmc_comm *c)
{
	return c->ext_ctx;
}

/* The CPUs this process may run on (1 if it cannot tell). */
static unsigned int cpus_of_ours(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	return (unsigned int)CPU_COUNT(&set);
}

/* ------------------------------------------------------------- slots */

static uint64_t send_slot_off(struct msg *m, int s)
{
	return m->region_off + (uint64_t)s * m->slot_size;
}

static uint64_t recv_slot_off(struct msg *m, int s)
{
	return m->region_off + (uint64_t)(m->nr_send + s) * m->slot_size;
}

/* ------------------------------------------------------------ frames */

static void hdr(uint8_t *b, enum msg_kind kind, uint8_t flags, int32_t status)
{
	b[0] = (uint8_t)kind;
	b[1] = flags;
	b[2] = b[3] = 0;
	put_be32(b + 4, (uint32_t)status);
}

static int send_frame(struct msg *m, struct msg_peer *mp, const uint8_t *b,
		      uint32_t len)
{
	return conn_send(mp->peer->conn, FRAME_MSG, b, len,
			 deadline_after_ms(m->c->op_timeout_ms));
}

/* A frame of a kind that names a message by id (CTS, FIN). */
static int send_id(struct msg *m, struct msg_peer *mp, enum msg_kind kind,
		   uint64_t id, int status)
{
	uint8_t b[MSG_ID_LEN];

	hdr(b, kind, 0, status);
	put_be64(b + 8, id);
	return send_frame(m, mp, b, sizeof(b));
}

/* ----------------------------------------------------------- copies */

/* Copy between user memory of @type and plain host memory. */
static int host_copy(enum hmc_mem_type type, void *dst, const void *src,
		     size_t len, bool to_user)
{
	int dev;

	if (!len)
		return 0;
	if (type == HMC_MEM_CPU) {
		memcpy(dst, src, len);
		return 0;
	}
	dev = mem_ptr_device(type, to_user ? dst : src);
	if (dev < 0)
		return dev;
	return hmc_mem_copy(type, dev, dst, src, len,
			    to_user ? HMC_COPY_H2D : HMC_COPY_D2H);
}

/*
 * Copy a chunk of a message of MSG_STREAM_MIN bytes or more into plain
 * memory with non-temporal stores (SSE2, in every x86-64): a destination
 * that large does not stay in the cache anyway, so the stores need not
 * read each line first. The sender streams into its slots too (copy_in()). glibc's
 * memcpy streams only copies larger than most of the last-level cache,
 * never one chunk. msg_bw 64 MiB through 4 MiB buffers: 7.6-7.8 GB/s with
 * memcpy, 9.6-11.0 GB/s this way; but 1 MiB messages into one buffer,
 * which stays in the cache, 13.3 GB/s with memcpy, 11.2-12.1 streaming.
 */
#define MSG_STREAM_MIN	(8ull << 20)

static void copy_streaming(uint8_t *dst, const uint8_t *src, size_t len)
{
#if defined(__x86_64__)
	size_t head = (16 - ((uintptr_t)dst & 15)) & 15, i;

	if (len < 4096) {
		memcpy(dst, src, len);
		return;
	}
	memcpy(dst, src, head);
	dst += head;
	src += head;
	len -= head;
	for (i = 0; i + 64 <= len; i += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)(src + i));
		__m128i b = _mm_loadu_si128((const __m128i *)(src + i + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(src + i + 32));
		__m128i d = _mm_loadu_si128((const __m128i *)(src + i + 48));

		_mm_stream_si128((__m128i *)(dst + i), a);
		_mm_stream_si128((__m128i *)(dst + i + 16), b);
		_mm_stream_si128((__m128i *)(dst + i + 32), c);
		_mm_stream_si128((__m128i *)(dst + i + 48), d);
	}
	memcpy(dst + i, src + i, len - i);
	/* Streaming stores are weakly ordered: done before "the chunk is in". */
	_mm_sfence();
#else
	memcpy(dst, src, len);
#endif
}

/*
 * Copies between slots and GPU memory go on the runtime's stream where
 * the backend has one (mem_copy_start()): a slot's copy then overlaps the
 * transfers of the others and the copies of other slots, and the chunk
 * moves on (is announced, handed back) once its event says it landed.
 */

/* Whether @ch's copy has landed (@wait: wait for it): 0, -EINPROGRESS or its error. */
static int copy_landed(struct msg *m, struct msg_op *op, struct msg_chunk *ch,
		       bool wait)
{
	int rc;

	if (!ch->ev)
		return 0;
	rc = mem_copy_done(op->mem_type, ch->dev, ch->ev, wait);
	if (rc == -EINPROGRESS)
		return rc;
	ch->ev = NULL;
	__atomic_sub_fetch(&m->nr_copies, 1, __ATOMIC_RELAXED);
	return rc;
}

/* Start a GPU copy of @ch between host memory and @op's data. */
static int copy_gpu(struct msg *m, struct msg_op *op, struct msg_chunk *ch,
		    void *dst, const void *src, enum hmc_copy_kind kind)
{
	int rc;

	rc = mem_ptr_device(op->mem_type, op->data + ch->msg_off);
	if (rc < 0)
		return rc;
	ch->dev = rc;
	rc = mem_copy_start(op->mem_type, ch->dev, dst, src, ch->len, kind,
			    &ch->ev);
	if (!rc && ch->ev)
		__atomic_add_fetch(&m->nr_copies, 1, __ATOMIC_RELAXED);
	return rc;
}

/* ---------------------------------------------------- peers and ops */

static void mp_put(struct msg_peer *mp)
{
	if (--mp->refs)
		return;
	peer_put(mp->peer);
	free(mp);
}

/* ------------------------------------------------------------ rings */

static uint8_t *ring_area(struct msg *m)
{
	return (uint8_t *)hmc_buf_ptr(m->c->buf) + m->ring_off;
}

/*
 * Offer @mp's peer a ring of ours for its envelopes, if it reaches us over
 * shm and a ring is free; else it keeps the socket (msg->lock held).
 */
static void ring_offer(struct msg *m, struct msg_peer *mp)
{
	uint8_t b[MSG_RING_LEN];
	uint32_t i;
	uint16_t gen;

	if (mp->peer->xops->type != HMC_TRANSPORT_SHM)
		return;
	for (i = 0; i < m->nr_rings && m->ring_owner[i]; i++)
		;
	if (i == m->nr_rings)
		return;
	/* 0 is no generation: a zeroed cell never matches. */
	gen = ++m->ring_gen[i] ? m->ring_gen[i] : ++m->ring_gen[i];
	mp->rx = (struct ring_rx){
		.cells = ring_area(m) + MSG_RING_HDR + i * MSG_RING_BYTES,
		.ctl = (struct ring_ctl *)(ring_area(m) + RING_CELL * (1 + i)),
		.nr = MSG_RING_CELLS,
		.gen = gen,
	};
	ring_reset(mp->rx.ctl, mp->rx.cells, mp->rx.nr);
	hdr(b, MK_RING, 0, 0);
	put_be64(b + 8, m->ring_off);
	put_be32(b + 16, i);
	put_be32(b + 20, MSG_RING_CELLS);
	put_be64(b + 24, gen);
	if (send_frame(m, mp, b, sizeof(b)))
		return;		/* the connection is failing: no ring */
	m->ring_owner[i] = mp;
	mp->rx_ring = (int)i;
}

/* @mp is going: its ring is free for another peer (msg->lock held). */
static void ring_drop(struct msg *m, struct msg_peer *mp)
{
	if (mp->rx_ring < 0)
		return;
	m->ring_owner[mp->rx_ring] = NULL;
	mp->rx_ring = -1;
	if (mp->rx_on)
		__atomic_sub_fetch(&m->nr_rx_on, 1, __ATOMIC_RELAXED);
	mp->rx_on = false;
}

/* Our connection state for @p, if we have any (msg->lock held). */
static struct msg_peer *mp_find(struct msg *m, struct peer *p)
{
	struct list_node *n;

	for (n = m->peers.next; n != &m->peers; n = n->next) {
		struct msg_peer *mp = container_of(n, struct msg_peer, node);

		if (mp->peer == p)
			return mp;
	}
	return NULL;
}

/* Our connection state for @p, created on first use (msg->lock held). */
static struct msg_peer *mp_get(struct msg *m, struct peer *p)
{
	struct msg_peer *mp = mp_find(m, p);

	if (mp)
		return mp;
	mp = calloc(1, sizeof(*mp));
	if (!mp)
		return NULL;
	mp->peer = peer_get(p);
	mp->refs = 1;
	list_init(&mp->outq);
	list_init(&mp->sends);
	list_init(&mp->recvs);
	mp->rx_ring = -1;
	list_add_tail(&m->peers, &mp->node);
	ring_offer(m, mp);
	return mp;
}

static bool peer_up(struct peer *p)
{
	return __atomic_load_n(&p->state, __ATOMIC_ACQUIRE) == PEER_CONNECTED;
}

static int peer_err(struct peer *p)
{
	return p->error ? p->error : -ECONNRESET;
}

/* Finish @op with @status and free it (off every list; msg->lock held). */
static void op_finish(struct msg *m, struct msg_op *op, int status)
{
	struct list_node *n, *tmp;

	list_for_each_safe(n, tmp, &op->chunks) {
		struct msg_chunk *ch = container_of(n, struct msg_chunk, node);

		/* A get that never finished was failed with the peer. */
		if (ch->get)
			req_abandon(&m->c->reqs, ch->get);
		/* A GPU still reads or writes the chunk's memory: let it end. */
		copy_landed(m, op, ch, true);
		if (ch->slot >= 0 && !op->is_send)	/* sending ones: below */
			m->free_recv[m->nr_free_recv++] = ch->slot;
		list_del(n);
		free(ch);
	}
	if (op->is_send) {
		uint32_t s;

		for (s = 0; s < m->nr_send; s++)
			if (m->send_owner[s] == op) {
				m->send_owner[s] = NULL;
				m->free_send[m->nr_free_send++] = (int)s;
			}
	}
	/*
	 * A request the core already failed with its peer may have been
	 * collected, its status gone with the caller's frame.
	 */
	if (op->status && !req_is_done(&m->c->reqs, op->id)) {
		op->status->error = status;
		if (!op->is_send && op->mp) {
			op->status->source = op->rank;
			op->status->tag = op->tag;
			op->status->len = op->size;
		}
	}
	list_del(&op->node);
	if (op->mp)
		mp_put(op->mp);
	req_complete(op->r, status);
	__atomic_sub_fetch(&m->busy, 1, __ATOMIC_RELAXED);
	free(op);
}

static void in_free(struct msg_in *in)
{
	list_del(&in->node);
	mp_put(in->mp);
	free(in->data);
	free(in);
}

static int ring_poll(struct msg *m, struct msg_peer *mp, bool down);

/*
 * @mp's peer is down: the core failed its requests; let go of everything
 * without touching user memory again.
 */
static void mp_down(struct msg *m, struct msg_peer *mp)
{
	struct list_node *lists[] = { &mp->outq, &mp->sends, &mp->recvs };
	struct list_node *n, *tmp;
	int err = peer_err(mp->peer);
	size_t i;

	if (mp->rx_on)
		ring_poll(m, mp, true);
	mp->down = true;
	for (i = 0; i < ARRAY_SIZE(lists); i++)
		list_for_each_safe(n, tmp, lists[i])
			op_finish(m, container_of(n, struct msg_op, node), err);
	/* Receives posted for this source only. */
	list_for_each_safe(n, tmp, &m->posted) {
		struct msg_op *op = container_of(n, struct msg_op, node);

		if (op->mp == mp)
			op_finish(m, op, err);
	}
	/* What arrived whole before the failure is still delivered. */
	list_for_each_safe(n, tmp, &m->unexpected) {
		struct msg_in *in = container_of(n, struct msg_in, node);

		if (in->mp == mp && in->rts)
			in_free(in);
	}
	ring_drop(m, mp);
	mp->tx_on = false;
	list_del(&mp->node);
	mp_put(mp);
}

/* --------------------------------------------------------- sending */

/* The largest message that goes eagerly into @t's ring. */
static uint64_t ring_eager_max(const struct ring_tx *t)
{
	return min_t(uint64_t, HMC_MSG_EAGER_MAX, ring_payload_max(t->nr));
}

/*
 * Put @op's envelope into @mp's ring (pinned): 0, -EAGAIN while it is
 * full, or an error.
 */
static int ring_put(struct msg_peer *mp, struct msg_op *op)
{
	bool eager = op->size <= ring_eager_max(&mp->tx);
	uint64_t rts[3];
	uint8_t *d;
	int rc;

	d = ring_reserve(&mp->tx, eager ? (uint32_t)op->size : MSG_RTS_REC_LEN);
	if (!d)
		return -EAGAIN;
	if (!eager) {
		rts[0] = op->msg_id;
		rts[1] = op->size;
		rts[2] = op->in_buf ? op->buf_off : 0;
		memcpy(d, rts, sizeof(rts));
		ring_commit(&mp->tx, MSG_RTS_REC_LEN, MK_RTS,
			    op->in_buf ? MSG_F_DIRECT : 0, op->tag);
		return 0;
	}
	rc = host_copy(op->mem_type, d, op->data, op->size, false);
	if (rc)
		return rc;	/* reserved, never published: nothing to undo */
	ring_commit(&mp->tx, (uint32_t)op->size, MK_EAGER, 0, op->tag);
	return 0;
}

/* Put the envelopes that fit into @mp's ring, in post order (msg->lock held). */
static int flush_ring(struct msg *m, struct msg_peer *mp)
{
	struct list_node *n, *tmp;
	bool wake = false;
	struct peer *p;
	int events = 0, rc;

	/* The ring lies in the peer's ConnBuffer, mapped until it closes. */
	if (peer_use(m->c, mp->peer->rank, &p))
		return 0;	/* going down: a round fails what waits */
	if (p == mp->peer) {
		list_for_each_safe(n, tmp, &mp->outq) {
			struct msg_op *op = container_of(n, struct msg_op, node);

			rc = ring_put(mp, op);
			if (rc == -EAGAIN)
				break;
			events++;
			if (rc || op->size <= ring_eager_max(&mp->tx)) {
				op_finish(m, op, rc);
				continue;
			}
			list_del(n);
			op->state = op->in_buf ? OP_WAIT_FIN : OP_WAIT_CTS;
			list_add_tail(&mp->sends, n);
		}
		wake = events && ring_wake_needed(mp->tx_awake);
	}
	peer_unuse(p);
	if (wake && send_id(m, mp, MK_WAKE, 0, 0))
		comm_peer_error(m->c, mp->peer, -EIO);
	return events;
}

/*
 * Send the envelopes the window allows, or the ring takes, in post order
 * (msg->lock held).
 */
static int flush_outq(struct msg *m, struct msg_peer *mp)
{
	struct list_node *n, *tmp;
	int events = 0;

	if (mp->tx_on)
		return flush_ring(m, mp);
	list_for_each_safe(n, tmp, &mp->outq) {
		struct msg_op *op = container_of(n, struct msg_op, node);
		bool eager = op->size <= HMC_MSG_EAGER_MAX;
		uint64_t cost = MSG_ENVELOPE_COST + (eager ? op->size : 0);
		uint8_t rts[MSG_RTS_LEN], *b;
		int rc;

		if (mp->window_used && mp->window_used + cost > MSG_WINDOW)
			break;
		if (eager) {
			b = malloc(MSG_EAGER_HDR_LEN + op->size);
			if (!b) {
				op_finish(m, op, -ENOMEM);
				continue;
			}
			hdr(b, MK_EAGER, 0, 0);
			put_be64(b + 8, op->tag);
			rc = host_copy(op->mem_type, b + MSG_EAGER_HDR_LEN,
				       op->data, op->size, false);
			if (!rc)
				rc = send_frame(m, mp, b, (uint32_t)(MSG_EAGER_HDR_LEN +
								     op->size));
			free(b);
			if (!rc)
				mp->window_used += cost;
			op_finish(m, op, rc);
			events++;
			continue;
		}
		hdr(rts, MK_RTS, op->in_buf ? MSG_F_DIRECT : 0, 0);
		put_be64(rts + 8, op->msg_id);
		put_be64(rts + 16, op->tag);
		put_be64(rts + 24, op->size);
		put_be64(rts + 32, op->in_buf ? op->buf_off : 0);
		rc = send_frame(m, mp, rts, sizeof(rts));
		if (rc) {
			op_finish(m, op, rc);
			continue;
		}
		mp->window_used += cost;
		list_del(n);
		op->state = op->in_buf ? OP_WAIT_FIN : OP_WAIT_CTS;
		list_add_tail(&mp->sends, n);
		events++;
	}
	return events;
}

/* Stage what the free slots take and announce it (msg->lock held). */
/*
 * Copy chunk @ch of @op into its sending slot (or start to). A message
 * that streams on the receiver's side streams here too: the slot's lines
 * then go to memory rather than stay modified in our cache, where the
 * receiver's reads would have to fetch them from another core (from
 * another die when the host puts our two CPUs there: msg_bw 64 MiB fell
 * to 2.2-2.6 GB/s in such periods, and runs at 8.0-10.6 GB/s with this).
 */
static int copy_in(struct msg *m, struct msg_op *op, struct msg_chunk *ch)
{
	uint64_t off = send_slot_off(m, ch->slot);

	if (op->mem_type == HMC_MEM_CPU &&
	    hmc_buf_mem_type(m->c->buf) == HMC_MEM_CPU &&
	    op->size >= MSG_STREAM_MIN) {
		copy_streaming((uint8_t *)hmc_buf_ptr(m->c->buf) + off,
			       op->data + ch->msg_off, ch->len);
		return 0;
	}
	if (op->mem_type == HMC_MEM_CPU ||
	    hmc_buf_mem_type(m->c->buf) != HMC_MEM_CPU)
		return hmc_buf_write(m->c->buf, off, op->data + ch->msg_off,
				     ch->len, op->mem_type);
	return copy_gpu(m, op, ch, (uint8_t *)hmc_buf_ptr(m->c->buf) + off,
			op->data + ch->msg_off, HMC_COPY_D2H);
}

/* Announce the staged chunks that have landed, in order: events, or an error. */
static int announce(struct msg *m, struct msg_peer *mp, struct msg_op *op)
{
	struct list_node *n, *tmp;
	uint8_t b[MSG_DATA_LEN];
	int events = 0, rc;

	list_for_each_safe(n, tmp, &op->chunks) {
		struct msg_chunk *ch = container_of(n, struct msg_chunk, node);

		rc = copy_landed(m, op, ch, false);
		if (rc == -EINPROGRESS)
			break;
		if (rc)
			return rc;
		hdr(b, MK_DATA, 0, 0);
		put_be64(b + 8, op->msg_id);
		put_be64(b + 16, ch->msg_off);
		put_be64(b + 24, send_slot_off(m, ch->slot));
		put_be64(b + 32, ch->len);
		rc = send_frame(m, mp, b, sizeof(b));
		if (rc)
			return rc;
		list_del(n);
		free(ch);
		events++;
	}
	return events;
}

/*
 * Stage what the free slots take, and announce what has landed
 * (msg->lock held): events.
 */
static int stage(struct msg *m, struct msg_peer *mp, struct msg_op *op)
{
	struct msg_chunk *ch;
	int events = 0, rc;

	while (op->staged < op->size && m->nr_free_send) {
		ch = calloc(1, sizeof(*ch));
		if (!ch) {
			rc = -ENOMEM;
			goto fail;
		}
		ch->slot = m->free_send[--m->nr_free_send];
		m->send_owner[ch->slot] = op;	/* freed with the op on failure */
		ch->msg_off = op->staged;
		ch->len = min_t(uint64_t, m->slot_size, op->size - op->staged);
		list_add_tail(&op->chunks, &ch->node);
		rc = copy_in(m, op, ch);
		if (rc)
			goto fail;
		op->staged += ch->len;
		events++;
		/*
		 * Announce each chunk as soon as it is in: the receiver copies
		 * it out while we stage the next (64 MiB through 4 MiB buffers
		 * fell from 10.2 to 2.5-6.2 GB/s when the announcements waited
		 * for the whole batch).
		 */
		rc = announce(m, mp, op);
		if (rc < 0)
			goto fail;
		events += rc;
	}
	rc = announce(m, mp, op);
	if (rc >= 0)
		return events + rc;
fail:
	/* The receiver waits for the rest: fail the pair. */
	comm_peer_error(m->c, mp->peer, rc);
	return events;
}

/* ------------------------------------------------------- receiving */

static bool matches(const struct msg_op *op, uint32_t rank, uint64_t tag)
{
	return (op->rank == HMC_ANY_SOURCE || op->rank == rank) &&
	       (op->tag == HMC_ANY_TAG || op->tag == tag);
}

/* Deliver an eager message to @op and finish it. */
static void deliver_eager(struct msg *m, struct msg_op *op, struct msg_peer *mp,
			  uint64_t tag, const uint8_t *data, uint64_t size)
{
	int rc = size > op->cap ? -EMSGSIZE : 0;

	op->rank = mp->peer->rank;
	op->tag = tag;
	op->size = size;
	if (!rc)
		rc = host_copy(op->mem_type, op->data, data, size, true);
	if (!op->mp) {
		op->mp = mp;
		mp->refs++;
	}
	op_finish(m, op, rc);
}

/* A receive matched an RTS: start pulling (msg->lock held). */
static void start_recv(struct msg *m, struct msg_op *op, struct msg_peer *mp,
		       uint64_t msg_id, uint64_t tag, uint64_t size,
		       bool direct, uint64_t src_off)
{
	int rc;

	list_del(&op->node);
	if (!op->mp) {
		op->mp = mp;
		mp->refs++;
	}
	op->rank = mp->peer->rank;
	op->tag = tag;
	op->size = size;
	op->msg_id = msg_id;
	op->direct = direct;
	op->src_off = src_off;
	op->state = OP_RECV;
	list_add_tail(&mp->recvs, &op->node);
	if (size > op->cap) {
		rc = send_id(m, mp, MK_FIN, msg_id, -EMSGSIZE);
		if (rc)
			comm_peer_error(m->c, mp->peer, rc);
		op_finish(m, op, -EMSGSIZE);
		return;
	}
	if (!direct) {
		rc = send_id(m, mp, MK_CTS, msg_id, 0);
		if (rc)
			comm_peer_error(m->c, mp->peer, rc);
	}
}

/* The receive in flight with @mp for message @id, or NULL. */
static struct msg_op *find_op(struct list_node *list, uint64_t id)
{
	struct list_node *n;

	for (n = list->next; n != list; n = n->next) {
		struct msg_op *op = container_of(n, struct msg_op, node);

		if (op->msg_id == id)
			return op;
	}
	return NULL;
}

/*
 * Copy chunk @ch into @op's data (or start to) from @src, the sender's
 * slot in our mapping of its ConnBuffer, or (NULL) from our receiving
 * slot.
 */
static int copy_out(struct msg *m, struct msg_op *op, struct msg_chunk *ch,
		    const uint8_t *src)
{
	uint8_t *dst = op->data + ch->msg_off;

	if (!src && hmc_buf_mem_type(m->c->buf) != HMC_MEM_CPU)
		return hmc_buf_read(m->c->buf, recv_slot_off(m, ch->slot), dst,
				    ch->len, op->mem_type);
	if (!src)
		src = (const uint8_t *)hmc_buf_ptr(m->c->buf) +
		      recv_slot_off(m, ch->slot);
	if (op->mem_type != HMC_MEM_CPU)
		return copy_gpu(m, op, ch, dst, src, HMC_COPY_H2D);
	if (op->size >= MSG_STREAM_MIN)
		copy_streaming(dst, src, ch->len);
	else
		memcpy(dst, src, ch->len);
	return 0;
}

/*
 * Post the gets that can go (msg->lock held, and engine.lock: the shm
 * mapping stays): events, or an error. Over shm, data bound for memory
 * outside our ConnBuffer is copied straight out of the peer's mapping:
 * one copy on each side (theirs into the slot, ours out of it) instead of
 * a get into our slot and a copy out of that, so that the two processes
 * share the work of a large message evenly.
 */
static int pull(struct msg *m, struct msg_op *op)
{
	struct hmc_comm *c = m->c;
	uint8_t *map = NULL;
	struct list_node *n;
	struct msg_chunk *ch;
	uint64_t dst, map_size;
	int rc, events = 0;

	if (!op->in_buf && op->mp->peer->xops->type == HMC_TRANSPORT_SHM)
		map = xport_shm_peer_map(op->mp->peer->xpeer, &map_size);

	/* A direct message announces itself chunk by chunk here. */
	while (op->direct && op->staged < op->size &&
	       op->inflight < MSG_DIRECT_INFLIGHT) {
		ch = calloc(1, sizeof(*ch));
		if (!ch)
			return -ENOMEM;
		ch->msg_off = op->staged;
		ch->len = min_t(uint64_t, op->in_buf ? MSG_DIRECT_CHUNK :
				m->slot_size, op->size - op->staged);
		ch->remote_off = op->src_off + op->staged;
		ch->slot = -1;
		list_add_tail(&op->chunks, &ch->node);
		op->staged += ch->len;
		op->inflight++;
	}
	for (n = op->chunks.next; n != &op->chunks; n = n->next) {
		ch = container_of(n, struct msg_chunk, node);
		if (ch->get || ch->copied)
			continue;
		if (map) {
			if (range_check(map_size, ch->remote_off, ch->len))
				return -ERANGE;
			rc = copy_out(m, op, ch, map + ch->remote_off);
			if (rc)
				return rc;
			ch->copied = true;
			events++;
			continue;
		}
		if (op->in_buf) {
			dst = op->buf_off + ch->msg_off;
		} else {
			if (!m->nr_free_recv)
				break;
			ch->slot = m->free_recv[--m->nr_free_recv];
			dst = recv_slot_off(m, ch->slot);
		}
		rc = hmc_comm_get_nb(c, op->rank, dst, ch->remote_off, ch->len,
				     &ch->get);
		if (rc) {
			ch->get = 0;
			return rc;
		}
		events++;
	}
	return events;
}

/* Give the sender back its slot under @ch, if it is one and not yet. */
static int got_chunk(struct msg *m, struct msg_peer *mp, struct msg_op *op,
		     struct msg_chunk *ch)
{
	uint8_t b[MSG_GOT_LEN];

	if (!ch->remote_slot)
		return 0;
	ch->remote_slot = false;
	hdr(b, MK_GOT, 0, 0);
	put_be64(b + 8, op->msg_id);
	put_be64(b + 16, ch->remote_off);
	put_be64(b + 24, ch->len);
	return send_frame(m, mp, b, sizeof(b));
}

/*
 * Collect finished gets, in message order (msg->lock held): events, or an
 * error; *@finished once the whole message is in (@op is freed then).
 */
static int land(struct msg *m, struct msg_peer *mp, struct msg_op *op,
		bool *finished)
{
	struct list_node *n, *tmp;
	int rc, events = 0;

	list_for_each_safe(n, tmp, &op->chunks) {
		struct msg_chunk *ch = container_of(n, struct msg_chunk, node);

		if (ch->get) {
			rc = req_result(&m->c->reqs, ch->get, true);
			if (rc == -EINPROGRESS)
				break;
			ch->get = 0;
			if (rc)
				return rc;
			/* In our memory: the sender may reuse its slot. */
			rc = got_chunk(m, mp, op, ch);
			if (!rc && ch->slot >= 0)
				rc = copy_out(m, op, ch, NULL);
			if (rc)
				return rc;
			ch->copied = true;
		}
		if (!ch->copied)
			break;
		rc = copy_landed(m, op, ch, false);
		if (rc == -EINPROGRESS)
			break;
		if (!rc)	/* copied out of its slot in the sender's mapping */
			rc = got_chunk(m, mp, op, ch);
		if (rc)
			return rc;
		if (ch->slot >= 0)
			m->free_recv[m->nr_free_recv++] = ch->slot;
		op->done += ch->len;
		if (op->direct)
			op->inflight--;
		list_del(n);
		free(ch);
		events++;
	}
	if (op->done == op->size) {
		rc = op->direct ? send_id(m, mp, MK_FIN, op->msg_id, 0) : 0;
		if (rc)
			return rc;
		op_finish(m, op, 0);
		*finished = true;
	}
	return events;
}

/* ----------------------------------------------------- frame input */

static void credit(struct msg *m, struct msg_peer *mp, uint64_t cost)
{
	uint8_t b[MSG_ID_LEN];

	mp->rx_uncredited += cost;
	if (mp->rx_uncredited < MSG_WINDOW / 4)
		return;
	hdr(b, MK_CREDIT, 0, 0);
	put_be64(b + 8, mp->rx_uncredited);
	mp->rx_uncredited = 0;
	if (send_frame(m, mp, b, sizeof(b)))
		comm_peer_error(m->c, mp->peer, -EIO);
}

/*
 * An arrival, EAGER with its @data or an RTS: to the first matching
 * receive, else to the unexpected queue.
 */
static int arrive(struct msg *m, struct msg_peer *mp, bool rts, uint64_t tag,
		  uint64_t size, const uint8_t *data, uint64_t msg_id,
		  bool direct, uint64_t src_off)
{
	uint32_t rank = mp->peer->rank;
	struct list_node *n;
	struct msg_in *in;

	if (tag == HMC_ANY_TAG)
		return -EPROTO;
	for (n = m->posted.next; n != &m->posted; n = n->next) {
		struct msg_op *op = container_of(n, struct msg_op, node);

		if (!matches(op, rank, tag))
			continue;
		if (rts)
			start_recv(m, op, mp, msg_id, tag, size, direct,
				   src_off);
		else
			deliver_eager(m, op, mp, tag, data, size);
		return 0;
	}
	in = calloc(1, sizeof(*in));
	if (!in)
		return -ENOMEM;
	if (!rts && size) {
		in->data = malloc(size);
		if (!in->data) {
			free(in);
			return -ENOMEM;
		}
		memcpy(in->data, data, size);
	}
	in->mp = mp;
	mp->refs++;
	in->rank = rank;
	in->tag = tag;
	in->size = size;
	in->rts = rts;
	in->msg_id = msg_id;
	in->direct = direct;
	in->src_off = src_off;
	list_add_tail(&m->unexpected, &in->node);
	return 0;
}

/* An EAGER or RTS frame. */
static int arrive_frame(struct msg *m, struct msg_peer *mp, const uint8_t *b,
			uint32_t len, bool rts)
{
	uint64_t size = rts ? get_be64(b + 24) : len - MSG_EAGER_HDR_LEN;

	/* Once its RING_ON is in, its envelopes come by the ring only. */
	if (mp->rx_on || (rts && size <= HMC_MSG_EAGER_MAX))
		return -EPROTO;
	credit(m, mp, MSG_ENVELOPE_COST + (rts ? 0 : size));
	return arrive(m, mp, rts, get_be64(b + (rts ? 16 : 8)), size,
		      b + MSG_EAGER_HDR_LEN, rts ? get_be64(b + 8) : 0,
		      rts && (b[1] & MSG_F_DIRECT), rts ? get_be64(b + 32) : 0);
}

/*
 * Take the records in @mp's ring into matching or the unexpected queue
 * (msg->lock held): events. Of a peer that is down (@down), only whole
 * eager records up to the first rendezvous: what arrived whole before
 * the failure is still delivered, a rendezvous no longer can be, and
 * what follows it must not overtake it.
 */
static int ring_poll(struct msg *m, struct msg_peer *mp, bool down)
{
	uint64_t max = min_t(uint64_t, HMC_MSG_EAGER_MAX,
			     ring_payload_max(mp->rx.nr));
	const struct ring_rec *rec;
	uint64_t rts[3];
	int events = 0, rc;

	while ((rec = ring_peek(&mp->rx))) {
		const uint8_t *data = (const uint8_t *)(rec + 1);

		if (rec->kind == MK_EAGER && rec->len <= max) {
			rc = arrive(m, mp, false, rec->tag, rec->len, data, 0,
				    false, 0);
		} else if (down) {
			break;
		} else if (rec->kind == MK_RTS && rec->len == MSG_RTS_REC_LEN) {
			memcpy(rts, data, sizeof(rts));
			rc = rts[1] > max ?
			     arrive(m, mp, true, rec->tag, rts[1], NULL, rts[0],
				    rec->flags & MSG_F_DIRECT, rts[2]) :
			     -EPROTO;
		} else {
			rc = -EPROTO;
		}
		if (rc) {
			/* Unread: the connection fails, the ring goes with it. */
			comm_peer_error(m->c, mp->peer, rc);
			break;
		}
		ring_consume(&mp->rx, rec);
		events++;
	}
	/* The sender waits for room: tell it there is some. */
	if (!down && ring_release(&mp->rx) && send_id(m, mp, MK_WAKE, 0, 0))
		comm_peer_error(m->c, mp->peer, -EIO);
	return events;
}

/* The peer takes our ring: reach its own for our envelopes (engine.lock held). */
static int on_ring(struct msg *m, struct msg_peer *mp, const uint8_t *b)
{
	uint64_t area = get_be64(b + 8), gen = get_be64(b + 24), size, end;
	uint32_t idx = get_be32(b + 16), nr = get_be32(b + 20);
	uint8_t *map;
	int rc;

	if (mp->tx_on || idx >= MSG_RINGS_MAX || nr < 2 || nr > UINT16_MAX ||
	    (nr & (nr - 1)) || !gen || gen > UINT16_MAX)
		return -EPROTO;
	if (mp->peer->xops->type != HMC_TRANSPORT_SHM)
		return -EPROTO;
	map = xport_shm_peer_map(mp->peer->xpeer, &size);
	end = area + MSG_RING_HDR + (uint64_t)(idx + 1) * nr * RING_CELL;
	if (!map || area % RING_CELL || area > size || end < area ||
	    end > size || end > mp->peer->buf_size)
		return -EPROTO;
	/* Announced on the socket after every envelope it carried. */
	rc = send_id(m, mp, MK_RING_ON, gen, 0);
	if (rc)
		return rc;
	mp->tx = (struct ring_tx){
		.cells = map + area + MSG_RING_HDR +
			 (uint64_t)idx * nr * RING_CELL,
		.ctl = (struct ring_ctl *)(map + area + RING_CELL * (1 + idx)),
		.nr = nr,
		.gen = gen,
	};
	mp->tx_awake = (uint32_t *)(map + area);
	mp->tx_on = true;
	flush_outq(m, mp);
	return 0;
}

static int on_data(struct msg *m, struct msg_peer *mp, const uint8_t *b)
{
	struct msg_op *op = find_op(&mp->recvs, get_be64(b + 8));
	uint64_t off = get_be64(b + 16), len = get_be64(b + 32);
	struct msg_chunk *ch;

	/* In order, within the message, at most a slot. */
	if (!op || op->direct || off != op->staged || !len ||
	    len > op->size - off || len > m->slot_size)
		return -EPROTO;
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	ch->msg_off = off;
	ch->len = len;
	ch->remote_off = get_be64(b + 24);
	ch->remote_slot = true;
	ch->slot = -1;
	list_add_tail(&op->chunks, &ch->node);
	op->staged += len;
	return 0;
}

static int on_got(struct msg *m, struct msg_peer *mp, const uint8_t *b)
{
	struct msg_op *op = find_op(&mp->sends, get_be64(b + 8));
	uint64_t off = get_be64(b + 16), len = get_be64(b + 24);
	uint64_t s;

	if (!op || op->state != OP_STAGING || off < m->region_off ||
	    (off - m->region_off) % m->slot_size)
		return -EPROTO;
	s = (off - m->region_off) / m->slot_size;
	if (s >= m->nr_send || m->send_owner[s] != op || len > op->staged - op->done)
		return -EPROTO;
	m->send_owner[s] = NULL;
	m->free_send[m->nr_free_send++] = (int)s;
	op->done += len;
	if (op->done == op->size)
		op_finish(m, op, 0);
	return 0;
}

static int msg_frame(struct hmc_comm *c, struct peer *p, const uint8_t *b,
		     uint32_t len)
{
	static const uint32_t lens[] = {
		[MK_EAGER] = MSG_EAGER_HDR_LEN, [MK_RTS] = MSG_RTS_LEN,
		[MK_CTS] = MSG_ID_LEN, [MK_DATA] = MSG_DATA_LEN,
		[MK_GOT] = MSG_GOT_LEN, [MK_FIN] = MSG_ID_LEN,
		[MK_CREDIT] = MSG_ID_LEN, [MK_RING] = MSG_RING_LEN,
		[MK_RING_ON] = MSG_ID_LEN, [MK_WAKE] = MSG_ID_LEN,
	};
	struct msg *m = msg_of(c);
	struct msg_peer *mp;
	struct msg_op *op;
	uint8_t kind = b[0];
	int32_t status;
	int rc = 0;

	if (!kind || kind >= ARRAY_SIZE(lens) ||
	    (kind == MK_EAGER ? len < lens[kind] ||
			       len > MSG_EAGER_HDR_LEN + HMC_MSG_EAGER_MAX :
			       len != lens[kind]))
		return -EPROTO;
	status = (int32_t)get_be32(b + 4);
	pthread_mutex_lock(&m->lock);
	mp = mp_get(m, p);
	if (!mp) {
		rc = -ENOMEM;
		goto out;
	}
	switch (kind) {
	case MK_EAGER:
	case MK_RTS:
		rc = arrive_frame(m, mp, b, len, kind == MK_RTS);
		break;
	case MK_RING:
		rc = on_ring(m, mp, b);
		break;
	case MK_RING_ON:
		if (mp->rx_ring < 0 || mp->rx_on ||
		    get_be64(b + 8) != mp->rx.gen) {
			rc = -EPROTO;
			break;
		}
		mp->rx_on = true;
		__atomic_add_fetch(&m->nr_rx_on, 1, __ATOMIC_RELAXED);
		ring_poll(m, mp, false);
		break;
	case MK_WAKE:	/* the round that follows polls the rings */
		break;
	case MK_CTS:
		op = find_op(&mp->sends, get_be64(b + 8));
		if (!op || op->state != OP_WAIT_CTS) {
			rc = -EPROTO;
			break;
		}
		op->state = OP_STAGING;
		stage(m, mp, op);
		break;
	case MK_DATA:
		rc = on_data(m, mp, b);
		break;
	case MK_GOT:
		rc = on_got(m, mp, b);
		break;
	case MK_FIN:
		op = find_op(&mp->sends, get_be64(b + 8));
		/* Success ends a direct send; an error, any that waits. */
		if (!op || status > 0 || status < -4095 ||
		    (!status && op->state != OP_WAIT_FIN) ||
		    (status && op->state == OP_STAGING)) {
			rc = -EPROTO;
			break;
		}
		op_finish(m, op, status);
		break;
	case MK_CREDIT:
		mp->window_used -= min_t(uint64_t, get_be64(b + 8),
					 mp->window_used);
		flush_outq(m, mp);
		break;
	}
out:
	pthread_mutex_unlock(&m->lock);
	return rc;
}

/* --------------------------------------------------------- progress */

static int msg_progress(struct hmc_comm *c)
{
	struct msg *m = msg_of(c);
	struct list_node *n, *tmp, *o, *otmp;
	int events = 0, rc;

	if (!__atomic_load_n(&m->busy, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&m->nr_rx_on, __ATOMIC_RELAXED))
		return 0;
	pthread_mutex_lock(&m->lock);
	if (__atomic_load_n(&m->nr_rx_on, __ATOMIC_RELAXED))
		ring_awake(m->awake);	/* senders need not wake us */
	list_for_each_safe(n, tmp, &m->peers) {
		struct msg_peer *mp = container_of(n, struct msg_peer, node);

		if (!peer_up(mp->peer)) {
			mp_down(m, mp);
			events++;
			continue;
		}
		mp->refs++;	/* ops may go, the peer stays this round */
		if (mp->rx_on)
			events += ring_poll(m, mp, false);
		if (mp->tx_on && !list_empty(&mp->outq))
			events += flush_ring(m, mp);
		list_for_each_safe(o, otmp, &mp->sends) {
			struct msg_op *op = container_of(o, struct msg_op, node);

			if (op->state == OP_STAGING)
				events += stage(m, mp, op);
		}
		list_for_each_safe(o, otmp, &mp->recvs) {
			struct msg_op *op = container_of(o, struct msg_op, node);

			bool finished = false;

			rc = land(m, mp, op, &finished);
			if (rc >= 0 && !finished) {
				events += rc;
				rc = pull(m, op);
				/* Copies out of a shm mapping are done: land them. */
				if (rc > 0) {
					events += rc;
					rc = land(m, mp, op, &finished);
				}
			}
			if (rc < 0) {
				/* The sender waits for the rest: fail the pair. */
				pr_info("rank %u: message from rank %u: %s",
					c->rank, op->rank, hmc_strerror(rc));
				comm_peer_error(c, mp->peer, rc);
				break;
			}
			events += rc;
		}
		mp_put(mp);
	}
	pthread_mutex_unlock(&m->lock);
	return events;
}

/*
 * About to sleep: from now on senders wake us; records that came before
 * are worth a round instead.
 */
static int msg_arm(struct hmc_comm *c)
{
	struct msg *m = msg_of(c);
	struct list_node *n;
	int rc = 0;

	/* A GPU copy lands with nothing to wake us: poll until it has. */
	if (__atomic_load_n(&m->nr_copies, __ATOMIC_RELAXED))
		return -EBUSY;
	if (!__atomic_load_n(&m->nr_rx_on, __ATOMIC_RELAXED))
		return 0;
	pthread_mutex_lock(&m->lock);
	ring_sleep(m->awake);
	for (n = m->peers.next; n != &m->peers && !rc; n = n->next) {
		struct msg_peer *mp = container_of(n, struct msg_peer, node);

		if (mp->rx_on && ring_peek(&mp->rx))
			rc = -EBUSY;
	}
	pthread_mutex_unlock(&m->lock);
	return rc;
}

static void msg_fini(struct hmc_comm *c)
{
	struct msg *m = msg_of(c);
	struct list_node *n, *tmp;

	/* Every peer is down by now. */
	list_for_each_safe(n, tmp, &m->peers)
		mp_down(m, container_of(n, struct msg_peer, node));
	list_for_each_safe(n, tmp, &m->posted)
		op_finish(m, container_of(n, struct msg_op, node), -ENOTCONN);
	list_for_each_safe(n, tmp, &m->unexpected)
		in_free(container_of(n, struct msg_in, node));
	pthread_mutex_destroy(&m->lock);
	free(m->send_owner);
	free(m->free_send);
	free(m->free_recv);
	free(m);
	c->ext_ctx = NULL;
}

static const struct comm_ext msg_ext = {
	.frame = msg_frame,
	.progress = msg_progress,
	.arm = msg_arm,
	.fini = msg_fini,
};

int msg_init(struct hmc_comm *c, uint32_t slot_size, uint64_t region)
{
	uint64_t size = hmc_buf_size(c->buf), nr, rings, ring_off, ring_bytes;
	struct msg *m;
	uint32_t i;

	if (!slot_size)
		slot_size = MSG_SLOT_DEFAULT;
	if (slot_size % 4096)
		return -EINVAL;
	if (!region)
		region = min_t(uint64_t, size / 4, MSG_REGION_MAX_DEFAULT);
	if (region > size)
		return -EINVAL;
	/* A buffer too small for two slots of the default size gets smaller ones. */
	while (region / slot_size < 2 && slot_size > 4096)
		slot_size /= 2;
	nr = region / slot_size;
	if (nr < 2) {
		/* Messages then fail with -ENOSPC; one-sided use is unaffected. */
		nr = 0;
	}
	if (nr > (1u << 20))
		return -EINVAL;
	/*
	 * Rings for same-host peers, at the start of the region (page
	 * aligned): up to an eighth of it, at least two slots left.
	 */
	rings = 0;
	ring_off = (size - region + 4095) & ~4095ull;
	if (hmc_buf_mem_type(c->buf) == HMC_MEM_CPU &&
	    region / 8 > MSG_RING_HDR + 4096)
		rings = min_t(uint64_t, MSG_RINGS_MAX,
			      (region / 8 - MSG_RING_HDR - 4096) /
			      MSG_RING_BYTES);
	if (rings) {
		ring_bytes = MSG_RING_HDR + rings * MSG_RING_BYTES;
		if ((size - ring_off - ring_bytes) / slot_size >= 2)
			nr = min_t(uint64_t, nr, (size - ring_off - ring_bytes) /
						 slot_size);
		else
			rings = 0;
	}

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->c = c;
	m->slot_size = slot_size;
	m->nr_cpus = cpus_of_ours();
	m->nr_send = (uint32_t)nr / 2;
	m->nr_recv = (uint32_t)nr - m->nr_send;
	m->region_off = size - nr * slot_size;
	if (rings) {
		m->nr_rings = (uint32_t)rings;
		m->ring_off = ring_off;
		m->awake = (uint32_t *)((uint8_t *)hmc_buf_ptr(c->buf) +
					m->ring_off);
	}
	m->send_owner = calloc(m->nr_send + 1, sizeof(*m->send_owner));
	m->free_send = calloc(m->nr_send + 1, sizeof(*m->free_send));
	m->free_recv = calloc(m->nr_recv + 1, sizeof(*m->free_recv));
	if (!m->send_owner || !m->free_send || !m->free_recv) {
		free(m->send_owner);
		free(m->free_send);
		free(m->free_recv);
		free(m);
		return -ENOMEM;
	}
	for (i = 0; i < m->nr_send; i++)
		m->free_send[m->nr_free_send++] = (int)(m->nr_send - 1 - i);
	for (i = 0; i < m->nr_recv; i++)
		m->free_recv[m->nr_free_recv++] = (int)(m->nr_recv - 1 - i);
	pthread_mutex_init(&m->lock, NULL);
	list_init(&m->peers);
	list_init(&m->posted);
	list_init(&m->unexpected);
	c->ext_ctx = m;
	c->ext = &msg_ext;
	return 0;
}

/* ------------------------------------------------------------- API */

/*
 * Where @data lies: in our ConnBuffer (*@off) or not; -EINVAL if it
 * overlaps the message region.
 */
static int locate(struct msg *m, const void *data, uint64_t len,
		  enum hmc_mem_type type, bool *in_buf, uint64_t *off)
{
	const uint8_t *base = hmc_buf_ptr(m->c->buf);
	uint64_t size = hmc_buf_size(m->c->buf);
	uintptr_t p = (uintptr_t)data, b = (uintptr_t)base;

	*in_buf = false;
	if (type != hmc_buf_mem_type(m->c->buf) || p < b || p - b >= size)
		return 0;
	if (len > size - (p - b))
		return -EINVAL;
	if (p - b + len > (m->nr_rings ? m->ring_off : m->region_off))
		return -EINVAL;
	*in_buf = true;
	*off = p - b;
	return 0;
}

/* Nudge whoever drives progress: new work for msg_progress(). */
static void kick(struct hmc_comm *c)
{
	engine_lock(&c->engine);
	msg_progress(c);
	engine_unlock(&c->engine);
}

static int post_send(struct hmc_comm *c, uint32_t rank, uint64_t tag,
		     const void *data, size_t len, enum hmc_mem_type type,
		     hmc_req_t *id)
{
	struct msg *m;
	struct msg_op *op;
	struct peer *p;
	int rc;

	if (!c || !id || (!data && len) || tag == HMC_ANY_TAG ||
	    rank == HMC_ANY_SOURCE || (unsigned int)type > HMC_MEM_MUSA)
		return -EINVAL;
	m = msg_of(c);
	if (!m->nr_send)
		return -ENOSPC;
	op = calloc(1, sizeof(*op));
	if (!op)
		return -ENOMEM;
	rc = locate(m, data, len, type, &op->in_buf, &op->buf_off);
	if (rc)
		goto err;
	p = peer_lookup(c, rank);
	if (!p || !peer_up(p)) {
		rc = !p ? -ENOTCONN : p->state == PEER_DOWN ? peer_err(p) :
		     -ENOTCONN;
		peer_put(p);
		goto err;
	}
	op->is_send = true;
	op->state = OP_QUEUED;
	op->rank = rank;
	op->tag = tag;
	op->data = (uint8_t *)data;
	op->cap = op->size = len;
	op->mem_type = type;
	list_init(&op->chunks);
	op->r = req_alloc(&c->reqs, p, REQ_MSG, &op->id);
	if (!op->r) {
		peer_put(p);
		rc = -ENOMEM;
		goto err;
	}
	*id = op->id;
	pthread_mutex_lock(&m->lock);
	op->mp = mp_get(m, p);
	peer_put(p);
	if (!op->mp) {
		pthread_mutex_unlock(&m->lock);
		req_free_unposted(&c->reqs, op->r);
		rc = -ENOMEM;
		goto err;
	}
	op->mp->refs++;
	op->msg_id = op->mp->next_id++;
	__atomic_add_fetch(&m->busy, 1, __ATOMIC_RELAXED);
	list_add_tail(&op->mp->outq, &op->node);
	flush_outq(m, op->mp);	/* the peer's frames drive the rest */
	pthread_mutex_unlock(&m->lock);
	return 0;
err:
	free(op);
	return rc;
}

/*
 * Whether the first message from @rank matching @tag that waits to be
 * received is a whole one (msg->lock held).
 */
static bool eager_waits(struct msg *m, uint32_t rank, uint64_t tag)
{
	struct list_node *n;

	for (n = m->unexpected.next; n != &m->unexpected; n = n->next) {
		struct msg_in *in = container_of(n, struct msg_in, node);

		if (in->rank == rank && (tag == HMC_ANY_TAG || in->tag == tag))
			return !in->rts;
	}
	return false;
}

static int post_recv(struct hmc_comm *c, uint32_t rank, uint64_t tag,
		     void *data, size_t len, enum hmc_mem_type type,
		     struct hmc_msg_status *status, hmc_req_t *id)
{
	bool pull_now = false, gone = false, matched = false;
	struct msg_peer *mp;
	struct peer *p = NULL;
	struct list_node *n;
	struct msg_op *op;
	struct msg *m;
	int rc;

	if (!c || !id || (!data && len) || (unsigned int)type > HMC_MEM_MUSA)
		return -EINVAL;
	m = msg_of(c);
	if (!m->nr_recv)
		return -ENOSPC;
	op = calloc(1, sizeof(*op));
	if (!op)
		return -ENOMEM;
	rc = locate(m, data, len, type, &op->in_buf, &op->buf_off);
	if (rc)
		goto err;
	if (rank != HMC_ANY_SOURCE) {
		p = peer_lookup(c, rank);
		if (!p || !peer_up(p)) {
			rc = !p ? -ENOTCONN : p->state == PEER_DOWN ?
			     peer_err(p) : -ENOTCONN;
			/*
			 * What arrived whole before it went is still delivered:
			 * take it in now, the ring's records too, if progress
			 * has not yet.
			 */
			pthread_mutex_lock(&m->lock);
			if (p && p->state == PEER_DOWN && (mp = mp_find(m, p)))
				mp_down(m, mp);
			gone = p && eager_waits(m, rank, tag);
			pthread_mutex_unlock(&m->lock);
			peer_put(p);
			p = NULL;
			if (!gone)
				goto err;
		}
	}
	op->state = OP_POSTED;
	op->rank = rank;
	op->tag = tag;
	op->data = data;
	op->cap = len;
	op->mem_type = type;
	op->status = status;
	list_init(&op->chunks);
	op->r = req_alloc(&c->reqs, p, REQ_MSG, &op->id);
	if (!op->r) {
		peer_put(p);
		rc = -ENOMEM;
		goto err;
	}
	*id = op->id;
	pthread_mutex_lock(&m->lock);
	if (p) {
		op->mp = mp_get(m, p);
		if (!op->mp) {
			pthread_mutex_unlock(&m->lock);
			peer_put(p);
			req_free_unposted(&c->reqs, op->r);
			rc = -ENOMEM;
			goto err;
		}
		op->mp->refs++;
	}
	peer_put(p);
	__atomic_add_fetch(&m->busy, 1, __ATOMIC_RELAXED);
	list_add_tail(&m->posted, &op->node);
	for (n = m->unexpected.next; n != &m->unexpected; n = n->next) {
		struct msg_in *in = container_of(n, struct msg_in, node);

		if (!matches(op, in->rank, in->tag))
			continue;
		if (in->rts) {
			start_recv(m, op, in->mp, in->msg_id, in->tag, in->size,
				   in->direct, in->src_off);
			pull_now = in->direct;
		} else {
			deliver_eager(m, op, in->mp, in->tag, in->data, in->size);
		}
		in_free(in);
		matched = true;
		break;
	}
	/* Another receive took what the source left: it is gone for this one. */
	if (gone && !matched)
		op_finish(m, op, rc);
	pthread_mutex_unlock(&m->lock);
	/* A direct pull has no frame to come that would start it. */
	if (pull_now)
		kick(c);
	return 0;
err:
	free(op);
	return rc;
}

int hmc_comm_isend(struct hmc_comm *c, uint32_t peer, uint64_t tag,
		   const void *data, size_t len, enum hmc_mem_type mem_type,
		   hmc_req_t *req)
{
	return post_send(c, peer, tag, data, len, mem_type, req);
}

int hmc_comm_irecv(struct hmc_comm *c, uint32_t source, uint64_t tag,
		   void *data, size_t len, enum hmc_mem_type mem_type,
		   struct hmc_msg_status *status, hmc_req_t *req)
{
	return post_recv(c, source, tag, data, len, mem_type, status, req);
}

int hmc_comm_msg_batch(struct hmc_comm *c, const struct hmc_msg *msgs,
		       size_t n, hmc_req_t *reqs)
{
	size_t i;
	int rc = 0;

	if (!c || (n && (!msgs || !reqs)))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		const struct hmc_msg *x = &msgs[i];

		if (x->reserved || x->op > HMC_MSG_RECV)
			rc = -EINVAL;
		else if (x->op == HMC_MSG_SEND)
			rc = post_send(c, x->peer, x->tag, x->data, x->len,
				       x->mem_type, &reqs[i]);
		else
			rc = post_recv(c, x->peer, x->tag, x->data, x->len,
				       x->mem_type, x->status, &reqs[i]);
		if (rc)
			break;
	}
	for (; i < n; i++)
		reqs[i] = 0;
	return rc;
}

/* The op with request @id on @list, or NULL. */
static struct msg_op *find_req(struct list_node *list, hmc_req_t id)
{
	struct list_node *n;

	for (n = list->next; n != list; n = n->next) {
		struct msg_op *op = container_of(n, struct msg_op, node);

		if (op->id == id)
			return op;
	}
	return NULL;
}

/*
 * A blocking send or receive ran out of time: one that has not started
 * is withdrawn; one under way fails the connection (never half a message).
 */
static int give_up(struct hmc_comm *c, hmc_req_t id)
{
	struct msg *m = msg_of(c);
	struct peer *p = NULL;
	struct msg_op *op;
	struct list_node *n;
	int rc;

	pthread_mutex_lock(&m->lock);
	rc = req_result(&c->reqs, id, true);
	if (rc != -EINPROGRESS) {	/* finished meanwhile */
		pthread_mutex_unlock(&m->lock);
		return rc;
	}
	op = find_req(&m->posted, id);
	for (n = m->peers.next; !op && n != &m->peers; n = n->next) {
		struct msg_peer *mp = container_of(n, struct msg_peer, node);

		op = find_req(&mp->outq, id);
		if (!op && (find_req(&mp->sends, id) || find_req(&mp->recvs, id)))
			p = peer_get(mp->peer);
	}
	if (op)
		op_finish(m, op, -ETIMEDOUT);
	pthread_mutex_unlock(&m->lock);
	if (p) {
		comm_peer_error(c, p, -ETIMEDOUT);
		peer_put(p);
		/* The teardown fails the request; then nothing touches its memory. */
		rc = hmc_comm_wait(c, id, c->op_timeout_ms);
		if (rc == -ETIMEDOUT)
			req_abandon(&c->reqs, id);
	} else {
		req_result(&c->reqs, id, true);
	}
	return -ETIMEDOUT;
}

static bool msg_done_cond(void *owner, void *arg)
{
	struct hmc_comm *c = owner;

	return req_is_done(&c->reqs, *(hmc_req_t *)arg);
}

/*
 * Wait for a blocking form's request of up to @len bytes. A small one
 * does not spin first, unlike hmc_comm_wait(), unless rings are being
 * read: it waits for a frame on the control socket, which wakes epoll at
 * once, whereas a spinning caller looks at sockets only every few dozen
 * polls of the transports (an 8-byte ping-pong took 58 us one way that
 * way, 6.6 us this way, as tags do). A large one polls its transfers for
 * a while, as requests do, and so does one that may come by a ring.
 */
static int wait_msg(struct hmc_comm *c, hmc_req_t id, int timeout_ms,
		    size_t len)
{
	struct msg *m = msg_of(c);
	int rc;

	rc = engine_wait(&c->engine, msg_done_cond, &id,
			 deadline_after_ms(timeout_ms),
			 len > HMC_MSG_EAGER_MAX ||
			 __atomic_load_n(&m->nr_rx_on, __ATOMIC_RELAXED) ?
			 MSG_SPIN_NS : 0);
	if (rc == -ETIMEDOUT)
		return give_up(c, id);
	return req_result(&c->reqs, id, true);
}

/*
 * The blocking forms' short cut through the rings: no request, no op, no
 * round of the engine, as long as the ring takes the message or one is
 * there for us. Anything else (the socket, a full ring, a rendezvous, an
 * earlier receive or send still waiting) takes the ordinary path.
 */

/* The connection to @rank with its ring up (msg->lock held), or NULL. */
static struct msg_peer *mp_ring(struct msg *m, uint32_t rank)
{
	struct list_node *n;

	for (n = m->peers.next; n != &m->peers; n = n->next) {
		struct msg_peer *mp = container_of(n, struct msg_peer, node);

		if (mp->peer->rank == rank)
			return mp->tx_on ? mp : NULL;
	}
	return NULL;
}

/* Send eagerly into the ring now: 1 if it went, 0 if not, or an error. */
static int send_now(struct hmc_comm *c, uint32_t rank, uint64_t tag,
		    const void *data, size_t len, enum hmc_mem_type type)
{
	struct msg *m = msg_of(c);
	struct msg_peer *mp;
	bool wake = false;
	struct peer *p;
	uint8_t *d;
	int rc = 0;

	if (!c || len > HMC_MSG_EAGER_MAX || (!data && len) ||
	    tag == HMC_ANY_TAG || (unsigned int)type > HMC_MEM_MUSA)
		return 0;
	pthread_mutex_lock(&m->lock);
	mp = mp_ring(m, rank);
	/* Behind queued envelopes, it would overtake them. */
	if (!mp || !list_empty(&mp->outq) || len > ring_eager_max(&mp->tx))
		goto out;
	if (peer_use(c, rank, &p))
		goto out;
	if (p == mp->peer && (d = ring_reserve(&mp->tx, (uint32_t)len))) {
		rc = host_copy(type, d, data, len, false);
		if (!rc) {
			ring_commit(&mp->tx, (uint32_t)len, MK_EAGER, 0, tag);
			wake = ring_wake_needed(mp->tx_awake);
			rc = 1;
		}
	}
	peer_unuse(p);
	if (wake && send_id(m, mp, MK_WAKE, 0, 0))
		comm_peer_error(c, mp->peer, -EIO);
out:
	pthread_mutex_unlock(&m->lock);
	return rc;
}

/* Fill what a receive got from @mp. */
static void got(struct hmc_msg_status *st, struct msg_peer *mp, uint64_t tag,
		uint64_t len)
{
	if (!st)
		return;
	st->source = mp->peer->rank;
	st->tag = tag;
	st->len = len;
	st->error = 0;
}

/*
 * Receive an eager message that is here, unexpected or in a ring, if no
 * earlier receive could take it: 1 if one came, 0 if not yet, -EAGAIN if
 * the ordinary path must take it (a receive posted before, a rendezvous,
 * a message too large), or another error. Records in the way go to the
 * unexpected queue, as a round would put them.
 */
static int recv_now(struct hmc_comm *c, uint32_t rank, uint64_t tag,
		    void *data, size_t cap, enum hmc_mem_type type,
		    struct hmc_msg_status *st)
{
	const struct msg_op want = { .rank = rank, .tag = tag };
	struct msg *m = msg_of(c);
	const struct ring_rec *rec;
	struct list_node *n;
	int rc = 0;

	pthread_mutex_lock(&m->lock);
	if (!list_empty(&m->posted)) {
		rc = -EAGAIN;
		goto out;
	}
	for (n = m->unexpected.next; n != &m->unexpected; n = n->next) {
		struct msg_in *in = container_of(n, struct msg_in, node);

		if (!matches(&want, in->rank, in->tag))
			continue;
		if (in->rts || in->size > cap) {
			rc = -EAGAIN;	/* a rendezvous, or -EMSGSIZE */
			goto out;
		}
		rc = host_copy(type, data, in->data, in->size, true);
		got(st, in->mp, in->tag, in->size);
		in_free(in);
		rc = rc ? rc : 1;
		goto out;
	}
	for (n = m->peers.next; n != &m->peers; n = n->next) {
		struct msg_peer *mp = container_of(n, struct msg_peer, node);

		if (!mp->rx_on || !peer_up(mp->peer))
			continue;
		while (!rc && (rec = ring_peek(&mp->rx))) {
			if (rec->kind == MK_EAGER && rec->len <= cap &&
			    rec->tag != HMC_ANY_TAG &&
			    matches(&want, mp->peer->rank, rec->tag)) {
				rc = host_copy(type, data, rec + 1, rec->len,
					       true);
				got(st, mp, rec->tag, rec->len);
				ring_consume(&mp->rx, rec);
				rc = rc ? rc : 1;
				break;
			}
			if (matches(&want, mp->peer->rank, rec->tag))
				rc = -EAGAIN;	/* as above */
			else
				break;
		}
		if (rc == -EAGAIN)
			break;
		if (!rc && rec) {
			/*
			 * Queue what is in the way; the next call looks at the
			 * queue first, so that this source's older messages are
			 * matched before others' newer ones.
			 */
			ring_poll(m, mp, false);
			break;
		}
		if (ring_release(&mp->rx) && send_id(m, mp, MK_WAKE, 0, 0))
			comm_peer_error(c, mp->peer, -EIO);
		if (rc)
			break;
	}
out:
	pthread_mutex_unlock(&m->lock);
	return rc;
}

/*
 * A blocking receive while rings are read: poll for a while without a
 * request, driving the engine now and then for the rest. Where the ranks
 * whose rings we read and we outnumber our CPUs, each of those turns past
 * the first microseconds also yields the CPU, as the sender may be waiting
 * for ours; where they fit, a sender on a CPU of its own answers soon, and
 * yielding would hand our CPU to unrelated tasks (Open MPI's shared-memory
 * path spins too). 1 if the message came, 0 if the ordinary path is to
 * take it, or an error.
 */
#define MSG_POLL_EVERY	16	/* recv_now()s per engine poll and clock read */
#define MSG_YIELD_NS	(2 * 1000)	/* polling alone, before yielding */

static int recv_spin(struct hmc_comm *c, uint32_t rank, uint64_t tag,
		     void *data, size_t cap, enum hmc_mem_type type,
		     struct hmc_msg_status *st)
{
	struct msg *m = msg_of(c);
	bool crowded = __atomic_load_n(&m->nr_rx_on, __ATOMIC_RELAXED) + 1 >
		       m->nr_cpus;
	int64_t start = 0, now;
	unsigned int i;
	int rc;

	for (i = 1;; i++) {
		rc = recv_now(c, rank, tag, data, cap, type, st);
		if (rc == -EAGAIN)
			return 0;
		if (rc)
			return rc;
		if (i % MSG_POLL_EVERY)
			continue;
		now = now_ns();
		if (!start)
			start = now;
		else if (now - start > MSG_SPIN_NS)
			return 0;
		if (!engine_trylock(&c->engine)) {
			engine_poll(&c->engine);
			engine_unlock_quiet(&c->engine);
		}
		if (crowded && now - start > MSG_YIELD_NS)
			sched_yield();
	}
}

int hmc_comm_send(struct hmc_comm *c, uint32_t peer, uint64_t tag,
		  const void *data, size_t len, enum hmc_mem_type mem_type,
		  int timeout_ms)
{
	hmc_req_t id;
	int rc;

	rc = send_now(c, peer, tag, data, len, mem_type);
	if (rc)
		return rc < 0 ? rc : 0;
	rc = post_send(c, peer, tag, data, len, mem_type, &id);
	return rc ? rc : wait_msg(c, id, timeout_ms, len);
}

int hmc_comm_recv(struct hmc_comm *c, uint32_t source, uint64_t tag,
		  void *data, size_t len, enum hmc_mem_type mem_type,
		  struct hmc_msg_status *status, int timeout_ms)
{
	hmc_req_t id;
	int rc;

	if (c && (data || !len) && (unsigned int)mem_type <= HMC_MEM_MUSA &&
	    __atomic_load_n(&msg_of(c)->nr_rx_on, __ATOMIC_RELAXED)) {
		rc = recv_spin(c, source, tag, data, len, mem_type, status);
		if (rc)
			return rc < 0 ? rc : 0;
	}
	rc = post_recv(c, source, tag, data, len, mem_type, status, &id);
	return rc ? rc : wait_msg(c, id, timeout_ms, len);
}
