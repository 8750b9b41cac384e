// SPDX-License-Identifier: MIT
/*
 * Collectives over a group (a team, or a deprecated active set with its
 * pSync): each PE pulls what it needs from its peers' source objects
 * (copies from mapped peers, gets from remote ones: peer.c) between two
 * barriers. The first barrier says every source is
 * ready; the second that no peer still reads ours, so the routine may
 * return (the standard lets the caller reuse source and dest then).
 *
 * Reductions up to SMALL_REDUCE bytes are computed whole by every PE, in
 * member order, so every PE gets bit-identical results. Larger ones are
 * split in one chunk per member: a member reduces its chunk (again in
 * member order) and writes it into every member's dest, so the work and
 * the memory traffic are spread evenly.
 *
 * Groups of up to SHM_FLAT_MAX members reduce what fits their sync
 * array's inbox in one step instead (flat_reduce): every member copies
 * its source into its part of every peer's inbox and counts itself in,
 * then reduces what arrived. A member waits only until all have arrived,
 * where two barriers wait through four dissemination rounds; with more
 * PEs than CPUs every round is a trip through the scheduler. Only groups
 * whose members are all mapped do (its writers poll the peer's counters);
 * the others take the barrier path, whose every access is a get, put or
 * AMO that peer.c carries to any PE.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SMALL_REDUCE	16384
/* Members whose data one shm_get_all() fetches at a time. */
#define GET_WINDOW	16

typedef void (*red_fn)(void *acc, const void *in, size_t n);

static int gpe(const struct shm_group *g, int i)
{
	return g->start + i * g->stride;
}

static void *at(const void *addr, int pe)
{
	return shm_peer_addr(addr, pe);
}

static void broadcast(const char *call, const struct shm_group *g,
		      void *dest, const void *source, size_t len, int root,
		      bool root_dest)
{
	shm_check_addr(call, source, len, shm.me);
	shm_group_barrier(g);
	if (len && g->me != root)
		shm_get(call, gpe(g, root), dest, source, len);
	else if (len && root_dest && dest != source)
		memmove(dest, source, len);
	shm_group_barrier(g);
}

static void fcollect(const char *call, const struct shm_group *g,
		     void *dest, const void *source, size_t len)
{
	struct shm_get_req v[GET_WINDOW];
	int i, k;

	shm_check_addr(call, source, len, shm.me);
	shm_group_barrier(g);
	for (i = 0; len && i < g->size; i += k) {
		for (k = 0; k < GET_WINDOW && i + k < g->size; k++)
			v[k] = (struct shm_get_req){
				.pe = gpe(g, i + k), .src = source, .len = len,
				.dest = (char *)dest + (size_t)(i + k) * len };
		shm_get_all(call, v, (size_t)k);
	}
	shm_group_barrier(g);
}

static void collect(const char *call, const struct shm_group *g, void *dest,
		    const void *source, size_t len)
{
	size_t off = 0;
	int i;

	shm_check_addr(call, source, len, shm.me);
	__atomic_store_n(&g->sync[SHM_SYNC_WORD], len, __ATOMIC_RELAXED);
	shm_group_barrier(g);
	for (i = 0; i < g->size; i++) {
		int pe = gpe(g, i);
		size_t n = shm_amo(call, pe, &g->sync[SHM_SYNC_WORD], 8,
				   SHM_AMO_FETCH, 0, 0, true);

		shm_get(call, pe, (char *)dest + off, source, n);
		off += n;
	}
	shm_group_barrier(g);
	/* pSync goes back to SHMEM_SYNC_VALUE; no peer reads it any more. */
	__atomic_store_n(&g->sync[SHM_SYNC_WORD], 0, __ATOMIC_RELAXED);
}

static void alltoalls(const char *call, const struct shm_group *g,
		      void *dest, const void *source, ptrdiff_t dst,
		      ptrdiff_t sst, size_t n, size_t size)
{
	size_t span = ((n * (size_t)g->size - 1) * (size_t)sst + 1) * size;
	int i;

	if (dst < 1 || sst < 1)
		shm_fatal(call, "strides %td and %td must be at least 1", dst,
			  sst);
	if (n)
		shm_check_addr(call, source, span, shm.me);
	shm_group_barrier(g);
	for (i = 0; n && i < g->size; i++) {
		const unsigned char *s = source;
		unsigned char *d = dest;

		if (dst == 1 && sst == 1)
			shm_get(call, gpe(g, i), d + (size_t)i * n * size,
				s + (size_t)g->me * n * size, n * size);
		else
			shm_iget(call, gpe(g, i),
				 d + (size_t)i * n * (size_t)dst * size,
				 s + (size_t)g->me * n * (size_t)sst * size,
				 (size_t)dst, (size_t)sst, n, size);
	}
	shm_group_barrier(g);
}

