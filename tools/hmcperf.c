// SPDX-License-Identifier: MIT
/*
 * hmcperf: libhmc put/get/put_signal bandwidth and latency, like perftest
 * and ucx_perftest.
 *
 *   hmcperf -l [-a ip] [-p port] [options]    server, rank 0
 *   hmcperf -c ip [-p port] [options]         client, rank 1
 *   hmcperf --loopback [options]              both: a server child on 127.0.0.1
 *
 * The client drives and the server follows, so the server needs only the
 * options that size its buffer (-s/-b/-e, -O, --validate). Results go to
 * stdout (text, or one JSON object per line with -j); errors to stderr, and
 * any error is a non-zero exit.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hmcperf.h"

#define DEFAULT_PORT		18515
#define DEFAULT_WINDOW		32	/* ucx_perftest's for ucp_put_bw */
#define DEFAULT_TIMEOUT_S	60
#define AUTO_BYTES		(64ULL << 20)	/* default: bytes per test */
#define AUTO_ITERS_MAX		1000
#define AUTO_ITERS_MIN		20
#define MAX_SIZES		64
#define RANK_SERVER		0
#define RANK_CLIENT		1

static const size_t default_sizes[] = {
	8, 64, 512, 4096, 65536, 1 << 20, 4 << 20,
};

struct opts {
	enum { MODE_NONE, MODE_SERVER, MODE_CLIENT, MODE_LOOPBACK } mode;
	const char *addr;
	uint16_t port;
	bool tests[PERF_TEST_MAX];
	size_t sizes[MAX_SIZES];
	unsigned int nsizes;
	uint64_t iters, warmup;		/* 0: automatic */
	uint32_t window;
	enum hmc_transport transport;
	uint32_t num_chs;		/* verbs: queue pairs per peer */
	const char *secret;
	bool json, validate, progress_thread, quiet;
	int timeout_ms;
};

static void usage(FILE *f)
{
	fprintf(f,
"Usage: hmcperf -l [-a ADDR] [-p PORT] [OPTIONS]   server (rank 0)\n"
"       hmcperf -c ADDR [-p PORT] [OPTIONS]        client (rank 1)\n"
"       hmcperf --loopback [OPTIONS]               both, on 127.0.0.1\n"
"\n"
"  -t LIST        tests: put_bw,get_bw,put_signal_bw,put_lat,get_lat,\n"
"                 put_signal_lat,tag_lat (default: all but tag_lat)\n"
"  -s LIST        message sizes, K/M/G suffixes (default 8,64,512,4K,64K,1M,4M)\n"
"  -b MIN -e MAX  sizes: powers of two from MIN to MAX\n"
"  -n ITERS       timed iterations (default: %llu MiB per test, %d..%d)\n"
"  -w ITERS       warm-up iterations (default: a tenth of -n)\n"
"  -O COUNT       outstanding operations of *_bw tests (default %d)\n"
"  -x TRANSPORT   auto (default: shm on one host, else verbs where an RDMA\n"
"                 port reaches the peer, else tcp), ucx, verbs (device:\n"
"                 HMC_IB_DEV=dev[:port]), shm (same host) or tcp\n"
"  --chs N        verbs: queue pairs, tcp: streams per peer; large transfers\n"
"                 striped (1..%d)\n"
"  -S SECRET      shared secret (default: HMC_SECRET; --loopback: random)\n"
"  -v, --validate non-uniform payloads, every byte checked by the receiver\n"
"  -j, --json     one JSON object per result line\n"
"  -T SECONDS     time limit of each test and wait (default %d)\n"
"  -P             let libhmc's progress thread run (default: we poll)\n"
"  -h, --help     this text\n"
"\n"
"MB/s is 10^6 bytes/s (ucx_perftest's \"MB/s\" is 2^20 bytes/s). Latency is\n"
"one-way (half the round trip) for put_lat, put_signal_lat and tag_lat, the\n"
"whole operation for get_lat, and the time per operation for *_bw.\n",
		(unsigned long long)(AUTO_BYTES >> 20), AUTO_ITERS_MIN,
		AUTO_ITERS_MAX, DEFAULT_WINDOW, HMC_VERBS_MAX_CHANNELS,
		DEFAULT_TIMEOUT_S);
}

