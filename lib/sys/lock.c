// SPDX-License-Identifier: MIT
/* The contended halves of struct futex_mutex (see lock.h). */
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sys/lock.h"

/* Lock @m, whose state was @seen (not 0): mark it contended and sleep. */
void futex_mutex_wait(struct futex_mutex *m, uint32_t seen)
{
	if (seen != 2)
		seen = __atomic_exchange_n(&m->state, 2, __ATOMIC_ACQUIRE);
	while (seen) {
		/* returns at once if the state is no longer 2 */
		syscall(SYS_futex, &m->state, FUTEX_WAIT_PRIVATE, 2, NULL,
			NULL, 0);
		seen = __atomic_exchange_n(&m->state, 2, __ATOMIC_ACQUIRE);
	}
}

/* Unlocked with waiters: wake one; it takes the lock as contended. */
void futex_mutex_wake(struct futex_mutex *m)
{
	syscall(SYS_futex, &m->state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
