// SPDX-License-Identifier: MIT
/*
 * sockpp: the reference for libhmc's control-plane tag round trip. A child
 * echoes fixed-size messages over a connected stream socket with blocking
 * send()/recv(); the parent times each round trip. Latency is reported
 * like hmcperf's tag_lat: one-way (half the round trip), median, p99 and
 * average in microseconds.
 *
 *   sockpp [-u | -t] [-s SIZE] [-n ITERS] [-w WARMUP] [-j]
 *   sockpp -l ADDR:PORT                      (serve one client, then exit)
 *   sockpp -c ADDR:PORT [-B] [-s SIZE] [-n ITERS] [-w WARMUP] [-j]
 *
 * -u: a Unix stream socket (what libhmc uses to reach a peer on this
 * host); -t: TCP over 127.0.0.1 with TCP_NODELAY (HMC_CTRL_TRANSPORT=tcp).
 *
 * -l and -c: the two ends in different processes (network namespaces),
 * over TCP with TCP_NODELAY: the reference for libhmc's tcp transport.
 * The client says what it runs; the server echoes (ping-pong) or, with
 * -B, sinks a stream of SIZE-byte writes and answers one byte after the
 * warm-up and one after the timed part: bandwidth is the timed bytes over
 * the time from the warm-up's answer to the last one, as hmcperf's put_bw
 * counts its window and the flush that ends it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_MSG		4096
#define MAX_BW_MSG	(64u << 20)
#define TIMEOUT_S	30	/* every blocking call: SO_RCVTIMEO/SO_SNDTIMEO */
#define DIAL_S		10	/* the client retries while the server starts */
#define PREAMBLE	32	/* be64 mode (1: -B), size, warm-up, timed iterations */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int io_all(int fd, void *buf, size_t len, bool tx)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = tx ? send(fd, (char *)buf + done, len - done, MSG_NOSIGNAL) :
			 recv(fd, (char *)buf + done, len - done, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n ? -errno : -ECONNRESET;
		done += (size_t)n;
	}
	return 0;
}

static int set_timeouts(int fd)
{
	struct timeval tv = { .tv_sec = TIMEOUT_S };

	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
		return -errno;
	return 0;
}

