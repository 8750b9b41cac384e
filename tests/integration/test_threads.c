// SPDX-License-Identifier: MIT
/*
 * test_threads: several threads of each rank use one communicator at once.
 *
 * Each of T threads of every rank runs ITER iterations; in each it puts
 * random ranges into its own sub-slot at every peer (put_nb, and the last
 * one as put_signal or as put + flush + send_tag), gets random ranges of
 * every peer's source region into its own landing zone (get_nb), completes
 * them with wait, test and wait_all in random order and checks every byte
 * it got. Then the threads receive the peers' tags (recv_tag from several
 * threads on the same peer) and check, for each tag, the whole sub-slot it
 * names: the bytes put there and the untouched bytes around them. Every
 * tag must arrive exactly once.
 *
 *   test_threads [-n RANKS] [-T THREADS] [-i ITER] [-t SECONDS] [-N NAME]
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hmc/hmc.h>

#include "itest.h"

#define OP_TIMEOUT_MS	20000
#define MAX_THREADS	16
#define MAX_ITER	64
#define SRC_SIZE	(1024 * 1024 + 4321)	/* my source, the others' gets */
#define SUB_SIZE	(96 * 1024 + 123)	/* one (writer, thread, iteration) */
#define LAND_SIZE	(160 * 1024 + 77)	/* one (thread, peer) landing zone */
#define TAG_MAGIC	0xa5ULL
#define TAG(w, t, i)	(TAG_MAGIC << 56 | (uint64_t)(w) << 32 | \
			 (uint64_t)(t) << 16 | (uint64_t)(i))

enum how { HOW_WAIT, HOW_TEST, HOW_WAITALL };

struct cfg {
	int nranks, threads, iters, timeout_s;
	const char *name;
};

struct rank {
	const struct cfg *cfg;
	struct mesh *m;
	struct hmc_comm *comm;
	uint8_t *p;
	pthread_mutex_t lock;
	uint8_t seen[ITEST_MAX_RANKS][MAX_THREADS][MAX_ITER];
};

struct thread {
	struct rank *r;
	int t;
	pthread_t tid;
	size_t puts, gets, tags, bytes;
	int bad;
};

static uint64_t seed_src(int r) { return 0x51c0 + (uint64_t)r; }
static uint64_t seed_poison(int me) { return 0x9015 + (uint64_t)me; }

static size_t inbox(const struct cfg *cfg, int w, int t, int i)
{
	return SRC_SIZE +
	       (((size_t)w * (size_t)cfg->threads + (size_t)t) *
		(size_t)cfg->iters + (size_t)i) * SUB_SIZE;
}

static size_t landing(const struct cfg *cfg, int t, int q)
{
	return inbox(cfg, cfg->nranks, 0, 0) +
	       ((size_t)t * (size_t)cfg->nranks + (size_t)q) * LAND_SIZE;
}

static size_t buf_size(const struct cfg *cfg, int r)
{
	return rank_buf_size(landing(cfg, cfg->threads, 0), r);
}

/* Writer @w's puts into sub-slot (w, t, i) of rank @q. */
static void plan_puts(const struct cfg *cfg, int w, int q, int t, int i,
		      struct xfers *xs)
{
	size_t d0 = inbox(cfg, w, t, i);
	struct rng r;

	xs->n = 0;
	rng_seed(&r, 0x7a, (uint64_t)w << 8 | (uint64_t)q, (uint64_t)t,
		 (uint64_t)i);
	xfers_carve(xs, &r, false, true, q, d0, d0 + SUB_SIZE, 0, SRC_SIZE, 6);
}

static void plan_gets(const struct cfg *cfg, int me, int q, int t, int i,
		      struct xfers *xs)
{
	size_t d0 = landing(cfg, t, q);
	struct rng r;

	xs->n = 0;
	rng_seed(&r, 0x9e, (uint64_t)me << 8 | (uint64_t)q, (uint64_t)t,
		 (uint64_t)i);
	xfers_carve(xs, &r, false, false, q, d0, d0 + LAND_SIZE, 0, SRC_SIZE,
		    6);
}

