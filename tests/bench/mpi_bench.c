// SPDX-License-Identifier: MIT
/*
 * mpi_bench: osu_bw and osu_latency as Open MPI's MPI_Isend/MPI_Irecv and
 * MPI_Send/MPI_Recv run them between two ranks, the reference for
 * msg_bench's msg_bw and msg_lat.
 *
 *   mpirun -np 2 mpi_bench -t bw|lat -s BYTES [-n ITERS] [-w WARMUP] [-W WINDOW]
 *
 * Rank 0 prints "<test> <size> <MB/s or one-way us>" (MB/s = 10^6 B/s).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *test = "bw";
	long iters = 100, warmup = 10, i;
	size_t size = 1 << 20;
	int window = 64, me, opt, w;
	MPI_Request *reqs;
	char *buf, ack = 0;
	double t0 = 0, v;

	MPI_Init(&argc, &argv);
	while ((opt = getopt(argc, argv, "t:s:n:w:W:")) != -1) {
		switch (opt) {
		case 't': test = optarg; break;
		case 's': size = strtoull(optarg, NULL, 0); break;
		case 'n': iters = atol(optarg); break;
		case 'w': warmup = atol(optarg); break;
		case 'W': window = atoi(optarg); break;
		default: MPI_Abort(MPI_COMM_WORLD, 2);
		}
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	buf = malloc(size ? size : 1);
	memset(buf, me + 1, size);
	reqs = calloc((size_t)window, sizeof(*reqs));
	MPI_Barrier(MPI_COMM_WORLD);
	if (!strcmp(test, "bw")) {
		for (i = 0; i < iters + warmup; i++) {
			if (i == warmup)
				t0 = MPI_Wtime();
			for (w = 0; w < window; w++) {
				if (me == 0)
					MPI_Isend(buf, (int)size, MPI_CHAR, 1, 1,
						  MPI_COMM_WORLD, &reqs[w]);
				else
					MPI_Irecv(buf, (int)size, MPI_CHAR, 0, 1,
						  MPI_COMM_WORLD, &reqs[w]);
			}
			MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
			if (me == 0)
				MPI_Recv(&ack, 1, MPI_CHAR, 1, 2, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
			else
				MPI_Send(&ack, 1, MPI_CHAR, 0, 2, MPI_COMM_WORLD);
		}
		v = (double)size * window * (double)iters /
		    (MPI_Wtime() - t0) / 1e6;
	} else {
		for (i = 0; i < iters + warmup; i++) {
			if (i == warmup)
				t0 = MPI_Wtime();
			if (me == 0) {
				MPI_Send(buf, (int)size, MPI_CHAR, 1, 3, MPI_COMM_WORLD);
				MPI_Recv(buf, (int)size, MPI_CHAR, 1, 3, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
			} else {
				MPI_Recv(buf, (int)size, MPI_CHAR, 0, 3, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				MPI_Send(buf, (int)size, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
			}
		}
		v = (MPI_Wtime() - t0) * 1e6 / 2.0 / (double)iters;
	}
	if (me == 0)
		printf("%s %zu %.3f\n", test, size, v);
	free(reqs);
	free(buf);
	MPI_Finalize();
	return 0;
}
