/* SPDX-License-Identifier: MIT */
/*
 * Progress engine: an epoll set of event sources, the lock that whoever
 * drives progress holds, the rounds it runs, an optional thread that takes
 * over when no caller drives it, and the wait of a caller for a condition.
 * It knows nothing of peers, frames or transports: its owner hands it the
 * steps of a round (struct engine_ops) and a callback per source.
 *
 * Locks: engine->lock (held by whoever drives progress) nests outside the
 * owner's state lock, which engine_wait() evaluates conditions under and
 * whose changes engine_broadcast() announces.
 */
#ifndef HMC_LIB_ENGINE_H
#define HMC_LIB_ENGINE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* A watched descriptor: handle() runs when it is readable (lock held). */
struct engine_src {
	/* Events handled (>= 0). */
	int (*handle)(struct engine_src *src);
};

/* The owner's steps of a round, all called with engine->lock held. */
struct engine_ops {
	/* The cheap part of a round (transports only): events handled. */
	int (*poll)(void *arg);
	/*
	 * Before waiting: events handled; lowers *@deadline to the next
	 * timer the round must wake up for.
	 */
	int (*prepare)(void *arg, int64_t *deadline);
	/*
	 * About to sleep: -EBUSY if there is work, else whether it armed
	 * anything (from which on unwatch() is due); -EBUSY counts as armed.
	 */
	int (*arm)(void *arg);
	/* Nobody sleeps for a while: take out what arm() watched for sleepers. */
	void (*unwatch)(void *arg);
	/* After the events: events handled. */
	int (*finish)(void *arg);
};

struct engine {
	pthread_mutex_t lock;
	const struct engine_ops *ops;
	void *arg;
	int epfd;
	int wakefd;
	struct engine_src wake_src;
	pthread_mutex_t *state_lock;	/* the owner's */
	pthread_cond_t cond;		/* with *state_lock */
	unsigned int waiters;		/* atomic: threads in cond */
	int thread_active;		/* atomic: the thread may hold the lock */
	int callers_waiting;		/* atomic: callers blocked on the lock */
	int64_t last_full_ns;		/* engine_poll()'s last full round (lock held) */
	int64_t last_sleep_ns;		/* the last epoll_wait that could sleep (lock held) */
	bool armed;			/* arm() armed something since the last unwatch (lock held) */
	int64_t last_caller_ns;		/* atomic: last progress by a caller */
	pthread_t thread;
	bool has_thread;
	bool stop;			/* *state_lock */
	pthread_cond_t thread_cond;	/* with *state_lock */
};

/* @state_lock: the owner's lock that conditions are evaluated under. */
int engine_init(struct engine *e, const struct engine_ops *ops, void *arg,
		pthread_mutex_t *state_lock);
int engine_start_thread(struct engine *e);
/* Stops the thread and closes the engine (no source may be left to handle). */
void engine_fini(struct engine *e);

/* Call @src->handle() whenever @fd is readable: 0 or -errno. */
int engine_watch(struct engine *e, int fd, struct engine_src *src);
/* Hand a watched @fd over to another source. */
int engine_rewatch(struct engine *e, int fd, struct engine_src *src);
void engine_unwatch(struct engine *e, int fd);

/* Take engine->lock, waking a holder that sleeps. */
void engine_lock(struct engine *e);
/* 0 if the lock was free and is now held, or -EBUSY. */
int engine_trylock(struct engine *e);
void engine_unlock(struct engine *e);
/*
 * Unlock after engine_trylock() + engine_poll(), which announced what it
 * did: a spinning caller's hot path wakes nobody for the lock itself.
 */
static inline void engine_unlock_quiet(struct engine *e)
{
	pthread_mutex_unlock(&e->lock);
}

/* One round (lock held): handle events, sleeping up to @timeout_ms (-1: no limit). */
int engine_once(struct engine *e, int timeout_ms);
/*
 * What a spinning caller runs (lock held): the cheap part, and a full
 * round without sleeping now and then.
 */
int engine_poll(struct engine *e);
/* Wake everyone waiting in engine_wait() (takes the state lock). */
void engine_broadcast(struct engine *e);

/*
 * A condition a caller waits for, evaluated under the state lock; @owner is
 * the engine's @arg. engine_wait() evaluates it until it first holds and
 * never after, so a condition may take what it waits for (a queued tag).
 */
typedef bool (*engine_cond_fn)(void *owner, void *arg);
/*
 * Drive progress (or let another thread drive it) until @cond holds or
 * @deadline passes: 0 or -ETIMEDOUT. @spin_ns: poll without sleeping first.
 */
int engine_wait(struct engine *e, engine_cond_fn cond, void *arg,
		int64_t deadline, int64_t spin_ns);

#endif
