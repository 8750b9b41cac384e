/* SPDX-License-Identifier: MIT */
/*
 * The communicator: its peer table (core/peer.h), requests (core/req.h),
 * transport slots and progress engine.
 *
 * Locks, in the order they nest:
 *   engine.lock    held by whoever drives progress (a waiting caller or the
 *                  progress thread); only its holder reads control sockets,
 *                  creates or closes connections and listeners, or closes
 *                  peers;
 *   comm->lock     the peer table, peer states, tag queues, barriers; the
 *                  engine's state lock: engine_broadcast() whenever any of
 *                  them changes;
 *   peers_lock     the peer table and peer states again, for posters;
 *   req_table.lock requests (and peer->reqs lists).
 * A transport's own lock nests inside engine.lock and outside comm->lock;
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

#include "core/mr.h"
#include "core/req.h"
#include "core/xport.h"
#include "engine/engine.h"
#include "sys/lock.h"
#include "sys/util.h"

/* A transport brought up in this communicator. */
struct xport_slot {
	const struct xport_ops *ops;
	void *ctx;
	struct hmc_comm *comm;
	struct engine_src src;		/* its event fds */
	/*
	 * arm() succeeded and no progress ran since: until its event fd
	 * fires, a round need not progress it nor arm it again (saves the
	 * transport's syscalls on every sleep). Any progress or post clears it.
	 */
	bool armed;
};

struct comm_listener {
	int fd;				/* -1 when not listening */
	bool is_unix;
	struct hmc_comm *comm;
	struct engine_src src;
};

#define PEER_HASH_SIZE	256

struct peer;
struct tls_ctx;

/*
 * A layer above the core that rides on the control plane and the progress
 * engine (lib/msg): the core calls it through this table, so that no
 * header of the core names it.
 */
struct comm_ext {
	/* A FRAME_MSG from connected @p (engine.lock held): 0 or an error that fails @p. */
	int (*frame)(struct hmc_comm *c, struct peer *p, const uint8_t *payload,
		     uint32_t len);
	/* Every progress round (engine.lock held): events handled. */
	int (*progress)(struct hmc_comm *c);
	/*
	 * About to sleep (engine.lock held): -EBUSY if work came in that no
	 * event would announce, else 0.
	 */
	int (*arm)(struct hmc_comm *c);
	/* hmc_comm_destroy(), once every peer is closed and the engine stopped. */
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
	/* HMC_TLS_* or the options: every control connection is TLS 1.3. */
	struct tls_ctx *tls_srv, *tls_cli;
	int report_fd;			/* /dev/hmc for PEER_STATE, or -1 */
	uint32_t num_chs;		/* verbs and tcp options */
	char *ib_dev;
	uint8_t ib_port;

	pthread_mutex_t lock;
	/*
	 * The peer table and each peer's state are changed under both locks,
	 * peers_lock inside comm->lock; a post reads them under peers_lock
	 * alone, the cheaper one to take.
	 */
	struct futex_mutex peers_lock;
	struct peer *peers[PEER_HASH_SIZE];
	struct list_node handshakes;	/* the listener's, until WELCOME (ctrl) */
	struct list_node pending;	/* welcomed peers awaiting a transport */
	struct list_node failing;	/* peers with a pending_error */
	unsigned int nr_failing;	/* atomic: their number */

	struct comm_listener listeners[2];	/* TCP, Unix */
	uint16_t tcp_port;
	char unix_path[108];		/* the Unix listener's path, or "" */
	uint64_t unix_ino;		/* its inode, to remove only ours */

	pthread_mutex_t xport_lock;	/* init of transports */
	struct xport_slot xports[XPORT_SLOTS];

	struct mr_table mrs;
	struct req_table reqs;
	struct engine engine;

	const struct comm_ext *ext;	/* set at creation, or NULL */
	void *ext_ctx;
};

/* Wake everyone waiting on the communicator's state. */
static inline void comm_broadcast(struct hmc_comm *c)
{
	engine_broadcast(&c->engine);
}

/*
 * The slot of transport @ops, brought up on first use: 0 or a negative
 * errno (*@slot is set either way).
 */
int comm_xport(struct hmc_comm *c, const struct xport_ops *ops,
	       struct xport_slot **slot);
/* Shut down the transports brought up (engine stopped, no peer left). */
void comm_xports_fini(struct hmc_comm *c);
/* Progress every transport (engine.lock held): events handled. */
int comm_xports_poll(struct hmc_comm *c);
/* The same for those not armed: a round's first step. */
int comm_xports_poll_unarmed(struct hmc_comm *c);
/* Arm the transports before a sleep (struct engine_ops.arm). */
int comm_xports_arm(struct hmc_comm *c);
/* Take out what they watch for sleepers (struct engine_ops.unwatch). */
void comm_xports_unwatch(struct hmc_comm *c);
/* New work on @type: the next round must progress it before sleeping. */
static inline void comm_xport_kick(struct hmc_comm *c, enum hmc_transport type)
{
	__atomic_store_n(&c->xports[type].armed, false, __ATOMIC_RELAXED);
}

#endif
