// SPDX-License-Identifier: GPL-2.0
/* test_kmod: lifetimes: many cycles, close, process death, rmmod. */
#include <signal.h>

#include "kmod_test.h"

/* ---- lifetime ------------------------------------------------------ */

START_TEST(cycles_10000_counters_back_to_zero)
{
	uint64_t c[HMC_STAT_COUNT], off, seed = 0x9e3779b97f4a7c15ULL;
	volatile uint64_t *p;
	uint32_t h;
	size_t len;
	int i, fd = open_dev();

	for (i = 0; i < 10000; i++) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		len = (1 + seed % 16) * pg;
		EXPECT_OK(hmc_alloc(fd, len, &h, &off));
		p = hmc_map(fd, off, len, PROT_READ | PROT_WRITE);
		ck_assert_msg(p != MAP_FAILED, "cycle %d: mmap: %s", i,
			      strerror(errno));
		ck_assert_msg(!p[0] && !p[len / 8 - 1], "cycle %d: not zeroed",
			      i);
		p[0] = seed;
		p[len / 8 - 1] = ~seed;
		ck_assert(p[0] == seed && p[len / 8 - 1] == ~seed);
		ck_assert_int_eq(munmap((void *)p, len), 0);
		EXPECT_OK(hmc_free(fd, h));
	}
	get_stats(fd, 0, c);
	expect_live_zero(c, "per-file");
	ck_assert_uint_eq(c[HMC_STAT_BUFS_CREATED], 10000);
	ck_assert_uint_eq(c[HMC_STAT_ERRORS], 0);
	get_stats(fd, 1, c);
	expect_live_zero(c, "global");
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(close_without_free_releases_all)
{
	uint64_t g[HMC_STAT_COUNT], off;
	long pin0 = vm_pinned_kib();
	uint8_t *anon = map_anon(16 * pg), *p;
	uint32_t h;
	int i, fd = open_dev();

	for (i = 0; i < 5; i++)
		alloc_ok(fd, (i + 1) * pg, NULL);
	EXPECT_OK(hmc_pin(fd, anon, 8 * pg, 0, &h));
	EXPECT_OK(hmc_pin(fd, anon + 8 * pg, 8 * pg, HMC_BUF_PIN_F_READONLY,
			  &h));
	h = alloc_ok(fd, 2 * pg, &off);
	p = map_ok(fd, off, 2 * pg);
	ck_assert_int_eq(munmap(p, 2 * pg), 0);
	get_stats(fd, 1, g);
	ck_assert_uint_eq(g[HMC_STAT_BUFS_LIVE], 8);
	ck_assert_uint_eq(g[HMC_STAT_PAGES_PINNED], 15 + 16 + 2);
	ck_assert_int_eq(vm_pinned_kib(), pin0 + (long)(33 * pg / KiB));
	close(fd);
	ck_assert_int_eq(vm_pinned_kib(), pin0);
	munmap(anon, 16 * pg);
	expect_no_live();
}
END_TEST

static void die_holding_everything(void *arg)
{
	uint8_t *anon, *p, *q;
	uint64_t off;
	uint32_t h;
	int fd = hmc_open();

	CHILD_CHECK(fd >= 0);
	anon = mmap(NULL, 64 * pg, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHILD_CHECK(anon != MAP_FAILED);
	CHILD_CHECK(hmc_alloc(fd, MiB, &h, &off) == 0);
	p = hmc_map(fd, off, MiB, PROT_READ | PROT_WRITE);
	CHILD_CHECK(p != MAP_FAILED);
	pattern_fill(p, MiB, 1);
	CHILD_CHECK(hmc_pin(fd, anon, 64 * pg, 0, &h) == 0);
	q = hmc_map(fd, (uint64_t)h << HMC_MMAP_SHIFT, 64 * pg, PROT_READ);
	CHILD_CHECK(q != MAP_FAILED);
	CHILD_CHECK(hmc_alloc(fd, 3 * pg, &h, NULL) == 0);
	raise(SIGKILL);
}

START_TEST(process_death_releases_all)
{
	run_child_killed(die_holding_everything, NULL);
	expect_no_live();
}
END_TEST

/* ---- module unload ------------------------------------------------- */

START_TEST(rmmod_refused_while_mapped)
{
	static const char *const what[] = { "an open file", "a mapping" };
	const char *ko = getenv("HMC_KO");
	int busy[2];
	uint8_t *p;
	uint64_t off;
	uint32_t h;
	int fd;

	if (!ko || !*ko)
		SKIP("HMC_KO is not set");
	fd = open_dev();
	busy[0] = delete_hmc();
	h = alloc_ok(fd, 8 * pg, &off);
	p = map_ok(fd, off, 8 * pg);
	pattern_fill(p, 8 * pg, 41);
	EXPECT_OK(hmc_free(fd, h));
	close(fd);
	busy[1] = delete_hmc();
	expect_pattern(p, 8 * pg, 41);
	ck_assert_int_eq(munmap(p, 8 * pg), 0);
	expect_rmmod_sequence(ko, busy, what, 2);
	fd = open_dev();
	close(fd);
	expect_no_live();
}
END_TEST

const struct test life_tests[] = {
	T(cycles_10000_counters_back_to_zero, 240),
	T(close_without_free_releases_all, 30),
	T(process_death_releases_all, 30),
	T(rmmod_refused_while_mapped, 60),
	{ NULL }
};
