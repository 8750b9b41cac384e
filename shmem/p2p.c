// SPDX-License-Identifier: MIT
/*
 * Point-to-point synchronisation: waiting on local symmetric variables
 * that peers update by RMA, AMO or signal.
 *
 * Mapped peers write our memory directly, so waiting is polling with
 * acquire loads. The poll spins, then yields, then sleeps in short steps.
 * How long it spins depends on whether this host's PEs outnumber the CPUs
 * we may run on: if not, the PE we wait for runs on another CPU and
 * answers within a few hundred nanoseconds, and yielding would hand our
 * CPU to an unrelated process for a whole time slice; if so, a spinning
 * waiter would starve the PE it waits for, so it yields at once (as Open
 * MPI does when oversubscribed): barrier_all on 4 PEs and 2 CPUs took a
 * median 5 us yielding at once, 11 us after 64 pauses, 120 us after 1024.
 *
 * What remote peers write, our progress thread writes, and it counts
 * every request it applies (shm_peer_applied()): a waiter sleeps on that
 * count instead of in fixed steps, so it wakes as soon as the write it
 * waits for may have landed. The count is read before each poll, so a
 * write between the poll and the sleep ends the sleep at once. Where
 * every peer is remote nothing else writes our symmetric memory but our
 * own threads, so the waiter spins a little, never yields (that would
 * hand the CPU our progress thread needs to an unrelated process), and
 * sleeps up to SLEEP_REMOTE_NS at a time: a 8 B put + quiet answered
 * through wait_until took 370-480 us one way with the old yields and
 * 20 us steps, see the commit message for the numbers after.
 */
#include <sched.h>
#include <time.h>

#include "internal.h"

#define SPIN_SHORT	0
#define SPIN_LONG	16384
#define YIELDS		4096
#define SLEEP_NS	20000
/* Where every peer is remote: polls before sleeping, and the longest sleep. */
#define SPIN_REMOTE	64
#define SLEEP_REMOTE_NS	1000000

void shm_backoff_init(void)
{
	cpu_set_t set;
	int local = shmem_team_n_pes(SHMEM_TEAM_SHARED), pe;
	bool mapped = false;

	for (pe = 0; pe < shm.npes; pe++)
		if (pe != shm.me && shm_pe_mapped(pe))
			mapped = true;
	shm.yield_limit = YIELDS;
	shm.sleep_ns = SLEEP_NS;
	if (shm_peer_remote() && !mapped) {
		shm.spin_limit = SPIN_REMOTE;
		shm.yield_limit = 0;
		/* writes nobody counts (a NIC's) are seen only by looking */
		shm.sleep_ns = shm_peer_silent() ? SLEEP_NS : SLEEP_REMOTE_NS;
		return;
	}
	/* With remote PEs, each local one has a progress thread to run too. */
	if (shm_peer_remote())
		local *= 2;
	shm.spin_limit = SPIN_SHORT;
	if (!sched_getaffinity(0, sizeof(set), &set) && local <= CPU_COUNT(&set))
		shm.spin_limit = SPIN_LONG;
}

void shm_backoff(struct shm_backoff *b)
{
	if (b->spins < shm.spin_limit) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#elif defined(__aarch64__)
		__asm__ __volatile__("yield");
#endif
	} else if (b->spins < shm.spin_limit + shm.yield_limit) {
		sched_yield();
	} else if (shm_peer_remote()) {
		shm_peer_wait_applied(b->applied, shm.sleep_ns);
	} else {
		struct timespec ts = { 0, shm.sleep_ns };

		nanosleep(&ts, NULL);
	}
	if (shm_peer_remote())
		b->applied = shm_peer_applied();
	if (b->spins < UINT32_MAX)
		b->spins++;
}

static void bad_cmp(const char *call, int cmp)
{
	shm_fatal(call, "comparison %d is not one of SHMEM_CMP_*", cmp);
}

