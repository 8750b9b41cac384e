// SPDX-License-Identifier: GPL-2.0
/*
 * Benchmark of hmc.ko, run in the test guest with the module loaded:
 *  - BUF_ALLOC + mmap + first touch of every page + munmap + BUF_FREE,
 *    median and p99 latency at 4 KiB, 1 MiB and 64 MiB;
 *  - BUF_PIN + BUF_FREE of 256 MiB of pre-faulted anonymous memory next to
 *    ibv_reg_mr + ibv_dereg_mr of the same memory on $HMC_RXE_DEV, which
 *    pins it the same way, alternating in the same run.
 * Prints a table and `RATIO pin_vs_ibv_reg_mr_256MiB <ibv time / pin time>
 * >=1.0`. Numbers under QEMU/TCG compare the two paths, nothing more.
 *
 *   kmod_bench [-q]   -q: fewer iterations (a smoke run)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kmod_util.h"

#define KiB	1024UL
#define MiB	(1024 * KiB)
#define PIN_LEN	(256 * MiB)

static size_t pg;

static void die(const char *what, int err)
{
	fprintf(stderr, "kmod_bench: %s: %s\n", what, strerror(err));
	exit(1);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Sorts @t and returns its median; *p99 gets the 99th percentile. */
static double median_us(uint64_t *t, int n, double *p99)
{
	qsort(t, n, sizeof(*t), cmp_u64);
	*p99 = t[(n * 99 + 99) / 100 - 1] / 1e3;
	return (n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2) / 1e3;
}

static void row(const char *op, const char *size, uint64_t *t, int n)
{
	double p99, med = median_us(t, n, &p99);

	printf("%-40s %8s %6d %12.1f %12.1f\n", op, size, n, med, p99);
}

static uint64_t alloc_cycle(int fd, size_t len)
{
	uint64_t t0 = now_ns(), off;
	volatile uint8_t *p;
	uint32_t h;
	size_t i;
	int ret;

	ret = hmc_alloc(fd, len, &h, &off);
	if (ret)
		die("BUF_ALLOC", -ret);
	p = hmc_map(fd, off, len, PROT_READ | PROT_WRITE);
	if (p == MAP_FAILED)
		die("mmap", errno);
	for (i = 0; i < len; i += pg)
		p[i] = 1;
	if (munmap((void *)p, len))
		die("munmap", errno);
	ret = hmc_free(fd, h);
	if (ret)
		die("BUF_FREE", -ret);
	return now_ns() - t0;
}

static void bench_alloc(int fd, int quick)
{
	static const struct {
		size_t len;
		const char *name;
		int warmup, iters;
	} sizes[] = {
		{ 4 * KiB, "4 KiB", 100, 2000 },
		{ MiB, "1 MiB", 10, 200 },
		{ 64 * MiB, "64 MiB", 2, 11 },
	};
	uint64_t *t;
	size_t s;
	int i, n;

	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		n = quick ? sizes[s].iters / 10 + 1 : sizes[s].iters;
		t = calloc(n, sizeof(*t));
		if (!t)
			die("calloc", ENOMEM);
		for (i = 0; i < sizes[s].warmup; i++)
			alloc_cycle(fd, sizes[s].len);
		for (i = 0; i < n; i++)
			t[i] = alloc_cycle(fd, sizes[s].len);
		row("BUF_ALLOC+mmap+touch+munmap+BUF_FREE", sizes[s].name,
		    t, n);
		free(t);
	}
}

static uint64_t pin_cycle(int fd, void *mem)
{
	uint64_t t0 = now_ns();
	uint32_t h;
	int ret;

	ret = hmc_pin(fd, mem, PIN_LEN, 0, &h);
	if (ret)
		die("BUF_PIN", -ret);
	ret = hmc_free(fd, h);
	if (ret)
		die("BUF_FREE", -ret);
	return now_ns() - t0;
}

static uint64_t reg_mr_cycle(struct ibv_pd *pd, void *mem)
{
	uint64_t t0 = now_ns();
	struct ibv_mr *mr;

	mr = ibv_reg_mr(pd, mem, PIN_LEN, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		die("ibv_reg_mr", errno);
	if (ibv_dereg_mr(mr))
		die("ibv_dereg_mr", errno);
	return now_ns() - t0;
}

static void bench_pin(int fd, const char *dev, int quick)
{
	int i, n = quick ? 2 : 7;
	uint64_t tp[7], tr[7];
	double p99, pin, reg;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	void *mem;

	ctx = rdma_open(dev);
	if (!ctx)
		die(dev, errno ? errno : ENODEV);
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd", errno);
	mem = mmap(NULL, PIN_LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		die("mmap", errno);
	memset(mem, 0x5a, PIN_LEN);	/* pre-fault: pin, not page faults */

	pin_cycle(fd, mem);		/* warm-up */
	reg_mr_cycle(pd, mem);
	for (i = 0; i < n; i++) {
		tp[i] = pin_cycle(fd, mem);
		tr[i] = reg_mr_cycle(pd, mem);
	}
	pin = median_us(tp, n, &p99);
	reg = median_us(tr, n, &p99);
	row("BUF_PIN+BUF_FREE", "256 MiB", tp, n);
	row("ibv_reg_mr+ibv_dereg_mr", "256 MiB", tr, n);
	printf("RATIO pin_vs_ibv_reg_mr_256MiB %.2f >=1.0\n", reg / pin);

	munmap(mem, PIN_LEN);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
}

int main(int argc, char **argv)
{
	const char *dev = getenv("HMC_RXE_DEV");
	int fd, quick = argc > 1 && !strcmp(argv[1], "-q");

	pg = sysconf(_SC_PAGESIZE);
	if (!dev || !*dev) {
		fprintf(stderr, "kmod_bench: HMC_RXE_DEV is not set\n");
		return 1;
	}
	fd = hmc_open();
	if (fd < 0)
		die(HMC_DEVICE_PATH, -fd);
	printf("%-40s %8s %6s %12s %12s\n", "operation", "size", "iters",
	       "median_us", "p99_us");
	bench_alloc(fd, quick);
	bench_pin(fd, dev, quick);
	close(fd);
	return 0;
}
