/* SPDX-License-Identifier: MIT */
/*
 * libhmc_shmem internals.
 *
 * Layers, each file using only those above it:
 *   boot.c   rank, size and one allgather from the launcher (or a singleton)
 *   seg.c    the symmetric segments: the heap and the program's data
 *            segment, each in a memfd that every PE of the host maps, and
 *            the translation of a local symmetric address to a peer's copy
 *   peer.c   every access to another PE's memory: by address for mapped
 *            peers, by requests its progress thread serves for the others
 *   init.c   setup, queries, fatal errors
 *   heap.c   the symmetric heap allocator
 *   team.c   teams, barriers, contexts
 *   rma.c, amo.c, p2p.c, coll.c, lock.c   the API families
 *
 * Why shared mappings: on one host a peer's symmetric memory is then plain
 * memory, so put and get are copies, AMOs are CPU atomics (atomic with
 * respect to each other and to the target's own AMOs on every path),
 * shmem_ptr() returns a usable pointer, and no target thread is involved.
 * PEs on other hosts (or in other pid or network namespaces, or with
 * HMC_SHMEM_MAP=0) are "remote": peer.c reaches them by messages on the
 * world's communicator, served by the target's progress thread with the
 * same copies and CPU atomics.
 */
#ifndef HMC_SHMEM_INTERNAL_H
#define HMC_SHMEM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <shmem.h>
#include <shmemx.h>

#define SHM_MAX_DATA_SEGS	4
/* Team slots: each team's barrier counters live at one slot of the heap's
 * internal area of every member; disjoint teams may share a slot. */
#define SHM_MAX_TEAMS		64
/*
 * Group sync arrays (team slots and pSync), in 64-bit words: dissemination
 * counters, one per round (16 rounds cover SHM_BOOT_MAX_PES); in groups of
 * up to SHM_FLAT_MAX members, one arrival counter per member and an inbox
 * of one equal part per member (see coll.c); one published word at the
 * end. Every word is back at zero once all members are through.
 */
#define SHM_SYNC_ROUNDS		16
#define SHM_FLAT_MAX		32
#define SHM_SYNC_FLAG		SHM_SYNC_ROUNDS
#define SHM_SYNC_INBOX		(SHM_SYNC_FLAG + SHM_FLAT_MAX)
#define SHM_SYNC_WORD		(SHMEM_SYNC_SIZE - 1)
#define SHM_INBOX_BYTES		((SHM_SYNC_WORD - SHM_SYNC_INBOX) * 8)

/* One symmetric segment of a PE as this process sees it. */
struct shm_seg {
	uintptr_t base;		/* local address of the PE's own copy */
	size_t len;
};

/* What each PE publishes at start-up. */
struct shm_peer_info {
	/* Where @pid means this process: the kernel's boot id and our pid
	 * namespace. PEs that differ in either cannot map each other; those
	 * in different network namespaces do not (they stand for hosts). */
	char boot_id[40];
	uint64_t pid_ns;
	uint64_t net_ns;
	int32_t pid;
	int32_t heap_fd;
	uint64_t heap_len;
	uint32_t ndata;
	uint32_t map;		/* HMC_SHMEM_MAP is not off */
	int32_t data_fd[SHM_MAX_DATA_SEGS];
	uint64_t data_base[SHM_MAX_DATA_SEGS];
	uint64_t data_len[SHM_MAX_DATA_SEGS];
};

/* Per-team-slot state in the internal area of the heap. */
struct shm_slot {
	uint64_t sync[SHMEM_SYNC_SIZE];
};

/* The start of every heap: the library's own symmetric objects. */
struct shm_internal {
	struct shm_slot slot[SHM_MAX_TEAMS];
	/* What a mapped peer's shmem_global_exit() asks of this PE (seg.c). */
	uint32_t exit_word;
	uint32_t reserved;
};

struct hmc_shmem_team {
	int start;		/* world PE of member 0 */
	int stride;		/* world PE distance between members */
	int size;		/* members; 0 for a team being destroyed */
	int my_index;		/* our index, or -1 */
	int slot;		/* barrier slot index */
	int predefined;
	bool local;		/* every member is mapped */
	shmem_team_config_t config;
	int nctx;		/* contexts created from the team */
};

