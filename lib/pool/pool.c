// SPDX-License-Identifier: MIT
/*
 * The pool: creation over a world, the global range, membership, and the
 * SHM control calls (barrier, allgather, extra context, subgroups).
 *
 * Creation is collective: every member publishes a record (segment sizes,
 * its communicator's address, its process and host) by hmc_world_allgather,
 * then the members agree on one address for the whole range (a proposer
 * picks a free range, every rank claims it with MAP_FIXED_NOREPLACE, and
 * the next proposer tries if anyone could not) and connect a communicator
 * over their ConnBuffers, each dialling the lower ranks. The range has
 * slots for twice the world's ranks (and two more), so that ranks joining
 * the world later find theirs: a joiner's hmc_pool_create() meets the
 * members' hmc_pool_refresh() in the same collectives, takes the range's
 * address and geometry from a member's record, claims the same range,
 * and dials every member. Host segments that
 * can be shared (a ConnBuffer exported as a mappable fd: memfd or /dev/hmc)
 * are mapped into their slots by their owner and by every rank on the same
 * host (read_host_id()), which opens the owner's descriptor through
 * /proc/<pid>/fd (same user, so the ptrace access check passes).
 *
 * A member is live while its communicator connection is; once it drops
 * (the rank left or died), copies touching the rank fail with -ECONNRESET.
 * Its mapping, if any, stays until the pool is destroyed, so a copy that
 * raced with the death reads or writes pages that still exist: never a
 * fault.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hmc/world.h>

#include "mem/mem.h"
#include "pool/pool.h"
#include "sys/log.h"
#include "sys/opts.h"

#define POOL_DEFAULT_TIMEOUT_MS	30000
#define POOL_RESERVE_ROUNDS	8
#define POOL_SPARE_SLOTS	2

/* What a rank is in a (re)creation: absent, new, or already a member. */
enum pool_role {
	POOL_ROLE_NONE,		/* a rank without a world member: zeros */
	POOL_ROLE_NEW,
	POOL_ROLE_MEMBER,
};

/* What each rank publishes; no padding, same on every rank. */
struct pool_rec {
	uint64_t host_size;
	uint64_t dev_size;
	/* MEMBER: where the pool is, for the ranks that join it. */
	uint64_t base;
	uint64_t stride;
	uint64_t host_slot;
	uint32_t role;		/* enum pool_role */
	uint32_t nr_slots;
	int32_t pid;
	int32_t fd;		/* the exported ConnBuffer in @pid, or -1 */
	uint16_t port;
	uint16_t reserved;
	char host_id[64];	/* read_host_id() */
	char ip[52];
};

/* One round of the range agreement. */
struct pool_claim {
	uint32_t present;
	uint32_t ok;
};

int pool_rank_check(struct hmc_pool *p, uint32_t rank)
{
	int ret = 0;

	if (rank >= p->nr_slots)
		return -ENXIO;
	if (rank == p->rank)
		return 0;
	pthread_mutex_lock(&p->lock);
	switch (p->ranks[rank].state) {
	case POOL_RANK_NONE:
		ret = -ENXIO;
		break;
	case POOL_RANK_GONE:
		ret = -ECONNRESET;
		break;
	default:
		if (!hmc_comm_is_connected(p->comm, rank)) {
			pr_debug("pool: rank %u left or failed", rank);
			p->ranks[rank].state = POOL_RANK_GONE;
			ret = -ECONNRESET;
		}
		break;
	}
	pthread_mutex_unlock(&p->lock);
	return ret;
}

/*
 * Who shares our memory: the kernel's boot id and our network namespace.
 * A peer in another network namespace counts as another host, as it does
 * for those who lay out hosts that way (containers, the tests): its
 * segment goes through the communicator, whose transport may still be shm.
 */
static void read_host_id(char *out, size_t len)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	char boot[40] = "";
	struct stat st;

	if (f) {
		if (!fgets(boot, sizeof(boot), f))
			boot[0] = '\0';
		boot[strcspn(boot, "\n")] = '\0';
		fclose(f);
	}
	if (stat("/proc/self/ns/net", &st))
		st.st_ino = 0;
	snprintf(out, len, "%s:%llu", boot, (unsigned long long)st.st_ino);
}

static char *slot_of(const struct hmc_pool *p, uint32_t rank)
{
	return p->base + (size_t)rank * p->stride;
}

/*
 * Agree on one address for @total bytes in every rank: the members of
 * @recs (@nr) propose in turn until every rank could claim the same range.
 */
