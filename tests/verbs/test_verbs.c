// SPDX-License-Identifier: MIT
/*
 * test_verbs: what only the verbs transport has, on a real or soft-RoCE
 * device (the communicator suite itself runs over verbs through test_comm
 * with HMC_TEST_TRANSPORT=verbs).
 *
 *   test_verbs CASE [--chs N] [--ip IP]
 *
 *   edges     2 ranks: puts, gets and put_signals of 1 byte, a chunk less
 *             one, a chunk, a chunk and one, and several chunks and a bit,
 *             all in flight at once and waited in reverse order, every
 *             byte checked (HMC_VERBS_CHUNK sets the chunk). The debug log
 *             of the registration must say that hmc.ko exported a /dev/hmc
 *             buffer and why it went to ibv_reg_mr all the same (on rxe:
 *             ibv_reg_dmabuf_mr is not supported), and say nothing of
 *             dma-bufs for other buffers.
 *   staged    2 ranks, with the mock CUDA driver (tests/gpu) handing out
 *             memory the device cannot register (MOCK_GPU_UNREACHABLE=1):
 *             rank 0's CUDA ConnBuffer is staged through host bounce
 *             buffers. Its puts, gets and put_signals of the edges' sizes
 *             to rank 1's CPU buffer, all in flight at once, every byte
 *             checked (put_signal data on its tag); rank 1's put, get and
 *             put_signal to rank 0 fail with -EOPNOTSUPP and write
 *             nothing, its flush works; the mock saw no misuse and no
 *             leak.
 *   gpumr     2 ranks, with the mock CUDA driver: rank 0 registers a range
 *             of CUDA memory that starts and ends inside pages as a memory
 *             region. The driver exports a dma-buf of the pages around it,
 *             which rxe refuses (ibv_reg_dmabuf_mr is not supported), so it
 *             is registered by its mapping (peer memory), and the debug log
 *             says so. Rank 1 puts into it and gets from it from its
 *             ConnBuffer, rank 0 puts from it into rank 1's ConnBuffer,
 *             ranges of the edges' sizes all in flight at once; every
 *             byte is checked (rank 0's through the driver) and nothing
 *             around the ranges is written. With MOCK_GPU_UNREACHABLE=1
 *             (no dma-buf, no peer memory) registering is -EOPNOTSUPP.
 *             The mock saw no misuse and no leak.
 *   mismatch  2 ranks with 1 and --chs channels: the connect fails with
 *             -EINVAL and nothing stays connected; with equal counts the
 *             same ranks connect and move data.
 *   devices   2 ranks: HMC_IB_DEV naming a device or a port that does not
 *             exist, or no port number, makes the connect fail cleanly
 *             (-ENODEV, -EINVAL); dev:port of the real one then works.
 *   vanish    3 ranks: rank 1 dies in the middle of transfers from rank 0
 *             while a child of it keeps its control sockets open, so only
 *             the queue pairs can tell: rank 0's requests fail with the
 *             retry-exceeded error within VANISH_LIMIT_MS, the peer is
 *             marked down, and rank 0 goes on with rank 2.
 *
 * The control plane listens on --ip (default 127.0.0.1); the data path
 * takes HMC_IB_DEV or the first active port.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hmc/hmc.h>

#include "itest.h"

#define OP_TIMEOUT_MS	20000
#define MIB		(1024 * 1024)
#define VANISH_LIMIT_MS	6000	/* the QP gives up after about 1.9 s */
#define VANISH_WINDOW	4	/* 1 MiB transfers in flight to the victim */
#define VANISH_STREAM_MS 60000	/* how long they may stream */
#define TAG_SLEEPER	0x51ee9e0000000000ULL
#define TAG_DONE	0xd0e0d0e0d0e0d0e0ULL

struct cfg {
	const char *ip;
	uint32_t chs;
};

static int expect(int got, int want, const char *what)
{
	if (got == want)
		return 0;
	diag("%s: %s, want %s", what, hmc_strerror(got), hmc_strerror(want));
	return 1;
}

/* ---------------------------------------------------------- log capture */

static struct {
	bool dmabuf_said;	/* a message about ibv_reg_dmabuf_mr */
	bool dmabuf_eopnotsupp;	/* ... that says it is not supported */
	bool fell_back;		/* ... and that ibv_reg_mr took over */
	bool retry_exceeded;	/* a WR failed for want of an answer */
	bool export_failed;	/* no dma-buf of the buffer at all */
	bool staged;		/* our buffer goes through bounce buffers */
	bool no_remote;		/* a refusal: the peer's buffer is staged */
	bool peer_memory;	/* device memory went to ibv_reg_mr */
} seen;

static void capture(enum hmc_log_level level, const char *msg, void *arg)
{
	if (strstr(msg, "ibv_reg_dmabuf_mr") || strstr(msg, "dma-buf")) {
		seen.dmabuf_said = true;
		seen.dmabuf_eopnotsupp |= !!strstr(msg, hmc_strerror(-EOPNOTSUPP));
		seen.fell_back |= !!strstr(msg, "registering the /dev/hmc mapping with ibv_reg_mr");
		seen.export_failed |= !!strstr(msg, "no dma-buf of the");
		seen.peer_memory |= !!strstr(msg, "trying ibv_reg_mr (peer memory)");
		diag("log: %s", msg);
	}
	if (strstr(msg, "staged through host memory")) {
		seen.staged |= !!strstr(msg, "buffer staged");
		seen.no_remote |= !!strstr(msg, "no put, get or put_signal");
		diag("log: %s", msg);
	}
	if (strstr(msg, "retry counter exceeded")) {
		seen.retry_exceeded = true;
		diag("log: %s", msg);
	}
}

