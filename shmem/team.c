// SPDX-License-Identifier: MIT
/*
 * Teams, contexts and the barrier every collective is built on.
 *
 * A team is an arithmetic progression of world PEs (nested strided splits
 * stay one). Its barrier counters live in a slot of the internal area of
 * every member's heap; the members of a new team agree on a slot that no
 * member uses yet by OR-ing their slot bitmaps over the parent team.
 *
 * The barrier of larger groups is a dissemination barrier: in round k each member adds one
 * to counter k of the member 2^k ahead and waits until its own counter k is
 * non-zero, then takes one back. Counting rather than flagging lets a fast
 * peer signal the next barrier early, and leaves every counter at zero
 * once all members are through (the standard wants pSync restored).
 * The increments go through peer.c: CPU atomics on mapped members, requests
 * to remote ones; a barrier first quiets, so that every put issued before
 * it has landed when any member leaves it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "internal.h"

struct hmc_shmem_team hmc_shmem_team_world;
struct hmc_shmem_team hmc_shmem_team_shared;
struct hmc_shmem_ctx hmc_shmem_ctx_default = { .team = &hmc_shmem_team_world };

static pthread_mutex_t team_lock = PTHREAD_MUTEX_INITIALIZER;

/* Whether every member of the progression is mapped. */
static bool all_mapped(int start, int stride, int size)
{
	int i;

	for (i = 0; i < size; i++)
		if (!shm_pe_mapped(start + i * stride))
			return false;
	return true;
}

static void team_set(struct hmc_shmem_team *t, int start, int stride,
		     int size, int slot)
{
	int d = shm.me - start;

	t->start = start;
	t->stride = stride;
	t->size = size;
	t->slot = slot;
	t->local = all_mapped(start, stride, size);
	t->my_index = -1;
	if (stride ? d % stride == 0 && d / stride >= 0 && d / stride < size
		   : d == 0)
		t->my_index = stride ? d / stride : 0;
}

/*
 * SHMEM_TEAM_SHARED: the PEs we map, when they form a progression (as
 * launchers place them: consecutive ranks per host), else only us. Every
 * member maps the same PEs, so all members agree on it, and the shared
 * teams of different hosts are disjoint and may share a slot.
 */
static void shared_team(struct hmc_shmem_team *t)
{
	int first = -1, stride = 1, n = 0, pe;

	for (pe = 0; pe < shm.npes; pe++) {
		if (!shm_pe_mapped(pe))
			continue;
		if (first < 0)
			first = pe;
		else if (n == 1)
			stride = pe - first;
		else if (pe != first + n * stride)
			break;
		n++;
	}
	if (pe < shm.npes)
		team_set(t, shm.me, 1, 1, 1);
	else
		team_set(t, first, stride, n, 1);
}

void shm_team_init(void)
{
	team_set(&hmc_shmem_team_world, 0, 1, shm.npes, 0);
	hmc_shmem_team_world.predefined = 1;
	shared_team(&hmc_shmem_team_shared);
	hmc_shmem_team_shared.predefined = 1;
	shm.slots_used = 3;
}

int shm_team_world_pe(const struct hmc_shmem_team *team, int index)
{
	return team->start + index * team->stride;
}

bool shm_team_group(shmem_team_t team, struct shm_group *g)
{
	if (team == SHMEM_TEAM_INVALID || team->my_index < 0)
		return false;
	g->start = team->start;
	g->stride = team->stride;
	g->size = team->size;
	g->me = team->my_index;
	g->local = team->local;
	g->sync = shm_internal(shm.me)->slot[team->slot].sync;
	return true;
}

