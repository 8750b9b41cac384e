// SPDX-License-Identifier: MIT
/*
 * Collectives and teams: barriers, broadcast, collect, fcollect, alltoall,
 * alltoalls and every reduction over its types, on the world team, on
 * split teams (strided and 2-D), and in the deprecated active-set forms
 * with pSync; contexts on teams. Results checked element by element
 * against values computed here.
 */
#include <complex.h>
#include <string.h>

#include "check.h"

#define NR 5000		/* above the small-reduction size for 8-byte types */

static long psync[SHMEM_SYNC_SIZE];
static long psync2[SHMEM_SYNC_SIZE];
static long barrier_count;

/* Element i of PE pe's source for reductions: small, so sums and products stay exact. */
#define RV(pe, i) ((((pe) + 1) * 3 + (i) * 7) % 5 + 1)

#define TEST_RED(TYPE, NAME, OP, INIT, STEP)				\
static void red_##NAME##_##OP(shmem_team_t team, TYPE *dst, TYPE *src, size_t nr) \
{									\
	int tn = shmem_team_n_pes(team), tme = shmem_team_my_pe(team), pe; \
	size_t i;							\
									\
	for (i = 0; i < nr; i++)					\
		src[i] = (TYPE)RV(tme, i);				\
	CHECK(shmem_##NAME##_##OP##_reduce(team, dst, src, nr) == 0, "ret"); \
	for (i = 0; i < nr; i++) {					\
		TYPE acc = (TYPE)RV(0, i), x;				\
		for (pe = 1; pe < tn; pe++) {				\
			x = (TYPE)RV(pe, i);				\
			acc = STEP;					\
		}							\
		CHECK(dst[i] == acc, #NAME "_" #OP "_reduce %zu of %zu", i, nr); \
	}								\
	/* In place: dest is source. */					\
	for (i = 0; i < nr; i++)					\
		src[i] = (TYPE)RV(tme, i);				\
	shmem_##NAME##_##OP##_reduce(team, src, src, nr);		\
	CHECK(!memcmp(src, dst, nr * sizeof(TYPE)), #NAME "_" #OP " in place"); \
	shmem_team_sync(team);						\
}
#define RED_BITWISE(TYPE, NAME)						\
	TEST_RED(TYPE, NAME, and, 0, acc & x)				\
	TEST_RED(TYPE, NAME, or, 0, acc | x)				\
	TEST_RED(TYPE, NAME, xor, 0, acc ^ x)
#define RED_MINMAX(TYPE, NAME)						\
	TEST_RED(TYPE, NAME, max, 0, x > acc ? x : acc)			\
	TEST_RED(TYPE, NAME, min, 0, x < acc ? x : acc)
#define RED_ARITH(TYPE, NAME)						\
	TEST_RED(TYPE, NAME, sum, 0, acc + x)				\
	TEST_RED(TYPE, NAME, prod, 0, acc * x)
HMC_SHMEM_BITWISE_RED_TYPES(RED_BITWISE)
HMC_SHMEM_MINMAX_RED_TYPES(RED_MINMAX)
HMC_SHMEM_ARITH_RED_TYPES(RED_ARITH)

static void reductions(shmem_team_t team, void *dst, void *src)
{
	size_t sizes[] = { 1, 7, NR }, k;

	for (k = 0; k < 3; k++) {
#define RUN_BW(TYPE, NAME)						\
		red_##NAME##_and(team, dst, src, sizes[k]);		\
		red_##NAME##_or(team, dst, src, sizes[k]);		\
		red_##NAME##_xor(team, dst, src, sizes[k]);
#define RUN_MM(TYPE, NAME)						\
		red_##NAME##_max(team, dst, src, sizes[k]);		\
		red_##NAME##_min(team, dst, src, sizes[k]);
#define RUN_AR(TYPE, NAME)						\
		red_##NAME##_sum(team, dst, src, sizes[k]);		\
		red_##NAME##_prod(team, dst, src, sizes[k]);
		HMC_SHMEM_BITWISE_RED_TYPES(RUN_BW)
		HMC_SHMEM_MINMAX_RED_TYPES(RUN_MM)
		HMC_SHMEM_ARITH_RED_TYPES(RUN_AR)
	}
}

/* broadcast, collect, fcollect, alltoall(s) on a team, bytes checked. */
static void data_colls(shmem_team_t team, unsigned char *dst, unsigned char *src)
{
	int tn = shmem_team_n_pes(team), tme = shmem_team_my_pe(team), pe, root;
	size_t len = 3001, i, off;
	long *ld = (long *)dst, *ls = (long *)src;

	for (root = 0; root < tn; root++) {
		for (i = 0; i < len; i++)
			src[i] = pat(tme, i, root);
		memset(dst, 0, len);
		CHECK(shmem_broadcastmem(team, dst, src, len, root) == 0, "bcast");
		for (i = 0; i < len; i++)
			CHECK(dst[i] == pat(root, i, root), "bcast root %d byte %zu",
			      root, i);
		memset(dst, 0, len);
		CHECK(shmem_long_broadcast(team, ld, ls, len / 8, root) == 0, "lbcast");
		for (i = 0; i < len / 8 * 8; i++)
			CHECK(dst[i] == pat(root, i, root), "long bcast root %d byte %zu",
			      root, i);
	}
	for (i = 0; i < len; i++)
		src[i] = pat(tme, i, 50);
	CHECK(shmem_fcollectmem(team, dst, src, len) == 0, "fcollect");
	for (pe = 0; pe < tn; pe++)
		for (i = 0; i < len; i++)
			CHECK(dst[pe * len + i] == pat(pe, i, 50), "fcollect %d %zu", pe, i);
	/* collect: PE k contributes k * 100 + 1 bytes. */
	CHECK(shmem_collectmem(team, dst, src, (size_t)tme * 100 + 1) == 0, "collect");
	for (pe = 0, off = 0; pe < tn; off += (size_t)pe * 100 + 1, pe++)
		for (i = 0; i < (size_t)pe * 100 + 1; i++)
			CHECK(dst[off + i] == pat(pe, i, 50), "collect %d %zu", pe, i);
	CHECK(shmem_int_collect(team, (int *)dst, (int *)src, (size_t)tme + 1) == 0,
	      "int collect");
	/* alltoall: block j of PE k's source goes to block k of PE j's dest. */
	for (i = 0; i < len * (size_t)tn; i++)
		src[i] = pat(tme, i, 60);
	CHECK(shmem_alltoallmem(team, dst, src, len) == 0, "alltoall");
	for (pe = 0; pe < tn; pe++)
		for (i = 0; i < len; i++)
			CHECK(dst[pe * len + i] == pat(pe, tme * len + i, 60),
			      "alltoall from %d byte %zu", pe, i);
	/* alltoalls of longs, dest stride 2, source stride 3, 5 per PE. */
	for (i = 0; i < 3 * 5 * (size_t)tn; i++)
		ls[i] = tme * 1000 + (long)i;
	memset(dst, 0, 2 * 5 * (size_t)tn * sizeof(long));
	CHECK(shmem_long_alltoalls(team, ld, ls, 2, 3, 5) == 0, "alltoalls");
	for (pe = 0; pe < tn; pe++)
		for (i = 0; i < 5; i++)
			CHECK(ld[2 * (pe * 5 + i)] == pe * 1000 + 3 * ((long)tme * 5 + (long)i),
			      "alltoalls from %d element %zu", pe, i);
	shmem_team_sync(team);
}

static void teams(void *dst, void *src)
{
	int me = shmem_my_pe(), n = shmem_n_pes();
	shmem_team_t even, x, y, sub;
	shmem_team_config_t conf = { .num_contexts = 2 }, got;
	shmem_ctx_t ctx;
	long *cell = src;

	/* Even PEs. */
	CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, &conf,
				       SHMEM_TEAM_NUM_CONTEXTS, &even) == 0, "split");
	if (me % 2) {
		CHECK(even == SHMEM_TEAM_INVALID, "odd PE got a team");
	} else {
		CHECK(shmem_team_my_pe(even) == me / 2, "even my_pe");
		CHECK(shmem_team_n_pes(even) == (n + 1) / 2, "even n_pes");
		CHECK(shmem_team_translate_pe(even, me / 2, SHMEM_TEAM_WORLD) == me,
		      "translate to world");
		CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, 1, even) == -1 ||
		      n == 1, "odd not in even");
		CHECK(shmem_team_get_config(even, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 &&
		      got.num_contexts == 2, "config");
		data_colls(even, dst, src);
		reductions(even, dst, src);
		/* A context on the team addresses PEs by team number. */
		CHECK(shmem_team_create_ctx(even, 0, &ctx) == 0, "team ctx");
		shmem_team_t t;
		CHECK(shmem_ctx_get_team(ctx, &t) == 0 && t == even, "ctx team");
		*cell = -1;
		shmem_team_sync(even);
		shmem_ctx_long_p(ctx, cell, 700 + me,
				 (shmem_team_my_pe(even) + 1) % shmem_team_n_pes(even));
		shmem_ctx_quiet(ctx);
		shmem_team_sync(even);
		int lt = (shmem_team_my_pe(even) + shmem_team_n_pes(even) - 1) %
			 shmem_team_n_pes(even);
		CHECK(*cell == 700 + 2 * lt, "ctx put on team: %ld", *cell);
		shmem_ctx_destroy(ctx);
		/* Nested: every other even PE, world stride 4. */
		CHECK(shmem_team_split_strided(even, 0, 2, (shmem_team_n_pes(even) + 1) / 2,
					       NULL, 0, &sub) == 0, "nested split");
		if (me % 4 == 0) {
			CHECK(shmem_team_translate_pe(sub, shmem_team_my_pe(sub),
						      SHMEM_TEAM_WORLD) == me, "nested");
			data_colls(sub, dst, src);
			shmem_team_destroy(sub);
		} else {
			CHECK(sub == SHMEM_TEAM_INVALID, "nested invalid");
		}
		shmem_team_destroy(even);
	}
	shmem_barrier_all();

	/* 2-D: rows of 2. */
	CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &x, NULL, 0, &y) == 0,
	      "split_2d");
	CHECK(shmem_team_my_pe(x) == me % 2 && shmem_team_my_pe(y) == me / 2, "2d index");
	CHECK(shmem_team_n_pes(x) == (me / 2 * 2 + 2 <= n ? 2 : 1), "x size");
	CHECK(shmem_team_n_pes(y) == (n - me % 2 + 1) / 2, "y size");
	data_colls(x, dst, src);
	data_colls(y, dst, src);
	long v = me + 1, s;
	static long sv, sd;
	sv = v;
	shmem_long_sum_reduce(y, &sd, &sv, 1);
	for (s = 0, v = me % 2; v < n; v += 2)
		s += v + 1;
	CHECK(sd == s, "y sum %ld vs %ld", sd, s);
	shmem_team_destroy(x);
	shmem_team_destroy(y);
	shmem_barrier_all();
}

