// SPDX-License-Identifier: MIT
/*
 * test_mr: memory regions (hmc_comm_mr_*) between two rank processes over
 * the transport HMC_TEST_TRANSPORT names, every byte checked.
 *
 * Each rank registers three regions outside its ConnBuffer: an unaligned
 * heap range (read and write), a static array (read only) and an anonymous
 * mapping (write only); they swap descriptors by message. Then:
 *   - imports: the same descriptor twice gives one handle, of the right
 *     size; broken descriptors are -EINVAL, one without a key for the
 *     transport -ENOENT, unknown handles -ENOENT;
 *   - puts and gets of sizes from 0 bytes to MiBs at unaligned offsets,
 *     between every pair of region and ConnBuffer, each side filling what
 *     the other checks byte by byte, with everything around untouched;
 *   - rights and bounds: a put into the read-only region or a get from the
 *     write-only one is -EACCES, a range past a region's end -ERANGE, and
 *     nothing lands;
 *   - deregistering while a thread keeps posting from the region: dereg
 *     waits for what was posted, later posts get -ENOENT, and the memory
 *     is freed at once (ASan sees any late access);
 *   - atomics on rank 1's region from rank 0 (tcp; ucx and verbs must
 *     refuse them with -EOPNOTSUPP): every op at both sizes,
 *     fetching and not, old and new values checked; two threads of fetching
 *     adds and a third of plain ones racing rank 1's CPU atomics on one
 *     counter lose nothing (the fetched values all differ, the count is
 *     exact); rights, range, size and alignment refused;
 *   - a stale key: rank 1 deregisters its region and registers another in
 *     its place; rank 0's put with the old handle fails (the connection,
 *     over tcp and verbs, whose NIC refuses the old rkey; over UCX such
 *     an access is undefined) and the new region keeps its bytes.
 * Over shm, which maps only ConnBuffers, registering is -EOPNOTSUPP.
 *
 *   test_mr [-N NAME] [-t SECONDS]
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <hmc/hmc.h>

#include "itest.h"

#define KIB		1024ull
#define MIB		(1024 * KIB)
#define BUF_SIZE	(4 * MIB)
#define HEAP_LEN	(3 * MIB + 13)
#define STATIC_LEN	(256 * KIB)
#define ANON_LEN	(1 * MIB)
#define OP_TIMEOUT_MS	20000
#define TAG_DESC	0x3d0ull	/* + region */
#define TAG_STEP	0x3e0ull	/* + step */
#define NR_MR		3

enum { MR_HEAP, MR_STATIC, MR_ANON };

static uint8_t static_region[STATIC_LEN];
/* The heap region's notify word: peers' writes into it count here. */
static uint32_t heap_writes;

struct ctx {
	const char *name;
	struct mesh *m;
	struct hmc_comm *comm;
	struct hmc_buf *buf;
	uint8_t *p;		/* the ConnBuffer */
	int me, peer;
	uint8_t *heap, *anon;
	uint8_t *base[NR_MR];
	uint64_t len[NR_MR];
	uint32_t mr[NR_MR];	/* ours */
	uint32_t rmr[NR_MR];	/* the peer's, imported */
	uint8_t desc[NR_MR][HMC_MR_DESC_MAX];
	size_t desc_len[NR_MR];
};

static uint64_t seed_of(int rank, int step)
{
	return 0x6d72000000ull ^ (uint64_t)rank << 24 ^ (uint64_t)step;
}

static int step_sync(struct ctx *c, int step)
{
	uint64_t tag;
	int rc;

	rc = hmc_comm_send_tag(c->comm, (uint32_t)c->peer, TAG_STEP + step);
	if (!rc)
		rc = hmc_comm_recv_tag(c->comm, (uint32_t)c->peer, &tag,
				       OP_TIMEOUT_MS);
	if (!rc && tag != TAG_STEP + (uint64_t)step)
		rc = -EPROTO;
	if (rc)
		diag("step %d sync: %s", step, hmc_strerror(rc));
	return rc;
}

static int setup(struct ctx *c, struct mesh *m, const char *name)
{
	static const char *const ips[ITEST_MAX_RANKS] = {
		"127.0.0.1", "127.0.0.1",
	};
	HMC_OPTS(hmc_comm_opts, opts, .rank = (uint32_t)m->rank,
		 .connect_timeout_ms = 15000, .op_timeout_ms = OP_TIMEOUT_MS);

	c->name = name;
	c->m = m;
	c->me = m->rank;
	c->peer = 1 - m->rank;
	itest_prefix("%s r%d: ", name, m->rank);
	if (comm_setup(m->rank, BUF_SIZE, "127.0.0.1", &opts, &c->buf,
		       &c->comm))
		return -1;
	c->p = hmc_buf_ptr(c->buf);
	if (mesh_exchange(m, (uint16_t)hmc_comm_listen_port(c->comm)) ||
	    mesh_connect(m, c->comm, ips, 15000))
		return -1;
	return 0;
}