static int setup(struct mesh *m, const struct cfg *cfg, uint32_t chs,
		 size_t size, struct hmc_buf **buf, struct hmc_comm **comm)
{
	HMC_OPTS(hmc_comm_opts, opts, .rank = (uint32_t)m->rank,
		 .connect_timeout_ms = 15000, .op_timeout_ms = OP_TIMEOUT_MS,
		 .num_chs = chs);

	return comm_setup(m->rank, size, cfg->ip, &opts, buf, comm);
}

static int connect_all(struct mesh *m, struct hmc_comm *comm,
		       const struct cfg *cfg)
{
	const char *ips[ITEST_MAX_RANKS];
	int i;

	for (i = 0; i < m->nranks; i++)
		ips[i] = cfg->ip;
	if (mesh_exchange(m, (uint16_t)hmc_comm_listen_port(comm)))
		return -1;
	return mesh_connect(m, comm, ips, 15000);
}

/* --------------------------------------------------------------- edges */

#define MAX_RANGES	5

static uint64_t chunk_size(void)
{
	const char *env = getenv("HMC_VERBS_CHUNK");

	return env ? strtoull(env, NULL, 0) : MIB;
}

/*
 * The ranges of edges and staged: 1 byte, a chunk less one, a chunk, a
 * chunk and one and 3.5 chunks and 7, at unaligned offsets with gaps.
 * Returns the size of the region they span, H.
 */
static size_t edge_ranges(size_t lens[MAX_RANGES], size_t off[MAX_RANGES])
{
	const uint64_t c = chunk_size();
	size_t h = 0, i;

	lens[0] = 1;
	lens[1] = c - 1;
	lens[2] = c;
	lens[3] = c + 1;
	lens[4] = 3 * c + c / 2 + 7;
	for (i = 0; i < MAX_RANGES; i++) {
		off[i] = h + 3 * i;
		h = off[i] + lens[i];
	}
	return h;
}

/*
 * The initiator's side of edges and staged, buffers laid out as edges_rank
 * says: a put and a get per range, all in flight at once and waited in
 * reverse order; then a put_signal per range, tagged with its index, a
 * flush and the done tag.
 */
static int initiate(struct hmc_comm *comm, uint32_t peer, const size_t *lens,
		    const size_t *off, size_t h)
{
	const size_t n = MAX_RANGES;
	hmc_req_t reqs[2 * MAX_RANGES];
	size_t i;
	int rc = 0, bad = 0;

	for (i = 0; i < n && !rc; i++) {
		rc = hmc_comm_put_nb(comm, peer, off[i], h + off[i], lens[i],
				     &reqs[2 * i]);
		if (!rc)
			rc = hmc_comm_get_nb(comm, peer, 3 * h + off[i], off[i],
					     lens[i], &reqs[2 * i + 1]);
		bad += expect(rc, 0, "post");
	}
	for (i = 2 * n; i-- > 0 && !rc;)
		bad += expect(hmc_comm_wait(comm, reqs[i], OP_TIMEOUT_MS), 0,
			      "wait, in reverse order");
	for (i = 0; i < n && !bad; i++)
		bad += expect(hmc_comm_put_signal(comm, peer, off[i],
						  2 * h + off[i], lens[i], i),
			      0, "put_signal");
	if (!bad)
		bad += expect(hmc_comm_flush(comm, peer), 0, "flush");
	if (!bad)
		bad += expect(hmc_comm_send_tag(comm, peer, TAG_DONE), 0,
			      "done tag");
	return bad;
}

/*
 * Each rank's buffer: [0, H) the source, then inboxes of H bytes for the
 * peer's puts and put_signals and a landing zone for our gets. Op i of each
 * kind moves lens[i] bytes at the same offsets within these regions.
 */
static int edges_rank(struct mesh *m, void *arg)
{
	const struct cfg *cfg = arg;
	size_t lens[MAX_RANGES], off[MAX_RANGES], i;
	const size_t h = edge_ranges(lens, off), n = MAX_RANGES;
	uint64_t mine = 0xed6e0 + (uint64_t)m->rank, theirs = 0xed6e1 - (uint64_t)m->rank;
	uint32_t peer = (uint32_t)(1 - m->rank);
	enum hmc_buf_backing backing;
	struct hmc_comm *comm;
	struct hmc_buf *buf;
	uint8_t *p;
	uint64_t tag;
	int rc, bad = 0;

	itest_prefix("edges chs=%u r%d: ", cfg->chs, m->rank);
	hmc_set_log(capture, HMC_LOG_DEBUG, NULL);
	if (setup(m, cfg, cfg->chs, 4 * h, &buf, &comm))
		return 1;
	p = hmc_buf_ptr(buf);
	if (connect_all(m, comm, cfg))
		goto out;

	backing = hmc_buf_backing(buf);
	if (backing == HMC_BUF_BACKING_KMOD)
		tap(seen.dmabuf_said && seen.fell_back && !seen.export_failed &&
		    (seen.dmabuf_eopnotsupp ||
		     strncmp(getenv("HMC_IB_DEV") ? getenv("HMC_IB_DEV") : "", "rxe", 3)),
		    "a /dev/hmc buffer: exported as a dma-buf, and the debug log says why it went to ibv_reg_mr (%s)",
		    seen.dmabuf_eopnotsupp ? "ibv_reg_dmabuf_mr not supported" :
		    "the device refused the dma-buf");
	else
		tap(!seen.dmabuf_said, "a %s buffer: no dma-buf attempt in the log",
		    hmc_buf_backing_name(backing));
	hmc_set_log(NULL, HMC_LOG_ERROR, NULL);

	data_fill(p, 0, h, mine);
	for (i = 0; i < n; i++) {
		data_unlike(p, h + off[i], lens[i], theirs, off[i]);
		data_unlike(p, 2 * h + off[i], lens[i], theirs, off[i]);
		data_unlike(p, 3 * h + off[i], lens[i], theirs, off[i]);
	}
	rc = hmc_comm_barrier(comm, OP_TIMEOUT_MS);
	bad += expect(rc, 0, "barrier");

	if (!rc)
		bad += initiate(comm, peer, lens, off, h);

	for (i = 0; i < n && !bad; i++) {
		rc = hmc_comm_recv_tag(comm, peer, &tag, OP_TIMEOUT_MS);
		if (rc || tag != i) {
			diag("put_signal tag %zu: %s, 0x%llx", i,
			     hmc_strerror(rc), (unsigned long long)tag);
			bad++;
			break;
		}
		bad += !data_check(p, 2 * h + off[i], lens[i], theirs, off[i],
				   "put_signal data, on its tag");
	}
	if (!bad) {
		rc = hmc_comm_recv_tag(comm, peer, &tag, OP_TIMEOUT_MS);
		bad += expect(rc, 0, "done tag");
	}
	for (i = 0; i < n && !bad; i++) {
		bad += !data_check(p, h + off[i], lens[i], theirs, off[i], "put");
		bad += !data_check(p, 3 * h + off[i], lens[i], theirs, off[i],
				   "get");
	}
	bad += !data_check(p, 0, h, mine, 0, "our source, only read");
	tap(!bad, "put, get, put_signal of 1, %llu-1, %llu, %llu+1 and %zu bytes over %u channel(s), every byte checked",
	    (unsigned long long)lens[2], (unsigned long long)lens[2],
	    (unsigned long long)lens[2], lens[n - 1], cfg->chs);
	bad += expect(hmc_comm_barrier(comm, OP_TIMEOUT_MS), 0, "final barrier");
out:
	hmc_comm_destroy(comm);
	hmc_buf_destroy(buf);
	return bad || itest_failures();
}

