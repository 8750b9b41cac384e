// SPDX-License-Identifier: GPL-2.0
/*
 * What the Check programs of hmc.ko (test_kmod, test_dmabuf, test_events)
 * share: the runner, which runs each test as its own Check test case in a
 * forked process and prints one TAP line per test (`ok - PROG: NAME`,
 * `not ok - PROG: NAME # where: why`, `ok - PROG: NAME # SKIP why`), and
 * the helpers the tests use.
 *
 *   PROG [-l] [NAME...]   run all tests, or the named ones; -l lists them
 *   PROG --global-stats   print the global counters; fails if a live one
 *                         is not zero
 */
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kmod_test.h"
#include "mover/hmc_test_mover.h"

size_t pg;
struct shared *sh;

/* Runs @fn in a forked helper, which must exit 0, or die of @sig if set. */
static void run_helper(void (*fn)(void *), void *arg, int sig)
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
	if (sig)
		ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == sig,
			      "helper process: %s (status %#x)", sh->child,
			      st);
	else
		ck_assert_msg(WIFEXITED(st) && !WEXITSTATUS(st),
			      "helper process failed: %s (status %#x)",
			      sh->child, st);
}

void run_child(void (*fn)(void *), void *arg)
{
	run_helper(fn, arg, 0);
}

void run_child_killed(void (*fn)(void *), void *arg)
{
	run_helper(fn, arg, SIGKILL);
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
	[HMC_STAT_EXPORTS_LIVE] = "EXPORTS_LIVE",
	[HMC_STAT_ATTACHMENTS_LIVE] = "ATTACHMENTS_LIVE",
	[HMC_STAT_IMPORTS_LIVE] = "IMPORTS_LIVE",
	[HMC_STAT_PEERS_CONNECTED] = "PEERS_CONNECTED",
	[HMC_STAT_IMPORTS_INVALIDATED] = "IMPORTS_INVALIDATED",
	[HMC_STAT_EVENTS_SENT] = "EVENTS_SENT",
	[HMC_STAT_EVENTS_DROPPED] = "EVENTS_DROPPED",
};

const int live_stats[NR_LIVE_STATS] = {
	HMC_STAT_BUFS_LIVE, HMC_STAT_BYTES_LIVE, HMC_STAT_PAGES_PINNED,
	HMC_STAT_MAPPINGS_LIVE, HMC_STAT_HANDLES_LIVE, HMC_STAT_EXPORTS_LIVE,
	HMC_STAT_ATTACHMENTS_LIVE, HMC_STAT_IMPORTS_LIVE,
	HMC_STAT_PEERS_CONNECTED,
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

_Static_assert(NR_CMDS == _IOC_NR(HMC_IOC_PEER_STATE) + 1, "all_cmds[]");
const unsigned int all_cmds[NR_CMDS] = {
	HMC_IOC_GET_VERSION, HMC_IOC_BUF_ALLOC, HMC_IOC_BUF_PIN,
	HMC_IOC_BUF_FREE, HMC_IOC_BUF_INFO, HMC_IOC_GET_STATS,
	HMC_IOC_BUF_EXPORT, HMC_IOC_PEER_IMPORT, HMC_IOC_PEER_RELEASE,
	HMC_IOC_PEER_INFO, HMC_IOC_PEER_STATE,
};
const unsigned int ver0_sizes[NR_CMDS] = {
	HMC_VERSION_SIZE_VER0, HMC_BUF_ALLOC_SIZE_VER0, HMC_BUF_PIN_SIZE_VER0,
	HMC_BUF_FREE_SIZE_VER0, HMC_BUF_INFO_SIZE_VER0, HMC_STATS_SIZE_VER0,
	HMC_BUF_EXPORT_SIZE_VER0, HMC_PEER_IMPORT_SIZE_VER0,
	HMC_PEER_RELEASE_SIZE_VER0, HMC_PEER_INFO_SIZE_VER0,
	HMC_PEER_STATE_SIZE_VER0,
};

/* ---- module, pages --------------------------------------------------- */

int delete_hmc(void)
{
	return syscall(SYS_delete_module, "hmc", O_NONBLOCK) ? -errno : 0;
}

int load_hmc(const char *ko)
{
	int fd, ret = 0;

	if (!access("/sys/module/hmc", F_OK))
		return 0;
	fd = open(ko, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (syscall(SYS_finit_module, fd, "", 0))
		ret = -errno;
	close(fd);
	return ret;
}

void expect_rmmod_sequence(const char *ko, const int *refused,
			   const char *const *what, int n)
{
	int i, gone, reload;

	gone = delete_hmc();
	gone = gone ? gone : access(HMC_DEVICE_PATH, F_OK) ? 0 : -EEXIST;
	reload = load_hmc(ko);
	for (i = 0; i < n; i++)
		ck_assert_msg(refused[i] == -EWOULDBLOCK ||
			      refused[i] == -EBUSY, "rmmod with %s: %d",
			      what[i], refused[i]);
	ck_assert_msg(!gone, "rmmod after the last user: %d", gone);
	ck_assert_msg(!reload, "reloading %s: %s", ko, strerror(-reload));
}

int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

uint64_t page_phys(const void *addr)
{
	uint64_t entry;
	off_t off = (uintptr_t)addr / pg * sizeof(entry);
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &entry, sizeof(entry), off), sizeof(entry));
	close(fd);
	ck_assert_msg(entry >> 63, "page at %p is not present", addr);
	ck_assert_msg(entry & ((1ULL << 55) - 1), "pagemap hides the PFN");
	return (entry & ((1ULL << 55) - 1)) * pg;
}

