// SPDX-License-Identifier: MIT
/*
 * test_msg: two-sided messages (hmc_comm_send/recv and friends) between
 * rank processes, every byte checked against data that differs per byte
 * and per message.
 *
 *   sizes (2 ranks): every size around the eager limit, the slot size, the
 *     sending half of the slot ring and the direct chunk, received by
 *     receives posted before the sends and by receives posted after them
 *     (in another order than sent, by tag); sources and destinations in
 *     and out of the ConnBuffer (straight between ConnBuffers, or staged
 *     on one side); a receive too small (-EMSGSIZE on both sides, and the
 *     stream goes on); blocking forms, batches and test(); then 1 GiB
 *     through the 4 MiB ConnBuffers.
 *   mesh (4 ranks): every rank sends every other one a stream of messages
 *     with interleaved tags, eager and rendezvous; receives are specific,
 *     by tag from any source, or from anyone with any tag, some posted
 *     before the sends, some after; every message arrives once, whole,
 *     and per source and tag in the order sent (no overtaking).
 *   kill (3 ranks): a sender killed while its message is moving fails the
 *     receive; a receiver killed while it pulls fails the send; both
 *     within the deadline (messages of 512 MiB, or -G if smaller).
 *     kill-sender (2 ranks): the first half only.
 *   ring (3 ranks; run with the shm transport, whose peers exchange
 *     eager envelopes through shared-memory rings): ranks 1 and 2 stream
 *     rank 0 thousands of messages alternating ring-sized eager ones and
 *     rendezvous ones, while rank 0 sleeps first (full rings hold the
 *     senders back) and then takes them with (any source, any tag): each
 *     source's come whole and in the order sent; then blocking
 *     ping-pongs of sizes that walk the rings' cells through many
 *     wrap-arounds, with rendezvous ones in between; then 9 MiB from and
 *     to odd addresses (landed with streaming stores over shm).
 *   gpu (2 ranks): sources and destinations in GPU memory of -M's
 *     runtime (cuda, rocm, ascend, cnrt, musa; run with the mock runtimes
 *     of tests/gpu: HMC_GPU_MOCK=1 and LD_LIBRARY_PATH), exits 77 without
 *     such a device. Under a mock, the runtime must report no misuse nor
 *     leak afterwards, and with CUDA's, HIP's and MUSA's the slots' copies
 *     must have gone on a stream (events), whose copies land only when an
 *     event says so.
 *
 *   test_msg -c sizes|mesh|kill|kill-sender|ring|gpu [-t SECONDS] [-N NAME] [-G GIB]
 *            [-M cuda|rocm|ascend|cnrt|musa]
 */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hmc/hmc.h>

#include "itest.h"

#define OP_TIMEOUT_MS	20000
#define KIB		1024ull
#define MIB		(1024 * KIB)
#define BUF_SIZE	(4 * MIB)
#define REGION		(2 * MIB)	/* the message region: the upper half */
#define SLOT		(256 * KIB)	/* 4 sending and 4 receiving slots */
#define DIRECT_CHUNK	(1 * MIB)	/* lib/msg's get size for direct pulls */
#define EAGER		HMC_MSG_EAGER_MAX
#define TAG_GO		0x60ull
#define ARRAY_LEN(a)	(sizeof(a) / sizeof((a)[0]))

struct cfg {
	const char *kase;
	enum hmc_mem_type gpu;	/* the gpu case's memory */
	const char *name;
	int timeout_s;
	uint64_t big;		/* bytes of the big message */
};

struct ctx {
	const struct cfg *cfg;
	struct mesh *m;
	struct hmc_comm *comm;
	struct hmc_buf *buf;
	uint8_t *p;
	int me, n;
};

static uint64_t seed_of(int src, int dst, uint64_t k)
{
	return 0x3e55a9e0000ull ^ (uint64_t)src << 40 ^ (uint64_t)dst << 32 ^ k;
}

/* ---- fast checked data for big messages: one 64-bit word per 8 bytes */

static uint64_t word_at(uint64_t seed, uint64_t i)
{
	uint64_t x = seed + i * 0x9e3779b97f4a7c15ull;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	return x ^ x >> 29;
}

static void big_fill(uint8_t *p, uint64_t len, uint64_t seed)
{
	uint64_t i, w;

	for (i = 0; i + 8 <= len; i += 8) {
		w = word_at(seed, i / 8);
		memcpy(p + i, &w, 8);
	}
	for (; i < len; i++)
		p[i] = (uint8_t)(word_at(seed, i / 8) >> (8 * (i % 8)));
}

static bool big_check(const uint8_t *p, uint64_t len, uint64_t seed,
		      const char *what)
{
	uint64_t i, w;

	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&w, p + i, 8);
		if (w != word_at(seed, i / 8))
			goto bad;
	}
	for (; i < len; i++)
		if (p[i] != (uint8_t)(word_at(seed, i / 8) >> (8 * (i % 8))))
			goto bad;
	return true;
bad:
	diag("%s: wrong data at byte %llu of %llu", what,
	     (unsigned long long)i, (unsigned long long)len);
	return false;
}

/* ---- helpers */

static int expect(int rc, int want, const char *what)
{
	if (rc == want)
		return 0;
	diag("%s: %s (%d), want %s (%d)", what, hmc_strerror(rc), rc,
	     hmc_strerror(want), want);
	return 1;
}

static int status_is(const struct hmc_msg_status *st, uint32_t src,
		     uint64_t tag, uint64_t len, int err, const char *what)
{
	if (st->source == src && st->tag == tag && st->len == len &&
	    st->error == err)
		return 0;
	diag("%s: status source %u tag %llu len %llu error %d, want %u %llu %llu %d",
	     what, st->source, (unsigned long long)st->tag,
	     (unsigned long long)st->len, st->error, src,
	     (unsigned long long)tag, (unsigned long long)len, err);
	return 1;
}

