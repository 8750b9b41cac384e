/* SPDX-License-Identifier: MIT */
/*
 * Memory regions of a communicator (hmc_comm_mr_reg()): the table of ours,
 * each registered with every transport that is up, and the regions of a
 * peer we imported, each a transport's handle for that peer's key.
 *
 * Both tables are arrays of fixed-size chunks, so that an entry never
 * moves: a poster reads them without a lock. Our regions: a handle is
 * gen << 16 | (index + 1); a poster counts itself in @users before it
 * checks that the entry is live with that generation, and deregistering
 * clears @live before it waits for @users to drain (both sequentially
 * consistent), so that neither misses the other. A request posted with a
 * region keeps counting until its transport lets go of it (req->pin).
 */
#ifndef HMC_LIB_MR_H
#define HMC_LIB_MR_H

#include <stdbool.h>
#include <stdint.h>

#include <hmc/hmc.h>

#include "sys/lock.h"

#define MR_CHUNK	64
#define MR_CHUNKS	1024		/* regions per communicator or peer: 65536 */
#define MR_MAX		(MR_CHUNK * MR_CHUNKS - 1)

#define XPORT_SLOTS	(HMC_TRANSPORT_TCP + 1)

struct comm_mr {
	uint8_t *addr;
	uint64_t len;
	uint32_t access;		/* HMC_MR_REMOTE_* */
	enum hmc_mem_type mem_type;
	int device;
	uint32_t *notify;		/* or NULL (hmc_mr_opts) */
	uint16_t gen;
	bool live;			/* seq_cst, see above */
	bool in_use;			/* from reg to the end of dereg (table lock) */
	int users;			/* seq_cst: posters and posted requests */
	void *xmr[XPORT_SLOTS];		/* per transport, NULL where it has none */
};

struct mr_table {
	struct futex_mutex lock;	/* writers; inside comm->xport_lock */
	struct comm_mr *chunks[MR_CHUNKS];
	uint32_t nr;			/* entries ever used (release/acquire) */
};

/* A region of a peer, imported for its connection. */
struct peer_rmr {
	uint32_t owner_mr;		/* the peer's handle: imports dedupe on it */
	uint32_t access;		/* HMC_MR_REMOTE_* it grants */
	uint8_t misalign;		/* its start's address modulo 64 */
	bool notifies;			/* our writes count in its notify word */
	uint64_t len;
	void *xrmr;			/* its transport's; freed with the transport peer */
};

struct rmr_table {
	struct futex_mutex lock;	/* importers */
	struct peer_rmr *chunks[MR_CHUNKS];
	uint32_t nr;			/* release/acquire */
};

/* Entry @idx of each table (below its nr). */
static inline struct comm_mr *mr_at(struct mr_table *t, uint32_t idx)
{
	return &t->chunks[idx / MR_CHUNK][idx % MR_CHUNK];
}

static inline struct peer_rmr *rmr_at(struct rmr_table *t, uint32_t idx)
{
	return &t->chunks[idx / MR_CHUNK][idx % MR_CHUNK];
}

/* Our region @handle, counted in its users: 0 or -ENOENT. */
int mr_use(struct mr_table *t, uint32_t handle, struct comm_mr **out);
static inline void mr_unuse(struct comm_mr *mr)
{
	__atomic_sub_fetch(&mr->users, 1, __ATOMIC_SEQ_CST);
}

/* @peer's imported region @handle, or NULL. */
const struct peer_rmr *rmr_lookup(struct rmr_table *t, uint32_t handle);

void rmr_table_free(struct rmr_table *t);

struct hmc_comm;
struct xport_slot;

/* Register every live region with a transport just brought up (xport_lock held). */
void mr_xport_up(struct hmc_comm *c, struct xport_slot *slot);
/* Deregister them from every transport, free the table (comm destroy). */
void mr_table_fini(struct hmc_comm *c);

#endif
