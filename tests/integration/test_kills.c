// SPDX-License-Identifier: MIT
/*
 * test_kills: a peer's death never ends the listener. With the defaults
 * (HMC_TRANSPORT_AUTO, no UCX_TLS: what a new user gets), a listener
 * serves a good client that moves verified data in rounds, while N
 * dialers, a few at a time, connect and stream blocking 4 KiB puts into
 * it and are SIGKILLed at random moments: while they create their
 * communicator, dial, shake hands or stream.
 *
 *  listener  rank 0: answers each round of the good client (put_signal of
 *            a fresh pattern into one of two areas) after checking every
 *            byte, then, once the client is done, waits until every
 *            killed dialer is gone from its peers;
 *  client    rank 1: rounds until the killing is over, each checked by the
 *            listener and read back with a get, every byte compared;
 *  dialers   ranks 100..: connect, then put 4 KiB after 4 KiB (each to its
 *            own place) until killed.
 *
 * The test fails if the listener dies or reports an error, if the client
 * sees one wrong byte or a failed call, or if a dead dialer stays a peer.
 *
 *   test_kills [-n DIALERS] [-c CONCURRENT] [-N NAME] [-t SECONDS] [-x ucx]
 *              [-C tcp]
 *
 * -x ucx runs it all over UCX instead, to see the test catch what AUTO
 * avoids (UCX's emulated RMA aborting the listener). -C tcp keeps the
 * defaults but sends control over TCP, as between hosts: AUTO then
 * settles on libhmc's tcp transport.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hmc/hmc.h>

#include "itest.h"

#define BUF_SIZE	(1 << 20)
#define AREA		(64 * 1024)	/* the client's two areas: [0, 2 AREA) */
#define DIALER_AREA	(256 * 1024)	/* dialers write 4 KiB pieces after it */
#define PUT_LEN		4096
#define KILL_MAX_MS	400		/* a dialer lives 0..KILL_MAX_MS */
#define RANK_LISTENER	0
#define RANK_CLIENT	1
#define RANK_DIALER0	100
#define TAG_DONE	(1ULL << 63)
#define OP_TIMEOUT_MS	10000

static const char *name = "kills";
static enum hmc_transport transport = HMC_TRANSPORT_AUTO;

static int setup(uint32_t rank, bool listen, struct hmc_buf **buf,
		 struct hmc_comm **comm)
{
	HMC_OPTS(hmc_comm_opts, o, .rank = rank,
		 .op_timeout_ms = OP_TIMEOUT_MS);
	int rc;

	rc = hmc_buf_create(HMC_MEM_CPU, 0, BUF_SIZE, NULL, buf);
	if (rc)
		return rc;
	rc = hmc_comm_create(*buf, &o, comm);
	if (!rc && listen)
		rc = hmc_comm_listen(*comm, "127.0.0.1", 0);
	if (rc) {
		if (*comm)
			hmc_comm_destroy(*comm);
		hmc_buf_destroy(*buf);
	}
	return rc;
}

/* ------------------------------------------------------------- listener */

/* Mappings of memfd ConnBuffers in this process (ours and our peers'). */
static int memfd_mappings(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "/memfd:hmc-connbuf") != NULL;
	fclose(f);
	return n;
}

/* Rank 0: 0 if it served every round right and saw every dialer go. */
static int listener(int port_fd)
{
	struct hmc_buf *buf = NULL;
	struct hmc_comm *comm = NULL;
	uint64_t tag, rounds = 0;
	uint16_t port;
	int64_t until;
	int rc, n, bad = 0;

	itest_prefix("%s listener: ", name);
	rc = setup(RANK_LISTENER, true, &buf, &comm);
	if (rc) {
		tap(false, "communicator: %s", hmc_strerror(rc));
		return 1;
	}
	port = (uint16_t)hmc_comm_listen_port(comm);
	if (write(port_fd, &port, sizeof(port)) != sizeof(port))
		return 1;
	close(port_fd);

	for (;;) {
		rc = hmc_comm_recv_tag(comm, RANK_CLIENT, &tag, 60000);
		if (rc) {
			tap(false, "round %llu from the client: %s",
			    (unsigned long long)rounds, hmc_strerror(rc));
			bad++;
			break;
		}
		if (tag & TAG_DONE)
			break;
		if (!data_check(hmc_buf_ptr(buf), (tag & 1) * AREA, AREA,
				0xc0ffee00 + tag, (tag & 1) * AREA,
				"the client's round")) {
			bad++;
			break;
		}
		rc = hmc_comm_send_tag(comm, RANK_CLIENT, tag);
		if (rc) {
			tap(false, "ack of round %llu: %s",
			    (unsigned long long)tag, hmc_strerror(rc));
			bad++;
			break;
		}
		rounds++;
	}
	tap(!bad && rounds > 0,
	    "served %llu rounds of the client, every byte checked, while the dialers died",
	    (unsigned long long)rounds);

	/* Every killed dialer's connection ends, so it stops being a peer. */
	until = itest_now_ms() + 10000;
	while ((n = hmc_comm_peers(comm, NULL, 0)) > 1 &&
	       itest_now_ms() < until)
		itest_sleep_ms(20);
	tap(n == 1 && hmc_comm_is_connected(comm, RANK_CLIENT),
	    "the killed dialers are gone: %d peer(s) left, the client among them",
	    n);
	if (n != 1)
		bad++;
	/* Over shm, their buffers went with them: ours and the client's stay. */
	if (hmc_comm_peer_transport(comm, RANK_CLIENT) == HMC_TRANSPORT_SHM) {
		n = memfd_mappings();
		if (!tap(n == 2, "the dead dialers' buffers are unmapped: %d memfd mappings left (ours, the client's)",
			 n))
			bad++;
	}
	hmc_comm_send_tag(comm, RANK_CLIENT, TAG_DONE);
	/* The client closes first: its goodbye is not a failure. */
	hmc_comm_recv_tag(comm, RANK_CLIENT, &tag, 10000);
	hmc_comm_destroy(comm);
	hmc_buf_destroy(buf);
	return bad || itest_failures() ? 1 : 0;
}