/* ------------------------------------------------------------- parsing */

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	if (!s || *s == '-')
		return -EINVAL;
	v = strtoull(s, &end, 0);
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (errno || end == s || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int add_size(struct opts *o, uint64_t v)
{
	if (!v || v > PERF_MAX_SIZE) {
		fprintf(stderr, "hmcperf: size %llu out of range 1..%llu\n",
			(unsigned long long)v, PERF_MAX_SIZE);
		return -EINVAL;
	}
	if (o->nsizes == MAX_SIZES) {
		fprintf(stderr, "hmcperf: more than %d sizes\n", MAX_SIZES);
		return -E2BIG;
	}
	o->sizes[o->nsizes++] = (size_t)v;
	return 0;
}

static int parse_list(char *arg, struct opts *o, bool sizes)
{
	char *save = NULL, *tok;
	uint64_t v;
	int t;

	for (tok = strtok_r(arg, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (sizes) {
			if (parse_u64(tok, PERF_MAX_SIZE, &v) || add_size(o, v)) {
				fprintf(stderr, "hmcperf: bad size '%s'\n", tok);
				return -EINVAL;
			}
			continue;
		}
		t = perf_test_by_name(tok);
		if (t < 0) {
			fprintf(stderr, "hmcperf: unknown test '%s' (see -h)\n",
				tok);
			return -EINVAL;
		}
		o->tests[t] = true;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "loopback", no_argument, NULL, 'L' },
		{ "validate", no_argument, NULL, 'v' },
		{ "json", no_argument, NULL, 'j' },
		{ "chs", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v, smin = 0, smax = 0;
	bool any_test = false;
	int c, i;

	o->port = DEFAULT_PORT;
	o->window = DEFAULT_WINDOW;
	o->transport = HMC_TRANSPORT_AUTO;
	o->timeout_ms = DEFAULT_TIMEOUT_S * 1000;
	while ((c = getopt_long(argc, argv, "la:c:p:t:s:b:e:n:w:O:x:S:vjT:Ph",
				longopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			o->mode = MODE_SERVER;
			break;
		case 'a':
			o->addr = optarg;
			break;
		case 'c':
			o->mode = MODE_CLIENT;
			o->addr = optarg;
			break;
		case 'L':
			o->mode = MODE_LOOPBACK;
			break;
		case 'p':
			if (parse_u64(optarg, 65535, &v))
				goto bad;
			o->port = (uint16_t)v;
			break;
		case 't':
			if (parse_list(optarg, o, false))
				return -EINVAL;
			any_test = true;
			break;
		case 's':
			if (parse_list(optarg, o, true))
				return -EINVAL;
			break;
		case 'b':
			if (parse_u64(optarg, PERF_MAX_SIZE, &smin) || !smin)
				goto bad;
			break;
		case 'e':
			if (parse_u64(optarg, PERF_MAX_SIZE, &smax) || !smax)
				goto bad;
			break;
		case 'n':
			if (parse_u64(optarg, PERF_MAX_COUNT / 2, &o->iters) ||
			    !o->iters)
				goto bad;
			break;
		case 'w':
			if (parse_u64(optarg, PERF_MAX_COUNT / 2, &o->warmup))
				goto bad;
			o->warmup |= 1ULL << 63;	/* given, maybe 0 */
			break;
		case 'O':
			if (parse_u64(optarg, PERF_MAX_WINDOW, &v) || !v)
				goto bad;
			o->window = (uint32_t)v;
			break;
		case 'x':
			if (!strcmp(optarg, "ucx")) {
				o->transport = HMC_TRANSPORT_UCX;
			} else if (!strcmp(optarg, "verbs")) {
				o->transport = HMC_TRANSPORT_VERBS;
			} else if (!strcmp(optarg, "shm")) {
				o->transport = HMC_TRANSPORT_SHM;
			} else if (!strcmp(optarg, "tcp")) {
				o->transport = HMC_TRANSPORT_TCP;
			} else if (!strcmp(optarg, "auto")) {
				o->transport = HMC_TRANSPORT_AUTO;
			} else {
				fprintf(stderr, "hmcperf: unknown transport '%s'\n",
					optarg);
				return -EINVAL;
			}
			break;
		case 'C':
			if (parse_u64(optarg, HMC_VERBS_MAX_CHANNELS, &v) || !v) {
				fprintf(stderr, "hmcperf: --chs takes 1..%d\n",
					HMC_VERBS_MAX_CHANNELS);
				return -EINVAL;
			}
			o->num_chs = (uint32_t)v;
			break;
		case 'S':
			o->secret = optarg;
			break;
		case 'v':
			o->validate = true;
			break;
		case 'j':
			o->json = true;
			break;
		case 'T':
			if (parse_u64(optarg, INT_MAX / 1000, &v) || !v)
				goto bad;
			o->timeout_ms = (int)v * 1000;
			break;
		case 'P':
			o->progress_thread = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "hmcperf: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	if (o->mode == MODE_NONE) {
		fprintf(stderr, "hmcperf: say -l, -c ADDR or --loopback (see -h)\n");
		return -EINVAL;
	}
	if (!smin != !smax || smin > smax) {
		fprintf(stderr, "hmcperf: -b and -e go together, -b <= -e\n");
		return -EINVAL;
	}
	for (v = smin; smin && v <= smax; v <<= 1)
		if (add_size(o, v))
			return -EINVAL;
	if (!o->nsizes)
		for (i = 0; i < (int)(sizeof(default_sizes) /
				      sizeof(*default_sizes)); i++)
			add_size(o, default_sizes[i]);
	if (!any_test)
		for (i = 0; i < PERF_TEST_MAX; i++)
			o->tests[i] = i != PERF_TAG_LAT;
	return 0;
bad:
	fprintf(stderr, "hmcperf: bad value '%s' for -%c\n", optarg, c);
	return -EINVAL;
}

/* ------------------------------------------------------------- helpers */

static void params_for(const struct opts *o, enum perf_test t, size_t size,
		       struct perf_params *p)
{
	uint64_t iters = o->iters;

	if (!iters) {
		iters = AUTO_BYTES / size;
		if (iters > AUTO_ITERS_MAX)
			iters = AUTO_ITERS_MAX;
		if (iters < AUTO_ITERS_MIN)
			iters = AUTO_ITERS_MIN;
	}
	p->test = t;
	p->size = t == PERF_TAG_LAT ? sizeof(uint64_t) : size;
	p->iters = iters;
	p->warmup = o->warmup >> 63 ? o->warmup & ~(1ULL << 63) :
		    (iters + 9) / 10;
	p->window = o->window;
	p->validate = o->validate;
	/* RDMA and shm need no target: it waits on the control socket. */
	p->passive = o->transport == HMC_TRANSPORT_VERBS ||
		     o->transport == HMC_TRANSPORT_SHM;
	p->target_sleeps = o->transport == HMC_TRANSPORT_TCP;
}

/* Bytes each area of the buffer needs for every test and size asked for. */
static size_t area_needed(const struct opts *o)
{
	struct perf_params p;
	size_t need = 0, n;
	unsigned int i;
	int t;

	for (t = 0; t < PERF_TEST_MAX; t++) {
		if (!o->tests[t])
			continue;
		for (i = 0; i < o->nsizes; i++) {
			params_for(o, t, o->sizes[i], &p);
			n = p.size * perf_slots(&p);
			if (n > need)
				need = n;
		}
	}
	return need ? need : 4096;
}

static void fmt_size(char *b, size_t len, size_t v)
{
	if (v >= (1 << 20) && !(v % (1 << 20)))
		snprintf(b, len, "%zuM", v >> 20);
	else if (v >= 1024 && !(v % 1024))
		snprintf(b, len, "%zuK", v >> 10);
	else
		snprintf(b, len, "%zu", v);
}

static int fail(const char *what, int rc)
{
	fprintf(stderr, "hmcperf: %s: %s\n", what, hmc_strerror(rc));
	return rc;
}

struct session {
	struct opts *o;
	struct hmc_buf *buf;
	struct hmc_comm *comm;
	struct perf pf;
	char backing[24];	/* "ours" or "ours/server's", for each row */
	enum hmc_buf_backing server_backing;
};

static int session_open(struct session *s, uint32_t rank)
{
	size_t area = area_needed(s->o);
	HMC_OPTS(hmc_comm_opts, co, .rank = rank, .secret = s->o->secret,
		 .op_timeout_ms = s->o->timeout_ms, .num_chs = s->o->num_chs,
		 .flags = s->o->progress_thread ? 0 :
			  HMC_COMM_F_NO_PROGRESS_THREAD);
	int rc;

	if (area > SIZE_MAX / 2)
		return fail("buffer size", -EOVERFLOW);
	rc = hmc_buf_create(HMC_MEM_CPU, 0, 2 * area, NULL, &s->buf);
	if (rc)
		return fail("creating the buffer", rc);
	rc = hmc_comm_create(s->buf, &co, &s->comm);
	if (rc)
		return fail("creating the communicator", rc);
	s->pf.comm = s->comm;
	s->pf.base = hmc_buf_ptr(s->buf);
	s->pf.half = hmc_buf_size(s->buf) / 2;
	s->pf.timeout_ms = s->o->timeout_ms;
	s->pf.busy_poll = !s->o->progress_thread;
	s->pf.peer = rank == RANK_SERVER ? RANK_CLIENT : RANK_SERVER;
	return 0;
}

static void session_close(struct session *s)
{
	hmc_comm_destroy(s->comm);
	hmc_buf_destroy(s->buf);
}

/* -------------------------------------------------------------- server */

static int serve_test(struct session *s, uint64_t arg)
{
	struct perf *pf = &s->pf;
	struct perf_params p = { 0 };
	uint64_t prm;
	int rc;

	p.test = (enum perf_test)(arg >> 48);
	p.size = arg & ((1ULL << 48) - 1);
	rc = perf_expect(pf, TAG_CMD_PARAMS, &prm);
	if (rc)
		return rc;
	p.validate = prm >> 48 & 1;
	p.passive = prm >> 49 & 1;
	p.target_sleeps = prm >> 50 & 1;
	p.window = prm >> 32 & 0xffff;
	p.iters = prm & 0xffffffff;
	if (p.test >= PERF_TEST_MAX || !p.size || !p.window ||
	    p.window > PERF_MAX_WINDOW ||
	    p.size * perf_slots(&p) > pf->half ||
	    p.size * perf_slots(&p) > pf->peer_half) {
		fprintf(stderr, "hmcperf: server: test %s of %zu B (window %u) does not fit a %zu B area\n",
			perf_test_name(p.test), p.size, p.window, pf->half);
		perf_send(pf, TAG_ERR, ERANGE);
		return -ERANGE;
	}
	perf_prepare(pf, &p);
	rc = perf_send(pf, TAG_READY, hmc_buf_backing(s->buf));
	if (!rc)
		rc = perf_serve(pf, &p);
	if (rc)
		fprintf(stderr, "hmcperf: server: %s %zu B: %s\n",
			perf_test_name(p.test), p.size, hmc_strerror(rc));
	return rc;
}

static int run_server(struct opts *o, int port_fd)
{
	struct session s = { .o = o };
	struct perf *pf = &s.pf;
	uint64_t tag;
	int64_t peer_size;
	int rc, port;

	rc = session_open(&s, RANK_SERVER);
	if (rc)
		goto out;
	rc = hmc_comm_listen(s.comm, o->addr, o->port);
	if (rc) {
		fail("listen", rc);
		goto out;
	}
	port = hmc_comm_listen_port(s.comm);
	if (port_fd >= 0) {
		uint16_t p16 = (uint16_t)port;

		if (write(port_fd, &p16, sizeof(p16)) != sizeof(p16)) {
			rc = fail("telling the port", -errno);
			goto out;
		}
		close(port_fd);
	} else if (!o->quiet) {
		printf("hmcperf: rank 0 listening on %s:%d, %zu B buffer (%s)\n",
		       o->addr ? o->addr : "*", port, hmc_buf_size(s.buf),
		       hmc_buf_backing_name(hmc_buf_backing(s.buf)));
		fflush(stdout);
	}
	for (;;) {
		pf->deadline = perf_now_ns() + (int64_t)o->timeout_ms * 1000000;
		rc = hmc_comm_recv_tag(s.comm, RANK_CLIENT, &tag,
				       perf_left_ms(pf));
		if (rc) {
			fail("waiting for the client", rc);
			break;
		}
		switch (TAG_KIND(tag)) {
		case TAG_CMD_HELLO:
			peer_size = hmc_comm_peer_buf_size(s.comm, RANK_CLIENT);
			if (peer_size < 0) {
				rc = fail("client buffer", (int)peer_size);
				break;
			}
			pf->peer_half = (size_t)peer_size / 2;
			rc = perf_send(pf, TAG_READY, hmc_buf_backing(s.buf));
			break;
		case TAG_CMD_TEST:
			rc = serve_test(&s, TAG_ARG(tag));
			break;
		case TAG_CMD_END:
			rc = perf_send(pf, TAG_DONE, 0);
			goto out;
		default:
			fprintf(stderr, "hmcperf: protocol: command %u\n",
				TAG_KIND(tag));
			rc = -EPROTO;
			break;
		}
		if (rc)
			break;
	}
out:
	session_close(&s);
	return rc;
}

/* -------------------------------------------------------------- client */

static void print_header(struct session *s, const char *addr, uint16_t port,
			 enum hmc_buf_backing server_backing)
{
	const char *tls = getenv("UCX_TLS"), *ibdev = getenv("HMC_IB_DEV");
	struct opts *o = s->o;

	if (o->json)
		return;
	printf("hmcperf %s: %s, rank 1 -> rank 0 at %s:%u, auth %s\n",
	       hmc_version(), hmc_transport_name(o->transport), addr, port,
	       o->secret || getenv("HMC_SECRET") ? "hmac-sha256" : "none");
	printf("ConnBuffer backing: %s (client), %s (server); %zu B each\n",
	       hmc_buf_backing_name(hmc_buf_backing(s->buf)),
	       hmc_buf_backing_name(server_backing), hmc_buf_size(s->buf));
	if (o->transport == HMC_TRANSPORT_VERBS)
		printf("%u channel(s), HMC_IB_DEV=%s; ", o->num_chs ? o->num_chs : 1,
		       ibdev ? ibdev : "(first active port)");
	else if (o->transport == HMC_TRANSPORT_UCX)
		printf("UCX_TLS=%s; ", tls ? tls : "(UCX default)");
	else
		printf("a put copies into the peer's mapped buffer; ");
	printf("%s\n", o->validate ? "validate: every byte of every transfer is checked by its receiver" :
			     "no validation");
	printf("MB/s = 10^6 B/s; lat: one-way for put_lat, put_signal_lat, tag_lat; per op otherwise\n");
	printf("%-15s %6s %7s %6s %10s %9s %9s %9s  %-9s %s\n", "test", "size",
	       "iters", "window", "MB/s", "lat_med", "lat_p99", "lat_avg",
	       "transport", "backing");
}

static void print_result(struct session *s, const struct perf_params *p,
			 const struct perf_result *r)
{
	char sz[24];

	if (s->o->json) {
		printf("{\"test\":\"%s\",\"size\":%zu,\"iters\":%llu,\"warmup\":%llu,"
		       "\"window\":%u,\"bw_MBps\":%.2f,\"lat_us\":{\"median\":%.3f,"
		       "\"p99\":%.3f,\"avg\":%.3f},\"transport\":\"%s\","
		       "\"backing\":\"%s\",\"server_backing\":\"%s\","
		       "\"validated\":%s}\n",
		       perf_test_name(p->test), p->size,
		       (unsigned long long)r->iters,
		       (unsigned long long)p->warmup,
		       perf_test_is_lat(p->test) ? 1 : p->window, r->bw_MBps,
		       r->lat_med_us, r->lat_p99_us, r->lat_avg_us,
		       hmc_transport_name(s->o->transport),
		       hmc_buf_backing_name(hmc_buf_backing(s->buf)),
		       hmc_buf_backing_name(s->server_backing),
		       p->validate && p->test != PERF_TAG_LAT ? "true" : "false");
	} else {
		fmt_size(sz, sizeof(sz), p->size);
		printf("%-15s %6s %7llu %6u %10.2f %9.3f %9.3f %9.3f  %-9s %s\n",
		       perf_test_name(p->test), sz,
		       (unsigned long long)r->iters,
		       perf_test_is_lat(p->test) ? 1 : p->window, r->bw_MBps,
		       r->lat_med_us, r->lat_p99_us, r->lat_avg_us,
		       hmc_transport_name(s->o->transport), s->backing);
	}
	fflush(stdout);
}

static int client_test(struct session *s, const struct perf_params *p,
		       uint64_t *checked)
{
	struct perf *pf = &s->pf;
	struct perf_result r;
	size_t need = p->size * perf_slots(p);
	uint64_t count = p->warmup + p->iters;
	int rc;

	if (need > pf->half || need > pf->peer_half) {
		fprintf(stderr, "hmcperf: %s of %zu B needs %zu B per buffer half; ours has %zu, the server's %zu: give the server the same -s/-b/-e/-O/--validate\n",
			perf_test_name(p->test), p->size, need, pf->half,
			pf->peer_half);
		return -ERANGE;
	}
	if (count > PERF_MAX_COUNT)
		return -E2BIG;
	perf_prepare(pf, p);
	pf->deadline = perf_now_ns() + (int64_t)pf->timeout_ms * 1000000;
	rc = perf_send(pf, TAG_CMD_TEST, (uint64_t)p->test << 48 | p->size);
	if (!rc)
		rc = perf_send(pf, TAG_CMD_PARAMS,
			       (uint64_t)p->target_sleeps << 50 |
			       (uint64_t)p->passive << 49 |
			       (uint64_t)p->validate << 48 |
			       (uint64_t)p->window << 32 | count);
	if (!rc)
		rc = perf_expect(pf, TAG_READY, NULL);
	if (!rc)
		rc = perf_run_client(pf, p, &r);
	if (rc) {
		fprintf(stderr, "hmcperf: %s %zu B: %s\n", perf_test_name(p->test),
			p->size, hmc_strerror(rc));
		return rc;
	}
	*checked += r.checked;
	print_result(s, p, &r);
	return 0;
}

static int run_client(struct opts *o, const char *addr, uint16_t port)
{
	struct session s = { .o = o };
	struct perf *pf = &s.pf;
	struct perf_params p;
	uint64_t backing, checked = 0;
	int64_t peer_size;
	unsigned int i;
	int rc, t;

	rc = session_open(&s, RANK_CLIENT);
	if (rc)
		goto out;
	rc = hmc_comm_connect(s.comm, RANK_SERVER, addr, port, o->transport);
	if (rc) {
		fprintf(stderr, "hmcperf: connecting to %s:%u over %s: %s\n",
			addr, port, hmc_transport_name(o->transport),
			hmc_strerror(rc));
		goto out;
	}
	rc = hmc_comm_peer_transport(s.comm, RANK_SERVER);
	if (rc > 0)
		o->transport = rc;	/* what auto picked */
	peer_size = hmc_comm_peer_buf_size(s.comm, RANK_SERVER);
	if (peer_size < 0) {
		rc = fail("server buffer", (int)peer_size);
		goto out;
	}
	pf->peer_half = (size_t)peer_size / 2;
	pf->deadline = perf_now_ns() + (int64_t)o->timeout_ms * 1000000;
	rc = perf_send(pf, TAG_CMD_HELLO, 0);
	if (!rc)
		rc = perf_expect(pf, TAG_READY, &backing);
	if (rc) {
		fail("session start", rc);
		goto out;
	}
	s.server_backing = (enum hmc_buf_backing)backing;
	if (s.server_backing == hmc_buf_backing(s.buf))
		snprintf(s.backing, sizeof(s.backing), "%s",
			 hmc_buf_backing_name(s.server_backing));
	else
		snprintf(s.backing, sizeof(s.backing), "%s/%s",
			 hmc_buf_backing_name(hmc_buf_backing(s.buf)),
			 hmc_buf_backing_name(s.server_backing));
	print_header(&s, addr, port, s.server_backing);

	for (t = 0; t < PERF_TEST_MAX && !rc; t++) {
		if (!o->tests[t])
			continue;
		for (i = 0; i < o->nsizes && !rc; i++) {
			params_for(o, t, o->sizes[i], &p);
			rc = client_test(&s, &p, &checked);
			if (t == PERF_TAG_LAT)
				break;	/* one size: a tag */
		}
	}
	if (!rc) {
		pf->deadline = perf_now_ns() + (int64_t)o->timeout_ms * 1000000;
		rc = perf_send(pf, TAG_CMD_END, 0);
		if (!rc)
			rc = perf_expect(pf, TAG_DONE, NULL);
		if (rc)
			fail("session end", rc);
	}
	if (!rc && o->validate && !o->json)
		printf("verified: all %llu bytes received by both sides matched, byte for byte\n",
		       (unsigned long long)checked);
out:
	session_close(&s);
	return rc;
}

/* ------------------------------------------------------------ loopback */

static char loop_secret[65];

static int random_secret(struct opts *o)
{
	uint8_t r[32];
	int i;

	if (getrandom(r, sizeof(r), 0) != sizeof(r))
		return -errno;
	for (i = 0; i < 32; i++)
		snprintf(loop_secret + 2 * i, 3, "%02x", r[i]);
	o->secret = loop_secret;
	return 0;
}

static int read_port(int fd, uint16_t *port, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int rc;

	do {
		rc = poll(&pfd, 1, timeout_ms);
	} while (rc < 0 && errno == EINTR);
	if (rc == 0)
		return -ETIMEDOUT;
	if (rc < 0)
		return -errno;
	if (read(fd, port, sizeof(*port)) != sizeof(*port))
		return -EPIPE;	/* the server died before listening */
	return 0;
}

static int run_loopback(struct opts *o)
{
	int pipefd[2], status, rc;
	uint16_t port;
	pid_t pid;

	if (!o->secret && !getenv("HMC_SECRET") && random_secret(o))
		return fail("random secret", -errno);
	if (pipe(pipefd))
		return fail("pipe", -errno);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return fail("fork", -errno);
	if (pid == 0) {
		close(pipefd[0]);
		o->quiet = true;
		o->addr = "127.0.0.1";
		o->port = 0;
		_exit(run_server(o, pipefd[1]) ? 1 : 0);
	}
	close(pipefd[1]);
	rc = read_port(pipefd[0], &port, o->timeout_ms);
	close(pipefd[0]);
	if (rc)
		fail("waiting for the server to listen", rc);
	else
		rc = run_client(o, "127.0.0.1", port);
	if (rc)
		kill(pid, SIGTERM);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return fail("waitpid", -errno);
	if (!rc && (!WIFEXITED(status) || WEXITSTATUS(status))) {
		fprintf(stderr, "hmcperf: the server failed\n");
		rc = -EIO;
	}
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };
	int rc;

	if (parse_args(argc, argv, &o))
		return 2;
	perf_clock_init();
	switch (o.mode) {
	case MODE_SERVER:
		rc = run_server(&o, -1);
		break;
	case MODE_CLIENT:
		rc = run_client(&o, o.addr, o.port);
		break;
	default:
		rc = run_loopback(&o);
		break;
	}
	return rc ? 1 : 0;
}