/* Deprecated active-set forms over the odd PEs (stride 2) or everyone. */
static void active_set(void *dstv, void *srcv)
{
	int me = shmem_my_pe(), n = shmem_n_pes(), i, k;
	int start = n > 1 ? 1 : 0, log = n > 1 ? 1 : 0, size = n > 1 ? n / 2 : 1;
	long *dst = dstv, *src = srcv, pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + 64];
	int32_t *d32 = dstv, *s32 = srcv;

	if ((me - start) % (1 << log) || me < start)
		goto out;
	k = (me - start) >> log;
	for (i = 0; i < 100; i++)
		src[i] = k * 1000 + i;
	for (i = 0; i < 100; i++)
		dst[i] = -5;
	shmem_broadcast64(dst, src, 100, size - 1, start, log, size, psync);
	for (i = 0; i < 100; i++)
		CHECK(dst[i] == (k == size - 1 ? -5 : (size - 1) * 1000 + i),
		      "broadcast64 %d: %ld", i, dst[i]);
	shmem_fcollect64(dst, src, 10, start, log, size, psync2);
	for (i = 0; i < 10 * size; i++)
		CHECK(dst[i] == (i / 10) * 1000 + i % 10, "fcollect64 %d", i);
	for (i = 0; i < 64; i++)
		s32[i] = k * 100 + i;
	shmem_collect32(d32, s32, (size_t)k + 1, start, log, size, psync);
	for (i = 0, k = 0; k < size; k++)
		for (int j = 0; j <= k; j++, i++)
			CHECK(d32[i] == k * 100 + j, "collect32 %d", i);
	k = (me - start) >> log;
	for (i = 0; i < 3 * size; i++)
		src[i] = k * 1000 + i;
	shmem_alltoall64(dst, src, 3, start, log, size, psync2);
	for (i = 0; i < 3 * size; i++)
		CHECK(dst[i] == (i / 3) * 1000 + k * 3 + i % 3, "alltoall64 %d", i);
	for (i = 0; i < 64; i++)
		s32[i] = k * 100 + i;
	shmem_alltoalls32(d32, s32, 1, 2, 2, start, log, size, psync);
	for (i = 0; i < 2 * size; i++)
		CHECK(d32[i] == (i / 2) * 100 + 2 * (k * 2 + i % 2), "alltoalls32 %d", i);
	for (i = 0; i < 100; i++)
		src[i] = k + i;
	shmem_long_sum_to_all(dst, src, 100, start, log, size, pwrk, psync2);
	for (i = 0; i < 100; i++)
		CHECK(dst[i] == (long)size * (size - 1) / 2 + (long)size * i,
		      "sum_to_all %d", i);
	shmem_long_max_to_all(dst, src, 100, start, log, size, pwrk, psync);
	shmem_short_and_to_all((short *)dst, (short *)src, 4, start, log, size,
			       (short *)pwrk, psync2);
	shmem_barrier(start, log, size, psync);
	shmem_sync(start, log, size, psync2);
	for (i = 0; i < SHMEM_SYNC_SIZE; i++)
		CHECK(psync[i] == SHMEM_SYNC_VALUE && psync2[i] == SHMEM_SYNC_VALUE,
		      "pSync restored %d", i);
