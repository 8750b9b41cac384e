/* SPDX-License-Identifier: MIT */
/*
 * Integration tests: TAP lines, a deterministic random generator, checked
 * test data, and a launcher that forks one process per rank and lets them
 * swap their listener ports (and ask the parent to kill one of them).
 */
#ifndef HMC_TESTS_ITEST_H
#define HMC_TESTS_ITEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <hmc/hmc.h>

#define ITEST_MAX_RANKS	8

/* ---- TAP: one line per case; every line is one write(), so that the
 * lines of several rank processes sharing stdout do not interleave. */

/* Text put before every case name ("comm n=2 r1: "). */
void itest_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "ok - NAME" or "not ok - NAME"; returns @ok. */
bool tap(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "ok - NAME # SKIP REASON". */
void tap_skip(const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* "# ..." diagnostics. */
void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Failures so far in this process. */
int itest_failures(void);
/* Record a failure without a TAP line of its own (details go to diag). */
void itest_fail(void);

/* ---- time */
int64_t itest_now_ms(void);
void itest_sleep_ms(int ms);

/* ---- a deterministic generator, so that a receiver can replay a sender */
struct rng {
	uint64_t s;
};

void rng_seed(struct rng *r, uint64_t a, uint64_t b, uint64_t c, uint64_t d);
uint64_t rng_next(struct rng *r);
/* Uniform in [lo, hi]. */
uint64_t rng_range(struct rng *r, uint64_t lo, uint64_t hi);
/* True with probability @pct percent. */
bool rng_pct(struct rng *r, unsigned int pct);
void rng_shuffle(struct rng *r, size_t *v, size_t n);

/* ---- test data: byte @i of the buffer holds pattern_at(seed, i). */
void data_fill(uint8_t *buf, size_t off, size_t len, uint64_t seed);
/*
 * Check that buf[off + i] == pattern_at(seed, base + i) for every i < len;
 * on a mismatch, say where (diag) and return false.
 */
bool data_check(const uint8_t *buf, size_t off, size_t len, uint64_t seed,
		size_t base, const char *what);
/*
 * Make every byte of [off, off + len) differ from what a transfer of
 * pattern(seed) from @base is about to put there, so that a byte it fails to
 * move cannot pass by luck.
 */
void data_unlike(uint8_t *buf, size_t off, size_t len, uint64_t seed,
		 size_t base);

/* ---- transfers: random non-overlapping ranges, and what they leave */
struct xfer {
	bool put;		/* else get */
	uint8_t how;		/* how the test completes it */
	int peer;
	uint32_t idx;		/* within its list */
	size_t loc, rem, len;	/* local offset, remote offset, bytes */
	hmc_req_t req;
	bool posted, done;
};

struct xfers {
	struct xfer *v;
	size_t n, cap;
};

/*
 * Append to @xs up to @max transfers (puts if @put, else gets) whose
 * destination ranges cut [d0, d1) into random, non-overlapping pieces in
 * increasing order, and whose sources lie at random in [s0, s1). Lengths
 * run from 0 and 1 byte over unaligned sizes up to several MiB (@small:
 * 0 to 48 bytes, packed); the last piece reaches d1 half the time.
 */
void xfers_carve(struct xfers *xs, struct rng *r, bool small, bool put,
		 int peer, size_t d0, size_t d1, size_t s0, size_t s1,
		 size_t max);
void xfers_free(struct xfers *xs);
/*
 * Before the transfers of @xs land in [d0, d1) of @buf: fill it with
 * pattern @poison and make each destination byte differ from the pattern
 * @src byte that will land there.
 */
void xfers_poison(uint8_t *buf, const struct xfers *xs, size_t d0, size_t d1,
		  uint64_t src, uint64_t poison);
/*
 * After they landed: each destination range holds pattern @src from its
 * source offset, and every other byte of [d0, d1) is still @poison.
 */
bool xfers_check(const uint8_t *buf, const struct xfers *xs, size_t d0,
		 size_t d1, uint64_t src, uint64_t poison, const char *what);

/* ---- the launcher */
struct mesh {
	int nranks;
	int rank;			/* in a child; -1 in the parent */
	uint16_t port[ITEST_MAX_RANKS];
	pid_t pid[ITEST_MAX_RANKS];
	int to_parent, from_parent;	/* a child's pipes */
};

typedef int (*rank_fn)(struct mesh *m, void *arg);

/* Messages from a child to the parent. */
enum mesh_msg {
	MESH_PORT = 1,		/* a: my listener port */
	MESH_KILL,		/* a: SIGKILL this rank (a planned death) */
	MESH_KILLED,		/* parent -> child: done */
};

/*
 * Fork @n ranks running @fn (their exit status: 0 on success), wait for
 * them until @timeout_s has passed (then kill them all), and report one
 * TAP line per rank. A rank that a peer had killed through mesh_kill() is
 * expected to die of SIGKILL. Returns the number of ranks that failed.
 */
int mesh_run(const char *name, int n, rank_fn fn, void *arg, int timeout_s);

/* In a child: send my port, receive everybody's ports and pids. 0 or -1. */
int mesh_exchange(struct mesh *m, uint16_t port);
/* In a child: have the parent SIGKILL @rank and wait until it is dead. */
int mesh_kill(struct mesh *m, int rank);

/* ---- communicator helpers */

/* The size of every rank's buffer: different per rank, not page aligned. */
size_t rank_buf_size(size_t base, int rank);

/*
 * Create a CPU buffer and a communicator for @rank (listening on @ip,
 * port 0). Failures are reported; returns 0 or -1.
 */
int comm_setup(int rank, size_t size, const char *ip,
	       const struct hmc_comm_opts *opts, struct hmc_buf **buf,
	       struct hmc_comm **comm);

/*
 * The transport that ranks @a and @b use: HMC_TEST_TRANSPORT names one
 * (ucx, verbs, shm, auto) or a comma-separated list whose entry (a + b) % n
 * a pair takes, so that one process mixes them (default ucx); with auto,
 * HMC_TEST_AUTO_IS says what it must pick (shm, verbs or ucx). HMC_TEST_CHS sets
 * comm_setup()'s num_chs where the caller leaves it 0.
 */
enum hmc_transport itest_transport(int a, int b);

/*
 * Full mesh: dial every higher rank at @ips[q] (the lower rank dials) over
 * itest_transport(), then wait until every lower rank is connected, within
 * @timeout_ms, and check that every pair is on the transport it expects.
 */
int mesh_connect(struct mesh *m, struct hmc_comm *comm, const char *const *ips,
		 int timeout_ms);

/*
 * Before tearing down: send a goodbye tag to every rank in @ranks (not
 * @me) and receive theirs, so that nobody leaves while a peer still needs
 * it. 0 or -1 (reported).
 */
int mesh_goodbye(struct hmc_comm *comm, int me, const int *ranks, int n);

/* Wait until hmc_comm_is_connected(@peer) is @want, up to @timeout_ms. */
bool wait_connected(struct hmc_comm *comm, uint32_t peer, bool want,
		    int timeout_ms);

#endif
