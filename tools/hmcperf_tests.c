// SPDX-License-Identifier: MIT
/*
 * hmcperf test loops, both roles, following ucx_perftest's methodology:
 *
 *  - *_lat ping-pong (put_lat, put_signal_lat, tag_lat): each side sends
 *    into the other's receive area and waits for the arrival; put_lat
 *    busy-polls the last byte of its own memory (a sequence number) while
 *    calling hmc_comm_progress(), like ucp_put_lat. Latency is half the
 *    round trip of each iteration.
 *  - get_lat: one get at a time; latency is the whole operation.
 *  - *_bw: a window of up to -O non-blocking operations, the oldest waited
 *    before its slot is reused (ucx_perftest's -O), then a flush; the
 *    server spins on hmc_comm_progress() (UCX emulates RMA with active
 *    messages on some transports, so the target must progress) until the
 *    client's STOP tag.
 *
 * With validation, every payload is a xorshift stream seeded by (size,
 * iteration, writer) and the receiver checks every byte: after each
 * ping-pong arrival, and for windowed tests batch by batch (a window of
 * distinct slots, then a BATCH/ACK tag exchange). Generating and checking
 * stay outside the timed sections where the protocol allows.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hmcperf.h"

#define SN_NONE		0xff	/* never a sequence number */
#define SN_MOD		254
#define PING_SLOTS	2	/* ping-pong alternates two slots */
#define POLL_CHECK	4096	/* spins between liveness checks */
#define TAG_POLL	16	/* spins between looks for a tag */
#define PASSIVE_POLL	1024	/* memory polls between progress calls (RDMA) */

enum side { SIDE_SERVER, SIDE_CLIENT };

static const char *const test_names[PERF_TEST_MAX] = {
	[PERF_PUT_BW] = "put_bw",
	[PERF_GET_BW] = "get_bw",
	[PERF_PUT_SIGNAL_BW] = "put_signal_bw",
	[PERF_PUT_LAT] = "put_lat",
	[PERF_GET_LAT] = "get_lat",
	[PERF_PUT_SIGNAL_LAT] = "put_signal_lat",
	[PERF_TAG_LAT] = "tag_lat",
};

const char *perf_test_name(enum perf_test test)
{
	return (unsigned int)test < PERF_TEST_MAX ? test_names[test] : "?";
}

int perf_test_by_name(const char *name)
{
	int i;

	for (i = 0; i < PERF_TEST_MAX; i++)
		if (!strcmp(name, test_names[i]))
			return i;
	return -1;
}

bool perf_test_is_lat(enum perf_test test)
{
	return test >= PERF_PUT_LAT;
}

static bool is_pingpong(enum perf_test test)
{
	return test == PERF_PUT_LAT || test == PERF_PUT_SIGNAL_LAT ||
	       test == PERF_TAG_LAT;
}

size_t perf_slots(const struct perf_params *p)
{
	if (p->test == PERF_TAG_LAT)
		return 0;
	if (is_pingpong(p->test))
		return PING_SLOTS;
	if (p->test == PERF_GET_LAT || !p->validate)
		return 1;
	return p->window;
}

int perf_left_ms(const struct perf *pf)
{
	int64_t left = (pf->deadline - perf_now_ns()) / 1000000;

	return left < 1 ? 1 : left > 0x7fffffff ? 0x7fffffff : (int)left;
}

/* ------------------------------------------------------------ payloads */

static uint64_t seed_of(size_t size, uint64_t iter, enum side writer)
{
	uint64_t x = size * 0x9e3779b97f4a7c15ULL ^ iter * 0xbf58476d1ce4e5b9ULL ^
		     (uint64_t)writer << 63;

	x ^= x >> 31;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 29;
	return x | 1;	/* xorshift state must not be 0 */
}