out:
	shmem_barrier_all();
}

/*
 * collect with a single contributor: every other PE passes nelems 0, so the
 * result is that PE's block alone and nothing past it is written (found by
 * the Mellanox oshmem_test coll suite, which checks exactly this).
 */
static void one_contributor(void *dstv, void *srcv)
{
	int me = shmem_my_pe(), n = shmem_n_pes(), c = n > 2 ? 1 : 0, i;
	int *d = dstv, *s = srcv;
	long *dl = dstv, *sl = srcv;

	for (i = 0; i < n + 8; i++)
		d[i] = -7;
	for (i = 0; i < 3; i++)
		s[i] = me * 10 + i;
	shmem_barrier_all();
	CHECK(shmem_int_collect(SHMEM_TEAM_WORLD, d, s, me == c ? 3 : 0) == 0,
	      "one-contributor collect");
	for (i = 0; i < n + 8; i++)
		CHECK(d[i] == (i < 3 ? c * 10 + i : -7), "one-contributor collect %d: %d", i, d[i]);
	shmem_barrier_all();
	for (i = 0; i < n + 8; i++)
		dl[i] = -7;
	for (i = 0; i < 3; i++)
		sl[i] = me * 100 + i;
	shmem_barrier_all();
	shmem_collect64(dl, sl, me == c ? 3 : 0, 0, 0, n, psync);
	for (i = 0; i < n + 8; i++)
		CHECK(dl[i] == (i < 3 ? c * 100 + i : -7), "one-contributor collect64 %d: %ld", i, dl[i]);
	shmem_barrier_all();
}

