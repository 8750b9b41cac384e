// SPDX-License-Identifier: MIT
/*
 * Point-to-point synchronisation for every type: wait_until and test in
 * their single, all, any, some and vector forms, with status masks; a
 * ping-pong through wait_until; the distributed lock guarding a counter.
 */
#include <string.h>

#include "check.h"

#define NV 8

static long lock;
static long locked_counter;
static long pingpong;

#define TEST_P2P(TYPE, NAME)						\
static void p2p_##NAME(TYPE *iv)					\
{									\
	int me = shmem_my_pe(), n = shmem_n_pes();			\
	int right = (me + 1) % n;					\
	int status[NV] = { 0 }, i;					\
	size_t idx[NV], k;						\
	TYPE cmpv[NV];							\
									\
	for (i = 0; i < NV; i++)					\
		iv[i] = (TYPE)0;					\
	shmem_barrier_all();						\
	CHECK(shmem_##NAME##_test(&iv[0], SHMEM_CMP_EQ, 0), #NAME " test eq"); \
	CHECK(!shmem_##NAME##_test(&iv[0], SHMEM_CMP_GT, 0), #NAME " test gt"); \
	CHECK(shmem_##NAME##_test_any(iv, NV, NULL, SHMEM_CMP_NE, 0) == SIZE_MAX, \
	      #NAME " test_any none");					\
	CHECK(shmem_##NAME##_test_some(iv, NV, idx, NULL, SHMEM_CMP_NE, 0) == 0, \
	      #NAME " test_some none");					\
	CHECK(!shmem_##NAME##_test_all(iv, NV, NULL, SHMEM_CMP_NE, 0),	\
	      #NAME " test_all none");					\
	/* The left neighbour sets element 5, then 2 and 6, then all. */ \
	shmem_barrier_all();						\
	shmem_##NAME##_p(&iv[5], (TYPE)9, right);			\
	k = shmem_##NAME##_wait_until_any(iv, NV, NULL, SHMEM_CMP_EQ, (TYPE)9); \
	CHECK(k == 5, #NAME " wait_until_any %zu", k);			\
	CHECK(shmem_##NAME##_test_any(iv, NV, NULL, SHMEM_CMP_GE, (TYPE)9) == 5, \
	      #NAME " test_any");					\
	status[5] = 1;							\
	CHECK(shmem_##NAME##_test_any(iv, NV, status, SHMEM_CMP_GE, (TYPE)9) == \
	      SIZE_MAX, #NAME " test_any masked");			\
	shmem_barrier_all();						\
	shmem_##NAME##_p(&iv[2], (TYPE)3, right);			\
	shmem_##NAME##_p(&iv[6], (TYPE)3, right);			\
	shmem_fence();							\
	shmem_##NAME##_p(&iv[7], (TYPE)4, right);			\
	shmem_##NAME##_wait_until(&iv[7], SHMEM_CMP_EQ, (TYPE)4);	\
	k = shmem_##NAME##_wait_until_some(iv, NV, idx, status, SHMEM_CMP_EQ, \
					   (TYPE)3);			\
	CHECK(k == 2 && idx[0] == 2 && idx[1] == 6, #NAME " wait_until_some %zu", k); \
	CHECK(shmem_##NAME##_test_some(iv, NV, idx, NULL, SHMEM_CMP_LT, (TYPE)5) == 7, \
	      #NAME " test_some lt");					\
	shmem_barrier_all();						\
	for (i = 0; i < NV; i++)					\
		shmem_##NAME##_atomic_set_or_p(&iv[i], (TYPE)(i + 20), right); \
	shmem_##NAME##_wait_until_all(iv, NV, NULL, SHMEM_CMP_GE, (TYPE)20); \
	for (i = 0; i < NV; i++) {					\
		CHECK(iv[i] == (TYPE)(i + 20), #NAME " all %d", i);	\
		cmpv[i] = (TYPE)(i + 20);				\
	}								\
	shmem_##NAME##_wait_until_all_vector(iv, NV, NULL, SHMEM_CMP_EQ, cmpv); \
	CHECK(shmem_##NAME##_test_all_vector(iv, NV, NULL, SHMEM_CMP_EQ, cmpv), \
	      #NAME " test_all_vector");				\
	cmpv[3] = 0;							\
	CHECK(!shmem_##NAME##_test_all_vector(iv, NV, NULL, SHMEM_CMP_EQ, cmpv), \
	      #NAME " test_all_vector mismatch");			\
	CHECK(shmem_##NAME##_test_any_vector(iv, NV, NULL, SHMEM_CMP_NE, cmpv) == 3, \
	      #NAME " test_any_vector");				\
	CHECK(shmem_##NAME##_wait_until_any_vector(iv, NV, NULL, SHMEM_CMP_NE, \
						   cmpv) == 3,		\
	      #NAME " wait_until_any_vector");				\
	CHECK(shmem_##NAME##_test_some_vector(iv, NV, idx, NULL, SHMEM_CMP_NE, \
					      cmpv) == 1 && idx[0] == 3, \
	      #NAME " test_some_vector");				\
	CHECK(shmem_##NAME##_wait_until_some_vector(iv, NV, idx, NULL,	\
						    SHMEM_CMP_LE, cmpv) == 7, \
	      #NAME " wait_until_some_vector");				\
	for (i = 0; i < NV; i++)					\
		status[i] = 1;						\
	CHECK(shmem_##NAME##_wait_until_any(iv, NV, status, SHMEM_CMP_EQ, 0) == \
	      SIZE_MAX, #NAME " all masked");				\
	CHECK(shmem_##NAME##_test_all(iv, NV, status, SHMEM_CMP_EQ, 0), \
	      #NAME " test_all masked");				\
	shmem_barrier_all();						\
}

/* Blocking puts of the element, as the wait forms see any update. */
#define shmem_short_atomic_set_or_p	shmem_short_p
#define shmem_ushort_atomic_set_or_p	shmem_ushort_p
#define shmem_int_atomic_set_or_p	shmem_int_atomic_set
#define shmem_long_atomic_set_or_p	shmem_long_atomic_set
#define shmem_longlong_atomic_set_or_p	shmem_longlong_atomic_set
#define shmem_uint_atomic_set_or_p	shmem_uint_atomic_set
#define shmem_ulong_atomic_set_or_p	shmem_ulong_atomic_set
#define shmem_ulonglong_atomic_set_or_p	shmem_ulonglong_atomic_set
#define shmem_int32_atomic_set_or_p	shmem_int32_atomic_set
#define shmem_int64_atomic_set_or_p	shmem_int64_atomic_set
#define shmem_uint32_atomic_set_or_p	shmem_uint32_atomic_set
#define shmem_uint64_atomic_set_or_p	shmem_uint64_atomic_set
#define shmem_size_atomic_set_or_p	shmem_size_atomic_set
#define shmem_ptrdiff_atomic_set_or_p	shmem_ptrdiff_atomic_set
HMC_SHMEM_P2P_TYPES(TEST_P2P)

int main(void)
{
	int me, n, i, r;
	void *iv;

	shmem_init();
	me = shmem_my_pe();
	n = shmem_n_pes();
	iv = shmem_malloc(NV * sizeof(long long));
	CHECK(iv, "malloc");
#define RUN(TYPE, NAME) p2p_##NAME((TYPE *)iv);
	HMC_SHMEM_P2P_TYPES(RUN)

	/* Ping-pong: PE 0 and the last PE bounce an increasing value. */
	if (n > 1 && (me == 0 || me == n - 1)) {
		int peer = me ? 0 : n - 1;

		for (r = 1; r <= 200; r++) {
			if ((r % 2) == (me == 0)) {
				shmem_long_p(&pingpong, r, peer);
			} else {
				shmem_long_wait_until(&pingpong, SHMEM_CMP_EQ, r);
			}
		}
	}
	shmem_barrier_all();

	/* The lock makes a read-modify-write by plain RMA atomic. */
	for (i = 0; i < 50; i++) {
		long v;

		shmem_set_lock(&lock);
		v = shmem_long_g(&locked_counter, 0);
		shmem_long_p(&locked_counter, v + 1, 0);
		shmem_clear_lock(&lock);
		if (shmem_test_lock(&lock) == 0) {
			v = shmem_long_g(&locked_counter, 0);
			shmem_long_p(&locked_counter, v + 1000, 0);
			shmem_clear_lock(&lock);
		}
	}
	shmem_barrier_all();
	if (me == 0)
		CHECK(locked_counter % 1000 == 50 * n, "locked counter %ld",
		      locked_counter);
	shmem_free(iv);
	if (me == 0)
		printf("p2p: %d PEs ok\n", n);
	shmem_finalize();
	return 0;
}
