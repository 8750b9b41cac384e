// SPDX-License-Identifier: MIT
/*
 * test_comm: N ranks (processes) in a full mesh move data with every
 * transfer call of the communicator and check every byte.
 *
 * Each rank's buffer (a different, unaligned size per rank) is cut into
 * N + 1 regions: a landing zone where its gets land, and one slot per rank.
 * Slot r of rank q's buffer is written only by rank r's puts; rank r's own
 * slot holds the pattern that its puts send and that the others' gets read.
 * In every round the ranks refill their buffers, meet at a barrier, put
 * random non-overlapping ranges (0 and 1 byte, unaligned, up to several MiB,
 * up to the buffer end) into their slot at every peer and get random ranges
 * of every peer's own slot, complete them in the round's way, verify their
 * gets, make the puts visible (flush then a tag, or put_signal), and verify
 * the whole slot of every peer in their own buffer: the bytes put there and
 * the untouched bytes around them. A receiver replays the sender's
 * generator, so it knows where every byte must have landed. Then come range
 * errors, -ENOENT, -ENOTCONN, and -ETIMEDOUT of a request whose target is
 * stopped, which later completes and can still be waited for.
 *
 *   test_comm [-n RANKS] [-b BASE_BYTES] [-m OPS] [-t SECONDS] [-N NAME]
 *             [--ips IP,IP,...] [--netns NS,NS,...] [--kmod]
 *
 *   --ips    the address each rank listens on (default 127.0.0.1)
 *   --netns  run rank r in network namespace NS_r (/run/netns/NS_r)
 *   --kmod   buffers must be backed by /dev/hmc, and the module's global
 *            live counters must be zero once the ranks have exited
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/uio.h>
#include <unistd.h>

#include <hmc/hmc.h>

#include "mem/devhmc.h"
#include "itest.h"

#define OP_TIMEOUT_MS	20000
#define MIB		(1024 * 1024)

enum mode {
	M_BLOCKING,	/* put/get, one at a time */
	M_NB_WAIT,	/* put_nb/get_nb, waited in random order */
	M_NB_WAITALL,	/* all completed by one wait_all */
	M_NB_TEST,	/* polled with test */
	M_FLUSH_FIRST,	/* flush and tag before the puts are waited for */
	M_SIGNAL,	/* every put is a put_signal */
	M_MIXED,	/* each op blocking or not, completed any which way */
	M_MANY,		/* thousands of small ops in flight at once */
	M_RANGE,	/* no data: range errors and zero-length edges */
};

static const char *const mode_name[] = {
	[M_BLOCKING] = "blocking",
	[M_NB_WAIT] = "nb-wait-random",
	[M_NB_WAITALL] = "nb-wait-all",
	[M_NB_TEST] = "nb-test",
	[M_FLUSH_FIRST] = "flush-before-wait",
	[M_SIGNAL] = "put-signal",
	[M_MIXED] = "mixed",
	[M_MANY] = "many-in-flight",
	[M_RANGE] = "ranges",
};

static const enum mode rounds[] = {
	M_BLOCKING, M_NB_WAIT, M_RANGE, M_NB_WAITALL, M_NB_TEST,
	M_FLUSH_FIRST, M_SIGNAL, M_MIXED, M_MANY, M_MIXED,
};

enum how { HOW_BLOCK, HOW_WAIT, HOW_TEST, HOW_WAITALL };

struct cfg {
	int nranks;
	size_t base;
	size_t many;			/* ops per peer and way in M_MANY */
	int timeout_s;
	const char *name;
	const char *ips[ITEST_MAX_RANKS];
	const char *netns[ITEST_MAX_RANKS];
	bool kmod;
};

struct ctx {
	const struct cfg *cfg;
	struct mesh *m;
	struct hmc_comm *comm;
	uint8_t *p;
	size_t size;
	int me, n;
};

/* ---------------------------------------------------------------- layout */

/* Region @idx of rank @r's buffer: -1 the landing zone, else slot idx. */
static void region(const struct ctx *c, int r, int idx, size_t *start,
		   size_t *end)
{
	size_t size = rank_buf_size(c->cfg->base, r);
	size_t sl = size / (size_t)(c->n + 1);

	*start = (size_t)(idx + 1) * sl;
	*end = idx == c->n - 1 ? size : *start + sl;
}

/* My landing zone for gets from @q. */
static void landing(const struct ctx *c, int q, size_t *start, size_t *end)
{
	size_t z0, z1, part;
	int k = q < c->me ? q : q - 1;

	region(c, c->me, -1, &z0, &z1);
	part = (z1 - z0) / (size_t)(c->n - 1);
	*start = z0 + (size_t)k * part;
	*end = k == c->n - 2 ? z1 : *start + part;
}

static uint64_t seed_src(int k, int r) { return 0x5000 + (uint64_t)k * 64 + (uint64_t)r; }
static uint64_t seed_inbox(int k, int me, int s) { return 0x700000 + (uint64_t)k * 4096 + (uint64_t)me * 64 + (uint64_t)s; }
static uint64_t seed_landing(int k, int me) { return 0x9000 + (uint64_t)k * 64 + (uint64_t)me; }

#define TAG_DONE(k, s)		(0xd0e0000000000000ULL | (uint64_t)(k) << 16 | (uint64_t)(s))
#define TAG_FLUSHED(k, s)	(0xf105000000000000ULL | (uint64_t)(k) << 16 | (uint64_t)(s))
#define TAG_SIG(k, s, i)	(0x5100000000000000ULL | (uint64_t)(k) << 40 | \
				 (uint64_t)(s) << 32 | (uint64_t)(i))
