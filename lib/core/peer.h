/* SPDX-License-Identifier: MIT */
/*
 * Peers: one per remote rank, in the communicator's table.
 *
 * A peer's life has two ends. Closing it (peer_close()) stops posting,
 * detaches and destroys its transport peer, fails its requests and shuts
 * its control connection; freeing it is the last reference going
 * (peer_put()). Everything that may outlive a close (the struct, its
 * connection, its tags) goes with the free, so that whoever holds a
 * reference can still read it. The transport peer cannot wait that long:
 * a poster pins it with peer_use() for as long as it touches it, and
 * peer_close() waits for those before destroying it.
 */
#ifndef HMC_LIB_PEER_H
#define HMC_LIB_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include <hmc/hmc.h>
#include <linux/hmc.h>

#include "core/comm.h"
#include "engine/engine.h"
#include "sys/util.h"
#include "wire/conn.h"

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
	int users;			/* atomic: posters touching xpeer */
	enum peer_state state;
	int error;			/* why it failed */
	int pending_error;		/* reported by a transport, not yet acted on */
	struct hmc_comm *comm;
	struct conn *conn;		/* freed with the peer */
	struct engine_src src;		/* conn's input (ctrl dispatches it) */
	bool watched;			/* conn is in the engine */
	int64_t deadline;		/* PEER_XPORT on the listener side */
	struct list_node pending_node;	/* comm->pending, until then */
	const struct xport_ops *xops;
	void *xpeer;			/* until closed */
	uint64_t buf_size;		/* the peer's ConnBuffer */
	uint64_t *tags;			/* ring of received tags */
	uint32_t tag_head, tag_count, tag_cap;
	uint64_t barrier_sent, barrier_seen;
	bool reported;			/* hmc.ko was told it connected */
	uint32_t addr_len;		/* its address, as reported */
	uint8_t addr[HMC_PEER_ADDR_MAX];
	/*
	 * Over Unix control, the address the dialer dialed us at (IPv6,
	 * v4-mapped; from its HELLO), for transports that open their own
	 * connections; else all zero.
	 */
	uint8_t dialed[16];
	struct rmr_table rmrs;		/* its regions we imported */
	struct list_node reqs;		/* ACTIVE requests (req_table.lock) */
	struct list_node fail_node;	/* comm->failing */
	struct peer *hnext;		/* hash chain */
};

struct peer *peer_new(struct hmc_comm *c, uint32_t rank);
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

/* A reference to a connected @rank: 0, -ENOTCONN, or its failure. */
int peer_connected(struct hmc_comm *c, uint32_t rank, struct peer **out);
/*
 * The same for a poster: *@out and its transport peer stay valid, and
 * peer_close() waits, until peer_unuse(). Keep it short: no blocking.
 */
int peer_use(struct hmc_comm *c, uint32_t rank, struct peer **out);
static inline void peer_unuse(struct peer *p)
{
	__atomic_sub_fetch(&p->users, 1, __ATOMIC_RELEASE);
}

/* Queue a received tag (comm->lock held): 0, or -ENOBUFS/-ENOMEM. */
int peer_push_tag(struct peer *p, uint64_t tag);
/* The oldest queued tag (comm->lock held): whether there was one. */
bool peer_pop_tag(struct peer *p, uint64_t *tag);

enum peer_close_flags {
	PEER_CLOSE_REMOVE = 1 << 0,	/* out of the table (else PEER_DOWN) */
	PEER_CLOSE_GRACEFUL = 1 << 1,	/* finish what was posted, say BYE */
};

/*
 * Close @p (engine.lock held): no new posts, its transport peer destroyed
 * once current posters are done, its requests failed with @err, the
 * connection shut. PEER_CLOSE_REMOVE drops the table's reference: hold
 * one of your own to touch @p afterwards. Closing a closed peer only
 * removes it, if asked.
 */
void peer_close(struct hmc_comm *c, struct peer *p, int err, unsigned int flags);
/* Close the peers that transports reported (engine.lock held): how many. */
int peer_reap_failed(struct hmc_comm *c);

/*
 * Tell hmc.ko what became of @p, for hmcstat and other monitors: that it
 * connected (HMC_PEER_CONNECTED), or, if it had, that it disconnected or
 * failed. Engine lock held.
 */
void peer_report(struct hmc_comm *c, struct peer *p, uint32_t state, int err);

#endif