/* -------------------------------------------------------------- staged */

/* What the mock CUDA driver saw go wrong (or leak, at @end): 0 if nothing. */
static int mock_cuda_report(bool end)
{
	int (*report)(char *msg, size_t len);
	char msg[256] = "";
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

	*(void **)&report = h ? dlsym(h, "mock_report") : NULL;
	if (!report) {
		diag("libcuda.so.1 is not the mock (LD_LIBRARY_PATH)");
		return 1;
	}
	if (!report(msg, sizeof(msg)) || (!end && !strstr(msg, "violation")))
		return 0;
	diag("mock CUDA: %s", msg);
	return 1;
}

/* Rank 0's communicator on a CUDA ConnBuffer of @size bytes. */
static int staged_setup(const struct cfg *cfg, size_t size,
			struct hmc_buf **buf, struct hmc_comm **comm)
{
	HMC_OPTS(hmc_comm_opts, opts, .rank = 0, .connect_timeout_ms = 15000,
		 .op_timeout_ms = OP_TIMEOUT_MS, .num_chs = cfg->chs);
	int rc;

	rc = hmc_buf_create(HMC_MEM_CUDA, 0, size, NULL, buf);
	if (rc) {
		tap(false, "CUDA buffer of %zu bytes (mock): %s", size,
		    hmc_strerror(rc));
		return -1;
	}
	rc = hmc_comm_create(*buf, &opts, comm);
	if (!rc)
		rc = hmc_comm_listen(*comm, cfg->ip, 0);
	if (rc) {
		tap(false, "communicator on a CUDA buffer: %s", hmc_strerror(rc));
		hmc_comm_destroy(*comm);
		hmc_buf_destroy(*buf);
		return -1;
	}
	return 0;
}

/*
 * Both buffers: [0, H) the source, then inboxes of H bytes for puts and
 * put_signals and a landing zone for gets, as in edges; only rank 0
 * initiates transfers. Rank 0's buffer is device memory: it is filled
 * and checked through a host copy, @host.
 */
static int staged_initiator(struct hmc_comm *comm, struct hmc_buf *buf,
			    uint8_t *host, const size_t *lens, const size_t *off,
			    size_t n, size_t h)
{
	uint64_t tag;
	size_t i;
	int bad;

	bad = initiate(comm, 1, lens, off, h);
	/* rank 1 has checked our data and tried to reach our buffer */
	if (!bad)
		bad += expect(hmc_comm_recv_tag(comm, 1, &tag, OP_TIMEOUT_MS), 0,
			      "rank 1's done tag");
	memset(host, 0, 4 * h);
	bad += expect(hmc_buf_read(buf, 0, host, 4 * h, HMC_MEM_CPU), 0,
		      "reading the CUDA buffer back");
	for (i = 0; i < n && !bad; i++)
		bad += !data_check(host, 3 * h + off[i], lens[i], 0x57a1,
				   off[i], "get into the staged buffer");
	bad += !data_check(host, 0, h, 0x57a0, 0, "our source, only read");
	bad += !data_check(host, h, 2 * h, 0x57a2, h,
			   "inboxes rank 1 could not write");
	return bad;
}