#define TAG_SIG_IDX(t)		((uint32_t)(t))
#define TAG_SIG_HI(t)		((t) & ~0xffffffffULL)
#define EDGE_IDX		0xed9e
#define TAG_RESUME		0x7e5ee7e5ee7e5eeULL
#define TAG_IDLE		0x1d1e1d1e1d1e1d1eULL
#define IDLE_FLAG		0xf1a9f1a9f1a9f1a9ULL
#define IDLE_SPIN_MS		50	/* well over the engine's 10 ms (engine.c) */

/* ----------------------------------------------------------------- plans */

/* How each transfer of a round in @mode is issued and completed. */
static void pick_hows(struct xfers *xs, enum mode mode, uint64_t seed)
{
	struct rng r;
	size_t i;

	rng_seed(&r, 0x40f, seed, (uint64_t)mode, 0);
	for (i = 0; i < xs->n; i++) {
		enum how how;

		switch (mode) {
		case M_BLOCKING:
		case M_SIGNAL:
			how = HOW_BLOCK;
			break;
		case M_NB_WAITALL:
			how = HOW_WAITALL;
			break;
		case M_NB_TEST:
			how = HOW_TEST;
			break;
		case M_MIXED:
			how = (enum how)rng_range(&r, HOW_BLOCK, HOW_WAITALL);
			break;
		case M_MANY:
			how = (enum how)rng_range(&r, HOW_WAIT, HOW_WAITALL);
			break;
		default:
			how = HOW_WAIT;
			break;
		}
		xs->v[i].how = (uint8_t)how;
	}
}

/* Rank @s's puts into slot s of rank @q's buffer in round @k. */
static void plan_puts(const struct ctx *c, int k, enum mode mode, int s, int q,
		      struct xfers *xs)
{
	size_t d0, d1, s0, s1;
	struct rng r;

	xs->n = 0;
	if (mode == M_RANGE)
		return;
	rng_seed(&r, 0x9075, (uint64_t)k, (uint64_t)s, (uint64_t)q);
	region(c, q, s, &d0, &d1);
	region(c, s, s, &s0, &s1);
	xfers_carve(xs, &r, mode == M_MANY, true, q, d0, d1, s0, s1,
		    mode == M_MANY ? c->cfg->many : 64);
	pick_hows(xs, mode, (uint64_t)k << 16 | (uint64_t)s << 8 | (uint64_t)q);
}

/* My gets from rank @q's own slot into my landing zone for it. */
static void plan_gets(const struct ctx *c, int k, enum mode mode, int q,
		      struct xfers *xs)
{
	size_t d0, d1, s0, s1;
	struct rng r;

	xs->n = 0;
	if (mode == M_RANGE)
		return;
	rng_seed(&r, 0x9e75, (uint64_t)k, (uint64_t)c->me, (uint64_t)q);
	landing(c, q, &d0, &d1);
	region(c, q, q, &s0, &s1);
	xfers_carve(xs, &r, mode == M_MANY, false, q, d0, d1, s0, s1,
		    mode == M_MANY ? c->cfg->many : 64);
	pick_hows(xs, mode, 1ULL << 40 | (uint64_t)k << 16 |
		  (uint64_t)c->me << 8 | (uint64_t)q);
}

/* ------------------------------------------------------------ issuing */

static int issue(struct ctx *c, struct xfer *o)
{
	int rc;

	if (o->how == HOW_BLOCK) {
		rc = o->put ? hmc_comm_put(c->comm, (uint32_t)o->peer, o->loc,
					   o->rem, o->len) :
			      hmc_comm_get(c->comm, (uint32_t)o->peer, o->loc,
					   o->rem, o->len);
		o->done = true;
	} else {
		rc = o->put ? hmc_comm_put_nb(c->comm, (uint32_t)o->peer,
					      o->loc, o->rem, o->len, &o->req) :
			      hmc_comm_get_nb(c->comm, (uint32_t)o->peer,
					      o->loc, o->rem, o->len, &o->req);
		o->posted = !rc;
		o->done = rc != 0;
	}
	if (rc)
		diag("%s to rank %d [loc %zu rem %zu len %zu]: %s",
		     o->put ? "put" : "get", o->peer, o->loc, o->rem, o->len,
		     hmc_strerror(rc));
	return rc;
}

static int finish_one(struct xfer *o, int rc, const char *how)
{
	o->done = true;
	if (rc)
		diag("%s of %s to rank %d [loc %zu rem %zu len %zu]: %s", how,
		     o->put ? "put_nb" : "get_nb", o->peer, o->loc, o->rem,
		     o->len, hmc_strerror(rc));
	return rc ? 1 : 0;
}

/*
 * Complete every posted op of @ops (pointers) in its own way: one wait_all
 * for HOW_WAITALL, polling with test for HOW_TEST, wait in the given (random)
 * order for HOW_WAIT. Then each request must be gone (-ENOENT). Errors.
 */
