// SPDX-License-Identifier: MIT
/*
 * Library setup, exit and queries; the fatal-error path.
 *
 * Errors the standard leaves to the implementation (a non-symmetric
 * address, a PE out of range, start-up failures, calls before shmem_init)
 * print one line naming the PE and the call on stderr and exit with status
 * 1: the launcher ends the other PEs (remote ones are told to exit).
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hmc/world.h>

#include "internal.h"

#define SHM_DEFAULT_HEAP	(128UL << 20)

struct shm_state shm = { .me = -1 };

void shm_fatal(const char *call, const char *fmt, ...)
{
	static int once;
	char msg[512];
	va_list ap;

	shm_peer_exit_if_asked();
	/* One line: a second thread that fails too waits for the first's exit. */
	if (__atomic_exchange_n(&once, 1, __ATOMIC_ACQ_REL))
		for (;;)
			pause();
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fflush(stdout);
	if (shm.me >= 0)
		fprintf(stderr, "shmem: PE %d: %s: %s\n", shm.me, call, msg);
	else
		fprintf(stderr, "shmem: %s: %s\n", call, msg);
	/*
	 * No launcher may span the hosts: end the remote PEs ourselves, so
	 * that they do not report us as the failure in lines of their own.
	 */
	shm_peer_exit(1);
	_exit(1);
}

void shm_check_init(const char *call)
{
	if (!shm.initialized)
		shm_fatal(call, "called before shmem_init");
	if (shm.finalized)
		shm_fatal(call, "called after shmem_finalize");
}

/* SHMEM_SYMMETRIC_SIZE: bytes, with an optional K, M, G or T (powers of 1024). */
static size_t heap_size(void)
{
	const char *s = getenv("SHMEM_SYMMETRIC_SIZE");
	unsigned long long v;
	char *end;

	if (!s || !*s)
		return SHM_DEFAULT_HEAP;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		goto bad;
	switch (toupper((unsigned char)*end)) {
	case 'T': v <<= 10; /* fall through */
	case 'G': v <<= 10; /* fall through */
	case 'M': v <<= 10; /* fall through */
	case 'K': v <<= 10; end++; break;
	case '\0': break;
	default: goto bad;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || !v || v > (1ULL << 44))
		goto bad;
	return (size_t)v;
bad:
	shm_fatal("shmem_init", "SHMEM_SYMMETRIC_SIZE=%s is not a size (bytes, K, M, G or T)",
		  s);
}

static bool env_true(const char *name)
{
	const char *s = getenv(name);

	return s && *s && strcmp(s, "0") && strcasecmp(s, "no") &&
	       strcasecmp(s, "false");
}

static void print_info(size_t heap)
{
	if (shm.me != 0)
		return;
	if (env_true("SHMEM_VERSION") || env_true("SHMEM_INFO"))
		printf("%s: OpenSHMEM %d.%d\n", SHMEM_VENDOR_STRING,
		       SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION);
	if (env_true("SHMEM_INFO"))
		printf("  PEs %d, symmetric heap %zu bytes per PE (SHMEM_SYMMETRIC_SIZE); "
		       "PE 0 maps %d PEs' heaps and data segments, reaches the others by messages\n",
		       shm.npes, heap, shmem_team_n_pes(SHMEM_TEAM_SHARED));
}

/*
 * Returning from main ends the OpenSHMEM portion of the program as
 * shmem_finalize() does: the standard's execution model has the library
 * complete pending communication with an implicit collective
 * synchronization, and programs written for start_pes() have no finalize.
 * After a failing status the PE leaves at once: the others may never
 * come to the barrier, and the launcher ends the job. A child the PE
 * forked inherits the handler and the shared mappings, but is no PE.
 */
static pid_t pe_pid;

static void finalize_at_exit(int status, void *arg)
{
	if (!status && getpid() == pe_pid)
		shmem_finalize();
}