static int reserve_range(struct hmc_pool *p, size_t total,
			 const struct pool_rec *recs, uint32_t nr)
{
	uint32_t n = hmc_world_size(p->world) + 64, proposer = 0, round, i;
	struct pool_claim mine, *all;
	uint64_t addr = 0;
	void *at;
	int ret = -EADDRINUSE;
	bool agreed;

	all = calloc(n, sizeof(*all));
	if (!all)
		return -ENOMEM;
	for (round = 0; round < POOL_RESERVE_ROUNDS; round++) {
		/* The next rank with a member proposes. */
		for (i = 0; i < nr && !recs[(proposer + i) % nr].role; i++)
			;
		proposer = (proposer + i) % nr;
		if (proposer == p->rank) {
			/* A free range, aligned, given back for all to claim. */
			at = mmap(NULL, total + POOL_SLOT_ALIGN, PROT_NONE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				  -1, 0);
			addr = at == MAP_FAILED ? 0 :
			       ((uintptr_t)at + POOL_SLOT_ALIGN - 1) &
			       ~(POOL_SLOT_ALIGN - 1);
			if (at != MAP_FAILED)
				munmap(at, total + POOL_SLOT_ALIGN);
			/* Spread retries: later rounds move up. */
			if (addr)
				addr += (uint64_t)round * POOL_SLOT_ALIGN;
		}
		ret = hmc_world_bcast(p->world, &addr, sizeof(addr), proposer,
				      p->timeout_ms);
		if (ret)
			break;
		at = MAP_FAILED;
		if (addr)
			at = mmap((void *)(uintptr_t)addr, total, PROT_NONE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
				  MAP_FIXED_NOREPLACE, -1, 0);
		/* Kernels before 4.17 take the address as a hint only. */
		if (at != MAP_FAILED && (uintptr_t)at != addr) {
			munmap(at, total);
			at = MAP_FAILED;
		}
		mine = (struct pool_claim){ .present = 1,
					    .ok = at != MAP_FAILED };
		ret = hmc_world_allgather(p->world, &mine, sizeof(mine), all,
					  p->timeout_ms);
		if (ret) {
			if (at != MAP_FAILED)
				munmap(at, total);
			break;
		}
		agreed = true;
		for (i = 0; i < n; i++)
			if (all[i].present && !all[i].ok)
				agreed = false;
		if (agreed) {
			p->base = at;
			break;
		}
		if (at != MAP_FAILED)
			munmap(at, total);
		ret = -EADDRINUSE;
		pr_debug("pool: round %u: %#llx is taken in some rank", round,
			 (unsigned long long)addr);
		proposer = (proposer + 1) % nr;
	}
	free(all);
	return ret;
}

/* Map @fd's first @len bytes into @rank's host slot. */
static int map_slot(struct hmc_pool *p, uint32_t rank, int fd, size_t len)
{
	void *at;

	at = mmap(slot_of(p, rank), len, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_FIXED, fd, 0);
	if (at == MAP_FAILED)
		return -errno;
	p->ranks[rank].mapped = true;
	return 0;
}

/* Back to reserved and unmapped (a departed rank's slot, for a joiner). */
static void unmap_slot(struct hmc_pool *p, uint32_t rank)
{
	if (!p->ranks[rank].mapped)
		return;
	if (mmap(slot_of(p, rank), p->host_slot, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1,
		 0) != MAP_FAILED)
		p->ranks[rank].mapped = false;
}

/* A peer's shared ConnBuffer, opened through /proc and mapped, if we can. */
static void map_peer(struct hmc_pool *p, uint32_t rank,
		     const struct pool_rec *rec, const char *host_id)
{
	char path[64];
	size_t len = pool_extra_off(p, rec->host_size);
	int fd, ret;

	if (rec->fd < 0 || !len || !host_id[0] || strcmp(rec->host_id, host_id))
		return;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", rec->pid, rec->fd);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		pr_debug("pool: rank %u: %s: %s; its segment goes through the communicator",
			 rank, path, strerror(errno));
		return;
	}
	ret = map_slot(p, rank, fd, len);
	if (ret)
		pr_debug("pool: rank %u: mapping its segment: %s", rank,
			 strerror(-ret));
	close(fd);
}