static int complete(struct ctx *c, struct xfer **ops, size_t n)
{
	hmc_req_t *reqs = calloc(n + 1, sizeof(*reqs));
	struct xfer **sel = calloc(n + 1, sizeof(*sel));
	int *st = calloc(n + 1, sizeof(*st));
	int64_t deadline;
	size_t i, k = 0, left;
	int rc, bad = 0;

	if (!reqs || !sel || !st)
		abort();
	for (i = 0; i < n; i++)
		if (ops[i]->posted && !ops[i]->done &&
		    ops[i]->how == HOW_WAITALL) {
			sel[k] = ops[i];
			reqs[k++] = ops[i]->req;
		}
	if (k) {
		rc = hmc_comm_wait_all(c->comm, reqs, k, OP_TIMEOUT_MS, st);
		if (rc) {
			diag("wait_all of %zu requests: %s", k, hmc_strerror(rc));
			bad++;
		}
		for (i = 0; i < k; i++)
			bad += finish_one(sel[i], st[i], "wait_all status");
	}

	deadline = itest_now_ms() + OP_TIMEOUT_MS;
	do {
		left = 0;
		for (i = 0; i < n; i++) {
			struct xfer *o = ops[i];

			if (!o->posted || o->done || o->how != HOW_TEST)
				continue;
			rc = hmc_comm_test(c->comm, o->req);
			if (rc == -EINPROGRESS)
				left++;
			else
				bad += finish_one(o, rc, "test");
		}
	} while (left && itest_now_ms() < deadline);
	if (left) {
		diag("%zu requests still pending after polling with test for %d ms",
		     left, OP_TIMEOUT_MS);
		bad += (int)left;
	}

	for (i = 0; i < n; i++) {
		struct xfer *o = ops[i];

		if (!o->posted || o->done)
			continue;	/* test leftovers are waited here too */
		bad += finish_one(o, hmc_comm_wait(c->comm, o->req,
						   OP_TIMEOUT_MS), "wait");
	}

	/* No completion is reported twice, and none is left behind. */
	for (i = 0; i < n; i++) {
		struct xfer *o = ops[i];

		if (!o->posted)
			continue;
		rc = hmc_comm_wait(c->comm, o->req, 0);
		if (rc != -ENOENT) {
			diag("second wait of a completed request: %s, want -ENOENT",
			     hmc_strerror(rc));
			bad++;
		}
		rc = hmc_comm_test(c->comm, o->req);
		if (rc != -ENOENT) {
			diag("test of a completed request: %s, want -ENOENT",
			     hmc_strerror(rc));
			bad++;
		}
		o->posted = false;
	}
	free(reqs);
	free(sel);
	free(st);
	return bad;
}

/* Flush @q, then tell it that my puts have landed. */
static int flush_and_tag(struct ctx *c, int q, uint64_t tag)
{
	int rc = hmc_comm_flush(c->comm, (uint32_t)q);

	if (!rc)
		rc = hmc_comm_send_tag(c->comm, (uint32_t)q, tag);
	if (rc)
		diag("flush and tag to rank %d: %s", q, hmc_strerror(rc));
	return rc ? 1 : 0;
}

/* ----------------------------------------------------------- range cases */

static int expect(int got, int want, const char *what, int q)
{
	if (got == want)
		return 0;
	diag("%s to rank %d: %s, want %s", what, q, hmc_strerror(got),
	     hmc_strerror(want));
	return 1;
}

/* Calls that must fail with -ERANGE and change nothing, and the edges. */
static int range_cases(struct ctx *c, int q, int k)
{
	const size_t lq = c->size, rq = rank_buf_size(c->cfg->base, q);
	const struct { size_t loc, rem, len; const char *what; } bad[] = {
		{ lq - 5, 0, 10, "local range past the end" },
		{ lq + 1, 0, 0, "local offset past the end" },
		{ 0, rq - 5, 10, "remote range past the peer's end" },
		{ 0, rq + 1, 0, "remote offset past the peer's end" },
		{ SIZE_MAX - 3, 0, 8, "local offset near SIZE_MAX" },
		{ 0, SIZE_MAX - 3, 8, "remote offset near SIZE_MAX" },
		{ 1, 0, SIZE_MAX, "length SIZE_MAX (local)" },
		{ 0, 1, SIZE_MAX, "length SIZE_MAX (remote)" },
		{ SIZE_MAX, SIZE_MAX, SIZE_MAX, "everything SIZE_MAX" },
		{ lq, rq, 1, "one byte at both ends" },
	};
	uint32_t p = (uint32_t)q;
	hmc_req_t req;
	size_t i;
	int rc, n = 0;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *w = bad[i].what;
		size_t lo = bad[i].loc, ro = bad[i].rem, len = bad[i].len;

		n += expect(hmc_comm_put(c->comm, p, lo, ro, len), -ERANGE, w, q);
		n += expect(hmc_comm_get(c->comm, p, lo, ro, len), -ERANGE, w, q);
		n += expect(hmc_comm_put_signal(c->comm, p, lo, ro, len, 1),
			    -ERANGE, w, q);
		req = 0;
		rc = hmc_comm_put_nb(c->comm, p, lo, ro, len, &req);
		n += expect(rc, -ERANGE, w, q);
		if (!rc)
			hmc_comm_wait(c->comm, req, OP_TIMEOUT_MS);
		req = 0;
		rc = hmc_comm_get_nb(c->comm, p, lo, ro, len, &req);
		n += expect(rc, -ERANGE, w, q);
		if (!rc)
			hmc_comm_wait(c->comm, req, OP_TIMEOUT_MS);
	}
	/* The remote range is checked against the peer's size, not ours. */
	if (rq < lq)
		n += expect(hmc_comm_put(c->comm, p, lq - 16, rq - 8, 16),
			    -ERANGE, "a range that fits us but not the peer", q);

	/* Zero bytes at the very end of both buffers is fine. */
	n += expect(hmc_comm_put(c->comm, p, lq, rq, 0), 0, "put of 0 at the end", q);
	n += expect(hmc_comm_get(c->comm, p, lq, rq, 0), 0, "get of 0 at the end", q);
	rc = hmc_comm_put_nb(c->comm, p, lq, rq, 0, &req);
	n += expect(rc, 0, "put_nb of 0 at the end", q);
	if (!rc)
		n += expect(hmc_comm_wait(c->comm, req, OP_TIMEOUT_MS), 0,
			    "wait for a put_nb of 0", q);
	rc = hmc_comm_get_nb(c->comm, p, lq, rq, 0, &req);
	n += expect(rc, 0, "get_nb of 0 at the end", q);
	if (!rc)
		n += expect(hmc_comm_wait(c->comm, req, OP_TIMEOUT_MS), 0,
			    "wait for a get_nb of 0", q);
	n += expect(hmc_comm_put_signal(c->comm, p, lq, rq, 0,
					TAG_SIG(k, c->me, EDGE_IDX)),
		    0, "put_signal of 0 at the end", q);

	n += expect(hmc_comm_put_nb(c->comm, p, 0, 0, 1, NULL), -EINVAL,
		    "put_nb without a request pointer", q);
	n += expect((int)hmc_comm_peer_buf_size(c->comm, p) == (int)rq ? 0 : -EIO,
		    0, "hmc_comm_peer_buf_size", q);
	return n;
}