/* Register the three regions and swap descriptors with the peer. */
static int regions(struct ctx *c)
{
	static const uint32_t access[NR_MR] = {
		HMC_MR_REMOTE_READ | HMC_MR_REMOTE_WRITE,
		HMC_MR_REMOTE_READ, HMC_MR_REMOTE_WRITE,
	};
	struct hmc_msg_status st;
	int i, rc;

	c->heap = malloc(HEAP_LEN + 3);
	c->anon = mmap(NULL, ANON_LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!c->heap || c->anon == MAP_FAILED)
		return tap(false, "allocate regions") ? 0 : -1;
	c->base[MR_HEAP] = c->heap + 3;	/* not aligned */
	c->len[MR_HEAP] = HEAP_LEN;
	c->base[MR_STATIC] = static_region;
	c->len[MR_STATIC] = STATIC_LEN;
	c->base[MR_ANON] = c->anon;
	c->len[MR_ANON] = ANON_LEN;
	for (i = 0; i < NR_MR; i++) {
		HMC_OPTS(hmc_mr_opts, o, .access = access[i],
			 .notify = i == MR_HEAP ? &heap_writes : NULL);

		data_fill(c->base[i], 0, c->len[i], seed_of(c->me, 100 + i));
		rc = hmc_comm_mr_reg(c->comm, c->base[i], c->len[i], &o,
				     &c->mr[i]);
		if (!tap(!rc && c->mr[i], "register region %d", i)) {
			diag("%s", hmc_strerror(rc));
			return -1;
		}
		rc = hmc_comm_mr_pack(c->comm, c->mr[i], c->desc[i],
				      sizeof(c->desc[i]), &c->desc_len[i]);
		if (!tap(!rc, "pack region %d", i))
			return -1;
		rc = hmc_comm_send(c->comm, (uint32_t)c->peer, TAG_DESC + i,
				   c->desc[i], c->desc_len[i], HMC_MEM_CPU,
				   OP_TIMEOUT_MS);
		if (rc)
			return tap(false, "send descriptor %d: %s", i,
				   hmc_strerror(rc)) ? 0 : -1;
	}
	for (i = 0; i < NR_MR; i++) {
		uint8_t d[HMC_MR_DESC_MAX];
		uint32_t again = 0;

		rc = hmc_comm_recv(c->comm, (uint32_t)c->peer, TAG_DESC + i, d,
				   sizeof(d), HMC_MEM_CPU, &st, OP_TIMEOUT_MS);
		if (rc)
			return tap(false, "receive descriptor %d: %s", i,
				   hmc_strerror(rc)) ? 0 : -1;
		rc = hmc_comm_mr_import(c->comm, (uint32_t)c->peer, d, st.len,
					&c->rmr[i]);
		if (!tap(!rc && c->rmr[i], "import region %d", i)) {
			diag("%s", hmc_strerror(rc));
			return -1;
		}
		rc = hmc_comm_mr_import(c->comm, (uint32_t)c->peer, d, st.len,
					&again);
		tap(!rc && again == c->rmr[i], "importing region %d again gives its handle", i);
		tap(hmc_comm_rmr_size(c->comm, (uint32_t)c->peer, c->rmr[i]) ==
		    (int64_t)c->len[i], "region %d has its size", i);
		/* only tcp places the bytes itself, and only the heap asked */
		tap(hmc_comm_rmr_notifies(c->comm, (uint32_t)c->peer,
					  c->rmr[i]) ==
		    (i == MR_HEAP && hmc_comm_peer_transport(c->comm,
				(uint32_t)c->peer) == HMC_TRANSPORT_TCP),
		    "region %d tells whether writes into it are counted", i);
	}
	return 0;
}