static int setup(struct ctx *c, struct mesh *m, const struct cfg *cfg)
{
	static const char *const ips[ITEST_MAX_RANKS] = {
		"127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.1",
		"127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.1",
	};
	HMC_OPTS(hmc_comm_opts, opts, .rank = (uint32_t)m->rank,
		 .connect_timeout_ms = 15000, .op_timeout_ms = OP_TIMEOUT_MS,
		 .msg_slot_size = SLOT, .msg_region = REGION);

	c->cfg = cfg;
	c->m = m;
	c->me = m->rank;
	c->n = m->nranks;
	itest_prefix("%s r%d: ", cfg->name, m->rank);
	if (comm_setup(m->rank, BUF_SIZE, "127.0.0.1", &opts, &c->buf,
		       &c->comm))
		return -1;
	c->p = hmc_buf_ptr(c->buf);
	if (mesh_exchange(m, (uint16_t)hmc_comm_listen_port(c->comm)) ||
	    mesh_connect(m, c->comm, ips, 15000))
		return -1;
	return 0;
}

static void teardown(struct ctx *c, bool goodbye)
{
	int all[ITEST_MAX_RANKS], q;

	if (goodbye) {
		for (q = 0; q < c->n; q++)
			all[q] = q;
		mesh_goodbye(c->comm, c->me, all, c->n);
	}
	hmc_comm_destroy(c->comm);
	hmc_buf_destroy(c->buf);
}

/* ------------------------------------------------------------ sizes */

static const uint64_t sizes[] = {
	0, 1, 7, 4096, EAGER - 1, EAGER, EAGER + 1, EAGER + 4093,
	SLOT - 1, SLOT, SLOT + 1, 2 * SLOT + 17,
	4 * SLOT - 1, 4 * SLOT, 4 * SLOT + 1,	/* the sending ring wraps */
	8 * SLOT + 3, 3 * MIB + 12345,
};
#define NSIZES	(sizeof(sizes) / sizeof(sizes[0]))

/* Receive buffers with a guard after each: the guard must stay untouched. */
#define GUARD	64

static int check_recv(const uint8_t *b, uint64_t len, uint64_t cap,
		      uint64_t seed, uint64_t guard_seed, const char *what)
{
	int bad = 0;

	bad += !data_check(b, 0, len, seed, 0, what);
	bad += !data_check(b, cap, GUARD, guard_seed, cap, "guard");
	return bad;
}

/* Rank 0 sends every size to rank 1, with receives posted @before or after. */
static int sizes_round(struct ctx *c, bool before, int round)
{
	hmc_req_t reqs[NSIZES];
	struct hmc_msg_status st[NSIZES];
	uint8_t *bufs[NSIZES];
	uint64_t tag, gseed = 0x6a4d + (uint64_t)round;
	char what[96];
	size_t i, j;
	int bad = 0, rc;

	if (c->me == 0) {
		for (i = 0; i < NSIZES; i++) {
			bufs[i] = malloc(sizes[i] + 1);
			data_fill(bufs[i], 0, sizes[i],
				  seed_of(0, 1, (uint64_t)round << 8 | i));
		}
		if (before) {	/* the receiver posted first */
			rc = hmc_comm_recv_tag(c->comm, 1, &tag, OP_TIMEOUT_MS);
			bad += expect(rc, 0, "go tag") || tag != TAG_GO;
		}
		for (i = 0; i < NSIZES; i++) {
			rc = hmc_comm_isend(c->comm, 1, 1000 + i, bufs[i],
					    sizes[i], HMC_MEM_CPU, &reqs[i]);
			bad += expect(rc, 0, "isend");
		}
		if (!before) {
			rc = hmc_comm_send_tag(c->comm, 1, TAG_GO);
			bad += expect(rc, 0, "go tag");
		}
		rc = hmc_comm_wait_all(c->comm, reqs, NSIZES, OP_TIMEOUT_MS,
				       NULL);
		bad += expect(rc, 0, "sends completed");
		for (i = 0; i < NSIZES; i++)
			free(bufs[i]);
		tap(!bad, "round %d: sent %zu sizes (receives posted %s)",
		    round, NSIZES, before ? "before" : "after");
		return bad;
	}

	for (i = 0; i < NSIZES; i++) {
		bufs[i] = malloc(sizes[i] + GUARD);
		data_fill(bufs[i], sizes[i], GUARD, gseed);
		data_unlike(bufs[i], 0, sizes[i],
			    seed_of(0, 1, (uint64_t)round << 8 | i), 0);
		memset(&st[i], 0xee, sizeof(st[i]));
	}
	if (before) {
		/* Posted in reverse: matching goes by tag, not post order. */
		for (j = NSIZES; j-- > 0;) {
			rc = hmc_comm_irecv(c->comm, j % 2 ? 0 : HMC_ANY_SOURCE,
					    1000 + j, bufs[j], sizes[j],
					    HMC_MEM_CPU, &st[j], &reqs[j]);
			bad += expect(rc, 0, "irecv");
		}
		rc = hmc_comm_send_tag(c->comm, 0, TAG_GO);
		bad += expect(rc, 0, "go tag");
		rc = hmc_comm_wait_all(c->comm, reqs, NSIZES, OP_TIMEOUT_MS,
				       NULL);
		bad += expect(rc, 0, "receives completed");
	} else {
		rc = hmc_comm_recv_tag(c->comm, 0, &tag, OP_TIMEOUT_MS);
		bad += expect(rc, 0, "go tag") || tag != TAG_GO;
		itest_sleep_ms(50);	/* the eager ones are all here */
		for (j = NSIZES; j-- > 0;) {
			rc = hmc_comm_recv(c->comm, 0, 1000 + j, bufs[j],
					   sizes[j], HMC_MEM_CPU, &st[j],
					   OP_TIMEOUT_MS);
			bad += expect(rc, 0, "recv");
		}
	}
	for (i = 0; i < NSIZES; i++) {
		snprintf(what, sizeof(what), "size %llu",
			 (unsigned long long)sizes[i]);
		bad += status_is(&st[i], 0, 1000 + i, sizes[i], 0, what);
		bad += check_recv(bufs[i], sizes[i], sizes[i],
				  seed_of(0, 1, (uint64_t)round << 8 | i),
				  gseed, what);
		free(bufs[i]);
	}
	tap(!bad, "round %d: %zu sizes from %llu to %llu bytes, whole, receives posted %s",
	    round, NSIZES, (unsigned long long)sizes[0],
	    (unsigned long long)sizes[NSIZES - 1], before ? "before" : "after");
	return bad;
}

/*
 * Sources and destinations in the ConnBuffer (below the message region)
 * or not, both ways round: straight, staged on one side, or on both.
 */
