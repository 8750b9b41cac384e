/* SPDX-License-Identifier: MIT */
/* Where a world's rank, size and store come from (world.c, pmix.c). */
#ifndef HMC_LIB_WORLD_BOOT_H
#define HMC_LIB_WORLD_BOOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BOOT_UNKNOWN	UINT32_MAX

struct boot_info {
	uint32_t rank;		/* BOOT_UNKNOWN: the store assigns one */
	uint32_t size;		/* 0: join a running world */
	uint32_t local_rank;	/* BOOT_UNKNOWN: from the members' hosts */
	uint32_t local_size;
};

/* Whether a PMIx server started us (mpirun, srun --mpi=pmix). */
bool boot_pmix_detected(void);

/* PMIx_Init (libpmix opened at run time) and our rank, size, local rank. */
int boot_pmix_init(struct boot_info *bi);

/*
 * Rank 0 passes @mine (the others NULL); after a fence bounded by
 * @timeout_ms every rank gets rank 0's string in @out.
 */
int boot_pmix_exchange(const char *mine, char *out, size_t out_len,
		       int timeout_ms);

void boot_pmix_fini(void);

#endif
