// SPDX-License-Identifier: GPL-2.0
/* test_kmod: BUF_PIN of user memory, and RLIMIT_MEMLOCK charging. */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "kmod_test.h"

/* ---- BUF_PIN ------------------------------------------------------- */

START_TEST(pin_anonymous_both_directions)
{
	size_t len = 64 * pg;
	long pin_before = vm_pinned_kib();
	struct hmc_buf_info info;
	uint8_t *anon = map_anon(len), *dev;
	uint32_t h;
	int fd = open_dev();

	pattern_fill(anon, len, 11);
	EXPECT_OK(hmc_pin(fd, anon, len, 0, &h));
	ck_assert_int_eq(vm_pinned_kib(), pin_before + (long)(len / KiB));
	EXPECT_OK(hmc_info(fd, h, &info));
	ck_assert_uint_eq(info.type, HMC_BUF_TYPE_PINNED);
	ck_assert_uint_eq(info.size, len);
	ck_assert_uint_eq(info.mmap_offset, (uint64_t)h << HMC_MMAP_SHIFT);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_PAGES_PINNED), 64);

	dev = map_ok(fd, info.mmap_offset, len);
	expect_pattern(dev, len, 11);
	pattern_fill(dev, len, 12);		/* /dev/hmc -> anon */
	expect_pattern(anon, len, 12);
	pattern_fill(anon, len, 13);		/* anon -> /dev/hmc */
	expect_pattern(dev, len, 13);

	/* The pin keeps the pages when the original range goes away. */
	ck_assert_int_eq(munmap(anon, len), 0);
	expect_pattern(dev, len, 13);
	EXPECT_OK(hmc_free(fd, h));
	expect_pattern(dev, len, 13);
	ck_assert_int_eq(munmap(dev, len), 0);
	ck_assert_int_eq(vm_pinned_kib(), pin_before);
	close(fd);
	expect_no_live();
}
END_TEST

