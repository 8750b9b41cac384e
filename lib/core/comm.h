/* SPDX-License-Identifier: MIT */
/*
 * Communicator internals: peers, control connections, the progress engine.
 *
 * Locks, in the order they nest:
 *   progress.lock  held by whoever drives progress (a waiting caller or the
 *                  progress thread); only its holder reads control sockets,
 *                  creates or closes connections and listeners, or tears
 *                  peers down;
 *   comm->lock     the peer table, peer states, tag queues, barriers;
 *                  comm->cond is broadcast whenever any of them changes;
 *   req_table.lock requests (and peer->reqs lists).
 * A transport's own lock nests inside progress.lock and outside comm->lock;
 * conn->tx_lock serialises writes of whole frames; a listener holds it
 * around a peer's turn to CONNECTED and the XPORT_ACK (comm->lock inside),
 * so that no frame of ours reaches the dialer before that ACK.
 */
#ifndef HMC_LIB_COMM_H
#define HMC_LIB_COMM_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <hmc/hmc.h>
#include <linux/hmc.h>

#include "wire/frame.h"
#include "sys/lock.h"
#include "core/req.h"
#include "wire/sock.h"
#include "sys/util.h"
#include "core/xport.h"

#define XPORT_SLOTS	(HMC_TRANSPORT_SHM + 1)

/* What an epoll event refers to. */
enum psrc_kind {
	PSRC_WAKE,
	PSRC_LISTEN,
	PSRC_CONN,
	PSRC_XPORT,
};

struct psrc {
	enum psrc_kind kind;
	void *ptr;
};

/* Listener-side handshake of an accepted connection. */
enum conn_hs {
	HS_HELLO,		/* waiting for HELLO */
	HS_AUTH,		/* sent CHALLENGE, waiting for AUTH */
	HS_DONE,		/* WELCOME sent: belongs to a peer */
};

struct conn {
	int fd;
	bool is_unix;
	bool in_epoll;
	struct psrc src;
	pthread_mutex_t tx_lock;
	uint8_t *rx;			/* buffered input: [rx_off, rx_len) */
	uint32_t rx_off, rx_len, rx_cap;
	int rx_fds[SOCK_MAX_FDS];	/* descriptors received, oldest first */
	int nr_rx_fds;
	struct peer *peer;		/* once HS_DONE */
	/* listener side, until the peer is connected */
	enum conn_hs hs;
	int64_t deadline;
	struct frame_hello hello;
	uint8_t nonce[FRAME_NONCE_LEN];
	struct list_node hs_node;	/* comm->handshakes, until connected */
};

enum peer_state {
	PEER_DIALING,		/* our hmc_comm_connect() is under way */
	PEER_XPORT,		/* control is up, the transport is coming up */
	PEER_CONNECTED,
	PEER_DOWN,		/* failed or closed by the peer: queued tags stay
				 * readable until disconnected or replaced */
	PEER_GONE,		/* out of the table */
};

struct peer {
	uint32_t rank;
	int refs;			/* atomic */
	enum peer_state state;
	int error;			/* why it failed */
	int pending_error;		/* reported by a transport, not yet acted on */
	struct hmc_comm *comm;
	struct conn *conn;
	const struct xport_ops *xops;
	void *xpeer;
	uint64_t buf_size;		/* the peer's ConnBuffer */
	uint64_t *tags;			/* ring of received tags */
	uint32_t tag_head, tag_count, tag_cap;
	uint64_t barrier_sent, barrier_seen;
	bool reported;			/* hmc.ko was told it connected */
	uint32_t addr_len;		/* its address, as reported */
	uint8_t addr[HMC_PEER_ADDR_MAX];
	struct list_node reqs;		/* ACTIVE requests (req_table.lock) */
	struct list_node fail_node;	/* comm->failing */
	struct peer *hnext;		/* hash chain */
};

struct xport_slot {
	const struct xport_ops *ops;
	void *ctx;
	struct psrc src;
	/*
	 * arm() succeeded and no progress ran since: until its event fd
	 * fires, a round need not progress it nor arm it again (saves the
	 * transport's syscalls on every sleep). Any progress or post clears it.
	 */
	bool armed;
};

