// SPDX-License-Identifier: GPL-2.0
/* test_kmod: random ioctls and mmaps. */
#include <fcntl.h>
#include <sys/ioctl.h>

#include "kmod_test.h"

static uint64_t rnd_state;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* EBADF: bad dma-buf fds; EACCES: a read-only buffer exported RDWR;
 * EPERM: what only CAP_SYS_ADMIN may ask. */
static int errno_expected(int err)
{
	return err == ENOTTY || err == EINVAL || err == E2BIG ||
	       err == EFAULT || err == ENOENT || err == ENOMEM ||
	       err == EBADF || err == EACCES || err == EPERM;
}

/* A command: wholly random, ours with random bits, or a real one. */
static unsigned int random_cmd(void)
{
	switch (rnd() % 4) {
	case 0:
		return (unsigned int)rnd();
	case 1:
		return _IOC(rnd() % 4, HMC_IOC_MAGIC, rnd() % 16, rnd() % 96);
	default:
		return all_cmds[rnd() % NR_CMDS];
	}
}

#define NR_RECENT	16
#define NR_DMABUFS	8
#define ARG_WORDS	16	/* covers the largest struct */

/* What the fuzzer made lately, for plausible requests about it. */
struct made {
	uint32_t bufs[NR_RECENT];	/* buffer handles */
	uint32_t imports[NR_RECENT];	/* import handles */
	int dmabufs[NR_DMABUFS];	/* exported dma-buf fds, or -1 */
	int dev;			/* /dev/hmc: an fd, not a dma-buf */
};

/* A page-aligned offset or size of 0 to 3 pages, now and then not. */
static uint64_t random_range(void)
{
	return (rnd() % 4) * pg - (rnd() % 16 ? 0 : 1);
}

static int random_fd(const struct made *m)
{
	switch (rnd() % 8) {
	case 0:
		return (int)rnd();
	case 1:
		return m->dev;
	default:
		return m->dmabufs[rnd() % NR_DMABUFS];
	}
}

/* The request shapes of ABI 1.1 (dma-bufs and peers). */
static void random_arg_v1_1(uint64_t *w, unsigned int nr,
			    const struct made *m)
{
	uint32_t *u = (uint32_t *)w;
	uint8_t *b = (uint8_t *)w;

	switch (nr) {
	case 6:		/* BUF_EXPORT */
		u[0] = m->bufs[rnd() % NR_RECENT];
		u[1] = rnd() % 8 ? rnd() % 4 : rnd();
		w[1] = random_range();
		w[2] = random_range();
		break;
	case 7:		/* PEER_IMPORT */
		u[0] = random_fd(m);
		u[1] = rnd() % 8 ? (rnd() % 2) | (rnd() % 4 ? 0 : 8) : rnd();
		w[1] = random_range();
		w[2] = random_range();
		if (rnd() % 16 == 0)
			w[3] = rnd();	/* PCI fields */
		break;
	case 8:		/* PEER_RELEASE */
	case 9:		/* PEER_INFO */
		u[0] = rnd() % 4 ? m->imports[rnd() % NR_RECENT] :
				   rnd() % 64;
		u[1] = rnd() % 8 ? 0 : rnd() % 4;
		break;
	case 10:	/* PEER_STATE */
		w[0] = rnd() % 8;
		u[2] = 1 + rnd() % 3;
		u[3] = u[2] == 1 ? 0 : rnd() % 3 ? 1 + rnd() % 130 : 0;
		u[4] = rnd() % 6;
		u[5] = rnd() % 8 ? rnd() % 17 : rnd() % 80;
		memset(b + 24, 0x5a, u[5] < 64 ? u[5] : 64);
		break;
	}
}

/* Random bytes, mostly shaped like a plausible request for @cmd. */
static void random_arg(uint8_t *arg, unsigned int cmd, uint8_t *anon,
		       const struct made *m)
{
	uint64_t *w = (uint64_t *)arg;
	const uint32_t *recent = m->bufs;
	int i;

	for (i = 0; i < ARG_WORDS; i++)
		w[i] = rnd();
	if (rnd() % 4 == 0)
		return;
	memset(arg, 0, ARG_WORDS * 8);
	random_arg_v1_1(w, _IOC_NR(cmd), m);
	switch (_IOC_NR(cmd)) {
	case 1:		/* BUF_ALLOC */
		w[0] = rnd() % (rnd() % 16 ? 16 * KiB : 4 * MiB);
		w[1] = rnd() % 8 ? 0 : rnd() % 3;
		break;
	case 2:		/* BUF_PIN */
		w[0] = (uintptr_t)anon + (rnd() % 16) * pg;
		w[0] -= rnd() % 8 ? 0 : 1;
		w[1] = (rnd() % 16) * pg;
		w[2] = rnd() % 8 ? 0 : rnd() % 4;
		break;
	case 3:		/* BUF_FREE */
	case 4:		/* BUF_INFO */
		w[0] = rnd() % 4 ? recent[rnd() % NR_RECENT] : rnd() % 4096;
		break;
	case 5:		/* GET_STATS */
		w[0] = (rnd() % 2) | (rnd() % 20) << 32;
		w[1] = rnd() % 4 ? (uintptr_t)(arg + 512) : rnd();
		break;
	}
	if (rnd() % 16 == 0)
		arg[rnd() % (ARG_WORDS * 8)] ^= 1 << (rnd() % 8);
}

/* Replaces @old (0: a free slot, else any) in @recent with @h. */
static void remember(uint32_t *recent, uint32_t old, uint32_t h)
{
	int i;

	for (i = 0; i < NR_RECENT; i++)
		if (recent[i] == old) {
			recent[i] = h;
			return;
		}
	if (!old)
		recent[rnd() % NR_RECENT] = h;
}

