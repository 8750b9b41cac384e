// SPDX-License-Identifier: MIT
/*
 * lib/msg's shared-memory ring: records whole and in order across many
 * wrap-arounds, back-pressure when full (and the wake-up it asks for),
 * PAD records, generations, records that lie about their size, the
 * awake word, and a producer and a consumer thread at full speed, every
 * byte checked.
 */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "msg/ring.h"
#include "run_tcase.h"

#define NR		64u	/* cells: 4 KiB */

struct ring {
	struct ring_ctl ctl __attribute__((aligned(64)));
	uint8_t cells[NR * RING_CELL] __attribute__((aligned(64)));
	uint32_t awake;
	struct ring_tx tx;
	struct ring_rx rx;
};

static void ring_setup(struct ring *r, uint64_t gen)
{
	memset(r, 0xa5, sizeof(*r));	/* whatever was there before */
	ring_reset(&r->ctl, r->cells, NR);
	r->awake = 0;
	r->tx = (struct ring_tx){ .cells = r->cells, .ctl = &r->ctl, .nr = NR,
				  .gen = gen };
	r->rx = (struct ring_rx){ .cells = r->cells, .ctl = &r->ctl, .nr = NR,
				  .gen = gen };
}

/* Byte @i of record @k: differs per byte and per record. */
static uint8_t byte_of(uint64_t k, uint32_t i)
{
	uint64_t x = (k + 1) * 0x9e3779b97f4a7c15ull + i * 0xbf58476d1ce4e5b9ull;

	return (uint8_t)(x >> 56 ^ x >> 29);
}

/* Record @k's length: 0 to the largest, most of them small. */
static uint32_t len_of(uint64_t k)
{
	static const uint32_t lens[] = { 0, 1, 8, 39, 40, 41, 100, 1000,
					 NR * RING_CELL - RING_REC_LEN };

	return k % 7 == 6 ? (uint32_t)(k * 131 % ring_payload_max(NR)) :
	       lens[k % (sizeof(lens) / sizeof(lens[0]))];
}

static bool produce(struct ring *r, uint64_t k)
{
	uint32_t len = len_of(k), i;
	uint8_t *d = ring_reserve(&r->tx, len);

	if (!d)
		return false;
	for (i = 0; i < len; i++)
		d[i] = byte_of(k, i);
	ring_commit(&r->tx, len, (uint8_t)(k % 200), (uint8_t)k, k * 3 + 1);
	return true;
}

/* Take record @k if it is there: whether it was, checking all of it. */
static bool consume(struct ring *r, uint64_t k)
{
	const struct ring_rec *rec = ring_peek(&r->rx);
	const uint8_t *d;
	uint32_t i;

	if (!rec)
		return false;
	ck_assert_uint_eq(rec->len, len_of(k));
	ck_assert_uint_eq(rec->kind, k % 200);
	ck_assert_uint_eq(rec->flags, (uint8_t)k);
	ck_assert_uint_eq(rec->tag, k * 3 + 1);
	d = (const uint8_t *)(rec + 1);
	for (i = 0; i < rec->len; i++)
		if (d[i] != byte_of(k, i))
			ck_abort_msg("record %llu byte %u: %#x, want %#x",
				     (unsigned long long)k, i, d[i],
				     byte_of(k, i));
	ring_consume(&r->rx, rec);
	return true;
}

START_TEST(test_wrap_and_full)
{
	static struct ring r;
	uint64_t sent = 0, got = 0, fulls = 0, pads = 0;

	ring_setup(&r, 1);
	ck_assert_ptr_null(ring_peek(&r.rx));
	/* Fill until full, drain a little, and again, for many wrap-arounds. */
	while (got < 5000) {
		uint64_t tail = r.tx.tail;

		if (produce(&r, sent)) {
			/* a record that did not fit before the end took a PAD */
			pads += r.tx.tail - tail >
				(RING_REC_LEN + len_of(sent) + RING_CELL - 1) /
				RING_CELL;
			sent++;
			continue;
		}
		/* Full: the producer asked to be woken, and nothing was lost. */
		fulls++;
		ck_assert_uint_eq(r.ctl.want_space, 1);
		ck_assert_uint_le(r.tx.tail - r.rx.pos, NR);
		if (got == sent) {
			/* Only the PAD before a record as large as the ring. */
			ck_assert_uint_gt((RING_REC_LEN + len_of(sent) +
					   RING_CELL - 1) / RING_CELL,
					  NR - (r.tx.tail - r.rx.pos));
			ck_assert_ptr_null(ring_peek(&r.rx));
		} else {
			ck_assert(consume(&r, got));
			got++;
		}
		ck_assert(ring_release(&r.rx));	/* the wake-up */
		ck_assert_uint_eq(r.ctl.want_space, 0);
		ck_assert(!ring_release(&r.rx));	/* once */
		while (got + 2 < sent && got % 3)
			ck_assert(consume(&r, got++));
		ring_release(&r.rx);
	}
	while (got < sent)
		ck_assert(consume(&r, got++));
	ck_assert_ptr_null(ring_peek(&r.rx));
	ck_assert_uint_gt(fulls, 100);
	ck_assert_uint_gt(pads, 5);
	ck_assert_uint_gt(r.rx.pos / NR, 100);	/* wrapped that often */
}
END_TEST

