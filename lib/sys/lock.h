/* SPDX-License-Identifier: MIT */
/*
 * A mutex for the locks that every transfer takes (the peer table, the
 * request table, a transport's queues): uncontended, lock and unlock are
 * one atomic instruction in line. A put and the test that collected it
 * took five pthread mutexes, twenty calls and returns through libc's PLT;
 * in the soft-RoCE guest, after the doorbell system call, each call and
 * return costs a code-cache lookup, and they were a third of a put's own
 * time. Contended, it sleeps on a futex (U. Drepper, "Futexes Are Tricky",
 * mutex 3). Zero-initialised means unlocked; not recursive.
 */
#ifndef HMC_LIB_LOCK_H
#define HMC_LIB_LOCK_H

#include <stdbool.h>
#include <stdint.h>

struct futex_mutex {
	uint32_t state;		/* 0 free, 1 locked, 2 locked with waiters */
};

void futex_mutex_wait(struct futex_mutex *m, uint32_t seen);
void futex_mutex_wake(struct futex_mutex *m);

static inline void futex_mutex_lock(struct futex_mutex *m)
{
	uint32_t seen = 0;

	if (!__atomic_compare_exchange_n(&m->state, &seen, 1, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		futex_mutex_wait(m, seen);
}

static inline void futex_mutex_unlock(struct futex_mutex *m)
{
	if (__atomic_exchange_n(&m->state, 0, __ATOMIC_RELEASE) != 1)
		futex_mutex_wake(m);
}

#endif
