// SPDX-License-Identifier: GPL-2.0
/*
 * Tests of hmc.ko through /dev/hmc, run as root in the test guest with the
 * module loaded. Each test is its own Check test case, run in a forked
 * process; the program prints one TAP line per test (`ok - kmod: NAME`,
 * `not ok - kmod: NAME # where: why`, `ok - kmod: NAME # SKIP why`).
 * The tests live in test_*.c by subject; this file has the runner and the
 * helpers they share.
 *
 *   test_kmod [-l] [NAME...]   run all tests, or the named ones; -l lists
 *   test_kmod --global-stats   print the global counters; fails if a live
 *                              one is not zero
 *
 * Environment: HMC_KO (the module, reloaded by the rmmod test) and
 * HMC_RXE_DEV (a soft-RoCE device for the RDMA tests).
 */
#include <grp.h>
#include <sys/ioctl.h>
#include <sys/wait.h>

#include "kmod_test.h"

size_t pg;
struct shared *sh;

void run_child(void (*fn)(void *), void *arg)
{
	pid_t pid;
	int st;

	sh->child[0] = 0;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		fn(arg);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && !WEXITSTATUS(st),
		      "helper process failed: %s (status %#x)", sh->child, st);
}

void become_nobody(rlim_t memlock)
{
	struct rlimit rl = { memlock, memlock };

	CHILD_CHECK(setrlimit(RLIMIT_MEMLOCK, &rl) == 0);
	CHILD_CHECK(setgroups(0, NULL) == 0);
	CHILD_CHECK(setgid(NOBODY) == 0);
	CHILD_CHECK(setuid(NOBODY) == 0);	/* drops every capability */
	CHILD_CHECK(hmc_open() == -EACCES);	/* really unprivileged */
}

/* ---- /dev/hmc helpers ---------------------------------------------- */

const char *const stat_names[HMC_STAT_COUNT] = {
	[HMC_STAT_BUFS_LIVE] = "BUFS_LIVE",
	[HMC_STAT_BYTES_LIVE] = "BYTES_LIVE",
	[HMC_STAT_PAGES_PINNED] = "PAGES_PINNED",
	[HMC_STAT_MAPPINGS_LIVE] = "MAPPINGS_LIVE",
	[HMC_STAT_HANDLES_LIVE] = "HANDLES_LIVE",
	[HMC_STAT_BUFS_CREATED] = "BUFS_CREATED",
	[HMC_STAT_ERRORS] = "ERRORS",
	[HMC_STAT_MEMLOCK_REFUSED] = "MEMLOCK_REFUSED",
};

const int live_stats[NR_LIVE_STATS] = {
	HMC_STAT_BUFS_LIVE, HMC_STAT_BYTES_LIVE, HMC_STAT_PAGES_PINNED,
	HMC_STAT_MAPPINGS_LIVE, HMC_STAT_HANDLES_LIVE,
};

int open_dev(void)
{
	int fd = hmc_open();

	ck_assert_msg(fd >= 0, "open %s: %s", HMC_DEVICE_PATH, strerror(-fd));
	return fd;
}

void get_stats(int fd, int global, uint64_t c[HMC_STAT_COUNT])
{
	memset(c, 0xff, HMC_STAT_COUNT * sizeof(c[0]));
	EXPECT_OK(hmc_stats(fd, global, c));
}

uint64_t stat_of(int fd, int global, int stat)
{
	uint64_t c[HMC_STAT_COUNT];

	get_stats(fd, global, c);
	return c[stat];
}

void expect_live_zero(const uint64_t *c, const char *what)
{
	size_t i;

	for (i = 0; i < NR_LIVE_STATS; i++)
		ck_assert_msg(!c[live_stats[i]], "%s %s is %llu, want 0", what,
			      stat_names[live_stats[i]],
			      (unsigned long long)c[live_stats[i]]);
}

void expect_no_live(void)
{
	uint64_t c[HMC_STAT_COUNT];
	int fd = open_dev();

	get_stats(fd, 1, c);
	close(fd);
	expect_live_zero(c, "global");
}

uint32_t alloc_ok(int fd, uint64_t size, uint64_t *offset)
{
	uint32_t handle;

	EXPECT_OK(hmc_alloc(fd, size, &handle, offset));
	ck_assert_uint_ne(handle, 0);
	return handle;
}

void *map_ok(int fd, uint64_t offset, size_t len)
{
	void *p = hmc_map(fd, offset, len, PROT_READ | PROT_WRITE);

	ck_assert_msg(p != MAP_FAILED, "mmap of /dev/hmc at %#llx: %s",
		      (unsigned long long)offset, strerror(errno));
	return p;
}

