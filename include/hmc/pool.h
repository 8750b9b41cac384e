/* SPDX-License-Identifier: MIT */
/*
 * hmc_pool: one global address space over the host and device memory of
 * every rank of a world (memfabric_hybrid's Big Memory and SHM).
 *
 * Addresses. hmc_pool_create() reserves one range at the same address in
 * every rank (agreed collectively, MAP_FIXED_NOREPLACE) and gives each
 * rank r a slot at base + r * stride: its host segment, then its device
 * segment. A global address is a pointer into that range; the host
 * segments of this rank and of peers on this host (same kernel, same
 * network namespace) whose memory can be shared (memfd or /dev/hmc
 * ConnBuffers, as libhmc makes them) are mapped into their slots and may
 * be dereferenced; every other slot is reserved and unmapped
 * (touching it faults, so use the copy calls). Copies to and from remote
 * host segments go through a communicator over the host segments (shm,
 * verbs or UCX, as HMC_TRANSPORT_AUTO picks), staged through a small
 * window of the ConnBuffer where the local side is not the segment
 * itself. Another rank's device segment (on this host or not) is reached
 * through its owner, which moves the bytes between the wire and its
 * device with its runtime, pipelined through message slots of both
 * ConnBuffers; a NIC never takes device memory directly, as a
 * communicator registers one memory region, its ConnBuffer.
 *
 * Copies are bounds-checked: a range must lie inside one segment of one
 * rank (-ERANGE otherwise, straddling included). A rank that left or
 * failed loses its segments: hmc_pool_ptr() gives NULL for it, and copies
 * touching its slot fail with -ECONNRESET, never fault (a copy in flight
 * when its peer dies fails the same way); a slot that never had a member
 * gives -ENXIO. A rank that joins the world later (hmc_world_join(), a
 * departed rank's number or a new one) enters the pool by calling
 * hmc_pool_create() while the members call hmc_pool_refresh(), e.g. on the
 * world's JOINED event; its segments then appear in every member's view.
 *
 * hmc_pool_create(), hmc_pool_refresh(), hmc_pool_barrier() and
 * hmc_pool_allgather() run the world's collectives: like those, one thread
 * at a time per world, in the same order on every rank. Copies may run
 * from any number of threads. The barriers (hmc_pool_barrier(),
 * hmc_pool_group_barrier()) order the copies: a copy a member finished
 * before one (returned, or waited for) happens before every copy any
 * member starts after it, those that owners serve included.
 *
 * Every call returns 0 or a negative errno and has a deadline.
 */
#ifndef HMC_POOL_H
#define HMC_POOL_H

#include <hmc/hmc.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hmc_world;
struct hmc_pool;

/* Which segment of a rank hmc_pool_ptr() names. */
enum hmc_pool_mem {
	HMC_POOL_HOST = 1,
	HMC_POOL_DEVICE = 2,
};

struct hmc_pool_opts {
	size_t sz;
	uint64_t host_size;		/* this rank's host segment (may be 0) */
	uint64_t device_size;		/* this rank's device segment (may be 0) */
	uint32_t device_type;		/* enum hmc_mem_type, with device_size */
	int32_t device_id;
	/* Deadline of collectives and copies: 0 takes 30000 ms. */
	int32_t timeout_ms;
	uint32_t flags;			/* none yet: 0 */
	/*
	 * Room in this rank's ConnBuffer for user memory registered with
	 * hmc_pool_register_user_mem() (0: none), so that the transports
	 * reach it without a staging copy; rounded up to pages. The
	 * ConnBuffer holds it whether used or not (mlocked where allowed).
	 */
	uint64_t user_mem_size;
};

/*
 * Create the pool over every member of @world (collective: every member
 * calls it). Segment sizes may differ between ranks; the stride fits the
 * largest. Device segments come from hmc_mem_alloc() of @device_type.
 */
int hmc_pool_create(struct hmc_world *world, const struct hmc_pool_opts *opts,
		    struct hmc_pool **pool);

/*
 * The members' side of a join (collective over the world, with the
 * joiners' hmc_pool_create()): the ranks that joined get their slots.
 * -EADDRINUSE if a joiner could not take the pool's range (it has no
 * slot then); -ENOSPC on the joiner if its rank or segments do not fit.
 */
int hmc_pool_refresh(struct hmc_pool *pool, int timeout_ms);

/* Unmap everything and free this rank's segments (not collective). */
int hmc_pool_destroy(struct hmc_pool *pool);

/* The global address of @rank's segment of @mem, or NULL if it has none. */
void *hmc_pool_ptr(const struct hmc_pool *pool, enum hmc_pool_mem mem,
		   uint32_t rank);