/* Start-up shared by shmem_init_thread() and shmemx_init_attr(). */
static int init(const shmemx_init_attr_t *attr, unsigned int flags,
		int thread_level, char *why, size_t why_len)
{
	static bool exit_hooked;
	size_t heap;
	int err;

	if (!exit_hooked) {
		if (on_exit(finalize_at_exit, NULL)) {
			snprintf(why, why_len, "cannot register the exit handler");
			return -ENOMEM;
		}
		exit_hooked = true;
	}
	pe_pid = getpid();
	err = shm_boot_init(attr, flags, &shm.me, &shm.npes, why, why_len);
	if (err)
		return err;
	heap = heap_size();
	why[0] = '\0';
	err = shm_seg_init(heap, why, why_len);
	if (err) {
		if (!why[0])
			snprintf(why, why_len, "symmetric segments: %s",
				 strerror(-err));
		shm_boot_fini();
		return err;
	}
	err = shm_peer_init(why, why_len);
	if (err) {
		shm_seg_fini();
		shm_boot_fini();
		return err;
	}
	shm_heap_init((char *)shm.heap.base + shm.heap_internal,
		      shm.heap.len - shm.heap_internal);
	shm_team_init();
	/*
	 * Every operation is a copy, a CPU atomic or a message on a
	 * communicator that any thread may use: safe from any thread, so
	 * every level is supported and the program is told the level it asked
	 * for, as MPI and the other OpenSHMEM libraries answer. Programs
	 * compare provided with requested (SOS query_thread, web, threading).
	 */
	shm.thread_level = thread_level;
	shm.initialized = 1;
	shm_backoff_init();
	print_info(heap);
	shmem_barrier_all();
	return 0;
}

int shmem_init_thread(int requested, int *provided)
{
	int err;

	if (requested < SHMEM_THREAD_SINGLE || requested > SHMEM_THREAD_MULTIPLE)
		shm_fatal("shmem_init_thread", "thread level %d is not one of SHMEM_THREAD_*",
			  requested);
	if (shm.finalized)
		shm_fatal("shmem_init", "the library cannot be initialised again after shmem_finalize");
	if (!shm.initialized) {
		char why[256];

		err = init(NULL, 0, requested, why, sizeof(why));
		if (err)
			shm_fatal("shmem_init", "start-up failed: %s",
				  why[0] ? why : strerror(-err));
	}
	if (provided)
		*provided = shm.thread_level;
	return 0;
}

