// SPDX-License-Identifier: MIT
/* struct futex_mutex: exclusion under contention, and sleepers woken. */
#include <check.h>
#include <pthread.h>
#include <time.h>

#include "sys/lock.h"
#include "run_tcase.h"

#define THREADS		4
#define ROUNDS		200000

static struct futex_mutex m;
static unsigned long counter;
static int inside;
static bool overlap;

static void *hammer(void *arg)
{
	int i;

	for (i = 0; i < ROUNDS; i++) {
		futex_mutex_lock(&m);
		/* plain accesses: only the lock keeps them apart */
		if (inside++)
			overlap = true;
		counter++;
		inside--;
		futex_mutex_unlock(&m);
	}
	return arg;
}

START_TEST(test_uncontended)
{
	struct futex_mutex l = { 0 };

	futex_mutex_lock(&l);
	ck_assert_uint_eq(l.state, 1);
	futex_mutex_unlock(&l);
	ck_assert_uint_eq(l.state, 0);
	futex_mutex_lock(&l);
	futex_mutex_unlock(&l);
	ck_assert_uint_eq(l.state, 0);
}
END_TEST

START_TEST(test_contended_exclusion)
{
	pthread_t th[THREADS];
	int i;

	for (i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, hammer, NULL), 0);
	for (i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
	ck_assert(!overlap);
	ck_assert_uint_eq(counter, (unsigned long)THREADS * ROUNDS);
	ck_assert_uint_eq(m.state, 0);
}
END_TEST

static int took;

static void *take_once(void *arg)
{
	futex_mutex_lock(&m);
	took = 1;
	futex_mutex_unlock(&m);
	return arg;
}

/* A waiter marks the lock contended, sleeps, and is woken by the unlock. */
START_TEST(test_sleeper_woken)
{
	struct timespec pause = { 0, 1000 * 1000 };
	pthread_t th;
	int ms;

	futex_mutex_lock(&m);
	ck_assert_int_eq(pthread_create(&th, NULL, take_once, NULL), 0);
	for (ms = 0; ms < 10000 &&
	     __atomic_load_n(&m.state, __ATOMIC_ACQUIRE) != 2; ms++)
		nanosleep(&pause, NULL);
	ck_assert_uint_eq(m.state, 2);
	ck_assert_int_eq(__atomic_load_n(&took, __ATOMIC_ACQUIRE), 0);
	futex_mutex_unlock(&m);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(took, 1);
	ck_assert_uint_eq(m.state, 0);
}
END_TEST

int main(void)
{
	TCase *tc = tcase_create("lock");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_uncontended);
	tcase_add_test(tc, test_contended_exclusion);
	tcase_add_test(tc, test_sleeper_woken);
	return run_tcase("lock", tc);
}
