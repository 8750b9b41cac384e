/* SPDX-License-Identifier: MIT */
/* The job file oshrun shares with its PEs (boot.c, oshrun.c). */
#ifndef HMC_SHMEM_JOB_H
#define HMC_SHMEM_JOB_H

#include <stddef.h>
#include <stdint.h>

#define SHM_JOB_MAGIC		0x484d4353u	/* "HMCS" */
#define SHM_JOB_MAX_PES		4096
#define SHM_JOB_SLOT_DATA	480
#define SHM_JOB_ABORTED		(1u << 30)

struct shm_job_slot {
	uint32_t ready;
	uint32_t pad[7];
	unsigned char data[SHM_JOB_SLOT_DATA];
};

struct shm_job {
	uint32_t magic;
	uint32_t size;
	uint32_t timeout_ms;	/* start-up deadline */
	uint32_t abort_status;	/* SHM_JOB_ABORTED | status after global_exit */
	uint32_t pad[12];
	struct shm_job_slot slot[];
};

static inline size_t shm_job_len(int size)
{
	return sizeof(struct shm_job) + (size_t)size * sizeof(struct shm_job_slot);
}

#endif /* HMC_SHMEM_JOB_H */
