// SPDX-License-Identifier: MIT
/*
 * Progress engine. Whoever holds engine->lock drives everything the owner
 * watches. A caller that waits drives it inline (so a tag or a completion
 * costs no thread hand-off); when no caller has done so for PARK_NS, the
 * progress thread takes over, sleeping in epoll_wait, so that accepts,
 * handshakes and passive-target transport work (UCX emulates RMA with
 * active messages on some transports) happen while the application
 * computes.
 *
 * A caller that needs the lock while the thread may hold it counts itself
 * in callers_waiting and kicks the thread through an eventfd. The thread
 * announces itself (thread_active) before it tries the lock and checks the
 * counter before it sleeps, both sequentially consistent, so one of the two
 * always sees the other: the thread yields instead of sleeping, or wakes on
 * the kick; it takes the lock back only when nobody waits for it.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "engine/engine.h"
#include "sys/log.h"
#include "sys/util.h"

#define PARK_NS		(5 * 1000000LL)	/* the thread idles this long after a caller */
#define SLICE_MS	100		/* longest sleep of a caller holding the lock */
#define SLICE_NS	((int64_t)SLICE_MS * 1000000)
#define SPIN_POLL_EVERY	32		/* spin rounds between looks at sockets */
#define UNWATCH_NS	(10 * 1000000LL) /* callers spun this long: unwatch() */
#define MAX_EVENTS	64

/*
 * Callers that spin (hmc_comm_progress() while polling memory,
 * hmc_comm_test() in a loop) poll at the lowest latency: the cheap part
 * only, without a system call, and a full round (control sockets,
 * handshakes) once FULL_ROUND_NS have passed since the last one. By time,
 * not by count: a poll of RDMA or shared memory takes a few dozen
 * nanoseconds, and a system call every few polls would then be most of
 * what a spinning caller does. A millisecond, not less: a full round costs
 * a system call and a look at every peer, and a ping-pong that met one
 * every few round trips paid it in most of them (put_lat over soft-RoCE
 * under emulation, where a round trip takes 50 us). What waits for the
 * control sockets (hmc_comm_recv_tag(), hmc_comm_wait()) drives them
 * itself.
 */
#define FULL_ROUND_NS	(1000 * 1000)

/*
 * A waiter counts itself (sequentially consistent) before it checks its
 * condition under the state lock; we changed the state before looking at
 * the count: either it sees our change or we see it waiting.
 */
__hot void engine_broadcast(struct engine *e)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&e->waiters, __ATOMIC_SEQ_CST))
		return;
	pthread_mutex_lock(e->state_lock);
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(e->state_lock);
}

int engine_watch(struct engine *e, int fd, struct engine_src *src)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = src };

	if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, fd, &ev))
		return -errno;
	return 0;
}

int engine_rewatch(struct engine *e, int fd, struct engine_src *src)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = src };

	if (epoll_ctl(e->epfd, EPOLL_CTL_MOD, fd, &ev))
		return -errno;
	return 0;
}

void engine_unwatch(struct engine *e, int fd)
{
	epoll_ctl(e->epfd, EPOLL_CTL_DEL, fd, NULL);
}