static int staged_target(struct hmc_comm *comm, uint8_t *p, const size_t *lens,
			 const size_t *off, size_t n, size_t h)
{
	hmc_req_t r;
	uint64_t tag;
	size_t i;
	int rc, bad = 0;

	for (i = 0; i < n && !bad; i++) {
		rc = hmc_comm_recv_tag(comm, 0, &tag, OP_TIMEOUT_MS);
		if (rc || tag != i) {
			diag("put_signal tag %zu: %s, 0x%llx", i,
			     hmc_strerror(rc), (unsigned long long)tag);
			bad++;
			break;
		}
		bad += !data_check(p, 2 * h + off[i], lens[i], 0x57a0, off[i],
				   "staged put_signal data, on its tag");
	}
	if (!bad)
		bad += expect(hmc_comm_recv_tag(comm, 0, &tag, OP_TIMEOUT_MS), 0,
			      "done tag");
	for (i = 0; i < n && !bad; i++)
		bad += !data_check(p, h + off[i], lens[i], 0x57a0, off[i],
				   "staged put");
	tap(!bad, "from a staged CUDA buffer: put, get, put_signal of 1, a chunk less one, a chunk, a chunk and one and %zu bytes, every byte checked",
	    lens[n - 1]);

	rc = hmc_comm_put(comm, 0, 0, h, 4096);
	bad += expect(rc, -EOPNOTSUPP, "put to the staged buffer");
	rc = hmc_comm_get(comm, 0, 0, 0, 4096);
	bad += expect(rc, -EOPNOTSUPP, "get from the staged buffer");
	rc = hmc_comm_get_nb(comm, 0, 0, 0, 1, &r);
	bad += expect(rc, -EOPNOTSUPP, "get_nb from the staged buffer");
	rc = hmc_comm_put_signal(comm, 0, 0, 2 * h, 4096, TAG_DONE);
	bad += expect(rc, -EOPNOTSUPP, "put_signal to the staged buffer");
	bad += expect(hmc_comm_flush(comm, 0), 0, "flush to the staged peer");
	bad += !data_check(p, 0, h, 0x57a1, 0, "our source, only read");
	tap(!bad && seen.no_remote,
	    "to a staged buffer: put, get and put_signal say -EOPNOTSUPP and the debug log why; flush works");
	bad += expect(hmc_comm_send_tag(comm, 0, TAG_DONE), 0, "done tag");
	return bad;
}

static int staged_rank(struct mesh *m, void *arg)
{
	const struct cfg *cfg = arg;
	size_t lens[MAX_RANGES], off[MAX_RANGES], i;
	const size_t h = edge_ranges(lens, off), n = MAX_RANGES;
	struct hmc_comm *comm;
	struct hmc_buf *buf;
	uint8_t *host = NULL;
	int bad = 0, rc;

	itest_prefix("staged chs=%u r%d: ", cfg->chs, m->rank);
	hmc_set_log(capture, HMC_LOG_DEBUG, NULL);
	if (m->rank == 0 ? staged_setup(cfg, 4 * h, &buf, &comm) :
	    setup(m, cfg, cfg->chs, 4 * h, &buf, &comm))
		return 1;
	if (connect_all(m, comm, cfg)) {
		bad = 1;
		goto out;
	}
	if (m->rank == 0) {
		tap(seen.export_failed && seen.staged,
		    "a CUDA buffer with no dma-buf that the device cannot register: staged through host memory, the debug log says so");
		host = malloc(4 * h);
		data_fill(host, 0, h, 0x57a0);
		data_fill(host, h, 2 * h, 0x57a2);
		for (i = 0; i < n; i++)
			data_unlike(host, 3 * h + off[i], lens[i], 0x57a1,
				    off[i]);
		rc = hmc_buf_write(buf, 0, host, 4 * h, HMC_MEM_CPU);
		bad += expect(rc, 0, "filling the CUDA buffer");
	} else {
		data_fill(hmc_buf_ptr(buf), 0, h, 0x57a1);
		for (i = 0; i < n; i++) {
			data_unlike(hmc_buf_ptr(buf), h + off[i], lens[i],
				    0x57a0, off[i]);
			data_unlike(hmc_buf_ptr(buf), 2 * h + off[i], lens[i],
				    0x57a0, off[i]);
		}
	}
	bad += expect(hmc_comm_barrier(comm, OP_TIMEOUT_MS), 0, "barrier");
	if (!bad && m->rank == 0) {
		bad = staged_initiator(comm, buf, host, lens, off, n, h);
		tap(!bad, "staged gets landed in the CUDA buffer, every byte checked, nothing else written");
	} else if (!bad) {
		bad = staged_target(comm, hmc_buf_ptr(buf), lens, off, n, h);
	}
	bad += expect(hmc_comm_barrier(comm, OP_TIMEOUT_MS), 0, "final barrier");
	hmc_set_log(NULL, HMC_LOG_ERROR, NULL);
out:
	hmc_comm_destroy(comm);
	hmc_buf_destroy(buf);
	free(host);
	if (m->rank == 0)
		tap(!mock_cuda_report(true), "the mock CUDA driver saw no misuse and no leak");
	return bad || itest_failures();
}

/* --------------------------------------------------------------- gpumr */

#define GPUMR_SKEW	100	/* bytes of CUDA memory before and after the region */
#define GPUMR_TAG_DESC	0x6d72ULL
#define GPUMR_PUT	0x6e0	/* data seeds: rank 1's puts, */
#define GPUMR_SRC	0x6e1	/* the region's source half, */
#define GPUMR_AROUND	0x6e2	/* the rest of the CUDA memory */

/*
 * Rank 0: a CUDA buffer of 2 H + 2 GPUMR_SKEW bytes, the region H bytes
 * into it: its first H bytes take rank 1's puts, its second H bytes are
 * the source of rank 1's gets and of our puts into rank 1's ConnBuffer at
 * 2 H. 0, or the number of failed checks.
 */