/* Requests and peers that do not exist. */
static int bogus_cases(struct ctx *c)
{
	const uint32_t none = 200;
	hmc_req_t req;
	uint64_t tag;
	int n = 0;

	n += expect(hmc_comm_wait(c->comm, 0, 0), -ENOENT, "wait(0)", -1);
	n += expect(hmc_comm_test(c->comm, 0), -ENOENT, "test(0)", -1);
	n += expect(hmc_comm_wait(c->comm, 0xdeadbeef00000001ULL, 10), -ENOENT,
		    "wait for an id never issued", -1);
	n += expect(hmc_comm_wait(c->comm, ~0ULL, 0), -ENOENT, "wait(~0)", -1);
	n += expect(hmc_comm_put(c->comm, none, 0, 0, 1), -ENOTCONN, "put", none);
	n += expect(hmc_comm_get_nb(c->comm, none, 0, 0, 1, &req), -ENOTCONN,
		    "get_nb", none);
	n += expect(hmc_comm_flush(c->comm, none), -ENOTCONN, "flush", none);
	n += expect(hmc_comm_send_tag(c->comm, none, 1), -ENOTCONN, "send_tag",
		    none);
	n += expect((int)hmc_comm_peer_buf_size(c->comm, none), -ENOTCONN,
		    "peer_buf_size", none);
	n += expect(hmc_comm_recv_tag(c->comm, none, &tag, 50), -ETIMEDOUT,
		    "recv_tag (50 ms)", none);
	n += expect(hmc_comm_is_connected(c->comm, none) ? -EISCONN : 0, 0,
		    "is_connected", none);
	return n;
}

/* ----------------------------------------------------------------- rounds */

static int recv_expect(struct ctx *c, int s, uint64_t want, const char *what)
{
	uint64_t tag = 0;
	int rc = hmc_comm_recv_tag(c->comm, (uint32_t)s, &tag, OP_TIMEOUT_MS);

	if (rc || tag != want) {
		diag("%s from rank %d: %s, tag 0x%llx, want 0x%llx", what, s,
		     hmc_strerror(rc), (unsigned long long)tag,
		     (unsigned long long)want);
		return 1;
	}
	return 0;
}

/* Receive rank @s's put_signal tags, checking each op's bytes on arrival. */
static int recv_signals(struct ctx *c, int s, int k, const struct xfers *in)
{
	uint8_t *seen = calloc(in->n + 1, 1);
	size_t i;
	int bad = 0;

	if (!seen)
		abort();
	for (i = 0; i < in->n; i++) {
		uint64_t tag = 0;
		const struct xfer *o;
		char w[96];
		uint32_t idx;
		int rc;

		rc = hmc_comm_recv_tag(c->comm, (uint32_t)s, &tag, OP_TIMEOUT_MS);
		idx = TAG_SIG_IDX(tag);
		if (rc || TAG_SIG_HI(tag) != TAG_SIG_HI(TAG_SIG(k, s, 0)) ||
		    idx >= in->n || seen[idx]) {
			diag("signal %zu of %zu from rank %d: %s, tag 0x%llx",
			     i, in->n, s, hmc_strerror(rc),
			     (unsigned long long)tag);
			bad++;
			break;
		}
		seen[idx] = 1;
		o = &in->v[idx];
		snprintf(w, sizeof(w), "put_signal %u from rank %d, on its tag",
			 idx, s);
		bad += !data_check(c->p, o->rem, o->len, seed_src(k, s), o->loc,
				   w);
	}
	free(seen);
	return bad;
}

