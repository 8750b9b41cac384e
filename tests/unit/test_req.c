// SPDX-License-Identifier: MIT
/* Request table: no completion lost, no stale handle honoured. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include "core/peer.h"
#include "core/req.h"
#include "run_tcase.h"

static struct req_table t;
static struct peer *peer;

static void setup(void)
{
	req_table_init(&t);
	peer = peer_new(NULL, 3);
	ck_assert_ptr_nonnull(peer);
}

static void teardown(void)
{
	ck_assert_int_eq(peer->refs, 1);	/* requests let go of the peer */
	peer_put(peer);
	req_table_fini(&t);
}

START_TEST(test_complete_then_collect)
{
	hmc_req_t id;
	struct req *r = req_alloc(&t, peer, REQ_PUT, &id);

	ck_assert_ptr_nonnull(r);
	ck_assert_uint_ne(id, 0);
	ck_assert_int_eq(req_result(&t, id, true), -EINPROGRESS);
	ck_assert(!req_is_done(&t, id));
	req_complete(r, -EIO);
	ck_assert(req_is_done(&t, id));
	ck_assert_int_eq(req_result(&t, id, false), -EIO);	/* peek */
	ck_assert_int_eq(req_result(&t, id, true), -EIO);	/* collect */
	ck_assert_int_eq(req_result(&t, id, true), -ENOENT);	/* twice */
	ck_assert_uint_eq(t.active, 0);
}
END_TEST

START_TEST(test_bad_handles)
{
	hmc_req_t id, id2;
	struct req *r;

	ck_assert_int_eq(req_result(&t, 0, true), -ENOENT);
	ck_assert_int_eq(req_result(&t, ~0ULL, true), -ENOENT);
	r = req_alloc(&t, peer, REQ_GET, &id);
	req_complete(r, 0);
	ck_assert_int_eq(req_result(&t, id, true), 0);
	/* the slot is reused under a new generation: the old handle is dead */
	r = req_alloc(&t, peer, REQ_GET, &id2);
	ck_assert_uint_eq((uint32_t)id, (uint32_t)id2);
	ck_assert_uint_ne(id, id2);
	ck_assert_int_eq(req_result(&t, id, true), -ENOENT);
	ck_assert_int_eq(req_result(&t, id2 + (1ULL << 32), true), -ENOENT);
	req_complete(r, 0);
	ck_assert_int_eq(req_result(&t, id2, true), 0);
}
END_TEST

/* Thousands in flight, completed and collected in scrambled orders. */
START_TEST(test_many_any_order)
{
	enum { N = 5000 };
	hmc_req_t *ids = calloc(N, sizeof(*ids));
	struct req **rs = calloc(N, sizeof(*rs));
	unsigned int i, j, seed = 12345;

	for (i = 0; i < N; i++) {
		rs[i] = req_alloc(&t, peer, REQ_PUT, &ids[i]);
		ck_assert_ptr_nonnull(rs[i]);
	}
	ck_assert_uint_eq(t.active, N);
	for (i = 0; i < N; i++) {		/* complete in a random order */
		j = (unsigned int)rand_r(&seed) % N;
		if (!req_is_done(&t, ids[j]))
			req_complete(rs[j], -(int)(j % 7));
	}
	for (i = 0; i < N; i++)
		if (!req_is_done(&t, ids[i]))
			req_complete(rs[i], -(int)(i % 7));
	for (i = N; i-- > 0;)			/* collect in reverse */
		ck_assert_int_eq(req_result(&t, ids[i], true), -(int)(i % 7));
	ck_assert_uint_eq(t.active, 0);
	free(ids);
	free(rs);
}
END_TEST

START_TEST(test_peer_failure_keeps_slot_until_transport_lets_go)
{
	hmc_req_t a, b;
	struct req *ra = req_alloc(&t, peer, REQ_PUT, &a);
	struct req *rb = req_alloc(&t, peer, REQ_GET, &b);

	req_fail_peer(&t, peer, -ECONNRESET);
	ck_assert_int_eq(req_result(&t, a, true), -ECONNRESET);
	ck_assert_uint_eq(t.active, 2);		/* the transport still holds a */
	req_complete(ra, 0);			/* late success does not win */
	ck_assert_uint_eq(t.active, 1);
	req_complete(rb, 0);
	ck_assert_int_eq(req_result(&t, b, true), -ECONNRESET);
	ck_assert_uint_eq(t.active, 0);
}
END_TEST

START_TEST(test_abandon)
{
	hmc_req_t a, b;
	struct req *ra = req_alloc(&t, peer, REQ_PUT, &a);
	struct req *rb = req_alloc(&t, peer, REQ_PUT, &b);

	req_abandon(&t, a);			/* caller gave up (timeout) */
	ck_assert_int_eq(req_result(&t, a, true), -ENOENT);
	ck_assert_uint_eq(t.active, 2);
	req_complete(ra, 0);			/* recycled when it ends */
	ck_assert_uint_eq(t.active, 1);
	req_complete(rb, 0);
	req_abandon(&t, b);			/* done and abandoned: freed */
	ck_assert_uint_eq(t.active, 0);
}
END_TEST

START_TEST(test_unposted)
{
	hmc_req_t a;
	struct req *ra = req_alloc(&t, peer, REQ_FLUSH, &a);

	req_free_unposted(&t, ra);
	ck_assert_int_eq(req_result(&t, a, true), -ENOENT);
	ck_assert_uint_eq(t.active, 0);
}
END_TEST

int main(void)
{
	TCase *tc = tcase_create("req");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_complete_then_collect);
	tcase_add_test(tc, test_bad_handles);
	tcase_add_test(tc, test_many_any_order);
	tcase_add_test(tc, test_peer_failure_keeps_slot_until_transport_lets_go);
	tcase_add_test(tc, test_abandon);
	tcase_add_test(tc, test_unposted);
	return run_tcase("req", tc);
}
