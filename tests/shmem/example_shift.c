// SPDX-License-Identifier: MIT
/*
 * In the manner of the specification's first examples: each PE writes its
 * number into a static variable of the next PE, a circular shift, then
 * PE 0 gathers every PE's value with shmem_g and prints one line. Built
 * with oshcc and run by run.sh, which checks the line.
 */
#include <stdio.h>

#include <shmem.h>

static int received = -1;

int main(void)
{
	int me, npes, pe, ok = 1;

	shmem_init();
	me = shmem_my_pe();
	npes = shmem_n_pes();
	shmem_int_p(&received, me, (me + 1) % npes);
	shmem_barrier_all();
	if (me == 0) {
		for (pe = 0; pe < npes; pe++)
			ok &= shmem_int_g(&received, pe) == (pe + npes - 1) % npes;
		printf("shift %s on %d PEs\n", ok ? "correct" : "WRONG", npes);
	}
	shmem_finalize();
	return ok ? 0 : 1;
}