static int run_round(struct ctx *c, int k, enum mode mode)
{
	struct xfers *outs = calloc((size_t)c->n, sizeof(*outs));
	struct xfers *gets = calloc((size_t)c->n, sizeof(*gets));
	struct xfers in = { 0 };
	struct xfer **all;
	size_t total = 0, nall = 0, bytes = 0, nputs = 0, ngets = 0, i, j;
	size_t d0, d1;
	struct rng r;
	char what[96];
	int q, rc, bad = 0;

	if (!outs || !gets)
		abort();

	/* Refill: my slot is the source, the rest is poison. */
	region(c, c->me, c->me, &d0, &d1);
	data_fill(c->p, d0, d1 - d0, seed_src(k, c->me));
	for (q = 0; q < c->n; q++) {
		if (q == c->me)
			continue;
		plan_puts(c, k, mode, q, c->me, &in);
		region(c, c->me, q, &d0, &d1);
		xfers_poison(c->p, &in, d0, d1, seed_src(k, q),
			     seed_inbox(k, c->me, q));
		plan_puts(c, k, mode, c->me, q, &outs[q]);
		plan_gets(c, k, mode, q, &gets[q]);
		landing(c, q, &d0, &d1);
		xfers_poison(c->p, &gets[q], d0, d1, seed_src(k, q),
			     seed_landing(k, c->me));
		total += outs[q].n + gets[q].n;
	}
	rc = hmc_comm_barrier(c->comm, OP_TIMEOUT_MS);
	if (rc) {
		tap(false, "round %d (%s): barrier: %s", k, mode_name[mode],
		    hmc_strerror(rc));
		goto out;
	}

	if (mode == M_RANGE) {
		bad += bogus_cases(c);
		for (q = 0; q < c->n; q++)
			if (q != c->me)
				bad += range_cases(c, q, k);
	}

	/* Issue every op to every peer in a random order. */
	all = calloc(total + 1, sizeof(*all));
	if (!all)
		abort();
	for (q = 0; q < c->n; q++) {
		for (j = 0; q != c->me && j < outs[q].n; j++)
			all[nall++] = &outs[q].v[j];
		for (j = 0; q != c->me && j < gets[q].n; j++)
			all[nall++] = &gets[q].v[j];
	}
	rng_seed(&r, 0x155e, (uint64_t)k, (uint64_t)c->me, 0);
	{
		size_t *order = calloc(nall + 1, sizeof(*order));
		struct xfer **tmp = calloc(nall + 1, sizeof(*tmp));

		if (!order || !tmp)
			abort();
		for (i = 0; i < nall; i++)
			order[i] = i;
		rng_shuffle(&r, order, nall);
		for (i = 0; i < nall; i++)
			tmp[i] = all[order[i]];
		memcpy(all, tmp, nall * sizeof(*all));
		free(order);
		free(tmp);
	}
	for (i = 0; i < nall; i++) {
		struct xfer *o = all[i];

		bytes += o->len;
		nputs += o->put;
		ngets += !o->put;
		if (mode == M_SIGNAL && o->put) {
			rc = hmc_comm_put_signal(c->comm, (uint32_t)o->peer,
						 o->loc, o->rem, o->len,
						 TAG_SIG(k, c->me, o->idx));
			o->done = true;
			if (rc) {
				diag("put_signal %u to rank %d: %s", o->idx,
				     o->peer, hmc_strerror(rc));
				bad++;
			}
			continue;
		}
		bad += issue(c, o) ? 1 : 0;
	}

	if (mode == M_FLUSH_FIRST)	/* flush covers puts not yet waited for */
		for (q = 0; q < c->n; q++)
			if (q != c->me)
				bad += flush_and_tag(c, q, TAG_FLUSHED(k, c->me));

	/* Complete in a random order (the shuffled issue order, reversed). */
	for (i = 0; i < nall / 2; i++) {
		struct xfer *t = all[i];

		all[i] = all[nall - 1 - i];
		all[nall - 1 - i] = t;
	}
	bad += complete(c, all, nall);
	free(all);

	/* My gets. */
	for (q = 0; q < c->n; q++) {
		if (q == c->me)
			continue;
		landing(c, q, &d0, &d1);
		snprintf(what, sizeof(what), "round %d gets from rank %d", k, q);
		bad += !xfers_check(c->p, &gets[q], d0, d1, seed_src(k, q),
				    seed_landing(k, c->me), what);
	}

	/*
	 * Make my puts visible and say that I am done with the peer's buffer:
	 * it refills its slot for the next round once it has this tag.
	 */
	for (q = 0; q < c->n; q++)
		if (q != c->me)
			bad += flush_and_tag(c, q, TAG_DONE(k, c->me));

	/* What the others put into my buffer. */
	for (q = 0; q < c->n; q++) {
		if (q == c->me)
			continue;
		plan_puts(c, k, mode, q, c->me, &in);
		if (mode == M_SIGNAL)
			bad += recv_signals(c, q, k, &in);
		else if (mode == M_RANGE)
			bad += recv_expect(c, q, TAG_SIG(k, q, EDGE_IDX),
					   "put_signal of 0 bytes");
		else if (mode == M_FLUSH_FIRST)
			bad += recv_expect(c, q, TAG_FLUSHED(k, q),
					   "tag after a flush of unwaited puts");
		/* Signals and FLUSHED promise the data; else it is DONE. */
		if (mode != M_SIGNAL && mode != M_FLUSH_FIRST)
			bad += recv_expect(c, q, TAG_DONE(k, q), "done tag");
		region(c, c->me, q, &d0, &d1);
		snprintf(what, sizeof(what), "round %d puts from rank %d", k, q);
		bad += !xfers_check(c->p, &in, d0, d1, seed_src(k, q),
				    seed_inbox(k, c->me, q), what);
		if (mode == M_SIGNAL || mode == M_FLUSH_FIRST)
			bad += recv_expect(c, q, TAG_DONE(k, q), "done tag");
	}
	/* Nobody wrote into my own slot. */
	region(c, c->me, c->me, &d0, &d1);
	bad += !data_check(c->p, d0, d1 - d0, seed_src(k, c->me), d0,
			   "my own slot, read only by the others");

	tap(!bad, "round %d (%s): %zu puts and %zu gets (%zu bytes) to %d peers, every byte checked",
	    k, mode_name[mode], nputs, ngets, bytes, c->n - 1);
out:
	for (q = 0; q < c->n; q++) {
		xfers_free(&outs[q]);
		xfers_free(&gets[q]);
	}
	free(outs);
	free(gets);
	xfers_free(&in);
	return bad;
}

/* ------------------------------------------------- a stopped target */

static bool proc_stopped(pid_t pid)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'T' || p[2] == 't');
}

/*
 * Rank 0 stops rank 1 (SIGSTOP) and gets from it: a transport that needs
 * the target to act keeps the request pending, so wait(0) says -ETIMEDOUT
 * and leaves it valid; after SIGCONT it completes, with the right bytes.
 */