struct hmc_shmem_ctx {
	struct hmc_shmem_team *team;
	long options;
};

struct shm_state {
	int initialized;
	int finalized;
	int thread_level;
	int me;
	int npes;
	/* Our segments and every PE's mapping of them (index by PE); NULL
	 * for remote PEs. */
	struct shm_seg heap;
	size_t heap_internal;	/* bytes of the internal area at the start */
	unsigned char **peer_heap;
	unsigned int ndata;
	struct shm_seg data[SHM_MAX_DATA_SEGS];
	unsigned char **peer_data[SHM_MAX_DATA_SEGS];
	uint64_t slots_used;	/* team slot bitmap */
	unsigned int spin_limit; /* polls a waiter spins before yielding */
	unsigned int yield_limit; /* then polls it yields before sleeping */
	long sleep_ns;		/* then how long it sleeps between polls */
};

extern struct shm_state shm;

/* boot.c */
#define SHM_BOOT_MAX_PES	4096
/* On failure, @why (if it got one) says why in words. */
int shm_boot_init(const shmemx_init_attr_t *attr, unsigned int flags,
		  int *rank, int *size, char *why, size_t why_len);
int shm_boot_allgather(const void *mine, size_t len, void *all);
void shm_boot_fini(void);
/* End the process without finalize, an exit the launcher counts as clean. */
void shm_boot_exit(int status) __attribute__((noreturn));

/* The world's communicator, NULL for a job of one PE. */
struct hmc_comm *shm_boot_comm(void);
/* Connect to @pe if the world connects lazily (0 if already). */
int shm_boot_connect(int pe);
int shm_boot_timeout_ms(void);
/* Every PE has entered it (the world's, not over the communicator). */
int shm_boot_barrier(void);

/*
 * seg.c: global_exit's end of the job on this host: every other mapped PE
 * exits with @status, once this process is gone.
 */
void shm_seg_exit_peers(int status);

/* seg.c */
/* On failure, @why (if it got one) says why in words. */
int shm_seg_init(size_t heap_size, char *why, size_t why_len);
void shm_seg_fini(void);
/*
 * The address of @addr's copy on @pe, or NULL if @addr is not symmetric
 * or @pe is remote.
 */
void *shm_peer_addr(const void *addr, int pe);
/* Segment index (0 the heap, 1 + i data segment i) and offset of a local
 * symmetric address, or -1 if @addr is not symmetric. */
int shm_sym_locate(const void *addr, uint64_t *off);
/* Our own address of [@off, +@len) of segment @seg, or NULL if outside. */
void *shm_sym_local(unsigned int seg, uint64_t off, uint64_t len);
struct shm_internal *shm_internal(int pe);

static inline bool shm_pe_mapped(int pe)
{
	return shm.peer_heap[pe] != NULL;
}

/* peer.c: every access to another PE's symmetric memory. */
enum shm_amo_op {
	SHM_AMO_FETCH,
	SHM_AMO_SET,
	SHM_AMO_SWAP,
	SHM_AMO_CSWAP,
	SHM_AMO_ADD,
	SHM_AMO_AND,
	SHM_AMO_OR,
	SHM_AMO_XOR,
	SHM_AMO_NR,
};

/* Start serving remote PEs, if there are any. */
int shm_peer_init(char *why, size_t why_len);
/* Stop serving (after the last barrier): tell every peer we leave. */
void shm_peer_fini(void);
/* Whether some PE is remote (then every PE runs a progress thread). */
bool shm_peer_remote(void);
/* Whether some peer's puts land in our memory without telling us. */
bool shm_peer_silent(void);
/* End every other PE with @status (global_exit); false if none is remote. */
bool shm_peer_exit(int status);
/*
 * Once a peer asked this PE to exit, failures that follow (peers going
 * as asked) are no error of ours: exit with the status asked for.
 */
void shm_peer_exit_if_asked(void);
/*
 * @dest, @src and the AMO's @addr are our own symmetric addresses, already
 * checked; the access goes to their copy on @pe. A put is complete locally
 * on return, remotely after shm_quiet(); a get and a fetching AMO when
 * they return. @call names the routine in fatal errors.
 */
void shm_put(const char *call, int pe, void *dest, const void *src,
	     size_t len);
void shm_get(const char *call, int pe, void *dest, const void *src,
	     size_t len);
