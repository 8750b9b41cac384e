// SPDX-License-Identifier: MIT
/*
 * The progress engine on its own, with no communicator: sources and their
 * callbacks, the owner's round steps and timers, waiting for a condition,
 * and the progress thread taking over when no caller drives it.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "sys/util.h"
#include "run_tcase.h"

/* The owner: counts what the engine asked of it. */
struct owner {
	pthread_mutex_t lock;		/* the engine's state lock */
	struct engine e;
	int polls, prepares, arms, unwatches, finishes;
	int64_t timer;			/* prepare() reports it, then forgets it */
	int flag;			/* under lock */
};

struct fd_src {
	struct engine_src src;
	int fd;
	int handled;
};

static int on_readable(struct engine_src *src)
{
	struct fd_src *s = container_of(src, struct fd_src, src);
	uint64_t v;

	ck_assert_int_eq(read(s->fd, &v, sizeof(v)), sizeof(v));
	s->handled++;
	return 1;
}

static int o_poll(void *arg)
{
	__atomic_add_fetch(&((struct owner *)arg)->polls, 1, __ATOMIC_RELAXED);
	return 0;
}

static int o_prepare(void *arg, int64_t *deadline)
{
	struct owner *o = arg;

	o->prepares++;
	if (o->timer != DEADLINE_NEVER && o->timer < *deadline)
		*deadline = o->timer;
	if (o->timer != DEADLINE_NEVER && deadline_passed(o->timer))
		o->timer = DEADLINE_NEVER;
	return 0;
}

static int o_arm(void *arg)
{
	((struct owner *)arg)->arms++;
	return 1;
}

static void o_unwatch(void *arg)
{
	((struct owner *)arg)->unwatches++;
}

static int o_finish(void *arg)
{
	((struct owner *)arg)->finishes++;
	return 0;
}

static const struct engine_ops ops = {
	.poll = o_poll,
	.prepare = o_prepare,
	.arm = o_arm,
	.unwatch = o_unwatch,
	.finish = o_finish,
};

static void owner_init(struct owner *o)
{
	*o = (struct owner){ .timer = DEADLINE_NEVER };
	pthread_mutex_init(&o->lock, NULL);
	ck_assert_int_eq(engine_init(&o->e, &ops, o, &o->lock), 0);
}

static void owner_fini(struct owner *o)
{
	engine_fini(&o->e);
	pthread_mutex_destroy(&o->lock);
}

static void src_init(struct fd_src *s)
{
	s->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ck_assert_int_ge(s->fd, 0);
	s->src.handle = on_readable;
	s->handled = 0;
}

static void kick(struct fd_src *s)
{
	uint64_t one = 1;

	ck_assert_int_eq(write(s->fd, &one, sizeof(one)), sizeof(one));
}

START_TEST(test_source_callback)
{
	struct owner o;
	struct fd_src s;

	owner_init(&o);
	src_init(&s);
	ck_assert_int_eq(engine_watch(&o.e, s.fd, &s.src), 0);

	engine_lock(&o.e);
	/* nothing to do: a round with no wait handles nothing */
	ck_assert_int_eq(engine_once(&o.e, 0), 0);
	ck_assert_int_eq(s.handled, 0);
	kick(&s);
	ck_assert_int_eq(engine_once(&o.e, 1000), 1);
	ck_assert_int_eq(s.handled, 1);
	/* every round ran the owner's steps around the events */
	ck_assert_int_eq(o.prepares, 2);
	ck_assert_int_eq(o.finishes, 2);
	ck_assert_int_ge(o.arms, 1);	/* before the round that could sleep */

	engine_unwatch(&o.e, s.fd);
	kick(&s);
	ck_assert_int_eq(engine_once(&o.e, 20), 0);
	ck_assert_int_eq(s.handled, 1);
	engine_unlock(&o.e);

	close(s.fd);
	owner_fini(&o);
}
END_TEST

START_TEST(test_rewatch)
{
	struct owner o;
	struct fd_src a, b;

	owner_init(&o);
	src_init(&a);
	src_init(&b);
	ck_assert_int_eq(engine_watch(&o.e, a.fd, &a.src), 0);
	/* the same descriptor, handed to another source */
	b.fd = a.fd;
	ck_assert_int_eq(engine_rewatch(&o.e, a.fd, &b.src), 0);
	kick(&a);
	engine_lock(&o.e);
	ck_assert_int_eq(engine_once(&o.e, 1000), 1);
	engine_unlock(&o.e);
	ck_assert_int_eq(a.handled, 0);
	ck_assert_int_eq(b.handled, 1);
	ck_assert_int_eq(engine_rewatch(&o.e, -1, &b.src), -EBADF);

	close(a.fd);
	owner_fini(&o);
}
END_TEST