static int placement_round(struct ctx *c)
{
	static const uint64_t lens[] = {
		EAGER + 1, SLOT + 5, DIRECT_CHUNK - 1, DIRECT_CHUNK,
		DIRECT_CHUNK + 1, REGION - 8192,
	};
	const size_t off = 4096 + 3;	/* unaligned on purpose */
	struct hmc_msg_status st;
	uint64_t k, seed;
	uint8_t *ext;
	char what[96];
	int bad = 0, rc, sb, db;
	size_t i;

	ext = malloc(REGION + GUARD);
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		for (sb = 0; sb < 2; sb++) {
			for (db = 0; db < 2; db++) {
				uint64_t len = lens[i] - off;

				k = 0x500 + i * 4 + (uint64_t)(sb * 2 + db);
				seed = seed_of(0, 1, k);
				snprintf(what, sizeof(what),
					 "%llu bytes from %s into %s",
					 (unsigned long long)len,
					 sb ? "ConnBuffer" : "heap",
					 db ? "ConnBuffer" : "heap");
				if (c->me == 0) {
					uint8_t *src = sb ? c->p + off : ext;

					data_fill(src, 0, len, seed);
					rc = hmc_comm_send(c->comm, 1, k, src, len,
							   HMC_MEM_CPU,
							   OP_TIMEOUT_MS);
					bad += expect(rc, 0, what);
					continue;
				}
				{
					uint8_t *dst = db ? c->p + off : ext;

					data_fill(dst, len, GUARD, 0x77);
					data_unlike(dst, 0, len, seed, 0);
					rc = hmc_comm_recv(c->comm, 0, k, dst, len,
							   HMC_MEM_CPU, &st,
							   OP_TIMEOUT_MS);
					bad += expect(rc, 0, what);
					bad += status_is(&st, 0, k, len, 0, what);
					bad += check_recv(dst, len, len, seed,
							  0x77, what);
				}
			}
		}
	}
	free(ext);
	tap(!bad, "sources and destinations in and out of the ConnBuffer");
	return bad;
}

/* A receive too small fails on both sides; the stream goes on. */
static int msgsize_round(struct ctx *c)
{
	static const uint64_t lens[] = { 100, 300 * KIB };
	struct hmc_msg_status st;
	uint8_t *b = malloc(300 * KIB);
	int bad = 0, rc;
	size_t i;

	for (i = 0; i < 2; i++) {
		uint64_t seed = seed_of(0, 1, 0x700 + i);

		if (c->me == 0) {
			data_fill(b, 0, lens[i], seed);
			rc = hmc_comm_send(c->comm, 1, 7, b, lens[i], HMC_MEM_CPU,
					   OP_TIMEOUT_MS);
			/* Eager data left before anyone looked at it. */
			bad += expect(rc, i ? -EMSGSIZE : 0, "send too big");
			rc = hmc_comm_send(c->comm, 1, 7, b, lens[i] - 1,
					   HMC_MEM_CPU, OP_TIMEOUT_MS);
			bad += expect(rc, 0, "send that fits");
		} else {
			rc = hmc_comm_recv(c->comm, 0, 7, b, lens[i] - 1,
					   HMC_MEM_CPU, &st, OP_TIMEOUT_MS);
			bad += expect(rc, -EMSGSIZE, "receive too small");
			bad += status_is(&st, 0, 7, lens[i], -EMSGSIZE, "too small");
			data_unlike(b, 0, lens[i] - 1, seed, 0);
			rc = hmc_comm_recv(c->comm, 0, 7, b, lens[i] - 1,
					   HMC_MEM_CPU, &st, OP_TIMEOUT_MS);
			bad += expect(rc, 0, "receive that fits");
			bad += !data_check(b, 0, lens[i] - 1, seed, 0, "fits");
		}
	}
	free(b);
	tap(!bad, "a receive too small: -EMSGSIZE on both sides, then on");
	return bad;
}

/* Batches, test() polling, and argument errors. */
static int batch_round(struct ctx *c)
{
	enum { NB = 6 };
	struct hmc_msg ops[NB];
	struct hmc_msg_status st[NB];
	hmc_req_t reqs[NB];
	uint8_t *b[NB];
	uint64_t len;
	int i, bad = 0, rc, peer = !c->me;

	/* Each rank sends three and receives three, in one batch. */
	for (i = 0; i < NB; i++) {
		bool send = i % 2 == 0;
		int src = send ? c->me : peer;

		len = (uint64_t)(i / 2) * (SLOT + 999) + 11;
		b[i] = malloc(len);
		if (send)
			data_fill(b[i], 0, len, seed_of(src, !src, 0x900 + i / 2));
		ops[i] = (struct hmc_msg){
			.op = send ? HMC_MSG_SEND : HMC_MSG_RECV,
			.peer = (uint32_t)peer, .tag = 0x900 + (uint64_t)i / 2,
			.data = b[i], .len = len, .mem_type = HMC_MEM_CPU,
			.status = send ? NULL : &st[i],
		};
	}
	rc = hmc_comm_msg_batch(c->comm, ops, NB, reqs);
	bad += expect(rc, 0, "batch");
	for (i = NB - 1; i >= 0; i--) {
		int64_t end = itest_now_ms() + OP_TIMEOUT_MS;

		while ((rc = hmc_comm_test(c->comm, reqs[i])) == -EINPROGRESS &&
		       itest_now_ms() < end)
			;
		bad += expect(rc, 0, "batch request");
		bad += expect(hmc_comm_test(c->comm, reqs[i]), -ENOENT,
			      "a collected request");
	}
	for (i = 1; i < NB; i += 2) {
		len = (uint64_t)(i / 2) * (SLOT + 999) + 11;
		bad += status_is(&st[i], (uint32_t)peer, 0x900 + (uint64_t)i / 2,
				 len, 0, "batch");
		bad += !data_check(b[i], 0, len, seed_of(peer, !peer,
							  0x900 + i / 2), 0,
				   "batch");
	}
	for (i = 0; i < NB; i++)
		free(b[i]);

	bad += expect(hmc_comm_isend(c->comm, (uint32_t)peer, HMC_ANY_TAG, b,
				     1, HMC_MEM_CPU, &reqs[0]),
		      -EINVAL, "HMC_ANY_TAG as a send's tag");
	bad += expect(hmc_comm_isend(c->comm, 6, 1, b, 1, HMC_MEM_CPU,
				     &reqs[0]),
		      -ENOTCONN, "send to a rank not connected");
	bad += expect(hmc_comm_isend(c->comm, (uint32_t)peer, 1,
				     c->p + BUF_SIZE - REGION - 8, 16,
				     HMC_MEM_CPU, &reqs[0]),
		      -EINVAL, "data overlapping the message region");
	ops[0].reserved = 1;
	reqs[1] = 1;
	bad += expect(hmc_comm_msg_batch(c->comm, ops, 2, reqs), -EINVAL,
		      "batch with a reserved field set");
	bad += reqs[0] != 0 || reqs[1] != 0;
	tap(!bad, "batches, test() and argument errors");
	return bad;
}

