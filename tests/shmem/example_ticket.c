// SPDX-License-Identifier: MIT
/*
 * In the manner of the specification's atomic examples: PEs draw tickets
 * from a counter on PE 0 with fetch_inc and publish them with put_signal
 * into PE 0's table; PE 0 waits on the signal and checks that the tickets
 * are a permutation of 0..n-1.
 */
#include <stdio.h>

#include <shmem.h>

static int counter;
static int tickets[4096];
static uint64_t arrived;

int main(void)
{
	int me, npes, t, i, ok = 1;
	static char seen[4096];

	shmem_init();
	me = shmem_my_pe();
	npes = shmem_n_pes();
	t = shmem_int_atomic_fetch_inc(&counter, 0);
	shmem_int_put_signal(&tickets[me], &t, 1, &arrived, 1, SHMEM_SIGNAL_ADD, 0);
	if (me == 0) {
		shmem_signal_wait_until(&arrived, SHMEM_CMP_EQ, (uint64_t)npes);
		for (i = 0; i < npes; i++) {
			ok &= tickets[i] >= 0 && tickets[i] < npes && !seen[tickets[i]];
			seen[tickets[i]] = 1;
		}
		printf("tickets %s on %d PEs\n", ok ? "correct" : "WRONG", npes);
	}
	shmem_finalize();
	return ok ? 0 : 1;
}