/* A round wakes up for the owner's timer, not at its own timeout. */
START_TEST(test_timer)
{
	struct owner o;
	int64_t t0;

	owner_init(&o);
	engine_lock(&o.e);
	o.timer = deadline_after_ms(30);
	t0 = now_ns();
	engine_once(&o.e, 5000);
	ck_assert_int_ge(now_ns() - t0, 25 * 1000000LL);
	ck_assert_int_lt(now_ns() - t0, 4000 * 1000000LL);
	engine_unlock(&o.e);
	owner_fini(&o);
}
END_TEST

static bool flag_set(void *owner, void *arg)
{
	ck_assert_ptr_eq(arg, (void *)0x15);
	return ((struct owner *)owner)->flag;
}

static void *set_flag_later(void *arg)
{
	struct owner *o = arg;
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	pthread_mutex_lock(&o->lock);
	o->flag = 1;
	pthread_mutex_unlock(&o->lock);
	engine_broadcast(&o->e);
	return NULL;
}

START_TEST(test_wait)
{
	struct owner o;
	pthread_t th;

	owner_init(&o);
	ck_assert_int_eq(engine_wait(&o.e, flag_set, (void *)0x15,
				     deadline_after_ms(30), 0), -ETIMEDOUT);
	ck_assert_int_eq(pthread_create(&th, NULL, set_flag_later, &o), 0);
	ck_assert_int_eq(engine_wait(&o.e, flag_set, (void *)0x15,
				     deadline_after_ms(10000), 1000000), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	/* a spinning wait polls the cheap part */
	ck_assert_int_gt(o.polls, 0);
	owner_fini(&o);
}
END_TEST

/*
 * A condition that takes a token, as hmc_comm_recv_tag() takes a tag. The
 * token arrives between its first and second look (another caller's
 * progress delivering it while this one decides to sleep).
 */
struct take {
	struct owner *o;
	int looks, tokens, taken;
};

static bool take_token(void *owner, void *arg)
{
	struct take *t = arg;

	ck_assert_ptr_eq(owner, t->o);
	if (++t->looks == 2)
		t->tokens++;
	if (!t->tokens)
		return false;
	t->tokens--;
	t->taken++;
	return true;
}

/*
 * A condition that held is not looked at again: the second look, made
 * before sleeping while another caller holds the lock, took the token, and
 * a third would find none and wait for one that never comes.
 */
START_TEST(test_wait_takes_once)
{
	struct take t = { 0 };
	struct owner o;

	owner_init(&o);
	t.o = &o;
	engine_lock(&o.e);	/* "another caller" drives progress */
	ck_assert_int_eq(engine_wait(&o.e, take_token, &t,
				     deadline_after_ms(2000), 0), 0);
	engine_unlock(&o.e);
	ck_assert_int_eq(t.looks, 2);
	ck_assert_int_eq(t.taken, 1);
	ck_assert_int_eq(t.tokens, 0);
	owner_fini(&o);
}
END_TEST

/* With no caller about, the thread handles the events. */
START_TEST(test_thread)
{
	struct timespec ms = { 0, 1000 * 1000 };
	struct owner o;
	struct fd_src s;
	int i;

	owner_init(&o);
	src_init(&s);
	ck_assert_int_eq(engine_watch(&o.e, s.fd, &s.src), 0);
	ck_assert_int_eq(engine_start_thread(&o.e), 0);
	kick(&s);
	for (i = 0; i < 10000 && !__atomic_load_n(&s.handled, __ATOMIC_ACQUIRE);
	     i++)
		nanosleep(&ms, NULL);
	ck_assert_int_eq(__atomic_load_n(&s.handled, __ATOMIC_ACQUIRE), 1);
	/* a caller takes the lock from the sleeping thread */
	engine_lock(&o.e);
	kick(&s);
	ck_assert_int_eq(engine_once(&o.e, 1000), 1);
	engine_unlock(&o.e);
	ck_assert_int_eq(s.handled, 2);
	engine_unwatch(&o.e, s.fd);
	owner_fini(&o);	/* stops the thread */
	close(s.fd);
}
END_TEST

int main(void)
{
	TCase *tc = tcase_create("engine");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_source_callback);
	tcase_add_test(tc, test_rewatch);
	tcase_add_test(tc, test_timer);
	tcase_add_test(tc, test_wait);
	tcase_add_test(tc, test_wait_takes_once);
	tcase_add_test(tc, test_thread);
	return run_tcase("engine", tc);
}