static int gpumr_owner(struct hmc_comm *comm, const size_t *lens,
		       const size_t *off, size_t n, size_t h, bool unreachable)
{
	HMC_OPTS(hmc_mr_opts, o, .access = HMC_MR_REMOTE_READ |
		 HMC_MR_REMOTE_WRITE, .mem_type = HMC_MEM_CUDA, .device = 0);
	const size_t total = 2 * h + 2 * GPUMR_SKEW;
	hmc_req_t reqs[MAX_RANGES];
	uint8_t desc[HMC_MR_DESC_MAX] = { 0 }, *host, *want, *r;
	struct hmc_buf *gbuf;
	size_t dlen = 1, i;
	uint64_t tag;
	uint32_t mr = 0;
	int rc, bad = 0;

	rc = hmc_buf_create(HMC_MEM_CUDA, 0, total, NULL, &gbuf);
	if (rc) {
		tap(false, "CUDA buffer of %zu bytes (mock): %s", total,
		    hmc_strerror(rc));
		return 1;
	}
	host = malloc(total);
	want = malloc(total);
	if (!host || !want) {
		bad = 1;
		goto out;
	}
	r = want + GPUMR_SKEW;
	data_fill(want, 0, total, GPUMR_AROUND);
	data_fill(r + h, 0, h, GPUMR_SRC);
	for (i = 0; i < n; i++)
		data_unlike(r, off[i], lens[i], GPUMR_PUT, off[i]);
	bad += expect(hmc_buf_write(gbuf, 0, want, total, HMC_MEM_CPU), 0,
		      "filling the CUDA buffer");

	memset(&seen, 0, sizeof(seen));
	rc = hmc_comm_mr_reg(comm, (uint8_t *)hmc_buf_ptr(gbuf) + GPUMR_SKEW,
			     2 * h, &o, &mr);
	if (unreachable)
		bad += !tap(rc == -EOPNOTSUPP && seen.export_failed,
			    "CUDA memory with neither dma-buf nor peer memory: registering is %s, the debug log says why",
			    hmc_strerror(rc));
	else
		bad += !tap(!rc && seen.dmabuf_said && !seen.export_failed &&
			    seen.peer_memory && seen.dmabuf_eopnotsupp,
			    "a CUDA region off its pages: exported as a dma-buf, refused by the device, registered as peer memory: %s",
			    hmc_strerror(rc));
	if (rc) {
		mr = 0;
		rc = hmc_comm_send(comm, 1, GPUMR_TAG_DESC, desc, 1,
				   HMC_MEM_CPU, OP_TIMEOUT_MS);
		bad += expect(rc, 0, "telling rank 1 there is no region");
		goto out;
	}
	rc = hmc_comm_mr_pack(comm, mr, desc, sizeof(desc), &dlen);
	if (!rc)
		rc = hmc_comm_send(comm, 1, GPUMR_TAG_DESC, desc, dlen,
				   HMC_MEM_CPU, OP_TIMEOUT_MS);
	bad += expect(rc, 0, "sending the region's descriptor");

	/* from the region into rank 1's ConnBuffer */
	for (i = 0; i < n && !rc; i++) {
		rc = hmc_comm_put_mr_nb(comm, 1, mr, h + off[i], 0,
					2 * h + off[i], lens[i], &reqs[i]);
		bad += expect(rc, 0, "put from the CUDA region");
	}
	while (i-- > 0 && !bad)
		bad += expect(hmc_comm_wait(comm, reqs[i], OP_TIMEOUT_MS), 0,
			      "wait, in reverse order");
	if (!bad)
		bad += expect(hmc_comm_flush(comm, 1), 0, "flush");
	if (!bad)
		bad += expect(hmc_comm_send_tag(comm, 1, TAG_DONE), 0,
			      "done tag");

	/* rank 1 is done with the region: what it holds now */
	if (!bad)
		bad += expect(hmc_comm_recv_tag(comm, 1, &tag, OP_TIMEOUT_MS),
			      0, "rank 1's done tag");
	bad += expect(hmc_buf_read(gbuf, 0, host, total, HMC_MEM_CPU), 0,
		      "reading the CUDA buffer back");
	for (i = 0; i < n && !bad; i++) {
		bad += !data_check(host + GPUMR_SKEW, off[i], lens[i],
				   GPUMR_PUT, off[i], "put into the CUDA region");
		memcpy(host + GPUMR_SKEW + off[i], r + off[i], lens[i]);
	}
	if (!bad && memcmp(host, want, total)) {
		diag("CUDA memory outside rank 1's puts changed");
		bad++;
	}
	tap(!bad, "rank 1's puts landed in the CUDA region, every byte checked, nothing else written");
out:
	if (mr) {
		bad += expect(hmc_comm_barrier(comm, OP_TIMEOUT_MS), 0,
			      "barrier before dereg");
		bad += expect(hmc_comm_mr_dereg(comm, mr), 0, "dereg");
	}
	hmc_buf_destroy(gbuf);
	free(host);
	free(want);
	return bad;
}

/*
 * Rank 1: its ConnBuffer of 4 H bytes holds the source of its puts, its
 * gets' landing zone at H and rank 0's puts at 2 H.
 */
static int gpumr_peer(struct hmc_comm *comm, uint8_t *p, const size_t *lens,
		      const size_t *off, size_t n, size_t h)
{
	uint8_t desc[HMC_MR_DESC_MAX];
	hmc_req_t reqs[2 * MAX_RANGES];
	struct hmc_msg_status st;
	uint32_t rmr = 0;
	uint64_t tag;
	size_t i;
	int rc, bad = 0;

	rc = hmc_comm_recv(comm, 0, GPUMR_TAG_DESC, desc, sizeof(desc),
			   HMC_MEM_CPU, &st, OP_TIMEOUT_MS);
	if (expect(rc, 0, "rank 0's descriptor"))
		return 1;
	if (st.len == 1)	/* rank 0 has no region to give */
		return 0;
	rc = hmc_comm_mr_import(comm, 0, desc, st.len, &rmr);
	bad += expect(rc, 0, "importing the CUDA region");
	for (i = 0; i < n && !rc; i++) {
		rc = hmc_comm_put_mr_nb(comm, 0, 0, off[i], rmr, off[i],
					lens[i], &reqs[2 * i]);
		if (!rc)
			rc = hmc_comm_get_mr_nb(comm, 0, 0, h + off[i], rmr,
						h + off[i], lens[i],
						&reqs[2 * i + 1]);
		bad += expect(rc, 0, "post");
	}
	for (i = 2 * n; i-- > 0 && !bad;)
		bad += expect(hmc_comm_wait(comm, reqs[i], OP_TIMEOUT_MS), 0,
			      "wait, in reverse order");
	if (!bad)
		bad += expect(hmc_comm_flush(comm, 0), 0, "flush");
	if (!bad)
		bad += expect(hmc_comm_recv_tag(comm, 0, &tag, OP_TIMEOUT_MS),
			      0, "rank 0's done tag");
	for (i = 0; i < n && !bad; i++) {
		bad += !data_check(p, h + off[i], lens[i], GPUMR_SRC, off[i],
				   "get from the CUDA region");
		bad += !data_check(p, 2 * h + off[i], lens[i], GPUMR_SRC,
				   off[i], "put from the CUDA region");
	}
	bad += !data_check(p, 0, h, GPUMR_PUT, 0, "our source, only read");
	tap(!bad, "puts into and gets from a CUDA region, puts from it, of 1 to %zu bytes, every byte checked",
	    lens[n - 1]);
	if (!bad)
		bad += expect(hmc_comm_send_tag(comm, 0, TAG_DONE), 0,
			      "done tag");
	bad += expect(hmc_comm_barrier(comm, OP_TIMEOUT_MS), 0,
		      "barrier before dereg");
	return bad;
}

