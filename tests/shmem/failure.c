// SPDX-License-Identifier: MIT
/*
 * Failure paths, one per argument, checked by run.sh: a fatal error names
 * the PE and the call on one line and ends the job; a PE killed mid-run or
 * calling shmem_global_exit ends the job with its status, never a hang.
 * The other PEs wait in a barrier meanwhile, or with exit0busy run the
 * program's own loop, never calling the library.
 */
#include <signal.h>
#include <string.h>

#include <shmem.h>

static long target;
static volatile unsigned long busy;

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	long not_symmetric = 0;
	int me;

	shmem_init();
	me = shmem_my_pe();
	if (me == shmem_n_pes() - 1) {
		if (!strcmp(mode, "nonsym"))
			shmem_long_p(&not_symmetric, 1, 0);
		else if (!strcmp(mode, "badpe"))
			shmem_long_p(&target, 1, shmem_n_pes());
		else if (!strcmp(mode, "kill"))
			raise(SIGKILL);
		else if (!strcmp(mode, "exit"))
			shmem_global_exit(3);
		else if (!strcmp(mode, "exit0") || !strcmp(mode, "exit0busy"))
			shmem_global_exit(0);
	}
	if (!strcmp(mode, "exit0busy"))
		for (;;)
			busy++;
	shmem_barrier_all();
	shmem_finalize();
	return 0;
}