/* Complete @n posted transfers in random ways and orders. */
static int complete(struct thread *th, struct xfer **v, size_t n,
		    struct rng *rng)
{
	struct hmc_comm *comm = th->r->comm;
	hmc_req_t reqs[32];
	int st[32], bad = 0, rc;
	int64_t deadline = itest_now_ms() + OP_TIMEOUT_MS;
	size_t i, k = 0, left;

	for (i = 0; i < n; i++)
		v[i]->how = (uint8_t)rng_range(rng, HOW_WAIT, HOW_WAITALL);
	for (i = 0; i < n && k < 32; i++)
		if (v[i]->how == HOW_WAITALL)
			reqs[k++] = v[i]->req;
	if (k) {
		rc = hmc_comm_wait_all(comm, reqs, k, OP_TIMEOUT_MS, st);
		for (i = 0; i < k; i++)
			if (st[i]) {
				diag("thread %d: wait_all status %zu: %s", th->t,
				     i, hmc_strerror(st[i]));
				bad++;
			}
		if (rc && !bad) {
			diag("thread %d: wait_all: %s", th->t, hmc_strerror(rc));
			bad++;
		}
	}
	do {
		left = 0;
		for (i = 0; i < n; i++) {
			if (v[i]->how != HOW_TEST || v[i]->done)
				continue;
			rc = hmc_comm_test(comm, v[i]->req);
			if (rc == -EINPROGRESS) {
				left++;
				continue;
			}
			v[i]->done = true;
			if (rc) {
				diag("thread %d: test: %s", th->t, hmc_strerror(rc));
				bad++;
			}
		}
	} while (left && itest_now_ms() < deadline);
	for (i = n; i-- > 0;) {
		if (v[i]->how == HOW_WAITALL || v[i]->done)
			continue;
		rc = hmc_comm_wait(comm, v[i]->req, OP_TIMEOUT_MS);
		if (rc) {
			diag("thread %d: wait: %s", th->t, hmc_strerror(rc));
			bad++;
		}
	}
	for (i = 0; i < n; i++) {
		rc = hmc_comm_wait(comm, v[i]->req, 0);
		if (rc != -ENOENT) {
			diag("thread %d: a completed request waited again: %s",
			     th->t, hmc_strerror(rc));
			bad++;
		}
	}
	return bad;
}

static int post(struct thread *th, struct xfer *x)
{
	int rc = x->put ?
		hmc_comm_put_nb(th->r->comm, (uint32_t)x->peer, x->loc, x->rem,
				x->len, &x->req) :
		hmc_comm_get_nb(th->r->comm, (uint32_t)x->peer, x->loc, x->rem,
				x->len, &x->req);

	x->done = false;
	if (rc)
		diag("thread %d: %s to rank %d: %s", th->t,
		     x->put ? "put_nb" : "get_nb", x->peer, hmc_strerror(rc));
	return rc;
}

/* Iteration @i to peer @q: data, then the tag that says it landed. */
static int iteration(struct thread *th, int q, int i, struct rng *rng)
{
	const struct cfg *cfg = th->r->cfg;
	struct hmc_comm *comm = th->r->comm;
	int me = th->r->m->rank, t = th->t, bad = 0, rc;
	struct xfers puts = { 0 }, gets = { 0 };
	struct xfer *v[16], *last = NULL;
	size_t n = 0, k, d0;
	char what[80];

	plan_puts(cfg, me, q, t, i, &puts);
	plan_gets(cfg, me, q, t, i, &gets);
	d0 = landing(cfg, t, q);
	xfers_poison(th->r->p, &gets, d0, d0 + LAND_SIZE, seed_src(q),
		     seed_poison(me) + (uint64_t)i);

	if (puts.n)
		last = &puts.v[puts.n - 1];
	for (k = 0; k + 1 < puts.n; k++)
		if (!post(th, &puts.v[k]))
			v[n++] = &puts.v[k];
		else
			bad++;
	for (k = 0; k < gets.n; k++)
		if (!post(th, &gets.v[k]))
			v[n++] = &gets.v[k];
		else
			bad++;
	bad += complete(th, v, n, rng);
	snprintf(what, sizeof(what), "thread %d iteration %d gets from rank %d",
		 t, i, q);
	bad += !xfers_check(th->r->p, &gets, d0, d0 + LAND_SIZE, seed_src(q),
			    seed_poison(me) + (uint64_t)i, what);

	/* Odd iterations end with put_signal, even ones with flush + tag. */
	if (i & 1) {
		rc = last ? hmc_comm_put_signal(comm, (uint32_t)q, last->loc,
						last->rem, last->len,
						TAG(me, t, i)) :
			    hmc_comm_put_signal(comm, (uint32_t)q, 0,
						inbox(cfg, me, t, i), 0,
						TAG(me, t, i));
	} else {
		rc = last ? hmc_comm_put(comm, (uint32_t)q, last->loc,
					 last->rem, last->len) : 0;
		if (!rc)
			rc = hmc_comm_flush(comm, (uint32_t)q);
		if (!rc)
			rc = hmc_comm_send_tag(comm, (uint32_t)q, TAG(me, t, i));
	}
	if (rc) {
		diag("thread %d: ending iteration %d to rank %d: %s", t, i, q,
		     hmc_strerror(rc));
		bad++;
	}
	th->puts += puts.n;
	th->gets += gets.n;
	for (k = 0; k < puts.n; k++)
		th->bytes += puts.v[k].len;
	for (k = 0; k < gets.n; k++)
		th->bytes += gets.v[k].len;
	xfers_free(&puts);
	xfers_free(&gets);
	return bad;
}