static int big_round(struct ctx *c)
{
	uint64_t len = c->cfg->big, seed = seed_of(0, 1, 0xb16);
	struct hmc_msg_status st;
	int64_t t0;
	uint8_t *b;
	int bad = 0, rc;

	b = malloc(len);
	if (!b) {
		tap(false, "%llu bytes of memory", (unsigned long long)len);
		return 1;
	}
	if (c->me == 0) {
		big_fill(b, len, seed);
		t0 = itest_now_ms();
		rc = hmc_comm_send(c->comm, 1, 0xb16, b, len, HMC_MEM_CPU,
				   60000);
		bad += expect(rc, 0, "big send");
		diag("%llu MiB sent in %lld ms", (unsigned long long)(len / MIB),
		     (long long)(itest_now_ms() - t0));
	} else {
		memset(b, 0x5a, len);
		rc = hmc_comm_recv(c->comm, 0, 0xb16, b, len, HMC_MEM_CPU, &st,
				   60000);
		bad += expect(rc, 0, "big recv");
		bad += status_is(&st, 0, 0xb16, len, 0, "big");
		bad += !big_check(b, len, seed, "big message");
	}
	free(b);
	tap(!bad, "%llu bytes through a %llu MiB ConnBuffer, every byte checked",
	    (unsigned long long)len, (unsigned long long)(BUF_SIZE / MIB));
	return bad;
}

static int case_sizes(struct mesh *m, void *arg)
{
	struct ctx c;
	int bad = 0;

	if (setup(&c, m, arg))
		return 1;
	bad += sizes_round(&c, true, 0);
	bad += sizes_round(&c, false, 1);
	bad += placement_round(&c);
	bad += msgsize_round(&c);
	bad += batch_round(&c);
	if (c.cfg->big)
		bad += big_round(&c);
	teardown(&c, true);
	return bad || itest_failures();
}

/* ------------------------------------------------------------- mesh */

#define MESH_MSGS	30	/* per ordered pair */
#define MESH_TAGS	3
#define MESH_MAX	(600 * KIB)

static uint64_t mesh_len(int src, int dst, int k)
{
	struct rng r;

	rng_seed(&r, 0x3e5, (uint64_t)src, (uint64_t)dst, (uint64_t)k);
	switch (rng_range(&r, 0, 3)) {
	case 0:
		return rng_range(&r, 16, 200);
	case 1:
		return rng_range(&r, 200, EAGER);
	case 2:
		return rng_range(&r, EAGER + 1, SLOT * 2);
	default:
		return rng_range(&r, SLOT * 2, MESH_MAX);
	}
}

static uint64_t mesh_tag(int k)
{
	return (uint64_t)(k * 7 % MESH_TAGS);
}

struct mrecv {
	uint32_t src;
	uint64_t tag;
	uint8_t *b;
	struct hmc_msg_status st;
	hmc_req_t req;
};