static int gpumr_rank(struct mesh *m, void *arg)
{
	const struct cfg *cfg = arg;
	const char *env = getenv("MOCK_GPU_UNREACHABLE");
	size_t lens[MAX_RANGES], off[MAX_RANGES], i;
	const size_t h = edge_ranges(lens, off), n = MAX_RANGES;
	struct hmc_comm *comm;
	struct hmc_buf *buf;
	uint8_t *p;
	int bad;

	itest_prefix("gpumr chs=%u r%d: ", cfg->chs, m->rank);
	hmc_set_log(capture, HMC_LOG_DEBUG, NULL);
	/* the last quarter of a ConnBuffer stages messages (the descriptor) */
	if (setup(m, cfg, cfg->chs, m->rank ? 4 * h : MIB, &buf, &comm))
		return 1;
	p = hmc_buf_ptr(buf);
	if (m->rank == 1) {
		data_fill(p, 0, h, GPUMR_PUT);
		for (i = 0; i < n; i++) {
			data_unlike(p, h + off[i], lens[i], GPUMR_SRC, off[i]);
			data_unlike(p, 2 * h + off[i], lens[i], GPUMR_SRC,
				    off[i]);
		}
	}
	bad = connect_all(m, comm, cfg) ? 1 :
	      m->rank ? gpumr_peer(comm, p, lens, off, n, h) :
	      gpumr_owner(comm, lens, off, n, h, env && !strcmp(env, "1"));
	hmc_set_log(NULL, HMC_LOG_ERROR, NULL);
	hmc_comm_destroy(comm);
	hmc_buf_destroy(buf);
	if (m->rank == 0)
		tap(!mock_cuda_report(true), "the mock CUDA driver saw no misuse and no leak");
	return bad || itest_failures();
}

/* ------------------------------------------------------------ mismatch */

static int mismatch_rank(struct mesh *m, void *arg)
{
	const struct cfg *cfg = arg;
	struct hmc_comm *comm;
	struct hmc_buf *buf;
	uint64_t tag = 0;
	int rc, bad = 0;

	itest_prefix("mismatch r%d: ", m->rank);
	/* rank 0 starts with 1 channel, rank 1 has cfg->chs */
	if (setup(m, cfg, m->rank ? cfg->chs : 1, 4 * MIB, &buf, &comm))
		return 1;
	if (mesh_exchange(m, (uint16_t)hmc_comm_listen_port(comm)))
		goto out;
	if (m->rank == 0) {
		rc = hmc_comm_connect(comm, 1, cfg->ip, m->port[1],
				      HMC_TRANSPORT_VERBS);
		tap(rc == -EINVAL && !hmc_comm_is_connected(comm, 1),
		    "1 channel against %u: connect says %s, not connected",
		    cfg->chs, hmc_strerror(rc));
		hmc_comm_destroy(comm);
		hmc_buf_destroy(buf);
		if (setup(m, cfg, cfg->chs, 4 * MIB, &buf, &comm))
			return 1;
		rc = hmc_comm_connect(comm, 1, cfg->ip, m->port[1],
				      HMC_TRANSPORT_VERBS);
		bad += expect(rc, 0, "connect with the same channel count");
		data_fill(hmc_buf_ptr(buf), 0, MIB + 7, 0x3a7c4);
		if (!rc)
			rc = hmc_comm_put_signal(comm, 1, 0, 5, MIB + 7, TAG_DONE);
		bad += expect(rc, 0, "put_signal");
		if (!rc)
			rc = hmc_comm_recv_tag(comm, 1, &tag, OP_TIMEOUT_MS);
		bad += expect(rc, 0, "answer");
	} else {
		/* only the second attempt gets as far as a connected peer */
		rc = wait_connected(comm, 0, true, OP_TIMEOUT_MS) ? 0 : -ENOTCONN;
		if (!rc)
			rc = hmc_comm_recv_tag(comm, 0, &tag, OP_TIMEOUT_MS);
		bad += expect(rc, 0, "tag from the second attempt");
		bad += !data_check(hmc_buf_ptr(buf), 5, MIB + 7, 0x3a7c4, 0,
				   "put_signal data");
		if (!rc)
			rc = hmc_comm_send_tag(comm, 0, TAG_DONE);
	}
	tap(!bad && tag == TAG_DONE, "%u channels on both sides: connected, data and tag through",
	    cfg->chs);
out:
	hmc_comm_destroy(comm);
	hmc_buf_destroy(buf);
	return bad || itest_failures();
}

/* ------------------------------------------------------------- devices */