/*
 * Arrival counter i of a peer's sync array says that member i's part of
 * its inbox holds data not yet reduced; the peer takes it back to zero
 * after reading and clearing the part, so a writer that finds it at zero
 * may write again. Counting rather than flagging lets a member that has
 * gone on to the next collective (and its barrier) count in early.
 */
static void flat_reduce(const struct shm_group *g, void *dest,
			const void *source, size_t n, size_t size, red_fn op)
{
	size_t bytes = n * size;
	/* Inbox parts are 8-byte aligned only; ops want their type's. */
	unsigned char acc[SHM_INBOX_BYTES] __attribute__((aligned(16)));
	unsigned char in[SHM_INBOX_BYTES] __attribute__((aligned(16)));
	unsigned char *inbox = (unsigned char *)&g->sync[SHM_SYNC_INBOX];
	int i;

	for (i = 0; i < g->size; i++) {
		struct shm_backoff b = { 0 };
		uint64_t *flag;

		if (i == g->me)
			continue;
		flag = at(&g->sync[SHM_SYNC_FLAG + g->me], gpe(g, i));
		while (__atomic_load_n(flag, __ATOMIC_ACQUIRE))
			shm_backoff(&b);
		memcpy(at(inbox + (size_t)g->me * bytes, gpe(g, i)), source,
		       bytes);
		__atomic_fetch_add(flag, 1, __ATOMIC_RELEASE);
	}
	for (i = 0; i < g->size; i++) {
		struct shm_backoff b = { 0 };
		uint64_t *flag = &g->sync[SHM_SYNC_FLAG + i];
		unsigned char *part = inbox + (size_t)i * bytes;

		if (i == g->me) {
			memcpy(in, source, bytes);
		} else {
			while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE))
				shm_backoff(&b);
			memcpy(in, part, bytes);
			memset(part, 0, bytes);
			__atomic_fetch_sub(flag, 1, __ATOMIC_RELEASE);
		}
		if (i)
			op(acc, in, n);
		else
			memcpy(acc, in, bytes);
	}
	memcpy(dest, acc, bytes);
}

/* Combine @cnt elements of @src's copy on @pe into @acc. */
/*
 * Reduce @cnt elements at @src of every member into @acc, in member order:
 * @win members at a time, whose remote parts come into @scratch (a part
 * per member of the window) with overlapping round trips.
 */
static void reduce_all(const char *call, const struct shm_group *g,
		       unsigned char *acc, unsigned char *scratch, int win,
		       const void *src, size_t cnt, size_t size, red_fn op)
{
	struct shm_get_req v[GET_WINDOW];
	size_t part = cnt * size, nv;
	int i, k, m;

	for (i = 0; i < g->size; i += m) {
		m = g->size - i < win ? g->size - i : win;
		for (k = 0, nv = 0; k < m; k++)
			if (!at(src, gpe(g, i + k)))
				v[nv++] = (struct shm_get_req){
					.pe = gpe(g, i + k), .src = src,
					.len = part,
					.dest = scratch + (size_t)k * part };
		shm_get_all(call, v, nv);
		for (k = 0; k < m; k++) {
			const void *p = at(src, gpe(g, i + k));

			if (!p)
				p = scratch + (size_t)k * part;
			if (i + k)
				op(acc, p, cnt);
			else
				memcpy(acc, p, part);
		}
	}
}