static int timeout_case(struct ctx *c, int k)
{
	static const size_t lens[] = { 8, 1 * MIB + 3 };
	size_t r0, r1, l0, l1;
	bool pending = false;
	int bad = 0, rc, st;
	unsigned int i;
	pid_t pid = c->m->pid[1];

	if (itest_transport(0, 1) == HMC_TRANSPORT_VERBS) {
		tap_skip("RDMA reads need nothing from the target's processes",
			 "wait(0) on a pending get: -ETIMEDOUT");
		return 0;
	}
	region(c, 1, 1, &r0, &r1);
	landing(c, 1, &l0, &l1);
	for (i = 0; i < 2; i++) {
		size_t len = lens[i];
		hmc_req_t req;
		int64_t t0;

		if (len > l1 - l0)
			len = l1 - l0;
		if (len > r1 - r0 - 5)
			len = r1 - r0 - 5;

		data_fill(c->p, l0, len, seed_landing(k, 0));
		data_unlike(c->p, l0, len, seed_src(k, 1), r0 + 5);
		kill(pid, SIGSTOP);
		t0 = itest_now_ms();
		while (!proc_stopped(pid) && itest_now_ms() - t0 < 2000)
			itest_sleep_ms(1);
		rc = hmc_comm_get_nb(c->comm, 1, l0, r0 + 5, len, &req);
		if (rc) {
			kill(pid, SIGCONT);
			diag("get_nb of %zu from a stopped rank: %s", len,
			     hmc_strerror(rc));
			bad++;
			continue;
		}
		rc = hmc_comm_wait(c->comm, req, 0);
		if (rc == -ETIMEDOUT) {
			pending = true;
			bad += expect(hmc_comm_test(c->comm, req), -EINPROGRESS,
				      "test of a pending get", 1);
			rc = hmc_comm_wait_all(c->comm, &req, 1, 0, &st);
			bad += expect(rc, -ETIMEDOUT, "wait_all(0) of a pending get", 1);
			bad += expect(st, -EINPROGRESS, "its status", 1);
			itest_sleep_ms(100);
			bad += expect(hmc_comm_wait(c->comm, req, 30), -ETIMEDOUT,
				      "wait(30 ms) while the target is stopped", 1);
			kill(pid, SIGCONT);
			rc = hmc_comm_wait(c->comm, req, OP_TIMEOUT_MS);
			bad += expect(rc, 0, "wait after the target resumed", 1);
		} else {
			kill(pid, SIGCONT);
			bad += expect(rc, 0, "wait(0) of a get that completed", 1);
		}
		bad += expect(hmc_comm_wait(c->comm, req, 0), -ENOENT,
			      "wait of a released request", 1);
		bad += !data_check(c->p, l0, len, seed_src(k, 1), r0 + 5,
				   "get that waited out a stopped target");
	}
	if (pending)
		tap(!bad, "wait(0) on a pending get: -ETIMEDOUT, the request stays valid and completes with its data");
	else if (bad)
		tap(false, "gets from a stopped rank");
	else
		tap_skip("every get completed at post on this transport",
			 "wait(0) on a pending get: -ETIMEDOUT");
	return bad;
}

struct resumer {
	pid_t pid;
	int after_ms;
	int resumed;		/* atomic */
};

static void *resume_later(void *arg)
{
	struct resumer *r = arg;

	itest_sleep_ms(r->after_ms);
	__atomic_store_n(&r->resumed, 1, __ATOMIC_SEQ_CST);
	kill(r->pid, SIGCONT);
	return NULL;
}

/*
 * Flush means visible: rank 0 stops rank 1, puts into it and flushes while
 * a thread resumes it 300 ms later. Whenever flush returns, the bytes must
 * already be in rank 1's memory, which rank 0 reads itself
 * (process_vm_readv at the address rank 1 sent), not through libhmc.
 */
static int flush_case(struct ctx *c, int k, uint64_t rbase)
{
	struct resumer res = { .pid = c->m->pid[1], .after_ms = 300 };
	size_t s0, s1, d0, d1, len;
	struct iovec lv, rv;
	pthread_t tid;
	hmc_req_t req;
	uint8_t *seen;
	bool early;
	ssize_t n;
	int rc, bad = 0;

	region(c, 0, 0, &s0, &s1);
	region(c, 1, 0, &d0, &d1);
	len = d1 - d0 < 512 * 1024 + 3 ? d1 - d0 : 512 * 1024 + 3;
	if (len > s1 - s0)
		len = s1 - s0;
	seen = malloc(len);
	if (!seen)
		abort();
	kill(res.pid, SIGSTOP);
	while (!proc_stopped(res.pid))
		itest_sleep_ms(1);
	rc = hmc_comm_put_nb(c->comm, 1, s0, d0, len, &req);
	bad += expect(rc, 0, "put_nb to a stopped rank", 1);
	if (pthread_create(&tid, NULL, resume_later, &res)) {
		kill(res.pid, SIGCONT);
		abort();
	}
	rc = hmc_comm_flush(c->comm, 1);
	early = !__atomic_load_n(&res.resumed, __ATOMIC_SEQ_CST);
	lv = (struct iovec){ seen, len };
	rv = (struct iovec){ (void *)(uintptr_t)(rbase + d0), len };
	n = process_vm_readv(res.pid, &lv, 1, &rv, 1, 0);
	pthread_join(tid, NULL);
	bad += expect(rc, 0, "flush to a stopped rank", 1);
	if (!bad && !rc)
		bad += expect(hmc_comm_wait(c->comm, req, OP_TIMEOUT_MS), 0,
			      "wait for the flushed put", 1);
	if (n != (ssize_t)len) {
		tap_skip("process_vm_readv cannot read the peer",
			 "flush to a stopped rank: the data is in its memory when flush returns");
	} else {
		bad += !data_check(seen, 0, len, seed_src(k, 0), s0,
				   "the peer's memory when flush returned");
		tap(!bad, "flush to a stopped rank returned %s it resumed, with all %zu bytes in its memory",
		    early ? "before" : "after", len);
	}
	free(seen);
	return bad;
}