/* Rank @r of @rec becomes a live member in our view. */
static void adopt(struct hmc_pool *p, uint32_t r, const struct pool_rec *rec,
		  const char *host_id)
{
	pthread_mutex_lock(&p->lock);
	p->ranks[r].host_size = rec->host_size;
	p->ranks[r].dev_size = rec->dev_size;
	p->ranks[r].state = POOL_RANK_LIVE;
	/* a new member, a new connection: its region is asked for again */
	p->dev_rmr[r] = POOL_RMR_UNKNOWN;
	pthread_mutex_unlock(&p->lock);
	unmap_slot(p, r);
	if (r != p->rank)
		map_peer(p, r, rec, host_id);
	else if (p->export_fd >= 0 && rec->host_size &&
		 map_slot(p, r, p->export_fd, pool_extra_off(p, rec->host_size)))
		pr_debug("pool: cannot map our own segment into its slot");
}

/*
 * Connect the communicator to the new ranks: a new rank dials the members
 * and the new ranks below it; everyone waits for those that dial it.
 * Members are connected among themselves already.
 */
static int link_peers(struct hmc_pool *p, const struct pool_rec *recs,
		      uint32_t nr, int timeout_ms)
{
	int64_t deadline = deadline_after_ms(timeout_ms);
	bool new = recs[p->rank].role == POOL_ROLE_NEW;
	uint32_t r;
	int ret;

	for (r = 0; r < nr; r++) {
		if (r == p->rank || !recs[r].role || !new ||
		    (recs[r].role == POOL_ROLE_NEW && r > p->rank))
			continue;
		ret = hmc_comm_connect(p->comm, r, recs[r].ip, recs[r].port,
				       HMC_TRANSPORT_AUTO);
		if (ret) {
			pr_debug("pool: cannot connect to rank %u at %s:%u: %s",
				 r, recs[r].ip, recs[r].port, hmc_strerror(ret));
			return ret;
		}
	}
	for (r = 0; r < nr; r++) {
		if (r == p->rank || recs[r].role != POOL_ROLE_NEW ||
		    (new && r < p->rank))
			continue;
		while (!hmc_comm_is_connected(p->comm, r)) {
			if (deadline_passed(deadline)) {
				pr_debug("pool: rank %u never connected", r);
				return -ETIMEDOUT;
			}
			usleep(1000);
		}
	}
	return 0;
}

/*
 * Everyone's record by allgather into *@recs (@nr entries, zeros for ranks
 * without a member): room for more ranks than the world had when we
 * looked, as members may have joined since.
 */
static int gather(struct hmc_pool *p, const struct pool_rec *mine,
		  struct pool_rec **recs, uint32_t *nr, int timeout_ms)
{
	uint32_t n = hmc_world_size(p->world);
	int ret;

	n = (n > p->nr_slots ? n : p->nr_slots) + 64;
	*recs = calloc(n, sizeof(**recs));
	if (!*recs)
		return -ENOMEM;
	ret = hmc_world_allgather(p->world, mine, sizeof(*mine), *recs,
				  timeout_ms);
	if (ret) {
		free(*recs);
		*recs = NULL;
		return ret;
	}
	*nr = n;
	return 0;
}

/* Whether every rank present could do its part (@ok for ours). */
static int agree(struct hmc_pool *p, bool ok, int timeout_ms)
{
	uint32_t n = hmc_world_size(p->world) + 64, i;
	struct pool_claim mine = { .present = 1, .ok = ok }, *all;
	int ret;

	all = calloc(n, sizeof(*all));
	if (!all)
		return -ENOMEM;
	ret = hmc_world_allgather(p->world, &mine, sizeof(mine), all,
				  timeout_ms);
	for (i = 0; i < n && !ret; i++)
		if (all[i].present && !all[i].ok)
			ret = -EADDRINUSE;
	free(all);
	return ret;
}

/* A joiner takes the geometry of the pool from a member's record. */
static int join_geometry(struct hmc_pool *p, const struct pool_rec *m,
			 const struct hmc_pool_opts *o)
{
	void *at;

	p->base = (char *)(uintptr_t)m->base;
	p->stride = m->stride;
	p->host_slot = m->host_slot;
	p->nr_slots = m->nr_slots;
	if (p->rank >= p->nr_slots || o->host_size >= p->host_slot ||
	    o->device_size >= p->stride - p->host_slot) {
		pr_debug("pool: rank %u with %llu + %llu bytes does not fit the pool's %u slots of %zu + %zu",
			 p->rank, (unsigned long long)o->host_size,
			 (unsigned long long)o->device_size, p->nr_slots,
			 p->host_slot, p->stride - p->host_slot);
		p->base = NULL;
		return -ENOSPC;
	}
	at = mmap(p->base, p->stride * p->nr_slots, PROT_NONE,
		  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
		  MAP_FIXED_NOREPLACE, -1, 0);
	if (at != p->base) {
		if (at != MAP_FAILED)
			munmap(at, p->stride * p->nr_slots);
		pr_debug("pool: the pool's range at %p is taken here", p->base);
		p->base = NULL;
		return -EADDRINUSE;
	}
	return 0;
}