static inline uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static void pattern_fill(uint8_t *p, size_t len, uint64_t seed)
{
	uint64_t w;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		w = xorshift(&seed);
		memcpy(p + i, &w, 8);
	}
	if (i < len) {
		w = xorshift(&seed);
		memcpy(p + i, &w, len - i);
	}
}

/* Offset of the first byte that differs from the stream, or -1. */
static long pattern_check(const uint8_t *p, size_t len, uint64_t seed,
			  uint8_t *expected)
{
	uint8_t want[8];
	uint64_t w;
	size_t i, j, n;

	for (i = 0; i < len; i += 8) {
		w = xorshift(&seed);
		n = len - i < 8 ? len - i : 8;
		if (n == 8 && !memcmp(p + i, &w, 8))
			continue;
		memcpy(want, &w, 8);
		for (j = 0; j < n; j++) {
			if (p[i + j] != want[j]) {
				*expected = want[j];
				return (long)(i + j);
			}
		}
	}
	return -1;
}

/*
 * Check @len bytes at @p written by @writer for iteration @iter of a test
 * of @p->size; the last byte of a put_lat payload is its sequence number.
 */
static int verify(struct perf *pf, const struct perf_params *p,
		  const uint8_t *data, uint64_t iter, enum side writer)
{
	size_t len = p->size;
	uint8_t want = 0;
	long bad;

	if (p->test == PERF_PUT_LAT) {
		len--;
		if (data[len] != iter % SN_MOD) {
			bad = (long)len;
			want = (uint8_t)(iter % SN_MOD);
			goto mismatch;
		}
	}
	bad = pattern_check(data, len, seed_of(p->size, iter, writer), &want);
	if (bad < 0) {
		pf->checked += p->size;
		return 0;
	}
mismatch:
	fprintf(stderr,
		"hmcperf: %s %zu B iteration %llu: byte %ld is 0x%02x, expected 0x%02x (data from the %s)\n",
		perf_test_name(p->test), p->size, (unsigned long long)iter, bad,
		data[bad], want, writer == SIDE_CLIENT ? "client" : "server");
	return -EBADMSG;
}

static void fill(const struct perf_params *p, uint8_t *data, uint64_t iter,
		 enum side writer)
{
	size_t len = p->test == PERF_PUT_LAT ? p->size - 1 : p->size;

	pattern_fill(data, len, seed_of(p->size, iter, writer));
	if (p->test == PERF_PUT_LAT)
		data[len] = (uint8_t)(iter % SN_MOD);
}

/* --------------------------------------------------------------- tags */

int perf_send(struct perf *pf, enum tag_kind kind, uint64_t arg)
{
	return hmc_comm_send_tag(pf->comm, pf->peer, TAG_MAKE(kind, arg));
}

static int tag_error(uint64_t tag, enum tag_kind want)
{
	if (TAG_KIND(tag) == TAG_ERR) {
		int err = (int)TAG_ARG(tag);

		fprintf(stderr, "hmcperf: the peer failed: %s\n",
			hmc_strerror(err));
		return err > 0 ? -err : -EIO;
	}
	fprintf(stderr, "hmcperf: protocol: tag kind %u where %u was due\n",
		TAG_KIND(tag), want);
	return -EPROTO;
}

int perf_expect(struct perf *pf, enum tag_kind kind, uint64_t *arg)
{
	uint64_t tag;
	int rc;

	rc = hmc_comm_recv_tag(pf->comm, pf->peer, &tag, perf_left_ms(pf));
	if (rc)
		return rc;
	if (TAG_KIND(tag) != kind)
		return tag_error(tag, kind);
	if (arg)
		*arg = TAG_ARG(tag);
	return 0;
}

/* Like perf_expect(), for a tag that must carry @want. */
static int expect_arg(struct perf *pf, enum tag_kind kind, uint64_t want)
{
	uint64_t arg;
	int rc = perf_expect(pf, kind, &arg);

	if (!rc && arg != want) {
		fprintf(stderr, "hmcperf: protocol: tag %llu where %llu was due\n",
			(unsigned long long)arg, (unsigned long long)want);
		rc = -EPROTO;
	}
	return rc;
}

