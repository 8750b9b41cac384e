// SPDX-License-Identifier: MIT
/*
 * One rank of the pool test (tests/pool/run.sh starts them): a world from
 * the environment, a pool over it, then every copy kind between this rank
 * and every rank (itself included), synchronous, asynchronous and in
 * batches, each region written by one rank and read back by all, every
 * byte checked; with -d, every kind that reaches another rank's device
 * segment too; refused copies (out of range, straddling, wrong kind);
 * registered user memory moved into the ConnBuffer and copied without
 * staging; extra contexts, allgathers and subgroups.
 *
 *   pool_test [-M] [-d cuda|rocm|ascend|cnrt|musa] [-m churn]
 * -M: every rank is on this host, so every host segment must be mapped
 * into its slot: the bytes are checked through the pointers as well.
 * -d gives each rank a device segment of that runtime (the mocks of
 * tests/gpu on a machine without one) and runs the device kinds too.
 * -m churn: the last rank leaves (destroys its pool, leaves the world) and
 * the one before it dies by SIGKILL while the others copy to them (to
 * their device segments too, with -d); the
 * survivors must see -ECONNRESET, never a fault, and keep working among
 * themselves; then the leaver joins the world again, enters the pool while
 * the survivors refresh theirs, and data flows both ways.
 * Output is TAP; exit status 1 on any failure.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <hmc/pool.h>
#include <hmc/world.h>

#include "pattern.h"

#define TIMEOUT_MS	20000
#define USER_ROOM	(2 << 20)	/* user_mem_size */
#define REGION		50021		/* odd: no alignment helps */
#define DEV_REGION	20011

static uint32_t me, n;
static bool expect_mapped;	/* -M: every host segment is mapped here */
static int failures, checks;
static enum hmc_mem_type dev_type = HMC_MEM_CPU;

#define CHECK(cond, ...)						\
	do {								\
		__atomic_add_fetch(&checks, 1, __ATOMIC_RELAXED);	\
		if (!(cond)) {						\
			__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED); \
			printf("not ok - rank %u %s:%d: ", me, __FILE__, \
			       __LINE__);				\
			printf(__VA_ARGS__);				\
			printf("\n");					\
			fflush(stdout);					\
		}							\
	} while (0)

#define CHECK_RET(expr, want)						\
	do {								\
		long got_ = (expr);					\
		CHECK(got_ == (want), "%s = %ld (%s), want %ld", #expr,	\
		      got_, hmc_strerror((int)got_), (long)(want));	\
	} while (0)

/* Room for the phases' regions, then for the remote device rounds. */
#define HOFF		((2 << 20) + 4096 + 5)	/* in host segments */
#define DOFF		13			/* copies' target, device */
#define DOFF_SRC	((1152 << 10) + 3)	/* copies' source, device */

static uint64_t host_size(uint32_t r)
{
	return (4 << 20) + r * 4096 + 123;
}

static uint64_t dev_size(uint32_t r)
{
	return dev_type == HMC_MEM_CPU ? 0 : (2304 << 10) + r * 4096;
}

/* Distinct data per phase, writer and target. */
static uint64_t seed(uint32_t phase, uint32_t writer, uint32_t target)
{
	return (uint64_t)phase << 40 | (uint64_t)writer << 20 | target;
}

/* Where writer @w puts phase @phase's region in a host segment. */
static size_t region_off(uint32_t phase, uint32_t w)
{
	return ((size_t)phase * n + w) * REGION;
}

static void check_bytes(const uint8_t *got, size_t len, uint64_t s,
			const char *what, uint32_t w, uint32_t t)
{
	long at = pattern_mismatch(got, len, s);

	CHECK(at < 0, "%s: writer %u, target %u: byte %ld differs", what, w,
	      t, at);
}

/* Everyone reads every writer's region of @phase in every rank back. */
static void verify_phase(struct hmc_pool *pool, uint32_t phase,
			 enum hmc_pool_copy_kind kind, uint32_t flags,
			 const char *what)
{
	uint8_t *buf = malloc((size_t)n * n * REGION);
	struct hmc_pool_copy_desc *d = calloc((size_t)n * n, sizeof(*d));
	uint32_t w, t;
	size_t i = 0;

	memset(buf, 0, (size_t)n * n * REGION);
	for (t = 0; t < n; t++) {
		char *seg = hmc_pool_ptr(pool, HMC_POOL_HOST, t);

		for (w = 0; w < n; w++, i++)
			d[i] = (struct hmc_pool_copy_desc){
				.dst = buf + i * REGION,
				.src = seg + region_off(phase, w),
				.len = REGION };
	}
	CHECK_RET(hmc_pool_copy_batch(pool, d, i, kind, flags), 0);
	if (flags & HMC_POOL_COPY_ASYNC)
		CHECK_RET(hmc_pool_wait(pool, TIMEOUT_MS), 0);
	for (t = 0, i = 0; t < n; t++)
		for (w = 0; w < n; w++, i++)
			check_bytes(buf + i * REGION, REGION, seed(phase, w, t),
				    what, w, t);
	free(d);
	free(buf);
}

static void host_kinds(struct hmc_pool *pool)
{
	uint8_t *src = malloc(REGION * 2);
	struct hmc_pool_copy_desc *d = calloc(n, sizeof(*d));
	uint8_t **bufs = calloc(n, sizeof(*bufs));
	uint32_t t;

	/* Phase 0: H2G, one synchronous copy per target. */
	for (t = 0; t < n; t++) {
		char *seg = hmc_pool_ptr(pool, HMC_POOL_HOST, t);

		pattern_fill(src, REGION, seed(0, me, t));
		CHECK_RET(hmc_pool_copy(pool, seg + region_off(0, me), src,
					REGION, HMC_POOL_H2G, 0), 0);
	}
	CHECK_RET(hmc_pool_barrier(pool, TIMEOUT_MS), 0);
	verify_phase(pool, 0, HMC_POOL_G2H, 0, "H2G then G2H");
	/* On one host the global addresses are plain pointers too. */
	for (t = 0; t < n && expect_mapped; t++) {
		const uint8_t *seg = hmc_pool_ptr(pool, HMC_POOL_HOST, t);
		uint32_t w;

		for (w = 0; w < n; w++)
			check_bytes(seg + region_off(0, w), REGION,
				    seed(0, w, t), "through the pointer", w, t);
	}

	/* Phase 1: H2GH, asynchronous; read back with GH2H, asynchronous. */
	for (t = 0; t < n; t++) {
		char *seg = hmc_pool_ptr(pool, HMC_POOL_HOST, t);

		bufs[t] = malloc(REGION);
		pattern_fill(bufs[t], REGION, seed(1, me, t));
		CHECK_RET(hmc_pool_copy(pool, seg + region_off(1, me), bufs[t],
					REGION, HMC_POOL_H2GH,
					HMC_POOL_COPY_ASYNC), 0);
	}
	CHECK_RET(hmc_pool_wait(pool, TIMEOUT_MS), 0);
	CHECK_RET(hmc_pool_barrier(pool, TIMEOUT_MS), 0);
	verify_phase(pool, 1, HMC_POOL_GH2H, HMC_POOL_COPY_ASYNC,
		     "async H2GH then GH2H");

	/* Phase 2: AUTO, one batch to every target. */
	for (t = 0; t < n; t++) {
		char *seg = hmc_pool_ptr(pool, HMC_POOL_HOST, t);

		pattern_fill(bufs[t], REGION, seed(2, me, t));
		d[t] = (struct hmc_pool_copy_desc){
			.dst = seg + region_off(2, me), .src = bufs[t],
			.len = REGION };
	}
	CHECK_RET(hmc_pool_copy_batch(pool, d, n, HMC_POOL_AUTO, 0), 0);
	CHECK_RET(hmc_pool_barrier(pool, TIMEOUT_MS), 0);
	verify_phase(pool, 2, HMC_POOL_AUTO, 0, "batch AUTO");

	/*
	 * Phase 3: G2G. Writer me moves its phase-0 region in rank t to its
	 * phase-3 region in rank t + 1: seed(3, me, t + 1) must hold there
	 * what seed(0, me, t) held, so check it against phase 0's seed.
	 */
	for (t = 0; t < n; t++) {
		char *from = hmc_pool_ptr(pool, HMC_POOL_HOST, t);
		char *to = hmc_pool_ptr(pool, HMC_POOL_HOST, (t + 1) % n);

		CHECK_RET(hmc_pool_copy(pool, to + region_off(3, me),
					from + region_off(0, me), REGION,
					HMC_POOL_G2G, 0), 0);
	}
	CHECK_RET(hmc_pool_barrier(pool, TIMEOUT_MS), 0);
	for (t = 0; t < n; t++) {
		char *seg = hmc_pool_ptr(pool, HMC_POOL_HOST, (t + 1) % n);
		uint32_t w;

		for (w = 0; w < n; w++) {
			CHECK_RET(hmc_pool_copy(pool, src, seg + region_off(3, w),
						REGION, HMC_POOL_G2H, 0), 0);
			check_bytes(src, REGION, seed(0, w, t), "G2G", w, t);
		}
	}
	CHECK_RET(hmc_pool_barrier(pool, TIMEOUT_MS), 0);
	for (t = 0; t < n; t++)
		free(bufs[t]);
	free(bufs);
	free(d);
	free(src);
	printf("ok - rank %u: H2G, G2H, H2GH, GH2H, AUTO, G2G with %u ranks\n",
	       me, n);
}