struct progress {
	pthread_mutex_t lock;
	int epfd;
	int wakefd;
	struct psrc wake_src;
	int thread_active;		/* atomic: the thread may hold the lock */
	int callers_waiting;		/* atomic: callers blocked on the lock */
	int64_t last_full_ns;		/* progress_poll()'s last full round (lock held) */
	int64_t last_sleep_ns;		/* the last epoll_wait that could sleep (lock held) */
	bool xports_armed;		/* arm() called since the last unwatch (lock held) */
	int64_t last_caller_ns;		/* atomic: last progress by a caller */
	pthread_t thread;
	bool has_thread;
	bool stop;			/* comm->lock */
	pthread_cond_t thread_cond;	/* with comm->lock */
};

#define PEER_HASH_SIZE	256

/*
 * A layer above the core that rides on the control plane and the progress
 * engine (lib/msg). The core calls it; it calls the core's functions, never
 * the other way round through headers.
 */
struct comm_ext {
	/* A FRAME_MSG from connected @p (progress.lock held): 0 or an error that fails @p. */
	int (*frame)(struct hmc_comm *c, struct peer *p, const uint8_t *payload,
		     uint32_t len);
	/* Every progress round (progress.lock held): events handled. */
	int (*progress)(struct hmc_comm *c);
	/* hmc_comm_destroy(), once every peer is torn down. */
	void (*fini)(struct hmc_comm *c);
};

struct hmc_comm {
	struct hmc_buf *buf;
	uint32_t rank;
	uint32_t flags;
	int connect_timeout_ms;
	int op_timeout_ms;
	uint8_t *secret;
	size_t secret_len;
	int report_fd;			/* /dev/hmc for PEER_STATE, or -1 */
	uint32_t num_chs;		/* verbs options */
	char *ib_dev;
	uint8_t ib_port;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int waiters;		/* atomic: threads in comm->cond */
	/*
	 * The peer table and each peer's state are changed under both locks,
	 * peers_lock inside comm->lock; a post reads them under peers_lock
	 * alone, the cheaper one to take.
	 */
	struct futex_mutex peers_lock;
	struct peer *peers[PEER_HASH_SIZE];
	struct list_node handshakes;	/* accepted conns not yet connected */
	struct list_node failing;	/* peers with a pending_error */
	unsigned int nr_failing;	/* atomic: their number */

	int tcp_lfd, unix_lfd;
	uint16_t tcp_port;
	struct psrc listen_src[2];

	pthread_mutex_t xport_lock;	/* init of transports */
	struct xport_slot xports[XPORT_SLOTS];

	struct req_table reqs;
	struct progress progress;

	const struct comm_ext *ext;	/* set at creation, or NULL */
	void *ext_ctx;
};

/* ---- peers (comm.c) */
/* Free @p; for peer_put(), once the last reference is gone. */
void peer_free(struct peer *p);

static inline struct peer *peer_get(struct peer *p)
{
	__atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
	return p;
}

/* Drop a reference; the last one frees @p (NULL is allowed). */
static inline void peer_put(struct peer *p)
{
	if (p && !__atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL))
		peer_free(p);
}
/* A counted reference to @rank's peer, or NULL. */
struct peer *peer_lookup(struct hmc_comm *c, uint32_t rank);

static inline struct peer **peer_bucket(struct hmc_comm *c, uint32_t rank)
{
	return &c->peers[(rank * 2654435761u) >> 24 & (PEER_HASH_SIZE - 1)];
}

/* The same under comm->lock or peers_lock, without taking a reference. */
static inline struct peer *peer_lookup_locked(struct hmc_comm *c,
					      uint32_t rank)
{
	struct peer *p;

	for (p = *peer_bucket(c, rank); p; p = p->hnext)
		if (p->rank == rank)
			return p;
	return NULL;
}
/* Insert @p in the table, which takes a reference (comm->lock held). */
void peer_link(struct hmc_comm *c, struct peer *p);
/* Take @p out of the table; the caller inherits its reference. */
void peer_unlink(struct hmc_comm *c, struct peer *p);
/* Move @p to @state (comm->lock held); what goes with it is set before. */
void peer_set_state(struct hmc_comm *c, struct peer *p, enum peer_state state);
struct peer *peer_new(struct hmc_comm *c, uint32_t rank);
/*
 * A transport found @p broken: it is torn down by the next progress round
 * (callable from inside transport progress).
 */