static void kick(struct engine *e)
{
	uint64_t one = 1;

	if (write(e->wakefd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		pr_debug("progress wake: %s", hmc_strerror(errno));
}

/* After failing to take the lock: wake the thread if it may hold it. */
static void kick_thread(struct engine *e)
{
	if (__atomic_load_n(&e->thread_active, __ATOMIC_SEQ_CST))
		kick(e);
}

static void note_caller(struct engine *e)
{
	__atomic_store_n(&e->last_caller_ns, now_ns(), __ATOMIC_RELAXED);
}

void engine_lock(struct engine *e)
{
	note_caller(e);
	if (!pthread_mutex_trylock(&e->lock))
		return;
	__atomic_add_fetch(&e->callers_waiting, 1, __ATOMIC_SEQ_CST);
	kick_thread(e);
	pthread_mutex_lock(&e->lock);
	__atomic_sub_fetch(&e->callers_waiting, 1, __ATOMIC_SEQ_CST);
}

__hot int engine_trylock(struct engine *e)
{
	return pthread_mutex_trylock(&e->lock) ? -EBUSY : 0;
}

void engine_unlock(struct engine *e)
{
	pthread_mutex_unlock(&e->lock);
	engine_broadcast(e);	/* a waiter may take over */
}

/* The wake-up eventfd's own source. */
static int drain_wake(struct engine_src *src)
{
	struct engine *e = container_of(src, struct engine, wake_src);
	uint64_t v;

	while (read(e->wakefd, &v, sizeof(v)) > 0)
		;
	return 0;
}

int engine_once(struct engine *e, int timeout_ms)
{
	struct epoll_event evs[MAX_EVENTS];
	int64_t timer = DEADLINE_NEVER;
	int i, nev, wait, n, rc;

	n = e->ops->prepare(e->arg, &timer);

	wait = n ? 0 : timeout_ms;
	if (timer != DEADLINE_NEVER) {
		int left = deadline_remaining_ms(timer);

		if (wait < 0 || left < wait)
			wait = left;
	}
	if (wait) {
		rc = e->ops->arm(e->arg);
		if (rc)
			e->armed = true;
		if (rc == -EBUSY)
			wait = 0;
	}
	/* The thread (timeout -1) never sleeps on a caller that wants the lock. */
	if (wait < 0 && __atomic_load_n(&e->callers_waiting, __ATOMIC_SEQ_CST))
		wait = 0;

	nev = epoll_wait(e->epfd, evs, MAX_EVENTS, wait);
	if (nev < 0 && errno != EINTR)
		pr_debug("epoll_wait: %s", hmc_strerror(errno));
	if (wait) {
		e->last_sleep_ns = now_ns();
	} else if (!timeout_ms && e->armed &&
		   now_ns() - e->last_sleep_ns > UNWATCH_NS) {
		e->ops->unwatch(e->arg);
		e->armed = false;
	}

	for (i = 0; i < nev; i++) {
		struct engine_src *src = evs[i].data.ptr;

		n += src->handle(src);
	}
	n += e->ops->finish(e->arg);
	if (n)
		engine_broadcast(e);
	return n;
}

__hot int engine_poll(struct engine *e)
{
	int64_t now = now_ns();
	int n;

	if (now - e->last_full_ns < FULL_ROUND_NS) {
		n = e->ops->poll(e->arg);
		if (n)
			engine_broadcast(e);
		return n;
	}
	e->last_full_ns = now;
	__atomic_store_n(&e->last_caller_ns, now, __ATOMIC_RELAXED);
	return engine_once(e, 0);
}

int engine_wait(struct engine *e, engine_cond_fn cond, void *arg,
		int64_t deadline, int64_t spin_ns)
{
	int64_t spin_until = spin_ns ? now_ns() + spin_ns : 0;
	unsigned int spins = 0;
	bool drove = false;
	struct timespec ts;
	int64_t now, until;
	bool done;

	for (;;) {
		pthread_mutex_lock(e->state_lock);
		done = cond(e->arg, arg);
		pthread_mutex_unlock(e->state_lock);
		now = done ? 0 : now_ns();
		if (done || now >= deadline) {
			/*
			 * We drove progress and leave: a waiter that found the
			 * lock taken sleeps on the condition; wake it to take
			 * over, or nobody reads its sockets until the thread
			 * unparks (PARK_NS) or its slice ends.
			 */
			if (drove)
				engine_broadcast(e);
			return done ? 0 : -ETIMEDOUT;
		}
		drove = false;

		__atomic_store_n(&e->last_caller_ns, now, __ATOMIC_RELAXED);
		if (!pthread_mutex_trylock(&e->lock)) {
			drove = true;
			if (now < spin_until && ++spins % SPIN_POLL_EVERY) {
				if (e->ops->poll(e->arg))
					engine_broadcast(e);
			} else if (now < spin_until) {
				engine_once(e, 0);
			} else {
				engine_once(e, deadline - now > SLICE_NS ?
					    SLICE_MS :
					    (int)((deadline - now + 999999) /
						  1000000));
			}
			pthread_mutex_unlock(&e->lock);
			continue;
		}

		/*
		 * The thread may be asleep with the lock: take over from it.
		 * Otherwise another caller drives progress: wait for its news.
		 */
		if (__atomic_load_n(&e->thread_active, __ATOMIC_SEQ_CST)) {
			engine_lock(e);
			drove = true;
			engine_once(e, 0);
			pthread_mutex_unlock(&e->lock);
			continue;
		}
		until = now + SLICE_NS;
		if (deadline < until)
			until = deadline;
		ts.tv_sec = until / 1000000000;
		ts.tv_nsec = until % 1000000000;
		pthread_mutex_lock(e->state_lock);
		__atomic_add_fetch(&e->waiters, 1, __ATOMIC_SEQ_CST);
		/*
		 * Counted, look at the lock once more: a holder that released
		 * it since our trylock either sees us counted (and wakes us
		 * when it leaves) or we see the lock free and drive ourselves.
		 */
		done = cond(e->arg, arg);
		if (!done) {
			if (pthread_mutex_trylock(&e->lock))
				pthread_cond_timedwait(&e->cond, e->state_lock, &ts);
			else
				pthread_mutex_unlock(&e->lock);
		}
		__atomic_sub_fetch(&e->waiters, 1, __ATOMIC_SEQ_CST);
		pthread_mutex_unlock(e->state_lock);
		/*
		 * Held: return now. A condition may take what it waited for
		 * (hmc_comm_recv_tag() pops the tag); evaluating it again
		 * would lose that and wait for the next one.
		 */
		if (done)
			return 0;
	}
}

static void *engine_thread(void *arg)
{
	struct engine *e = arg;
	struct timespec ts;
	int64_t idle_until;

	pthread_mutex_lock(e->state_lock);
	while (!e->stop) {
		idle_until = __atomic_load_n(&e->last_caller_ns,
					     __ATOMIC_RELAXED) + PARK_NS;
		if (__atomic_load_n(&e->callers_waiting, __ATOMIC_SEQ_CST) ||
		    now_ns() < idle_until) {
			if (idle_until < now_ns() + PARK_NS / 5)
				idle_until = now_ns() + PARK_NS / 5;
			ts.tv_sec = idle_until / 1000000000;
			ts.tv_nsec = idle_until % 1000000000;
			pthread_cond_timedwait(&e->thread_cond, e->state_lock,
					       &ts);
			continue;
		}
		pthread_mutex_unlock(e->state_lock);
		__atomic_store_n(&e->thread_active, 1, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&e->callers_waiting, __ATOMIC_SEQ_CST) &&
		    !pthread_mutex_trylock(&e->lock)) {
			engine_once(e, -1);
			pthread_mutex_unlock(&e->lock);
		} else {
			note_caller(e);	/* a caller has it: park again */
		}
		__atomic_store_n(&e->thread_active, 0, __ATOMIC_SEQ_CST);
		pthread_mutex_lock(e->state_lock);
	}
	pthread_mutex_unlock(e->state_lock);
	return NULL;
}

static void cond_init(pthread_cond_t *cond)
{
	pthread_condattr_t attr;

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(cond, &attr);
	pthread_condattr_destroy(&attr);
}

int engine_init(struct engine *e, const struct engine_ops *ops, void *arg,
		pthread_mutex_t *state_lock)
{
	int rc;

	e->ops = ops;
	e->arg = arg;
	e->state_lock = state_lock;
	e->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (e->epfd < 0)
		return -errno;
	e->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (e->wakefd < 0) {
		rc = -errno;
		goto err_ep;
	}
	e->wake_src.handle = drain_wake;
	rc = engine_watch(e, e->wakefd, &e->wake_src);
	if (rc)
		goto err_wake;
	pthread_mutex_init(&e->lock, NULL);
	cond_init(&e->cond);
	cond_init(&e->thread_cond);
	return 0;
err_wake:
	close(e->wakefd);
err_ep:
	close(e->epfd);
	return rc;
}

int engine_start_thread(struct engine *e)
{
	int rc;

	rc = pthread_create(&e->thread, NULL, engine_thread, e);
	if (rc)
		return -rc;
	e->has_thread = true;
	return 0;
}

void engine_fini(struct engine *e)
{
	if (e->has_thread) {
		pthread_mutex_lock(e->state_lock);
		e->stop = true;
		pthread_cond_signal(&e->thread_cond);
		pthread_mutex_unlock(e->state_lock);
		kick(e);
		pthread_join(e->thread, NULL);
		e->has_thread = false;
	}
	close(e->wakefd);
	close(e->epfd);
	pthread_mutex_destroy(&e->lock);
	pthread_cond_destroy(&e->cond);
	pthread_cond_destroy(&e->thread_cond);
}