static int devices_rank(struct mesh *m, void *arg)
{
	static const struct { const char *fmt; int want; } bad[] = {
		{ "nosuchdev0", -ENODEV },
		{ "%s:9", -ENODEV },
		{ "%s:x", -EINVAL },
		{ "%s:", -EINVAL },
	};
	const struct cfg *cfg = arg;
	const char *dev = getenv("HMC_IB_DEV");
	char val[128];
	struct hmc_comm *comm;
	struct hmc_buf *buf;
	uint64_t tag = 0;
	unsigned int i;
	int rc, bad_n = 0;

	itest_prefix("devices r%d: ", m->rank);
	if (!dev) {
		tap(false, "HMC_IB_DEV names the device to test with");
		return 1;
	}
	dev = strdup(dev);
	if (setup(m, cfg, 1, MIB, &buf, &comm))
		return 1;
	if (mesh_exchange(m, (uint16_t)hmc_comm_listen_port(comm)))
		goto out;
	if (m->rank == 1) {	/* only the last attempt connects */
		rc = wait_connected(comm, 0, true, OP_TIMEOUT_MS) ? 0 : -ENOTCONN;
		if (!rc)
			rc = hmc_comm_recv_tag(comm, 0, &tag, OP_TIMEOUT_MS);
		bad_n += expect(rc, 0, "tag over the connection that worked");
		bad_n += !data_check(hmc_buf_ptr(buf), 0, 4099, 0xde5, 0,
				     "put_signal data");
		tap(!bad_n && tag == TAG_DONE, "the connection through %s:1 works",
		    dev);
		/* rank 0 stays until then: we must see it connected first */
		bad_n += expect(hmc_comm_send_tag(comm, 0, TAG_DONE), 0,
				"goodbye tag");
		goto out;
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(val, sizeof(val), bad[i].fmt, dev);
		setenv("HMC_IB_DEV", val, 1);
		rc = hmc_comm_connect(comm, 1, cfg->ip, m->port[1],
				      HMC_TRANSPORT_VERBS);
		tap(rc == bad[i].want && !hmc_comm_is_connected(comm, 1),
		    "HMC_IB_DEV=%s: connect says %s", val, hmc_strerror(rc));
	}
	snprintf(val, sizeof(val), "%s:1", dev);
	setenv("HMC_IB_DEV", val, 1);
	rc = hmc_comm_connect(comm, 1, cfg->ip, m->port[1], HMC_TRANSPORT_VERBS);
	data_fill(hmc_buf_ptr(buf), 0, 4099, 0xde5);
	if (!rc)
		rc = hmc_comm_put_signal(comm, 1, 0, 0, 4099, TAG_DONE);
	if (!rc)
		rc = hmc_comm_recv_tag(comm, 1, &tag, OP_TIMEOUT_MS);
	tap(rc == 0 && tag == TAG_DONE,
	    "HMC_IB_DEV=%s: connect, put_signal and rank 1's goodbye: %s", val,
	    hmc_strerror(rc));
out:
	free((void *)dev);
	hmc_comm_destroy(comm);
	hmc_buf_destroy(buf);
	return bad_n || itest_failures();
}

/* -------------------------------------------------------------- vanish */

/*
 * A child that keeps this process's sockets (and so its control
 * connections) open after it dies, and nothing else: it execs sleep with
 * only the sockets left, so no mapping or descriptor of the RDMA device
 * survives in it. Returns its pid, or -1.
 */
static pid_t hold_sockets(void)
{
	struct stat st;
	pid_t pid = fork();
	int fd, null;

	if (pid)
		return pid;
	null = open("/dev/null", O_RDWR);
	if (null < 0)
		_exit(127);
	for (fd = 0; fd < 3; fd++)
		dup2(null, fd);
	for (fd = 3; fd < 4096; fd++) {
		if (fstat(fd, &st))
			continue;
		if (S_ISSOCK(st.st_mode))
			fcntl(fd, F_SETFD, 0);
		else
			close(fd);
	}
	execl("/bin/sleep", "sleep", "60", (char *)NULL);
	_exit(127);
}

struct killer {
	struct mesh *m;
	int rc;
	int64_t dead_ms;	/* atomic: when rank 1 was dead and reaped */
};

static void *kill_rank1(void *arg)
{
	struct killer *k = arg;

	k->rc = mesh_kill(k->m, 1);
	__atomic_store_n(&k->dead_ms, itest_now_ms(), __ATOMIC_SEQ_CST);
	return NULL;
}