/* Where rank 0 writes the flag that ends rank 1's idle time. */
static size_t idle_flag_off(const struct ctx *c)
{
	size_t d0, d1;

	region(c, 1, 0, &d0, &d1);
	return (d0 + 7) & ~(size_t)7;
}

/*
 * Rank 1 spins on hmc_comm_progress() without sleeping, long enough for
 * the engine to take transport descriptors out of its epoll set, then
 * stops calling libhmc and polls its own memory. Only its progress
 * thread, which must watch them again before it sleeps, can serve rank
 * 0's get and flag put (UCX over tcp moves data with the target's help).
 */
static int idle_target(struct ctx *c)
{
	uint64_t *flag = (uint64_t *)(c->p + idle_flag_off(c));
	int64_t t0;
	int rc;

	__atomic_store_n(flag, 0, __ATOMIC_RELAXED);
	rc = hmc_comm_send_tag(c->comm, 0, TAG_IDLE);
	if (expect(rc, 0, "idle tag", 0))
		return 1;
	t0 = itest_now_ms();
	while (itest_now_ms() - t0 < IDLE_SPIN_MS)
		hmc_comm_progress(c->comm);
	t0 = itest_now_ms();
	while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) != IDLE_FLAG &&
	       itest_now_ms() - t0 < OP_TIMEOUT_MS + 10000)
		itest_sleep_ms(1);
	return !tap(__atomic_load_n(flag, __ATOMIC_ACQUIRE) == IDLE_FLAG,
		    "idle after spinning, the progress thread served rank 0's get and put");
}

static int idle_case(struct ctx *c, int k)
{
	uint64_t flag = IDLE_FLAG;
	size_t r0, r1, l0, l1, len;
	int rc, bad;

	if (recv_expect(c, 1, TAG_IDLE, "idle tag"))
		return 1;
	itest_sleep_ms(4 * IDLE_SPIN_MS);	/* rank 1 stops calling libhmc */
	region(c, 1, 1, &r0, &r1);
	landing(c, 1, &l0, &l1);
	len = 256 * 1024 + 5;
	if (len > l1 - l0)
		len = l1 - l0;
	if (len > r1 - r0)
		len = r1 - r0;
	data_unlike(c->p, l0, len, seed_src(k, 1), r0);
	rc = hmc_comm_get(c->comm, 1, l0, r0, len);
	bad = expect(rc, 0, "get from an idle rank", 1);
	bad += !data_check(c->p, l0, len, seed_src(k, 1), r0,
			   "get from an idle rank");
	memcpy(c->p + l0, &flag, sizeof(flag));
	rc = hmc_comm_put(c->comm, 1, l0, idle_flag_off(c), sizeof(flag));
	bad += expect(rc, 0, "flag put to an idle rank", 1);
	tap(!bad, "a get of %zu bytes from a rank idle after spinning", len);
	return bad;
}

/* Rank 0's cases against a stopped rank 1; then rank 1 goes on. */
static int stopped_cases(struct ctx *c, int k)
{
	uint64_t rbase = 0;
	int rc, bad;

	rc = hmc_comm_recv_tag(c->comm, 1, &rbase, OP_TIMEOUT_MS);
	bad = expect(rc, 0, "rank 1's buffer address", 1);
	bad += timeout_case(c, k);
	if (!rc)
		bad += flush_case(c, k, rbase);
	rc = hmc_comm_send_tag(c->comm, 1, TAG_RESUME);
	bad += expect(rc, 0, "resume tag", 1);
	return bad + idle_case(c, k);
}

/* -------------------------------------------------------------- a rank */

/*
 * Move into network namespace @ns like `ip netns exec` does: setns(), then
 * a private mount namespace with /sys remounted, because UCX finds its
 * network devices under /sys/class/net.
 */
static int join_netns(const char *ns)
{
	char path[256];
	int fd, rc;

	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		tap(false, "open %s: %s", path, strerror(errno));
		return -1;
	}
	rc = setns(fd, CLONE_NEWNET);
	close(fd);
	if (rc || unshare(CLONE_NEWNS) ||
	    mount("", "/", NULL, MS_SLAVE | MS_REC, NULL) ||
	    umount2("/sys", MNT_DETACH) ||
	    mount(ns, "/sys", "sysfs", 0, NULL)) {
		tap(false, "enter network namespace %s: %s", ns, strerror(errno));
		return -1;
	}
	return 0;
}

