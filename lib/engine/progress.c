// SPDX-License-Identifier: MIT
/*
 * Progress engine. Whoever holds progress.lock drives everything: control
 * sockets, listeners, handshakes and the transports. A caller that waits
 * drives it inline (so a tag or a completion costs no thread hand-off);
 * when no caller has done so for PARK_NS, the progress thread takes over,
 * sleeping in epoll_wait, so that accepts, handshakes and passive-target
 * transport work (UCX emulates RMA with active messages on some transports)
 * happen while the application computes.
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

#include "core/comm.h"
#include "sys/log.h"

#define PARK_NS		(5 * 1000000LL)	/* the thread idles this long after a caller */
#define SLICE_MS	100		/* longest sleep of a caller holding the lock */
#define SLICE_NS	((int64_t)SLICE_MS * 1000000)
#define SPIN_POLL_EVERY	32		/* spin rounds between looks at sockets */
#define UNWATCH_NS	(10 * 1000000LL) /* callers spun this long: unwatch() */
#define MAX_EVENTS	64

/*
 * A waiter counts itself (sequentially consistent) before it checks its
 * condition under comm->lock; we changed the state before looking at the
 * count: either it sees our change or we see it waiting.
 */
__hot void comm_broadcast(struct hmc_comm *c)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&c->waiters, __ATOMIC_SEQ_CST))
		return;
	pthread_mutex_lock(&c->lock);
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

int progress_watch(struct hmc_comm *c, int fd, struct psrc *src)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = src };

	if (epoll_ctl(c->progress.epfd, EPOLL_CTL_ADD, fd, &ev))
		return -errno;
	return 0;
}

void progress_unwatch(struct hmc_comm *c, int fd)
{
	epoll_ctl(c->progress.epfd, EPOLL_CTL_DEL, fd, NULL);
}

int xport_watch(struct hmc_comm *c, enum hmc_transport type, int fd)
{
	return progress_watch(c, fd, &c->xports[type].src);
}

