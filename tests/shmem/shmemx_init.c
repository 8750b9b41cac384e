// SPDX-License-Identifier: MIT
/*
 * shmemx_init_attr(), checked by run.sh:
 *   shmemx_init world      under oshrun/hmcrun: the program makes its own
 *                          hmc_world and starts OpenSHMEM on it; the world
 *                          still works after shmem_finalize()
 *   shmemx_init uid N      run plainly: one process takes a unique id and
 *                          forks N-1 others, which get it by inheritance
 *                          (any channel would do), and all start from it
 * Each then checks a ring of puts into a global and a heap object (every
 * byte, different per PE), a fetch-add on PE 0 from every PE, and that
 * shmemx_wtime() runs forward.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hmc/world.h>
#include <shmem.h>
#include <shmemx.h>

#include "check.h"

/* Programs written for SOS test this before defining a fallback
 * shmemx_wtime(), which would clash with the one declared here. */
#ifndef HAVE_SHMEMX_WTIME
#error "shmemx.h declares shmemx_wtime() but not HAVE_SHMEMX_WTIME"
#endif

#define LEN	4099

static unsigned char global_buf[LEN];
static long counter;

static void exercise(void)
{
	int me = shmem_my_pe(), n = shmem_n_pes(), from = (me + n - 1) % n;
	unsigned char *heap = shmem_malloc(LEN), src[LEN];
	double t0 = shmemx_wtime();
	size_t i;

	CHECK(heap, "shmem_malloc");
	for (i = 0; i < LEN; i++)
		src[i] = pat(me, i, 1);
	shmem_barrier_all();
	shmem_putmem(global_buf, src, LEN, (me + 1) % n);
	shmem_putmem(heap, src, LEN, (me + 1) % n);
	shmem_long_atomic_add(&counter, me + 1, 0);
	shmem_barrier_all();
	for (i = 0; i < LEN; i++) {
		CHECK(global_buf[i] == pat(from, i, 1), "global byte %zu", i);
		CHECK(heap[i] == pat(from, i, 1), "heap byte %zu", i);
	}
	if (me == 0)
		CHECK(counter == (long)n * (n + 1) / 2, "counter %ld", counter);
	CHECK(t0 > 0 && shmemx_wtime() >= t0, "shmemx_wtime");
	shmem_free(heap);
}

static int with_world(void)
{
	shmemx_init_attr_t attr = SHMEMX_INIT_ATTR_INITIALIZER;
	struct hmc_world *w;
	int rc, n, me;

	rc = hmc_world_init(NULL, &w);
	if (rc) {
		fprintf(stderr, "hmc_world_init: %s\n", strerror(-rc));
		return 1;
	}
	attr.world = w;
	rc = shmemx_init_attr(SHMEMX_INIT_WITH_WORLD, &attr);
	if (rc)
		return 1;
	CHECK(shmem_my_pe() == (int)hmc_world_rank(w), "rank");
	CHECK(shmem_n_pes() == (int)hmc_world_size(w), "size");
	/* A second call changes nothing. */
	CHECK(shmemx_init_attr(SHMEMX_INIT_WITH_WORLD, &attr) == 0, "again");
	exercise();
	n = shmem_n_pes();
	me = shmem_my_pe();
	shmem_finalize();
	rc = hmc_world_barrier(w, 30000);
	if (rc || hmc_world_finalize(w)) {
		fprintf(stderr, "the world after shmem_finalize: %s\n",
			strerror(-rc));
		return 1;
	}
	if (me == 0)
		printf("shmemx world: %d PEs ok\n", n);
	return 0;
}

static int from_uid(int rank, int n, const shmemx_uniqueid_t *uid)
{
	shmemx_init_attr_t attr = SHMEMX_INIT_ATTR_INITIALIZER;

	if (shmemx_set_attr_uniqueid_args(rank, n, uid, &attr) ||
	    shmemx_init_attr(SHMEMX_INIT_WITH_UNIQUEID, &attr))
		return 1;
	CHECK(shmem_my_pe() == rank && shmem_n_pes() == n, "rank and size");
	exercise();
	shmem_finalize();
	return 0;
}

static int with_uid(int n)
{
	shmemx_init_attr_t attr = SHMEMX_INIT_ATTR_INITIALIZER;
	shmemx_uniqueid_t uid;
	int r, status, bad = 0;
	pid_t pid;

	/* Wrong arguments are refused with -EINVAL, not a dead job. */
	if (shmemx_init_attr(SHMEMX_INIT_WITH_UNIQUEID, &attr) != -EINVAL ||
	    shmemx_init_attr(SHMEMX_INIT_WITH_WORLD, NULL) != -EINVAL ||
	    shmemx_set_attr_uniqueid_args(n, n, &uid, &attr) != -EINVAL) {
		fprintf(stderr, "invalid arguments accepted\n");
		return 1;
	}
	if (shmemx_get_uniqueid(&uid))
		return 1;
	for (r = 1; r < n; r++) {
		pid = fork();
		if (pid < 0)
			return 1;
		if (!pid)
			_exit(from_uid(r, n, &uid));
	}
	if (from_uid(0, n, &uid))
		bad = 1;
	while ((pid = wait(&status)) > 0)
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			bad = 1;
	if (!bad)
		printf("shmemx uid: %d PEs ok\n", n);
	return bad;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "world"))
		return with_world();
	if (argc == 3 && !strcmp(argv[1], "uid") && atoi(argv[2]) > 0)
		return with_uid(atoi(argv[2]));
	fprintf(stderr, "usage: shmemx_init world | uid N\n");
	return 2;
}