/*
 * G2G within one segment of the next rank onto an overlapping range, both
 * ways, longer than the relay's window: the bytes must come out as
 * memmove() leaves them.
 */
static void overlap(struct hmc_pool *pool, char *at, const char *what)
{
	const size_t len = 1500000, shift = 4099;
	uint8_t *buf = malloc(len);

	pattern_fill(buf, len, seed(70, me, 0));
	CHECK_RET(hmc_pool_copy(pool, at, buf, len, HMC_POOL_H2G, 0), 0);
	CHECK_RET(hmc_pool_copy(pool, at + shift, at, len, HMC_POOL_G2G, 0), 0);
	memset(buf, 0, len);
	CHECK_RET(hmc_pool_copy(pool, buf, at + shift, len, HMC_POOL_G2H, 0), 0);
	check_bytes(buf, len, seed(70, me, 0), what, me, (me + 1) % n);
	CHECK_RET(hmc_pool_copy(pool, at, at + shift, len, HMC_POOL_G2G, 0), 0);
	memset(buf, 0, len);
	CHECK_RET(hmc_pool_copy(pool, buf, at, len, HMC_POOL_G2H, 0), 0);
	check_bytes(buf, len, seed(70, me, 0), what, me, (me + 1) % n);
	free(buf);
}

/*
 * Sizes around the staging window's chunks (56 KiB) and the window (18 of
 * them), to the next rank's host segment from host memory and back: each
 * rank is written by the previous one only.
 */
static void stage_sizes(struct hmc_pool *pool)
{
	static const size_t sizes[] = {
		57343, 57344, 57345, 3 * 57344 + 1, 18 * 57344 - 1, 18 * 57344,
		18 * 57344 + 1, 2 * 18 * 57344 + 4097,
	};
	const size_t max = 2 * 18 * 57344 + 4097;
	uint8_t *out = malloc(max), *in = malloc(max);
	uint32_t next = (me + 1) % n, prev = (me + n - 1) % n, i;
	char *to = hmc_pool_ptr(pool, HMC_POOL_HOST, next) + HOFF;
	char *mine = hmc_pool_ptr(pool, HMC_POOL_HOST, me) + HOFF;

	for (i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
		pattern_fill(out, sizes[i], seed(60 + i, me, next));
		CHECK_RET(hmc_pool_copy(pool, to, out, sizes[i], HMC_POOL_H2G,
					i & 1 ? HMC_POOL_COPY_ASYNC : 0), 0);
		CHECK_RET(hmc_pool_wait(pool, TIMEOUT_MS), 0);
		memset(in, 0, sizes[i]);
		CHECK_RET(hmc_pool_copy(pool, in, to, sizes[i], HMC_POOL_G2H, 0),
			  0);
		check_bytes(in, sizes[i], seed(60 + i, me, next),
			    "staged sizes, read back", me, next);
		CHECK_RET(hmc_pool_barrier(pool, TIMEOUT_MS), 0);
		memset(in, 0, sizes[i]);
		CHECK_RET(hmc_pool_copy(pool, in, mine, sizes[i], HMC_POOL_GH2H,
					0), 0);
		check_bytes(in, sizes[i], seed(60 + i, prev, me),
			    "staged sizes, written", prev, me);
		CHECK_RET(hmc_pool_barrier(pool, TIMEOUT_MS), 0);
	}
	overlap(pool, to, "overlapping G2G in a host segment");
	CHECK_RET(hmc_pool_barrier(pool, TIMEOUT_MS), 0);
	free(out);
	free(in);
	printf("ok - rank %u: staged copies around the window's chunks\n", me);
}

#define THREADS		3

struct copier {
	struct hmc_pool *pool;
	uint32_t id;
};

/*
 * One of THREADS threads copying at once into every rank's segment (its
 * own region per rank), half the copies asynchronous, then reading each
 * region back: the pool's copies from any thread.
 */
static void *copier_run(void *arg)
{
	const struct copier *c = arg;
	uint8_t *out = malloc(REGION), *in = malloc(REGION);
	uint32_t phase = 7 + c->id, t, round;

	for (round = 0; round < 3; round++) {
		for (t = 0; t < n; t++) {
			char *at = (char *)hmc_pool_ptr(c->pool, HMC_POOL_HOST, t) +
				   region_off(phase, me);

			pattern_fill(out, REGION, seed(phase, me, t) + round);
			CHECK_RET(hmc_pool_copy(c->pool, at, out, REGION,
						HMC_POOL_H2G, 0), 0);
			memset(in, 0, REGION);
			CHECK_RET(hmc_pool_copy(c->pool, in, at, REGION,
						HMC_POOL_G2H, 0), 0);
			check_bytes(in, REGION, seed(phase, me, t) + round,
				    "threads", me, t);
		}
	}
	free(out);
	free(in);
	return NULL;
}

static void threads(struct hmc_pool *pool)
{
	struct copier c[THREADS];
	pthread_t tid[THREADS];
	uint32_t i;

	for (i = 0; i < THREADS; i++) {
		c[i] = (struct copier){ .pool = pool, .id = i };
		CHECK(!pthread_create(&tid[i], NULL, copier_run, &c[i]),
		      "pthread_create");
	}
	for (i = 0; i < THREADS; i++)
		pthread_join(tid[i], NULL);
	CHECK_RET(hmc_pool_barrier(pool, TIMEOUT_MS), 0);
	printf("ok - rank %u: %u threads copying at once\n", me, THREADS);
}

