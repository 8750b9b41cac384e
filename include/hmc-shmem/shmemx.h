/* SPDX-License-Identifier: MIT */
/*
 * libhmc_shmem's extensions to OpenSHMEM 1.5: start from an existing
 * hmc_world or from a unique id, the way NVSHMEM (nvshmemx_init_attr) and
 * Ascend SHMEM do, for programs that already have their own launcher.
 *
 *   With a world (include/hmc/world.h) the program started itself:
 *
 *	shmemx_init_attr_t attr = SHMEMX_INIT_ATTR_INITIALIZER;
 *	attr.world = world;
 *	shmemx_init_attr(SHMEMX_INIT_WITH_WORLD, &attr);
 *
 *   The world stays the caller's: shmem_finalize() leaves it running, and
 *   the caller finalizes it after shmem_finalize().
 *
 *   With a unique id: one process calls shmemx_get_uniqueid() (and hosts
 *   the job's store from then on), passes the id to the others by any
 *   channel, and every process, that one included, calls
 *
 *	shmemx_set_attr_uniqueid_args(rank, nranks, &uid, &attr);
 *	shmemx_init_attr(SHMEMX_INIT_WITH_UNIQUEID, &attr);
 *
 * Both return 0, or a negative errno after printing why on stderr (the
 * core library's rule for errors; shmem_init() ends the job instead).
 * A second call after a successful one returns 0 and changes nothing.
 *
 * PEs that cannot map each other's memory (other hosts, pid or network
 * namespaces, or HMC_SHMEM_MAP=0) reach each other by messages on the
 * world's communicator, with tags from SHMEMX_COMM_TAG_BASE up: a program
 * that gives its world to shmemx_init_attr() must not send or receive
 * those, nor receive with HMC_ANY_TAG while libhmc_shmem runs.
 */
#ifndef HMC_SHMEM_SHMEMX_H
#define HMC_SHMEM_SHMEMX_H

#include <shmem.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hmc_world;

/* An opaque unique id (an hmc_world_uid: the store's address and a secret). */
typedef struct {
	unsigned char bytes[96];
} shmemx_uniqueid_t;

#define SHMEMX_COMM_TAG_BASE		0x53484d0000000000ULL	/* "SHM" */

#define SHMEMX_INIT_WITH_WORLD		(1U << 0)
#define SHMEMX_INIT_WITH_UNIQUEID	(1U << 1)

typedef struct {
	size_t size;			/* sizeof(shmemx_init_attr_t) */
	struct hmc_world *world;	/* SHMEMX_INIT_WITH_WORLD */
	const shmemx_uniqueid_t *uid;	/* SHMEMX_INIT_WITH_UNIQUEID */
	int rank;			/* with uid: this process's PE */
	int nranks;			/* with uid: the number of PEs */
	int thread_level;		/* requested SHMEM_THREAD_* */
	int pad;
} shmemx_init_attr_t;

#define SHMEMX_INIT_ATTR_INITIALIZER					\
	{ sizeof(shmemx_init_attr_t), 0, 0, 0, 0, SHMEM_THREAD_SINGLE, 0 }

int shmemx_get_uniqueid(shmemx_uniqueid_t *uid);
int shmemx_set_attr_uniqueid_args(int rank, int nranks,
				  const shmemx_uniqueid_t *uid,
				  shmemx_init_attr_t *attr);
int shmemx_init_attr(unsigned int flags, shmemx_init_attr_t *attr);

/* Seconds on a monotonic clock (SOS's and Cray's extension; their test
 * suites time with it).  HAVE_SHMEMX_WTIME is the feature macro those
 * programs test before defining a fallback of their own. */
#define HAVE_SHMEMX_WTIME 1
double shmemx_wtime(void);

#ifdef __cplusplus
}
#endif

#endif /* HMC_SHMEM_SHMEMX_H */