/* Descriptors that do not parse, or do not fit the transport. */
static void bad_descriptors(struct ctx *c)
{
	uint8_t d[HMC_MR_DESC_MAX];
	size_t len = c->desc_len[MR_HEAP];
	uint32_t h;
	hmc_req_t req;

	memcpy(d, c->desc[MR_HEAP], len);
	d[0] ^= 1;
	tap(hmc_comm_mr_import(c->comm, (uint32_t)c->peer, d, len, &h) ==
	    -EINVAL, "a descriptor with a bad magic is -EINVAL");
	d[0] ^= 1;
	tap(hmc_comm_mr_import(c->comm, (uint32_t)c->peer, d, len - 1, &h) ==
	    -EINVAL, "a truncated descriptor is -EINVAL");
	tap(hmc_comm_mr_import(c->comm, (uint32_t)c->peer, d, 10, &h) ==
	    -EINVAL, "a descriptor shorter than its header is -EINVAL");
	d[len] = 0;
	tap(hmc_comm_mr_import(c->comm, (uint32_t)c->peer, d, len + 1, &h) ==
	    -EINVAL, "a descriptor with bytes past its keys is -EINVAL");
	d[7] = 1;
	tap(hmc_comm_mr_import(c->comm, (uint32_t)c->peer, d, len, &h) ==
	    -EINVAL, "a descriptor with reserved bits set is -EINVAL");
	d[7] = 0;
	d[24] = 0xee;	/* the first key's transport: none such */
	tap(hmc_comm_mr_import(c->comm, (uint32_t)c->peer, d, len, &h) ==
	    -ENOENT, "a descriptor without a key for the transport is -ENOENT");
	tap(hmc_comm_put_mr_nb(c->comm, (uint32_t)c->peer, 0, 0, 0xffff, 0, 8,
			       &req) == -ENOENT, "an unknown remote handle is -ENOENT");
	tap(hmc_comm_put_mr_nb(c->comm, (uint32_t)c->peer, 0xfff0, 0, 0, 0, 8,
			       &req) == -ENOENT, "an unknown local handle is -ENOENT");
	tap(hmc_comm_mr_dereg(c->comm, c->mr[MR_HEAP] + (1u << 16)) == -ENOENT,
	    "deregistering with a wrong generation is -ENOENT");
}

struct span {
	int src, dst;		/* region index, or -1: the ConnBuffer */
	uint64_t src_off, dst_off, len;
};

/*
 * The transfers of one direction (rank 0 puts them, then gets them the
 * other way): sources readable and destinations writable by peers, sizes
 * across the tcp transport's stripe and the frame limit.
 */
static const struct span spans[] = {
	{ MR_HEAP, MR_HEAP, 1, 7, 0 },
	{ MR_HEAP, MR_HEAP, 5, 11, 1 },
	{ MR_HEAP, MR_HEAP, 100, 333, 4093 },
	{ MR_HEAP, MR_HEAP, 8191, 65536 + 5, 256 * KIB + 3 },
	{ MR_HEAP, MR_HEAP, 1 * MIB + 1, 1 * MIB + 7, 2 * MIB - 64 * KIB },
	{ -1, MR_HEAP, 17, HEAP_LEN - 4097, 4097 },
	{ MR_HEAP, -1, 2 * MIB + 9, 1 * MIB + 1, 300 * KIB },
	{ MR_STATIC, MR_ANON, 1, 2, STATIC_LEN - 1 },
	{ MR_STATIC, MR_HEAP, 0, 3 * MIB - 8192, 12 },
	{ MR_STATIC, MR_ANON, 0, ANON_LEN - 1, 1 },
};
#define NR_SPANS	(sizeof(spans) / sizeof(spans[0]))

static uint8_t *at(struct ctx *c, int region)
{
	return region < 0 ? c->p : c->base[region];
}

static uint64_t len_of(struct ctx *c, int region)
{
	return region < 0 ? BUF_SIZE : c->len[region];
}

/* A copy of the ConnBuffer and the regions, to find bytes that changed. */
struct snap {
	uint8_t *v[NR_MR + 1];
};

static int snap_take(struct ctx *c, struct snap *sn)
{
	int r;

	for (r = -1; r < NR_MR; r++) {
		sn->v[r + 1] = malloc(len_of(c, r));
		if (!sn->v[r + 1])
			return -1;
		memcpy(sn->v[r + 1], at(c, r), len_of(c, r));
	}
	return 0;
}

static void snap_free(struct snap *sn)
{
	int r;

	for (r = 0; r <= NR_MR; r++)
		free(sn->v[r]);
}

/* Outside every span's destination, each byte is what the snapshot holds. */
static bool untouched(struct ctx *c, const struct snap *sn, const char *what)
{
	uint64_t i, bad = 0;
	unsigned int k;
	int r;

	for (r = -1; r < NR_MR; r++) {
		for (i = 0; i < len_of(c, r); i++) {
			bool dst = false;

			for (k = 0; k < NR_SPANS && !dst; k++)
				dst = spans[k].dst == r &&
				      i >= spans[k].dst_off &&
				      i < spans[k].dst_off + spans[k].len;
			if (!dst && at(c, r)[i] != sn->v[r + 1][i] && !bad++)
				diag("%s: region %d byte %llu changed", what, r,
				     (unsigned long long)i);
		}
	}
	return !bad;
}

/*
 * Rank 0 puts every span (@get false: its sources, the peer's
 * destinations) or gets them (the peer's sources, its destinations); the
 * destination side then checks every byte of what landed and that nothing
 * else changed.
 */