static void reduce(const char *call, const struct shm_group *g, void *dest,
		   const void *source, size_t n, size_t size, red_fn op)
{
	size_t bytes = n * size, per, lo = 0, cnt = n;
	unsigned char *tmp, *scratch = NULL;
	bool small = bytes <= SMALL_REDUCE || g->size == 1;
	int i, win;

	if (!n)
		return;
	shm_check_addr(call, source, bytes, shm.me);
	shm_check_addr(call, dest, bytes, shm.me);
	if (g->local && g->size <= SHM_FLAT_MAX &&
	    bytes * (size_t)g->size <= SHM_INBOX_BYTES) {
		flat_reduce(g, dest, source, n, size, op);
		return;
	}
	if (!small) {
		per = (n + (size_t)g->size - 1) / (size_t)g->size;
		lo = per * (size_t)g->me;
		cnt = lo >= n ? 0 : (n - lo < per ? n - lo : per);
	}
	/*
	 * Small parts overlap their gets; large ones (above hmc_comm's eager
	 * limit, which SMALL_REDUCE stays below) are fetched one at a time
	 * anyway (shm_get_all()), so they need one part of scratch.
	 */
	win = small ? (g->size < GET_WINDOW ? g->size : GET_WINDOW) : 1;
	tmp = malloc(cnt ? cnt * size : 1);
	if (!tmp || (!g->local &&
		     !(scratch = malloc(cnt ? cnt * size * (size_t)win : 1))))
		shm_fatal(call, "out of memory for %zu bytes", cnt * size);
	shm_group_barrier(g);
	if (cnt)
		reduce_all(call, g, tmp, scratch, win,
			   (const char *)source + lo * size, cnt, size, op);
	/* dest may be source: nobody may read sources once we write. */
	shm_group_barrier(g);
	if (small) {
		memcpy(dest, tmp, bytes);
	} else {
		for (i = 0; cnt && i < g->size; i++)
			shm_put(call, gpe(g, i), (char *)dest + lo * size, tmp,
				cnt * size);
		shm_group_barrier(g);
	}
	free(scratch);
	free(tmp);
}

/* ----------------------------------------------------------------------
 * Team-based collectives.
 */
#define TEAM_GROUP(call, team, g)					\
	do {								\
		shm_check_init(call);					\
		if (!shm_team_group(team, &g))				\
			return -1;					\
	} while (0)

int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source,
		       size_t nelems, int PE_root)
{
	struct shm_group g;

	TEAM_GROUP("shmem_broadcast", team, g);
	if (PE_root < 0 || PE_root >= g.size)
		return -1;
	broadcast("shmem_broadcast", &g, dest, source, nelems, PE_root, true);
	return 0;
}

int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source,
		      size_t nelems)
{
	struct shm_group g;

	TEAM_GROUP("shmem_fcollect", team, g);
	fcollect("shmem_fcollect", &g, dest, source, nelems);
	return 0;
}

int shmem_collectmem(shmem_team_t team, void *dest, const void *source,
		     size_t nelems)
{
	struct shm_group g;

	TEAM_GROUP("shmem_collect", team, g);
	collect("shmem_collect", &g, dest, source, nelems);
	return 0;
}

int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source,
		       ptrdiff_t dst, ptrdiff_t sst, size_t nelems)
{
	struct shm_group g;

	TEAM_GROUP("shmem_alltoalls", team, g);
	alltoalls("shmem_alltoalls", &g, dest, source, dst, sst, nelems, 1);
	return 0;
}

int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source,
		      size_t nelems)
{
	struct shm_group g;

	TEAM_GROUP("shmem_alltoall", team, g);
	alltoalls("shmem_alltoall", &g, dest, source, 1, 1, nelems, 1);
	return 0;
}

