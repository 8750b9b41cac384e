// SPDX-License-Identifier: GPL-2.0
/* test_kmod: random ioctls and mmaps. */
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

static int errno_expected(int err)
{
	return err == ENOTTY || err == EINVAL || err == E2BIG ||
	       err == EFAULT || err == ENOENT || err == ENOMEM;
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

/* Random bytes, mostly shaped like a plausible request for @cmd. */
static void random_arg(uint8_t *arg, unsigned int cmd, uint8_t *anon,
		       const uint32_t *recent)
{
	uint64_t *w = (uint64_t *)arg;
	int i;

	for (i = 0; i < 12; i++)
		w[i] = rnd();
	if (rnd() % 4 == 0)
		return;
	memset(arg, 0, 96);
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
		arg[rnd() % 96] ^= 1 << (rnd() % 8);
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

/* An mmap of a random part of a recent, unknown or absurd handle. */
static void random_mmap(int fd, const uint32_t *recent)
{
	uint64_t handle = rnd() % 2 ? recent[rnd() % NR_RECENT] : rnd() % 64;
	uint64_t off = handle << HMC_MMAP_SHIFT | (rnd() % 8) * pg;
	size_t len = (1 + rnd() % 8) * pg;
	int flags = rnd() % 4 ? MAP_SHARED : MAP_PRIVATE;
	void *m;

	if (rnd() % 8 == 0)
		off = rnd() & ~(uint64_t)(pg - 1) & INT64_MAX;
	m = mmap(NULL, len, PROT_READ | (rnd() % 2 ? PROT_WRITE : 0), flags,
		 fd, off);
	if (m != MAP_FAILED)
		CHILD_CHECK(munmap(m, len) == 0);
	else
		CHILD_CHECK(errno == EINVAL || errno == EACCES ||
			    errno == EOVERFLOW || errno == ENOMEM);
}

static void random_ioctls(void *arg)
{
	uint8_t *mem, *anon, *ptrs[8];
	uint32_t recent[NR_RECENT] = { 0 };	/* handles made lately */
	long ok[NR_CMDS] = { 0 }, calls;
	size_t i;
	int fd = hmc_open();

	CHILD_CHECK(fd >= 0);
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
			random_mmap(fd, recent);
		if (p == mem)
			random_arg(mem, cmd, anon, recent);
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