static int transfers(struct ctx *c, bool get, int step)
{
	bool src_here = (c->me == 0) != get;
	uint64_t seed = seed_of(get ? 1 : 0, step);
	hmc_req_t reqs[NR_SPANS];
	struct snap sn = { { NULL } };
	unsigned int i, n = 0;
	bool ok = true;
	int rc;

	for (i = 0; i < NR_SPANS; i++) {
		const struct span *s = &spans[i];

		if (src_here)
			data_fill(at(c, s->src), s->src_off, s->len, seed);
		else
			data_unlike(at(c, s->dst), s->dst_off, s->len, seed,
				    s->src_off);
	}
	if (!src_here && snap_take(c, &sn)) {
		snap_free(&sn);
		return tap(false, "snapshot") ? 0 : -1;
	}
	if (step_sync(c, step))
		goto err;
	if (c->me == 0) {
		for (i = 0; i < NR_SPANS; i++) {
			const struct span *s = &spans[i];
			uint32_t smr = s->src < 0 ? 0 : (get ? c->rmr : c->mr)[s->src];
			uint32_t dmr = s->dst < 0 ? 0 : (get ? c->mr : c->rmr)[s->dst];

			rc = get ? hmc_comm_get_mr_nb(c->comm, 1, dmr, s->dst_off,
						      smr, s->src_off, s->len,
						      &reqs[n]) :
				   hmc_comm_put_mr_nb(c->comm, 1, smr, s->src_off,
						      dmr, s->dst_off, s->len,
						      &reqs[n]);
			if (rc)
				tap(false, "%s span %u posted: %s",
				    get ? "get" : "put", i, hmc_strerror(rc));
			else
				n++;
		}
		rc = hmc_comm_wait_all(c->comm, reqs, n, OP_TIMEOUT_MS, NULL);
		if (!rc && !get)
			rc = hmc_comm_flush(c->comm, 1);
		tap(!rc && n == NR_SPANS, "%s: %u transfers complete",
		    get ? "gets" : "puts", n);
	}
	if (step_sync(c, step + 1))
		goto err;
	if (!src_here) {
		for (i = 0; i < NR_SPANS; i++) {
			const struct span *s = &spans[i];
			char what[64];

			snprintf(what, sizeof(what), "%s span %u",
				 get ? "get" : "put", i);
			ok &= data_check(at(c, s->dst), s->dst_off, s->len,
					 seed, s->src_off, what);
		}
		tap(ok, "%s: every byte landed", get ? "gets" : "puts");
		tap(untouched(c, &sn, get ? "gets" : "puts"),
		    "%s: nothing else changed", get ? "gets" : "puts");
	}
	snap_free(&sn);
	return 0;
err:
	snap_free(&sn);
	return -1;
}

/* Rights and bounds: refused before anything moves. */
static void refusals(struct ctx *c)
{
	hmc_req_t req;

	tap(hmc_comm_put_mr_nb(c->comm, (uint32_t)c->peer, c->mr[MR_HEAP], 0,
			       c->rmr[MR_STATIC], 0, 8, &req) == -EACCES,
	    "a put into a read-only region is -EACCES");
	tap(hmc_comm_get_mr_nb(c->comm, (uint32_t)c->peer, c->mr[MR_HEAP], 0,
			       c->rmr[MR_ANON], 0, 8, &req) == -EACCES,
	    "a get from a write-only region is -EACCES");
	tap(hmc_comm_put_mr_nb(c->comm, (uint32_t)c->peer, c->mr[MR_HEAP], 0,
			       c->rmr[MR_HEAP], HEAP_LEN - 7, 8, &req) == -ERANGE,
	    "a put past the peer's region end is -ERANGE");
	tap(hmc_comm_get_mr_nb(c->comm, (uint32_t)c->peer, c->mr[MR_ANON],
			       ANON_LEN, c->rmr[MR_HEAP], 0, 1, &req) == -ERANGE,
	    "a get past our region's end is -ERANGE");
	tap(hmc_comm_put_mr_nb(c->comm, (uint32_t)c->peer, c->mr[MR_HEAP],
			       UINT64_MAX - 3, c->rmr[MR_HEAP], 0, 8, &req) ==
	    -ERANGE, "an offset that wraps is -ERANGE");
}

/* ------------------------------------------------------------ atomics */

#define AMO_ADDS	20000
#define AMO_THREAD_ADDS	5000

/*
 * The offset of the @k-th 8-byte slot in the peer's heap region past
 * @from, aligned where it matters: at the owner's address (the region
 * starts 3 bytes past an allocation).
 */
static uint64_t amo_slot(uint64_t from, unsigned int k)
{
	uint64_t at = from;

	/* the heap region starts at malloc + 3: malloc's is 16-aligned */
	while ((at + 3) % 8)
		at++;
	return at + 8 * (uint64_t)k;
}

struct amo_case {
	enum hmc_amo_op op;
	unsigned int size;
	uint64_t init, operand, compare;
	uint64_t want_old, want_new;
};

