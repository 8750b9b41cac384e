/* SPDX-License-Identifier: MIT */
/*
 * Request table: every non-blocking operation has a slot whose handle
 * (generation << 32 | index + 1) the caller waits on. A slot is recycled
 * only when both sides are done with it: the caller has collected (or
 * abandoned) the result and the transport has given the request back, so a
 * completion can never be lost nor land in a reused slot, and a stale or
 * repeated handle gets -ENOENT.
 */
#ifndef HMC_LIB_REQ_H
#define HMC_LIB_REQ_H

#include <stdbool.h>
#include <stdint.h>

#include <hmc/hmc.h>

#include "sys/lock.h"
#include "sys/util.h"

struct peer;

enum req_op {
	REQ_PUT,
	REQ_GET,
	REQ_FLUSH,
	REQ_MSG,	/* a send or receive of lib/msg; never reaches a transport */
	REQ_AMO,	/* an atomic: the transport's amo() */
};

enum req_state {
	REQ_FREE,
	REQ_ACTIVE,
	REQ_DONE,
};

struct req {
	uint32_t gen;
	uint8_t state;		/* enum req_state */
	uint8_t op;		/* enum req_op */
	bool in_xport;		/* the transport still references it */
	bool abandoned;		/* nobody will collect the result */
	int status;		/* 0 or a negative errno, once DONE */
	struct peer *peer;	/* while ACTIVE (holds a reference) */
	/* a count the transport's hold keeps up (a region's users), or NULL */
	int *pin;
	struct list_node peer_node;	/* on peer->reqs while ACTIVE */
	struct req_table *table;
	uint32_t idx;		/* position in the table */
	uint32_t next_free;
};

struct req_table {
	struct futex_mutex lock;
	struct req **chunks;	/* fixed-size chunks: slot addresses are stable */
	uint32_t nr_chunks;
	uint32_t nr_slots;
	uint32_t free_head;	/* index + 1 of the first free slot, 0 if none */
	uint32_t active;	/* slots not FREE */
};

void req_table_init(struct req_table *t);
void req_table_fini(struct req_table *t);

/*
 * A new ACTIVE request on @peer (which it references; NULL for one that no
 * peer's failure ends), handle in @id.
 */
struct req *req_alloc(struct req_table *t, struct peer *peer, enum req_op op,
		      hmc_req_t *id);

/* Give back a request whose operation was never started. */
void req_free_unposted(struct req_table *t, struct req *r);

/*
 * The transport reports the result of @r and lets go of it. The first
 * result wins: a request already failed with its peer keeps that error.
 */
void req_complete(struct req *r, int status);

/* Fail every ACTIVE request of @peer with @err (the transport keeps them). */
void req_fail_peer(struct req_table *t, struct peer *peer, int err);

/*
 * The result of request @id: its status (and the slot is released when
 * @collect), -EINPROGRESS while active, -ENOENT for an unknown handle.
 */
int req_result(struct req_table *t, hmc_req_t id, bool collect);

/* The caller gives up on @id: the slot goes when the transport is done. */
void req_abandon(struct req_table *t, hmc_req_t id);

/* Whether @id is done (or unknown), without collecting it. */
bool req_is_done(struct req_table *t, hmc_req_t id);

#endif
