// SPDX-License-Identifier: MIT
/*
 * Open MPI's side of the OpenSHMEM collective comparison
 * (tests/bench/shmem.sh): MPI_Allreduce (MPI_LONG, MPI_SUM) and MPI_Bcast
 * of 1 MiB over MPI_COMM_WORLD, measured as shmem_bench.c measures
 * shmem_long_sum_to_all and shmem_broadcast64: BATCHES batches, the
 * slowest rank's mean time of each, the median batch; results checked.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define BATCHES		5
#define N		(1024 * 1024 / sizeof(long))
#define ITERS		20

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void report(const char *name, int size, double *t)
{
	double slow[BATCHES];
	int rank;

	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Reduce(t, slow, BATCHES, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	if (rank)
		return;
	qsort(slow, BATCHES, sizeof(double), cmp_double);
	printf("RESULT %s_%dpe %.3f us\n", name, size, slow[BATCHES / 2]);
	fflush(stdout);
}

static void fail(const char *what)
{
	fprintf(stderr, "mpi_coll: %s\n", what);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv)
{
	double t[BATCHES], t0;
	long *src, *dst;
	int rank, size, b, i;
	size_t j;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	src = malloc(N * sizeof(long));
	dst = malloc(N * sizeof(long));
	if (!src || !dst)
		fail("out of memory");
	for (j = 0; j < N; j++)
		src[j] = (long)(j * 31 + (size_t)rank * 1000003);
	for (b = -1; b < BATCHES; b++) {
		int it = b < 0 ? ITERS / 10 + 1 : ITERS;

		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (i = 0; i < it; i++)
			MPI_Allreduce(src, dst, N, MPI_LONG, MPI_SUM,
				      MPI_COMM_WORLD);
		if (b >= 0)
			t[b] = (MPI_Wtime() - t0) * 1e6 / it;
	}
	for (j = 0; j < N; j++)
		if (dst[j] != (long)(j * 31 * size) +
			      1000003L * size * (size - 1) / 2)
			fail("allreduce: wrong sum");
	report("mpi_allreduce_1MiB", size, t);

	for (j = 0; j < N; j++)
		src[j] = rank ? -1 : (long)(j * 2654435761u);
	for (b = -1; b < BATCHES; b++) {
		int it = b < 0 ? ITERS / 10 + 1 : ITERS;

		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (i = 0; i < it; i++)
			MPI_Bcast(src, N, MPI_LONG, 0, MPI_COMM_WORLD);
		if (b >= 0)
			t[b] = (MPI_Wtime() - t0) * 1e6 / it;
	}
	for (j = 0; j < N; j++)
		if (src[j] != (long)(j * 2654435761u))
			fail("bcast: wrong data");
	report("mpi_bcast_1MiB", size, t);
	free(src);
	free(dst);
	MPI_Finalize();
	return 0;
}