void shm_set_group(const char *call, int start, int log_stride, int size,
		   long *psync, struct shm_group *g)
{
	int stride, d;

	shm_check_init(call);
	if (start < 0 || log_stride < 0 || log_stride > 30 || size < 1)
		shm_fatal(call, "active set (PE_start %d, logPE_stride %d, PE_size %d) is invalid",
			  start, log_stride, size);
	stride = 1 << log_stride;
	if ((long)start + (long)(size - 1) * stride >= shm.npes)
		shm_fatal(call, "active set (PE_start %d, logPE_stride %d, PE_size %d) exceeds %d PEs",
			  start, log_stride, size, shm.npes);
	d = shm.me - start;
	if (d < 0 || d % stride || d / stride >= size)
		shm_fatal(call, "this PE is not in the active set (PE_start %d, logPE_stride %d, PE_size %d)",
			  start, log_stride, size);
	shm_check_addr(call, psync, SHMEM_SYNC_SIZE * sizeof(long), shm.me);
	g->start = start;
	g->stride = stride;
	g->size = size;
	g->me = d / stride;
	g->local = all_mapped(start, stride, size);
	g->sync = (uint64_t *)psync;
}

/*
 * Up to FLAT_BARRIER members: every member counts itself in at every peer
 * (the arrival counters of coll.c's flat reductions, which count the same
 * way) and waits for all, one step where dissemination takes log2(size).
 * Above, the n^2 increments cost more than the rounds they save.
 */
#define FLAT_BARRIER	8

static void flat_barrier(const struct shm_group *g)
{
	int i;

	for (i = 0; i < g->size; i++)
		if (i != g->me)
			shm_arrive("shmem_barrier", g->start + i * g->stride,
				   &g->sync[SHM_SYNC_FLAG + g->me]);
	for (i = 0; i < g->size; i++) {
		uint64_t *flag = &g->sync[SHM_SYNC_FLAG + i];
		struct shm_backoff b = { 0 };

		if (i == g->me)
			continue;
		while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE))
			shm_backoff(&b);
		__atomic_fetch_sub(flag, 1, __ATOMIC_ACQ_REL);
	}
}

void shm_group_barrier(const struct shm_group *g)
{
	int k, dist;

	/* Our stores, and copies into peers, are visible before we signal. */
	shm_quiet();
	if (g->size <= FLAT_BARRIER) {
		flat_barrier(g);
		return;
	}
	for (k = 0, dist = 1; dist < g->size; k++, dist <<= 1) {
		int to = g->start + ((g->me + dist) % g->size) * g->stride;
		struct shm_backoff b = { 0 };

		shm_arrive("shmem_barrier", to, &g->sync[k]);
		while (!__atomic_load_n(&g->sync[k], __ATOMIC_ACQUIRE))
			shm_backoff(&b);
		__atomic_fetch_sub(&g->sync[k], 1, __ATOMIC_ACQ_REL);
	}
}

void shm_team_barrier(shmem_team_t team)
{
	struct shm_group g;

	if (shm_team_group(team, &g))
		shm_group_barrier(&g);
}

void shmem_barrier_all(void)
{
	shm_check_init("shmem_barrier_all");
	shm_team_barrier(SHMEM_TEAM_WORLD);
}

void shmem_sync_all(void)
{
	shm_check_init("shmem_sync_all");
	shm_team_barrier(SHMEM_TEAM_WORLD);
}

int shmem_team_sync(shmem_team_t team)
{
	struct shm_group g;

	shm_check_init("shmem_team_sync");
	if (!shm_team_group(team, &g))
		return -1;
	shm_group_barrier(&g);
	return 0;
}

void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync)
{
	struct shm_group g;

	shm_set_group("shmem_barrier", PE_start, logPE_stride, PE_size, pSync,
		      &g);
	shm_group_barrier(&g);
}

void shmem_sync(int PE_start, int logPE_stride, int PE_size, long *pSync)
{
	struct shm_group g;

	shm_set_group("shmem_sync", PE_start, logPE_stride, PE_size, pSync, &g);
	shm_group_barrier(&g);
}

int shmem_team_my_pe(shmem_team_t team)
{
	shm_check_init("shmem_team_my_pe");
	return team == SHMEM_TEAM_INVALID ? -1 : team->my_index;
}

int shmem_team_n_pes(shmem_team_t team)
{
	shm_check_init("shmem_team_n_pes");
	return team == SHMEM_TEAM_INVALID ? -1 : team->size;
}