#define DEFINE_COLL(TYPE, NAME)						\
int shmem_##NAME##_broadcast(shmem_team_t team, TYPE *dest,		\
			     const TYPE *source, size_t nelems, int PE_root) \
{									\
	return shmem_broadcastmem(team, dest, source,			\
				  nelems * sizeof(TYPE), PE_root);	\
}									\
int shmem_##NAME##_collect(shmem_team_t team, TYPE *dest,		\
			   const TYPE *source, size_t nelems)		\
{									\
	return shmem_collectmem(team, dest, source, nelems * sizeof(TYPE)); \
}									\
int shmem_##NAME##_fcollect(shmem_team_t team, TYPE *dest,		\
			    const TYPE *source, size_t nelems)		\
{									\
	return shmem_fcollectmem(team, dest, source, nelems * sizeof(TYPE)); \
}									\
int shmem_##NAME##_alltoall(shmem_team_t team, TYPE *dest,		\
			    const TYPE *source, size_t nelems)		\
{									\
	return shmem_alltoallmem(team, dest, source, nelems * sizeof(TYPE)); \
}									\
int shmem_##NAME##_alltoalls(shmem_team_t team, TYPE *dest,		\
			     const TYPE *source, ptrdiff_t dst,		\
			     ptrdiff_t sst, size_t nelems)		\
{									\
	struct shm_group g;						\
									\
	TEAM_GROUP("shmem_" #NAME "_alltoalls", team, g);		\
	alltoalls("shmem_" #NAME "_alltoalls", &g, dest, source, dst, sst, \
		  nelems, sizeof(TYPE));				\
	return 0;							\
}
HMC_SHMEM_RMA_TYPES(DEFINE_COLL)

/* ----------------------------------------------------------------------
 * Reductions: one combining function per type and operator.
 */
#define DEFINE_OP(TYPE, NAME, OP, EXPR)					\
static void op_##NAME##_##OP(void *acc, const void *in, size_t n)	\
{									\
	TYPE *a = acc;							\
	const TYPE *b = in;						\
	size_t i;							\
									\
	for (i = 0; i < n; i++)						\
		a[i] = EXPR;						\
}

#define DEFINE_TEAM_REDUCE(TYPE, NAME, OP)				\
int shmem_##NAME##_##OP##_reduce(shmem_team_t team, TYPE *dest,		\
				 const TYPE *source, size_t nreduce)	\
{									\
	struct shm_group g;						\
									\
	TEAM_GROUP("shmem_" #NAME "_" #OP "_reduce", team, g);		\
	reduce("shmem_" #NAME "_" #OP "_reduce", &g, dest, source, nreduce, \
	       sizeof(TYPE), op_##NAME##_##OP);				\
	return 0;							\
}

#define DEFINE_RED_BITWISE(TYPE, NAME)					\
	DEFINE_OP(TYPE, NAME, and, a[i] & b[i])				\
	DEFINE_OP(TYPE, NAME, or, a[i] | b[i])				\
	DEFINE_OP(TYPE, NAME, xor, a[i] ^ b[i])				\
	DEFINE_TEAM_REDUCE(TYPE, NAME, and)				\
	DEFINE_TEAM_REDUCE(TYPE, NAME, or)				\
	DEFINE_TEAM_REDUCE(TYPE, NAME, xor)
#define DEFINE_RED_MINMAX(TYPE, NAME)					\
	DEFINE_OP(TYPE, NAME, max, b[i] > a[i] ? b[i] : a[i])		\
	DEFINE_OP(TYPE, NAME, min, b[i] < a[i] ? b[i] : a[i])		\
	DEFINE_TEAM_REDUCE(TYPE, NAME, max)				\
	DEFINE_TEAM_REDUCE(TYPE, NAME, min)
#define DEFINE_RED_ARITH(TYPE, NAME)					\
	DEFINE_OP(TYPE, NAME, sum, a[i] + b[i])				\
	DEFINE_OP(TYPE, NAME, prod, a[i] * b[i])			\
	DEFINE_TEAM_REDUCE(TYPE, NAME, sum)				\
	DEFINE_TEAM_REDUCE(TYPE, NAME, prod)
HMC_SHMEM_BITWISE_RED_TYPES(DEFINE_RED_BITWISE)
HMC_SHMEM_MINMAX_RED_TYPES(DEFINE_RED_MINMAX)
HMC_SHMEM_ARITH_RED_TYPES(DEFINE_RED_ARITH)

/* ----------------------------------------------------------------------
 * Deprecated active-set forms.
 */
#define DEFINE_SET_SIZED(BITS)						\
void shmem_broadcast##BITS(void *dest, const void *source, size_t nelems, \
			   int PE_root, int PE_start, int logPE_stride,	\
			   int PE_size, long *pSync)			\
{									\
	struct shm_group g;						\
									\
	shm_set_group("shmem_broadcast" #BITS, PE_start, logPE_stride,	\
		      PE_size, pSync, &g);				\
	if (PE_root < 0 || PE_root >= g.size)				\
		shm_fatal("shmem_broadcast" #BITS,			\
			  "PE_root %d is not in the active set", PE_root); \
	broadcast("shmem_broadcast" #BITS, &g, dest, source,		\
		  nelems * (BITS / 8), PE_root, false);			\
}									\
void shmem_collect##BITS(void *dest, const void *source, size_t nelems, \
			 int PE_start, int logPE_stride, int PE_size,	\
			 long *pSync)					\
{									\
	struct shm_group g;						\
									\
	shm_set_group("shmem_collect" #BITS, PE_start, logPE_stride,	\
		      PE_size, pSync, &g);				\
	collect("shmem_collect" #BITS, &g, dest, source, nelems * (BITS / 8)); \
}									\
void shmem_fcollect##BITS(void *dest, const void *source, size_t nelems, \
			  int PE_start, int logPE_stride, int PE_size,	\
			  long *pSync)					\
{									\
	struct shm_group g;						\
									\
	shm_set_group("shmem_fcollect" #BITS, PE_start, logPE_stride,	\
		      PE_size, pSync, &g);				\
	fcollect("shmem_fcollect" #BITS, &g, dest, source,		\
		 nelems * (BITS / 8));					\
}									\
void shmem_alltoall##BITS(void *dest, const void *source, size_t nelems, \
			  int PE_start, int logPE_stride, int PE_size,	\
			  long *pSync)					\
{									\
	struct shm_group g;						\
									\
	shm_set_group("shmem_alltoall" #BITS, PE_start, logPE_stride,	\
		      PE_size, pSync, &g);				\
	alltoalls("shmem_alltoall" #BITS, &g, dest, source, 1, 1, nelems, \
		  BITS / 8);						\
}									\
void shmem_alltoalls##BITS(void *dest, const void *source, ptrdiff_t dst, \
			   ptrdiff_t sst, size_t nelems, int PE_start,	\
			   int logPE_stride, int PE_size, long *pSync)	\
{									\
	struct shm_group g;						\
									\
	shm_set_group("shmem_alltoalls" #BITS, PE_start, logPE_stride,	\
		      PE_size, pSync, &g);				\
	alltoalls("shmem_alltoalls" #BITS, &g, dest, source, dst, sst,	\
		  nelems, BITS / 8);					\
}
DEFINE_SET_SIZED(32)
DEFINE_SET_SIZED(64)