START_TEST(test_largest_after_pad)
{
	static struct ring r;
	uint8_t *d;

	/* One cell used at the end: the largest record must still go in. */
	ring_setup(&r, 7);
	r.tx.tail = r.tx.head = r.rx.pos = r.rx.published = NR - 1;
	r.ctl.head = NR - 1;
	d = ring_reserve(&r.tx, 8);	/* 1 cell: fits at the end */
	ck_assert_ptr_nonnull(d);
	memset(d, 0x11, 8);
	ring_commit(&r.tx, 8, 1, 0, 5);
	ck_assert_ptr_null(ring_reserve(&r.tx, ring_payload_max(NR)));
	ck_assert_ptr_nonnull(ring_peek(&r.rx));
	ring_consume(&r.rx, ring_peek(&r.rx));
	ck_assert(ring_release(&r.rx));
	d = ring_reserve(&r.tx, ring_payload_max(NR));
	ck_assert_ptr_nonnull(d);
	memset(d, 0x22, ring_payload_max(NR));
	ring_commit(&r.tx, ring_payload_max(NR), 2, 0, 6);
	ck_assert_ptr_nonnull(ring_peek(&r.rx));
	ck_assert_uint_eq(ring_peek(&r.rx)->len, ring_payload_max(NR));
	ck_assert_uint_eq(ring_peek(&r.rx)->tag, 6);
	/* the PAD at the end was skipped */
	ck_assert_uint_eq(r.rx.pos, NR);
}
END_TEST

START_TEST(test_generation_and_lies)
{
	static struct ring r;
	struct ring_rec *rec;

	/* A producer of another generation is never read. */
	ring_setup(&r, 2);
	r.tx.gen = 3;
	ck_assert(produce(&r, 0));
	ck_assert_ptr_null(ring_peek(&r.rx));

	/* Nor is a record claiming more cells than are left, or too few. */
	ring_setup(&r, 2);
	ck_assert_ptr_nonnull(ring_reserve(&r.tx, 100));
	ring_commit(&r.tx, 100, 1, 0, 1);
	rec = (struct ring_rec *)r.cells;
	rec->cells = NR + 1;
	ck_assert_ptr_null(ring_peek(&r.rx));
	rec->cells = 1;		/* 100 bytes need 2 */
	ck_assert_ptr_null(ring_peek(&r.rx));
	rec->cells = 2;
	ck_assert_ptr_nonnull(ring_peek(&r.rx));
}
END_TEST

START_TEST(test_awake)
{
	uint32_t awake = 0;

	ck_assert(ring_wake_needed(&awake));	/* asleep: this one wakes */
	ck_assert_uint_eq(awake, 2);
	ck_assert(!ring_wake_needed(&awake));	/* already being woken */
	ring_awake(&awake);
	ck_assert_uint_eq(awake, 1);
	ck_assert(!ring_wake_needed(&awake));	/* it polls */
	ring_sleep(&awake);
	ck_assert_uint_eq(awake, 0);
	ck_assert(ring_wake_needed(&awake));
}
END_TEST

#define STREAM	50000

static void *producer(void *arg)
{
	struct ring *r = arg;
	uint64_t k;

	for (k = 0; k < STREAM; k++)
		while (!produce(r, k))
			sched_yield();	/* two CPUs, shared */
	return NULL;
}

START_TEST(test_threads)
{
	static struct ring r;
	pthread_t th;
	uint64_t k = 0;

	ring_setup(&r, 9);
	ck_assert_int_eq(pthread_create(&th, NULL, producer, &r), 0);
	while (k < STREAM) {
		if (consume(&r, k))
			k++;
		else if (!ring_release(&r.rx))
			sched_yield();
	}
	ring_release(&r.rx);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_ptr_null(ring_peek(&r.rx));
}
END_TEST

int main(void)
{
	TCase *tc = tcase_create("ring");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_wrap_and_full);
	tcase_add_test(tc, test_largest_after_pad);
	tcase_add_test(tc, test_generation_and_lies);
	tcase_add_test(tc, test_awake);
	tcase_add_test(tc, test_threads);
	return run_tcase("ring", tc);
}