/* --------------------------------------------------------------- client */

/* Rank 1: rounds until @stop_fd becomes readable. */
static int client(uint16_t port, int stop_fd)
{
	struct pollfd pfd = { .fd = stop_fd, .events = POLLIN };
	struct hmc_buf *buf = NULL;
	struct hmc_comm *comm = NULL;
	uint64_t k, ack = 0;
	size_t area;
	uint8_t *p;
	int rc, bad = 0;

	itest_prefix("%s client: ", name);
	rc = setup(RANK_CLIENT, false, &buf, &comm);
	if (!rc)
		rc = hmc_comm_connect(comm, RANK_LISTENER, "127.0.0.1", port,
				      transport);
	if (rc) {
		tap(false, "connect with the defaults: %s", hmc_strerror(rc));
		return 1;
	}
	diag("on %s", hmc_transport_name(hmc_comm_peer_transport(comm,
							RANK_LISTENER)));
	p = hmc_buf_ptr(buf);
	for (k = 0; !bad && poll(&pfd, 1, 0) == 0; k++) {
		area = (k & 1) * AREA;
		data_fill(p, area, AREA, 0xc0ffee00 + k);
		rc = hmc_comm_put_signal(comm, RANK_LISTENER, area, area, AREA,
					 k);
		if (!rc)
			rc = hmc_comm_recv_tag(comm, RANK_LISTENER, &ack,
					       OP_TIMEOUT_MS);
		if (!rc && ack != k)
			rc = -EPROTO;
		/* Read it back into the other half of our buffer. */
		if (!rc)
			rc = hmc_comm_get(comm, RANK_LISTENER, 2 * AREA + area,
					  area, AREA);
		if (rc) {
			tap(false, "round %llu: %s", (unsigned long long)k,
			    hmc_strerror(rc));
			bad++;
		} else if (!data_check(p, 2 * AREA + area, AREA,
				       0xc0ffee00 + k, area, "read back")) {
			bad++;
		}
	}
	tap(!bad, "%llu rounds moved and read back, every byte checked",
	    (unsigned long long)k);
	rc = hmc_comm_send_tag(comm, RANK_LISTENER, TAG_DONE);
	if (!rc)
		rc = hmc_comm_recv_tag(comm, RANK_LISTENER, &ack, 30000);
	tap(!rc && ack == TAG_DONE, "the listener finished: %s",
	    hmc_strerror(rc));
	hmc_comm_destroy(comm);
	hmc_buf_destroy(buf);
	return bad || itest_failures() ? 1 : 0;
}

/* --------------------------------------------------------------- dialer */

/*
 * Streams 4 KiB puts until it is killed, after a byte on @up_fd once the
 * first put is through; never returns.
 */
static int dialer(uint32_t rank, uint16_t port, int up_fd)
{
	struct hmc_buf *buf;
	struct hmc_comm *comm;
	size_t off = DIALER_AREA + (rank % 128) * PUT_LEN;
	int rc;

	rc = setup(rank, false, &buf, &comm);
	if (!rc)
		rc = hmc_comm_connect(comm, RANK_LISTENER, "127.0.0.1", port,
				      transport);
	if (!rc) {
		data_fill(hmc_buf_ptr(buf), 0, PUT_LEN, rank);
		rc = hmc_comm_put(comm, RANK_LISTENER, 0, off, PUT_LEN);
	}
	if (!rc && write(up_fd, "u", 1) != 1)
		rc = -errno;
	while (!rc)
		rc = hmc_comm_put(comm, RANK_LISTENER, 0, off, PUT_LEN);
	/* Only a kill may end a dialer; an error it sees is not the test's. */
	for (;;)
		pause();
	return rc;
}

/* ----------------------------------------------------------------- main */

static pid_t spawn(int (*fn)(void *), void *arg)
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(fn(arg));
	}
	return pid;
}

struct dial_arg {
	uint32_t rank;
	uint16_t port;
	int up_fd;
};

static int run_dialer(void *arg)
{
	struct dial_arg *d = arg;

	return dialer(d->rank, d->port, d->up_fd);
}