static int case_mesh(struct mesh *m, void *arg)
{
	struct mrecv *rv;
	struct ctx c;
	hmc_req_t *sreq;
	uint8_t **sb;
	size_t nrecv, nsend, i, j, *order;
	int q, k, t, bad = 0, rc;
	struct rng r;
	/* per (src, tag): messages still to be posted for, in send order */
	int left[ITEST_MAX_RANKS][MESH_TAGS];
	int last[ITEST_MAX_RANKS][MESH_TAGS];
	bool seen[ITEST_MAX_RANKS][MESH_MSGS];

	if (setup(&c, m, arg))
		return 1;
	nsend = nrecv = (size_t)(c.n - 1) * MESH_MSGS;
	rv = calloc(nrecv, sizeof(*rv));
	sreq = calloc(nsend, sizeof(*sreq));
	sb = calloc(nsend, sizeof(*sb));
	order = calloc(nrecv, sizeof(*order));
	memset(left, 0, sizeof(left));
	memset(seen, 0, sizeof(seen));
	for (q = 0; q < c.n; q++)
		for (k = 0; k < MESH_MSGS && q != c.me; k++)
			left[q][mesh_tag(k)]++;

	/*
	 * Layers, so that no wildcard can starve a receive posted after it:
	 * specific (source, tag) receives for the first third of each
	 * stream, then (any source, tag) ones for a third of each tag, then
	 * (any, any) for the rest. The first layer goes up before the sends.
	 */
	nrecv = 0;
	for (q = 0; q < c.n; q++) {
		for (t = 0; t < MESH_TAGS && q != c.me; t++) {
			int nspec = left[q][t] / 3;

			for (k = 0; k < nspec; k++) {
				rv[nrecv].src = (uint32_t)q;
				rv[nrecv++].tag = (uint64_t)t;
			}
			left[q][t] -= nspec;
		}
	}
	for (t = 0; t < MESH_TAGS; t++) {
		int total = 0, nany;

		for (q = 0; q < c.n; q++)
			total += left[q][t];
		for (nany = total / 3; nany > 0; nany--) {
			rv[nrecv].src = HMC_ANY_SOURCE;
			rv[nrecv++].tag = (uint64_t)t;
		}
	}
	while (nrecv < nsend) {
		rv[nrecv].src = HMC_ANY_SOURCE;
		rv[nrecv++].tag = HMC_ANY_TAG;
	}
	/* Shuffle within the first layer only: its receives cannot starve. */
	rng_seed(&r, 0x5f, (uint64_t)c.me, 0, 0);
	for (i = 0; i < nrecv; i++)
		order[i] = i;
	for (j = 0; j < nrecv && rv[j].src != HMC_ANY_SOURCE; j++)
		;
	rng_shuffle(&r, order, j);

	for (i = 0; i < nrecv; i++) {
		struct mrecv *x = &rv[order[i]];

		x->b = malloc(MESH_MAX);
		if (i == j) {	/* the first layer is up: let the sends go */
			rc = hmc_comm_barrier(c.comm, OP_TIMEOUT_MS);
			bad += expect(rc, 0, "barrier");
			/* my sends, by batch for odd peers, one by one for the rest */
			for (q = 0, j = 0; q < c.n; q++) {
				struct hmc_msg ops[MESH_MSGS];

				if (q == c.me)
					continue;
				for (k = 0; k < MESH_MSGS; k++, j++) {
					uint64_t len = mesh_len(c.me, q, k);

					sb[j] = malloc(len);
					data_fill(sb[j], 0, len,
						  seed_of(c.me, q, (uint64_t)k));
					memcpy(sb[j], &k, sizeof(k));
					ops[k] = (struct hmc_msg){
						.op = HMC_MSG_SEND,
						.peer = (uint32_t)q,
						.tag = mesh_tag(k),
						.data = sb[j], .len = len,
						.mem_type = HMC_MEM_CPU,
					};
					if (q % 2 == 0) {
						rc = hmc_comm_isend(c.comm,
							(uint32_t)q, mesh_tag(k),
							sb[j], len, HMC_MEM_CPU,
							&sreq[j]);
						bad += expect(rc, 0, "isend");
					}
				}
				if (q % 2) {
					rc = hmc_comm_msg_batch(c.comm, ops,
						MESH_MSGS, &sreq[j - MESH_MSGS]);
					bad += expect(rc, 0, "batch of sends");
				}
			}
			j = i;
		}
		rc = hmc_comm_irecv(c.comm, x->src, x->tag, x->b, MESH_MAX,
				    HMC_MEM_CPU, &x->st, &x->req);
		bad += expect(rc, 0, "irecv");
	}
	for (i = 0; i < nrecv; i++) {
		rc = hmc_comm_wait(c.comm, rv[order[i]].req, OP_TIMEOUT_MS);
		bad += expect(rc, 0, "receive");
	}

	/* Whole, once, and per (source, tag) in the order posted. */
	for (q = 0; q < ITEST_MAX_RANKS; q++)
		for (t = 0; t < MESH_TAGS; t++)
			last[q][t] = -1;
	for (i = 0; i < nrecv; i++) {
		struct mrecv *x = &rv[order[i]];
		uint32_t src = x->st.source;
		int kk = -1;

		if (src >= (uint32_t)c.n || src == (uint32_t)c.me ||
		    x->st.tag >= MESH_TAGS || x->st.len < sizeof(kk)) {
			diag("receive %zu: source %u tag %llu len %llu", i, src,
			     (unsigned long long)x->st.tag,
			     (unsigned long long)x->st.len);
			bad++;
			continue;
		}
		memcpy(&kk, x->b, sizeof(kk));
		if (kk < 0 || kk >= MESH_MSGS || seen[src][kk] ||
		    mesh_tag(kk) != x->st.tag ||
		    x->st.len != mesh_len((int)src, c.me, kk) ||
		    (x->src != HMC_ANY_SOURCE && x->src != src) ||
		    (x->tag != HMC_ANY_TAG && x->tag != x->st.tag)) {
			diag("receive %zu: message %d from %u, tag %llu, %llu bytes: not what was sent",
			     i, kk, src, (unsigned long long)x->st.tag,
			     (unsigned long long)x->st.len);
			bad++;
			continue;
		}
		seen[src][kk] = true;
		if (kk <= last[src][x->st.tag]) {
			diag("message %d from %u overtook message %d (tag %llu)",
			     last[src][x->st.tag], src, kk,
			     (unsigned long long)x->st.tag);
			bad++;
		}
		last[src][x->st.tag] = kk;
		bad += !data_check(x->b, sizeof(kk), x->st.len - sizeof(kk),
				   seed_of((int)src, c.me, (uint64_t)kk),
				   sizeof(kk), "mesh message");
	}
	rc = hmc_comm_wait_all(c.comm, sreq, nsend, OP_TIMEOUT_MS, NULL);
	bad += expect(rc, 0, "sends");
	tap(!bad, "%zu messages from %d ranks, interleaved tags and wildcards: whole, once, in order",
	    nrecv, c.n - 1);
	for (i = 0; i < nsend; i++) {
		free(sb[i]);
		free(rv[i].b);
	}
	free(sb);
	free(sreq);
	free(rv);
	free(order);
	teardown(&c, true);
	return bad || itest_failures();
}

/* ------------------------------------------------------------- ring */

#define RING_MSGS	1500	/* per sender */
#define RING_WINDOW	64
#define RING_ROUNDS	3000	/* ping-pong */
#define RING_MAX	(100 * KIB)

/* Message @k of a stream: ring-sized eager ones, rendezvous in between. */
static uint64_t ring_len(uint64_t k)
{
	static const uint64_t lens[] = { 0, 8, 57, 1000, 4096, EAGER, 24,
					 EAGER + 1, 3, RING_MAX, 40, 41 };

	return k % 5 == 4 ? k * 977 % EAGER : lens[k % ARRAY_LEN(lens)];
}

