// SPDX-License-Identifier: GPL-2.0
/* test_kmod: mmap of ConnBuffers, and ownership of the file. */
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#include "kmod_test.h"

/* ---- mmap ---------------------------------------------------------- */

START_TEST(mmap_pattern_through_second_mapping)
{
	size_t len = MiB + 3 * pg;
	uint8_t *a, *b;
	uint64_t off;
	uint32_t h;
	int fd = open_dev();

	h = alloc_ok(fd, len, &off);
	a = map_ok(fd, off, len);
	expect_zero(a, len);
	pattern_fill(a, len, 0x1234);
	b = map_ok(fd, off, len);
	ck_assert_ptr_ne(a, b);
	expect_pattern(b, len, 0x1234);
	pattern_fill(b, len, 0x5678);
	expect_pattern(a, len, 0x5678);
	ck_assert_int_eq(munmap(a, len), 0);
	expect_pattern(b, len, 0x5678);
	ck_assert_int_eq(munmap(b, len), 0);
	EXPECT_OK(hmc_free(fd, h));
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(mmap_subrange)
{
	size_t len = 16 * pg;
	uint8_t *all, *sub;
	uint64_t off;
	uint32_t h;
	int fd = open_dev();

	h = alloc_ok(fd, len, &off);
	all = map_ok(fd, off, len);
	pattern_fill(all, len, 77);
	sub = map_ok(fd, off + 5 * pg, 4 * pg);
	ck_assert_int_eq(memcmp(sub, all + 5 * pg, 4 * pg), 0);
	pattern_fill(sub, 4 * pg, 78);
	expect_pattern(all + 5 * pg, 4 * pg, 78);
	ck_assert_int_eq(munmap(sub, 4 * pg), 0);
	/* The last page alone. */
	sub = map_ok(fd, off + 15 * pg, pg);
	ck_assert_int_eq(memcmp(sub, all + 15 * pg, pg), 0);
	ck_assert_int_eq(munmap(sub, pg), 0);
	ck_assert_int_eq(munmap(all, len), 0);
	EXPECT_OK(hmc_free(fd, h));
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(mmap_private_refused)
{
	uint64_t off;
	uint32_t h;
	int fd = open_dev();

	h = alloc_ok(fd, 2 * pg, &off);
	ck_assert_ptr_eq(mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE, fd, off), MAP_FAILED);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_eq(mmap(NULL, pg, PROT_READ, MAP_PRIVATE, fd, off),
			 MAP_FAILED);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_uint_eq(nr_mappings(fd, h), 0);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_ERRORS), 2);
	EXPECT_OK(hmc_free(fd, h));
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(mmap_out_of_range_refused)
{
	uint64_t off;
	uint32_t h;
	void *p;
	int fd = open_dev();

	h = alloc_ok(fd, 4 * pg, &off);
#define MAP_FAILS(o, len) do {						\
	ck_assert_ptr_eq(hmc_map(fd, o, len, PROT_READ), MAP_FAILED);	\
	ck_assert_int_eq(errno, EINVAL);				\
} while (0)
	MAP_FAILS(off, 5 * pg);			/* longer than the buffer */
	MAP_FAILS(off + 4 * pg, pg);		/* starts past its end */
	MAP_FAILS(off + 3 * pg, 2 * pg);	/* runs past its end */
	MAP_FAILS(off + (1ULL << (HMC_MMAP_SHIFT - 1)), pg);
	MAP_FAILS(0, pg);			/* handle 0 */
	MAP_FAILS(off + (1ULL << HMC_MMAP_SHIFT), pg);	/* unknown handle */
	MAP_FAILS((1ULL << 62), pg);
#undef MAP_FAILS
	ck_assert_uint_eq(nr_mappings(fd, h), 0);
	/* A mapping cannot grow (VM_DONTEXPAND). */
	p = map_ok(fd, off, pg);
	ck_assert_ptr_eq(mremap(p, pg, 2 * pg, 0), MAP_FAILED);
	ck_assert_ptr_eq(mremap(p, pg, 2 * pg, MREMAP_MAYMOVE), MAP_FAILED);
	ck_assert_int_eq(munmap(p, pg), 0);
	EXPECT_OK(hmc_free(fd, h));
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(mmap_outlives_free_and_close)
{
	size_t len = 64 * pg;
	uint64_t g[HMC_STAT_COUNT];
	uint8_t *p;
	uint64_t off;
	uint32_t h;
	int fd = open_dev(), other;

	h = alloc_ok(fd, len, &off);
	p = map_ok(fd, off, len);
	pattern_fill(p, len, 99);
	EXPECT_OK(hmc_free(fd, h));
	EXPECT_ERR(hmc_info(fd, h, &(struct hmc_buf_info){ 0 }), ENOENT);
	expect_pattern(p, len, 99);
	close(fd);
	expect_pattern(p, len, 99);
	pattern_fill(p, len, 100);
	expect_pattern(p, len, 100);

	other = open_dev();
	get_stats(other, 1, g);
	ck_assert_uint_eq(g[HMC_STAT_BUFS_LIVE], 1);
	ck_assert_uint_eq(g[HMC_STAT_PAGES_PINNED], 64);
	ck_assert_uint_eq(g[HMC_STAT_MAPPINGS_LIVE], 1);
	ck_assert_uint_eq(g[HMC_STAT_HANDLES_LIVE], 0);
	close(other);
	ck_assert_int_eq(munmap(p, len), 0);
	expect_no_live();
}
END_TEST