double shmemx_wtime(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int shmemx_get_uniqueid(shmemx_uniqueid_t *uid)
{
	int err;

	if (!uid)
		return -EINVAL;
	err = hmc_world_get_uid(NULL, (struct hmc_world_uid *)uid);
	if (err)
		fprintf(stderr, "shmem: shmemx_get_uniqueid: %s\n",
			strerror(-err));
	return err;
}

int shmemx_set_attr_uniqueid_args(int rank, int nranks,
				  const shmemx_uniqueid_t *uid,
				  shmemx_init_attr_t *attr)
{
	if (!uid || !attr || attr->size < sizeof(*attr) || nranks < 1 ||
	    nranks > SHM_BOOT_MAX_PES || rank < 0 || rank >= nranks)
		return -EINVAL;
	attr->uid = uid;
	attr->rank = rank;
	attr->nranks = nranks;
	return 0;
}

int shmemx_init_attr(unsigned int flags, shmemx_init_attr_t *attr)
{
	unsigned int how = flags & (SHMEMX_INIT_WITH_WORLD |
				    SHMEMX_INIT_WITH_UNIQUEID);
	const char *bad = NULL;
	char why[256];
	int err;

	if (flags != how || how == (SHMEMX_INIT_WITH_WORLD |
				    SHMEMX_INIT_WITH_UNIQUEID))
		bad = "flags must be one of SHMEMX_INIT_WITH_*";
	else if (how && (!attr || attr->size < sizeof(*attr)))
		bad = "attr is NULL or smaller than shmemx_init_attr_t";
	else if (attr && attr->size >= sizeof(*attr) &&
		 (attr->thread_level < SHMEM_THREAD_SINGLE ||
		  attr->thread_level > SHMEM_THREAD_MULTIPLE))
		bad = "attr->thread_level is not one of SHMEM_THREAD_*";
	else if ((how & SHMEMX_INIT_WITH_WORLD) && !attr->world)
		bad = "attr->world is NULL";
	else if ((how & SHMEMX_INIT_WITH_UNIQUEID) &&
		 (!attr->uid || attr->nranks < 1 || attr->rank < 0 ||
		  attr->rank >= attr->nranks))
		bad = "attr has no unique id, or rank and nranks are invalid "
		      "(shmemx_set_attr_uniqueid_args)";
	else if (shm.finalized)
		bad = "the library cannot be initialised again after shmem_finalize";
	if (bad) {
		fprintf(stderr, "shmem: shmemx_init_attr: %s\n", bad);
		return -EINVAL;
	}
	if (shm.initialized)
		return 0;
	err = init(attr, how, attr && attr->size >= sizeof(*attr) ?
		   attr->thread_level : SHMEM_THREAD_SINGLE, why, sizeof(why));
	if (err)
		fprintf(stderr, "shmem: shmemx_init_attr: start-up failed: %s\n",
			why[0] ? why : strerror(-err));
	return err;
}

void shmem_init(void)
{
	shmem_init_thread(SHMEM_THREAD_SINGLE, NULL);
}

void shmem_query_thread(int *provided)
{
	shm_check_init("shmem_query_thread");
	*provided = shm.thread_level;
}

void shmem_finalize(void)
{
	if (!shm.initialized || shm.finalized)
		return;
	shmem_barrier_all();
	shm.finalized = 1;
	shm_peer_fini();
	shm_seg_fini();
	shm_boot_fini();
}

/*
 * Every other PE is told to exit with @status, so that the job ends with
 * it (the standard passes it to the environment) whatever the launcher:
 * one that ends the job at a non-zero exit (hmcrun, mpirun) would wait
 * for the others after status 0, and a job across hosts may have a
 * launcher per host, or none.
 */
void shmem_global_exit(int status)
{
	fflush(NULL);
	if (shm.initialized && !shm.finalized && !shm_peer_exit(status))
		shm_seg_exit_peers(status);
	shm_boot_exit(status);
}

int shmem_my_pe(void)
{
	return shm.initialized ? shm.me : -1;
}

int shmem_n_pes(void)
{
	return shm.initialized ? shm.npes : -1;
}

int shmem_pe_accessible(int pe)
{
	shm_check_init("shmem_pe_accessible");
	return pe >= 0 && pe < shm.npes;
}

int shmem_addr_accessible(const void *addr, int pe)
{
	uint64_t off;

	shm_check_init("shmem_addr_accessible");
	/* Remote PEs are accessible too: by messages, not by address. */
	return pe >= 0 && pe < shm.npes && shm_sym_locate(addr, &off) >= 0;
}

void *shmem_ptr(const void *dest, int pe)
{
	shm_check_init("shmem_ptr");
	if (pe < 0 || pe >= shm.npes)
		return NULL;
	return shm_peer_addr(dest, pe);
}

void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe)
{
	shm_check_init("shmem_team_ptr");
	if (team == SHMEM_TEAM_INVALID || pe < 0 || pe >= team->size)
		return NULL;
	return shm_peer_addr(dest, shm_team_world_pe(team, pe));
}

void shmem_info_get_version(int *major, int *minor)
{
	*major = SHMEM_MAJOR_VERSION;
	*minor = SHMEM_MINOR_VERSION;
}

void shmem_info_get_name(char *name)
{
	snprintf(name, SHMEM_MAX_NAME_LEN, "%s", SHMEM_VENDOR_STRING);
}

void shmem_pcontrol(const int level, ...)
{
}