static int run_listener(void *arg)
{
	return listener(*(int *)arg);
}

struct client_arg {
	uint16_t port;
	int stop_fd;
};

static int run_client(void *arg)
{
	struct client_arg *c = arg;

	return client(c->port, c->stop_fd);
}

static bool exited_ok(pid_t pid, const char *who, int timeout_s)
{
	int64_t until = itest_now_ms() + timeout_s * 1000LL;
	int st = 0;
	pid_t r;

	while ((r = waitpid(pid, &st, WNOHANG)) == 0 &&
	       itest_now_ms() < until)
		itest_sleep_ms(20);
	if (r == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return tap(false, "%s did not finish in %d s", who, timeout_s);
	}
	return tap(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		   "%s exited with status 0x%x", who, st);
}

int main(int argc, char **argv)
{
	int ndialers = 120, concurrent = 4, timeout_s = 150, opt;
	int port_pipe[2], stop_pipe[2], up_pipe[2], live = 0, started = 0;
	int streaming = 0, i;
	bool ctrl_tcp = false;
	char ups[64];
	ssize_t n;
	pid_t lpid, cpid, pids[64];
	int64_t deadline[64];
	struct client_arg ca;
	struct dial_arg da;
	struct rng r;
	uint16_t port;

	while ((opt = getopt(argc, argv, "n:c:N:t:x:C:")) != -1) {
		switch (opt) {
		case 'C':
			ctrl_tcp = !strcmp(optarg, "tcp");
			break;
		case 'x':	/* to see the test fail where a transport fails */
			transport = strcmp(optarg, "ucx") ? HMC_TRANSPORT_AUTO :
							    HMC_TRANSPORT_UCX;
			break;
		case 'n': ndialers = atoi(optarg); break;
		case 'c': concurrent = atoi(optarg); break;
		case 'N': name = optarg; break;
		case 't': timeout_s = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: see the comment at the top of %s\n",
				__FILE__);
			return 2;
		}
	}
	if (ndialers < 1 || concurrent < 1 || concurrent > 64)
		return 2;
	setvbuf(stdout, NULL, _IONBF, 0);
	alarm((unsigned int)timeout_s + 10);
	/* The defaults, whatever the caller's environment says. */
	unsetenv("UCX_TLS");
	unsetenv("UCX_NET_DEVICES");
	unsetenv("HMC_CTRL_TRANSPORT");
	unsetenv("HMC_SECRET");
	if (ctrl_tcp)
		setenv("HMC_CTRL_TRANSPORT", "tcp", 1);
	itest_prefix("%s: ", name);
	rng_seed(&r, (uint64_t)time(NULL), (uint64_t)getpid(), 7, 11);

	if (pipe(port_pipe) || pipe(stop_pipe) ||
	    pipe2(up_pipe, O_NONBLOCK | O_CLOEXEC))
		return 1;
	lpid = spawn(run_listener, &port_pipe[1]);
	close(port_pipe[1]);
	if (lpid < 0 || read(port_pipe[0], &port, sizeof(port)) != sizeof(port)) {
		tap(false, "the listener came up");
		return 1;
	}
	ca.port = port;
	ca.stop_fd = stop_pipe[0];
	cpid = spawn(run_client, &ca);
	if (cpid < 0)
		return 1;
	close(stop_pipe[0]);

	/* A few dialers at a time, each killed at a random moment. */
	while (started < ndialers || live) {
		while (started < ndialers && live < concurrent) {
			da.rank = RANK_DIALER0 + (uint32_t)started;
			da.port = port;
			da.up_fd = up_pipe[1];
			pids[live] = spawn(run_dialer, &da);
			if (pids[live] < 0)
				return 1;
			deadline[live] = itest_now_ms() +
					 (int64_t)rng_range(&r, 0, KILL_MAX_MS);
			live++;
			started++;
		}
		for (i = 0; i < live; i++) {
			if (itest_now_ms() < deadline[i])
				continue;
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
			pids[i] = pids[live - 1];
			deadline[i] = deadline[live - 1];
			live--;
			i--;
		}
		itest_sleep_ms(2);
		while ((n = read(up_pipe[0], ups, sizeof(ups))) > 0)
			streaming += (int)n;
		if (waitpid(lpid, NULL, WNOHANG) == lpid) {
			tap(false, "the listener died after %d dialers", started);
			kill(cpid, SIGKILL);
			return 1;
		}
	}
	while ((n = read(up_pipe[0], ups, sizeof(ups))) > 0)
		streaming += (int)n;
	/* The rest died connecting or shaking hands: moments that count too. */
	tap(streaming >= ndialers / 4,
	    "%d dialers SIGKILLed at random moments (up to %d ms in, %d at a time), %d of them while streaming 4 KiB puts",
	    ndialers, KILL_MAX_MS, concurrent, streaming);
	if (write(stop_pipe[1], "x", 1) != 1)
		return 1;
	exited_ok(cpid, "the client", 60);
	exited_ok(lpid, "the listener", 60);
	return itest_failures() ? 1 : 0;
}