static int ring_streams(struct ctx *c)
{
	struct hmc_msg_status st;
	hmc_req_t reqs[RING_WINDOW];
	uint64_t next[ITEST_MAX_RANKS] = { 0 }, k, w, len;
	uint8_t *raw, *b, *bufs[RING_WINDOW];
	char what[64];
	int bad = 0, rc;

	if (c->me) {
		for (w = 0; w < RING_WINDOW; w++)
			bufs[w] = malloc(RING_MAX);
		for (k = 0; k < RING_MSGS; k += RING_WINDOW) {
			for (w = 0; w < RING_WINDOW && k + w < RING_MSGS; w++) {
				len = ring_len(k + w);
				data_fill(bufs[w], 0, len,
					  seed_of(c->me, 0, k + w));
				rc = hmc_comm_isend(c->comm, 0, k + w, bufs[w],
						    len, HMC_MEM_CPU, &reqs[w]);
				bad += expect(rc, 0, "isend");
			}
			rc = hmc_comm_wait_all(c->comm, reqs, w, OP_TIMEOUT_MS,
					       NULL);
			bad += expect(rc, 0, "window of sends");
		}
		for (w = 0; w < RING_WINDOW; w++)
			free(bufs[w]);
		tap(!bad, "%d messages streamed to rank 0", RING_MSGS);
		return bad;
	}
	raw = malloc(RING_MAX + GUARD + 3);
	b = raw + 3;	/* unaligned: copies have heads and tails */
	itest_sleep_ms(300);	/* the rings fill up meanwhile */
	for (k = 0; k < 2 * RING_MSGS; k++) {
		uint64_t want;
		uint32_t src;

		data_fill(b, RING_MAX, GUARD, 0x77);
		rc = hmc_comm_recv(c->comm, HMC_ANY_SOURCE, HMC_ANY_TAG, b,
				   RING_MAX, HMC_MEM_CPU, &st, OP_TIMEOUT_MS);
		bad += expect(rc, 0, "recv");
		src = st.source;
		if (rc || src < 1 || src > 2) {
			diag("message %llu: source %u", (unsigned long long)k,
			     src);
			bad++;
			break;
		}
		want = next[src]++;
		snprintf(what, sizeof(what), "message %llu from %u",
			 (unsigned long long)want, src);
		/* Per source in the order sent: the tag is the number. */
		bad += status_is(&st, src, want, ring_len(want), 0, what);
		bad += check_recv(b, st.len, RING_MAX, seed_of((int)src, 0, want),
				  0x77, what);
		if (bad)
			break;
	}
	free(raw);
	tap(!bad, "%llu messages from 2 ranks through rings, eager and rendezvous: whole and in order per source",
	    (unsigned long long)k);
	return bad;
}

/* Rank 0 plays ping-pong with 1 and 2 in turn; sizes walk the cells. */
static int ring_pingpong(struct ctx *c)
{
	struct hmc_msg_status st;
	uint8_t *b = malloc(RING_MAX + GUARD);
	uint64_t k, len, rounds = 0;
	char what[64];
	int bad = 0, rc, peer;

	for (k = 0; k < RING_ROUNDS && !bad; k++) {
		peer = 1 + (int)(k % 2);
		len = k % 97 == 96 ? EAGER + 1 + k : k * 13 % 1500;
		if (c->me && c->me != peer)
			continue;
		snprintf(what, sizeof(what), "round %llu, %llu bytes",
			 (unsigned long long)k, (unsigned long long)len);
		if (c->me == 0) {
			data_fill(b, 0, len, seed_of(0, peer, k));
			rc = hmc_comm_send(c->comm, (uint32_t)peer, k, b, len,
					   HMC_MEM_CPU, OP_TIMEOUT_MS);
			bad += expect(rc, 0, what);
		}
		data_fill(b, RING_MAX, GUARD, k);
		data_unlike(b, 0, len, seed_of(c->me ? 0 : peer, c->me, k), 0);
		rc = hmc_comm_recv(c->comm, c->me ? 0 : (uint32_t)peer, k, b,
				   RING_MAX, HMC_MEM_CPU, &st, OP_TIMEOUT_MS);
		bad += expect(rc, 0, what);
		bad += status_is(&st, c->me ? 0 : (uint32_t)peer, k, len, 0,
				 what);
		bad += check_recv(b, len, RING_MAX,
				  seed_of(c->me ? 0 : peer, c->me, k), k, what);
		if (c->me) {
			data_fill(b, 0, len, seed_of(c->me, 0, k));
			rc = hmc_comm_send(c->comm, 0, k, b, len, HMC_MEM_CPU,
					   OP_TIMEOUT_MS);
			bad += expect(rc, 0, what);
		}
		rounds++;
	}
	free(b);
	tap(!bad, "%llu blocking ping-pong rounds of 0 to %llu bytes, every byte checked",
	    (unsigned long long)rounds, (unsigned long long)(EAGER + RING_ROUNDS));
	return bad;
}

/*
 * A message large enough that the receiver lands it with streaming
 * stores, from and to odd addresses, between ranks 1 and 0.
 */
static int ring_big(struct ctx *c)
{
	const uint64_t len = 9 * MIB + 13, seed = seed_of(1, 0, 0xb19);
	uint8_t *raw = malloc(len + 5 + GUARD), *b = raw + 5;
	struct hmc_msg_status st;
	int bad = 0, rc;

	if (c->me == 1) {
		big_fill(b, len, seed);
		rc = hmc_comm_send(c->comm, 0, 0xb19, b, len, HMC_MEM_CPU,
				   OP_TIMEOUT_MS);
		bad += expect(rc, 0, "send 9 MiB");
	} else if (c->me == 0) {
		memset(b, 0, len);
		data_fill(b, len, GUARD, 0xb1);
		rc = hmc_comm_recv(c->comm, 1, 0xb19, b, len, HMC_MEM_CPU, &st,
				   OP_TIMEOUT_MS);
		bad += expect(rc, 0, "recv 9 MiB");
		bad += status_is(&st, 1, 0xb19, len, 0, "9 MiB");
		bad += !big_check(b, len, seed, "9 MiB at an odd address");
		bad += !data_check(b, len, GUARD, 0xb1, len, "guard");
	}
	free(raw);
	if (c->me < 2)
		tap(!bad, "9 MiB + 13 bytes from and to odd addresses, every byte checked");
	return bad;
}

/*
 * A sender's last messages, still in the receiver's ring when the sender
 * goes without a goodbye: each is delivered whole and in order, as what
 * arrived on the socket before a failure is.
 */
#define LAST_TAG	0x1a57
#define LAST_N		32
#define LAST_MAX	1400

static uint64_t last_len(int k)
{
	return 1 + (uint64_t)k * 997 % LAST_MAX;
}