/* The geometry of a new pool: slots for the largest segments, room to grow. */
static int new_geometry(struct hmc_pool *p, const struct pool_rec *recs,
			uint32_t nr)
{
	uint64_t max_host = 0, max_dev = 0;
	uint32_t r;

	for (r = 0; r < nr; r++) {
		if (recs[r].host_size > max_host)
			max_host = recs[r].host_size;
		if (recs[r].dev_size > max_dev)
			max_dev = recs[r].dev_size;
	}
	/* A slot keeps a page of each part: every segment has its address. */
	p->host_slot = (max_host + POOL_SLOT_ALIGN) & ~(POOL_SLOT_ALIGN - 1);
	p->stride = p->host_slot +
		    ((max_dev + POOL_SLOT_ALIGN) & ~(POOL_SLOT_ALIGN - 1));
	/* Joiners past the first members' ranks find a slot too. */
	p->nr_slots = 2 * hmc_world_size(p->world) + POOL_SPARE_SLOTS;
	if (p->stride > SIZE_MAX / p->nr_slots)
		return -EOVERFLOW;
	return reserve_range(p, p->stride * p->nr_slots, recs, nr);
}

static int setup_buffer(struct hmc_pool *p, const struct hmc_pool_opts *o,
			struct pool_rec *rec)
{
	HMC_OPTS(hmc_comm_opts, co, .rank = p->rank,
		 .connect_timeout_ms = p->timeout_ms,
		 .op_timeout_ms = p->timeout_ms,
		 .msg_region = POOL_MSG_REGION, .msg_slot_size = POOL_MSG_SLOT);
	const char *ip = getenv("HMC_WORLD_ADDR");
	int ret;

	p->user_off = (pool_stage_off(p, o->host_size) + POOL_STAGE_SIZE +
		       p->page - 1) & ~(p->page - 1);
	p->user_size = (o->user_mem_size + p->page - 1) & ~(p->page - 1);
	ret = hmc_buf_create(HMC_MEM_CPU, 0,
			     p->user_off + p->user_size + POOL_MSG_REGION, NULL,
			     &p->buf);
	if (ret)
		return ret;
	/* Shareable where the backing allows (memfd, /dev/hmc). */
	if (hmc_buf_export_fd(p->buf, 0, 0, HMC_BUF_EXPORT_RDWR,
			      &p->export_fd))
		p->export_fd = -1;
	ret = hmc_comm_create(p->buf, &co, &p->comm);
	if (ret)
		return ret;
	snprintf(rec->ip, sizeof(rec->ip), "%s", ip && *ip ? ip : "127.0.0.1");
	ret = hmc_comm_listen(p->comm, rec->ip, 0);
	if (ret)
		return ret;
	ret = hmc_comm_listen_port(p->comm);
	if (ret < 0)
		return ret;
	rec->port = (uint16_t)ret;
	rec->fd = p->export_fd;
	return 0;
}

static int check_opts(const struct hmc_pool_opts *o)
{
	if (o->flags || o->host_size > SIZE_MAX / 4 ||
	    o->device_size > SIZE_MAX / 4 || o->user_mem_size > SIZE_MAX / 4)
		return -EINVAL;
	if (!o->device_size)
		return 0;
	if (o->device_type == HMC_MEM_CPU || o->device_type > MEM_TYPE_LAST)
		return -EINVAL;
	return 0;
}

static int user_restore(struct hmc_pool *p, const struct pool_user_range *u);

static void pool_free(struct hmc_pool *p)
{
	size_t i;

	pool_copy_stop(p);
	pool_serve_stop(p);
	if (p->comm)
		pool_dev_unregion(p);
	/* Registered memory gets its own pages back before the buffer goes. */
	for (i = 0; i < p->nr_user; i++) {
		if (p->user[i].moved && user_restore(p, &p->user[i]))
			pr_debug("pool: %#lx: cannot give it private pages back; it stays mapped shared",
				 (unsigned long)p->user[i].start);
		if (p->user[i].mr)
			hmc_comm_mr_dereg(p->comm, p->user[i].mr);
	}
	if (p->comm)
		hmc_comm_destroy(p->comm);
	if (p->base)
		munmap(p->base, (size_t)p->nr_slots * p->stride);
	if (p->dev_ptr)
		hmc_mem_free(p->dev_type, p->dev_id, p->dev_ptr);
	if (p->export_fd >= 0)
		close(p->export_fd);
	if (p->buf)
		hmc_buf_destroy(p->buf);
	pthread_mutex_destroy(&p->lock);
	pthread_mutex_destroy(&p->stage_lock);
	pthread_mutex_destroy(&p->group_lock);
	free(p->ranks);
	free(p->dev_rmr);
	free(p->user);
	free(p->self);
	free(p);
}

