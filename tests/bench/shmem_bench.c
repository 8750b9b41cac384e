// SPDX-License-Identifier: MIT
/*
 * OpenSHMEM benchmark in the 1.4 subset (no teams, no signals, no
 * contexts), so that the same source builds with libhmc_shmem's oshcc and
 * with Open MPI's (Debian's liboshmem implements 1.4).
 *
 *   shmem_bench p2p    (2 PEs)  put_lat_8B, put_bw_1MiB, fadd_lat
 *   shmem_bench coll   (N PEs)  barrier, sum_reduce_8B, sum_reduce_1MiB,
 *                               bcast_1MiB
 *
 * Each result is printed as `RESULT <name> <value> <unit>` and flushed
 * before shmem_finalize: Open MPI's OSHMEM on Debian 12 dies inside
 * shmem_finalize. Every time is measured over BATCHES batches and the
 * median batch is reported, so one descheduled stretch on a shared
 * machine does not decide it. Bandwidth is the best of BW_BATCHES short
 * batches: a batch during which another process took the sender's CPU
 * measures that process, not the copy. Collective times are the slowest PE's (a PE that returns
 * early has not finished the collective for the job). Results are checked
 * (the value every PE must see), so a broken implementation cannot post
 * a good time.
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCHES		5
#define MAX_PES		64
#define BW_BATCHES	15
#define MIB		(1024 * 1024)
#define RED_N		(MIB / sizeof(long))

static long psync[2][SHMEM_REDUCE_SYNC_SIZE];
static long bsync[2][SHMEM_BCAST_SYNC_SIZE];
static long pwrk[RED_N / 2 + 1 + SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static double times[BATCHES];
static long ping;
static long fadd_target;

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void fail(const char *what)
{
	fprintf(stderr, "shmem_bench: PE %d: %s\n", shmem_my_pe(), what);
	shmem_global_exit(1);
}

static void result(const char *name, double value, const char *unit)
{
	if (shmem_my_pe() == 0) {
		printf("RESULT %s %.3f %s\n", name, value, unit);
		fflush(stdout);
	}
}

/* The slowest PE's time of each batch, into PE 0's @t. */
static void slowest(double *t)
{
	static double all[MAX_PES][BATCHES];
	int i, pe, me = shmem_my_pe();

	if (shmem_n_pes() > MAX_PES)
		fail("too many PEs");
	shmem_putmem(all[me], t, sizeof(all[me]), 0);
	shmem_barrier_all();
	for (pe = 0; me == 0 && pe < shmem_n_pes(); pe++)
		for (i = 0; i < BATCHES; i++)
			if (all[pe][i] > t[i])
				t[i] = all[pe][i];
}

/* Ping-pong of 8-byte puts: putmem, quiet, and the peer's wait_until. */
static void put_lat(int iters)
{
	int me = shmem_my_pe(), peer = 1 - me, b, i;
	long v;

	for (b = -1; b < BATCHES; b++) {
		int n = b < 0 ? iters / 10 : iters;
		double t0;

		ping = 0;
		shmem_barrier_all();
		t0 = now_us();
		for (i = 1; i <= n; i++) {
			if (me == 0) {
				v = 2 * i - 1;
				shmem_putmem(&ping, &v, sizeof(v), peer);
				shmem_quiet();
				shmem_long_wait_until(&ping, SHMEM_CMP_EQ, 2 * i);
			} else {
				shmem_long_wait_until(&ping, SHMEM_CMP_EQ, 2 * i - 1);
				v = 2 * i;
				shmem_putmem(&ping, &v, sizeof(v), peer);
				shmem_quiet();
			}
		}
		if (b >= 0)
			times[b] = (now_us() - t0) / (2.0 * n);
	}
	result("put_lat_8B", median(times, BATCHES), "us");
}

/*
 * PE 0 streams 1 MiB puts into PE 1; quiet ends each batch. Both buffers
 * come from the symmetric heap, as in OSU's osu_oshm_put_bw: then each
 * implementation copies between buffers its own allocator aligned alike
 * (a source 16 bytes off the destination's alignment costs a copy 2.5%
 * here, whoever makes it).
 */
static void put_bw(int iters)
{
	unsigned char *src = shmem_malloc(MIB), *dst = shmem_malloc(MIB);
	double best = 0;
	int b, i;

	if (!src || !dst)
		fail("out of memory");
	for (i = 0; i < MIB; i++)
		src[i] = (unsigned char)(i * 7 + 3);
	memset(dst, 0, MIB);
	for (b = -1; b < BW_BATCHES; b++) {
		int n = b < 0 ? iters / 10 + 1 : iters;
		double t0, bw;

		shmem_barrier_all();
		t0 = now_us();
		if (shmem_my_pe() == 0) {
			for (i = 0; i < n; i++)
				shmem_putmem(dst, src, MIB, 1);
			shmem_quiet();
		}
		bw = (double)n * MIB / (now_us() - t0);
		if (b >= 0 && bw > best)
			best = bw;
	}
	shmem_barrier_all();
	if (shmem_my_pe() == 1 && memcmp(dst, src, MIB))
		fail("put_bw: data differs");
	if (shmem_my_pe() == 0)
		result("put_bw_1MiB", best, "MB/s");
	shmem_free(dst);
	shmem_free(src);
}

