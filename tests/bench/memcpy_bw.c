// SPDX-License-Identifier: MIT
/*
 * memcpy_bw: the reference for the shm transport's put bandwidth. It copies
 * SIZE bytes from one page-aligned, pre-faulted buffer to another, ITERS
 * times after a tenth as many untimed, the way a shm put copies from the
 * local ConnBuffer into the peer's mapped one, and prints MB/s (10^6 B/s).
 *
 *   memcpy_bw -s SIZE [-n ITERS] [-j]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *region(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (p == MAP_FAILED) {
		perror("memcpy_bw: mmap");
		exit(1);
	}
	memset(p, 0x5a, size);
	return p;
}

int main(int argc, char **argv)
{
	unsigned long long size = 0, iters = 100, i;
	int opt, json = 0;
	double t, mbps;
	void *src, *dst;
	char *end;

	while ((opt = getopt(argc, argv, "s:n:j")) != -1) {
		switch (opt) {
		case 's':
			size = strtoull(optarg, &end, 0);
			if (*end == 'K')
				size <<= 10;
			else if (*end == 'M')
				size <<= 20;
			break;
		case 'n':
			iters = strtoull(optarg, NULL, 0);
			break;
		case 'j':
			json = 1;
			break;
		default:
			fprintf(stderr, "usage: memcpy_bw -s SIZE [-n ITERS] [-j]\n");
			return 2;
		}
	}
	if (!size || !iters) {
		fprintf(stderr, "memcpy_bw: -s SIZE and -n ITERS must be positive\n");
		return 2;
	}
	src = region(size);
	dst = region(size);
	for (i = 0; i < iters / 10 + 1; i++)
		memcpy(dst, src, size);
	t = now_s();
	for (i = 0; i < iters; i++) {
		memcpy(dst, src, size);
		__asm__ __volatile__("" : : "r"(dst) : "memory");
	}
	t = now_s() - t;
	mbps = (double)size * (double)iters / t / 1e6;
	if (json)
		printf("{\"test\":\"memcpy\",\"size\":%llu,\"iters\":%llu,\"bw_MBps\":%.2f}\n",
		       size, iters, mbps);
	else
		printf("memcpy %llu B x %llu: %.2f MB/s\n", size, iters, mbps);
	return 0;
}