int hmc_pool_create(struct hmc_world *world, const struct hmc_pool_opts *opts,
		    struct hmc_pool **out)
{
	struct pool_rec mine = { .role = POOL_ROLE_NEW, .fd = -1 };
	struct pool_rec *recs = NULL, *member = NULL;
	struct hmc_pool_opts o;
	struct hmc_pool *p;
	uint32_t r, nr = 0;
	int ret;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!world)
		return -EINVAL;
	ret = OPTS_LOAD(&o, opts, hmc_pool_opts, flags);
	if (ret)
		return ret;
	ret = check_opts(&o);
	if (ret)
		return ret;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->world = world;
	p->rank = hmc_world_rank(world);
	p->timeout_ms = o.timeout_ms > 0 ? o.timeout_ms : POOL_DEFAULT_TIMEOUT_MS;
	p->page = (size_t)sysconf(_SC_PAGESIZE);
	p->export_fd = -1;
	p->dev_type = o.device_size ? o.device_type : HMC_MEM_CPU;
	p->dev_id = o.device_id;
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->stage_lock, NULL);
	pthread_mutex_init(&p->group_lock, NULL);
	if (o.device_size) {
		ret = hmc_mem_alloc(p->dev_type, p->dev_id, o.device_size,
				    &p->dev_ptr);
		if (ret)
			goto fail;
	}
	ret = setup_buffer(p, &o, &mine);
	if (ret)
		goto fail;
	mine.host_size = o.host_size;
	mine.dev_size = o.device_size;
	mine.pid = getpid();
	read_host_id(mine.host_id, sizeof(mine.host_id));
	p->self = malloc(sizeof(*p->self));
	if (!p->self) {
		ret = -ENOMEM;
		goto fail;
	}
	*p->self = mine;

	ret = gather(p, &mine, &recs, &nr, p->timeout_ms);
	if (ret)
		goto fail;
	for (r = 0; r < nr && !member; r++)
		if (recs[r].role == POOL_ROLE_MEMBER)
			member = &recs[r];
	if (member) {
		/* Joining a running pool, whose members run hmc_pool_refresh(). */
		ret = join_geometry(p, member, &o);
		ret = agree(p, !ret, p->timeout_ms) ?: ret;
	} else {
		ret = new_geometry(p, recs, nr);
	}
	if (ret)
		goto fail;
	p->ranks = calloc(p->nr_slots, sizeof(*p->ranks));
	p->dev_rmr = calloc(p->nr_slots, sizeof(*p->dev_rmr));
	if (!p->ranks || !p->dev_rmr) {
		ret = -ENOMEM;
		goto fail;
	}
	for (r = 0; r < nr && r < p->nr_slots; r++)
		if (recs[r].role)
			adopt(p, r, &recs[r], mine.host_id);
	ret = link_peers(p, recs, nr < p->nr_slots ? nr : p->nr_slots,
			 p->timeout_ms);
	if (!ret)
		ret = pool_copy_start(p);
	if (!ret && p->dev_ptr)
		pool_dev_region(p);
	if (!ret)
		ret = pool_serve_start(p);
	if (!ret)
		ret = hmc_world_barrier(world, p->timeout_ms);
	if (ret)
		goto fail;
	free(recs);
	*out = p;
	return 0;
fail:
	free(recs);
	pool_free(p);
	return ret;
}

int hmc_pool_refresh(struct hmc_pool *p, int timeout_ms)
{
	struct pool_rec mine, *recs;
	uint32_t r, nr;
	int ret;

	if (!p)
		return -EINVAL;
	mine = *p->self;
	mine.role = POOL_ROLE_MEMBER;
	mine.base = (uintptr_t)p->base;
	mine.stride = p->stride;
	mine.host_slot = p->host_slot;
	mine.nr_slots = p->nr_slots;
	ret = gather(p, &mine, &recs, &nr, timeout_ms);
	if (ret)
		return ret;
	if (nr > p->nr_slots)
		nr = p->nr_slots;
	/* The joiners could all claim the range, or none joins. */
	ret = agree(p, true, timeout_ms);
	for (r = 0; r < nr && !ret; r++)
		if (recs[r].role == POOL_ROLE_NEW)
			adopt(p, r, &recs[r], mine.host_id);
	if (!ret)
		ret = link_peers(p, recs, nr, timeout_ms);
	if (!ret)
		ret = hmc_world_barrier(p->world, timeout_ms);
	free(recs);
	return ret;
}