static int rank_main(struct mesh *m, void *arg)
{
	const struct cfg *cfg = arg;
	HMC_OPTS(hmc_comm_opts, opts, .rank = (uint32_t)m->rank,
		 .connect_timeout_ms = 15000, .op_timeout_ms = OP_TIMEOUT_MS);
	struct ctx c = { .cfg = cfg, .m = m, .me = m->rank, .n = m->nranks };
	struct hmc_buf *buf;
	enum hmc_buf_backing backing;
	size_t d0, d1;
	unsigned int i;
	int rc, q, bad = 0;

	itest_prefix("%s r%d: ", cfg->name, m->rank);
	if (cfg->netns[m->rank] && join_netns(cfg->netns[m->rank]))
		return 1;
	c.size = rank_buf_size(cfg->base, m->rank);
	if (comm_setup(m->rank, c.size, cfg->ips[m->rank], &opts, &buf, &c.comm))
		return 1;
	c.p = hmc_buf_ptr(buf);
	backing = hmc_buf_backing(buf);
	if (cfg->kmod)
		tap(backing == HMC_BUF_BACKING_KMOD,
		    "buffer of %zu bytes backed by /dev/hmc (%s)", c.size,
		    hmc_buf_backing_name(backing));
	else
		diag("buffer of %zu bytes, backing %s", c.size,
		     hmc_buf_backing_name(backing));

	if (mesh_exchange(m, (uint16_t)hmc_comm_listen_port(c.comm)) ||
	    mesh_connect(m, c.comm, cfg->ips, 15000))
		goto out;
	for (q = 0; q < c.n; q++)
		if (q != c.me &&
		    hmc_comm_peer_buf_size(c.comm, (uint32_t)q) !=
		    (int64_t)rank_buf_size(cfg->base, q)) {
			diag("rank %d's buffer size: %lld", q,
			     (long long)hmc_comm_peer_buf_size(c.comm, (uint32_t)q));
			bad++;
		}
	tap(!bad, "every peer's buffer size known");

	for (i = 0; i < sizeof(rounds) / sizeof(rounds[0]); i++)
		bad += run_round(&c, (int)i, rounds[i]);

	/*
	 * Rank 0 against a stopped rank 1 (-ETIMEDOUT, flush); the others go
	 * on to the goodbye. Every peer's tags of the last round came in, so
	 * nobody reads my slot any more: refill it.
	 */
	region(&c, c.me, c.me, &d0, &d1);
	data_fill(c.p, d0, d1 - d0, seed_src(99, c.me));
	rc = hmc_comm_barrier(c.comm, OP_TIMEOUT_MS);
	bad += expect(rc, 0, "barrier before the timeout case", -1);
	if (c.me == 0) {
		bad += stopped_cases(&c, 99);
	} else if (c.me == 1) {
		rc = hmc_comm_send_tag(c.comm, 0, (uint64_t)(uintptr_t)c.p);
		bad += expect(rc, 0, "my buffer address", 0);
		bad += recv_expect(&c, 0, TAG_RESUME, "resume tag");
		bad += idle_target(&c);
	}
	{
		int all[ITEST_MAX_RANKS];

		for (q = 0; q < c.n; q++)
			all[q] = q;
		mesh_goodbye(c.comm, c.me, all, c.n);
	}
out:
	hmc_comm_destroy(c.comm);
	hmc_buf_destroy(buf);
	return bad || itest_failures();
}

/* ------------------------------------------------------------------ main */

static int split(char *s, const char **v, int max)
{
	int n = 0;
	char *tok, *save = NULL;

	for (tok = strtok_r(s, ",", &save); tok && n < max;
	     tok = strtok_r(NULL, ",", &save))
		v[n++] = tok;
	return n;
}

static bool kmod_counters_zero(void)
{
	static const char *const names[] = {
		"bufs_live", "bytes_live", "pages_pinned", "mappings_live",
		"handles_live",
	};
	uint64_t st[HMC_STAT_COUNT];
	bool ok = true;
	int fd, rc, i;

	fd = devhmc_open(0, NULL, HMC_LOG_ERROR);
	if (fd < 0) {
		diag("open /dev/hmc: %s", hmc_strerror(fd));
		return false;
	}
	rc = devhmc_get_stats(fd, true, st);
	close(fd);
	if (rc) {
		diag("GET_STATS: %s", hmc_strerror(rc));
		return false;
	}
	for (i = 0; i <= HMC_STAT_HANDLES_LIVE; i++) {
		if (st[i]) {
			diag("%s = %llu", names[i], (unsigned long long)st[i]);
			ok = false;
		}
	}
	return ok;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "ips", required_argument, NULL, 'I' },
		{ "netns", required_argument, NULL, 'S' },
		{ "kmod", no_argument, NULL, 'K' },
		{ 0 }
	};
	struct cfg cfg = { .nranks = 2, .base = 8 * MIB, .many = 0,
			   .timeout_s = 90, .name = "comm" };
	int i, opt, nips = 0, nns = 0, bad;

	while ((opt = getopt_long(argc, argv, "n:b:m:t:N:", lopts, NULL)) != -1) {
		switch (opt) {
		case 'n': cfg.nranks = atoi(optarg); break;
		case 'b': cfg.base = strtoull(optarg, NULL, 0); break;
		case 'm': cfg.many = strtoull(optarg, NULL, 0); break;
		case 't': cfg.timeout_s = atoi(optarg); break;
		case 'N': cfg.name = optarg; break;
		case 'I': nips = split(optarg, cfg.ips, ITEST_MAX_RANKS); break;
		case 'S': nns = split(optarg, cfg.netns, ITEST_MAX_RANKS); break;
		case 'K': cfg.kmod = true; break;
		default:
			fprintf(stderr, "usage: see the comment at the top of %s\n",
				__FILE__);
			return 2;
		}
	}
	if (cfg.nranks < 2 || cfg.nranks > ITEST_MAX_RANKS ||
	    cfg.base < 64 * 1024 || (nips && nips != cfg.nranks) ||
	    (nns && nns != cfg.nranks)) {
		fprintf(stderr, "test_comm: bad arguments\n");
		return 2;
	}
	for (i = nips; i < cfg.nranks; i++)
		cfg.ips[i] = "127.0.0.1";
	if (!cfg.many)
		cfg.many = 4000 / (size_t)(cfg.nranks - 1);
	setvbuf(stdout, NULL, _IONBF, 0);

	bad = mesh_run(cfg.name, cfg.nranks, rank_main, &cfg, cfg.timeout_s);
	if (cfg.kmod) {
		itest_prefix("%s: ", cfg.name);
		bad += !tap(kmod_counters_zero(),
			    "/dev/hmc global live counters back to zero");
	}
	return bad ? 1 : 0;
}
