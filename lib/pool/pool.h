/* SPDX-License-Identifier: MIT */
/*
 * The pool's insides (include/hmc/pool.h is the interface).
 *
 * Each rank's ConnBuffer holds, in this order: its host segment, the
 * extra context (an 8-byte length, then up to 64 KiB), the subgroup inbox,
 * the staging window through which copies between remote segments and
 * memory outside the ConnBuffer go, the room for registered user memory
 * (page-aligned), and last the message layer's slots, through which
 * device segments are reached (owner.c). Peers compute the offsets up to
 * the window's from the rank's host segment size; they never address the
 * rest, and the message layer says where its slots are itself.
 */
#ifndef HMC_LIB_POOL_POOL_H
#define HMC_LIB_POOL_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <hmc/pool.h>

#include "sys/util.h"

#define POOL_SLOT_ALIGN		(2UL << 20)
#define POOL_EXTRA_AREA		(8 + HMC_POOL_EXTRA_MAX)
#define POOL_INBOX_SIZE		(1UL << 20)
/*
 * Slots of the window, so chunks are copied while others are on the wire.
 * Small chunks keep the staged bytes in cache from our copy to the
 * transport's (a socket's copy, a NIC's read), and one chunk with its
 * tcp frame header fits a 64 KiB segment: across two network namespaces
 * over tcp, 1 MiB copies against a put of 1 MiB from the ConnBuffer went
 * from a median of 0.81 with 256 KiB chunks to 1.19 with these (0.93 with
 * 32 KiB, 0.82 with 64 KiB: the header spills over).
 */
#define POOL_STAGE_CHUNK	(56UL << 10)
#define POOL_STAGE_SLOTS	18
#define POOL_STAGE_SIZE		(POOL_STAGE_SLOTS * POOL_STAGE_CHUNK)
/* Message slots (half to send, half to receive), for device segments. */
#define POOL_MSG_SLOT		(256U << 10)
#define POOL_MSG_REGION		(8 * (uint64_t)POOL_MSG_SLOT)

enum pool_rank_state {
	POOL_RANK_NONE,		/* no member, or no pool there */
	POOL_RANK_LIVE,
	POOL_RANK_GONE,		/* left or failed */
};

struct pool_rank {
	uint64_t host_size;
	uint64_t dev_size;
	uint32_t state;		/* enum pool_rank_state */
	bool mapped;		/* host segment mapped into its slot */
};

/* A queued asynchronous copy, resolved when it was submitted. */
struct pool_job;
/* What a rank publishes about itself (pool.c). */
struct pool_rec;

struct pool_user_range {
	uintptr_t start;
	size_t len;
	uint32_t type;		/* enum hmc_mem_type */
	bool moved;		/* its pages are the ConnBuffer's, at user_off */
	size_t user_off;	/* with moved: in the user memory room */
	uint32_t mr;		/* else its memory region, or 0 */
};

/* dev_rmr[]: not asked yet, or asked and the owner has none to give. */
#define POOL_RMR_UNKNOWN	0
#define POOL_RMR_NONE		UINT32_MAX

/* A local range as one side of a transfer: a region and an offset in it. */
struct pool_lref {
	bool ok;		/* else it lies in no region */
	uint32_t mr;		/* 0: the ConnBuffer */
	uint64_t off;
};

struct hmc_pool {
	struct hmc_world *world;
	uint32_t rank;
	uint32_t nr_slots;
	int timeout_ms;
	size_t page;

	/* The global range: nr_slots slots of stride bytes. */
	char *base;
	size_t stride;
	size_t host_slot;	/* host segment part of a slot */

	struct hmc_buf *buf;
	struct hmc_comm *comm;
	int export_fd;		/* the ConnBuffer as a mappable fd, or -1 */
	void *dev_ptr;		/* this rank's device segment */
	uint32_t dev_type;
	int dev_id;
	uint32_t dev_mr;	/* its memory region, or 0 */

	struct pool_rec *self;	/* ours, published again by refreshes */

	pthread_mutex_t lock;	/* ranks[].state, user ranges, dev_rmr */
	struct pool_rank *ranks;
	/* Per rank: its device segment's region imported, or POOL_RMR_*. */
	uint32_t *dev_rmr;
	struct pool_user_range *user;
	size_t nr_user;
	size_t user_off;		/* the room for user memory: ours only */
	size_t user_size;

	pthread_mutex_t stage_lock;	/* the staging window */
	pthread_mutex_t group_lock;	/* the inbox: one subgroup call at once */

	/* Asynchronous copies: one worker, in submission order. */
	pthread_mutex_t q_lock;
	pthread_cond_t q_cond;		/* work queued, or stop */
	pthread_cond_t q_idle;		/* the queue drained */
	struct list_node queue;
	size_t q_pending;		/* queued or running */
	int q_error;			/* first failure since the last wait */
	bool q_stop;
	bool q_started;
	pthread_t worker;

	/* Serving our device segment to the other ranks (owner.c). */
	uint32_t next_id;		/* of our requests to other owners */
	bool serve_stop;
	bool serve_started;
	pthread_t server;
};

static inline size_t pool_extra_off(const struct hmc_pool *p, uint64_t host_size)
{
	return (host_size + p->page - 1) & ~(p->page - 1);
}

static inline size_t pool_inbox_off(const struct hmc_pool *p, uint64_t host_size)
{
	return pool_extra_off(p, host_size) + POOL_EXTRA_AREA;
}

static inline size_t pool_stage_off(const struct hmc_pool *p, uint64_t host_size)
{
	return pool_inbox_off(p, host_size) + POOL_INBOX_SIZE;
}

/*
 * Whether @rank is a live member: 0, -ENXIO (never had a pool), or
 * -ECONNRESET (left or failed, now or before).
 */
int pool_rank_check(struct hmc_pool *p, uint32_t rank);

/*
 * The registered range holding [@addr, @addr + @len), if any, under
 * p->lock; -ERANGE if the range runs past it.
 */
int pool_user_find(struct hmc_pool *p, uintptr_t addr, size_t len,
		   const struct pool_user_range **u);

/* copy.c */
int pool_copy_start(struct hmc_pool *p);
void pool_copy_stop(struct hmc_pool *p);

/* owner.c: our device segment served to others, and theirs reached. */
int pool_serve_start(struct hmc_pool *p);
void pool_serve_stop(struct hmc_pool *p);
/*
 * @len bytes at @src (memory of @src_type; in region @ref where it is in
 * one) to @off of @rank's device segment: one-sided where the owner's
 * segment is a region the transport reaches and @ref is ok, else by the
 * owner.
 */
int pool_dev_write(struct hmc_pool *p, uint32_t rank, uint64_t off,
		   const void *src, uint32_t src_type,
		   const struct pool_lref *ref, size_t len);
/* @len bytes at @off of @rank's device segment into @dst (of @dst_type). */
int pool_dev_read(struct hmc_pool *p, uint32_t rank, uint64_t off, void *dst,
		  uint32_t dst_type, const struct pool_lref *ref, size_t len);
/* Our device segment's region for others (pool create and destroy). */
void pool_dev_region(struct hmc_pool *p);
void pool_dev_unregion(struct hmc_pool *p);

#endif