int hmc_pool_destroy(struct hmc_pool *p)
{
	if (!p)
		return -EINVAL;
	pool_free(p);
	return 0;
}

static bool seg_exists(const struct hmc_pool *p, enum hmc_pool_mem mem,
		       uint32_t rank)
{
	return rank < p->nr_slots && p->ranks[rank].state == POOL_RANK_LIVE &&
	       (mem == HMC_POOL_HOST || mem == HMC_POOL_DEVICE);
}

uint64_t hmc_pool_size(const struct hmc_pool *p, enum hmc_pool_mem mem,
		       uint32_t rank)
{
	if (!p || !seg_exists(p, mem, rank) ||
	    pool_rank_check((struct hmc_pool *)p, rank))
		return 0;
	return mem == HMC_POOL_HOST ? p->ranks[rank].host_size :
				      p->ranks[rank].dev_size;
}

void *hmc_pool_ptr(const struct hmc_pool *p, enum hmc_pool_mem mem,
		   uint32_t rank)
{
	if (!hmc_pool_size(p, mem, rank))
		return NULL;
	return slot_of(p, rank) + (mem == HMC_POOL_DEVICE ? p->host_slot : 0);
}

int hmc_pool_rank_of(const struct hmc_pool *p, const void *gaddr)
{
	uintptr_t a = (uintptr_t)gaddr, base;

	if (!p)
		return -EINVAL;
	base = (uintptr_t)p->base;
	if (a < base || a - base >= (uintptr_t)p->nr_slots * p->stride)
		return -EINVAL;
	return (int)((a - base) / p->stride);
}

int pool_user_find(struct hmc_pool *p, uintptr_t a, size_t len,
		   const struct pool_user_range **found)
{
	size_t i;

	for (i = 0; i < p->nr_user; i++) {
		const struct pool_user_range *u = &p->user[i];

		if (a >= u->start && a - u->start < u->len) {
			*found = u;
			return len <= u->len - (a - u->start) ? 0 : -ERANGE;
		}
	}
	*found = NULL;
	return 0;
}

/* The first gap of @len bytes in the user memory room, or -ENOSPC. */
static int64_t user_room(const struct hmc_pool *p, size_t len)
{
	size_t at = 0, i;

again:
	if (len > p->user_size || at > p->user_size - len)
		return -ENOSPC;
	for (i = 0; i < p->nr_user; i++) {
		const struct pool_user_range *u = &p->user[i];

		if (u->moved && at < u->user_off + u->len &&
		    u->user_off < at + len) {
			at = u->user_off + u->len;
			goto again;
		}
	}
	return (int64_t)at;
}

/*
 * Move @u's bytes into the room and map the room at its address; false
 * (and the range as it was) where that cannot be done.
 */
static bool user_move(struct hmc_pool *p, struct pool_user_range *u)
{
	char *room;
	int64_t at;

	if (u->type != HMC_MEM_CPU || p->export_fd < 0 ||
	    (u->start | u->len) & (p->page - 1))
		return false;
	at = user_room(p, u->len);
	if (at < 0)
		return false;
	room = (char *)hmc_buf_ptr(p->buf) + p->user_off + at;
	memcpy(room, (void *)u->start, u->len);
	if (mmap((void *)u->start, u->len, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, p->export_fd,
		 (off_t)(p->user_off + at)) == MAP_FAILED) {
		pr_debug("pool: mapping the ConnBuffer at %#lx: %s; copies of it stage",
			 (unsigned long)u->start, strerror(errno));
		return false;
	}
	u->moved = true;
	u->user_off = (size_t)at;
	return true;
}

/*
 * Private anonymous pages back under a moved range, with its bytes, which
 * the room still holds. (Not mremap(): UCX's memory hooks, where UCX is
 * loaded, move a MREMAP_FIXED mapping elsewhere.)
 */
