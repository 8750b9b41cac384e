// SPDX-License-Identifier: MIT
/*
 * store_pingpong: the physical limit of a put's latency between two
 * processes of one host, the reference for the shm transport's put_lat.
 * Two processes share a mapping; each in turn stores SIZE bytes and then a
 * flag (a sequence number) into the other's cache lines and spins on its
 * own flag for the reply, which is what a shm put of SIZE bytes plus the
 * peer's polling amount to, without a library in between. Each round trip
 * is timed with hmcperf's clock (tools/hmcperf_clock.c) and halved, as
 * hmcperf's put_lat does; the median one-way latency is printed in us.
 *
 *   store_pingpong [-s SIZE] [-n ITERS] [-w WARMUP] [-j]
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hmcperf.h"

#define LINE		64
#define MAX_SIZE	4096

/* One direction: the payload, then the flag in a line of its own. */
struct lane {
	uint8_t data[MAX_SIZE];
	uint64_t flag __attribute__((aligned(LINE)));
} __attribute__((aligned(LINE)));

struct shared {
	struct lane to_pong, to_ping;
};

static void send_msg(struct lane *l, const uint8_t *src, size_t size,
		     uint64_t seq)
{
	memcpy(l->data, src, size);
	__atomic_store_n(&l->flag, seq, __ATOMIC_RELEASE);
}

/* A bare spin, as hmcperf's put_lat polls: no pause to slow it. */
static void wait_msg(const struct lane *l, uint64_t seq)
{
	while (__atomic_load_n(&l->flag, __ATOMIC_ACQUIRE) != seq)
		;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	unsigned long size = 8, iters = 20000, warmup = 2000, i;
	uint8_t payload[MAX_SIZE];
	struct shared *sh;
	int64_t *rtt, t0;
	int opt, json = 0, status;
	pid_t pid;

	while ((opt = getopt(argc, argv, "s:n:w:j")) != -1) {
		switch (opt) {
		case 's': size = strtoul(optarg, NULL, 0); break;
		case 'n': iters = strtoul(optarg, NULL, 0); break;
		case 'w': warmup = strtoul(optarg, NULL, 0); break;
		case 'j': json = 1; break;
		default:
			fprintf(stderr, "usage: store_pingpong [-s SIZE] [-n ITERS] [-w WARMUP] [-j]\n");
			return 2;
		}
	}
	if (!size || size > MAX_SIZE || !iters) {
		fprintf(stderr, "store_pingpong: SIZE 1..%d, ITERS > 0\n",
			MAX_SIZE);
		return 2;
	}
	perf_clock_init();
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	rtt = calloc(iters, sizeof(*rtt));
	if (sh == MAP_FAILED || !rtt) {
		perror("store_pingpong");
		return 1;
	}
	memset(payload, 0xa5, sizeof(payload));

	pid = fork();
	if (pid < 0) {
		perror("store_pingpong: fork");
		return 1;
	}
	if (pid == 0) {		/* pong: answer every ping in kind */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (i = 1; i <= warmup + iters; i++) {
			wait_msg(&sh->to_pong, i);
			send_msg(&sh->to_ping, sh->to_pong.data, size, i);
		}
		_exit(0);
	}
	for (i = 1; i <= warmup + iters; i++) {
		t0 = perf_now_ns();
		payload[0] = (uint8_t)i;
		send_msg(&sh->to_pong, payload, size, i);
		wait_msg(&sh->to_ping, i);
		if (i > warmup)
			rtt[i - warmup - 1] = perf_now_ns() - t0;
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		fprintf(stderr, "store_pingpong: the pong process failed\n");
		return 1;
	}
	qsort(rtt, iters, sizeof(*rtt), cmp_i64);
	if (json)
		printf("{\"test\":\"store_pingpong\",\"size\":%lu,\"iters\":%lu,\"median\":%.3f,\"p99\":%.3f}\n",
		       size, iters, rtt[iters / 2] / 2e3,
		       rtt[iters * 99 / 100] / 2e3);
	else
		printf("store ping-pong %lu B x %lu: one-way median %.3f us, p99 %.3f us\n",
		       size, iters, rtt[iters / 2] / 2e3,
		       rtt[iters * 99 / 100] / 2e3);
	return 0;
}