/*
 * Empty collectives touch no memory, so programs pass NULL: they must
 * neither fail nor skip their synchronisation, and pSync stays at rest.
 */
static void empty(void)
{
	static long ps[SHMEM_SYNC_SIZE];
	static long pw[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
	int n = shmem_n_pes(), i;

	shmem_barrier_all();
	CHECK(shmem_int_broadcast(SHMEM_TEAM_WORLD, NULL, NULL, 0, 0) == 0, "bcast");
	CHECK(shmem_long_collect(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0, "collect");
	CHECK(shmem_long_fcollect(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0, "fcollect");
	CHECK(shmem_int_alltoall(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0, "alltoall");
	CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0, "reduce");
	shmem_broadcast64(NULL, NULL, 0, 0, 0, 0, n, ps);
	shmem_collect32(NULL, NULL, 0, 0, 0, n, ps);
	shmem_fcollect64(NULL, NULL, 0, 0, 0, n, ps);
	shmem_alltoalls32(NULL, NULL, 1, 1, 0, 0, 0, n, ps);
	shmem_long_sum_to_all(NULL, NULL, 0, 0, 0, n, pw, ps);
	shmem_putmem(NULL, NULL, 0, n - 1);
	shmem_getmem(NULL, NULL, 0, n - 1);
	shmem_barrier_all();
	for (i = 0; i < SHMEM_SYNC_SIZE; i++)
		CHECK(ps[i] == SHMEM_SYNC_VALUE, "pSync[%d] is %ld", i, ps[i]);
}

int main(void)
{
	int me, n, r;
	void *dst, *src;

	shmem_init();
	me = shmem_my_pe();
	n = shmem_n_pes();
	dst = shmem_malloc(1 << 20);
	src = shmem_malloc(1 << 20);
	CHECK(dst && src, "malloc");

	/* Barriers: nobody passes before everyone arrived. */
	for (r = 1; r <= 100; r++) {
		shmem_long_atomic_inc(&barrier_count, 0);
		if (r % 2)
			shmem_barrier_all();
		else
			shmem_sync_all();
		CHECK(shmem_long_atomic_fetch(&barrier_count, 0) >= (long)r * n,
		      "barrier %d", r);
		shmem_team_sync(SHMEM_TEAM_WORLD);
	}
	data_colls(SHMEM_TEAM_WORLD, dst, src);
	data_colls(SHMEM_TEAM_SHARED, dst, src);
	reductions(SHMEM_TEAM_WORLD, dst, src);
	teams(dst, src);
	active_set(dst, src);
	one_contributor(dst, src);
	empty();
	CHECK(shmem_team_sync(SHMEM_TEAM_INVALID) != 0, "invalid team");
	shmem_free(src);
	shmem_free(dst);
	if (me == 0)
		printf("coll: %d PEs ok\n", n);
	shmem_finalize();
	return 0;
}