/* Keeps @fd among the recent dma-bufs, closing the oldest one. */
static void remember_fd(int *fds, int fd)
{
	static unsigned int next;

	if (fds[next % NR_DMABUFS] >= 0)
		close(fds[next % NR_DMABUFS]);
	fds[next++ % NR_DMABUFS] = fd;
}

/*
 * An mmap of a random part of a recent, unknown or absurd handle, of a
 * buffer or an import, or of a dma-buf.
 */
static void random_mmap(int fd, const struct made *m)
{
	int imp = rnd() % 4 == 0;
	const uint32_t *recent = imp ? m->imports : m->bufs;
	uint64_t handle = rnd() % 2 ? recent[rnd() % NR_RECENT] : rnd() % 64;
	uint64_t off = handle << HMC_MMAP_SHIFT | (rnd() % 8) * pg |
		       (imp ? HMC_MMAP_IMPORT : 0);
	size_t len = (1 + rnd() % 8) * pg;
	int flags = rnd() % 4 ? MAP_SHARED : MAP_PRIVATE;
	void *p;

	if (rnd() % 8 == 0)
		off = rnd() & ~(uint64_t)(pg - 1) & INT64_MAX;
	if (rnd() % 8 == 0) {
		fd = m->dmabufs[rnd() % NR_DMABUFS];
		off = (rnd() % 4) * pg;
	}
	p = mmap(NULL, len, PROT_READ | (rnd() % 2 ? PROT_WRITE : 0), flags,
		 fd, off);
	if (p != MAP_FAILED)
		CHILD_CHECK(munmap(p, len) == 0);
	else
		CHILD_CHECK(errno == EINVAL || errno == EACCES ||
			    errno == EOVERFLOW || errno == ENOMEM ||
			    errno == EBADF);
}

static void random_ioctls(void *arg)
{
	uint8_t *mem, *anon, *ptrs[8];
	struct made made = { .dmabufs = { -1, -1, -1, -1, -1, -1, -1, -1 } };
	uint32_t *recent = made.bufs;
	long ok[NR_CMDS] = { 0 }, calls;
	size_t i;
	int fd = hmc_open();

	CHILD_CHECK(fd >= 0);
	made.dev = fd;
	become_nobody(4 * MiB);
	/* A read-write page, a read-only one, then a hole. */
	mem = mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHILD_CHECK(mem != MAP_FAILED);
	CHILD_CHECK(mprotect(mem + pg, pg, PROT_READ) == 0);
	CHILD_CHECK(munmap(mem + 2 * pg, pg) == 0);
	anon = mmap(NULL, 16 * pg, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHILD_CHECK(anon != MAP_FAILED);
	ptrs[0] = NULL;
	ptrs[1] = (uint8_t *)0xffff888000000000UL;
	ptrs[2] = mem + pg;			/* read-only */
	ptrs[3] = mem + pg - 24;		/* runs into read-only */
	ptrs[4] = mem + 2 * pg;			/* unmapped */
	ptrs[5] = ptrs[6] = ptrs[7] = mem;
	rnd_state = 0x2545f4914f6cdd1dULL;

	for (calls = 0; calls < 100000; calls++) {
		unsigned int cmd = random_cmd();
		uint8_t *p = ptrs[rnd() % 8];
		int ret;

		if (calls % 64 == 0)
			random_mmap(fd, &made);
		if (p == mem)
			random_arg(mem, cmd, anon, &made);
		ret = ioctl(fd, cmd, p);
		if (_IOC_TYPE(cmd) != HMC_IOC_MAGIC)
			continue;
		if (ret < 0) {
			CHILD_CHECK(errno_expected(errno));
			continue;
		}
		CHILD_CHECK(_IOC_NR(cmd) < NR_CMDS);
		ok[_IOC_NR(cmd)]++;
		if (p == mem && cmd == HMC_IOC_BUF_FREE)
			remember(recent, *(uint32_t *)mem, 0);
		/* Sizes may differ from the published ones. */
		if (p == mem && _IOC_NR(cmd) == _IOC_NR(HMC_IOC_PEER_RELEASE))
			remember(made.imports, *(uint32_t *)mem, 0);
		if (p == mem && _IOC_NR(cmd) == _IOC_NR(HMC_IOC_PEER_IMPORT))
			remember(made.imports, 0, ((uint32_t *)mem)[8]);
		if (_IOC_NR(cmd) == _IOC_NR(HMC_IOC_BUF_EXPORT))
			remember_fd(made.dmabufs, ((int32_t *)p)[6]);
		if (p == mem && (cmd == HMC_IOC_BUF_ALLOC ||
				 cmd == HMC_IOC_BUF_PIN)) {
			uint32_t h = ((uint32_t *)mem)[cmd == HMC_IOC_BUF_PIN ?
						       5 : 4];
			remember(recent, 0, h);
			if (rnd() % 4 == 0) {
				uint64_t off = (uint64_t)h << HMC_MMAP_SHIFT;
				void *m = hmc_map(fd, off, pg, PROT_READ);

				CHILD_CHECK(m != MAP_FAILED);
				CHILD_CHECK(munmap(m, pg) == 0);
			}
		}
	}
	printf("# random ioctls that succeeded, by command:");
	for (i = 0; i < NR_CMDS; i++)
		printf(" %ld", ok[i]);
	printf("\n");
	fflush(stdout);
	/* Every command got past validation many times. */
	for (i = 0; i < NR_CMDS; i++)
		CHILD_CHECK(ok[i] >= 100);
	close(fd);
}

START_TEST(random_ioctls_100000)
{
	run_child(random_ioctls, NULL);
	expect_no_live();
}
END_TEST

const struct test fuzz_tests[] = {
	T(random_ioctls_100000, 240),
	{ NULL }
};