static int vanish_survivor(struct mesh *m, struct hmc_comm *comm, uint8_t *p)
{
	struct killer k = { .m = m, .dead_ms = -1 };
	hmc_req_t win[VANISH_WINDOW] = { 0 }, left[VANISH_WINDOW];
	int st[VANISH_WINDOW], rc, err = 0, bad = 0, done = 0, nleft = 0, n;
	int64_t t_err, dead, until = itest_now_ms() + VANISH_STREAM_MS;
	bool killing = false;
	pthread_t tid;
	pid_t sleeper;
	uint64_t tag, i;

	rc = hmc_comm_recv_tag(comm, 1, &tag, OP_TIMEOUT_MS);
	if (rc || (tag & ~0xffffffffULL) != TAG_SLEEPER) {
		diag("sleeper pid from rank 1: %s", hmc_strerror(rc));
		return 1;
	}
	sleeper = (pid_t)(uint32_t)tag;
	hmc_set_log(capture, HMC_LOG_INFO, NULL);

	/*
	 * Puts and gets stream to rank 1, VANISH_WINDOW in flight, while a
	 * thread has it killed, until one of them fails.
	 */
	for (i = 0; !err && itest_now_ms() < until; i++) {
		hmc_req_t *r = &win[i % VANISH_WINDOW];
		size_t off = (size_t)(i % 16) * MIB;

		if (*r) {
			err = hmc_comm_wait(comm, *r, OP_TIMEOUT_MS);
			*r = 0;
			if (err)
				break;
			done++;
		}
		if (i == VANISH_WINDOW) {
			killing = !pthread_create(&tid, NULL, kill_rank1, &k);
			if (!killing)
				break;
		}
		err = (i & 1) ? hmc_comm_get_nb(comm, 1, 28 * MIB, off, MIB, r) :
				hmc_comm_put_nb(comm, 1, off, off, MIB, r);
	}
	t_err = itest_now_ms();
	/* What was still in flight ends too: none hangs. */
	for (n = 0; n < VANISH_WINDOW; n++)
		if (win[n])
			left[nleft++] = win[n];
	hmc_comm_wait_all(comm, left, (size_t)nleft, OP_TIMEOUT_MS, st);
	for (n = 0; n < nleft; n++)
		if (st[n] == -EINPROGRESS) {
			diag("a request still pending %d ms after the failure",
			     OP_TIMEOUT_MS);
			bad++;
		}
	if (killing)
		pthread_join(tid, NULL);
	dead = __atomic_load_n(&k.dead_ms, __ATOMIC_SEQ_CST);
	tap(killing && !k.rc && err && err != -ETIMEDOUT && !bad &&
	    t_err - dead <= VANISH_LIMIT_MS,
	    "transfers streaming to rank 1 (%d completed) fail %lld ms after its death (limit %d ms): %s",
	    done, (long long)(t_err - dead), VANISH_LIMIT_MS, hmc_strerror(err));
	tap(seen.retry_exceeded && kill(sleeper, 0) == 0,
	    "it was the queue pair that noticed (retry exceeded), while the control connection stayed up");
	hmc_set_log(NULL, HMC_LOG_ERROR, NULL);
	tap(wait_connected(comm, 1, false, 5000), "rank 1 is marked down");
	kill(sleeper, SIGKILL);

	/* Life goes on with rank 2. */
	data_fill(p, 0, 2 * MIB, 0x5a11);
	rc = hmc_comm_put(comm, 2, 3, 11, 2 * MIB - 3);
	if (!rc)
		rc = hmc_comm_flush(comm, 2);
	if (!rc)
		rc = hmc_comm_send_tag(comm, 2, TAG_DONE);
	if (!rc)
		rc = hmc_comm_recv_tag(comm, 2, &tag, OP_TIMEOUT_MS);
	if (!rc)
		rc = hmc_comm_get(comm, 2, 4 * MIB, 11, 2 * MIB - 3);
	bad += expect(rc, 0, "put, flush, tags and get with rank 2");
	bad += !data_check(p, 4 * MIB, 2 * MIB - 3, 0x5a11, 3,
			   "get of what we put at rank 2");
	tap(!bad, "rank 0 goes on with rank 2: put, get, tags, every byte checked");
	return bad;
}

static int vanish_rank(struct mesh *m, void *arg)
{
	const struct cfg *cfg = arg;
	struct hmc_comm *comm;
	struct hmc_buf *buf;
	uint64_t tag;
	pid_t sleeper;
	int bad = 0;

	itest_prefix("vanish chs=%u r%d: ", cfg->chs, m->rank);
	if (setup(m, cfg, cfg->chs, 32 * MIB, &buf, &comm))
		return 1;
	if (connect_all(m, comm, cfg)) {
		bad = 1;
		goto out;
	}
	switch (m->rank) {
	case 0:
		bad = vanish_survivor(m, comm, hmc_buf_ptr(buf));
		break;
	case 1:
		sleeper = hold_sockets();
		if (sleeper < 0 ||
		    hmc_comm_send_tag(comm, 0, TAG_SLEEPER | (uint32_t)sleeper)) {
			bad = 1;
			break;
		}
		hmc_comm_recv_tag(comm, 0, &tag, 60000);	/* killed here */
		bad = 1;
		break;
	default:
		bad += expect(hmc_comm_recv_tag(comm, 0, &tag, 60000), 0,
			      "tag from rank 0");
		bad += !data_check(hmc_buf_ptr(buf), 11, 2 * MIB - 3, 0x5a11,
				   3, "rank 0's put");
		bad += expect(hmc_comm_send_tag(comm, 0, TAG_DONE), 0, "answer");
		/* rank 0 reads our buffer until it leaves */
		wait_connected(comm, 0, false, 60000);
		break;
	}
out:
	hmc_comm_destroy(comm);
	hmc_buf_destroy(buf);
	return bad || itest_failures();
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "chs", required_argument, NULL, 'c' },
		{ "ip", required_argument, NULL, 'i' },
		{ 0 }
	};
	struct cfg cfg = { .ip = "127.0.0.1", .chs = 1 };
	const char *name;
	int opt, bad;

	while ((opt = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			cfg.chs = (uint32_t)atoi(optarg);
			break;
		case 'i':
			cfg.ip = optarg;
			break;
		default:
			return 2;
		}
	}
	if (optind + 1 != argc || !cfg.chs || cfg.chs > HMC_VERBS_MAX_CHANNELS) {
		fprintf(stderr, "usage: test_verbs edges|staged|gpumr|mismatch|devices|vanish [--chs N] [--ip IP]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	/* mesh_connect() dials with this */
	setenv("HMC_TEST_TRANSPORT", "verbs", 1);
	name = argv[optind];
	if (!strcmp(name, "edges"))
		bad = mesh_run("edges", 2, edges_rank, &cfg, 120);
	else if (!strcmp(name, "staged"))
		bad = mesh_run("staged", 2, staged_rank, &cfg, 120);
	else if (!strcmp(name, "gpumr"))
		bad = mesh_run("gpumr", 2, gpumr_rank, &cfg, 120);
	else if (!strcmp(name, "mismatch"))
		bad = mesh_run("mismatch", 2, mismatch_rank, &cfg, 120);
	else if (!strcmp(name, "devices"))
		bad = mesh_run("devices", 2, devices_rank, &cfg, 120);
	else if (!strcmp(name, "vanish"))
		bad = mesh_run("vanish", 3, vanish_rank, &cfg, 120);
	else
		return 2;
	return bad ? 1 : 0;
}
