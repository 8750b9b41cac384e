/* SPDX-License-Identifier: MIT */
/*
 * A single-producer single-consumer ring of records in shared memory: the
 * same-host eager path of lib/msg (msg.c says when it is used).
 *
 * The ring lies in the consumer's memory, which the producer has mapped
 * (the shm transport's mapping of the peer's ConnBuffer). It is an array
 * of cache-line cells; a record takes whole cells, never wraps (a PAD
 * record fills the end instead) and starts with a header whose sequence
 * word the producer stores last, with release order: a consumer that
 * reads the sequence it expects (acquire) reads the whole record. The
 * consumer zeroes the sequence word of every cell it has read before it
 * hands the cells back (head, release), so that a cell never shows a
 * sequence that is not a record's; the generation in the sequence keeps a
 * ring handed to a new producer from reading an old one's records.
 *
 * Credits are implicit: the producer may use the cells up to head + cells.
 * Wake-ups are Dekker pairs of a store, a full fence and a load: the
 * consumer clears its awake word before it sleeps and then looks at its
 * rings again, the producer publishes and then looks at that word; the
 * producer raises want_space when it finds the ring full and then looks at
 * head again, the consumer moves head and then looks at want_space. Either
 * side sees the other's store, so nobody sleeps on a record or on space.
 */
#ifndef HMC_LIB_MSG_RING_H
#define HMC_LIB_MSG_RING_H

#include <stdbool.h>
#include <stdint.h>

#define RING_CELL	64u

/* A record's header, at the start of its first cell. */
struct ring_rec {
	uint64_t seq;		/* generation << 48 | (cell position + 1), last */
	uint32_t len;		/* payload bytes, after the header */
	uint8_t kind;		/* the user's, or RING_PAD */
	uint8_t flags;		/* the user's */
	uint16_t cells;		/* cells the record takes */
	uint64_t tag;		/* the user's */
};

#define RING_REC_LEN	((uint32_t)sizeof(struct ring_rec))	/* 24 */
#define RING_PAD	0xffu

/* The ring's shared control line, in the consumer's memory. */
struct ring_ctl {
	uint64_t head;		/* cells consumed (consumer, release) */
	uint32_t want_space;	/* the producer waits for head to move */
	uint32_t reserved;
	uint8_t pad[RING_CELL - 16];
};

/* What a producer keeps. */
struct ring_tx {
	uint8_t *cells;
	struct ring_ctl *ctl;
	uint32_t nr;		/* cells, a power of two */
	uint64_t gen;
	uint64_t tail;		/* cells produced */
	uint64_t head;		/* ctl->head as last read */
};

/* What a consumer keeps. */
struct ring_rx {
	uint8_t *cells;
	struct ring_ctl *ctl;
	uint32_t nr;
	uint64_t gen;
	uint64_t pos;		/* cells consumed */
	uint64_t published;	/* pos as last stored in ctl->head */
};

/* The largest payload a ring of @nr cells takes in one record. */
static inline uint32_t ring_payload_max(uint32_t nr)
{
	return nr * RING_CELL - RING_REC_LEN;
}

/* Reset the shared part of a ring the consumer hands to a new producer. */
void ring_reset(struct ring_ctl *ctl, uint8_t *cells, uint32_t nr);

/*
 * Room for a record of @len payload bytes (at most ring_payload_max()):
 * where to write the payload, or NULL while the ring is full (want_space
 * is raised then: the consumer answers once it makes room).
 */
void *ring_reserve(struct ring_tx *t, uint32_t len);
/* Publish the record ring_reserve() made room for. */
void ring_commit(struct ring_tx *t, uint32_t len, uint8_t kind, uint8_t flags,
		 uint64_t tag);

/* The next record, or NULL; its payload follows it. */
const struct ring_rec *ring_peek(struct ring_rx *r);
/* Done with the record ring_peek() gave. */
void ring_consume(struct ring_rx *r, const struct ring_rec *rec);
/*
 * Hand the consumed cells back to the producer: whether it waits for them
 * (want_space was up; it is cleared).
 */
bool ring_release(struct ring_rx *r);

/*
 * After publishing: whether the consumer may be asleep and this producer
 * is the one to wake it (*@awake is the consumer's awake word: 1 while it
 * polls, 0 once it may sleep, 2 once a producer is waking it).
 */
bool ring_wake_needed(uint32_t *awake);
/*
 * The consumer is about to sleep: clear *@awake. The caller then looks at
 * its rings again (ring_peek()) and sleeps only if they are empty.
 */
void ring_sleep(uint32_t *awake);
/* The consumer polls: raise *@awake. */
static inline void ring_awake(uint32_t *awake)
{
	if (__atomic_load_n(awake, __ATOMIC_RELAXED) != 1)
		__atomic_store_n(awake, 1, __ATOMIC_RELAXED);
}

#endif
