// SPDX-License-Identifier: MIT
/*
 * sockpp: the reference for libhmc's control-plane tag round trip. A child
 * echoes fixed-size messages over a connected stream socket with blocking
 * send()/recv(); the parent times each round trip. Latency is reported
 * like hmcperf's tag_lat: one-way (half the round trip), median, p99 and
 * average in microseconds.
 *
 *   sockpp [-u | -t] [-s SIZE] [-n ITERS] [-w WARMUP] [-j]
 *
 * -u: a Unix stream socket (what libhmc uses to reach a peer on this
 * host); -t: TCP over 127.0.0.1 with TCP_NODELAY (HMC_CTRL_TRANSPORT=tcp).
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
#define TIMEOUT_S	30	/* every blocking call: SO_RCVTIMEO/SO_SNDTIMEO */

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

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: sockpp [-u | -t] [-s SIZE] [-n ITERS] [-w WARMUP] [-j]\n");
}

int main(int argc, char **argv)
{
	unsigned long size = 8, iters = 10000, warmup = 1000, i;
	uint8_t msg[MAX_MSG] = { 0 }, back[MAX_MSG];
	bool tcp = false, json = false;
	int sv[2], c, rc, status;
	int64_t *rtt, t0;
	double sum = 0;
	pid_t pid;

	while ((c = getopt(argc, argv, "uts:n:w:jh")) != -1) {
		switch (c) {
		case 'u': tcp = false; break;
		case 't': tcp = true; break;
		case 's': size = strtoul(optarg, NULL, 0); break;
		case 'n': iters = strtoul(optarg, NULL, 0); break;
		case 'w': warmup = strtoul(optarg, NULL, 0); break;
		case 'j': json = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!size || size > MAX_MSG || !iters || iters > 100000000) {
		fprintf(stderr, "sockpp: size 1..%d, iterations 1..1e8\n", MAX_MSG);
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
	for (i = 0; i < warmup + iters; i++) {
		memcpy(msg, &i, sizeof(i) < size ? sizeof(i) : size);
		t0 = now_ns();
		rc = io_all(sv[0], msg, size, true);
		if (!rc)
			rc = io_all(sv[0], back, size, false);
		if (rc) {
			fprintf(stderr, "sockpp: iteration %lu: %s\n", i,
				strerror(-rc));
			kill(pid, SIGTERM);
			return 1;
		}
		if (i >= warmup)
			rtt[i - warmup] = now_ns() - t0;
		if (memcmp(msg, back, size)) {
			fprintf(stderr, "sockpp: iteration %lu: wrong echo\n", i);
			kill(pid, SIGTERM);
			return 1;
		}
	}
	close(sv[0]);
	waitpid(pid, &status, 0);
	for (i = 0; i < iters; i++)
		sum += (double)rtt[i];
	qsort(rtt, iters, sizeof(*rtt), cmp_i64);
	if (json)
		printf("{\"test\":\"sock_%s_lat\",\"size\":%lu,\"iters\":%lu,\"lat_us\":{\"median\":%.3f,\"p99\":%.3f,\"avg\":%.3f}}\n",
		       tcp ? "tcp" : "unix", size, iters,
		       rtt[iters / 2] / 2000.0,
		       rtt[(iters * 99 + 99) / 100 - 1] / 2000.0,
		       sum / (double)iters / 2000.0);
	else
		printf("sock_%s_lat %lu B: %lu iterations, one-way us: median %.3f p99 %.3f avg %.3f\n",
		       tcp ? "tcp" : "unix", size, iters,
		       rtt[iters / 2] / 2000.0,
		       rtt[(iters * 99 + 99) / 100 - 1] / 2000.0,
		       sum / (double)iters / 2000.0);
	free(rtt);
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : 1;
}