/* A tag from @q: the sub-slot it names must hold what its writer put. */
static int receive(struct thread *th, int q)
{
	struct rank *r = th->r;
	const struct cfg *cfg = r->cfg;
	int me = r->m->rank, t, i, rc, bad = 0;
	struct xfers in = { 0 };
	uint64_t tag = 0;
	bool dup;
	char what[80];

	rc = hmc_comm_recv_tag(r->comm, (uint32_t)q, &tag, OP_TIMEOUT_MS);
	t = (int)(tag >> 16 & 0xffff);
	i = (int)(tag & 0xffff);
	if (rc || tag >> 56 != TAG_MAGIC || (int)(tag >> 32 & 0xffffff) != q ||
	    t >= cfg->threads || i >= cfg->iters) {
		diag("thread %d: tag from rank %d: %s, 0x%llx", th->t, q,
		     hmc_strerror(rc), (unsigned long long)tag);
		return 1;
	}
	pthread_mutex_lock(&r->lock);
	dup = r->seen[q][t][i]++;
	pthread_mutex_unlock(&r->lock);
	if (dup) {
		diag("thread %d: tag (rank %d, thread %d, iteration %d) came twice",
		     th->t, q, t, i);
		bad++;
	}
	plan_puts(cfg, q, me, t, i, &in);
	snprintf(what, sizeof(what), "rank %d thread %d iteration %d puts", q,
		 t, i);
	bad += !xfers_check(r->p, &in, inbox(cfg, q, t, i),
			    inbox(cfg, q, t, i) + SUB_SIZE, seed_src(q),
			    seed_poison(me) ^ tag, what);
	th->tags++;
	xfers_free(&in);
	return bad;
}

static void *thread_main(void *arg)
{
	struct thread *th = arg;
	const struct cfg *cfg = th->r->cfg;
	int me = th->r->m->rank, n = cfg->nranks, i, j, q;
	struct rng rng;

	rng_seed(&rng, 0x7d, (uint64_t)me, (uint64_t)th->t, 0);
	for (i = 0; i < cfg->iters; i++)
		for (j = 0; j < n - 1; j++) {	/* peers in a rotating order */
			q = (me + 1 + (j + th->t + i) % (n - 1)) % n;
			th->bad += iteration(th, q, i, &rng);
		}
	/* Each thread takes its share of every peer's tags. */
	for (j = 1; j < n; j++)
		for (i = 0; i < cfg->iters; i++)
			th->bad += receive(th, (me + j) % n);
	return NULL;
}