START_TEST(mmap_dontneed_keeps_data)
{
	size_t len = 32 * pg;
	uint8_t *p;
	uint64_t off;
	uint32_t h;
	int fd = open_dev();

	h = alloc_ok(fd, len, &off);
	p = map_ok(fd, off, len);
	pattern_fill(p, len, 5);
	/* Zapped PTEs fault back in to the same pages, never to new ones. */
	ck_assert_int_eq(madvise(p, len, MADV_DONTNEED), 0);
	expect_pattern(p, len, 5);
	pattern_fill(p, len, 6);
	ck_assert_int_eq(madvise(p + pg, pg, MADV_DONTNEED), 0);
	expect_pattern(p, len, 6);
	ck_assert_int_eq(munmap(p, len), 0);
	p = map_ok(fd, off, len);
	expect_pattern(p, len, 6);
	ck_assert_int_eq(munmap(p, len), 0);
	EXPECT_OK(hmc_free(fd, h));
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(mmap_not_inherited_by_fork)
{
	volatile uint8_t *p;
	uint64_t off;
	uint32_t h;
	pid_t pid;
	int st, fd = open_dev();

	h = alloc_ok(fd, pg, &off);
	p = map_ok(fd, off, pg);
	p[0] = 1;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		signal(SIGSEGV, SIG_DFL);
		(void)p[0];	/* VM_DONTCOPY: no mapping here */
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV,
		      "the child could read the mapping (status %#x)", st);
	ck_assert_uint_eq(nr_mappings(fd, h), 1);
	ck_assert_int_eq(munmap((void *)p, pg), 0);
	EXPECT_OK(hmc_free(fd, h));
	close(fd);
	expect_no_live();
}
END_TEST

/* ---- ownership ----------------------------------------------------- */

struct owner_args {
	int fd;
	uint32_t handle;
	uint64_t offset;
};

static void child_uses_parent_fd(void *arg)
{
	struct owner_args *o = arg;
	struct hmc_version v;
	struct hmc_buf_info info;
	uint64_t c[HMC_STAT_COUNT];
	uint32_t h;

	CHILD_CHECK(hmc_ioc(o->fd, HMC_IOC_GET_VERSION, &v) == -EACCES);
	CHILD_CHECK(hmc_alloc(o->fd, pg, &h, NULL) == -EACCES);
	CHILD_CHECK(hmc_info(o->fd, o->handle, &info) == -EACCES);
	CHILD_CHECK(hmc_stats(o->fd, 1, c) == -EACCES);
	CHILD_CHECK(hmc_free(o->fd, o->handle) == -EACCES);
	CHILD_CHECK(hmc_ioc(o->fd, _IO(HMC_IOC_MAGIC, 0x77), NULL) == -EACCES);
	CHILD_CHECK(hmc_map(o->fd, o->offset, pg, PROT_READ) == MAP_FAILED);
	CHILD_CHECK(errno == EACCES);
	CHILD_CHECK(mmap(NULL, pg, PROT_READ, MAP_SHARED, o->fd, o->offset) ==
		    MAP_FAILED && errno == EACCES);
	close(o->fd);
}

START_TEST(fork_child_gets_eacces)
{
	struct owner_args o;
	uint8_t *p;
	int fd = open_dev();

	o.fd = fd;
	o.handle = alloc_ok(fd, 2 * pg, &o.offset);
	p = map_ok(fd, o.offset, 2 * pg);
	pattern_fill(p, 2 * pg, 3);
	run_child(child_uses_parent_fd, &o);
	/* The child's failures and close() left the parent's file intact. */
	ck_assert_uint_eq(nr_mappings(fd, o.handle), 1);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_ERRORS), 8);
	expect_pattern(p, 2 * pg, 3);
	ck_assert_int_eq(munmap(p, 2 * pg), 0);
	EXPECT_OK(hmc_free(fd, o.handle));
	close(fd);
	expect_no_live();
}
END_TEST

/* After exec the same process (same tgid) has a new mm: no access. */
int exec_probe(int fd)
{
	struct hmc_version v;

	if (hmc_ioc(fd, HMC_IOC_GET_VERSION, &v) != -EACCES)
		return 2;
	if (hmc_map(fd, 1ULL << HMC_MMAP_SHIFT, 4096, PROT_READ) !=
	    MAP_FAILED || errno != EACCES)
		return 3;
	return 0;
}

START_TEST(exec_loses_access)
{
	char arg[16];
	uint32_t h;
	pid_t pid;
	int st, fd = open_dev();

	h = alloc_ok(fd, pg, NULL);
	ck_assert_uint_eq(h, 1);	/* the offset exec_probe maps */
	ck_assert_int_eq(fcntl(fd, F_SETFD, 0), 0);
	snprintf(arg, sizeof(arg), "%d", fd);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		execl("/proc/self/exe", "test_kmod", "--exec-probe", arg,
		      (char *)NULL);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && !WEXITSTATUS(st),
		      "exec probe status %#x", st);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_ERRORS), 2);
	EXPECT_OK(hmc_free(fd, h));
	close(fd);
	expect_no_live();
}
END_TEST

const struct test mmap_tests[] = {
	T(mmap_pattern_through_second_mapping, 60),
	T(mmap_subrange, 30),
	T(mmap_private_refused, 30),
	T(mmap_out_of_range_refused, 30),
	T(mmap_outlives_free_and_close, 30),
	T(mmap_dontneed_keeps_data, 30),
	T(mmap_not_inherited_by_fork, 30),
	T(fork_child_gets_eacces, 30),
	T(exec_loses_access, 30),
	{ NULL }
};