#define DEFINE_TOALL(TYPE, NAME, OP, FN)				\
void shmem_##NAME##_##OP##_to_all(TYPE *dest, const TYPE *source,	\
				  int nreduce, int PE_start,		\
				  int logPE_stride, int PE_size,	\
				  TYPE *pWrk, long *pSync)		\
{									\
	struct shm_group g;						\
									\
	shm_set_group("shmem_" #NAME "_" #OP "_to_all", PE_start,	\
		      logPE_stride, PE_size, pSync, &g);		\
	if (nreduce < 0)						\
		shm_fatal("shmem_" #NAME "_" #OP "_to_all",		\
			  "nreduce %d is negative", nreduce);		\
	reduce("shmem_" #NAME "_" #OP "_to_all", &g, dest, source,	\
	       (size_t)nreduce, sizeof(TYPE), FN);			\
}

/* The signed bitwise types exist only in the active-set forms. */
#define DEFINE_TOALL_BITWISE(TYPE, NAME)				\
	DEFINE_OP(TYPE, toall_##NAME, and, a[i] & b[i])			\
	DEFINE_OP(TYPE, toall_##NAME, or, a[i] | b[i])			\
	DEFINE_OP(TYPE, toall_##NAME, xor, a[i] ^ b[i])			\
	DEFINE_TOALL(TYPE, NAME, and, op_toall_##NAME##_and)		\
	DEFINE_TOALL(TYPE, NAME, or, op_toall_##NAME##_or)		\
	DEFINE_TOALL(TYPE, NAME, xor, op_toall_##NAME##_xor)
#define DEFINE_TOALL_MINMAX(TYPE, NAME)					\
	DEFINE_TOALL(TYPE, NAME, max, op_##NAME##_max)			\
	DEFINE_TOALL(TYPE, NAME, min, op_##NAME##_min)
#define DEFINE_TOALL_ARITH(TYPE, NAME)					\
	DEFINE_TOALL(TYPE, NAME, sum, op_##NAME##_sum)			\
	DEFINE_TOALL(TYPE, NAME, prod, op_##NAME##_prod)
HMC_SHMEM_TOALL_BITWISE_TYPES(DEFINE_TOALL_BITWISE)
HMC_SHMEM_TOALL_MINMAX_TYPES(DEFINE_TOALL_MINMAX)
HMC_SHMEM_TOALL_ARITH_TYPES(DEFINE_TOALL_ARITH)