int shmem_team_get_config(shmem_team_t team, long config_mask,
			  shmem_team_config_t *config)
{
	shm_check_init("shmem_team_get_config");
	if (team == SHMEM_TEAM_INVALID || !config ||
	    (config_mask & ~SHMEM_TEAM_NUM_CONTEXTS))
		return -1;
	if (config_mask & SHMEM_TEAM_NUM_CONTEXTS)
		config->num_contexts = team->config.num_contexts;
	return 0;
}

int shmem_team_translate_pe(shmem_team_t src_team, int src_pe,
			    shmem_team_t dest_team)
{
	int world, d;

	shm_check_init("shmem_team_translate_pe");
	if (src_team == SHMEM_TEAM_INVALID || dest_team == SHMEM_TEAM_INVALID ||
	    src_pe < 0 || src_pe >= src_team->size)
		return -1;
	world = shm_team_world_pe(src_team, src_pe);
	d = world - dest_team->start;
	if (!dest_team->stride)
		return d ? -1 : 0;
	if (d % dest_team->stride || d / dest_team->stride < 0 ||
	    d / dest_team->stride >= dest_team->size)
		return -1;
	return d / dest_team->stride;
}

/*
 * Agree over @parent on @n slots no participant uses: each publishes its
 * bitmap, all OR them. Two barriers: one before reading, one before the
 * published words may be overwritten.
 */
static int agree_slots(struct shm_group *pg, int n, int *slots)
{
	uint64_t used = 0;
	int i, found = 0;

	__atomic_store_n(&pg->sync[SHM_SYNC_WORD], shm.slots_used,
			 __ATOMIC_RELAXED);
	shm_group_barrier(pg);
	for (i = 0; i < pg->size; i++) {
		int pe = pg->start + i * pg->stride;

		used |= shm_amo("shmem_team_split", pe, &pg->sync[SHM_SYNC_WORD],
				8, SHM_AMO_FETCH, 0, 0, true);
	}
	shm_group_barrier(pg);
	for (i = 0; i < SHM_MAX_TEAMS && found < n; i++)
		if (!(used & (1ULL << i)))
			slots[found++] = i;
	return found == n ? 0 : -ENOSPC;
}

/* A team of parent indices start + i * stride, or NULL if we are not in it. */
static shmem_team_t make_team(struct shm_group *pg, int start, int stride,
			      int size, int slot,
			      const shmem_team_config_t *config, long mask)
{
	struct hmc_shmem_team *t;

	t = calloc(1, sizeof(*t));
	if (!t)
		shm_fatal("shmem_team_split", "out of memory");
	team_set(t, pg->start + start * pg->stride, stride * pg->stride, size,
		 slot);
	if (t->my_index < 0) {
		free(t);
		return SHMEM_TEAM_INVALID;
	}
	if (config && (mask & SHMEM_TEAM_NUM_CONTEXTS))
		t->config.num_contexts = config->num_contexts;
	pthread_mutex_lock(&team_lock);
	shm.slots_used |= 1ULL << slot;
	pthread_mutex_unlock(&team_lock);
	return t;
}

int shmem_team_split_strided(shmem_team_t parent_team, int start,
			     int stride, int size,
			     const shmem_team_config_t *config,
			     long config_mask, shmem_team_t *new_team)
{
	struct shm_group pg;
	int slot;

	shm_check_init("shmem_team_split_strided");
	*new_team = SHMEM_TEAM_INVALID;
	if (!shm_team_group(parent_team, &pg))
		return -1;
	if (size < 1 || start < 0 || start >= pg.size ||
	    (size > 1 && (stride == 0 ||
			  (long)start + (long)(size - 1) * stride < 0 ||
			  (long)start + (long)(size - 1) * stride >= pg.size)))
		return -1;
	if (config_mask & ~SHMEM_TEAM_NUM_CONTEXTS)
		return -1;
	if (agree_slots(&pg, 1, &slot))
		return -1;
	*new_team = make_team(&pg, start, size > 1 ? stride : 1, size, slot,
			      config, config_mask);
	return 0;
}