void *map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ck_assert_msg(p != MAP_FAILED, "anonymous mmap: %s", strerror(errno));
	return p;
}

void expect_pattern(const void *p, size_t len, uint64_t seed)
{
	long off = pattern_mismatch(p, len, seed);

	ck_assert_msg(off < 0, "data differs from the pattern at offset %ld",
		      off);
}

void expect_zero(const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		ck_assert_msg(!p[i], "new buffer byte %zu is %#x", i, p[i]);
}

uint64_t offset_of(int fd, uint32_t handle)
{
	struct hmc_buf_info info;

	EXPECT_OK(hmc_info(fd, handle, &info));
	return info.mmap_offset;
}

uint32_t nr_mappings(int fd, uint32_t handle)
{
	struct hmc_buf_info info;

	EXPECT_OK(hmc_info(fd, handle, &info));
	return info.nr_mappings;
}

int ioc_sized(int fd, unsigned int dir, unsigned int nr, size_t size,
	      void *arg)
{
	return hmc_ioc(fd, _IOC(dir, HMC_IOC_MAGIC, nr, size), arg);
}

_Static_assert(NR_CMDS == _IOC_NR(HMC_IOC_GET_STATS) + 1, "all_cmds[]");
const unsigned int all_cmds[NR_CMDS] = {
	HMC_IOC_GET_VERSION, HMC_IOC_BUF_ALLOC, HMC_IOC_BUF_PIN,
	HMC_IOC_BUF_FREE, HMC_IOC_BUF_INFO, HMC_IOC_GET_STATS,
};

/* ---- runner -------------------------------------------------------- */

static const struct test *const groups[] = {
	ioctl_tests, mmap_tests, pin_tests, life_tests, rdma_tests, fuzz_tests,
};
#define NR_GROUPS (sizeof(groups) / sizeof(groups[0]))

/* Runs one test in its own process and prints its TAP line. */
static int run_test(const struct test *t)
{
	Suite *s = suite_create("kmod");
	TCase *tc = tcase_create(t->name);
	TestResult *tr;
	SRunner *sr;
	int failed;

	tcase_add_test(tc, *t->fn);
	tcase_set_timeout(tc, t->timeout);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_FORK);
	sh->skip[0] = 0;
	srunner_run_all(sr, CK_SILENT);
	tr = srunner_results(sr)[0];
	failed = tr_rtype(tr) != CK_PASS;
	if (failed)
		printf("not ok - kmod: %s # %s:%d: %s\n", t->name,
		       tr_lfile(tr), tr_lno(tr), tr_msg(tr));
	else if (sh->skip[0])
		printf("ok - kmod: %s # SKIP %s\n", t->name, sh->skip);
	else
		printf("ok - kmod: %s\n", t->name);
	fflush(stdout);
	srunner_free(sr);
	return failed;
}

static int global_stats(void)
{
	uint64_t c[HMC_STAT_COUNT];
	int i, live = 0, fd = hmc_open();

	if (fd < 0 || hmc_stats(fd, 1, c)) {
		perror(HMC_DEVICE_PATH);
		return 2;
	}
	close(fd);
	for (i = 0; i < HMC_STAT_COUNT; i++)
		printf("# %s %llu\n", stat_names[i], (unsigned long long)c[i]);
	for (i = 0; i < NR_LIVE_STATS; i++)
		live |= c[live_stats[i]] != 0;
	return live;
}

static int wanted(const char *name, int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], name))
			return 1;
	return argc == 1;
}

int main(int argc, char **argv)
{
	const struct test *t;
	int ran = 0, failed = 0;
	size_t g;

	if (argc == 3 && !strcmp(argv[1], "--exec-probe"))
		return exec_probe(atoi(argv[2]));
	if (argc == 2 && !strcmp(argv[1], "--global-stats"))
		return global_stats();
	if (argc == 2 && !strcmp(argv[1], "-l")) {
		for (g = 0; g < NR_GROUPS; g++)
			for (t = groups[g]; t->name; t++)
				puts(t->name);
		return 0;
	}
	pg = sysconf(_SC_PAGESIZE);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	for (g = 0; g < NR_GROUPS; g++)
		for (t = groups[g]; t->name; t++) {
			if (!wanted(t->name, argc, argv))
				continue;
			failed += run_test(t);
			ran++;
		}
	if (!ran) {
		fprintf(stderr, "test_kmod: no such test (-l lists them)\n");
		return 2;
	}
	return failed ? 1 : 0;
}
