// SPDX-License-Identifier: MIT
/*
 * The symmetric heap: every allocation routine gives the same object on
 * every PE (a PE writes its right neighbour's copy, the neighbour checks
 * its own), calloc zeroes reused memory, align aligns, realloc keeps the
 * contents when it grows in place and when it moves, exhaustion gives NULL.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"

static void check_symmetric(unsigned char *p, size_t len, int round)
{
	int me = shmem_my_pe(), n = shmem_n_pes(), left = (me + n - 1) % n;
	unsigned char *buf = malloc(len);
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = pat(me, i, round);
	shmem_putmem(p, buf, len, (me + 1) % n);
	shmem_barrier_all();
	for (i = 0; i < len; i++)
		CHECK(p[i] == pat(left, i, round), "round %d byte %zu: %u", round,
		      i, p[i]);
	shmem_barrier_all();
	free(buf);
}

int main(void)
{
	unsigned char *a, *b, *c, *d, *e;
	size_t i;
	int r;

	shmem_init();

	a = shmem_malloc(1000);
	b = shmem_calloc(100, 33);
	c = shmem_align(4096, 5000);
	d = shmem_malloc_with_hints(777, SHMEM_MALLOC_ATOMICS_REMOTE);
	CHECK(a && b && c && d, "allocations");
	CHECK(((uintptr_t)c & 4095) == 0, "align %p", (void *)c);
	CHECK(((uintptr_t)a & 15) == 0 && ((uintptr_t)d & 15) == 0, "malloc alignment");
	for (i = 0; i < 3300; i++)
		CHECK(b[i] == 0, "calloc byte %zu", i);
	check_symmetric(a, 1000, 1);
	check_symmetric(b, 3300, 2);
	check_symmetric(c, 5000, 3);
	check_symmetric(d, 777, 4);

	/* Freed memory is reused, and calloc zeroes it. */
	shmem_free(b);
	b = shmem_calloc(3300, 1);
	CHECK(b, "calloc again");
	for (i = 0; i < 3300; i++)
		CHECK(b[i] == 0, "reused calloc byte %zu = %u", i, b[i]);

	/* realloc: grow in place (b's neighbour is free after this), move, shrink. */
	for (i = 0; i < 3300; i++)
		b[i] = pat(shmem_my_pe(), i, 9);
	shmem_free(c);
	e = shmem_realloc(b, 6000);
	CHECK(e, "realloc grow");
	for (i = 0; i < 3300; i++)
		CHECK(e[i] == pat(shmem_my_pe(), i, 9), "realloc kept byte %zu", i);
	shmem_barrier_all();	/* checked before a neighbour writes it */
	check_symmetric(e, 6000, 5);
	for (i = 0; i < 6000; i++)
		e[i] = pat(shmem_my_pe(), i, 10);
	b = shmem_realloc(e, 1 << 20);
	CHECK(b, "realloc move");
	for (i = 0; i < 6000; i++)
		CHECK(b[i] == pat(shmem_my_pe(), i, 10), "moved byte %zu", i);
	shmem_barrier_all();
	check_symmetric(b, 1 << 20, 6);
	b = shmem_realloc(b, 100);
	CHECK(b, "realloc shrink");
	check_symmetric(b, 100, 7);
	CHECK(shmem_realloc(b, 0) == NULL, "realloc to 0 frees");

	CHECK(shmem_malloc(0) == NULL, "malloc(0)");
	CHECK(shmem_malloc((size_t)1 << 40) == NULL, "exhaustion gives NULL");

	/* Many rounds of mixed sizes stay symmetric. */
	for (r = 0; r < 50; r++) {
		unsigned char *x = shmem_malloc((size_t)(r * 37 % 500) + 1);
		unsigned char *y = shmem_align(256, (size_t)r * 11 + 1);

		CHECK(x && y && ((uintptr_t)y & 255) == 0, "round %d", r);
		if (r % 10 == 0)
			check_symmetric(y, (size_t)r * 11 + 1, 20 + r);
		shmem_free(r % 2 ? x : y);
		shmem_free(r % 2 ? y : x);
	}
	shmem_free(a);
	shmem_free(d);
	shmem_free(NULL);

	/*
	 * With the heap empty, one object can span all of it, whichever routine
	 * makes it: realloc from a small block and align too (the Mellanox
	 * oshmem_test basic suite relies on this).
	 */
	{
		size_t lo = 1, hi = (size_t)1 << 40, mid;

		while (hi - lo > 1) {
			mid = lo + (hi - lo) / 2;
			e = shmem_malloc(mid);
			if (e)
				lo = mid;
			else
				hi = mid;
			shmem_free(e);
		}
		e = shmem_malloc(16);
		CHECK(e, "small block");
		b = shmem_realloc(e, lo);
		CHECK(b, "realloc 16 -> %zu, the largest malloc", lo);
		shmem_free(b);
		b = shmem_align(2, lo);
		CHECK(b, "align(2, %zu), the largest malloc", lo);
		shmem_free(b);
	}
	if (shmem_my_pe() == 0)
		printf("heap: %d PEs ok\n", shmem_n_pes());
	shmem_finalize();
	return 0;
}