static int ring_last_words(struct ctx *c)
{
	uint8_t b[LAST_MAX];
	struct hmc_msg_status st;
	int64_t deadline;
	int bad = 0, k;

	if (c->me == 1) {
		for (k = 0; k < LAST_N; k++) {
			big_fill(b, last_len(k), seed_of(1, 0, LAST_TAG + k));
			bad += expect(hmc_comm_send(c->comm, 0, LAST_TAG, b,
						    last_len(k), HMC_MEM_CPU,
						    OP_TIMEOUT_MS),
				      0, "last words: send");
		}
	} else if (c->me == 0) {
		deadline = itest_now_ms() + OP_TIMEOUT_MS;
		while (hmc_comm_is_connected(c->comm, 1) &&
		       itest_now_ms() < deadline)
			itest_sleep_ms(1);
		for (k = 0; k < LAST_N; k++) {
			memset(b, 0, sizeof(b));
			bad += expect(hmc_comm_recv(c->comm, 1, LAST_TAG, b,
						    sizeof(b), HMC_MEM_CPU, &st,
						    OP_TIMEOUT_MS),
				      0, "last words: receive after the sender went");
			bad += status_is(&st, 1, LAST_TAG, last_len(k), 0,
					 "last words");
			if (!big_check(b, last_len(k),
				       seed_of(1, 0, LAST_TAG + k), "last words"))
				bad++;
		}
		tap(!bad, "rank 1's %d last messages, sent before it went, all delivered",
		    LAST_N);
	}
	teardown(c, false);
	return bad;
}

static int case_ring(struct mesh *m, void *arg)
{
	struct ctx c;
	int bad = 0;

	if (setup(&c, m, arg))
		return 1;
	bad += ring_streams(&c);
	bad += expect(hmc_comm_barrier(c.comm, OP_TIMEOUT_MS), 0, "barrier");
	bad += ring_pingpong(&c);
	bad += ring_big(&c);
	bad += expect(hmc_comm_barrier(c.comm, OP_TIMEOUT_MS), 0, "barrier");
	bad += ring_last_words(&c);
	return bad || itest_failures();
}

/* ------------------------------------------------------------- kill */

#define KILL_LEN	(512 * MIB)	/* at most: -G lowers it */

/* Wait for @req to fail (not time out, not succeed) within the deadline. */
static int expect_failure(struct ctx *c, hmc_req_t req, const char *what)
{
	int64_t t0 = itest_now_ms();
	int rc = hmc_comm_wait(c->comm, req, OP_TIMEOUT_MS);

	diag("%s: %s after %lld ms", what, hmc_strerror(rc),
	     (long long)(itest_now_ms() - t0));
	return !tap(rc != 0 && rc != -ETIMEDOUT && rc != -EINPROGRESS,
		    "%s fails with the peer", what);
}

/* Spin until the first bytes of a big message have landed at @b. */
static bool landing(struct ctx *c, hmc_req_t req, const uint8_t *b,
		    uint64_t seed)
{
	int64_t end = itest_now_ms() + OP_TIMEOUT_MS;

	uint64_t w;

	while (itest_now_ms() < end) {
		if (hmc_comm_test(c->comm, req) != -EINPROGRESS)
			return false;
		memcpy(&w, b, 8);
		if (w == word_at(seed, 0))
			return true;
	}
	return false;
}

static int case_kill(struct mesh *m, void *arg)
{
	uint64_t seed = seed_of(1, 0, 0xdead), len;
	struct hmc_msg_status st;
	hmc_req_t req;
	struct ctx c;
	uint8_t *b;
	int bad = 0, rc;

	if (setup(&c, m, arg))
		return 1;
	len = c.cfg->big < KILL_LEN ? c.cfg->big : KILL_LEN;
	b = malloc(len);
	memset(b, 0, len);
	switch (c.me) {
	case 0:
		/* Rank 1's message to me starts moving: kill rank 1. */
		rc = hmc_comm_irecv(c.comm, 1, 1, b, len, HMC_MEM_CPU,
				    &st, &req);
		bad += expect(rc, 0, "irecv");
		if (!tap(landing(&c, req, b, seed), "rank 1's message is landing"))
			bad++;
		if (mesh_kill(m, 1))
			bad++;
		bad += expect_failure(&c, req, "a receive from a killed sender");
		if (c.n < 3)	/* kill-sender */
			break;
		/* Then my message to rank 2, which I kill as it lands. */
		big_fill(b, len, seed_of(0, 2, 0xdead));
		rc = hmc_comm_isend(c.comm, 2, 2, b, len, HMC_MEM_CPU, &req);
		bad += expect(rc, 0, "isend");
		{
			uint64_t tag = 0;

			rc = hmc_comm_recv_tag(c.comm, 2, &tag, OP_TIMEOUT_MS);
			if (!tap(!rc && tag == TAG_GO && hmc_comm_test(c.comm, req) ==
				 -EINPROGRESS, "my message to rank 2 is landing"))
				bad++;
		}
		if (mesh_kill(m, 2))
			bad++;
		bad += expect_failure(&c, req, "a send to a killed receiver");
		break;
	case 1:
		big_fill(b, len, seed);
		rc = hmc_comm_send(c.comm, 0, 1, b, len, HMC_MEM_CPU,
				   OP_TIMEOUT_MS);
		diag("rank 1 was not killed in time: %s", hmc_strerror(rc));
		bad++;
		break;
	case 2:
		rc = hmc_comm_irecv(c.comm, 0, 2, b, len, HMC_MEM_CPU,
				    &st, &req);
		bad += expect(rc, 0, "irecv");
		if (landing(&c, req, b, seed_of(0, 2, 0xdead)) &&
		    !hmc_comm_send_tag(c.comm, 0, TAG_GO))
			itest_sleep_ms(OP_TIMEOUT_MS);	/* rank 0 kills me */
		diag("rank 2 was not killed in time");
		bad++;
		break;
	}
	free(b);
	teardown(&c, false);
	return bad || itest_failures();
}

/* -------------------------------------------------------------- gpu */

/*
 * Under a mock runtime (tests/gpu), what it says of libhmc's use of it:
 * no violation, nothing left behind; and for the runtimes with events,
 * copies on a stream.
 */