/* A connected pair: sv[0] for the parent, sv[1] for the child. */
static int tcp_pair(int sv[2])
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int lfd, one = 1, rc = -1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0)
		return -1;
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &len))
		goto out;
	sv[0] = socket(AF_INET, SOCK_STREAM, 0);
	if (sv[0] < 0 || connect(sv[0], (struct sockaddr *)&sa, sizeof(sa)))
		goto out;
	sv[1] = accept(lfd, NULL, NULL);
	if (sv[1] < 0)
		goto out;
	if (setsockopt(sv[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
	    setsockopt(sv[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		goto out;
	rc = 0;
out:
	close(lfd);
	return rc;
}

/* ADDR:PORT (IPv4) into @sa. */
static int parse_addr(const char *arg, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(arg, ':');

	if (!colon || (size_t)(colon - arg) >= sizeof(host))
		return -1;
	memcpy(host, arg, (size_t)(colon - arg));
	host[colon - arg] = 0;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)strtoul(colon + 1, NULL, 10));
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

static int nodelay(int fd)
{
	int one = 1;

	return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void put64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* -l: accept one client and echo or sink what it asks for. */
static int serve(const struct sockaddr_in *sa)
{
	uint8_t pre[PREAMBLE], ack = 1, *buf;
	uint64_t mode, size, warm, total, i;
	int lfd, fd, one = 1, rc = 1;

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (const struct sockaddr *)sa, sizeof(*sa)) ||
	    listen(lfd, 1) || set_timeouts(lfd)) {
		perror("sockpp: listen");
		return 1;
	}
	fd = accept(lfd, NULL, NULL);	/* SO_RCVTIMEO bounds the wait */
	close(lfd);
	if (fd < 0 || nodelay(fd) || set_timeouts(fd) ||
	    io_all(fd, pre, sizeof(pre), false)) {
		perror("sockpp: accept");
		return 1;
	}
	mode = get64(pre);
	size = get64(pre + 8);
	warm = get64(pre + 16);
	total = warm + get64(pre + 24);
	buf = size && size <= MAX_BW_MSG ? malloc(size) : NULL;
	if (!buf || warm > total) {
		fprintf(stderr, "sockpp: bad request from the client\n");
		goto out;
	}
	for (i = 0; i < total; i++) {
		if (io_all(fd, buf, size, false))
			goto out;
		if (!mode)
			rc = io_all(fd, buf, size, true);
		else if (i + 1 == warm || i + 1 == total)
			rc = io_all(fd, &ack, 1, true);
		if (rc < 0)
			goto out;
		rc = 1;
	}
	rc = 0;
out:
	free(buf);
	close(fd);
	return rc;
}

static int dial(const struct sockaddr_in *sa)
{
	time_t until = time(NULL) + DIAL_S;
	int fd;

	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		if (!connect(fd, (const struct sockaddr *)sa, sizeof(*sa)))
			break;
		close(fd);
		if (time(NULL) >= until)
			return -1;
		usleep(20000);	/* the server is not listening yet */
	}
	if (nodelay(fd) || set_timeouts(fd)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* -c -B: stream @iters writes of @size bytes; MB/s (10^6 B/s) or < 0. */
static double stream_bw(int fd, unsigned long size, unsigned long iters,
			unsigned long warmup)
{
	uint8_t *buf = malloc(size), ack;
	unsigned long i;
	int64_t t0 = 0;
	int rc = 0;

	if (!buf)
		return -1;
	memset(buf, 0x5a, size);
	for (i = 0; i < warmup + iters && !rc; i++) {
		if (i == warmup) {	/* the warm-up arrived: start the clock */
			if (warmup)
				rc = io_all(fd, &ack, 1, false);
			t0 = now_ns();
		}
		if (!rc)
			rc = io_all(fd, buf, size, true);
	}
	if (!rc)
		rc = io_all(fd, &ack, 1, false);
	free(buf);
	if (rc)
		return -1;
	return (double)size * (double)iters * 1000.0 / (double)(now_ns() - t0);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: sockpp [-u | -t] [-s SIZE] [-n ITERS] [-w WARMUP] [-j]\n"
		   "       sockpp -l ADDR:PORT\n"
		   "       sockpp -c ADDR:PORT [-B] [-s SIZE] [-n ITERS] [-w WARMUP] [-j]\n");
}

/* Time @iters round trips of @size bytes on @fd after @warmup: 0 or -1. */
static int pingpong(int fd, unsigned long size, unsigned long iters,
		    unsigned long warmup, int64_t *rtt)
{
	uint8_t msg[MAX_MSG] = { 0 }, back[MAX_MSG];
	unsigned long i;
	int64_t t0;
	int rc;

	for (i = 0; i < warmup + iters; i++) {
		memcpy(msg, &i, sizeof(i) < size ? sizeof(i) : size);
		t0 = now_ns();
		rc = io_all(fd, msg, size, true);
		if (!rc)
			rc = io_all(fd, back, size, false);
		if (rc) {
			fprintf(stderr, "sockpp: iteration %lu: %s\n", i,
				strerror(-rc));
			return -1;
		}
		if (i >= warmup)
			rtt[i - warmup] = now_ns() - t0;
		if (memcmp(msg, back, size)) {
			fprintf(stderr, "sockpp: iteration %lu: wrong echo\n", i);
			return -1;
		}
	}
	return 0;
}

static void report_lat(const char *kind, unsigned long size,
		       unsigned long iters, int64_t *rtt, bool json)
{
	double sum = 0;
	unsigned long i;

	for (i = 0; i < iters; i++)
		sum += (double)rtt[i];
	qsort(rtt, iters, sizeof(*rtt), cmp_i64);
	printf(json ? "{\"test\":\"sock_%s_lat\",\"size\":%lu,\"iters\":%lu,\"lat_us\":{\"median\":%.3f,\"p99\":%.3f,\"avg\":%.3f}}\n" :
		      "sock_%s_lat %lu B: %lu iterations, one-way us: median %.3f p99 %.3f avg %.3f\n",
	       kind, size, iters, rtt[iters / 2] / 2000.0,
	       rtt[(iters * 99 + 99) / 100 - 1] / 2000.0,
	       sum / (double)iters / 2000.0);
}

/* -c: run what was asked against a sockpp -l. */
static int client(const struct sockaddr_in *sa, bool bw, unsigned long size,
		  unsigned long iters, unsigned long warmup, bool json)
{
	uint8_t pre[PREAMBLE];
	int64_t *rtt = NULL;
	int fd, rc = 1;
	double mbps;

	fd = dial(sa);
	if (fd < 0) {
		perror("sockpp: connect");
		return 1;
	}
	put64(pre, bw);
	put64(pre + 8, size);
	put64(pre + 16, warmup);
	put64(pre + 24, iters);
	if (io_all(fd, pre, sizeof(pre), true))
		goto out;
	if (bw) {
		mbps = stream_bw(fd, size, iters, warmup);
		if (mbps < 0)
			goto out;
		printf(json ? "{\"test\":\"sock_tcp_bw\",\"size\":%lu,\"iters\":%lu,\"bw_MBps\":%.2f}\n" :
			      "sock_tcp_bw %lu B: %lu iterations, %.2f MB/s\n",
		       size, iters, mbps);
		rc = 0;
		goto out;
	}
	rtt = calloc(iters, sizeof(*rtt));
	if (rtt && !pingpong(fd, size, iters, warmup, rtt)) {
		report_lat("tcp", size, iters, rtt, json);
		rc = 0;
	}
out:
	if (rc)
		fprintf(stderr, "sockpp: client failed\n");
	free(rtt);
	close(fd);
	return rc;
}

int main(int argc, char **argv)
{
	unsigned long size = 8, iters = 10000, warmup = 1000;
	const char *listen_at = NULL, *connect_to = NULL;
	bool tcp = false, json = false, bw = false;
	struct sockaddr_in sa;
	int sv[2], c, rc, status;
	uint8_t back[MAX_MSG];
	int64_t *rtt;
	pid_t pid;

	while ((c = getopt(argc, argv, "uts:n:w:jl:c:Bh")) != -1) {
		switch (c) {
		case 'u': tcp = false; break;
		case 't': tcp = true; break;
		case 's': size = strtoul(optarg, NULL, 0); break;
		case 'n': iters = strtoul(optarg, NULL, 0); break;
		case 'w': warmup = strtoul(optarg, NULL, 0); break;
		case 'j': json = true; break;
		case 'l': listen_at = optarg; break;
		case 'c': connect_to = optarg; break;
		case 'B': bw = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (listen_at || connect_to) {
		if (parse_addr(listen_at ? listen_at : connect_to, &sa)) {
			fprintf(stderr, "sockpp: ADDR:PORT, IPv4\n");
			return 2;
		}
		if (listen_at)
			return serve(&sa);
		if (!size || size > (bw ? MAX_BW_MSG : MAX_MSG) || !iters ||
		    iters > 100000000) {
			fprintf(stderr, "sockpp: size 1..%u, iterations 1..1e8\n",
				bw ? MAX_BW_MSG : MAX_MSG);
			return 2;
		}
		return client(&sa, bw, size, iters, warmup, json);
	}
	if (bw || !size || size > MAX_MSG || !iters || iters > 100000000) {
		fprintf(stderr, "sockpp: size 1..%d, iterations 1..1e8; -B needs -c\n",
			MAX_MSG);
		return 2;
	}
	rtt = calloc(iters, sizeof(*rtt));
	if (!rtt)
		return 1;
	if (tcp ? tcp_pair(sv) : socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
		perror("sockpp: socket pair");
		return 1;
	}
	if (set_timeouts(sv[0]) || set_timeouts(sv[1])) {
		perror("sockpp: timeouts");
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		perror("sockpp: fork");
		return 1;
	}
	if (pid == 0) {		/* echo until the parent closes */
		close(sv[0]);
		while (!io_all(sv[1], back, size, false))
			if (io_all(sv[1], back, size, true))
				_exit(1);
		_exit(0);
	}
	close(sv[1]);
	rc = pingpong(sv[0], size, iters, warmup, rtt);
	if (rc)
		kill(pid, SIGTERM);
	close(sv[0]);
	waitpid(pid, &status, 0);
	if (rc)
		return 1;
	report_lat(tcp ? "tcp" : "unix", size, iters, rtt, json);
	free(rtt);
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : 1;
}
