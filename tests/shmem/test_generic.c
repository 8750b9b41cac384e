// SPDX-License-Identifier: MIT
/* The C11 generic bindings select the typed routine, with and without a context. */
#include <string.h>

#include "check.h"

static long lsrc[16], ldst[16];
static double dsrc[16], ddst[16];
static unsigned int flags;
static int ivar;
static long sync_psync[SHMEM_BARRIER_SYNC_SIZE], sync_slot[2];

int main(void)
{
	int me, n, right, left, i;
	static long red_src[4], red_dst[4];
	static double coll_src[2], coll_dst[2 * 64];

	shmem_init();
	me = shmem_my_pe();
	n = shmem_n_pes();
	right = (me + 1) % n;
	left = (me + n - 1) % n;
	for (i = 0; i < 16; i++) {
		lsrc[i] = me * 100 + i;
		dsrc[i] = me + i / 4.0;
	}
	shmem_put(ldst, lsrc, 16, right);
	shmem_put(SHMEM_CTX_DEFAULT, ddst, dsrc, 16, right);
	shmem_barrier_all();
	for (i = 0; i < 16; i++) {
		CHECK(ldst[i] == left * 100 + i, "long put %d", i);
		CHECK(ddst[i] == left + i / 4.0, "double ctx put %d", i);
	}
	CHECK(shmem_g(&ldst[3], right) == me * 100 + 3, "g");
	CHECK(shmem_g(SHMEM_CTX_DEFAULT, &ddst[5], right) == me + 5 / 4.0, "ctx g");
	shmem_barrier_all();
	shmem_atomic_add(&ivar, me + 1, 0);
	shmem_atomic_or(SHMEM_CTX_DEFAULT, &flags, 1u << me, 0);
	shmem_barrier_all();
	if (me == 0) {
		CHECK(ivar == n * (n + 1) / 2, "generic add %d", ivar);
		CHECK(flags == (n >= 32 ? ~0u : (1u << n) - 1), "generic or %x", flags);
	}
	CHECK(shmem_atomic_fetch(&ivar, 0) == n * (n + 1) / 2, "generic fetch");
	shmem_barrier_all();
	shmem_p(&ivar, 77, right);
	shmem_wait_until(&ivar, SHMEM_CMP_EQ, 77);
	CHECK(shmem_test(&ivar, SHMEM_CMP_EQ, 77), "generic test");
	red_src[0] = me;
	shmem_max_reduce(SHMEM_TEAM_WORLD, red_dst, red_src, 1);
	CHECK(red_dst[0] == n - 1, "generic max_reduce");
	{
		static long long bsrc[3], bdst[3];
		long long want_or = 0, want_xor = 0;

		for (i = 0; i < n; i++) {
			want_or |= 1LL << (i + 40);
			want_xor ^= (long long)(i * 0x10001) << 20;
		}
		bsrc[0] = 1LL << (me + 40);
		bsrc[1] = (long long)(me * 0x10001) << 20;
		bsrc[2] = ~0LL ^ (1LL << (me + 3));
		shmem_or_reduce(SHMEM_TEAM_WORLD, bdst, bsrc, 1);
		CHECK(bdst[0] == want_or, "generic long long or_reduce");
		shmem_xor_reduce(SHMEM_TEAM_WORLD, bdst + 1, bsrc + 1, 1);
		CHECK(bdst[1] == want_xor, "generic long long xor_reduce");
		shmem_and_reduce(SHMEM_TEAM_WORLD, bdst + 2, bsrc + 2, 1);
		CHECK(bdst[2] == (n > 61 ? 0 : ~0LL ^ (((1LL << n) - 1) << 3)),
		      "generic long long and_reduce");
	}
	coll_src[0] = me;
	coll_src[1] = -me;
	shmem_fcollect(SHMEM_TEAM_WORLD, coll_dst, coll_src, 2);
	for (i = 0; i < n; i++)
		CHECK(coll_dst[2 * i] == i && coll_dst[2 * i + 1] == -i,
		      "generic fcollect %d", i);
	/*
	 * shmem_sync(team) is the 1.5 C11 team sync, and four arguments keep
	 * the deprecated active-set routine (SOS shmem_team_max used the first
	 * form). Each must make a put completed by quiet visible.
	 */
	for (i = 0; i < SHMEM_BARRIER_SYNC_SIZE; i++)
		sync_psync[i] = SHMEM_SYNC_VALUE;
	shmem_barrier_all();
	shmem_long_p(&sync_slot[0], 1000 + me, right);
	shmem_quiet();
	CHECK(shmem_sync(SHMEM_TEAM_WORLD) == 0, "generic team sync");
	CHECK(sync_slot[0] == 1000 + left, "after team sync %ld", sync_slot[0]);
	shmem_long_p(&sync_slot[1], 2000 + me, right);
	shmem_quiet();
	shmem_sync(0, 0, n, sync_psync);
	CHECK(sync_slot[1] == 2000 + left, "after active-set sync %ld", sync_slot[1]);
	if (me == 0)
		printf("generic: %d PEs ok\n", n);
	shmem_finalize();
	return 0;
}