int iommu_present(void)
{
	DIR *d = opendir("/sys/class/iommu");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n > 0;
}

/* A dma-buf of hmc_test_mover.ko, or -1 without the module. */
int mover_create(size_t len, uint64_t seed)
{
	struct hmc_test_mover_create c = { .size = len };
	int mfd = open(HMC_TEST_MOVER_PATH, O_RDWR | O_CLOEXEC);
	void *p;

	if (mfd < 0)
		return -1;
	EXPECT_OK(hmc_ioc(mfd, HMC_TEST_MOVER_CREATE, &c));
	close(mfd);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, c.fd, 0);
	ck_assert(p != MAP_FAILED);
	pattern_fill(p, len, seed);
	munmap(p, len);
	return c.fd;
}

int mover_move(int dmabuf)
{
	struct hmc_test_mover_move m = { .fd = dmabuf };
	int mfd = open(HMC_TEST_MOVER_PATH, O_RDWR | O_CLOEXEC), ret;

	ck_assert_int_ge(mfd, 0);
	ret = hmc_ioc(mfd, HMC_TEST_MOVER_MOVE, &m);
	close(mfd);
	return ret;
}

/* ---- runner -------------------------------------------------------- */

/* Runs one test in its own process and prints its TAP line. */
static int run_test(const char *prog, const struct test *t)
{
	Suite *s = suite_create(prog);
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
		printf("not ok - %s: %s # %s:%d: %s\n", prog, t->name,
		       tr_lfile(tr), tr_lno(tr), tr_msg(tr));
	else if (sh->skip[0])
		printf("ok - %s: %s # SKIP %s\n", prog, t->name, sh->skip);
	else
		printf("ok - %s: %s\n", prog, t->name);
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

int test_main(const char *prog, const struct test *const *groups,
	      size_t nr_groups, int argc, char **argv)
{
	const struct test *t;
	int ran = 0, failed = 0;
	size_t g;

	if (argc == 2 && !strcmp(argv[1], "--global-stats"))
		return global_stats();
	if (argc == 2 && !strcmp(argv[1], "-l")) {
		for (g = 0; g < nr_groups; g++)
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
	for (g = 0; g < nr_groups; g++)
		for (t = groups[g]; t->name; t++) {
			if (!wanted(t->name, argc, argv))
				continue;
			failed += run_test(prog, t);
			ran++;
		}
	if (!ran) {
		fprintf(stderr, "%s: no such test (-l lists them)\n", argv[0]);
		return 2;
	}
	return failed ? 1 : 0;
}