static int user_restore(struct hmc_pool *p, const struct pool_user_range *u)
{
	if (mmap((void *)u->start, u->len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		return -errno;
	memcpy((void *)u->start,
	       (char *)hmc_buf_ptr(p->buf) + p->user_off + u->user_off, u->len);
	return 0;
}

/*
 * A range that stays where it is becomes a memory region of ours, where a
 * transport up takes it: copies between it and remote segments then go
 * one-sided, not staged through the window.
 */
static void user_region(struct hmc_pool *p, struct pool_user_range *u)
{
	HMC_OPTS(hmc_mr_opts, o, .mem_type = u->type, .device = p->dev_id);

	if (hmc_comm_mr_reg(p->comm, (void *)u->start, u->len, &o, &u->mr))
		u->mr = 0;
}

int hmc_pool_register_user_mem(struct hmc_pool *p, void *addr, size_t len,
			       enum hmc_mem_type type)
{
	uintptr_t a = (uintptr_t)addr;
	struct pool_user_range *u;
	size_t i;
	int ret = 0;

	if (!p || !addr || !len || a + len < a ||
	    (type != HMC_MEM_CPU && (type != p->dev_type ||
				     p->dev_type == HMC_MEM_CPU)))
		return -EINVAL;
	if (a - (uintptr_t)p->base < (uintptr_t)p->nr_slots * p->stride ||
	    (uintptr_t)p->base - a < len)
		return -EINVAL;		/* pool memory is no user memory */
	pthread_mutex_lock(&p->lock);
	for (i = 0; i < p->nr_user; i++)
		if (a < p->user[i].start + p->user[i].len &&
		    p->user[i].start < a + len)
			ret = -EEXIST;
	if (!ret) {
		u = realloc(p->user, (p->nr_user + 1) * sizeof(*u));
		if (u) {
			p->user = u;
			u = &u[p->nr_user];
			*u = (struct pool_user_range){ .start = a, .len = len,
						       .type = type };
			if (!user_move(p, u))
				user_region(p, u);
			p->nr_user++;
		} else {
			ret = -ENOMEM;
		}
	}
	pthread_mutex_unlock(&p->lock);
	return ret;
}

int hmc_pool_unregister_user_mem(struct hmc_pool *p, void *addr)
{
	uint32_t mr = 0;
	int ret = -ENOENT;
	size_t i;

	if (!p)
		return -EINVAL;
	pthread_mutex_lock(&p->lock);
	for (i = 0; i < p->nr_user; i++) {
		if (p->user[i].start != (uintptr_t)addr)
			continue;
		ret = p->user[i].moved ? user_restore(p, &p->user[i]) : 0;
		if (!ret) {
			mr = p->user[i].mr;
			p->user[i] = p->user[--p->nr_user];
		}
		break;
	}
	pthread_mutex_unlock(&p->lock);
	/* outside the lock: it waits for the copies posted from it */
	if (mr)
		hmc_comm_mr_dereg(p->comm, mr);
	return ret;
}

int hmc_pool_barrier(struct hmc_pool *p, int timeout_ms)
{
	return p ? hmc_world_barrier(p->world, timeout_ms) : -EINVAL;
}

int hmc_pool_allgather(struct hmc_pool *p, const void *send, size_t len,
		       void *recv, int timeout_ms)
{
	return p ? hmc_world_allgather(p->world, send, len, recv, timeout_ms) :
		   -EINVAL;
}

int hmc_pool_set_extra(struct hmc_pool *p, const void *data, size_t len)
{
	char *area;
	uint64_t n = len;

	if (!p || (len && !data) || len > HMC_POOL_EXTRA_MAX)
		return -EINVAL;
	area = (char *)hmc_buf_ptr(p->buf) +
	       pool_extra_off(p, p->ranks[p->rank].host_size);
	memcpy(area + 8, data, len);
	/* The length last: a reader sees the old length or the new data. */
	__atomic_store_n((uint64_t *)area, n, __ATOMIC_RELEASE);
	return 0;
}

int64_t hmc_pool_get_extra(struct hmc_pool *p, uint32_t rank, void *buf,
			   size_t len, int timeout_ms)
{
	size_t off, stage;
	uint64_t n;
	char *local;
	int ret;

	if (!p || (len && !buf))
		return -EINVAL;
	ret = pool_rank_check(p, rank);
	if (ret)
		return ret;
	local = hmc_buf_ptr(p->buf);
	off = pool_extra_off(p, p->ranks[rank].host_size);
	if (rank == p->rank) {
		n = __atomic_load_n((uint64_t *)(local + off), __ATOMIC_ACQUIRE);
		memcpy(buf, local + off + 8, min_t(size_t, n, len));
		return (int64_t)n;
	}
	pthread_mutex_lock(&p->stage_lock);
	stage = pool_stage_off(p, p->ranks[p->rank].host_size);
	ret = hmc_comm_get(p->comm, rank, stage, off, POOL_EXTRA_AREA);
	if (!ret) {
		memcpy(&n, local + stage, 8);
		if (n > HMC_POOL_EXTRA_MAX)
			ret = -EPROTO;
		else
			memcpy(buf, local + stage + 8, min_t(size_t, n, len));
	}
	pthread_mutex_unlock(&p->stage_lock);
	return ret ? ret : (int64_t)n;
}

/* Subgroup tags: the key, then the phase (data, then release). */
static uint64_t group_tag(uint32_t key, uint32_t phase)
{
	return (uint64_t)key << 32 | phase;
}

static int group_index(const struct hmc_pool *p, const uint32_t *ranks,
		       size_t n)
{
	size_t i, j;
	int me = -1;

	for (i = 0; i < n; i++) {
		if (ranks[i] >= p->nr_slots)
			return -EINVAL;
		for (j = 0; j < i; j++)
			if (ranks[j] == ranks[i])
				return -EINVAL;
		if (ranks[i] == p->rank)
			me = (int)i;
	}
	return me;
}

/* Wait for @want from every other member, in order of @ranks. */
static int group_recv(struct hmc_pool *p, const uint32_t *ranks, size_t n,
		      uint64_t want, int64_t deadline)
{
	uint64_t tag;
	size_t i;
	int ret;

	for (i = 0; i < n; i++) {
		if (ranks[i] == p->rank)
			continue;
		ret = hmc_comm_recv_tag(p->comm, ranks[i], &tag,
					deadline_remaining_ms(deadline));
		if (ret)
			return ret;
		if (tag != want) {
			pr_debug("pool: subgroup: rank %u sent %#llx, not %#llx",
				 ranks[i], (unsigned long long)tag,
				 (unsigned long long)want);
			return -EPROTO;
		}
	}
	return 0;
}

int hmc_pool_group_allgather(struct hmc_pool *p, uint32_t key,
			     const uint32_t *ranks, size_t n, const void *send,
			     size_t len, void *recv, int timeout_ms)
{
	int64_t deadline = deadline_after_ms(timeout_ms);
	size_t i, stage, inbox;
	char *local;
	int me, ret = 0;

	if (!p || !ranks || !n || (len && (!send || !recv)) ||
	    len > POOL_INBOX_SIZE / n || len > POOL_STAGE_SIZE)
		return -EINVAL;
	me = group_index(p, ranks, n);
	if (me < 0)
		return me == -1 ? -EINVAL : me;
	for (i = 0; i < n; i++) {
		ret = pool_rank_check(p, ranks[i]);
		if (ret)
			return ret;
	}
	pthread_mutex_lock(&p->group_lock);
	local = hmc_buf_ptr(p->buf);
	if (len) {
		pthread_mutex_lock(&p->stage_lock);
		stage = pool_stage_off(p, p->ranks[p->rank].host_size);
		memcpy(local + stage, send, len);
	}
	/* Our part into every other member's inbox, at our index. */
	for (i = 0; i < n && !ret; i++) {
		if (ranks[i] == p->rank)
			continue;
		inbox = pool_inbox_off(p, p->ranks[ranks[i]].host_size);
		ret = len ? hmc_comm_put_signal(p->comm, ranks[i], stage,
						inbox + (size_t)me * len, len,
						group_tag(key, 0)) :
			    hmc_comm_send_tag(p->comm, ranks[i],
					      group_tag(key, 0));
	}
	if (len)
		pthread_mutex_unlock(&p->stage_lock);
	if (!ret)
		ret = group_recv(p, ranks, n, group_tag(key, 0), deadline);
	if (!ret && len) {
		inbox = pool_inbox_off(p, p->ranks[p->rank].host_size);
		for (i = 0; i < n; i++)
			memcpy((char *)recv + i * len,
			       i == (size_t)me ? send : local + inbox + i * len,
			       len);
	}
	/* Nobody writes our inbox again before everyone has read theirs. */
	for (i = 0; i < n && !ret && len; i++)
		if (ranks[i] != p->rank)
			ret = hmc_comm_send_tag(p->comm, ranks[i],
						group_tag(key, 1));
	if (!ret && len)
		ret = group_recv(p, ranks, n, group_tag(key, 1), deadline);
	pthread_mutex_unlock(&p->group_lock);
	return ret;
}

int hmc_pool_group_barrier(struct hmc_pool *p, uint32_t key,
			   const uint32_t *ranks, size_t n, int timeout_ms)
{
	return hmc_pool_group_allgather(p, key, ranks, n, NULL, 0, NULL,
					timeout_ms);
}