static int rank_main(struct mesh *m, void *arg)
{
	const struct cfg *cfg = arg;
	HMC_OPTS(hmc_comm_opts, opts, .rank = (uint32_t)m->rank,
		 .connect_timeout_ms = 15000, .op_timeout_ms = OP_TIMEOUT_MS);
	const char *ips[ITEST_MAX_RANKS];
	int all[ITEST_MAX_RANKS];
	struct thread th[MAX_THREADS] = { 0 };
	struct rank r = { .cfg = cfg, .m = m };
	struct hmc_buf *buf;
	int q, t, i, started, bad = 0, missing = 0, rc;

	itest_prefix("%s r%d: ", cfg->name, m->rank);
	for (q = 0; q < m->nranks; q++)
		ips[q] = "127.0.0.1";
	if (comm_setup(m->rank, buf_size(cfg, m->rank), "127.0.0.1", &opts,
		       &buf, &r.comm))
		return 1;
	r.p = hmc_buf_ptr(buf);
	pthread_mutex_init(&r.lock, NULL);
	data_fill(r.p, 0, SRC_SIZE, seed_src(m->rank));
	for (q = 0; q < m->nranks; q++) {
		for (t = 0; t < cfg->threads && q != m->rank; t++) {
			for (i = 0; i < cfg->iters; i++) {
				struct xfers in = { 0 };
				size_t d0 = inbox(cfg, q, t, i);

				plan_puts(cfg, q, m->rank, t, i, &in);
				xfers_poison(r.p, &in, d0, d0 + SUB_SIZE,
					     seed_src(q),
					     seed_poison(m->rank) ^ TAG(q, t, i));
				xfers_free(&in);
			}
		}
	}
	if (mesh_exchange(m, (uint16_t)hmc_comm_listen_port(r.comm)) ||
	    mesh_connect(m, r.comm, ips, 15000))
		goto out;
	rc = hmc_comm_barrier(r.comm, OP_TIMEOUT_MS);
	if (!tap(rc == 0, "barrier before the threads start: %s",
		 hmc_strerror(rc)))
		goto out;

	for (started = 0; started < cfg->threads; started++) {
		th[started].r = &r;
		th[started].t = started;
		if (pthread_create(&th[started].tid, NULL, thread_main,
				   &th[started])) {
			tap(false, "pthread_create");
			break;
		}
	}
	for (t = 0; t < started; t++) {
		pthread_join(th[t].tid, NULL);
		tap(!th[t].bad, "thread %d: %d iterations x %d peers: %zu puts, %zu gets (%zu bytes) and %zu tags, every byte checked",
		    t, cfg->iters, m->nranks - 1, th[t].puts, th[t].gets,
		    th[t].bytes, th[t].tags);
		bad += th[t].bad;
	}
	for (q = 0; q < m->nranks; q++)
		for (t = 0; t < cfg->threads && q != m->rank; t++)
			for (i = 0; i < cfg->iters; i++)
				missing += r.seen[q][t][i] != 1;
	tap(!missing, "every tag of every peer's thread arrived exactly once (%d not)",
	    missing);
	tap(data_check(r.p, 0, SRC_SIZE, seed_src(m->rank), 0, "source region"),
	    "my source region, read only by the others, is intact");
	for (q = 0; q < m->nranks; q++)
		all[q] = q;
	mesh_goodbye(r.comm, m->rank, all, m->nranks);
out:
	hmc_comm_destroy(r.comm);
	hmc_buf_destroy(buf);
	return bad || itest_failures();
}

int main(int argc, char **argv)
{
	struct cfg cfg = { .nranks = 3, .threads = 4, .iters = 8,
			   .timeout_s = 90, .name = "threads" };
	int opt;

	while ((opt = getopt(argc, argv, "n:T:i:t:N:")) != -1) {
		switch (opt) {
		case 'n': cfg.nranks = atoi(optarg); break;
		case 'T': cfg.threads = atoi(optarg); break;
		case 'i': cfg.iters = atoi(optarg); break;
		case 't': cfg.timeout_s = atoi(optarg); break;
		case 'N': cfg.name = optarg; break;
		default:
			fprintf(stderr, "usage: see the comment at the top of %s\n",
				__FILE__);
			return 2;
		}
	}
	if (cfg.nranks < 2 || cfg.nranks > ITEST_MAX_RANKS ||
	    cfg.threads < 1 || cfg.threads > MAX_THREADS || cfg.iters < 1 ||
	    cfg.iters > MAX_ITER) {
		fprintf(stderr, "test_threads: bad arguments\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	return mesh_run(cfg.name, cfg.nranks, rank_main, &cfg, cfg.timeout_s) ?
	       1 : 0;
}