static const struct amo_case amo_cases[] = {
	{ HMC_AMO_FETCH, 8, 0x1122334455667788ull, 0, 0, 0x1122334455667788ull, 0x1122334455667788ull },
	{ HMC_AMO_SET, 8, 5, 0xfeedfacecafebeefull, 0, 5, 0xfeedfacecafebeefull },
	{ HMC_AMO_SWAP, 8, 7, 9, 0, 7, 9 },
	{ HMC_AMO_CSWAP, 8, 11, 12, 11, 11, 12 },	/* it matches */
	{ HMC_AMO_CSWAP, 8, 13, 14, 99, 13, 13 },	/* it does not */
	{ HMC_AMO_ADD, 8, UINT64_MAX, 2, 0, UINT64_MAX, 1 },
	{ HMC_AMO_AND, 8, 0xf0f0ull, 0x3c3cull, 0, 0xf0f0ull, 0x3030ull },
	{ HMC_AMO_OR, 8, 0xf000ull, 0x000full, 0, 0xf000ull, 0xf00full },
	{ HMC_AMO_XOR, 8, 0xffull, 0x0full, 0, 0xffull, 0xf0ull },
	{ HMC_AMO_FETCH, 4, 0x89abcdefull, 0, 0, 0x89abcdefull, 0x89abcdefull },
	{ HMC_AMO_SWAP, 4, 1, 0x1ffffffffull, 0, 1, 0xffffffffull },
	{ HMC_AMO_CSWAP, 4, 3, 4, 3, 3, 4 },
	{ HMC_AMO_ADD, 4, 0xffffffffull, 3, 0, 0xffffffffull, 2 },
	{ HMC_AMO_XOR, 4, 0x0f0f0f0full, 0xffffffffull, 0, 0x0f0f0f0full, 0xf0f0f0f0ull },
};
#define NR_AMO_CASES	(sizeof(amo_cases) / sizeof(amo_cases[0]))

static uint64_t slot_read(const uint8_t *p, unsigned int size)
{
	uint32_t v4;
	uint64_t v8;

	if (size == 4) {
		memcpy(&v4, p, 4);
		return v4;
	}
	memcpy(&v8, p, 8);
	return v8;
}

static void slot_write(uint8_t *p, unsigned int size, uint64_t v)
{
	uint32_t v4 = (uint32_t)v;

	if (size == 4)
		memcpy(p, &v4, 4);
	else
		memcpy(p, &v, 8);
}

struct adder {
	struct ctx *c;
	uint64_t off;
	uint64_t *seen;		/* the old values it fetched */
	int failed;
};