/* L, G2L, L2G, L2GH, GH2L on the device segment and device memory. */
static void device_kinds(struct hmc_pool *pool)
{
	const size_t len = DEV_REGION;
	uint8_t *host = malloc(len), *back = malloc(len);
	char *dseg = hmc_pool_ptr(pool, HMC_POOL_DEVICE, me);
	void *dev;
	uint32_t t;

	CHECK(dseg != NULL, "no device segment");
	CHECK_RET(hmc_mem_alloc(dev_type, 0, len, &dev), 0);
	if (!dseg || !dev)
		return;
	/* H2G into our device segment, G2H back. */
	pattern_fill(host, len, seed(10, me, me));
	CHECK_RET(hmc_pool_copy(pool, dseg + 7, host, len, HMC_POOL_H2G, 0), 0);
	CHECK_RET(hmc_pool_copy(pool, back, dseg + 7, len, HMC_POOL_G2H, 0), 0);
	check_bytes(back, len, seed(10, me, me), "H2G/G2H device segment", me,
		    me);
	/* G2L from it into device memory, L2G back to another offset. */
	CHECK_RET(hmc_pool_copy(pool, dev, dseg + 7, len, HMC_POOL_G2L, 0), 0);
	CHECK_RET(hmc_pool_copy(pool, dseg + 100000, dev, len, HMC_POOL_L2G, 0),
		  0);
	memset(back, 0, len);
	CHECK_RET(hmc_pool_copy(pool, back, dseg + 100000, len, HMC_POOL_AUTO,
				0), 0);
	check_bytes(back, len, seed(10, me, me), "G2L/L2G device", me, me);

	/* L2GH into every host segment, GH2L back through device memory. */
	for (t = 0; t < n; t++) {
		char *seg = hmc_pool_ptr(pool, HMC_POOL_HOST, t);

		pattern_fill(host, len, seed(11, me, t));
		CHECK_RET(hmc_mem_copy(dev_type, 0, dev, host, len,
				       HMC_COPY_H2D), 0);
		CHECK_RET(hmc_pool_copy(pool, seg + region_off(4, me), dev, len,
					t & 1 ? HMC_POOL_L2G : HMC_POOL_L2GH,
					t & 2 ? HMC_POOL_COPY_ASYNC : 0), 0);
		CHECK_RET(hmc_pool_wait(pool, TIMEOUT_MS), 0);
		CHECK_RET(hmc_mem_copy(dev_type, 0, dev, back, 16,
				       HMC_COPY_H2D), 0);	/* scribble */
		CHECK_RET(hmc_pool_copy(pool, dev, seg + region_off(4, me), len,
					t & 1 ? HMC_POOL_G2L : HMC_POOL_GH2L,
					0), 0);
		memset(back, 0, len);
		CHECK_RET(hmc_mem_copy(dev_type, 0, back, dev, len,
				       HMC_COPY_D2H), 0);
		check_bytes(back, len, seed(11, me, t), "L2GH/GH2L", me, t);
		/* G2G from our device segment to a remote host segment. */
		CHECK_RET(hmc_pool_copy(pool, seg + region_off(5, me), dseg + 7,
					len, HMC_POOL_G2G, 0), 0);
		CHECK_RET(hmc_pool_copy(pool, back, seg + region_off(5, me),
					len, HMC_POOL_G2H, 0), 0);
		check_bytes(back, len, seed(10, me, me), "G2G device to host",
			    me, t);
	}
	/* Kinds that do not match the memory. */
	CHECK_RET(hmc_pool_copy(pool, dseg, host, len, HMC_POOL_L2G, 0),
		  -EINVAL);
	CHECK_RET(hmc_pool_copy(pool, dseg, dev, len, HMC_POOL_H2G, 0),
		  -EINVAL);
	CHECK_RET(hmc_pool_copy(pool, dseg, dev, len, HMC_POOL_L2GH, 0),
		  -EINVAL);
	CHECK_RET(hmc_mem_free(dev_type, 0, dev), 0);
	free(host);
	free(back);
	printf("ok - rank %u: device kinds on %s\n", me,
	       hmc_mem_type_name(dev_type));
}

/*
 * Sizes around the boundaries of the ways a remote device segment is
 * reached: eager messages (32 KiB), message slots (256 KiB), the staging
 * window of relays (18 x 56 KiB), 1 MiB.
 */
static const size_t rdev_sizes[] = {
	1, 4095, 32768, 32769, 262143, 262144, 262145, 600001, 1032192,
	1032193, 1048577,
};

/* How a round's writer fills the next rank's device segment. */
enum rdev_write {
	RW_L2G,		/* from our device memory */
	RW_H2G,		/* from host memory */
	RW_G2G_OWN,	/* from our host segment (no staging on our side) */
	RW_AUTO_DEV,	/* AUTO from our device memory */
	RW_AUTO_HOST,	/* AUTO from host memory */
	RW_G2G_HOST,	/* from the previous rank's host segment (relay) */
	RW_G2G_DEV,	/* from the previous rank's device segment (relay) */
	RW_G2G_OWN_DEV,	/* from our device segment */
	RW_NR,
};

/* How it reads that back. */
enum rdev_read {
	RR_G2H,		/* into host memory, as a batch of two */
	RR_G2L,		/* into our device memory, asynchronously */
	RR_G2G_OWN,	/* into our host segment */
	RR_AUTO_DEV,	/* AUTO into our device memory */
	RR_G2G_HOST,	/* into the next rank's host segment (relay), then G2H */
	RR_G2G_OWN_DEV,	/* into our device segment, then G2H */
	RR_NR,
};

/* Round @round's bytes that rank @r places in its own segments. */
static uint64_t rdev_seed(uint32_t round, uint32_t r)
{
	return seed(40 + round, r, 77);
}

static int rdev_read(struct hmc_pool *pool, enum rdev_read how, char *from,
		     size_t len, uint8_t *out, void *dev)
{
	char *own = hmc_pool_ptr(pool, HMC_POOL_HOST, me) + HOFF;
	char *next = hmc_pool_ptr(pool, HMC_POOL_HOST, (me + 1) % n) + HOFF;
	char *own_dev = hmc_pool_ptr(pool, HMC_POOL_DEVICE, me) + DOFF_SRC;
	int ret;

	switch (how) {
	case RR_G2H: {
		size_t half = len / 2;
		struct hmc_pool_copy_desc d[2] = {
			{ .dst = out, .src = from, .len = half },
			{ .dst = out + half, .src = from + half,
			  .len = len - half },
		};

		return hmc_pool_copy_batch(pool, d, 2, HMC_POOL_G2H, 0);
	}
	case RR_G2L:
	case RR_AUTO_DEV:
		ret = hmc_pool_copy(pool, dev, from, len,
				    how == RR_G2L ? HMC_POOL_G2L : HMC_POOL_AUTO,
				    how == RR_G2L ? HMC_POOL_COPY_ASYNC : 0);
		if (!ret && how == RR_G2L)
			ret = hmc_pool_wait(pool, TIMEOUT_MS);
		return ret ?: hmc_mem_copy(dev_type, 0, out, dev, len,
					   HMC_COPY_D2H);
	case RR_G2G_OWN:
		ret = hmc_pool_copy(pool, own, from, len, HMC_POOL_G2G, 0);
		return ret ?: hmc_pool_copy(pool, out, own, len, HMC_POOL_GH2H,
					    0);
	case RR_G2G_OWN_DEV:
		ret = hmc_pool_copy(pool, own_dev, from, len, HMC_POOL_G2G, 0);
		return ret ?: hmc_pool_copy(pool, out, own_dev, len,
					    HMC_POOL_G2H, 0);
	default:
		ret = hmc_pool_copy(pool, next, from, len, HMC_POOL_G2G, 0);
		return ret ?: hmc_pool_copy(pool, out, next, len, HMC_POOL_G2H,
					    0);
	}
}

#define MIXED_ROUNDS	64