/* Blocking fetch-and-add on PE 1's long from PE 0. */
static void fadd_lat(int iters)
{
	long expect = 0, got;
	int b, i;

	fadd_target = 0;
	for (b = -1; b < BATCHES; b++) {
		int n = b < 0 ? iters / 10 : iters;
		double t0;

		shmem_barrier_all();
		t0 = now_us();
		if (shmem_my_pe() == 0) {
			for (i = 0; i < n; i++) {
				got = shmem_long_atomic_fetch_add(&fadd_target, 1, 1);
				if (got != expect++)
					fail("fadd: wrong old value");
			}
		}
		if (b >= 0)
			times[b] = (now_us() - t0) / n;
	}
	result("fadd_lat", median(times, BATCHES), "us");
}

static void barrier(int iters)
{
	char name[64];
	int b, i;

	for (b = -1; b < BATCHES; b++) {
		int n = b < 0 ? iters / 10 : iters;
		double t0;

		shmem_barrier_all();
		t0 = now_us();
		for (i = 0; i < n; i++)
			shmem_barrier_all();
		if (b >= 0)
			times[b] = (now_us() - t0) / n;
	}
	slowest(times);
	snprintf(name, sizeof(name), "barrier_%dpe", shmem_n_pes());
	result(name, median(times, BATCHES), "us");
}

/* shmem_long_sum_to_all of @n longs, alternating pSync arrays. */
static void sum_reduce(const char *size, size_t n, int iters)
{
	long *src = shmem_malloc(n * sizeof(long));
	long *dst = shmem_malloc(n * sizeof(long));
	int me = shmem_my_pe(), np = shmem_n_pes(), b, i, k = 0;
	char name[64];
	size_t j;

	if (!src || !dst)
		fail("out of memory");
	for (j = 0; j < n; j++)
		src[j] = (long)(j * 31 + (size_t)me * 1000003);
	for (b = -1; b < BATCHES; b++) {
		int it = b < 0 ? iters / 10 + 1 : iters;
		double t0;

		shmem_barrier_all();
		t0 = now_us();
		for (i = 0; i < it; i++, k ^= 1)
			shmem_long_sum_to_all(dst, src, (int)n, 0, 0, np, pwrk,
					      psync[k]);
		if (b >= 0)
			times[b] = (now_us() - t0) / it;
	}
	for (j = 0; j < n; j++)
		if (dst[j] != (long)(j * 31 * np) +
			      1000003L * np * (np - 1) / 2)
			fail("sum_reduce: wrong sum");
	slowest(times);
	snprintf(name, sizeof(name), "sum_reduce_%s_%dpe", size, np);
	result(name, median(times, BATCHES), "us");
	shmem_barrier_all();
	shmem_free(dst);
	shmem_free(src);
}

/* shmem_broadcast64 of 1 MiB from PE 0, alternating pSync arrays. */
static void bcast(int iters)
{
	long *src = shmem_malloc(MIB), *dst = shmem_malloc(MIB);
	int me = shmem_my_pe(), np = shmem_n_pes(), b, i, k = 0;
	char name[64];
	size_t j;

	if (!src || !dst)
		fail("out of memory");
	for (j = 0; j < RED_N; j++)
		src[j] = me ? -1 : (long)(j * 2654435761u);
	for (b = -1; b < BATCHES; b++) {
		int it = b < 0 ? iters / 10 + 1 : iters;
		double t0;

		shmem_barrier_all();
		t0 = now_us();
		for (i = 0; i < it; i++, k ^= 1)
			shmem_broadcast64(dst, src, RED_N, 0, 0, 0, np,
					  bsync[k]);
		if (b >= 0)
			times[b] = (now_us() - t0) / it;
	}
	for (j = 0; me && j < RED_N; j++)
		if (dst[j] != (long)(j * 2654435761u))
			fail("bcast: wrong data");
	slowest(times);
	snprintf(name, sizeof(name), "bcast_1MiB_%dpe", np);
	result(name, median(times, BATCHES), "us");
	shmem_barrier_all();
	shmem_free(dst);
	shmem_free(src);
}

int main(int argc, char **argv)
{
	int i;

	for (i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
		psync[0][i] = psync[1][i] = SHMEM_SYNC_VALUE;
	for (i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++)
		bsync[0][i] = bsync[1][i] = SHMEM_SYNC_VALUE;
	shmem_init();
	if (argc != 2 || (strcmp(argv[1], "p2p") && strcmp(argv[1], "coll")))
		fail("usage: shmem_bench p2p|coll");
	if (!strcmp(argv[1], "p2p")) {
		if (shmem_n_pes() != 2)
			fail("p2p needs 2 PEs");
		put_lat(3000);
		put_bw(30);
		fadd_lat(2000);
	} else {
		barrier(1000);
		sum_reduce("8B", 1, 1000);
		sum_reduce("1MiB", RED_N, 20);
		bcast(20);
	}
	shmem_barrier_all();
	shmem_finalize();
	return 0;
}
