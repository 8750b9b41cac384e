// SPDX-License-Identifier: MIT
/*
 * Bootstrap: rank, size and the one exchange start-up needs.
 *
 * oshrun hands every PE HMC_SHMEM_RANK, HMC_SHMEM_SIZE and an inherited
 * descriptor, HMC_SHMEM_JOB_FD, of a shared "job" file with one slot per
 * PE: a PE publishes its slot and waits until every slot is published.
 * Without these variables the program runs as a single PE. This file is
 * the only one that knows the launcher; a world-layer bootstrap
 * (hmc_world_allgather) replaces it behind the same four calls.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "job.h"

/* Every group's dissemination barrier has a counter for each round. */
_Static_assert((1 << SHM_SYNC_ROUNDS) >= SHM_JOB_MAX_PES,
	       "sync arrays have too few round counters");

static struct shm_job *job;
static size_t job_len;
static int boot_rank;
static int boot_size = 1;

static int env_int(const char *name, int min, int max, int *out)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s)
		return -ENOENT;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

int shm_boot_init(int *rank, int *size)
{
	struct stat st;
	int fd, err;

	err = env_int("HMC_SHMEM_JOB_FD", 0, INT_MAX, &fd);
	if (err == -ENOENT) {
		*rank = 0;
		*size = 1;
		return 0;
	}
	if (err || env_int("HMC_SHMEM_SIZE", 1, SHM_JOB_MAX_PES, &boot_size) ||
	    env_int("HMC_SHMEM_RANK", 0, boot_size - 1, &boot_rank))
		return -EINVAL;
	if (fstat(fd, &st))
		return -errno;
	job_len = shm_job_len(boot_size);
	if ((size_t)st.st_size < job_len)
		return -EINVAL;
	job = mmap(NULL, job_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (job == MAP_FAILED) {
		job = NULL;
		return -errno;
	}
	close(fd);
	if (job->magic != SHM_JOB_MAGIC || job->size != (uint32_t)boot_size)
		return -EINVAL;
	*rank = boot_rank;
	*size = boot_size;
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int shm_boot_allgather(const void *mine, size_t len, void *all)
{
	struct shm_backoff b = { 0 };
	int64_t deadline;
	int missing = 0, i;

	if (len > SHM_JOB_SLOT_DATA)
		return -EMSGSIZE;
	if (!job) {
		memcpy(all, mine, len);
		return 0;
	}
	memcpy(job->slot[boot_rank].data, mine, len);
	__atomic_store_n(&job->slot[boot_rank].ready, 1, __ATOMIC_RELEASE);
	deadline = now_ms() + job->timeout_ms;
	for (;;) {
		missing = 0;
		for (i = 0; i < boot_size; i++)
			if (!__atomic_load_n(&job->slot[i].ready, __ATOMIC_ACQUIRE))
				missing++;
		if (!missing)
			break;
		if (now_ms() > deadline) {
			fprintf(stderr, "shmem: PE %d: start-up: PEs missing after %u ms:",
				boot_rank, job->timeout_ms);
			for (i = 0; i < boot_size; i++)
				if (!__atomic_load_n(&job->slot[i].ready,
						     __ATOMIC_ACQUIRE))
					fprintf(stderr, " %d", i);
			fputc('\n', stderr);
			return -ETIMEDOUT;
		}
		shm_backoff(&b);
	}
	for (i = 0; i < boot_size; i++)
		memcpy((char *)all + (size_t)i * len, job->slot[i].data, len);
	return 0;
}

void shm_boot_abort(int status)
{
	if (job)
		__atomic_store_n(&job->abort_status, status | SHM_JOB_ABORTED,
				 __ATOMIC_RELEASE);
}

void shm_boot_fini(void)
{
	if (job)
		munmap(job, job_len);
	job = NULL;
}
