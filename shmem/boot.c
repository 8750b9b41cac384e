// SPDX-License-Identifier: MIT
/*
 * Bootstrap: rank, size and the one exchange start-up needs, from an
 * hmc_world (include/hmc/world.h).
 *
 * shmem_init() starts a world as the environment says: under hmcrun (or
 * oshrun, its alias), mpirun or srun (PMIx), torchrun's variables or
 * HMC_STORE. With none of these the program runs as a single PE, as the
 * standard expects of a program started without a launcher.
 * shmemx_init_attr() starts from the caller's world, which stays the
 * caller's, or from a unique id, whose world is ours. This file is the
 * only one that knows where rank and size come from.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hmc/world.h>

#include "internal.h"

/* Every group's dissemination barrier has a counter for each round. */
_Static_assert((1 << SHM_SYNC_ROUNDS) >= SHM_BOOT_MAX_PES,
	       "sync arrays have too few round counters");
_Static_assert(sizeof(shmemx_uniqueid_t) == sizeof(struct hmc_world_uid),
	       "shmemx_uniqueid_t is an hmc_world_uid");

static struct hmc_world *world;
static bool own_world;

/*
 * Deadline of every start-up exchange, and of every answer a remote PE
 * owes us: the world's own (HMC_WORLD_TIMEOUT).
 */
int shm_boot_timeout_ms(void)
{
	const char *s = getenv("HMC_WORLD_TIMEOUT");
	long v = s ? strtol(s, NULL, 10) : 0;

	return v > 0 && v <= INT_MAX ? (int)v : 60000;
}

static int world_rank_size(int *rank, int *size)
{
	uint32_t n = hmc_world_size(world);

	if (!n || n > SHM_BOOT_MAX_PES)
		return -E2BIG;
	*rank = (int)hmc_world_rank(world);
	*size = (int)n;
	return 0;
}

int shm_boot_init(const shmemx_init_attr_t *attr, unsigned int flags,
		  int *rank, int *size, char *why, size_t why_len)
{
	struct hmc_world_opts opts = { .sz = sizeof(opts) };
	int err;

	why[0] = '\0';
	if (flags & SHMEMX_INIT_WITH_WORLD) {
		world = attr->world;
		own_world = false;
		err = world_rank_size(rank, size);
		if (err)
			snprintf(why, why_len, "the world has %u ranks (1 to %d)",
				 hmc_world_size(world), SHM_BOOT_MAX_PES);
		return err;
	}
	opts.err_msg = why;
	opts.err_msg_len = why_len;
	if (flags & SHMEMX_INIT_WITH_UNIQUEID) {
		opts.bootstrap = HMC_WORLD_BOOT_UID;
		opts.uid = (const struct hmc_world_uid *)attr->uid;
		opts.flags = HMC_WORLD_F_RANK;
		opts.rank = (uint32_t)attr->rank;
		opts.size = (uint32_t)attr->nranks;
	}
	err = hmc_world_init(&opts, &world);
	if (err == -ENOENT && !flags) {
		/* No launcher: a job of one PE. */
		world = NULL;
		*rank = 0;
		*size = 1;
		return 0;
	}
	if (err) {
		world = NULL;
		return err;
	}
	own_world = true;
	err = world_rank_size(rank, size);
	if (err) {
		snprintf(why, why_len, "the world has %u ranks (1 to %d)",
			 hmc_world_size(world), SHM_BOOT_MAX_PES);
		shm_boot_fini();
	}
	return err;
}

int shm_boot_allgather(const void *mine, size_t len, void *all)
{
	int err;

	if (!world) {
		memcpy(all, mine, len);
		return 0;
	}
	err = hmc_world_allgather(world, mine, len, all, shm_boot_timeout_ms());
	if (err)
		fprintf(stderr, "shmem: PE %u: start-up exchange: %s\n",
			hmc_world_rank(world), hmc_world_last_error(world));
	return err;
}

struct hmc_comm *shm_boot_comm(void)
{
	return world ? hmc_world_comm(world) : NULL;
}

int shm_boot_connect(int pe)
{
	return hmc_world_connect(world, (uint32_t)pe, shm_boot_timeout_ms());
}

int shm_boot_barrier(void)
{
	return world ? hmc_world_barrier(world, shm_boot_timeout_ms()) : 0;
}

void shm_boot_exit(int status)
{
	hmc_world_detach(world);
	_exit(status);
}

void shm_boot_fini(void)
{
	if (world && own_world)
		hmc_world_finalize(world);
	world = NULL;
}
