// SPDX-License-Identifier: MIT
/*
 * msg_bench: libhmc's two-sided messages against its own puts, and the
 * same measurements as mpi_bench (osu_bw, osu_latency) for Open MPI.
 * Two processes on 127.0.0.1 (a forked child is rank 1); or, with -r, one
 * rank of two on different hosts: rank 1 listens on ADDR:PORT, rank 0
 * dials it there (start rank 1 first).
 *
 *   msg_bench -t msg_bw|put_bw|msg_lat -s BYTES [-n ITERS] [-w WARMUP]
 *             [-W WINDOW] [-b BUF_BYTES] [-T auto|ucx|shm|tcp]
 *             [-r 0|1 -a ADDR -p PORT]
 *
 *   msg_bw   rank 0 isends WINDOW messages from heap memory, rank 1
 *            irecvs them into heap memory, then answers with a 4-byte
 *            message (osu_bw); both buffers are BUF_BYTES (default 4 MiB),
 *            all of it the message region;
 *   put_bw   rank 0 puts WINDOW ranges of its ConnBuffer (SIZE * WINDOW
 *            bytes, so "large enough") into rank 1's and flushes; rank 1
 *            answers with a tag after each window;
 *   msg_lat  ping-pong of blocking send/recv (osu_latency): one-way us.
 *
 * Rank 0 prints one line: "<test> <size> <MB/s or us>" (MB/s = 10^6 B/s).
 * The transport is AUTO's pick unless -T names one.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hmc/hmc.h>

#define TIMEOUT_MS	30000

struct cfg {
	const char *test;
	const char *addr;	/* rank 1's */
	uint16_t port;		/* rank 1's; 0: any (forked) */
	size_t size, buf;
	long iters, warmup;
	int window;
	enum hmc_transport transport;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define CHECK(expr)							\
	do {								\
		int rc_ = (expr);					\
		if (rc_) {						\
			fprintf(stderr, "msg_bench: %s: %s\n", #expr,	\
				hmc_strerror(rc_));			\
			exit(1);					\
		}							\
	} while (0)

static double msg_bw(struct hmc_comm *c, int me, const struct cfg *cfg,
		     uint8_t *data)
{
	hmc_req_t *reqs = calloc((size_t)cfg->window, sizeof(*reqs));
	uint32_t ack = 0;
	double t0 = 0;
	long i;
	int w;

	for (i = 0; i < cfg->iters + cfg->warmup; i++) {
		if (i == cfg->warmup)
			t0 = now_s();
		for (w = 0; w < cfg->window; w++) {
			if (me == 0)
				CHECK(hmc_comm_isend(c, 1, 1, data, cfg->size,
						     HMC_MEM_CPU, &reqs[w]));
			else
				CHECK(hmc_comm_irecv(c, 0, 1, data, cfg->size,
						     HMC_MEM_CPU, NULL, &reqs[w]));
		}
		CHECK(hmc_comm_wait_all(c, reqs, (size_t)cfg->window,
					TIMEOUT_MS, NULL));
		if (me == 0)
			CHECK(hmc_comm_recv(c, 1, 2, &ack, sizeof(ack),
					    HMC_MEM_CPU, NULL, TIMEOUT_MS));
		else
			CHECK(hmc_comm_send(c, 0, 2, &ack, sizeof(ack),
					    HMC_MEM_CPU, TIMEOUT_MS));
	}
	free(reqs);
	return (double)cfg->size * (double)cfg->window * (double)cfg->iters /
	       (now_s() - t0) / 1e6;
}

static double put_bw(struct hmc_comm *c, int me, const struct cfg *cfg)
{
	hmc_req_t *reqs = calloc((size_t)cfg->window, sizeof(*reqs));
	uint64_t tag;
	double t0 = 0;
	long i;
	int w;

	for (i = 0; i < cfg->iters + cfg->warmup; i++) {
		if (i == cfg->warmup)
			t0 = now_s();
		if (me == 1) {
			CHECK(hmc_comm_recv_tag(c, 0, &tag, TIMEOUT_MS));
			CHECK(hmc_comm_send_tag(c, 0, tag));
			continue;
		}
		for (w = 0; w < cfg->window; w++)
			CHECK(hmc_comm_put_nb(c, 1, (size_t)w * cfg->size,
					      (size_t)w * cfg->size, cfg->size,
					      &reqs[w]));
		CHECK(hmc_comm_wait_all(c, reqs, (size_t)cfg->window,
					TIMEOUT_MS, NULL));
		CHECK(hmc_comm_flush(c, 1));
		CHECK(hmc_comm_send_tag(c, 1, (uint64_t)i));
		CHECK(hmc_comm_recv_tag(c, 1, &tag, TIMEOUT_MS));
	}
	free(reqs);
	return (double)cfg->size * (double)cfg->window * (double)cfg->iters /
	       (now_s() - t0) / 1e6;
}