/* Size of @rank's segment of @mem (0 if none, or the rank is gone). */
uint64_t hmc_pool_size(const struct hmc_pool *pool, enum hmc_pool_mem mem,
		       uint32_t rank);

/* The rank whose slot holds @gaddr, or -EINVAL outside the pool. */
int hmc_pool_rank_of(const struct hmc_pool *pool, const void *gaddr);

/*
 * Copy kinds, memfabric's: L is this process's device memory (of the
 * pool's device type), H its host memory, G any global address, GH a
 * global address in a host segment. AUTO infers them from the addresses.
 */
enum hmc_pool_copy_kind {
	HMC_POOL_L2G,
	HMC_POOL_G2L,
	HMC_POOL_H2G,
	HMC_POOL_G2H,
	HMC_POOL_G2G,
	HMC_POOL_L2GH,
	HMC_POOL_GH2L,
	HMC_POOL_GH2H,
	HMC_POOL_H2GH,
	HMC_POOL_AUTO,
};

#define HMC_POOL_COPY_ASYNC	(1U << 0)	/* return at once; hmc_pool_wait() */

/*
 * Copy @len bytes from @src to @dst as @kind says. Synchronous unless
 * HMC_POOL_COPY_ASYNC: then the copy is queued and hmc_pool_wait() reports
 * its result (and of every other queued copy). -EINVAL for an address
 * that does not match its kind, -ERANGE for a range outside one segment.
 */
int hmc_pool_copy(struct hmc_pool *pool, void *dst, const void *src,
		  size_t len, enum hmc_pool_copy_kind kind, uint32_t flags);

/*
 * Wait until every copy queued with HMC_POOL_COPY_ASYNC has finished: 0,
 * the first error among them, or -ETIMEDOUT after @timeout_ms (they go on).
 */
int hmc_pool_wait(struct hmc_pool *pool, int timeout_ms);

struct hmc_pool_copy_desc {
	void *dst;
	const void *src;
	uint64_t len;
};

/* @n copies of one @kind, as one (each checked before any starts). */
int hmc_pool_copy_batch(struct hmc_pool *pool,
			const struct hmc_pool_copy_desc *descs, size_t n,
			enum hmc_pool_copy_kind kind, uint32_t flags);

/*
 * Declare [@addr, @addr + @len) of this process as memory of @type (CPU or
 * the pool's device type) so that AUTO copies classify it: device memory
 * not from the pool's runtime cannot be told from host memory otherwise.
 * -EEXIST if it overlaps a registered range.
 *
 * A CPU range whose address and length are page-aligned is also made
 * reachable by the transports, where the ConnBuffer can be shared (memfd
 * or /dev/hmc) and its user_mem_size has room: its bytes move into that
 * room and the room is mapped at @addr (MAP_SHARED, readable and
 * writable), so the range keeps its address and contents while copies to
 * and from it go straight between it and the wire, with no staging copy
 * (it is then shared memory: a child forked meanwhile shares it). No
 * other thread may use it, nor a queued copy, during this call or the
 * unregistration, which gives it back private anonymous pages with its
 * contents; it must be unregistered before it is unmapped or freed
 * (hmc_pool_destroy() gives it back too). Other ranges are only
 * classified; their copies stage.
 */
int hmc_pool_register_user_mem(struct hmc_pool *pool, void *addr, size_t len,
			       enum hmc_mem_type type);
int hmc_pool_unregister_user_mem(struct hmc_pool *pool, void *addr);

/* SHM control: host-side collectives over the pool's members. */
int hmc_pool_barrier(struct hmc_pool *pool, int timeout_ms);
/* @recv: hmc_world_size() * @len bytes, rank r's at r * @len. */
int hmc_pool_allgather(struct hmc_pool *pool, const void *send, size_t len,
		       void *recv, int timeout_ms);

/* The "extra context": up to HMC_POOL_EXTRA_MAX bytes every rank can read. */
#define HMC_POOL_EXTRA_MAX	(64U << 10)
int hmc_pool_set_extra(struct hmc_pool *pool, const void *data, size_t len);
/* @rank's extra context into @buf (@len bytes at most): its length. */
int64_t hmc_pool_get_extra(struct hmc_pool *pool, uint32_t rank, void *buf,
			   size_t len, int timeout_ms);

/*
 * Subgroups: the @n ranks of @ranks (this one among them) meet under
 * @key; every member passes the same key and ranks. Keys keep concurrent
 * subgroups apart.
 */
int hmc_pool_group_barrier(struct hmc_pool *pool, uint32_t key,
			   const uint32_t *ranks, size_t n, int timeout_ms);
int hmc_pool_group_allgather(struct hmc_pool *pool, uint32_t key,
			     const uint32_t *ranks, size_t n, const void *send,
			     size_t len, void *recv, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* HMC_POOL_H */
