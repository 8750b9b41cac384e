// SPDX-License-Identifier: MIT
/*
 * SHMEM_THREAD_MULTIPLE: several threads of every PE at once, each with
 * its own context, adding to every PE's counter (exact totals), counting
 * through compare_swap loops on PE 0, putting their own slice to the right
 * neighbour (quiet per thread) and getting from every PE, every byte and
 * value checked.
 */
#include <pthread.h>
#include <string.h>

#include "check.h"

#define THREADS	4
#define ROUNDS	100
/* Above the remote path's 16 KiB of data carried in a request for one thread. */
#define SLICE(t)	((size_t)((t) == 0 ? 20000 : 1000 + (t) * 300))
#define SLICE_MAX	20000
#define STABLE	4096

static long counter;
static int cas_counter;
static unsigned char stable[STABLE];
static unsigned char *slices;

static void *worker(void *arg)
{
	int t = (int)(long)arg, me = shmem_my_pe(), n = shmem_n_pes();
	int right = (me + 1) % n, r, pe;
	unsigned char *src = malloc(SLICE_MAX), *got = malloc(STABLE);
	shmem_ctx_t ctx;
	size_t i;

	CHECK(src && got, "malloc");
	CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0, "ctx_create");
	for (r = 0; r < ROUNDS; r++) {
		for (pe = 0; pe < n; pe++)
			shmem_ctx_long_atomic_add(ctx, &counter, 1, pe);
		for (;;) {
			int old = shmem_int_atomic_fetch(&cas_counter, 0);

			if (shmem_int_atomic_compare_swap(&cas_counter, old,
							  old + 1, 0) == old)
				break;
		}
		for (i = 0; i < SLICE(t); i++)
			src[i] = pat(me, i, t * ROUNDS + r);
		shmem_ctx_putmem(ctx, slices + (size_t)t * SLICE_MAX, src,
				 SLICE(t), right);
		shmem_ctx_quiet(ctx);
		pe = (me + r + t) % n;
		shmem_getmem(got, stable, STABLE, pe);
		for (i = 0; i < STABLE; i++)
			CHECK(got[i] == pat(pe, i, 99), "thread %d get from %d byte %zu",
			      t, pe, i);
	}
	shmem_ctx_destroy(ctx);
	free(src);
	free(got);
	return NULL;
}

int main(void)
{
	int provided, me, n, t, left;
	pthread_t th[THREADS];
	size_t i;

	shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
	CHECK(provided == SHMEM_THREAD_MULTIPLE, "provided %d", provided);
	shmem_query_thread(&provided);
	CHECK(provided == SHMEM_THREAD_MULTIPLE, "query_thread %d", provided);
	me = shmem_my_pe();
	n = shmem_n_pes();
	left = (me + n - 1) % n;
	slices = shmem_calloc(THREADS, SLICE_MAX);
	CHECK(slices, "calloc");
	for (i = 0; i < STABLE; i++)
		stable[i] = pat(me, i, 99);
	shmem_barrier_all();
	for (t = 0; t < THREADS; t++)
		CHECK(!pthread_create(&th[t], NULL, worker, (void *)(long)t),
		      "pthread_create");
	for (t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	shmem_barrier_all();
	CHECK(counter == (long)n * THREADS * ROUNDS, "counter %ld, want %ld",
	      counter, (long)n * THREADS * ROUNDS);
	if (me == 0)
		CHECK(cas_counter == n * THREADS * ROUNDS, "cas counter %d",
		      cas_counter);
	for (t = 0; t < THREADS; t++)
		for (i = 0; i < SLICE_MAX; i++)
			CHECK(slices[(size_t)t * SLICE_MAX + i] ==
			      (i < SLICE(t) ? pat(left, i, t * ROUNDS + ROUNDS - 1) : 0),
			      "slice %d byte %zu", t, i);
	shmem_free(slices);
	if (me == 0)
		printf("threads: %d PEs ok\n", n);
	shmem_finalize();
	return 0;
}