int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
			const shmem_team_config_t *xaxis_config,
			long xaxis_mask, shmem_team_t *xaxis_team,
			const shmem_team_config_t *yaxis_config,
			long yaxis_mask, shmem_team_t *yaxis_team)
{
	struct shm_group pg;
	int slots[2], x, y0, n;

	shm_check_init("shmem_team_split_2d");
	*xaxis_team = SHMEM_TEAM_INVALID;
	*yaxis_team = SHMEM_TEAM_INVALID;
	if (!shm_team_group(parent_team, &pg) || xrange < 1 ||
	    ((xaxis_mask | yaxis_mask) & ~SHMEM_TEAM_NUM_CONTEXTS))
		return -1;
	if (xrange > pg.size)
		xrange = pg.size;
	if (agree_slots(&pg, 2, slots))
		return -1;
	/* Rows of xrange consecutive PEs; columns of stride xrange. */
	y0 = pg.me / xrange * xrange;
	n = pg.size - y0 < xrange ? pg.size - y0 : xrange;
	*xaxis_team = make_team(&pg, y0, 1, n, slots[0], xaxis_config,
				xaxis_mask);
	x = pg.me % xrange;
	n = (pg.size - x + xrange - 1) / xrange;
	*yaxis_team = make_team(&pg, x, xrange, n, slots[1], yaxis_config,
				yaxis_mask);
	return 0;
}

void shmem_team_destroy(shmem_team_t team)
{
	shm_check_init("shmem_team_destroy");
	if (team == SHMEM_TEAM_INVALID)
		return;
	if (team->predefined)
		shm_fatal("shmem_team_destroy", "a predefined team cannot be destroyed");
	/* No member may still be in a barrier on the slot we give back. */
	shm_team_barrier(team);
	pthread_mutex_lock(&team_lock);
	shm.slots_used &= ~(1ULL << team->slot);
	pthread_mutex_unlock(&team_lock);
	free(team);
}

/* ----------------------------------------------------------------------
 * Contexts: a context is its team and options; its quiet is the PE's
 * (peer.c counts requests per target PE, not per context), which
 * completes more than the standard asks, never less.
 */
int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx)
{
	struct hmc_shmem_ctx *c;

	shm_check_init("shmem_team_create_ctx");
	*ctx = SHMEM_CTX_INVALID;
	if (team == SHMEM_TEAM_INVALID ||
	    (options & ~(SHMEM_CTX_SERIALIZED | SHMEM_CTX_PRIVATE |
			 SHMEM_CTX_NOSTORE)))
		return -1;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -1;
	c->team = team;
	c->options = options;
	*ctx = c;
	return 0;
}

int shmem_ctx_create(long options, shmem_ctx_t *ctx)
{
	return shmem_team_create_ctx(SHMEM_TEAM_WORLD, options, ctx);
}

void shmem_ctx_destroy(shmem_ctx_t ctx)
{
	shm_check_init("shmem_ctx_destroy");
	if (ctx == SHMEM_CTX_INVALID)
		return;
	if (ctx == SHMEM_CTX_DEFAULT)
		shm_fatal("shmem_ctx_destroy", "SHMEM_CTX_DEFAULT cannot be destroyed");
	/* Destroying a context completes its operations. */
	shm_quiet();
	free(ctx);
}

int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team)
{
	shm_check_init("shmem_ctx_get_team");
	if (ctx == SHMEM_CTX_INVALID || !team) {
		if (team)
			*team = SHMEM_TEAM_INVALID;
		return -1;
	}
	*team = ctx->team;
	return 0;
}

int shm_ctx_pe(const char *call, shmem_ctx_t ctx, int pe)
{
	if (ctx == SHMEM_CTX_DEFAULT)
		return pe;
	if (ctx == SHMEM_CTX_INVALID)
		shm_fatal(call, "SHMEM_CTX_INVALID is not a context");
	if (pe < 0 || pe >= ctx->team->size)
		shm_fatal(call, "PE %d is out of range [0, %d) of the context's team",
			  pe, ctx->team->size);
	return shm_team_world_pe(ctx->team, pe);
}
