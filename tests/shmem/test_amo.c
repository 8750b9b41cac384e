// SPDX-License-Identifier: MIT
/*
 * AMOs for every type each routine is defined on, blocking, _nbi and
 * context forms, all PEs hammering one location of one PE at once (to the
 * heap and to a global), the final values and every fetched value checked.
 */
#include <string.h>

#include "check.h"

#define ROUNDS 200

static long long global_words[64];

/* fetch/set/swap (extended types, floating point included). */
#define TEST_EXT(TYPE, NAME)						\
static void ext_##NAME(TYPE *heap)					\
{									\
	int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n; \
	int left = (me + n - 1) % n;					\
	TYPE v, f = 0;							\
									\
	shmem_##NAME##_atomic_set(heap, (TYPE)(me * 3 + 1), right);	\
	shmem_barrier_all();						\
	CHECK(*heap == (TYPE)(left * 3 + 1), #NAME " set");		\
	v = shmem_##NAME##_atomic_fetch(heap, right);			\
	CHECK(v == (TYPE)(me * 3 + 1), #NAME " fetch");			\
	shmem_##NAME##_atomic_fetch_nbi(&f, heap, left);		\
	shmem_quiet();							\
	CHECK(f == (TYPE)(((left + n - 1) % n) * 3 + 1), #NAME " fetch_nbi"); \
	shmem_barrier_all();						\
	/* Everyone swaps into PE 0: the old values form a chain. */	\
	if (me == 0)							\
		*heap = (TYPE)-1;					\
	shmem_barrier_all();						\
	v = shmem_ctx_##NAME##_atomic_swap(SHMEM_CTX_DEFAULT, heap, (TYPE)me, 0); \
	shmem_##NAME##_atomic_swap_nbi(&f, heap, (TYPE)(me + 100), 0);	\
	shmem_quiet();							\
	shmem_##NAME##_atomic_set(&((TYPE *)global_words)[me], v, 0);	\
	shmem_barrier_all();						\
	if (me == 0) {							\
		/* Each swapped-in value was seen by one later swap. */	\
		int seen_init = 0, pe;					\
		for (pe = 0; pe < n; pe++)				\
			seen_init += ((TYPE *)global_words)[pe] == (TYPE)-1; \
		CHECK(seen_init <= 1, #NAME " swap chain");		\
		CHECK(*heap >= (TYPE)100 || n == 0, #NAME " last swap");	\
	}								\
	shmem_barrier_all();						\
}
HMC_SHMEM_EXT_AMO_TYPES(TEST_EXT)

/* add, inc, fetch forms, compare_swap (standard AMO types). */
#define TEST_STD(TYPE, NAME)						\
static void std_##NAME(TYPE *heap, TYPE *glob)				\
{									\
	int me = shmem_my_pe(), n = shmem_n_pes(), r;			\
	TYPE v, f, expect;						\
	char *seen = calloc((size_t)n * ROUNDS * 3 + 1, 1);		\
									\
	*heap = 0;							\
	memset(glob, 0, 4 * sizeof(TYPE));				\
	shmem_barrier_all();						\
	for (r = 0; r < ROUNDS; r++) {					\
		v = shmem_##NAME##_atomic_fetch_add(heap, (TYPE)(me + 1), 0); \
		CHECK(v < (TYPE)(ROUNDS * n * (n + 1)), #NAME " fetch_add %d", r); \
		shmem_##NAME##_atomic_add(glob, (TYPE)2, 0);		\
		shmem_##NAME##_atomic_inc(glob, 0);			\
		v = shmem_##NAME##_atomic_fetch_inc(&glob[1], 0);	\
		seen[(size_t)v] = 1;					\
		shmem_ctx_##NAME##_atomic_fetch_inc_nbi(SHMEM_CTX_DEFAULT, &f, \
							&glob[1], 0);	\
		seen[(size_t)f] = 1;					\
		shmem_##NAME##_atomic_fetch_add_nbi(&f, &glob[2], (TYPE)1, 0); \
	}								\
	shmem_barrier_all();						\
	expect = (TYPE)(ROUNDS * n * (n + 1) / 2);			\
	if (me == 0) {							\
		CHECK(*heap == expect, #NAME " fetch_add total");	\
		CHECK(*glob == (TYPE)(3 * ROUNDS * n), #NAME " add+inc total"); \
		CHECK(glob[1] == (TYPE)(2 * ROUNDS * n), #NAME " fetch_inc total"); \
		CHECK(glob[2] == (TYPE)(ROUNDS * n), #NAME " fetch_add_nbi total"); \
	}								\
	/* Every fetch_inc ticket this PE got is distinct. */		\
	{								\
		int got = 0, i;						\
		for (i = 0; i < n * ROUNDS * 2; i++)			\
			got += seen[i];					\
		CHECK(got == 2 * ROUNDS, #NAME " distinct tickets %d", got); \
	}								\
	/* compare_swap: one winner per round among all PEs. */		\
	shmem_barrier_all();						\
	if (me == 0)							\
		glob[3] = 0;						\
	shmem_barrier_all();						\
	for (r = 0; r < ROUNDS; r++) {					\
		v = shmem_##NAME##_atomic_compare_swap(&glob[3], (TYPE)r, \
						       (TYPE)(r + 1), 0); \
		CHECK(v >= (TYPE)r, #NAME " cswap old %d", r);		\
		while (shmem_##NAME##_atomic_fetch(&glob[3], 0) == (TYPE)r) \
			;						\
	}								\
	shmem_##NAME##_atomic_compare_swap_nbi(&f, &glob[3], (TYPE)ROUNDS, \
					       (TYPE)ROUNDS, 0);	\
	shmem_quiet();							\
	CHECK(f == (TYPE)ROUNDS, #NAME " cswap_nbi");			\
	CHECK(shmem_ctx_##NAME##_atomic_compare_swap(SHMEM_CTX_DEFAULT,	\
						     &glob[3], (TYPE)0,	\
						     (TYPE)5, 0) ==	\
	      (TYPE)ROUNDS, #NAME " failed cswap");			\
	shmem_barrier_all();						\
	free(seen);							\
}
HMC_SHMEM_AMO_TYPES(TEST_STD)

/* and/or/xor: each PE owns distinct bits. */
#define TEST_BIT(TYPE, NAME)						\
static void bit_##NAME(TYPE *heap)					\
{									\
	int me = shmem_my_pe(), n = shmem_n_pes();			\
	TYPE mine = (TYPE)((TYPE)1 << (me % 31)), f;			\
									\
	if (me == 0) {							\
		heap[0] = 0;						\
		heap[1] = (TYPE)~(TYPE)0;				\
		heap[2] = 0;						\
	}								\
	shmem_barrier_all();						\
	shmem_##NAME##_atomic_or(&heap[0], mine, 0);			\
	f = shmem_##NAME##_atomic_fetch_and(&heap[1], (TYPE)~mine, 0);	\
	CHECK((f & mine) == mine, #NAME " fetch_and saw my bit");	\
	shmem_##NAME##_atomic_xor(&heap[2], mine, 0);			\
	shmem_##NAME##_atomic_fetch_xor_nbi(&f, &heap[2], mine, 0);	\
	shmem_quiet();							\
	CHECK(f & mine, #NAME " fetch_xor_nbi");			\
	shmem_##NAME##_atomic_xor(&heap[2], mine, 0);			\
	f = shmem_ctx_##NAME##_atomic_fetch_or(SHMEM_CTX_DEFAULT, &heap[0], \
					       0, 0);			\
	CHECK(f & mine, #NAME " fetch_or");				\
	shmem_##NAME##_atomic_fetch_or_nbi(&f, &heap[0], 0, 0);		\
	shmem_##NAME##_atomic_and(&heap[0], (TYPE)~(TYPE)0, 0);		\
	shmem_##NAME##_atomic_fetch_and_nbi(&f, &heap[1], (TYPE)~(TYPE)0, 0); \
	shmem_barrier_all();						\
	if (me == 0) {							\
		TYPE all = 0;						\
		int pe;							\
		for (pe = 0; pe < n; pe++)				\
			all |= (TYPE)((TYPE)1 << (pe % 31));		\
		CHECK(heap[0] == all, #NAME " or");			\
		CHECK(heap[1] == (TYPE)~all, #NAME " and");		\
		CHECK(heap[2] == all, #NAME " xor");			\
	}								\
	shmem_barrier_all();						\
}
HMC_SHMEM_BITWISE_AMO_TYPES(TEST_BIT)

int main(void)
{
	long long *heap;

	shmem_init();
	heap = shmem_malloc(64 * sizeof(*heap));
	CHECK(heap, "malloc");
#define RUN_EXT(TYPE, NAME) ext_##NAME((TYPE *)heap);
#define RUN_STD(TYPE, NAME) std_##NAME((TYPE *)heap, (TYPE *)&global_words[8]);
#define RUN_BIT(TYPE, NAME) bit_##NAME((TYPE *)heap);
	HMC_SHMEM_EXT_AMO_TYPES(RUN_EXT)
	HMC_SHMEM_AMO_TYPES(RUN_STD)
	HMC_SHMEM_BITWISE_AMO_TYPES(RUN_BIT)
	shmem_free(heap);
	if (shmem_my_pe() == 0)
		printf("amo: %d PEs ok\n", shmem_n_pes());
	shmem_finalize();
	return 0;
}