void comm_peer_error(struct hmc_comm *c, struct peer *p, int err);
/*
 * A tag from @p arrived on a transport's data path (put_signal): queue it
 * for hmc_comm_recv_tag(); a flood fails the peer.
 */
void comm_deliver_tag(struct hmc_comm *c, struct peer *p, uint64_t tag);
/* Bring up or find the transport slot for @type: 0 or a negative errno. */
int comm_xport(struct hmc_comm *c, enum hmc_transport type,
	       struct xport_slot **slot);

/* ---- control connections (ctrl.c) */
struct conn *conn_new(int fd, bool is_unix);
void conn_free(struct conn *cn);
int conn_send(struct conn *cn, enum frame_type type, const void *payload,
	      uint32_t len, int64_t deadline);
/* The same, passing @fd along (FRAME_F_FD) unless it is negative. */
int conn_send_fd(struct conn *cn, enum frame_type type, const void *payload,
		 uint32_t len, int fd, int64_t deadline);
/* The oldest descriptor received and not yet taken (ours to close), or -1. */
int conn_take_fd(struct conn *cn);
/*
 * The next complete buffered frame: 1 (and @hdr, @payload), 0 if more input
 * is needed, -EPROTO for garbage. conn_consume() drops it.
 */
int conn_next_frame(struct conn *cn, struct frame_hdr *hdr,
		    const uint8_t **payload);
void conn_consume(struct conn *cn, const struct frame_hdr *hdr);
/* Read what the socket has: bytes, -EAGAIN, or an error (EOF: -ECONNRESET). */
ssize_t conn_fill(struct conn *cn);
/* Wait for one frame (dialer's handshake): 0 or a negative errno. */
int conn_recv_frame(struct conn *cn, struct frame_hdr *hdr,
		    const uint8_t **payload, int64_t deadline);

/* Accept what the listeners have (progress.lock held). */
int ctrl_accept(struct hmc_comm *c, int lfd, bool is_unix);
/* Handle input on @cn (progress.lock held): events handled. */
int ctrl_input(struct hmc_comm *c, struct conn *cn);
/* Drop handshakes past their deadline; the earliest deadline left. */
int64_t ctrl_expire_handshakes(struct hmc_comm *c);
/* Dial @rank and bring up @transport to it (hmc_comm_connect). */
int ctrl_connect(struct hmc_comm *c, uint32_t rank, const char *ip,
		 uint16_t port, enum hmc_transport transport);
/*
 * Tear @p down (progress.lock held): its requests fail with @err, the
 * transport and the connection close. @remove takes it out of the table;
 * otherwise it stays as PEER_DOWN.
 */
void ctrl_teardown(struct hmc_comm *c, struct peer *p, int err, bool remove,
		   bool graceful);
/* Tear down the peers that transports reported (progress.lock held). */
int ctrl_reap_failed(struct hmc_comm *c);
/* Queue a received tag (comm->lock held): 0, or -ENOBUFS/-ENOMEM. */
int ctrl_push_tag(struct peer *p, uint64_t tag);

/* ---- progress engine (progress.c) */
int progress_init(struct hmc_comm *c);
int progress_start_thread(struct hmc_comm *c);
void progress_fini(struct hmc_comm *c);
int progress_watch(struct hmc_comm *c, int fd, struct psrc *src);
void progress_unwatch(struct hmc_comm *c, int fd);
/* Take progress.lock, waking a holder that sleeps. */
void progress_lock(struct hmc_comm *c);
void progress_unlock(struct hmc_comm *c);
/* One round (progress.lock held): handle events, sleeping up to @timeout_ms. */
int progress_once(struct hmc_comm *c, int timeout_ms);
/* Progress the transports only (progress.lock held): the cheap part of a round. */
int progress_xports(struct hmc_comm *c);
/* Wake everyone waiting on comm->cond (takes comm->lock). */
void comm_broadcast(struct hmc_comm *c);

/* A condition a caller waits for; evaluated without progress.lock. */
typedef bool (*wait_cond_fn)(struct hmc_comm *c, void *arg);
/*
 * Drive progress (or let another thread drive it) until @cond holds or
 * @deadline passes: 0 or -ETIMEDOUT. @spin_ns: poll without sleeping first.
 */
int comm_wait(struct hmc_comm *c, wait_cond_fn cond, void *arg,
	      int64_t deadline, int64_t spin_ns);

#endif