/*
 * Two ranks serving each other while each asks the other: pairs of ranks
 * (0-1, 2-3; an odd one out only joins the barriers) read each other's
 * device segment and write into it at once, so that the data of writes
 * and the data of reads cross between the same two ranks under ids each
 * counts on its own. Every rank has made as many requests before, and one
 * of a pair reads first where the other writes first: the data of our
 * read and of the partner's write carry the same id every time (with the
 * two in separate threads, the ids met in 4 of 12 runs). Sizes sent
 * eagerly and by rendezvous.
 */
static void mixed(struct hmc_pool *pool)
{
	static const size_t sizes[] = { DEV_REGION, 70001 };
	uint32_t partner = me ^ 1, i, round, k;
	char *own = (char *)hmc_pool_ptr(pool, HMC_POOL_DEVICE, me);
	char *theirs = partner < n ?
		       (char *)hmc_pool_ptr(pool, HMC_POOL_DEVICE, partner) :
		       NULL;
	uint8_t *out = malloc(70001), *in = malloc(70001);

	for (i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
		size_t len = sizes[i];

		pattern_fill(out, len, seed(80, me, i));
		CHECK_RET(hmc_pool_copy(pool, own + DOFF, out, len,
					HMC_POOL_H2G, 0), 0);
		CHECK_RET(hmc_pool_barrier(pool, TIMEOUT_MS), 0);
		for (round = 0; theirs && round < MIXED_ROUNDS; round++) {
			for (k = 0; k < 2; k++) {
				if ((k ^ me) & 1) {
					memset(in, 0, len);
					CHECK_RET(hmc_pool_copy(pool, in,
								theirs + DOFF,
								len, HMC_POOL_G2H,
								0), 0);
					check_bytes(in, len, seed(80, partner, i),
						    "read while writes cross",
						    partner, me);
					continue;
				}
				pattern_fill(out, len, seed(81 + round, me, i));
				CHECK_RET(hmc_pool_copy(pool, theirs + DOFF_SRC,
							out, len, HMC_POOL_H2G,
							0), 0);
			}
		}
		CHECK_RET(hmc_pool_barrier(pool, TIMEOUT_MS), 0);
		if (!theirs)
			continue;
		CHECK_RET(hmc_pool_copy(pool, in, own + DOFF_SRC, len,
					HMC_POOL_G2H, 0), 0);
		check_bytes(in, len, seed(81 + MIXED_ROUNDS - 1, partner, i),
			    "written while reads cross", partner, me);
	}
	CHECK_RET(hmc_pool_barrier(pool, TIMEOUT_MS), 0);
	free(out);
	free(in);
}

/*
 * Every kind that can touch another rank's device segment, at sizes
 * around every boundary: in round k each rank places its bytes in its own
 * segments, writes the next rank's device segment one way (sometimes
 * asynchronously), reads it back another way, and checks its own device
 * segment, written by the previous rank. Then the kinds that name host
 * segments must refuse a device segment, and ranges past one must fail.
 */
static void remote_device(struct hmc_pool *pool)
{
	const size_t max = 1048577;
	uint32_t next = (me + 1) % n, prev = (me + n - 1) % n, round = 0;
	uint8_t *host = malloc(max), *out = malloc(max);
	char *own_host = hmc_pool_ptr(pool, HMC_POOL_HOST, me);
	char *own_dev = hmc_pool_ptr(pool, HMC_POOL_DEVICE, me);
	char *next_dev = hmc_pool_ptr(pool, HMC_POOL_DEVICE, next);
	char *prev_dev = hmc_pool_ptr(pool, HMC_POOL_DEVICE, prev);
	char *prev_host = hmc_pool_ptr(pool, HMC_POOL_HOST, prev);
	void *dev = NULL;
	uint32_t w, i;
	int fails = failures;

	CHECK_RET(hmc_mem_alloc(dev_type, 0, max, &dev), 0);
	if (!dev || !next_dev || !prev_dev)
		return;
	for (w = 0; w < RW_NR; w++) {
		for (i = 0; i < sizeof(rdev_sizes) / sizeof(*rdev_sizes);
		     i++, round++) {
			size_t len = rdev_sizes[i];
			enum rdev_read how = (enum rdev_read)((w + i) % RR_NR);
			uint32_t flags = i & 1 ? HMC_POOL_COPY_ASYNC : 0;
			bool remote_src = w == RW_G2G_HOST || w == RW_G2G_DEV;
			uint32_t src_rank = remote_src ? prev : me;
			uint32_t writer_src = remote_src ? (prev + n - 1) % n :
							   prev;
			const void *src;
			int ret;

			/* Our bytes in our segments, for whoever takes them. */
			pattern_fill(host, len, rdev_seed(round, me));
			CHECK_RET(hmc_pool_copy(pool, own_host + HOFF, host, len,
						HMC_POOL_H2GH, 0), 0);
			CHECK_RET(hmc_pool_copy(pool, own_dev + DOFF_SRC, host,
						len, HMC_POOL_H2G, 0), 0);
			CHECK_RET(hmc_mem_copy(dev_type, 0, dev, host, len,
					       HMC_COPY_H2D), 0);
			CHECK_RET(hmc_pool_barrier(pool, TIMEOUT_MS), 0);

			switch (w) {
			case RW_L2G: case RW_AUTO_DEV: src = dev; break;
			case RW_H2G: case RW_AUTO_HOST: src = host; break;
			case RW_G2G_OWN: src = own_host + HOFF; break;
			case RW_G2G_HOST: src = prev_host + HOFF; break;
			case RW_G2G_DEV: src = prev_dev + DOFF_SRC; break;
			default: src = own_dev + DOFF_SRC; break;
			}
			ret = hmc_pool_copy(pool, next_dev + DOFF, src, len,
					    w == RW_L2G ? HMC_POOL_L2G :
					    w == RW_H2G ? HMC_POOL_H2G :
					    w == RW_AUTO_DEV || w == RW_AUTO_HOST ?
					    HMC_POOL_AUTO : HMC_POOL_G2G, flags);
			if (!ret && flags)
				ret = hmc_pool_wait(pool, TIMEOUT_MS);
			CHECK(!ret, "write %u of %zu bytes to rank %u's device segment: %s",
			      w, len, next, hmc_strerror(ret));
			CHECK_RET(hmc_pool_barrier(pool, TIMEOUT_MS), 0);

			memset(out, 0, len);
			ret = rdev_read(pool, how, next_dev + DOFF, len, out, dev);
			CHECK(!ret, "read %u of %zu bytes from rank %u's device segment: %s",
			      how, len, next, hmc_strerror(ret));
			check_bytes(out, len, rdev_seed(round, src_rank),
				    "remote device read back", me, next);
			/* What the previous rank wrote into ours. */
			memset(out, 0, len);
			CHECK_RET(hmc_pool_copy(pool, out, own_dev + DOFF, len,
						HMC_POOL_G2H, 0), 0);
			check_bytes(out, len, rdev_seed(round, writer_src),
				    "remote device written", prev, me);
			CHECK_RET(hmc_pool_barrier(pool, TIMEOUT_MS), 0);
			if (failures != fails) {
				printf("# rank %u: write %u, read %u, %zu bytes failed\n",
				       me, w, how, len);
				fails = failures;
			}
		}
	}

	overlap(pool, next_dev + DOFF, "overlapping G2G in a device segment");
	CHECK_RET(hmc_pool_barrier(pool, TIMEOUT_MS), 0);
	mixed(pool);

	/* Host-segment kinds name no device segment; ranges stay inside. */
	CHECK_RET(hmc_pool_copy(pool, next_dev, dev, 16, HMC_POOL_L2GH, 0),
		  -EINVAL);
	CHECK_RET(hmc_pool_copy(pool, next_dev, host, 16, HMC_POOL_H2GH, 0),
		  -EINVAL);
	CHECK_RET(hmc_pool_copy(pool, dev, next_dev, 16, HMC_POOL_GH2L, 0),
		  -EINVAL);
	CHECK_RET(hmc_pool_copy(pool, host, next_dev, 16, HMC_POOL_GH2H, 0),
		  -EINVAL);
	CHECK_RET(hmc_pool_copy(pool, next_dev + dev_size(next) - 8, host, 16,
				HMC_POOL_H2G, 0), -ERANGE);
	CHECK_RET(hmc_pool_copy(pool, host, next_dev + dev_size(next), 1,
				HMC_POOL_G2H, 0), -ERANGE);
	CHECK_RET(hmc_mem_free(dev_type, 0, dev), 0);
	free(host);
	free(out);
	CHECK_RET(hmc_pool_barrier(pool, TIMEOUT_MS), 0);
	printf("ok - rank %u: another rank's device segment, every kind, %u rounds\n",
	       me, round);
}