/* While spinning: the peer is there, time is left, and no tag came. */
static int spin_check(struct perf *pf)
{
	uint64_t tag;
	int rc;

	if (!hmc_comm_is_connected(pf->comm, pf->peer))
		return -ECONNRESET;
	if (perf_now_ns() > pf->deadline)
		return -ETIMEDOUT;
	rc = hmc_comm_recv_tag(pf->comm, pf->peer, &tag, 0);
	if (rc == -ETIMEDOUT)
		return 0;
	return rc ? rc : tag_error(tag, 0);
}

/*
 * Busy-poll our memory for @sn, driving progress, as ucp_put_lat does;
 * over RDMA (@passive) the data lands without us, so mostly poll memory,
 * as ib_write_lat does.
 */
static __hot int wait_sn(struct perf *pf, const uint8_t *where, uint8_t sn,
			 bool passive)
{
	unsigned int spins = 0;
	int rc;

	while (__atomic_load_n(where, __ATOMIC_ACQUIRE) != sn) {
		if (!passive || spins % PASSIVE_POLL == 0)
			hmc_comm_progress(pf->comm);
		if (++spins % POLL_CHECK == 0) {
			rc = spin_check(pf);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/*
 * Without the progress thread we poll, as perftest and ucx_perftest do:
 * hmc_comm_wait() would sleep once its short spin is over, and a sleeping
 * waiter pays the kernel's wake-up (milliseconds on an emulated guest).
 * Between looks at the request, hmc_comm_progress() polls the transports
 * only, without system calls, and the request is looked at again only
 * when it found something.
 */
static __hot int wait_req(struct perf *pf, hmc_req_t *req)
{
	unsigned int spins = 0;
	int rc = 0;

	if (!*req)
		return 0;
	if (pf->busy_poll) {
		rc = hmc_comm_test(pf->comm, *req);
		while (rc == -EINPROGRESS) {
			if (hmc_comm_progress(pf->comm) > 0)
				rc = hmc_comm_test(pf->comm, *req);
			else if (++spins % POLL_CHECK == 0 &&
				 perf_now_ns() > pf->deadline)
				rc = -ETIMEDOUT;
		}
	} else {
		rc = hmc_comm_wait(pf->comm, *req, perf_left_ms(pf));
	}
	*req = 0;
	return rc;
}

/* Wait for every request of the window; clears them. */
static int wait_window(struct perf *pf, hmc_req_t *reqs, uint32_t n)
{
	uint32_t i;
	int rc = 0;

	for (i = 0; i < n; i++) {
		int st = wait_req(pf, &reqs[i]);

		if (st && !rc)
			rc = st;
	}
	return rc;
}

/* ---------------------------------------------------------- statistics */

struct samples {
	int64_t *ns;		/* per timed iteration */
	uint64_t n;
	int64_t busy_ns;	/* timed sections, for bandwidth */
	unsigned int div;	/* 2: samples are round trips */
};

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static void summarize(struct samples *s, const struct perf_params *p,
		      struct perf_result *res)
{
	double sum = 0, div = s->div * 1000.0;
	uint64_t i, k;

	res->iters = s->n;
	if (!s->n)
		return;
	for (i = 0; i < s->n; i++)
		sum += (double)s->ns[i];
	qsort(s->ns, s->n, sizeof(*s->ns), cmp_i64);
	k = (s->n * 99 + 99) / 100;	/* ceil(0.99 n), nearest rank */
	res->lat_med_us = (double)s->ns[s->n / 2] / div;
	res->lat_p99_us = (double)s->ns[k - 1] / div;
	if (perf_test_is_lat(p->test)) {
		res->lat_avg_us = sum / (double)s->n / div;
		res->bw_MBps = (double)p->size / res->lat_avg_us;
	} else {
		res->lat_avg_us = (double)s->busy_ns / (double)s->n / 1000.0;
		res->bw_MBps = (double)p->size * (double)s->n * 1000.0 /
			       (double)s->busy_ns;
	}
}

static __hot void record(struct samples *s, const struct perf_params *p,
			 uint64_t iter, int64_t ns)
{
	if (iter >= p->warmup)
		s->ns[iter - p->warmup] = ns;
}

/* ----------------------------------------------------- client: windowed */

struct phase {
	uint64_t first;		/* iteration */
	uint64_t count;
	bool timed;
};

static uint8_t *send_slot(struct perf *pf, const struct perf_params *p,
			  uint32_t slot)
{
	return pf->base + (size_t)slot * p->size;
}

static uint8_t *recv_slot(struct perf *pf, const struct perf_params *p,
			  uint32_t slot)
{
	return pf->base + pf->half + (size_t)slot * p->size;
}

/* One put or get between our slot @ls and the peer's slot @rs. */
static int post_one(struct perf *pf, const struct perf_params *p,
		    uint32_t ls, uint32_t rs, hmc_req_t *req)
{
	size_t size = p->size;

	if (p->test == PERF_PUT_BW)
		return hmc_comm_put_nb(pf->comm, pf->peer, ls * size,
				       pf->peer_half + rs * size, size, req);
	return hmc_comm_get_nb(pf->comm, pf->peer, pf->half + ls * size,
			       rs * size, size, req);
}

/*
 * ucx_perftest's window: before reusing a slot, wait for the operation
 * that held it; all slots address the same remote range.
 */
static int window_phase(struct perf *pf, const struct perf_params *p,
			hmc_req_t *reqs, const struct phase *ph,
			struct samples *s)
{
	uint32_t w = p->test == PERF_GET_LAT ? 1 : p->window;
	int64_t start = perf_now_ns(), prev = start, t;
	uint64_t i;
	int rc = 0;

	for (i = ph->first; i < ph->first + ph->count; i++) {
		hmc_req_t *r = &reqs[(i - ph->first) % w];

		rc = wait_req(pf, r);
		if (w == 1)	/* latency: the whole operation */
			prev = perf_now_ns();
		if (!rc)
			rc = post_one(pf, p, 0, 0, r);
		if (!rc && w == 1)
			rc = wait_req(pf, r);
		if (rc)
			break;
		t = perf_now_ns();
		if (ph->timed)
			record(s, p, i, t - prev);
		prev = t;
	}
	if (!rc)
		rc = wait_window(pf, reqs, w);
	if (!rc && p->test == PERF_PUT_BW)
		rc = hmc_comm_flush(pf->comm, pf->peer);
	if (ph->timed)
		s->busy_ns += perf_now_ns() - start;
	return rc;
}

/* Validated: a window of distinct slots, then checked or prepared by tags. */
static int batch_phase(struct perf *pf, const struct perf_params *p,
		       hmc_req_t *reqs, const struct phase *ph,
		       struct samples *s)
{
	uint32_t w = p->test == PERF_GET_LAT ? 1 : p->window;
	uint64_t i0, j, m;
	int64_t t0, t1;
	int rc = 0;

	for (i0 = ph->first; i0 < ph->first + ph->count && !rc; i0 += m) {
		m = ph->first + ph->count - i0;
		if (m > w)
			m = w;
		if (p->test == PERF_PUT_BW) {
			for (j = 0; j < m; j++)
				fill(p, send_slot(pf, p, j), i0 + j, SIDE_CLIENT);
		} else {	/* the server writes what we get */
			rc = perf_send(pf, TAG_BATCH, i0 << 16 | m);
			if (!rc)
				rc = perf_expect(pf, TAG_ACK, NULL);
			if (rc)
				break;
		}
		t0 = perf_now_ns();
		for (j = 0; j < m && !rc; j++)
			rc = post_one(pf, p, j, j, &reqs[j]);
		if (!rc)
			rc = wait_window(pf, reqs, w);
		if (!rc && p->test == PERF_PUT_BW)
			rc = hmc_comm_flush(pf->comm, pf->peer);
		t1 = perf_now_ns();
		if (rc)
			break;
		if (ph->timed) {
			s->busy_ns += t1 - t0;
			for (j = 0; j < m; j++)
				record(s, p, i0 + j, (t1 - t0) / (int64_t)m);
		}
		if (p->test == PERF_PUT_BW) {
			rc = perf_send(pf, TAG_BATCH, i0 << 16 | m);
			if (!rc)
				rc = perf_expect(pf, TAG_ACK, NULL);
		} else {
			for (j = 0; j < m && !rc; j++)
				rc = verify(pf, p, recv_slot(pf, p, j), i0 + j,
					    SIDE_SERVER);
		}
	}
	if (rc)
		wait_window(pf, reqs, w);
	return rc;
}

/*
 * put_signal is blocking: no window. Validated, a batch of distinct slots
 * is announced first and acknowledged by the server once checked.
 */
static int put_signal_phase(struct perf *pf, const struct perf_params *p,
			    const struct phase *ph, struct samples *s)
{
	uint64_t i0, j, m, w = p->validate ? p->window : ph->count;
	int64_t start, prev, t;
	int rc = 0;

	for (i0 = ph->first; i0 < ph->first + ph->count && !rc; i0 += m) {
		m = ph->first + ph->count - i0;
		if (m > w)
			m = w;
		if (p->validate) {
			for (j = 0; j < m; j++)
				fill(p, send_slot(pf, p, j), i0 + j, SIDE_CLIENT);
			rc = perf_send(pf, TAG_BATCH, i0 << 16 | m);
		}
		start = prev = perf_now_ns();
		for (j = 0; j < m && !rc; j++) {
			size_t off = (size_t)(p->validate ? j : 0) * p->size;

			rc = hmc_comm_put_signal(pf->comm, pf->peer, off,
						 pf->peer_half + off, p->size,
						 TAG_MAKE(TAG_SIG, i0 + j));
			t = perf_now_ns();
			if (ph->timed)
				record(s, p, i0 + j, t - prev);
			prev = t;
		}
		if (ph->timed)
			s->busy_ns += prev - start;
		if (!rc && p->validate)
			rc = perf_expect(pf, TAG_ACK, NULL);
	}
	return rc;
}

static int client_windowed(struct perf *pf, const struct perf_params *p,
			   struct samples *s)
{
	const struct phase phases[2] = {
		{ 0, p->warmup, false },
		{ p->warmup, p->iters, true },
	};
	hmc_req_t *reqs = calloc(p->window, sizeof(*reqs));
	int i, rc = 0;

	if (!reqs)
		return -ENOMEM;
	for (i = 0; i < 2 && !rc; i++) {
		if (!phases[i].count)
			continue;
		if (p->test == PERF_PUT_SIGNAL_BW)
			rc = put_signal_phase(pf, p, &phases[i], s);
		else if (p->validate)
			rc = batch_phase(pf, p, reqs, &phases[i], s);
		else
			rc = window_phase(pf, p, reqs, &phases[i], s);
	}
	free(reqs);
	if (!rc)
		rc = perf_send(pf, TAG_STOP, 0);
	return rc;
}

/* ---------------------------------------------------- ping-pong, both */

/*
 * One ping-pong test. The client sends first and times each round trip;
 * the server answers. Iteration i uses slot i % 2 on both sides, so that
 * checking one arrival never races with the next. The server collects its
 * put's completion (over RDMA, the client's acknowledgement) right after
 * posting it, while the client works on the answer, as perftest does; not
 * between an arrival and the answer to it.
 */
static __hot int pingpong(struct perf *pf, const struct perf_params *p,
			  enum side me, struct samples *s)
{
	enum side peer = me == SIDE_CLIENT ? SIDE_SERVER : SIDE_CLIENT;
	uint64_t i, total = p->warmup + p->iters;
	size_t size = p->size;
	hmc_req_t pending = 0;
	int64_t t0 = 0;
	int rc = 0;

	for (i = 0; i < total && !rc; i++) {
		uint32_t slot = (uint32_t)(i % PING_SLOTS);
		uint8_t *out = send_slot(pf, p, slot);
		uint8_t *in = recv_slot(pf, p, slot);
		size_t off = (size_t)slot * size;
		uint8_t sn = (uint8_t)(i % SN_MOD);

		if (p->test == PERF_PUT_LAT && !p->validate)
			out[size - 1] = sn;
		else if (p->validate && p->test != PERF_TAG_LAT)
			fill(p, out, i, me);

		if (me == SIDE_CLIENT) {
			t0 = perf_now_ns();
		} else {	/* the server waits for the ping first */
			if (p->test == PERF_PUT_LAT)
				rc = wait_sn(pf, in + size - 1, sn, p->passive);
			else
				rc = expect_arg(pf, p->test == PERF_TAG_LAT ?
						TAG_PING : TAG_SIG, i);
			if (rc)
				break;
		}

		switch (p->test) {
		case PERF_PUT_LAT:
			rc = hmc_comm_put_nb(pf->comm, pf->peer, off,
					     pf->peer_half + off, size,
					     &pending);
			break;
		case PERF_PUT_SIGNAL_LAT:
			rc = hmc_comm_put_signal(pf->comm, pf->peer, off,
						 pf->peer_half + off, size,
						 TAG_MAKE(TAG_SIG, i));
			break;
		default:
			rc = perf_send(pf, TAG_PING, i);
			break;
		}
		if (rc)
			break;

		if (me == SIDE_CLIENT) {
			if (p->test == PERF_PUT_LAT)
				rc = wait_sn(pf, in + size - 1, sn, p->passive);
			else
				rc = expect_arg(pf, p->test == PERF_TAG_LAT ?
						TAG_PING : TAG_SIG, i);
			if (rc)
				break;
			record(s, p, i, perf_now_ns() - t0);
		}
		rc = wait_req(pf, &pending);
		if (!rc && p->validate && p->test != PERF_TAG_LAT)
			rc = verify(pf, p, in, i, peer);
	}
	if (rc)
		wait_req(pf, &pending);	/* a put may still be out */
	return rc;
}

/* --------------------------------------------------------------- client */

void perf_prepare(struct perf *pf, const struct perf_params *p)
{
	uint32_t slot;

	if (p->test != PERF_PUT_LAT)
		return;
	for (slot = 0; slot < PING_SLOTS; slot++)
		recv_slot(pf, p, slot)[p->size - 1] = SN_NONE;
}

int perf_run_client(struct perf *pf, const struct perf_params *p,
		    struct perf_result *res)
{
	struct samples s = { .div = is_pingpong(p->test) ? 2 : 1 };
	uint64_t checked;
	int rc;

	memset(res, 0, sizeof(*res));
	s.ns = calloc(p->iters ? p->iters : 1, sizeof(*s.ns));
	if (!s.ns)
		return -ENOMEM;
	s.n = p->iters;
	pf->checked = 0;
	pf->deadline = perf_now_ns() + (int64_t)pf->timeout_ms * 1000000;

	if (is_pingpong(p->test))
		rc = pingpong(pf, p, SIDE_CLIENT, &s);
	else
		rc = client_windowed(pf, p, &s);
	if (!rc)
		rc = perf_expect(pf, TAG_DONE, &checked);
	else	/* tell the server, which may be spinning */
		perf_send(pf, TAG_ERR, (uint64_t)-rc);
	if (!rc) {
		summarize(&s, p, res);
		res->checked = pf->checked + checked;
	}
	free(s.ns);
	return rc;
}

/* --------------------------------------------------------------- server */

/* A BATCH of a validated windowed test. */
static int serve_batch(struct perf *pf, const struct perf_params *p,
		       uint64_t arg)
{
	uint64_t i0 = arg >> 16, m = arg & 0xffff, j;
	int rc = 0;

	if (!m || m > perf_slots(p))
		return -EPROTO;
	for (j = 0; j < m && !rc; j++) {
		switch (p->test) {
		case PERF_PUT_BW:
			rc = verify(pf, p, recv_slot(pf, p, j), i0 + j,
				    SIDE_CLIENT);
			break;
		case PERF_PUT_SIGNAL_BW:
			rc = expect_arg(pf, TAG_SIG, i0 + j);
			if (!rc)
				rc = verify(pf, p, recv_slot(pf, p, j), i0 + j,
					    SIDE_CLIENT);
			break;
		default:
			fill(p, send_slot(pf, p, j), i0 + j, SIDE_SERVER);
			break;
		}
	}
	return rc ? rc : perf_send(pf, TAG_ACK, 0);
}

/*
 * The client's next tag on the passive side of a windowed test: spinning
 * on progress, as ucx_perftest's responder does. Over RDMA (p->passive)
 * the target's CPU takes no part, so it waits asleep, as perftest's server
 * does, and leaves the CPU to the client and the NIC; over tcp
 * (p->target_sleeps) the engine wakes for the data, as a reader blocked
 * in recv() does.
 */
static int next_tag(struct perf *pf, const struct perf_params *p,
		    uint64_t *tag)
{
	unsigned int spins = 0;
	int rc;

	if (p->passive || p->target_sleeps)
		return hmc_comm_recv_tag(pf->comm, pf->peer, tag,
					 perf_left_ms(pf));
	for (;;) {
		hmc_comm_progress(pf->comm);
		if (++spins % TAG_POLL)
			continue;
		rc = hmc_comm_recv_tag(pf->comm, pf->peer, tag, 0);
		if (rc != -ETIMEDOUT)
			return rc;
		if (spins % POLL_CHECK)
			continue;
		if (!hmc_comm_is_connected(pf->comm, pf->peer))
			return -ECONNRESET;
		if (perf_now_ns() > pf->deadline)
			return -ETIMEDOUT;
	}
}

/* Passive side of a windowed test: handle the client's tags until STOP. */
static int serve_spin(struct perf *pf, const struct perf_params *p)
{
	uint64_t tag, sigs = 0;
	int rc;

	for (;;) {
		rc = next_tag(pf, p, &tag);
		if (rc)
			return rc;
		switch (TAG_KIND(tag)) {
		case TAG_STOP:
			return 0;
		case TAG_BATCH:
			if (!p->validate)
				return -EPROTO;
			rc = serve_batch(pf, p, TAG_ARG(tag));
			if (rc)
				return rc;
			break;
		case TAG_SIG:	/* put_signal_bw without validation */
			if (p->test != PERF_PUT_SIGNAL_BW || p->validate ||
			    TAG_ARG(tag) != sigs++)
				return -EPROTO;
			break;
		default:
			return tag_error(tag, TAG_STOP);
		}
	}
}

int perf_serve(struct perf *pf, const struct perf_params *p)
{
	int rc;

	pf->checked = 0;
	pf->deadline = perf_now_ns() + (int64_t)pf->timeout_ms * 1000000;
	if (is_pingpong(p->test))
		rc = pingpong(pf, p, SIDE_SERVER, NULL);
	else
		rc = serve_spin(pf, p);
	if (rc)
		perf_send(pf, TAG_ERR, (uint64_t)-rc);
	else
		rc = perf_send(pf, TAG_DONE, pf->checked);
	return rc;
}
