// SPDX-License-Identifier: MIT
/*
 * Distributed locks: a ticket lock in PE 0's copy of the symmetric long,
 * the upper half the next ticket, the lower half the ticket served. Tickets
 * make the lock fair: PEs get it in the order they asked. The standard's
 * zero-initialised lock is the free state. Every access is an AMO on PE 0
 * (peer.c: a CPU atomic where PE 0 is mapped, a request where not).
 */
#include "internal.h"

#define TICKET		(1ULL << 32)
#define SERVING(v)	((uint32_t)(v))
#define NEXT(v)		((uint32_t)((v) >> 32))

static uint64_t lock_op(const char *call, long *lock, enum shm_amo_op op,
			uint64_t val, uint64_t cond)
{
	return shm_amo(call, 0, lock, sizeof(*lock), op, val, cond, true);
}

static void check(const char *call, long *lock)
{
	shm_check_init(call);
	shm_check_addr(call, lock, sizeof(*lock), 0);
}

void shmem_set_lock(long *lock)
{
	static const char call[] = "shmem_set_lock";
	struct shm_backoff b = { 0 };
	uint32_t mine;

	check(call, lock);
	mine = NEXT(lock_op(call, lock, SHM_AMO_ADD, TICKET, 0));
	while (SERVING(lock_op(call, lock, SHM_AMO_FETCH, 0, 0)) != mine)
		shm_backoff(&b);
}

void shmem_clear_lock(long *lock)
{
	static const char call[] = "shmem_clear_lock";
	uint64_t old, new, seen;

	check(call, lock);
	/* The lock's updates are complete before the next holder enters. */
	shm_quiet();
	old = lock_op(call, lock, SHM_AMO_FETCH, 0, 0);
	for (;;) {
		new = (old & ~(TICKET - 1)) | (uint32_t)(SERVING(old) + 1);
		seen = lock_op(call, lock, SHM_AMO_CSWAP, new, old);
		if (seen == old)
			break;
		old = seen;
	}
}

int shmem_test_lock(long *lock)
{
	static const char call[] = "shmem_test_lock";
	uint64_t old;

	check(call, lock);
	old = lock_op(call, lock, SHM_AMO_FETCH, 0, 0);
	if (NEXT(old) != SERVING(old))
		return 1;
	return lock_op(call, lock, SHM_AMO_CSWAP, old + TICKET, old) == old ?
	       0 : 1;
}