static void *adder_main(void *arg)
{
	struct adder *a = arg;
	hmc_req_t req;
	int i;

	for (i = 0; i < AMO_THREAD_ADDS; i++)
		if (hmc_comm_amo_nb(a->c->comm, 1, a->c->rmr[MR_HEAP], a->off,
				    8, HMC_AMO_ADD, 1, 0, &a->seen[i], &req) ||
		    hmc_comm_wait(a->c->comm, req, OP_TIMEOUT_MS))
			a->failed++;
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Rank 0's atomics on rank 1's heap region: every op and size, fetching
 * and not; then rank 0's adds (two threads fetching, one not) race rank
 * 1's own CPU atomics on one counter, and none is lost: the fetched old
 * values are all different and the count is exact.
 */
static int atomics(struct ctx *c, int step)
{
	uint8_t *heap = c->base[MR_HEAP];
	uint64_t counter = amo_slot(4096, 0), solo = amo_slot(4096, 1);
	uint64_t *seen = NULL, got[NR_AMO_CASES];
	struct adder ad[2] = { { 0 } };
	pthread_t th[2];
	hmc_req_t reqs[2 * NR_AMO_CASES];
	unsigned int i, k, n = 0;
	uint32_t writes0;
	uint64_t probe;
	bool ok = true;
	int rc;

	/* Both ends have the same transport: both skip, or neither. */
	rc = hmc_comm_amo_nb(c->comm, (uint32_t)c->peer, 0, 0, 8, HMC_AMO_FETCH,
			     0, 0, &probe, &reqs[0]);
	if (!rc)
		rc = hmc_comm_wait(c->comm, reqs[0], OP_TIMEOUT_MS);
	if (hmc_comm_peer_transport(c->comm, (uint32_t)c->peer) !=
	    HMC_TRANSPORT_TCP) {
		/* ucx and verbs: no atomics coherent with the CPU's (yet) */
		tap(rc == -EOPNOTSUPP, "atomics over %s are refused: %s",
		    hmc_transport_name((enum hmc_transport)
				       hmc_comm_peer_transport(c->comm,
							       (uint32_t)c->peer)),
		    hmc_strerror(rc));
		return step_sync(c, step);
	}
	if (!tap(!rc, "a remote atomic: %s", hmc_strerror(rc)))
		return -1;
	if (c->me == 1) {
		for (i = 0; i < NR_AMO_CASES; i++) {
			memset(heap + amo_slot(0, i), 0, 8);
			memset(heap + amo_slot(512, i), 0, 8);
			slot_write(heap + amo_slot(0, i), amo_cases[i].size,
				   amo_cases[i].init);
			slot_write(heap + amo_slot(512, i), amo_cases[i].size,
				   amo_cases[i].init);
		}
		memset(heap + counter, 0, 8);
		memset(heap + solo, 0, 8);
	}
	writes0 = __atomic_load_n(&heap_writes, __ATOMIC_SEQ_CST);
	if (step_sync(c, step))
		return -1;
	if (c->me == 0) {
		for (i = 0; i < NR_AMO_CASES; i++) {
			const struct amo_case *a = &amo_cases[i];

			got[i] = 0xdeadull;
			rc = hmc_comm_amo_nb(c->comm, 1, c->rmr[MR_HEAP],
					     amo_slot(0, i), a->size, a->op,
					     a->operand, a->compare, &got[i],
					     &reqs[n]);
			n += !rc;
			ok &= !rc;
			if (a->op == HMC_AMO_FETCH)
				continue;	/* needs @fetch */
			rc = hmc_comm_amo_nb(c->comm, 1, c->rmr[MR_HEAP],
					     amo_slot(512, i), a->size, a->op,
					     a->operand, a->compare, NULL,
					     &reqs[n]);
			n += !rc;
			ok &= !rc;
		}
		rc = hmc_comm_wait_all(c->comm, reqs, n, OP_TIMEOUT_MS, NULL);
		tap(ok && !rc && !hmc_comm_flush(c->comm, 1),
		    "every atomic posted and complete");
		for (i = 0, ok = true; i < NR_AMO_CASES; i++)
			if (got[i] != amo_cases[i].want_old) {
				diag("atomic %u: fetched %#llx, want %#llx", i,
				     (unsigned long long)got[i],
				     (unsigned long long)amo_cases[i].want_old);
				ok = false;
			}
		tap(ok, "fetching atomics return the old values");
	}
	if (step_sync(c, step + 1))
		return -1;
	if (c->me == 1) {
		for (i = 0, ok = true; i < NR_AMO_CASES; i++) {
			const struct amo_case *a = &amo_cases[i];
			uint64_t v = slot_read(heap + amo_slot(0, i), a->size);
			uint64_t w = slot_read(heap + amo_slot(512, i), a->size);

			if (v != a->want_new ||
			    (a->op != HMC_AMO_FETCH && w != a->want_new)) {
				diag("atomic %u: %#llx and %#llx, want %#llx", i,
				     (unsigned long long)v,
				     (unsigned long long)w,
				     (unsigned long long)a->want_new);
				ok = false;
			}
			/* the bytes after a 4-byte one are untouched */
			if (a->size == 4 &&
			    slot_read(heap + amo_slot(0, i) + 4, 4) != 0) {
				diag("atomic %u: wrote past its 4 bytes", i);
				ok = false;
			}
		}
		tap(ok, "atomics left the new values");
		/* our own CPU atomics, racing rank 0's */
		for (i = 0; i < AMO_ADDS; i++)
			__atomic_fetch_add((uint64_t *)(heap + counter), 1,
					   __ATOMIC_SEQ_CST);
	} else {
		ok = true;
		seen = calloc(2 * AMO_THREAD_ADDS, sizeof(*seen));
		for (k = 0; k < 2 && seen; k++) {
			ad[k] = (struct adder){ c, counter,
						seen + k * AMO_THREAD_ADDS, 0 };
			if (pthread_create(&th[k], NULL, adder_main, &ad[k]))
				ad[k].failed = -1;
		}
		for (i = 0; i < AMO_ADDS - 2 * AMO_THREAD_ADDS; i++) {
			rc = hmc_comm_amo_nb(c->comm, 1, c->rmr[MR_HEAP], counter,
					     8, HMC_AMO_ADD, 1, 0, NULL, &reqs[0]);
			if (!rc)
				rc = hmc_comm_wait(c->comm, reqs[0],
						   OP_TIMEOUT_MS);
			if (rc) {
				ok = false;
				break;
			}
		}
		for (k = 0; k < 2 && seen; k++)
			if (ad[k].failed >= 0)
				pthread_join(th[k], NULL);
		tap(seen && ok && !ad[0].failed && !ad[1].failed &&
		    !hmc_comm_flush(c->comm, 1), "racing adds all complete");
		if (seen) {
			qsort(seen, 2 * AMO_THREAD_ADDS, sizeof(*seen), cmp_u64);
			for (i = 1, ok = true; i < 2 * AMO_THREAD_ADDS; i++)
				ok &= seen[i] != seen[i - 1];
			tap(ok, "no two fetching adds saw the same value");
		}
		free(seen);
	}
	if (step_sync(c, step + 2))
		return -1;
	if (c->me == 1) {
		uint64_t v;

		memcpy(&v, heap + counter, 8);
		tap(v == 2 * AMO_ADDS, "no add was lost: %llu of %d",
		    (unsigned long long)v, 2 * AMO_ADDS);
		if (hmc_comm_rmr_notifies(c->comm, 0, c->rmr[MR_HEAP]) == 1)
			tap(__atomic_load_n(&heap_writes, __ATOMIC_SEQ_CST) -
			    writes0 >= AMO_ADDS,
			    "the peer's atomics counted in the notify word");
	} else {
		uint64_t v = 0;

		/* refusals: rights, range, size, alignment */
		tap(hmc_comm_amo_nb(c->comm, 1, c->rmr[MR_STATIC], 0, 8,
				    HMC_AMO_ADD, 1, 0, NULL, &reqs[0]) == -EACCES,
		    "an atomic on a read-only region is -EACCES");
		tap(hmc_comm_amo_nb(c->comm, 1, c->rmr[MR_ANON], 0, 8,
				    HMC_AMO_FETCH, 0, 0, &v, &reqs[0]) == -EACCES,
		    "a fetching atomic on a write-only region is -EACCES");
		tap(hmc_comm_amo_nb(c->comm, 1, c->rmr[MR_HEAP],
				    amo_slot(HEAP_LEN - 4, 0), 8, HMC_AMO_ADD,
				    1, 0, NULL, &reqs[0]) == -ERANGE,
		    "an atomic past the region's end is -ERANGE");
		tap(hmc_comm_amo_nb(c->comm, 1, c->rmr[MR_HEAP], counter + 4,
				    8, HMC_AMO_ADD, 1, 0, NULL, &reqs[0]) == -EINVAL,
		    "a misaligned atomic is -EINVAL");
		tap(hmc_comm_amo_nb(c->comm, 1, c->rmr[MR_HEAP], counter, 2,
				    HMC_AMO_ADD, 1, 0, NULL, &reqs[0]) == -EINVAL,
		    "a 2-byte atomic is -EINVAL");
		tap(hmc_comm_amo_nb(c->comm, 1, c->rmr[MR_HEAP], counter, 8,
				    HMC_AMO_FETCH, 0, 0, NULL, &reqs[0]) == -EINVAL,
		    "a fetch without a place for the value is -EINVAL");
		/* the ConnBuffer as the target */
		rc = hmc_comm_amo_nb(c->comm, 1, 0, 64, 8, HMC_AMO_SWAP, 0x77,
				     0, &v, &reqs[0]);
		if (!rc)
			rc = hmc_comm_wait(c->comm, reqs[0], OP_TIMEOUT_MS);
		tap(!rc, "an atomic on the ConnBuffer: %s", hmc_strerror(rc));
	}
	return step_sync(c, step + 3);
}

struct poster {
	struct ctx *c;
	uint32_t mr;
	int posted, refused, failed;
};

/* Post puts from the region until the region is gone. */
static void *poster_main(void *arg)
{
	struct poster *ps = arg;
	struct ctx *c = ps->c;
	hmc_req_t req;
	int rc;

	for (;;) {
		rc = hmc_comm_put_mr_nb(c->comm, (uint32_t)c->peer, ps->mr,
					(uint64_t)(ps->posted % 64) * 4096,
					c->rmr[MR_HEAP], 0, 64 * KIB, &req);
		if (rc == -ENOENT) {
			ps->refused++;
			break;
		}
		if (rc) {
			ps->failed++;
			break;
		}
		ps->posted++;
		/* collected or not, the request must keep the region */
		if (ps->posted % 2 && hmc_comm_wait(c->comm, req, OP_TIMEOUT_MS))
			ps->failed++;
	}
	return NULL;
}

/*
 * Rank 0 deregisters a region while a thread posts from it, and frees the
 * memory as soon as hmc_comm_mr_dereg() returns.
 */
static void dereg_busy(struct ctx *c)
{
	HMC_OPTS(hmc_mr_opts, o, .access = 0);
	struct poster ps = { .c = c };
	pthread_t th;
	uint8_t *mem;
	int rc;

	if (c->me != 0)
		return;
	mem = malloc(256 * KIB + 64 * KIB);
	if (!mem || hmc_comm_mr_reg(c->comm, mem, 256 * KIB + 64 * KIB, &o,
				    &ps.mr)) {
		tap(false, "register a busy region");
		free(mem);
		return;
	}
	data_fill(mem, 0, 256 * KIB + 64 * KIB, 7);
	if (pthread_create(&th, NULL, poster_main, &ps)) {
		tap(false, "start the poster");
		return;
	}
	itest_sleep_ms(200);
	rc = hmc_comm_mr_dereg(c->comm, ps.mr);
	free(mem);
	pthread_join(th, NULL);
	tap(!rc, "dereg waits for the region's transfers: %s", hmc_strerror(rc));
	tap(ps.posted > 0 && ps.refused == 1 && !ps.failed,
	    "posts before dereg went (%d), the next was -ENOENT", ps.posted);
	tap(hmc_comm_mr_dereg(c->comm, ps.mr) == -ENOENT,
	    "deregistering twice is -ENOENT");
	tap(!hmc_comm_flush(c->comm, (uint32_t)c->peer), "flush after dereg");
}

/*
 * Rank 1 replaces its heap region by another at the same address; rank
 * 0's put through the old handle must not reach it.
 */
static int stale_key(struct ctx *c, int step)
{
	HMC_OPTS(hmc_mr_opts, o, .access = HMC_MR_REMOTE_READ |
		 HMC_MR_REMOTE_WRITE);
	hmc_req_t req;
	uint32_t mr;
	int rc;

	if (step_sync(c, step - 1))	/* rank 0 is done with the region */
		return -1;
	if (c->me == 1) {
		rc = hmc_comm_mr_dereg(c->comm, c->mr[MR_HEAP]);
		if (!rc)
			rc = hmc_comm_mr_reg(c->comm, c->base[MR_HEAP],
					     c->len[MR_HEAP], &o, &mr);
		tap(!rc, "re-register the heap region");
		data_fill(c->base[MR_HEAP], 0, c->len[MR_HEAP], 0x5a);
	}
	if (step_sync(c, step))
		return -1;
	if (c->me == 0) {
		rc = hmc_comm_put_mr_nb(c->comm, 1, c->mr[MR_HEAP], 0,
					c->rmr[MR_HEAP], 0, 4096, &req);
		if (!rc)
			rc = hmc_comm_wait(c->comm, req, OP_TIMEOUT_MS);
		if (!rc)
			rc = hmc_comm_flush(c->comm, 1);
		tap(rc < 0, "a put with a stale key fails: %s", hmc_strerror(rc));
		return 0;
	}
	/* the connection goes: then nothing can land any more */
	tap(wait_connected(c->comm, 0, false, OP_TIMEOUT_MS),
	    "the peer that used a stale key is cut off");
	tap(data_check(c->base[MR_HEAP], 0, c->len[MR_HEAP], 0x5a, 0,
		       "re-registered region"),
	    "the new region kept its bytes");
	return 0;
}

static int case_all(struct mesh *m, void *arg)
{
	struct ctx c = { 0 };
	HMC_OPTS(hmc_mr_opts, o, .access = HMC_MR_REMOTE_WRITE);
	uint32_t mr;
	int rc;

	if (setup(&c, m, arg))
		return 1;
	if (hmc_comm_peer_transport(c.comm, (uint32_t)c.peer) ==
	    HMC_TRANSPORT_SHM) {
		hmc_req_t req;
		uint64_t v;

		rc = hmc_comm_mr_reg(c.comm, static_region, 4096, &o, &mr);
		tap(rc == -EOPNOTSUPP, "shm has no regions: %s",
		    hmc_strerror(rc));
		rc = hmc_comm_amo_nb(c.comm, (uint32_t)c.peer, 0, 0, 8,
				     HMC_AMO_FETCH, 0, 0, &v, &req);
		tap(rc == -EOPNOTSUPP, "nor atomics: %s", hmc_strerror(rc));
		goto out;
	}
	if (regions(&c))
		goto out;
	bad_descriptors(&c);
	if (transfers(&c, false, 10) || transfers(&c, true, 20))
		goto out;
	refusals(&c);
	if (atomics(&c, 40))
		goto out;
	dereg_busy(&c);
	if (hmc_comm_peer_transport(c.comm, (uint32_t)c.peer) ==
	    HMC_TRANSPORT_TCP ||
	    hmc_comm_peer_transport(c.comm, (uint32_t)c.peer) ==
	    HMC_TRANSPORT_VERBS) {
		stale_key(&c, 30);
		hmc_comm_destroy(c.comm);
		c.comm = NULL;
	}
out:
	if (c.comm) {
		int all[2] = { 0, 1 };

		mesh_goodbye(c.comm, c.me, all, 2);
		hmc_comm_destroy(c.comm);
	}
	hmc_buf_destroy(c.buf);
	free(c.heap);
	if (c.anon && c.anon != MAP_FAILED)
		munmap(c.anon, ANON_LEN);
	return itest_failures() ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *name = "mr";
	int opt, timeout_s = 120;

	while ((opt = getopt(argc, argv, "N:t:")) != -1) {
		switch (opt) {
		case 'N': name = optarg; break;
		case 't': timeout_s = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: test_mr [-N NAME] [-t SECONDS]\n");
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	return mesh_run(name, 2, case_all, (void *)name, timeout_s) ? 1 : 0;
}