static void kick(struct progress *pr)
{
	uint64_t one = 1;

	if (write(pr->wakefd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		pr_debug("progress wake: %s", hmc_strerror(errno));
}

/* After failing to take the lock: wake the thread if it may hold it. */
static void kick_thread(struct progress *pr)
{
	if (__atomic_load_n(&pr->thread_active, __ATOMIC_SEQ_CST))
		kick(pr);
}

static void note_caller(struct progress *pr)
{
	__atomic_store_n(&pr->last_caller_ns, now_ns(), __ATOMIC_RELAXED);
}

void progress_lock(struct hmc_comm *c)
{
	struct progress *pr = &c->progress;

	note_caller(pr);
	if (!pthread_mutex_trylock(&pr->lock))
		return;
	__atomic_add_fetch(&pr->callers_waiting, 1, __ATOMIC_SEQ_CST);
	kick_thread(pr);
	pthread_mutex_lock(&pr->lock);
	__atomic_sub_fetch(&pr->callers_waiting, 1, __ATOMIC_SEQ_CST);
}

void progress_unlock(struct hmc_comm *c)
{
	pthread_mutex_unlock(&c->progress.lock);
	comm_broadcast(c);	/* a waiter may take over */
}

static int progress_slot(struct xport_slot *x)
{
	int rc;

	__atomic_store_n(&x->armed, false, __ATOMIC_RELAXED);
	rc = x->ops->progress(x->ctx);
	return rc > 0 ? rc : 0;
}

__hot int progress_xports(struct hmc_comm *c)
{
	int i, n = 0;

	for (i = 0; i < XPORT_SLOTS; i++)
		if (__atomic_load_n(&c->xports[i].ctx, __ATOMIC_ACQUIRE))
			n += progress_slot(&c->xports[i]);
	if (c->ext)
		n += c->ext->progress(c);
	return n;
}

/* A round's first step: transports that are armed have nothing to do. */
static int progress_unarmed_xports(struct hmc_comm *c)
{
	int i, n = 0;

	for (i = 0; i < XPORT_SLOTS; i++) {
		struct xport_slot *x = &c->xports[i];

		if (__atomic_load_n(&x->ctx, __ATOMIC_ACQUIRE) &&
		    !__atomic_load_n(&x->armed, __ATOMIC_RELAXED))
			n += progress_slot(x);
	}
	return n;
}

static int arm_xports(struct hmc_comm *c)
{
	int i;

	for (i = 0; i < XPORT_SLOTS; i++) {
		struct xport_slot *x = &c->xports[i];

		if (!__atomic_load_n(&x->ctx, __ATOMIC_ACQUIRE) ||
		    __atomic_load_n(&x->armed, __ATOMIC_RELAXED))
			continue;
		c->progress.xports_armed = true;
		if (x->ops->arm(x->ctx) == -EBUSY)
			return -EBUSY;
		__atomic_store_n(&x->armed, true, __ATOMIC_RELAXED);
	}
	return 0;
}

/*
 * Nobody has slept in epoll_wait for UNWATCH_NS: the callers spin, and
 * descriptors watched for sleepers only cost every packet a wake-up. The
 * next arm() watches them again, so the slot must not stay armed. Once
 * per arm: spinning callers do not pay the transports' locks again.
 */
static void unwatch_xports(struct hmc_comm *c)
{
	int i;

	for (i = 0; i < XPORT_SLOTS; i++) {
		struct xport_slot *x = &c->xports[i];

		if (!__atomic_load_n(&x->ctx, __ATOMIC_ACQUIRE) ||
		    !x->ops->unwatch)
			continue;
		x->ops->unwatch(x->ctx);
		__atomic_store_n(&x->armed, false, __ATOMIC_RELAXED);
	}
	c->progress.xports_armed = false;
}

static void drain_wake(struct progress *pr)
{
	uint64_t v;

	while (read(pr->wakefd, &v, sizeof(v)) > 0)
		;
}

int progress_once(struct hmc_comm *c, int timeout_ms)
{
	struct progress *pr = &c->progress;
	struct epoll_event evs[MAX_EVENTS];
	int64_t hs_deadline;
	int i, nev, wait, n;

	n = progress_unarmed_xports(c);
	n += ctrl_reap_failed(c);
	if (c->ext)
		n += c->ext->progress(c);
	hs_deadline = ctrl_expire_handshakes(c);

	wait = n ? 0 : timeout_ms;
	if (hs_deadline != DEADLINE_NEVER) {
		int left = deadline_remaining_ms(hs_deadline);

		if (wait < 0 || left < wait)
			wait = left;
	}
	if (wait && arm_xports(c) == -EBUSY)
		wait = 0;
	/* The thread (timeout -1) never sleeps on a caller that wants the lock. */
	if (wait < 0 && __atomic_load_n(&pr->callers_waiting, __ATOMIC_SEQ_CST))
		wait = 0;

	nev = epoll_wait(pr->epfd, evs, MAX_EVENTS, wait);
	if (nev < 0 && errno != EINTR)
		pr_debug("epoll_wait: %s", hmc_strerror(errno));
	if (wait)
		pr->last_sleep_ns = now_ns();
	else if (!timeout_ms && pr->xports_armed &&
		 now_ns() - pr->last_sleep_ns > UNWATCH_NS)
		unwatch_xports(c);

	for (i = 0; i < nev; i++) {
		struct psrc *src = evs[i].data.ptr;

		switch (src->kind) {
		case PSRC_WAKE:
			drain_wake(pr);
			break;
		case PSRC_LISTEN:
			n += ctrl_accept(c, *(int *)src->ptr,
					 src == &c->listen_src[1]);
			break;
		case PSRC_CONN:
			n += ctrl_input(c, src->ptr);
			break;
		case PSRC_XPORT:
			n += progress_slot(container_of(src, struct xport_slot,
							src));
			break;
		}
	}
	n += ctrl_reap_failed(c);
	if (c->ext)
		n += c->ext->progress(c);
	if (n)
		comm_broadcast(c);
	return n;
}

int comm_wait(struct hmc_comm *c, wait_cond_fn cond, void *arg,
	      int64_t deadline, int64_t spin_ns)
{
	struct progress *pr = &c->progress;
	int64_t spin_until = spin_ns ? now_ns() + spin_ns : 0;
	unsigned int spins = 0;
	struct timespec ts;
	int64_t now, until;
	bool done;

	for (;;) {
		pthread_mutex_lock(&c->lock);
		done = cond(c, arg);
		pthread_mutex_unlock(&c->lock);
		if (done)
			return 0;
		now = now_ns();
		if (now >= deadline)
			return -ETIMEDOUT;

		__atomic_store_n(&pr->last_caller_ns, now, __ATOMIC_RELAXED);
		if (!pthread_mutex_trylock(&pr->lock)) {
			if (now < spin_until && ++spins % SPIN_POLL_EVERY) {
				if (progress_xports(c))
					comm_broadcast(c);
			} else if (now < spin_until) {
				progress_once(c, 0);
			} else {
				progress_once(c, deadline - now > SLICE_NS ?
					      SLICE_MS :
					      (int)((deadline - now + 999999) /
						    1000000));
			}
			pthread_mutex_unlock(&pr->lock);
			continue;
		}

		/*
		 * The thread may be asleep with the lock: take over from it.
		 * Otherwise another caller drives progress: wait for its news.
		 */
		if (__atomic_load_n(&pr->thread_active, __ATOMIC_SEQ_CST)) {
			progress_lock(c);
			progress_once(c, 0);
			pthread_mutex_unlock(&pr->lock);
			continue;
		}
		until = now + SLICE_NS;
		if (deadline < until)
			until = deadline;
		ts.tv_sec = until / 1000000000;
		ts.tv_nsec = until % 1000000000;
		pthread_mutex_lock(&c->lock);
		__atomic_add_fetch(&c->waiters, 1, __ATOMIC_SEQ_CST);
		if (!cond(c, arg))
			pthread_cond_timedwait(&c->cond, &c->lock, &ts);
		__atomic_sub_fetch(&c->waiters, 1, __ATOMIC_SEQ_CST);
		pthread_mutex_unlock(&c->lock);
	}
}

static void *progress_thread(void *arg)
{
	struct hmc_comm *c = arg;
	struct progress *pr = &c->progress;
	struct timespec ts;
	int64_t idle_until;

	pthread_mutex_lock(&c->lock);
	while (!pr->stop) {
		idle_until = __atomic_load_n(&pr->last_caller_ns,
					     __ATOMIC_RELAXED) + PARK_NS;
		if (__atomic_load_n(&pr->callers_waiting, __ATOMIC_SEQ_CST) ||
		    now_ns() < idle_until) {
			if (idle_until < now_ns() + PARK_NS / 5)
				idle_until = now_ns() + PARK_NS / 5;
			ts.tv_sec = idle_until / 1000000000;
			ts.tv_nsec = idle_until % 1000000000;
			pthread_cond_timedwait(&pr->thread_cond, &c->lock, &ts);
			continue;
		}
		pthread_mutex_unlock(&c->lock);
		__atomic_store_n(&pr->thread_active, 1, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&pr->callers_waiting, __ATOMIC_SEQ_CST) &&
		    !pthread_mutex_trylock(&pr->lock)) {
			progress_once(c, -1);
			pthread_mutex_unlock(&pr->lock);
		} else {
			note_caller(pr);	/* a caller has it: park again */
		}
		__atomic_store_n(&pr->thread_active, 0, __ATOMIC_SEQ_CST);
		pthread_mutex_lock(&c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

int progress_init(struct hmc_comm *c)
{
	struct progress *pr = &c->progress;
	pthread_condattr_t attr;
	int rc;

	pr->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (pr->epfd < 0)
		return -errno;
	pr->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (pr->wakefd < 0) {
		rc = -errno;
		goto err_ep;
	}
	pr->wake_src.kind = PSRC_WAKE;
	rc = progress_watch(c, pr->wakefd, &pr->wake_src);
	if (rc)
		goto err_wake;
	pthread_mutex_init(&pr->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&pr->thread_cond, &attr);
	pthread_condattr_destroy(&attr);
	return 0;
err_wake:
	close(pr->wakefd);
err_ep:
	close(pr->epfd);
	return rc;
}

int progress_start_thread(struct hmc_comm *c)
{
	struct progress *pr = &c->progress;
	int rc;

	rc = pthread_create(&pr->thread, NULL, progress_thread, c);
	if (rc)
		return -rc;
	pr->has_thread = true;
	return 0;
}

void progress_fini(struct hmc_comm *c)
{
	struct progress *pr = &c->progress;

	if (pr->has_thread) {
		pthread_mutex_lock(&c->lock);
		pr->stop = true;
		pthread_cond_signal(&pr->thread_cond);
		pthread_mutex_unlock(&c->lock);
		kick(pr);
		pthread_join(pr->thread, NULL);
		pr->has_thread = false;
	}
	close(pr->wakefd);
	close(pr->epfd);
	pthread_mutex_destroy(&pr->lock);
	pthread_cond_destroy(&pr->thread_cond);
}
