// SPDX-License-Identifier: MIT
/* Library setup and query routines, shmem_ptr and accessibility. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static long global_var = 42;
static int bss_array[1000];

int main(void)
{
	int major, minor, provided, me, n, pe, i, st = 0;
	pid_t child;
	char name[SHMEM_MAX_NAME_LEN];
	long *heap, local = 0;

	CHECK(shmem_my_pe() == -1, "my_pe before init is %d", shmem_my_pe());
	/*
	 * Every level is supported, and the one asked for is the one reported
	 * (SOS query_thread checks FUNNELED; test_threads checks MULTIPLE).
	 */
	shmem_init_thread(SHMEM_THREAD_FUNNELED, &provided);
	CHECK(provided == SHMEM_THREAD_FUNNELED, "provided %d", provided);
	shmem_query_thread(&provided);
	CHECK(provided == SHMEM_THREAD_FUNNELED, "query_thread %d", provided);
	me = shmem_my_pe();
	n = shmem_n_pes();
	CHECK(n >= 1 && me >= 0 && me < n, "me %d n %d", me, n);
	CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me, "team_my_pe");
	CHECK(shmem_team_n_pes(SHMEM_TEAM_WORLD) == n, "team_n_pes");
	CHECK(shmem_team_n_pes(SHMEM_TEAM_SHARED) ==
	      (n - me / host_pes() * host_pes() < host_pes() ?
	       n - me / host_pes() * host_pes() : host_pes()),
	      "shared team is the host: %d PEs", shmem_team_n_pes(SHMEM_TEAM_SHARED));
	for (pe = 0; pe < shmem_team_n_pes(SHMEM_TEAM_SHARED); pe++)
		CHECK(shmem_team_translate_pe(SHMEM_TEAM_SHARED, pe,
					      SHMEM_TEAM_WORLD) ==
		      me / host_pes() * host_pes() + pe, "shared PE %d", pe);

	/*
	 * Returning from main finalizes; a child the PE forked is no PE, and
	 * its exit(0) must not (joining a barrier the PEs are not in).
	 */
	child = fork();
	CHECK(child >= 0, "fork: %s", strerror(errno));
	if (!child) {
		/* Not holding the launcher's pipes should it outlive us. */
		i = open("/dev/null", O_WRONLY);
		dup2(i, 1);
		dup2(i, 2);
		exit(0);
	}
	for (i = 0; i < 10000 && !waitpid(child, &st, WNOHANG); i++)
		usleep(1000);
	if (i == 10000)
		kill(child, SIGKILL);
	CHECK(i < 10000 && WIFEXITED(st) && !WEXITSTATUS(st),
	      "a forked child's exit(0) did not end it in 10 s");

	shmem_info_get_version(&major, &minor);
	CHECK(major == 1 && minor == 5, "version %d.%d", major, minor);
	CHECK(SHMEM_MAJOR_VERSION == 1 && SHMEM_MINOR_VERSION == 5, "macros");
	shmem_info_get_name(name);
	CHECK(!strcmp(name, SHMEM_VENDOR_STRING), "name %s", name);
	/* Profiling control: every level is accepted, nothing changes. */
	shmem_pcontrol(0);
	shmem_pcontrol(1);
	shmem_pcontrol(2, "detail");

	heap = shmem_malloc(sizeof(long));
	CHECK(heap, "malloc");
	CHECK(global_var == 42, "data segment kept its value: %ld", global_var);
	for (pe = 0; pe < n; pe++) {
		CHECK(shmem_pe_accessible(pe), "pe %d", pe);
		CHECK(shmem_addr_accessible(heap, pe), "heap on %d", pe);
		CHECK(shmem_addr_accessible(&global_var, pe), "global on %d", pe);
		CHECK(shmem_addr_accessible(&bss_array[999], pe), "bss on %d", pe);
		CHECK(!shmem_addr_accessible(&local, pe), "stack on %d", pe);
		/* A remote PE has no address: the proof its path is taken. */
		if (same_host(me, pe))
			CHECK(shmem_ptr(heap, pe) && shmem_ptr(&global_var, pe),
			      "ptr %d", pe);
		else
			CHECK(!shmem_ptr(heap, pe) && !shmem_ptr(&global_var, pe),
			      "ptr of remote %d", pe);
		CHECK(shmem_team_ptr(SHMEM_TEAM_WORLD, heap, pe) ==
		      shmem_ptr(heap, pe), "team_ptr %d", pe);
	}
	CHECK(!shmem_pe_accessible(n) && !shmem_pe_accessible(-1), "bad pe");
	CHECK(!shmem_ptr(&local, 0) && !shmem_ptr(heap, n), "ptr of non-symmetric");
	CHECK(shmem_ptr(heap, me) == heap, "own ptr");

	/*
	 * Stores through shmem_ptr land in the peer's heap and globals; a
	 * remote peer gets them by put.
	 */
	if (shmem_ptr(heap, (me + 1) % n)) {
		*(long *)shmem_ptr(heap, (me + 1) % n) = 1000 + me;
		((int *)shmem_ptr(bss_array, (me + 1) % n))[me] = 7 * me + 3;
	} else {
		shmem_long_p(heap, 1000 + me, (me + 1) % n);
		shmem_int_p(&bss_array[me], 7 * me + 3, (me + 1) % n);
	}
	shmem_barrier_all();
	CHECK(*heap == 1000 + (me + n - 1) % n, "heap via ptr: %ld", *heap);
	CHECK(bss_array[(me + n - 1) % n] == 7 * ((me + n - 1) % n) + 3,
	      "bss via ptr: %d", bss_array[(me + n - 1) % n]);
	for (i = 0; i < 1000; i++)
		if (i != (me + n - 1) % n)
			CHECK(bss_array[i] == 0, "bss[%d] = %d", i, bss_array[i]);
	shmem_free(heap);
	shmem_finalize();
	shmem_finalize();	/* a second call has no effect */
	if (me == 0)
		printf("setup: %d PEs ok\n", n);
	return 0;
}
