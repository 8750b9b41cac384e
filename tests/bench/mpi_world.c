// SPDX-License-Identifier: MIT
/* Open MPI's side of the world benchmark: the modes of world_bench.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

int main(int argc, char **argv)
{
	int rank, size, iters, i;
	size_t len;
	char *send, *recv;
	double t0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Barrier(MPI_COMM_WORLD);
	if (argc > 3 && !strcmp(argv[1], "allgather")) {
		iters = atoi(argv[2]);
		len = (size_t)atol(argv[3]);
		send = malloc(len);
		recv = malloc(len * (size_t)size);
		memset(send, rank + 1, len);
		for (i = 0; i < iters / 10; i++)
			MPI_Allgather(send, (int)len, MPI_BYTE, recv, (int)len,
				      MPI_BYTE, MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (i = 0; i < iters; i++)
			MPI_Allgather(send, (int)len, MPI_BYTE, recv, (int)len,
				      MPI_BYTE, MPI_COMM_WORLD);
		if (!rank)
			printf("%.2f\n", (MPI_Wtime() - t0) * 1e6 / iters);
		free(send);
		free(recv);
	}
	MPI_Finalize();
	return 0;
}
