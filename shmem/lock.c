// SPDX-License-Identifier: MIT
/*
 * Distributed locks: a ticket lock in PE 0's copy of the symmetric long,
 * the upper half the next ticket, the lower half the ticket served. Tickets
 * make the lock fair: PEs get it in the order they asked. The standard's
 * zero-initialised lock is the free state.
 */
#include "internal.h"

#define TICKET		(1ULL << 32)
#define SERVING(v)	((uint32_t)(v))
#define NEXT(v)		((uint32_t)((v) >> 32))

static uint64_t *lock_word(const char *call, long *lock)
{
	shm_check_init(call);
	return shm_addr(call, lock, sizeof(*lock), 0);
}

void shmem_set_lock(long *lock)
{
	uint64_t *w = lock_word("shmem_set_lock", lock);
	uint32_t mine = NEXT(__atomic_fetch_add(w, TICKET, __ATOMIC_ACQ_REL));
	struct shm_backoff b = { 0 };

	while (SERVING(__atomic_load_n(w, __ATOMIC_ACQUIRE)) != mine)
		shm_backoff(&b);
}

void shmem_clear_lock(long *lock)
{
	uint64_t *w = lock_word("shmem_clear_lock", lock);
	uint64_t old = __atomic_load_n(w, __ATOMIC_RELAXED), new;

	/* The lock's updates are complete before the next holder enters. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	do {
		new = (old & ~(TICKET - 1)) | (uint32_t)(SERVING(old) + 1);
	} while (!__atomic_compare_exchange_n(w, &old, new, false,
					      __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
}

int shmem_test_lock(long *lock)
{
	uint64_t *w = lock_word("shmem_test_lock", lock);
	uint64_t old = __atomic_load_n(w, __ATOMIC_RELAXED);

	if (NEXT(old) != SERVING(old))
		return 1;
	return __atomic_compare_exchange_n(w, &old, old + TICKET, false,
					   __ATOMIC_ACQ_REL,
					   __ATOMIC_RELAXED) ? 0 : 1;
}