/* As libhmc makes its memfd ConnBuffers: sealed, shared, mlocked, DONTFORK. */
START_TEST(pin_memfd)
{
	size_t len = 32 * pg;
	uint8_t *shared, *dev, *copy = malloc(len);
	uint64_t off;
	uint32_t h;
	int mfd, fd = open_dev();

	mfd = memfd_create("hmc-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	ck_assert_int_ge(mfd, 0);
	ck_assert_int_eq(ftruncate(mfd, len), 0);
	ck_assert_int_eq(fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
			       F_SEAL_SEAL), 0);
	shared = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	ck_assert_ptr_ne(shared, MAP_FAILED);
	ck_assert_int_eq(madvise(shared, len, MADV_DONTFORK), 0);
	ck_assert_int_eq(mlock(shared, len), 0);
	pattern_fill(shared, len, 21);
	EXPECT_OK(hmc_pin(fd, shared, len, 0, &h));
	off = offset_of(fd, h);
	dev = map_ok(fd, off, len);
	expect_pattern(dev, len, 21);
	pattern_fill(dev, len, 22);
	/* Written through /dev/hmc, read back from the memfd's page cache. */
	ck_assert_int_eq(pread(mfd, copy, len, 0), (ssize_t)len);
	expect_pattern(copy, len, 22);
	expect_pattern(shared, len, 22);
	ck_assert_int_eq(munmap(dev, len), 0);
	EXPECT_OK(hmc_free(fd, h));
	ck_assert_int_eq(munmap(shared, len), 0);
	close(mfd);
	free(copy);
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(pin_readonly)
{
	size_t len = 8 * pg;
	uint8_t *anon = map_anon(len), *dev;
	uint64_t off;
	uint32_t h;
	int fd = open_dev();

	pattern_fill(anon, len, 31);
	ck_assert_int_eq(mprotect(anon, len, PROT_READ), 0);
	EXPECT_ERR(hmc_pin(fd, anon, len, 0, &h), EFAULT);	/* read-only */
	EXPECT_OK(hmc_pin(fd, anon, len, HMC_BUF_PIN_F_READONLY, &h));
	off = offset_of(fd, h);
	ck_assert_ptr_eq(hmc_map(fd, off, len, PROT_READ | PROT_WRITE),
			 MAP_FAILED);
	ck_assert_int_eq(errno, EACCES);
	dev = hmc_map(fd, off, len, PROT_READ);
	ck_assert_ptr_ne(dev, MAP_FAILED);
	expect_pattern(dev, len, 31);
	ck_assert_int_ne(mprotect(dev, len, PROT_READ | PROT_WRITE), 0);
	ck_assert_int_eq(munmap(dev, len), 0);
	EXPECT_OK(hmc_free(fd, h));
	ck_assert_int_eq(munmap(anon, len), 0);
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(pin_file_backed_refused)
{
	long pin_before = vm_pinned_kib();
	struct statfs sfs;
	struct stat st;
	uint8_t *priv, *shared;
	uint32_t h;
	int exe, fd = open_dev();

	/* The test binary lives on the 9p share: a real file system. */
	exe = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(exe, 0);
	ck_assert_int_eq(fstatfs(exe, &sfs), 0);
	ck_assert_msg(sfs.f_type != TMPFS_MAGIC, "the test binary is on tmpfs");
	ck_assert_int_eq(fstat(exe, &st), 0);
	ck_assert_int_ge(st.st_size, 2 * pg);
	priv = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE, exe, 0);
	ck_assert_ptr_ne(priv, MAP_FAILED);
	shared = mmap(NULL, 2 * pg, PROT_READ, MAP_SHARED, exe, 0);
	ck_assert_ptr_ne(shared, MAP_FAILED);

	EXPECT_ERR(hmc_pin(fd, priv, 2 * pg, 0, &h), EINVAL);
	EXPECT_ERR(hmc_pin(fd, priv, 2 * pg, HMC_BUF_PIN_F_READONLY, &h),
		   EINVAL);
	EXPECT_ERR(hmc_pin(fd, shared, 2 * pg, HMC_BUF_PIN_F_READONLY, &h),
		   EINVAL);
	ck_assert_int_eq(vm_pinned_kib(), pin_before);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_BUFS_CREATED), 0);
	munmap(priv, 2 * pg);
	munmap(shared, 2 * pg);
	close(exe);
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(pin_device_mappings_refused)
{
	uint8_t *anon = map_anon(4 * pg), *kmap, *pmap;
	uint64_t off;
	uint32_t hk, hp, h;
	int fd = open_dev();

	/* A mapping of a kernel ConnBuffer and one of a pinned buffer. */
	hk = alloc_ok(fd, 4 * pg, &off);
	kmap = map_ok(fd, off, 4 * pg);
	EXPECT_OK(hmc_pin(fd, anon, 4 * pg, 0, &hp));
	pmap = map_ok(fd, offset_of(fd, hp), 4 * pg);
	EXPECT_ERR(hmc_pin(fd, kmap, 4 * pg, 0, &h), EINVAL);
	EXPECT_ERR(hmc_pin(fd, pmap, 4 * pg, 0, &h), EINVAL);
	EXPECT_ERR(hmc_pin(fd, pmap, pg, HMC_BUF_PIN_F_READONLY, &h), EINVAL);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_BUFS_LIVE), 2);
	munmap(kmap, 4 * pg);
	munmap(pmap, 4 * pg);
	munmap(anon, 4 * pg);
	EXPECT_OK(hmc_free(fd, hk));
	EXPECT_OK(hmc_free(fd, hp));
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(pin_unmapped_and_mixed_ranges)
{
	uint8_t *anon = map_anon(8 * pg);
	uint32_t h;
	int exe, fd = open_dev();

	/* A hole in the middle, then at the end. */
	ck_assert_int_eq(munmap(anon + 4 * pg, pg), 0);
	EXPECT_ERR(hmc_pin(fd, anon, 8 * pg, 0, &h), EFAULT);
	EXPECT_ERR(hmc_pin(fd, anon + 4 * pg, pg, 0, &h), EFAULT);
	EXPECT_OK(hmc_pin(fd, anon, 4 * pg, 0, &h));
	EXPECT_OK(hmc_free(fd, h));
	/* Anonymous memory followed by a file mapping. */
	exe = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(exe, 0);
	ck_assert_ptr_ne(mmap(anon + 4 * pg, pg, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_FIXED, exe, 0), MAP_FAILED);
	EXPECT_ERR(hmc_pin(fd, anon + 3 * pg, 2 * pg, 0, &h), EINVAL);
	EXPECT_ERR(hmc_pin(fd, (void *)0x1000, pg, 0, &h), EFAULT);
	EXPECT_ERR(hmc_pin(fd, (void *)0xffffffff81000000UL, pg, 0, &h),
		   EFAULT);
	EXPECT_ERR(hmc_pin(fd, (void *)(UINT64_MAX & ~(pg - 1)), 2 * pg, 0,
			   &h), EFAULT);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_BUFS_CREATED), 1);
	munmap(anon, 8 * pg);
	close(exe);
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(pin_unaligned_and_bad_args_refused)
{
	uint8_t *anon = map_anon(4 * pg);
	struct hmc_buf_pin p;
	uint32_t h;
	int fd = open_dev();

	EXPECT_ERR(hmc_pin(fd, anon + 1, pg, 0, &h), EINVAL);
	EXPECT_ERR(hmc_pin(fd, anon + pg / 2, pg, 0, &h), EINVAL);
	EXPECT_ERR(hmc_pin(fd, anon, 100, 0, &h), EINVAL);
	EXPECT_ERR(hmc_pin(fd, anon, pg + 1, 0, &h), EINVAL);
	EXPECT_ERR(hmc_pin(fd, anon, 0, 0, &h), EINVAL);
	EXPECT_ERR(hmc_pin(fd, anon, HMC_BUF_MAX_SIZE + pg, 0, &h), EINVAL);
	EXPECT_ERR(hmc_pin(fd, anon, pg, 2, &h), EINVAL);
	EXPECT_ERR(hmc_pin(fd, anon, pg, 1U << 31, &h), EINVAL);
	p = (struct hmc_buf_pin){ .addr = (uintptr_t)anon, .size = pg };
	p.reserved[0] = 1;
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_BUF_PIN, &p), EINVAL);
	p.reserved[0] = 0;
	p.reserved[1] = 1;
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_BUF_PIN, &p), EINVAL);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_BUFS_CREATED), 0);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_ERRORS), 10);
	munmap(anon, 4 * pg);
	close(fd);
	expect_no_live();
}
END_TEST

