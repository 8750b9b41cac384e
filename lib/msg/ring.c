// SPDX-License-Identifier: MIT
/* Shared-memory SPSC ring of records (see ring.h). */
#include <string.h>

#include "msg/ring.h"
#include "sys/util.h"

static inline uint64_t rec_seq(uint64_t gen, uint64_t pos)
{
	return gen << 48 | ((pos + 1) & ((1ull << 48) - 1));
}

static inline uint32_t rec_cells(uint32_t len)
{
	return (RING_REC_LEN + len + RING_CELL - 1) / RING_CELL;
}

static inline struct ring_rec *cell(uint8_t *cells, uint32_t nr, uint64_t pos)
{
	return (struct ring_rec *)(cells + (pos & (nr - 1)) * RING_CELL);
}

void ring_reset(struct ring_ctl *ctl, uint8_t *cells, uint32_t nr)
{
	memset(cells, 0, (size_t)nr * RING_CELL);
	memset(ctl, 0, sizeof(*ctl));
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

/* Free cells, reading the consumer's head again if @need are not. */
static bool room(struct ring_tx *t, uint32_t need)
{
	if (t->tail + need - t->head <= t->nr)
		return true;
	t->head = __atomic_load_n(&t->ctl->head, __ATOMIC_ACQUIRE);
	if (t->tail + need - t->head <= t->nr)
		return true;
	/* Ask for a wake-up, then look once more (see ring.h). */
	__atomic_store_n(&t->ctl->want_space, 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	t->head = __atomic_load_n(&t->ctl->head, __ATOMIC_ACQUIRE);
	return t->tail + need - t->head <= t->nr;
}

__hot void *ring_reserve(struct ring_tx *t, uint32_t len)
{
	uint32_t need = rec_cells(len);
	uint32_t left = t->nr - (uint32_t)(t->tail & (t->nr - 1));
	struct ring_rec *rec;

	if (need > left) {
		/* Records never wrap: a PAD takes the end of the cells. */
		if (!room(t, left))
			return NULL;
		rec = cell(t->cells, t->nr, t->tail);
		rec->len = 0;
		rec->kind = RING_PAD;
		rec->cells = (uint16_t)left;
		__atomic_store_n(&rec->seq, rec_seq(t->gen, t->tail),
				 __ATOMIC_RELEASE);
		t->tail += left;
	}
	if (!room(t, need))
		return NULL;
	return (uint8_t *)cell(t->cells, t->nr, t->tail) + RING_REC_LEN;
}

__hot void ring_commit(struct ring_tx *t, uint32_t len, uint8_t kind,
		       uint8_t flags, uint64_t tag)
{
	struct ring_rec *rec = cell(t->cells, t->nr, t->tail);
	uint32_t need = rec_cells(len);

	rec->len = len;
	rec->kind = kind;
	rec->flags = flags;
	rec->cells = (uint16_t)need;
	rec->tag = tag;
	__atomic_store_n(&rec->seq, rec_seq(t->gen, t->tail), __ATOMIC_RELEASE);
	t->tail += need;
}

__hot const struct ring_rec *ring_peek(struct ring_rx *r)
{
	struct ring_rec *rec;
	uint32_t left;

	for (;;) {
		rec = cell(r->cells, r->nr, r->pos);
		if (__atomic_load_n(&rec->seq, __ATOMIC_ACQUIRE) !=
		    rec_seq(r->gen, r->pos))
			return NULL;
		left = r->nr - (uint32_t)(r->pos & (r->nr - 1));
		/*
		 * The producer's word for the record's size, checked: a record
		 * that claims more cells than are left, or fewer than its
		 * payload needs, is not read (NULL until the ring is dropped).
		 */
		if (!rec->cells || rec->cells > left ||
		    (rec->kind != RING_PAD && rec->cells != rec_cells(rec->len)))
			return NULL;
		if (rec->kind != RING_PAD)
			return rec;
		ring_consume(r, rec);
	}
}

__hot void ring_consume(struct ring_rx *r, const struct ring_rec *rec)
{
	uint32_t i, n = rec->cells;

	for (i = 0; i < n; i++)
		__atomic_store_n(&cell(r->cells, r->nr, r->pos + i)->seq, 0,
				 __ATOMIC_RELAXED);
	r->pos += n;
}

__hot bool ring_release(struct ring_rx *r)
{
	if (r->pos == r->published)
		return false;
	r->published = r->pos;
	/* Release: the cleared sequence words are seen before the cells are reused. */
	__atomic_store_n(&r->ctl->head, r->pos, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&r->ctl->want_space, __ATOMIC_RELAXED))
		return false;
	return __atomic_exchange_n(&r->ctl->want_space, 0, __ATOMIC_RELAXED);
}

__hot bool ring_wake_needed(uint32_t *awake)
{
	uint32_t zero = 0;

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(awake, __ATOMIC_RELAXED))
		return false;
	return __atomic_compare_exchange_n(awake, &zero, 2, false,
					   __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

void ring_sleep(uint32_t *awake)
{
	__atomic_store_n(awake, 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