static double msg_lat(struct hmc_comm *c, int me, const struct cfg *cfg,
		      uint8_t *data)
{
	double t0 = 0;
	long i;

	for (i = 0; i < cfg->iters + cfg->warmup; i++) {
		if (i == cfg->warmup)
			t0 = now_s();
		if (me == 0) {
			CHECK(hmc_comm_send(c, 1, 3, data, cfg->size,
					    HMC_MEM_CPU, TIMEOUT_MS));
			CHECK(hmc_comm_recv(c, 1, 3, data, cfg->size,
					    HMC_MEM_CPU, NULL, TIMEOUT_MS));
		} else {
			CHECK(hmc_comm_recv(c, 0, 3, data, cfg->size,
					    HMC_MEM_CPU, NULL, TIMEOUT_MS));
			CHECK(hmc_comm_send(c, 0, 3, data, cfg->size,
					    HMC_MEM_CPU, TIMEOUT_MS));
		}
	}
	return (now_s() - t0) * 1e6 / 2.0 / (double)cfg->iters;
}

static int run_rank(int me, int sock, const struct cfg *cfg)
{
	bool put = !strcmp(cfg->test, "put_bw");
	size_t bufsz = put ? cfg->size * (size_t)cfg->window : cfg->buf;
	HMC_OPTS(hmc_comm_opts, o, .rank = (uint32_t)me,
		 .msg_region = put ? 0 : bufsz);
	struct hmc_comm *c;
	struct hmc_buf *buf;
	uint8_t *data = NULL;
	uint16_t port;
	double v;

	CHECK(hmc_buf_create(HMC_MEM_CPU, 0, bufsz, NULL, &buf));
	CHECK(hmc_comm_create(buf, &o, &c));
	if (me == 1) {
		CHECK(hmc_comm_listen(c, cfg->addr, cfg->port));
		port = (uint16_t)hmc_comm_listen_port(c);
		if (sock >= 0 && write(sock, &port, sizeof(port)) != sizeof(port))
			return 1;
		/* A barrier counts connected peers only: wait for the dialer. */
		for (v = now_s() + TIMEOUT_MS / 1e3; !hmc_comm_is_connected(c, 0);)
			if (now_s() > v) {
				fprintf(stderr, "msg_bench: rank 0 never connected\n");
				return 1;
			}
	} else {
		port = cfg->port;
		if (sock >= 0 && read(sock, &port, sizeof(port)) != sizeof(port))
			return 1;
		CHECK(hmc_comm_connect(c, 1, cfg->addr, port, cfg->transport));
	}
	if (!put) {
		data = malloc(cfg->size ? cfg->size : 1);
		memset(data, me + 1, cfg->size);
	}
	CHECK(hmc_comm_barrier(c, TIMEOUT_MS));
	if (put)
		v = put_bw(c, me, cfg);
	else if (!strcmp(cfg->test, "msg_bw"))
		v = msg_bw(c, me, cfg, data);
	else
		v = msg_lat(c, me, cfg, data);
	CHECK(hmc_comm_barrier(c, TIMEOUT_MS));
	if (me == 0)
		printf("%s %zu %.3f\n", cfg->test, cfg->size, v);
	hmc_comm_destroy(c);
	hmc_buf_destroy(buf);
	free(data);
	return 0;
}

int main(int argc, char **argv)
{
	struct cfg cfg = { .test = "msg_bw", .addr = "127.0.0.1",
			   .size = 1 << 20, .buf = 4 << 20,
			   .iters = 100, .warmup = 10, .window = 1,
			   .transport = HMC_TRANSPORT_AUTO };
	int opt, sv[2], st, rc, rank = -1;
	pid_t pid;

	while ((opt = getopt(argc, argv, "t:s:n:w:W:b:T:r:a:p:")) != -1) {
		switch (opt) {
		case 't': cfg.test = optarg; break;
		case 's': cfg.size = strtoull(optarg, NULL, 0); break;
		case 'n': cfg.iters = atol(optarg); break;
		case 'w': cfg.warmup = atol(optarg); break;
		case 'W': cfg.window = atoi(optarg); break;
		case 'b': cfg.buf = strtoull(optarg, NULL, 0); break;
		case 'T':
			cfg.transport = !strcmp(optarg, "auto") ? HMC_TRANSPORT_AUTO :
					!strcmp(optarg, "shm") ? HMC_TRANSPORT_SHM :
					!strcmp(optarg, "tcp") ? HMC_TRANSPORT_TCP :
					HMC_TRANSPORT_UCX;
			break;
		case 'r': rank = atoi(optarg); break;
		case 'a': cfg.addr = optarg; break;
		case 'p': cfg.port = (uint16_t)atoi(optarg); break;
		default:
			fprintf(stderr, "usage: see the top of %s\n", __FILE__);
			return 2;
		}
	}
	if (cfg.window < 1 || cfg.iters < 1 ||
	    (rank != -1 && ((rank != 0 && rank != 1) || !cfg.port)) ||
	    (strcmp(cfg.test, "msg_bw") && strcmp(cfg.test, "put_bw") &&
	     strcmp(cfg.test, "msg_lat"))) {
		fprintf(stderr, "msg_bench: bad arguments\n");
		return 2;
	}
	if (rank >= 0)
		return run_rank(rank, -1, &cfg);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		close(sv[0]);
		_exit(run_rank(1, sv[1], &cfg));
	}
	close(sv[1]);
	rc = run_rank(0, sv[0], &cfg);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		rc = 1;
	return rc;
}