/* Whether this process maps @addr from a file (the ConnBuffer's memfd or
 * dma-buf) rather than anonymous memory. */
static bool mapped_from_file(const void *addr)
{
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned long lo, hi, ino;
	char line[512], path[256];
	bool file = false;

	while (f && fgets(line, sizeof(line), f)) {
		path[0] = '\0';
		if (sscanf(line, "%lx-%lx %*s %*s %*s %lu %255s", &lo, &hi, &ino,
			   path) < 3)
			continue;
		if ((uintptr_t)addr >= lo && (uintptr_t)addr < hi) {
			file = ino != 0;
			break;
		}
	}
	if (f)
		fclose(f);
	return file;
}

/*
 * Registered user memory: a page-aligned CPU range moves into the
 * ConnBuffer's room (same address, same bytes, now the buffer's pages), is
 * used straight by copies to and from every rank (and the next rank's
 * device segment), and gets private pages back, with its bytes, when it is
 * unregistered; ranges that cannot move (unaligned, too large for the
 * room) become memory regions of the communicator where its transport
 * takes them (tcp, to ranks on other hosts), copied from and into
 * without staging, or are classified only and staged.
 */
static void user_mem(struct hmc_pool *pool)
{
	const size_t len = (1 << 20) + 3 * 4096;	/* in the 2 MiB room */
	char *mem = mmap(NULL, 3 * USER_ROOM, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *back = malloc(len);
	uint32_t t, next = (me + 1) % n;
	const size_t part = 65537;	/* the bytes each rank exchanges */
	char *in = mem + 700000;	/* where they land, in the range */

	CHECK(mem != MAP_FAILED, "mmap");
	if (mem == MAP_FAILED)
		return;
	pattern_fill(mem, len, seed(50, me, 0));
	CHECK_RET(hmc_pool_register_user_mem(pool, mem, len, HMC_MEM_CPU), 0);
	check_bytes((uint8_t *)mem, len, seed(50, me, 0), "registering kept the bytes",
		    me, me);
	CHECK(mapped_from_file(mem), "a registered aligned range is still anonymous memory");

	/* From it to every rank's host segment, and back into it. */
	for (t = 0; t < n; t++) {
		char *seg = hmc_pool_ptr(pool, HMC_POOL_HOST, t);

		CHECK_RET(hmc_pool_copy(pool, seg + HOFF + me * part,
					mem + t * 4096 + 1, part, HMC_POOL_H2G,
					t & 1 ? HMC_POOL_COPY_ASYNC : 0), 0);
	}
	CHECK_RET(hmc_pool_wait(pool, TIMEOUT_MS), 0);
	CHECK_RET(hmc_pool_barrier(pool, TIMEOUT_MS), 0);
	for (t = 0; t < n; t++) {
		char *seg = hmc_pool_ptr(pool, HMC_POOL_HOST, t);
		uint32_t w = (me + t) % n;	/* a writer, one per target */

		memset(in, 0, part);
		CHECK_RET(hmc_pool_copy(pool, in, seg + HOFF + w * part, part,
					HMC_POOL_AUTO, 0), 0);
		pattern_fill(back, part + t * 4096 + 1, seed(50, w, 0));
		CHECK(!memcmp(in, back + t * 4096 + 1, part),
		      "into registered memory: writer %u, target %u", w, t);
	}
	/* The next rank's device segment, its owner pulling from our room. */
	if (dev_type != HMC_MEM_CPU && n > 1) {
		char *dseg = hmc_pool_ptr(pool, HMC_POOL_DEVICE, next);

		CHECK_RET(hmc_pool_copy(pool, dseg + DOFF, mem, 300001,
					HMC_POOL_H2G, 0), 0);
		memset(in, 0, 300001);
		CHECK_RET(hmc_pool_copy(pool, in, dseg + DOFF, 300001,
					HMC_POOL_G2H, 0), 0);
		CHECK(!memcmp(in, mem, 300001),
		      "device segment to registered memory");
	}
	CHECK_RET(hmc_pool_barrier(pool, TIMEOUT_MS), 0);

	/* Unregistered: private pages again, with what was written there. */
	memcpy(back, mem, len);
	CHECK_RET(hmc_pool_unregister_user_mem(pool, mem), 0);
	CHECK(!memcmp(back, mem, len), "unregistering lost bytes");
	CHECK(!mapped_from_file(mem), "an unregistered range is still the ConnBuffer's");

	/* Ranges that cannot move: unaligned, and larger than the room. */
	CHECK_RET(hmc_pool_register_user_mem(pool, mem + 8, 4096, HMC_MEM_CPU),
		  0);
	CHECK(!mapped_from_file(mem), "an unaligned range moved");
	CHECK_RET(hmc_pool_unregister_user_mem(pool, mem + 8), 0);
	CHECK_RET(hmc_pool_register_user_mem(pool, mem, 3 * USER_ROOM,
					     HMC_MEM_CPU), 0);
	CHECK(!mapped_from_file(mem), "a range larger than the room moved");
	pattern_fill(mem, part, seed(51, me, 0));
	CHECK_RET(hmc_pool_copy(pool, hmc_pool_ptr(pool, HMC_POOL_HOST, next) +
				HOFF + me * part, mem, part, HMC_POOL_H2G, 0), 0);
	CHECK_RET(hmc_pool_copy(pool, back, hmc_pool_ptr(pool, HMC_POOL_HOST,
							 next) + HOFF + me * part,
				part, HMC_POOL_G2H, 0), 0);
	check_bytes(back, part, seed(51, me, 0), "a staged registered range", me,
		    next);
	/* into the range itself, at an odd place: a get into its region */
	memset(mem + 2 * part, 0, part + 5);
	CHECK_RET(hmc_pool_copy(pool, mem + 2 * part + 5,
				hmc_pool_ptr(pool, HMC_POOL_HOST, next) + HOFF +
				me * part, part, HMC_POOL_G2H, 0), 0);
	check_bytes((uint8_t *)mem + 2 * part + 5, part, seed(51, me, 0),
		    "into a registered range that stayed", me, next);
	CHECK_RET(hmc_pool_unregister_user_mem(pool, mem), 0);

	/* Two moved ranges share the room; the second one past the first. */
	CHECK_RET(hmc_pool_register_user_mem(pool, mem, 4096, HMC_MEM_CPU), 0);
	CHECK_RET(hmc_pool_register_user_mem(pool, mem + USER_ROOM, 8192,
					     HMC_MEM_CPU), 0);
	CHECK(mapped_from_file(mem) && mapped_from_file(mem + USER_ROOM),
	      "two small ranges did not both move");
	CHECK_RET(hmc_pool_unregister_user_mem(pool, mem), 0);
	CHECK_RET(hmc_pool_unregister_user_mem(pool, mem + USER_ROOM), 0);
	CHECK_RET(hmc_pool_barrier(pool, TIMEOUT_MS), 0);
	munmap(mem, 3 * USER_ROOM);
	free(back);
	printf("ok - rank %u: registered user memory, straight to the wire\n",
	       me);
}

static void refusals(struct hmc_pool *pool)
{
	uint8_t buf[64] = { 0 };
	uint32_t last = n - 1;
	char *seg = hmc_pool_ptr(pool, HMC_POOL_HOST, last);
	size_t size = host_size(last);

	CHECK(hmc_pool_size(pool, HMC_POOL_HOST, last) == size, "size %llu",
	      (unsigned long long)hmc_pool_size(pool, HMC_POOL_HOST, last));
	CHECK_RET(hmc_pool_rank_of(pool, seg + size - 1), last);
	CHECK_RET(hmc_pool_rank_of(pool, buf), -EINVAL);
	/* Past the end, and straddling into the slot's unused part. */
	CHECK_RET(hmc_pool_copy(pool, seg + size - 10, buf, 20, HMC_POOL_H2G,
				0), -ERANGE);
	CHECK_RET(hmc_pool_copy(pool, buf, seg + size, 1, HMC_POOL_G2H, 0),
		  -ERANGE);
	if (n > 1) {	/* straddling two ranks' slots */
		char *first = hmc_pool_ptr(pool, HMC_POOL_HOST, 0);
		char *second = hmc_pool_ptr(pool, HMC_POOL_HOST, 1);

		CHECK_RET(hmc_pool_copy(pool, buf, second - 8, 16,
					HMC_POOL_G2H, 0), -ERANGE);
		CHECK_RET(hmc_pool_copy(pool, first, buf, second - first + 1,
					HMC_POOL_H2G, 0), -ERANGE);
	}
	/* Local memory running into the pool's range. */
	{
		char *base = hmc_pool_ptr(pool, HMC_POOL_HOST, 0);

		CHECK_RET(hmc_pool_copy(pool, base - 8, seg, 16, HMC_POOL_G2H,
					0), -ERANGE);
	}
	/* Kinds against addresses. */
	CHECK_RET(hmc_pool_copy(pool, buf, buf + 32, 16, HMC_POOL_H2G, 0),
		  -EINVAL);
	CHECK_RET(hmc_pool_copy(pool, seg, seg + 32, 16, HMC_POOL_G2H, 0),
		  -EINVAL);
	CHECK_RET(hmc_pool_copy(pool, seg, buf, 16, (enum hmc_pool_copy_kind)99,
				0), -EINVAL);
	CHECK_RET(hmc_pool_copy(pool, buf, buf + 32, 16, HMC_POOL_AUTO, 0),
		  -EINVAL);	/* no global side */
	CHECK_RET(hmc_pool_copy(pool, seg, buf, 16, HMC_POOL_H2G, 1U << 7),
		  -EINVAL);
	if (dev_type == HMC_MEM_CPU)	/* no device memory at all */
		CHECK_RET(hmc_pool_copy(pool, seg, buf, 16, HMC_POOL_L2G, 0),
			  -EINVAL);
	else		/* the device part of a slot is not a host segment */
		CHECK_RET(hmc_pool_copy(pool, hmc_pool_ptr(pool, HMC_POOL_DEVICE,
							   me), buf, 16,
					HMC_POOL_H2GH, 0), -EINVAL);
	/* A batch with one bad copy runs none. */
	{
		uint8_t mark[16];
		struct hmc_pool_copy_desc d[2] = {
			{ .dst = seg + region_off(6, me), .src = mark, .len = 16 },
			{ .dst = seg + size, .src = mark, .len = 16 },
		};

		memset(mark, 0xa5, sizeof(mark));
		CHECK_RET(hmc_pool_copy_batch(pool, d, 2, HMC_POOL_H2G, 0),
			  -ERANGE);
		CHECK_RET(hmc_pool_copy(pool, buf, seg + region_off(6, me), 16,
					HMC_POOL_G2H, 0), 0);
		CHECK(buf[0] != 0xa5, "a refused batch ran a copy");
	}
	/* register_user_mem: overlap, and pool memory is not user memory. */
	CHECK_RET(hmc_pool_register_user_mem(pool, buf, sizeof(buf),
					     HMC_MEM_CPU), 0);
	CHECK_RET(hmc_pool_register_user_mem(pool, buf + 8, 8, HMC_MEM_CPU),
		  -EEXIST);
	CHECK_RET(hmc_pool_register_user_mem(pool, seg, 8, HMC_MEM_CPU),
		  -EINVAL);
	CHECK_RET(hmc_pool_copy(pool, seg + region_off(6, me), buf, 16,
				HMC_POOL_AUTO, 0), 0);
	CHECK_RET(hmc_pool_unregister_user_mem(pool, buf), 0);
	CHECK_RET(hmc_pool_unregister_user_mem(pool, buf), -ENOENT);
	printf("ok - rank %u: refusals\n", me);
}

static void control(struct hmc_pool *pool)
{
	uint8_t extra[HMC_POOL_EXTRA_MAX], got[HMC_POOL_EXTRA_MAX];
	uint32_t *group = calloc(n + 1, sizeof(*group)), ng = 0, r, i;
	uint64_t mine[2] = { me * 1000003ULL, ~(uint64_t)me }, *all;
	size_t len = 1000 + me * 7919;

	pattern_fill(extra, len, seed(20, me, 0));
	CHECK_RET(hmc_pool_set_extra(pool, extra, len), 0);
	CHECK_RET(hmc_pool_set_extra(pool, extra, HMC_POOL_EXTRA_MAX + 1),
		  -EINVAL);
	CHECK_RET(hmc_pool_barrier(pool, TIMEOUT_MS), 0);
	for (r = 0; r < n; r++) {
		memset(got, 0, sizeof(got));
		CHECK_RET(hmc_pool_get_extra(pool, r, got, sizeof(got),
					     TIMEOUT_MS), 1000 + r * 7919);
		check_bytes(got, 1000 + r * 7919, seed(20, r, 0), "extra", r,
			    me);
	}

	all = calloc(n, sizeof(mine));
	CHECK_RET(hmc_pool_allgather(pool, mine, sizeof(mine), all,
				     TIMEOUT_MS), 0);
	for (r = 0; r < n; r++)
		CHECK(all[2 * r] == r * 1000003ULL && all[2 * r + 1] == ~(uint64_t)r,
		      "allgather: rank %u's part", r);

	/* Two subgroups at once: the even ranks and the odd ones. */
	for (r = me & 1; r < n; r += 2)
		group[ng++] = r;
	memset(all, 0, n * sizeof(mine));
	CHECK_RET(hmc_pool_group_allgather(pool, 100 + (me & 1), group, ng,
					   mine, sizeof(mine), all,
					   TIMEOUT_MS), 0);
	for (i = 0; i < ng; i++)
		CHECK(all[2 * i] == group[i] * 1000003ULL,
		      "subgroup allgather: member %u", i);
	CHECK_RET(hmc_pool_group_barrier(pool, 200, group, ng, TIMEOUT_MS), 0);
	/* A rank without a member, a rank twice, no ranks. */
	group[ng] = n;
	CHECK_RET(hmc_pool_group_barrier(pool, 201, group, ng + 1, TIMEOUT_MS),
		  -ENXIO);
	group[ng] = me;
	CHECK_RET(hmc_pool_group_barrier(pool, 201, group, ng + 1, TIMEOUT_MS),
		  -EINVAL);
	CHECK_RET(hmc_pool_group_barrier(pool, 201, group, 0, TIMEOUT_MS),
		  -EINVAL);
	CHECK_RET(hmc_pool_barrier(pool, TIMEOUT_MS), 0);
	free(all);
	free(group);
	printf("ok - rank %u: extra, allgather, subgroups\n", me);
}

/* The ranks that stay through the churn, and the joiner (if @joiner < n). */
static size_t churn_group(uint32_t *ranks, uint32_t joiner)
{
	size_t ng = 0;
	uint32_t r;

	for (r = 0; r + 2 < n; r++)
		ranks[ng++] = r;
	if (joiner < n)
		ranks[ng++] = joiner;
	return ng;
}

/*
 * The leaver's second life: it joins the world again (taking a free rank),
 * enters the pool while the survivors refresh theirs, and exchanges data
 * with them.
 */
static void rejoin(void)
{
	uint32_t *group = calloc(n, sizeof(*group)), r;
	uint8_t *buf = malloc(REGION);
	struct hmc_world *world;
	struct hmc_pool *pool;
	char err[256] = "";
	size_t ng;
	int ret;

	{
		HMC_OPTS(hmc_world_opts, wo, .err_msg = err,
			 .err_msg_len = sizeof(err));

		ret = hmc_world_join(getenv("HMC_STORE"), &wo, &world);
	}
	CHECK(!ret, "join: %s: %s", hmc_strerror(ret), err);
	if (ret)
		return;
	me = hmc_world_rank(world);
	{
		HMC_OPTS(hmc_pool_opts, po, .host_size = host_size(me),
			 .timeout_ms = TIMEOUT_MS);

		ret = hmc_pool_create(world, &po, &pool);
	}
	CHECK_RET(ret, 0);
	if (ret)
		return;
	ng = churn_group(group, me);
	for (r = 0; r + 2 < n; r++) {
		char *seg = hmc_pool_ptr(pool, HMC_POOL_HOST, r);

		pattern_fill(buf, REGION, seed(33, me, r));
		CHECK_RET(hmc_pool_copy(pool, seg + region_off(2, me), buf,
					REGION, HMC_POOL_H2G, 0), 0);
	}
	CHECK_RET(hmc_pool_group_barrier(pool, 310, group, ng, TIMEOUT_MS), 0);
	for (r = 0; r + 2 < n; r++) {
		char *seg = hmc_pool_ptr(pool, HMC_POOL_HOST, me);

		CHECK_RET(hmc_pool_copy(pool, buf, seg + region_off(2, r),
					REGION, HMC_POOL_G2H, 0), 0);
		check_bytes(buf, REGION, seed(32, r, me), "into the joiner", r,
			    me);
	}
	CHECK_RET(hmc_pool_group_barrier(pool, 311, group, ng, TIMEOUT_MS), 0);
	CHECK_RET(hmc_pool_destroy(pool), 0);
	CHECK_RET(hmc_world_finalize(world), 0);
	free(buf);
	free(group);
	printf("ok - rank %u: joined again, the survivors see its segment\n",
	       me);
}

/* The survivors' side of the join: refresh, then data both ways. */
static void welcome(struct hmc_world *world, struct hmc_pool *pool)
{
	uint32_t *group = calloc(n, sizeof(*group)), joiner = n;
	uint8_t *buf = malloc(REGION);
	struct hmc_world_event ev;
	char *seg;
	size_t ng;

	while (joiner == n &&
	       !hmc_world_wait_event(world, &ev, TIMEOUT_MS))
		if (ev.type == HMC_WORLD_EV_JOINED)
			joiner = ev.rank;
	CHECK(joiner < n, "no rank joined");
	if (joiner >= n)
		return;
	CHECK_RET(hmc_pool_refresh(pool, TIMEOUT_MS), 0);
	seg = hmc_pool_ptr(pool, HMC_POOL_HOST, joiner);
	CHECK(seg && hmc_pool_size(pool, HMC_POOL_HOST, joiner) ==
	      host_size(joiner), "the joiner's segment did not appear");
	if (!seg)
		return;
	ng = churn_group(group, joiner);
	pattern_fill(buf, REGION, seed(32, me, joiner));
	CHECK_RET(hmc_pool_copy(pool, seg + region_off(2, me), buf, REGION,
				HMC_POOL_H2G, 0), 0);
	CHECK_RET(hmc_pool_group_barrier(pool, 310, group, ng, TIMEOUT_MS), 0);
	CHECK_RET(hmc_pool_copy(pool, buf, hmc_pool_ptr(pool, HMC_POOL_HOST, me) +
				region_off(2, joiner), REGION, HMC_POOL_G2H,
				0), 0);
	check_bytes(buf, REGION, seed(33, joiner, me), "from the joiner",
		    joiner, me);
	CHECK_RET(hmc_pool_group_barrier(pool, 311, group, ng, TIMEOUT_MS), 0);
	free(buf);
	free(group);
	printf("ok - rank %u: rank %u joined, its segment appeared\n", me,
	       joiner);
}

static void *kill_later(void *arg)
{
	usleep(300 * 1000);
	raise(SIGKILL);
	return arg;
}

/*
 * The last rank leaves, the one before dies; the others copy to both
 * until their copies fail, then go on among themselves; the leaver joins
 * again and the survivors take it in.
 */
static void churn(struct hmc_world *world, struct hmc_pool *pool)
{
	uint32_t leaver = n - 1, victim = n - 2, r, ng;
	uint32_t *survivors = calloc(n, sizeof(*survivors));
	char **segs = calloc(n, sizeof(*segs));
	char **dsegs = calloc(n, sizeof(*dsegs));
	uint8_t *buf = malloc(REGION);
	int ret, i;

	ng = (uint32_t)churn_group(survivors, n);
	/* Global addresses stay what they were; only the copies fail. */
	for (r = 0; r < n; r++) {
		segs[r] = hmc_pool_ptr(pool, HMC_POOL_HOST, r);
		dsegs[r] = hmc_pool_ptr(pool, HMC_POOL_DEVICE, r);
	}
	CHECK_RET(hmc_pool_barrier(pool, TIMEOUT_MS), 0);
	if (me == leaver) {
		usleep(200 * 1000);
		CHECK_RET(hmc_pool_destroy(pool), 0);
		CHECK_RET(hmc_world_finalize(world), 0);
		printf("ok - rank %u left\n", me);
		usleep(500 * 1000);	/* the others see it go first */
		rejoin();
		goto out;
	}
	if (me == victim) {
		pthread_t killer;

		/*
		 * It dies in the middle of copies to the survivors' device
		 * segments (host ones without -d): their owners' services must
		 * go on serving the others.
		 */
		CHECK(!pthread_create(&killer, NULL, kill_later, NULL),
		      "pthread_create");
		pattern_fill(buf, REGION, seed(34, me, 0));
		for (i = 0; i < 1000000; i++)
			for (r = 0; r < ng; r++)
				hmc_pool_copy(pool, (dsegs[r] ? dsegs[r] : segs[r]) +
					      region_off(5, me), buf, REGION,
					      HMC_POOL_H2G, 0);
		raise(SIGKILL);
	}
	/*
	 * Copies to both run until each fails; it must fail cleanly. With
	 * device segments, every other pair of copies goes to the device
	 * segment, which its owner serves.
	 */
	for (r = victim; r <= leaver; r++) {
		pattern_fill(buf, REGION, seed(30, me, r));
		ret = 0;
		for (i = 0; i < 100000 && !ret; i++) {
			char *seg = dsegs[r] && (i & 2) ? dsegs[r] : segs[r];

			ret = hmc_pool_copy(pool, seg + region_off(0, me), buf,
					    REGION, HMC_POOL_H2G,
					    i & 1 ? HMC_POOL_COPY_ASYNC : 0);
			if (!ret && (i & 1))
				ret = hmc_pool_wait(pool, TIMEOUT_MS);
			if (!ret)
				ret = hmc_pool_copy(pool, buf,
						    seg + region_off(0, me),
						    REGION, HMC_POOL_G2H, 0);
			if (!ret)
				check_bytes(buf, REGION, seed(30, me, r),
					    "before the churn", me, r);
		}
		CHECK(ret == -ECONNRESET || ret == -EPIPE || ret == -ENOTCONN,
		      "copy to rank %u after it went: %d (%s)", r, ret,
		      hmc_strerror(ret));
		CHECK_RET(hmc_pool_copy(pool, buf, segs[r], 16, HMC_POOL_G2H, 0),
			  -ECONNRESET);
		CHECK(hmc_pool_ptr(pool, HMC_POOL_HOST, r) == NULL,
		      "rank %u's segment is still there", r);
		if (!dsegs[r])
			continue;
		CHECK_RET(hmc_pool_copy(pool, dsegs[r], buf, 16, HMC_POOL_H2G, 0),
			  -ECONNRESET);
		CHECK(hmc_pool_ptr(pool, HMC_POOL_DEVICE, r) == NULL,
		      "rank %u's device segment is still there", r);
	}
	/* The survivors still copy among themselves. */
	CHECK_RET(hmc_pool_group_barrier(pool, 300, survivors, ng, TIMEOUT_MS),
		  0);
	for (r = 0; r < ng; r++) {
		pattern_fill(buf, REGION, seed(31, me, r));
		CHECK_RET(hmc_pool_copy(pool, segs[r] + region_off(1, me), buf,
					REGION, HMC_POOL_H2G, 0), 0);
	}
	for (r = 0; r < ng && dsegs[r]; r++) {
		pattern_fill(buf, REGION, seed(35, me, r));
		CHECK_RET(hmc_pool_copy(pool, dsegs[r] + region_off(1, me), buf,
					REGION, HMC_POOL_H2G, 0), 0);
	}
	CHECK_RET(hmc_pool_group_barrier(pool, 301, survivors, ng, TIMEOUT_MS),
		  0);
	for (r = 0; r < ng; r++) {
		CHECK_RET(hmc_pool_copy(pool, buf, segs[me] + region_off(1, r),
					REGION, HMC_POOL_G2H, 0), 0);
		check_bytes(buf, REGION, seed(31, r, me), "after the churn", r,
			    me);
		if (!dsegs[me])
			continue;
		CHECK_RET(hmc_pool_copy(pool, buf, dsegs[me] + region_off(1, r),
					REGION, HMC_POOL_G2H, 0), 0);
		check_bytes(buf, REGION, seed(35, r, me),
			    "device segment after the churn", r, me);
	}
	printf("ok - rank %u: leave and SIGKILL seen as -ECONNRESET\n", me);
	welcome(world, pool);
	CHECK_RET(hmc_pool_barrier(pool, TIMEOUT_MS), 0);
	CHECK_RET(hmc_pool_destroy(pool), 0);
	/* The world lost a member: finalize must still end, in time. */
	hmc_world_finalize(world);
out:
	free(buf);
	free(segs);
	free(dsegs);
	free(survivors);
}

/* With HMC_GPU_MOCK=1: the mock runtime saw no misuse and no leak. */
static void check_mock(void)
{
	static const char *const libs[] = {
		[HMC_MEM_CUDA] = "libcuda.so.1", [HMC_MEM_ROCM] = "libamdhip64.so",
		[HMC_MEM_ASCEND] = "libascendcl.so", [HMC_MEM_CNRT] = "libcnrt.so",
		[HMC_MEM_MUSA] = "libmusart.so",
	};
	const char *env = getenv("HMC_GPU_MOCK");
	int (*report)(char *msg, size_t len);
	char msg[256] = "";
	void *h;

	if (dev_type == HMC_MEM_CPU || !env || strcmp(env, "1"))
		return;
	h = dlopen(libs[dev_type], RTLD_NOW | RTLD_NOLOAD);
	*(void **)&report = h ? dlsym(h, "mock_report") : NULL;
	CHECK(report, "%s is not the mock runtime", libs[dev_type]);
	if (report)
		CHECK(!report(msg, sizeof(msg)), "mock %s: %s",
		      libs[dev_type], msg);
}

int main(int argc, char **argv)
{
	bool churn_mode = false;
	struct hmc_world *world;
	struct hmc_pool *pool;
	char err[256] = "";
	int opt, ret;

	while ((opt = getopt(argc, argv, "d:m:M")) != -1) {
		if (opt == 'd') {
			for (dev_type = HMC_MEM_CUDA;
			     strcmp(hmc_mem_type_name(dev_type), optarg);
			     dev_type++)
				if (!strcmp(hmc_mem_type_name(dev_type),
					    "unknown"))
					return 2;
		} else if (opt == 'm' && !strcmp(optarg, "churn")) {
			churn_mode = true;
		} else if (opt == 'M') {
			expect_mapped = true;
		} else {
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	{
		HMC_OPTS(hmc_world_opts, wo, .err_msg = err,
			 .err_msg_len = sizeof(err));

		ret = hmc_world_init(&wo, &world);
	}
	if (ret) {
		printf("not ok - world: %s: %s\n", hmc_strerror(ret), err);
		return 1;
	}
	me = hmc_world_rank(world);
	n = hmc_world_size(world);
	{
		HMC_OPTS(hmc_pool_opts, po, .host_size = host_size(me),
			 .device_size = dev_size(me), .device_type = dev_type,
			 .device_id = 0, .timeout_ms = TIMEOUT_MS,
			 .user_mem_size = USER_ROOM);

		ret = hmc_pool_create(world, &po, &pool);
	}
	CHECK_RET(ret, 0);
	if (ret)
		return 1;
	if (churn_mode) {
		churn(world, pool);
		return failures ? 1 : 0;
	}
	for (uint32_t r = 0; r < n; r++) {
		CHECK(hmc_pool_size(pool, HMC_POOL_HOST, r) == host_size(r),
		      "rank %u's host size", r);
		CHECK(hmc_pool_size(pool, HMC_POOL_DEVICE, r) == dev_size(r),
		      "rank %u's device size", r);
		CHECK_RET(hmc_pool_rank_of(pool, hmc_pool_ptr(pool,
					   HMC_POOL_HOST, r)), r);
	}
	host_kinds(pool);
	stage_sizes(pool);
	if (dev_type != HMC_MEM_CPU)
		device_kinds(pool);
	if (dev_type != HMC_MEM_CPU && n > 1)
		remote_device(pool);
	refusals(pool);
	user_mem(pool);
	threads(pool);
	control(pool);
	CHECK_RET(hmc_pool_barrier(pool, TIMEOUT_MS), 0);
	{
		/* Still registered at destroy: it gets its pages back. */
		char *mem = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		pattern_fill(mem, 8192, seed(52, me, 0));
		CHECK_RET(hmc_pool_register_user_mem(pool, mem, 8192,
						     HMC_MEM_CPU), 0);
		CHECK_RET(hmc_pool_destroy(pool), 0);
		CHECK(!mapped_from_file(mem), "destroy left user memory shared");
		check_bytes((uint8_t *)mem, 8192, seed(52, me, 0),
			    "user memory after destroy", me, me);
		munmap(mem, 8192);
	}
	check_mock();
	CHECK_RET(hmc_world_finalize(world), 0);
	printf("%s - rank %u: %d checks, %d failed\n",
	       failures ? "not ok" : "ok", me, checks, failures);
	return failures ? 1 : 0;
}
