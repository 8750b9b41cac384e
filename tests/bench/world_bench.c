// SPDX-License-Identifier: MIT
/*
 * hmc_world's side of the world benchmark (tests/bench/world_bench.sh),
 * under hmcrun; tests/bench/mpi_world.c is Open MPI's, under mpirun.
 *   world_bench init             init, one barrier, finalize
 *   world_bench allgather N LEN  N timed allgathers of LEN bytes after a
 *                                warm-up; rank 0 prints the mean in us
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hmc/world.h>

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	struct hmc_world *w;
	int iters, i, rc;
	size_t len;
	char *send, *recv;
	double t0;

	rc = hmc_world_init(NULL, &w);
	if (rc) {
		fprintf(stderr, "world_bench: init: %s\n", hmc_strerror(rc));
		return 1;
	}
	rc = hmc_world_barrier(w, 30000);
	if (!rc && argc > 3 && !strcmp(argv[1], "allgather")) {
		iters = atoi(argv[2]);
		len = (size_t)atol(argv[3]);
		send = malloc(len);
		recv = malloc(len * hmc_world_size(w));
		memset(send, (int)hmc_world_rank(w) + 1, len);
		for (i = 0; i < iters / 10 && !rc; i++)
			rc = hmc_world_allgather(w, send, len, recv, 30000);
		t0 = now_us();
		for (i = 0; i < iters && !rc; i++)
			rc = hmc_world_allgather(w, send, len, recv, 30000);
		if (!rc && !hmc_world_rank(w))
			printf("%.2f\n", (now_us() - t0) / iters);
		free(send);
		free(recv);
	}
	if (rc)
		fprintf(stderr, "world_bench: %s\n", hmc_world_last_error(w));
	rc |= hmc_world_finalize(w);
	return rc ? 1 : 0;
}
