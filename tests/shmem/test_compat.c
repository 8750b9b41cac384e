// SPDX-License-Identifier: MIT
/*
 * The deprecated interfaces 1.5 still lists, as programs written for
 * OpenSHMEM 1.0-1.3 use them: start_pes, _my_pe/_num_pes, shmalloc and
 * friends, the _SHMEM_ constants, the old AMO and wait names (typed, and
 * the C11 generic ones), the cache routines. Every value is checked. Like
 * those programs it never calls shmem_finalize.
 */
/* The 1.0 header directory, kept by 1.5: alone, it declares the library. */
#include <mpp/shmem.h>
#include <mpp/shmemx.h>
#if !defined(SHMEM_MAJOR_VERSION) || !defined(HAVE_SHMEMX_WTIME)
#error "<mpp/shmem.h> and <mpp/shmemx.h> must bring in shmem.h and shmemx.h"
#endif
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static long psync[_SHMEM_BARRIER_SYNC_SIZE];
static long flag;
static int ival;
static long lval;
static long long llval;
static float fval;
static double dval;
static short sflag;
static volatile int vflag;	/* as 1.0-1.3 programs declare their flags */

int main(void)
{
	int me, n, i, next;
	long *heap, old;
	char *big;

	for (i = 0; i < _SHMEM_BARRIER_SYNC_SIZE; i++)
		psync[i] = _SHMEM_SYNC_VALUE;
	start_pes(0);
	me = _my_pe();
	n = _num_pes();
	next = (me + 1) % n;
	CHECK(me == shmem_my_pe() && n == shmem_n_pes(), "_my_pe/_num_pes");

	heap = shmalloc(4 * sizeof(long));
	CHECK(heap, "shmalloc");
	big = shmemalign(4096, 3000);
	CHECK(big && !((uintptr_t)big & 4095), "shmemalign");
	heap = shrealloc(heap, 64 * sizeof(long));
	CHECK(heap, "shrealloc");
	memset(heap, 0, 64 * sizeof(long));
	shmem_barrier(0, 0, n, psync);

	/* Counters on PE 0 from every PE. */
	shmem_int_fadd(&ival, me + 1, 0);
	shmem_long_finc(&lval, 0);
	shmem_longlong_add(&llval, 3, 0);
	shmem_longlong_inc(&llval, 0);
	shmem_int_inc(&ival, 0);
	shmem_barrier_all();
	if (me == 0) {
		CHECK(ival == n * (n + 1) / 2 + n, "int fadd/inc %d", ival);
		CHECK(lval == n, "long finc %ld", lval);
		CHECK(llval == 4LL * n, "longlong add/inc %lld", llval);
	}
	shmem_barrier_all();

	/* fetch, set, swap, cswap on the next PE's copies. */
	shmem_double_set(&dval, 0.25 * me, next);
	shmem_float_set(&fval, 1.5f * me, next);
	shmem_long_set(&heap[1], 1000 + me, next);
	shmem_barrier_all();
	CHECK(dval == 0.25 * ((me + n - 1) % n), "double set %g", dval);
	CHECK(shmem_float_fetch(&fval, me) == 1.5f * ((me + n - 1) % n),
	      "float fetch");
	CHECK(shmem_long_fetch(&heap[1], next) == 1000 + me, "long fetch");
	shmem_barrier_all();
	old = shmem_long_swap(&heap[2], me + 7, next);
	CHECK(old == 0, "long swap old %ld", old);
	shmem_barrier_all();
	CHECK((shmem_swap)(&heap[2], 5, me) == (me + n - 1) % n + 7, "swap");
	CHECK(shmem_long_cswap(&heap[2], 5, 9, me) == 5 && heap[2] == 9, "cswap");
	CHECK(shmem_int_cswap(&ival, -1, 0, me) == ival, "failing cswap");
	CHECK(shmem_double_swap(&dval, 2.0, me) == 0.25 * ((me + n - 1) % n),
	      "double swap");
	shmem_barrier_all();

	/* Old waits: the previous PE wakes us through each. */
	shmem_long_p(&flag, 1, next);
	shmem_long_wait(&flag, 0);
	shmem_short_p(&sflag, 2, next);
	shmem_short_wait(&sflag, 0);
	CHECK(sflag == 2, "short wait");
	shmem_barrier_all();
	shmem_long_p(&flag, 5, next);
	(shmem_wait)(&flag, 1);
	(shmem_wait_until)(&flag, _SHMEM_CMP_EQ, 5);
	CHECK(flag == 5, "untyped wait_until");
	shmem_barrier_all();

	/* The deprecated C11 generic names, on each type they pick by. */
	ival = 0;
	lval = 0;
	llval = 0;
	shmem_barrier_all();
	shmem_add(&ival, me + 1, 0);
	shmem_inc(&lval, 0);
	old = shmem_finc(&lval, 0);
	CHECK(old >= 1 && old < 2 * n, "generic finc old %ld", old);
	old = shmem_fadd(&llval, 2LL + me, 0);
	CHECK(old >= 0 && old < 2LL * n + n * (n - 1) / 2,
	      "generic fadd old %ld", old);
	shmem_barrier_all();
	if (me == 0) {
		CHECK(ival == n * (n + 1) / 2, "generic add %d", ival);
		CHECK(lval == 2L * n, "generic inc/finc %ld", lval);
		CHECK(llval == 2LL * n + n * (n - 1) / 2, "generic fadd %lld",
		      llval);
	}
	shmem_barrier_all();
	shmem_set(&fval, 0.5f + me, next);
	shmem_set(&llval, 100LL + me, next);
	shmem_barrier_all();
	CHECK(shmem_fetch(&fval, me) == 0.5f + (me + n - 1) % n,
	      "generic set/fetch float %g", fval);
	CHECK(shmem_fetch(&llval, next) == 100LL + me,
	      "generic set/fetch long long %lld", llval);
	shmem_barrier_all();
	CHECK(shmem_swap(&dval, 3.5, me) == 2.0 && dval == 3.5,
	      "generic double swap %g", dval);
	CHECK(shmem_cswap(&llval, 100LL + (me + n - 1) % n, -7LL, me) ==
	      100LL + (me + n - 1) % n && llval == -7, "generic cswap %lld",
	      llval);
	CHECK(shmem_cswap(&ival, -1, 5, me) == ival && ival != 5,
	      "generic failing cswap %d", ival);
	shmem_barrier_all();
	shmem_short_p(&sflag, 3, next);
	shmem_wait(&sflag, (short)2);
	CHECK(sflag == 3, "generic short wait %d", sflag);
	shmem_int_p((int *)&vflag, 4, next);
	shmem_wait(&vflag, 0);
	CHECK(vflag == 4, "generic wait on a volatile int %d", vflag);

	shmem_clear_cache_inv();
	shmem_set_cache_inv();
	shmem_clear_cache_line_inv(&flag);
	shmem_set_cache_line_inv(&flag);
	shmem_udcflush();
	shmem_udcflush_line(&flag);
	shmem_barrier_all();
	shfree(big);
	shfree(heap);

	/*
	 * Such programs end by returning from main, which completes what is
	 * pending with an implicit synchronization: PE 0, returning first,
	 * still serves the others' late gets.
	 */
	lval = 100 + me;
	shmem_barrier_all();
	if (me == 0) {
		printf("compat: %d PEs ok\n", n);
		return 0;
	}
	usleep(100000);
	CHECK(shmem_long_g(&lval, 0) == 100, "g from PE 0 after it returned from main");
	return 0;
}