/* ---- memlock ------------------------------------------------------- */

static void memlock_as_nobody(void *arg)
{
	uint64_t c[HMC_STAT_COUNT], g[HMC_STAT_COUNT];
	uint8_t *anon;
	uint32_t h1, h2, h3;
	long pin0;
	int fd = hmc_open();

	CHILD_CHECK(fd >= 0);
	become_nobody(64 * KiB);
	pin0 = vm_pinned_kib();
	anon = mmap(NULL, 64 * KiB, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHILD_CHECK(anon != MAP_FAILED);

	CHILD_CHECK(hmc_alloc(fd, 16 * KiB, &h1, NULL) == 0);
	CHILD_CHECK(hmc_alloc(fd, 48 * KiB, &h2, NULL) == 0);
	CHILD_CHECK(vm_pinned_kib() == pin0 + 64);
	/* At the limit: one more page is refused, for either kind. */
	CHILD_CHECK(hmc_alloc(fd, 4 * KiB, &h3, NULL) == -ENOMEM);
	CHILD_CHECK(hmc_pin(fd, anon, 4 * KiB, 0, &h3) == -ENOMEM);
	CHILD_CHECK(hmc_alloc(fd, MiB, &h3, NULL) == -ENOMEM);
	CHILD_CHECK(hmc_stats(fd, 0, c) == 0);
	CHILD_CHECK(c[HMC_STAT_MEMLOCK_REFUSED] == 3);
	CHILD_CHECK(c[HMC_STAT_BUFS_LIVE] == 2);
	CHILD_CHECK(c[HMC_STAT_PAGES_PINNED] == 64 * KiB / pg);
	CHILD_CHECK(hmc_stats(fd, 1, g) == 0);
	CHILD_CHECK(g[HMC_STAT_MEMLOCK_REFUSED] >= 3);
	CHILD_CHECK(vm_pinned_kib() == pin0 + 64);
	/* Freeing gives the room back. */
	CHILD_CHECK(hmc_free(fd, h1) == 0);
	CHILD_CHECK(vm_pinned_kib() == pin0 + 48);
	CHILD_CHECK(hmc_pin(fd, anon, 16 * KiB, 0, &h3) == 0);
	CHILD_CHECK(hmc_free(fd, h3) == 0);
	CHILD_CHECK(hmc_free(fd, h2) == 0);
	CHILD_CHECK(vm_pinned_kib() == pin0);
	close(fd);
}

START_TEST(memlock_limit_unprivileged)
{
	run_child(memlock_as_nobody, NULL);
	expect_no_live();
}
END_TEST

START_TEST(memlock_cap_ipc_lock_exceeds_limit)
{
	struct rlimit rl = { 64 * KiB, 64 * KiB };
	long pin0 = vm_pinned_kib();
	uint8_t *anon = map_anon(MiB);
	uint32_t h1, h2;
	int fd = open_dev();

	memset(anon, 1, MiB);
	ck_assert_int_eq(setrlimit(RLIMIT_MEMLOCK, &rl), 0);
	EXPECT_OK(hmc_alloc(fd, MiB, &h1, NULL));
	EXPECT_OK(hmc_pin(fd, anon, MiB, 0, &h2));
	/* Charged all the same, as for RDMA memory regions. */
	ck_assert_int_eq(vm_pinned_kib(), pin0 + 2048);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_MEMLOCK_REFUSED), 0);
	EXPECT_OK(hmc_free(fd, h1));
	EXPECT_OK(hmc_free(fd, h2));
	ck_assert_int_eq(vm_pinned_kib(), pin0);
	munmap(anon, MiB);
	close(fd);
	expect_no_live();
}
END_TEST

const struct test pin_tests[] = {
	T(pin_anonymous_both_directions, 30),
	T(pin_memfd, 30),
	T(pin_readonly, 30),
	T(pin_file_backed_refused, 30),
	T(pin_device_mappings_refused, 30),
	T(pin_unmapped_and_mixed_ranges, 30),
	T(pin_unaligned_and_bad_args_refused, 30),
	T(memlock_limit_unprivileged, 30),
	T(memlock_cap_ipc_lock_exceeds_limit, 30),
	{ NULL }
};
