/* SPDX-License-Identifier: MIT */
/*
 * The profiling interface of OpenSHMEM 1.5 ("OpenSHMEM Profiling
 * Interface"): this program is its own profiler. Its shmem_long_put and
 * shmem_barrier_all take the place of the library's and reach the library
 * through pshmem_; the other pshmem_ entry points are the library's
 * routines under their shifted names. run.sh also links it statically,
 * where a second definition of shmem_long_put must not clash.
 */
#include <pshmem.h>

#include "check.h"

#define NELEMS 64

static long puts_seen, barriers_seen;

void shmem_long_put(long *dest, const long *source, size_t nelems, int pe)
{
	puts_seen++;
	pshmem_long_put(dest, source, nelems, pe);
}

void shmem_barrier_all(void)
{
	barriers_seen++;
	pshmem_barrier_all();
}

int main(void)
{
	static long dst[NELEMS];
	static int counter;
	long src[NELEMS];
	long *heap, init_barriers;
	int me, n, left, right;
	size_t i;

	shmem_init();
	/* The library may call its own routines, through the program's ones
	 * (the standard's "multiple counting"): count from here. */
	init_barriers = barriers_seen;
	me = shmem_my_pe();
	n = shmem_n_pes();
	left = (me + n - 1) % n;
	right = (me + 1) % n;
	CHECK(pshmem_my_pe() == me && p_my_pe() == me, "pshmem_my_pe %d",
	      pshmem_my_pe());
	CHECK(pshmem_n_pes() == n && p_num_pes() == n, "pshmem_n_pes %d",
	      pshmem_n_pes());

	/* The program's routines run, and the data still moves. */
	for (i = 0; i < NELEMS; i++)
		src[i] = me * 100003L + (long)i * 7 + 3;
	shmem_long_put(dst, src, NELEMS, right);
	shmem_barrier_all();
	CHECK(puts_seen == 1 && barriers_seen == init_barriers + 1,
	      "puts %ld barriers %ld", puts_seen, barriers_seen - init_barriers);
	for (i = 0; i < NELEMS; i++)
		CHECK(dst[i] == left * 100003L + (long)i * 7 + 3,
		      "dst[%zu] = %ld", i, dst[i]);

	/* A pshmem_ call goes to the library, not to the program's shmem_. */
	pshmem_int_atomic_add(&counter, me + 1, 0);
	pshmem_barrier_all();
	CHECK(barriers_seen == init_barriers + 1,
	      "pshmem_barrier_all reached the profiler");
	if (me == 0)
		CHECK(counter == n * (n + 1) / 2, "counter %d", counter);
	CHECK(pshmem_int_atomic_fetch(&counter, 0) == n * (n + 1) / 2,
	      "fetch through pshmem");

	heap = pshmem_malloc(NELEMS * sizeof(*heap));
	CHECK(heap != NULL, "pshmem_malloc");
	CHECK(shmem_addr_accessible(heap, right), "pshmem_malloc'd not symmetric");
	pshmem_free(heap);
	pshmem_pcontrol(1);

	pshmem_barrier_all();
	if (me == 0)
		printf("pshmem: %d PEs ok\n", n);
	shmem_finalize();
	return 0;
}