/*
 * shm_get() of each of @n: the requests to remote PEs all go out before
 * the first answer is awaited, so that their round trips overlap.
 */
struct shm_get_req {
	int pe;
	void *dest;
	const void *src;
	size_t len;
};
void shm_get_all(const char *call, const struct shm_get_req *v, size_t n);
/* @n elements of @size bytes, @dst and @sst elements apart at each end. */
void shm_iput(const char *call, int pe, void *dest, const void *src,
	      size_t dst, size_t sst, size_t n, size_t size);
void shm_iget(const char *call, int pe, void *dest, const void *src,
	      size_t dst, size_t sst, size_t n, size_t size);
/* An AMO of @size (4 or 8) bytes; the old value if @fetch. */
uint64_t shm_amo(const char *call, int pe, void *addr, unsigned int size,
		 enum shm_amo_op op, uint64_t val, uint64_t cond, bool fetch);
/* The CPU atomic both paths apply to the memory at @p: the old value. */
uint64_t shm_amo_apply(void *p, unsigned int size, enum shm_amo_op op,
		       uint64_t val, uint64_t cond);
/*
 * Count one arrival into @pe's copy of the synchronisation word @counter,
 * which @pe waits for and takes back down itself (barriers): an atomic
 * add that quiet need not wait for, since nothing but its target's wait
 * depends on when it lands, and requests to one PE land in order.
 */
void shm_arrive(const char *call, int pe, uint64_t *counter);
/* Every put and AMO issued so far is applied at its target. */
void shm_quiet(void);
/* Order our one-sided puts before what follows (shmem_fence). */
void shm_peer_fence(void);

/* init.c */
void shm_fatal(const char *call, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 2, 3)));
void shm_check_init(const char *call);

/*
 * A fatal error naming @call unless @pe is a PE and [@addr, +@len) a local
 * symmetric range. An empty range (@len 0) touches no memory, so any
 * address will do (programs pass NULL).
 */
static inline void shm_check_addr(const char *call, const void *addr,
				  size_t len, int pe)
{
	if (pe < 0 || pe >= shm.npes)
		shm_fatal(call, "PE %d is out of range [0, %d)", pe, shm.npes);
	if (!len)
		return;
	if (!shm_peer_addr(addr, shm.me) ||
	    !shm_peer_addr((const char *)addr + len - 1, shm.me))
		shm_fatal(call, "%p (%zu bytes) is not a symmetric data object",
			  addr, len);
}

/* heap.c */
void shm_heap_init(void *base, size_t len);

/* team.c */

/*
 * The PEs of a collective: a team or an active set, both arithmetic
 * progressions of world PEs, with the symmetric sync array they use.
 */
struct shm_group {
	int start;
	int stride;
	int size;
	int me;			/* our index in the group */
	bool local;		/* every member is mapped */
	uint64_t *sync;		/* local symmetric address, SHMEM_SYNC_SIZE words */
};

void shm_team_init(void);
int shm_team_world_pe(const struct hmc_shmem_team *team, int index);
/* A world PE for @pe of @ctx's team, or a fatal error naming @call. */
int shm_ctx_pe(const char *call, shmem_ctx_t ctx, int pe);
/* The group of @team; false for SHMEM_TEAM_INVALID. */
bool shm_team_group(shmem_team_t team, struct shm_group *g);
/* The group of an active set, or a fatal error naming @call. */
void shm_set_group(const char *call, int start, int log_stride, int size,
		   long *psync, struct shm_group *g);
void shm_group_barrier(const struct shm_group *g);
void shm_team_barrier(shmem_team_t team);

/*
 * peer.c: a count of the requests the progress thread applied to our
 * memory, and a wait until it passes @seen (or @timeout_ns pass), so that
 * a PE waiting for what remote peers write sleeps until they write.
 */
uint32_t shm_peer_applied(void);
void shm_peer_wait_applied(uint32_t seen, long timeout_ns);

/* p2p.c: polling that leaves the CPU to others once it has spun a while. */
struct shm_backoff {
	unsigned int spins;
	uint32_t applied;	/* shm_peer_applied() before the last poll */
};
void shm_backoff_init(void);
void shm_backoff(struct shm_backoff *b);

#endif /* HMC_SHMEM_INTERNAL_H */