static int mock_check(enum hmc_mem_type gpu)
{
	static const char *const libs[] = {
		[HMC_MEM_CUDA] = "libcuda.so.1", [HMC_MEM_ROCM] = "libamdhip64.so",
		[HMC_MEM_ASCEND] = "libascendcl.so", [HMC_MEM_CNRT] = "libcnrt.so",
		[HMC_MEM_MUSA] = "libmusart.so",
	};
	void *h = dlopen(libs[gpu], RTLD_NOW | RTLD_NOLOAD);
	int (*report)(char *msg, size_t len), (*events)(void);
	char msg[256] = "";
	int bad;

	*(void **)&report = h ? dlsym(h, "mock_report") : NULL;
	if (!report)
		return 0;	/* a real runtime */
	bad = report(msg, sizeof(msg)) != 0;
	tap(!bad, "the mock runtime saw no misuse and no leak%s%s",
	    bad ? ": " : "", msg);
	/* The runtimes with events (CUDA, HIP, MUSA) */
	if (gpu == HMC_MEM_CUDA || gpu == HMC_MEM_ROCM || gpu == HMC_MEM_MUSA) {
		*(void **)&events = dlsym(h, "mock_events_created");
		/* rank 0 stages GPU sources, rank 1 lands in GPU memory */
		bad += !events || events() < 4;
		tap(events && events() >= 4,
		    "staged copies went on a stream (%d events)",
		    events ? events() : 0);
	}
	return bad;
}

static int case_gpu(struct mesh *m, void *arg)
{
	static const uint64_t lens[] = { 1, EAGER, EAGER + 1, 3 * SLOT + 7,
					 5 * SLOT };
	const struct cfg *cfg = arg;
	enum hmc_mem_type gpu = cfg->gpu;
	struct hmc_msg_status st;
	struct ctx c;
	uint8_t *host;
	void *dev;
	size_t i;
	int bad = 0, rc;

	if (setup(&c, m, arg))
		return 1;
	host = malloc(5 * SLOT);
	rc = hmc_mem_alloc(gpu, 0, 5 * SLOT, &dev);
	if (rc) {
		tap(false, "%s memory: %s", hmc_mem_type_name(gpu),
		    hmc_strerror(rc));
		return 1;
	}
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		uint64_t len = lens[i], seed = seed_of(0, 1, 0x6f0 + i);
		/* GPU to GPU, GPU to host, host to GPU, in turn */
		bool src_gpu = i % 3 != 2, dst_gpu = i % 3 != 1;
		char what[64];

		snprintf(what, sizeof(what), "%llu bytes %s to %s",
			 (unsigned long long)len, src_gpu ? "gpu" : "host",
			 dst_gpu ? "gpu" : "host");
		if (c.me == 0) {
			data_fill(host, 0, len, seed);
			if (src_gpu)
				bad += expect(hmc_mem_copy(gpu, 0, dev,
							   host, len,
							   HMC_COPY_H2D), 0,
					      "fill gpu");
			rc = hmc_comm_send(c.comm, 1, i, src_gpu ? dev : host,
					   len, src_gpu ? gpu :
					   HMC_MEM_CPU, OP_TIMEOUT_MS);
			bad += expect(rc, 0, what);
			continue;
		}
		memset(host, 0, len);
		data_unlike(host, 0, len, seed, 0);
		if (dst_gpu)
			bad += expect(hmc_mem_copy(gpu, 0, dev, host,
						   len, HMC_COPY_H2D), 0,
				      "clear gpu");
		rc = hmc_comm_recv(c.comm, 0, i, dst_gpu ? dev : host, len,
				   dst_gpu ? gpu : HMC_MEM_CPU, &st,
				   OP_TIMEOUT_MS);
		bad += expect(rc, 0, what);
		if (dst_gpu)
			bad += expect(hmc_mem_copy(gpu, 0, host, dev,
						   len, HMC_COPY_D2H), 0,
				      "read gpu");
		bad += status_is(&st, 0, i, len, 0, what);
		bad += !data_check(host, 0, len, seed, 0, what);
	}
	tap(!bad, "messages from and into %s memory, eager and staged",
	    hmc_mem_type_name(gpu));
	hmc_mem_free(gpu, 0, dev);
	bad += mock_check(gpu);
	free(host);
	teardown(&c, true);
	return bad || itest_failures();
}

int main(int argc, char **argv)
{
	struct cfg cfg = { .kase = "sizes", .name = "msg", .timeout_s = 120,
			   .big = 1024 * MIB, .gpu = HMC_MEM_CUDA };
	static const char *const gpus[] = {
		[HMC_MEM_CUDA] = "cuda", [HMC_MEM_ROCM] = "rocm",
		[HMC_MEM_ASCEND] = "ascend", [HMC_MEM_CNRT] = "cnrt",
		[HMC_MEM_MUSA] = "musa",
	};
	unsigned int t;
	int opt, n;
	rank_fn fn;

	while ((opt = getopt(argc, argv, "c:t:N:G:M:")) != -1) {
		switch (opt) {
		case 'c': cfg.kase = optarg; break;
		case 't': cfg.timeout_s = atoi(optarg); break;
		case 'N': cfg.name = optarg; break;
		case 'G': cfg.big = (uint64_t)(atof(optarg) * 1024) * MIB; break;
		case 'M':
			for (t = HMC_MEM_CUDA; t < ARRAY_LEN(gpus); t++)
				if (!strcmp(optarg, gpus[t]))
					cfg.gpu = (enum hmc_mem_type)t;
			if (strcmp(optarg, gpus[cfg.gpu])) {
				fprintf(stderr, "test_msg: unknown memory %s\n",
					optarg);
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: see the comment at the top of %s\n",
				__FILE__);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	if (!strcmp(cfg.kase, "sizes")) {
		fn = case_sizes;
		n = 2;
	} else if (!strcmp(cfg.kase, "mesh")) {
		fn = case_mesh;
		n = 4;
	} else if (!strcmp(cfg.kase, "kill")) {
		fn = case_kill;
		n = 3;
	} else if (!strcmp(cfg.kase, "kill-sender")) {
		fn = case_kill;
		n = 2;
	} else if (!strcmp(cfg.kase, "ring")) {
		fn = case_ring;
		n = 3;
	} else if (!strcmp(cfg.kase, "gpu")) {
		if (hmc_mem_device_count(cfg.gpu) < 1) {
			printf("1..0 # SKIP no %s device\n",
			       hmc_mem_type_name(cfg.gpu));
			return 77;
		}
		fn = case_gpu;
		n = 2;
	} else {
		fprintf(stderr, "test_msg: unknown case %s\n", cfg.kase);
		return 2;
	}
	return mesh_run(cfg.name, n, fn, &cfg, cfg.timeout_s) ? 1 : 0;
}