#define CMP(call, a, cmp, b)						\
	((cmp) == SHMEM_CMP_EQ ? (a) == (b) :				\
	 (cmp) == SHMEM_CMP_NE ? (a) != (b) :				\
	 (cmp) == SHMEM_CMP_GT ? (a) > (b) :				\
	 (cmp) == SHMEM_CMP_GE ? (a) >= (b) :				\
	 (cmp) == SHMEM_CMP_LT ? (a) < (b) :				\
	 (cmp) == SHMEM_CMP_LE ? (a) <= (b) : (bad_cmp(call, cmp), 0))

static void check_cmp(const char *call, int cmp)
{
	if (cmp < SHMEM_CMP_EQ || cmp > SHMEM_CMP_LE)
		bad_cmp(call, cmp);
}

/*
 * For every type: one test of element i (value or vector), and the loops
 * all the wait and test forms share. @vec selects cmp_values[i].
 */
#define DEFINE_P2P(TYPE, NAME)						\
static int NAME##_ok(TYPE *ivars, size_t i, int cmp, TYPE v, const TYPE *vv) \
{									\
	TYPE x = __atomic_load_n(&ivars[i], __ATOMIC_ACQUIRE);		\
	TYPE want = vv ? vv[i] : v;					\
	return CMP("shmem_" #NAME "_wait_until", x, cmp, want);		\
}									\
/* Elements satisfied now, written to @idx (if given), at most @max. */	\
static size_t NAME##_scan(TYPE *ivars, size_t n, const int *status,	\
			  int cmp, TYPE v, const TYPE *vv, size_t *idx,	\
			  size_t max, size_t *active)			\
{									\
	size_t i, hit = 0;						\
									\
	*active = 0;							\
	for (i = 0; i < n && hit < max; i++) {				\
		if (status && status[i])				\
			continue;					\
		(*active)++;						\
		if (NAME##_ok(ivars, i, cmp, v, vv)) {			\
			if (idx)					\
				idx[hit] = i;				\
			hit++;						\
		}							\
	}								\
	return hit;							\
}									\
static size_t NAME##_wait_n(TYPE *ivars, size_t n, const int *status,	\
			    int cmp, TYPE v, const TYPE *vv, size_t *idx, \
			    size_t max, bool all)			\
{									\
	struct shm_backoff b = { 0 };					\
	size_t hit, active;						\
									\
	check_cmp("shmem_" #NAME "_wait_until", cmp);			\
	for (;;) {							\
		hit = NAME##_scan(ivars, n, status, cmp, v, vv, idx,	\
				  all ? SIZE_MAX : max, &active);	\
		if (!active || (all ? hit == active : hit > 0))		\
			return active ? hit : 0;			\
		shm_backoff(&b);					\
	}								\
}									\
void shmem_##NAME##_wait_until(TYPE *ivar, int cmp, TYPE cmp_value)	\
{									\
	NAME##_wait_n(ivar, 1, NULL, cmp, cmp_value, NULL, NULL, 1, true); \
}									\
size_t shmem_##NAME##_wait_until_all(TYPE *ivars, size_t nelems,	\
				     const int *status, int cmp,	\
				     TYPE cmp_value)			\
{									\
	NAME##_wait_n(ivars, nelems, status, cmp, cmp_value, NULL, NULL, \
		      SIZE_MAX, true);					\
	return 0;							\
}									\
size_t shmem_##NAME##_wait_until_any(TYPE *ivars, size_t nelems,	\
				     const int *status, int cmp,	\
				     TYPE cmp_value)			\
{									\
	size_t i;							\
									\
	return NAME##_wait_n(ivars, nelems, status, cmp, cmp_value, NULL, \
			     &i, 1, false) ? i : SIZE_MAX;		\
}									\
size_t shmem_##NAME##_wait_until_some(TYPE *ivars, size_t nelems,	\
				      size_t *indices, const int *status, \
				      int cmp, TYPE cmp_value)		\
{									\
	return NAME##_wait_n(ivars, nelems, status, cmp, cmp_value, NULL, \
			     indices, SIZE_MAX, false);			\
}									\
void shmem_##NAME##_wait_until_all_vector(TYPE *ivars, size_t nelems,	\
					  const int *status, int cmp,	\
					  TYPE *cmp_values)		\
{									\
	NAME##_wait_n(ivars, nelems, status, cmp, 0, cmp_values, NULL,	\
		      SIZE_MAX, true);					\
}									\
size_t shmem_##NAME##_wait_until_any_vector(TYPE *ivars, size_t nelems, \
					    const int *status, int cmp,	\
					    TYPE *cmp_values)		\
{									\
	size_t i;							\
									\
	return NAME##_wait_n(ivars, nelems, status, cmp, 0, cmp_values,	\
			     &i, 1, false) ? i : SIZE_MAX;		\
}									\
size_t shmem_##NAME##_wait_until_some_vector(TYPE *ivars, size_t nelems, \
					     size_t *indices,		\
					     const int *status, int cmp, \
					     TYPE *cmp_values)		\
{									\
	return NAME##_wait_n(ivars, nelems, status, cmp, 0, cmp_values,	\
			     indices, SIZE_MAX, false);			\
}									\
int shmem_##NAME##_test(TYPE *ivar, int cmp, TYPE cmp_value)		\
{									\
	check_cmp("shmem_" #NAME "_test", cmp);				\
	return NAME##_ok(ivar, 0, cmp, cmp_value, NULL);		\
}									\
static int NAME##_test_all_v(TYPE *ivars, size_t n, const int *status,	\
			     int cmp, TYPE v, const TYPE *vv)		\
{									\
	size_t active, hit;						\
									\
	check_cmp("shmem_" #NAME "_test_all", cmp);			\
	hit = NAME##_scan(ivars, n, status, cmp, v, vv, NULL, SIZE_MAX,	\
			  &active);					\
	return hit == active;						\
}									\
static size_t NAME##_test_n(TYPE *ivars, size_t n, const int *status,	\
			    int cmp, TYPE v, const TYPE *vv, size_t *idx, \
			    size_t max)					\
{									\
	size_t active;							\
									\
	check_cmp("shmem_" #NAME "_test", cmp);				\
	return NAME##_scan(ivars, n, status, cmp, v, vv, idx, max, &active); \
}									\
int shmem_##NAME##_test_all(TYPE *ivars, size_t nelems, const int *status, \
			    int cmp, TYPE cmp_value)			\
{									\
	return NAME##_test_all_v(ivars, nelems, status, cmp, cmp_value, NULL); \
}									\
size_t shmem_##NAME##_test_any(TYPE *ivars, size_t nelems,		\
			       const int *status, int cmp, TYPE cmp_value) \
{									\
	size_t i;							\
									\
	return NAME##_test_n(ivars, nelems, status, cmp, cmp_value, NULL, \
			     &i, 1) ? i : SIZE_MAX;			\
}									\
size_t shmem_##NAME##_test_some(TYPE *ivars, size_t nelems,		\
				size_t *indices, const int *status,	\
				int cmp, TYPE cmp_value)		\
{									\
	return NAME##_test_n(ivars, nelems, status, cmp, cmp_value, NULL, \
			     indices, SIZE_MAX);			\
}									\
int shmem_##NAME##_test_all_vector(TYPE *ivars, size_t nelems,		\
				   const int *status, int cmp,		\
				   TYPE *cmp_values)			\
{									\
	return NAME##_test_all_v(ivars, nelems, status, cmp, 0, cmp_values); \
}									\
size_t shmem_##NAME##_test_any_vector(TYPE *ivars, size_t nelems,	\
				      const int *status, int cmp,	\
				      TYPE *cmp_values)			\
{									\
	size_t i;							\
									\
	return NAME##_test_n(ivars, nelems, status, cmp, 0, cmp_values,	\
			     &i, 1) ? i : SIZE_MAX;			\
}									\
size_t shmem_##NAME##_test_some_vector(TYPE *ivars, size_t nelems,	\
				       size_t *indices, const int *status, \
				       int cmp, TYPE *cmp_values)	\
{									\
	return NAME##_test_n(ivars, nelems, status, cmp, 0, cmp_values,	\
			     indices, SIZE_MAX);			\
}

HMC_SHMEM_P2P_TYPES(DEFINE_P2P)

uint64_t shmem_signal_fetch(const uint64_t *sig_addr)
{
	return __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE);
}

uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp,
				 uint64_t cmp_value)
{
	shmem_uint64_wait_until(sig_addr, cmp, cmp_value);
	return __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE);
}
