// SPDX-License-Identifier: GPL-2.0
/* test_dmabuf: BUF_EXPORT, mapping the dma-buf, its lifetime. */
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <linux/dma-buf.h>

#include "kmod_test.h"

static int export_ok(int fd, uint32_t h, uint32_t flags, uint64_t offset,
		     uint64_t size)
{
	int dmabuf;

	EXPECT_OK(hmc_export(fd, h, flags, offset, size, &dmabuf));
	ck_assert_int_ge(dmabuf, 0);
	return dmabuf;
}

static int dmabuf_sync(int dmabuf, uint64_t flags)
{
	struct dma_buf_sync sync = { .flags = flags };

	return ioctl(dmabuf, DMA_BUF_IOCTL_SYNC, &sync) ? -errno : 0;
}

/* ---- export and map -------------------------------------------------- */

START_TEST(export_mmap_whole_buffer)
{
	size_t len = MiB + 3 * pg;
	uint64_t off, c[HMC_STAT_COUNT];
	uint8_t *p, *d;
	uint32_t h;
	int dmabuf, fd = open_dev();

	h = alloc_ok(fd, len, &off);
	p = map_ok(fd, off, len);
	pattern_fill(p, len, 0xd0d0);
	dmabuf = export_ok(fd, h, HMC_BUF_EXPORT_F_RDWR |
			   HMC_BUF_EXPORT_F_CLOEXEC, 0, 0);
	ck_assert_int_eq(fcntl(dmabuf, F_GETFD), FD_CLOEXEC);
	ck_assert_int_eq(fcntl(dmabuf, F_GETFL) & O_ACCMODE, O_RDWR);
	ck_assert_int_eq(lseek(dmabuf, 0, SEEK_END), (off_t)len);

	d = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, dmabuf, 0);
	ck_assert_msg(d != MAP_FAILED, "mmap of the dma-buf: %s",
		      strerror(errno));
	EXPECT_OK(dmabuf_sync(dmabuf, DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ));
	expect_pattern(d, len, 0xd0d0);
	EXPECT_OK(dmabuf_sync(dmabuf, DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ));
	/* The same pages both ways. */
	EXPECT_OK(dmabuf_sync(dmabuf, DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW));
	pattern_fill(d, len, 0xe1e1);
	EXPECT_OK(dmabuf_sync(dmabuf, DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW));
	expect_pattern(p, len, 0xe1e1);
	ck_assert_uint_eq(nr_mappings(fd, h), 2);

	get_stats(fd, 0, c);
	ck_assert_uint_eq(c[HMC_STAT_EXPORTS_LIVE], 1);
	ck_assert_uint_eq(c[HMC_STAT_ATTACHMENTS_LIVE], 0);
	ck_assert_uint_eq(c[HMC_STAT_MAPPINGS_LIVE], 2);
	close(dmabuf);
	/* The mapping holds the dma-buf. */
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_EXPORTS_LIVE), 1);
	ck_assert_int_eq(munmap(d, len), 0);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_EXPORTS_LIVE), 0);
	ck_assert_int_eq(munmap(p, len), 0);
	EXPECT_OK(hmc_free(fd, h));
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(export_part)
{
	size_t len = 16 * pg;
	uint8_t *p, *d;
	uint64_t off;
	uint32_t h;
	int dmabuf, fd = open_dev();

	h = alloc_ok(fd, len, &off);
	p = map_ok(fd, off, len);
	pattern_fill(p, len, 77);

	dmabuf = export_ok(fd, h, HMC_BUF_EXPORT_F_RDWR, 3 * pg, 5 * pg);
	ck_assert_int_eq(fcntl(dmabuf, F_GETFD), 0);
	ck_assert_int_eq(lseek(dmabuf, 0, SEEK_END), (off_t)(5 * pg));
	d = mmap(NULL, 5 * pg, PROT_READ, MAP_SHARED, dmabuf, 0);
	ck_assert(d != MAP_FAILED);
	ck_assert_int_eq(memcmp(d, p + 3 * pg, 5 * pg), 0);
	ck_assert_int_eq(munmap(d, 5 * pg), 0);
	/* Offsets into the part; nothing past its end. */
	d = mmap(NULL, 3 * pg, PROT_READ, MAP_SHARED, dmabuf, 2 * pg);
	ck_assert(d != MAP_FAILED);
	ck_assert_int_eq(memcmp(d, p + 5 * pg, 3 * pg), 0);
	ck_assert_int_eq(munmap(d, 3 * pg), 0);
	ck_assert(mmap(NULL, 4 * pg, PROT_READ, MAP_SHARED, dmabuf,
		       2 * pg) == MAP_FAILED);
	ck_assert(mmap(NULL, 6 * pg, PROT_READ, MAP_SHARED, dmabuf, 0) ==
		  MAP_FAILED);
	/* Private mappings would copy on write: refused. */
	ck_assert(mmap(NULL, pg, PROT_READ, MAP_PRIVATE, dmabuf, 0) ==
		  MAP_FAILED);
	ck_assert_int_eq(errno, EINVAL);
	close(dmabuf);

	/* Size 0: up to the end. */
	dmabuf = export_ok(fd, h, 0, 10 * pg, 0);
	ck_assert_int_eq(lseek(dmabuf, 0, SEEK_END), (off_t)(6 * pg));
	d = mmap(NULL, 6 * pg, PROT_READ, MAP_SHARED, dmabuf, 0);
	ck_assert(d != MAP_FAILED);
	ck_assert_int_eq(memcmp(d, p + 10 * pg, 6 * pg), 0);
	ck_assert_int_eq(munmap(d, 6 * pg), 0);
	close(dmabuf);

	ck_assert_int_eq(munmap(p, len), 0);
	EXPECT_OK(hmc_free(fd, h));
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(export_errors)
{
	struct hmc_buf_export e;
	uint32_t h, gone;
	int fds, dmabuf, fd = open_dev();

	h = alloc_ok(fd, 4 * pg, NULL);
	gone = alloc_ok(fd, pg, NULL);
	EXPECT_OK(hmc_free(fd, gone));
	fds = count_fds();
#define TRY_EXPORT(field, value, err) do {				\
	memset(&e, 0, sizeof(e));					\
	e.handle = h;							\
	e.field = value;						\
	e.fd = -7;							\
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_BUF_EXPORT, &e), err);		\
	ck_assert_int_eq(e.fd, -7);					\
} while (0)
	TRY_EXPORT(flags, 4, EINVAL);
	TRY_EXPORT(flags, 1U << 31, EINVAL);
	TRY_EXPORT(pad, 1, EINVAL);
	TRY_EXPORT(reserved[0], 1, EINVAL);
	TRY_EXPORT(reserved[1], 1ULL << 63, EINVAL);
	TRY_EXPORT(offset, 1, EINVAL);
	TRY_EXPORT(offset, pg - 1, EINVAL);
	TRY_EXPORT(size, pg + 1, EINVAL);
	TRY_EXPORT(offset, 4 * pg, EINVAL);		/* at the end */
	TRY_EXPORT(offset, 1ULL << 62, EINVAL);
	TRY_EXPORT(size, 5 * pg, EINVAL);		/* past the end */
	TRY_EXPORT(size, ~0ULL & ~(uint64_t)(pg - 1), EINVAL);
	TRY_EXPORT(handle, 0, ENOENT);
	TRY_EXPORT(handle, h + 7, ENOENT);
	TRY_EXPORT(handle, gone, ENOENT);
	TRY_EXPORT(handle, ~0U, ENOENT);
#undef TRY_EXPORT
	/* offset + size wraps around */
	memset(&e, 0, sizeof(e));
	e.handle = h;
	e.offset = 2 * pg;
	e.size = -(uint64_t)pg;
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_BUF_EXPORT, &e), EINVAL);
	ck_assert_int_eq(count_fds(), fds);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_EXPORTS_LIVE), 0);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_ERRORS), 17);

	/* The largest part is the whole buffer. */
	dmabuf = export_ok(fd, h, 0, 0, 4 * pg);
	close(dmabuf);
	EXPECT_OK(hmc_free(fd, h));
	close(fd);
	expect_no_live();
}
END_TEST

/* A valid request whose result cannot be written: no fd, no dma-buf. */
START_TEST(export_result_not_writable)
{
	struct hmc_buf_export *e;
	uint8_t *ro;
	uint32_t h;
	int fds, fd = open_dev();

	h = alloc_ok(fd, pg, NULL);
	ro = map_anon(pg);
	e = (void *)ro;
	e->handle = h;
	e->flags = HMC_BUF_EXPORT_F_RDWR;
	ck_assert_int_eq(mprotect(ro, pg, PROT_READ), 0);
	fds = count_fds();
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_BUF_EXPORT, e), EFAULT);
	ck_assert_int_eq(count_fds(), fds);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_EXPORTS_LIVE), 0);
	EXPECT_OK(hmc_free(fd, h));
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_BUFS_LIVE), 0);
	munmap(ro, pg);
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(export_read_only)
{
	size_t len = 8 * pg;
	uint8_t *p, *d, *anon;
	uint64_t off;
	uint32_t h, ro;
	int dmabuf, fd = open_dev();

	h = alloc_ok(fd, len, &off);
	p = map_ok(fd, off, len);
	pattern_fill(p, len, 5);
	dmabuf = export_ok(fd, h, 0, 0, 0);
	ck_assert_int_eq(fcntl(dmabuf, F_GETFL) & O_ACCMODE, O_RDONLY);
	ck_assert(mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, dmabuf,
		       0) == MAP_FAILED);
	ck_assert_int_eq(errno, EACCES);
	d = mmap(NULL, len, PROT_READ, MAP_SHARED, dmabuf, 0);
	ck_assert(d != MAP_FAILED);
	expect_pattern(d, len, 5);
	ck_assert_int_eq(mprotect(d, len, PROT_READ | PROT_WRITE), -1);
	ck_assert_int_eq(errno, EACCES);
	ck_assert_int_eq(munmap(d, len), 0);
	close(dmabuf);

	/* A buffer pinned read-only exports read-only only. */
	anon = map_anon(len);
	pattern_fill(anon, len, 6);
	EXPECT_OK(hmc_pin(fd, anon, len, HMC_BUF_PIN_F_READONLY, &ro));
	EXPECT_ERR(hmc_export(fd, ro, HMC_BUF_EXPORT_F_RDWR, 0, 0, &dmabuf),
		   EACCES);
	dmabuf = export_ok(fd, ro, 0, 0, 0);
	d = mmap(NULL, len, PROT_READ, MAP_SHARED, dmabuf, 0);
	ck_assert(d != MAP_FAILED);
	expect_pattern(d, len, 6);
	ck_assert_int_eq(munmap(d, len), 0);
	close(dmabuf);

	EXPECT_OK(hmc_free(fd, ro));
	EXPECT_OK(hmc_free(fd, h));
	munmap(anon, len);
	munmap(p, len);
	close(fd);
	expect_no_live();
}
END_TEST

/* User memory: the dma-buf maps the very pages of the pinned range. */
START_TEST(export_pinned_user_memory)
{
	size_t len = 64 * pg;
	uint8_t *anon = map_anon(len), *d;
	uint32_t h;
	int dmabuf, fd = open_dev();

	pattern_fill(anon, len, 0xabc);
	EXPECT_OK(hmc_pin(fd, anon, len, 0, &h));
	dmabuf = export_ok(fd, h, HMC_BUF_EXPORT_F_RDWR, 4 * pg, 32 * pg);
	d = mmap(NULL, 32 * pg, PROT_READ | PROT_WRITE, MAP_SHARED, dmabuf, 0);
	ck_assert_msg(d != MAP_FAILED, "mmap: %s", strerror(errno));
	ck_assert_int_eq(memcmp(d, anon + 4 * pg, 32 * pg), 0);
	pattern_fill(d, 32 * pg, 0xdef);
	expect_pattern(anon + 4 * pg, 32 * pg, 0xdef);
	ck_assert_int_eq(munmap(d, 32 * pg), 0);
	close(dmabuf);
	EXPECT_OK(hmc_free(fd, h));
	munmap(anon, len);
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(export_sync_flags)
{
	uint32_t h;
	int dmabuf, fd = open_dev();

	h = alloc_ok(fd, pg, NULL);
	dmabuf = export_ok(fd, h, HMC_BUF_EXPORT_F_RDWR, 0, 0);
	EXPECT_OK(dmabuf_sync(dmabuf, DMA_BUF_SYNC_START | DMA_BUF_SYNC_WRITE));
	EXPECT_OK(dmabuf_sync(dmabuf, DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE));
	EXPECT_ERR(dmabuf_sync(dmabuf, 0x8 | DMA_BUF_SYNC_RW), EINVAL);
	EXPECT_ERR(dmabuf_sync(dmabuf, DMA_BUF_SYNC_START), EINVAL);
	close(dmabuf);
	EXPECT_OK(hmc_free(fd, h));
	close(fd);
	expect_no_live();
}
END_TEST

/* ---- lifetime ------------------------------------------------------- */

START_TEST(export_outlives_handle_and_file)
{
	size_t len = 32 * pg;
	uint64_t off, c[HMC_STAT_COUNT];
	uint8_t *p, *d;
	uint32_t h;
	int dmabuf, fd = open_dev();

	h = alloc_ok(fd, len, &off);
	p = map_ok(fd, off, len);
	pattern_fill(p, len, 31);
	ck_assert_int_eq(munmap(p, len), 0);
	dmabuf = export_ok(fd, h, HMC_BUF_EXPORT_F_RDWR, 0, 0);
	EXPECT_OK(hmc_free(fd, h));
	close(fd);

	d = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, dmabuf, 0);
	ck_assert(d != MAP_FAILED);
	expect_pattern(d, len, 31);
	fd = open_dev();
	get_stats(fd, 1, c);
	ck_assert_uint_eq(c[HMC_STAT_BUFS_LIVE], 1);
	ck_assert_uint_eq(c[HMC_STAT_PAGES_PINNED], 32);
	ck_assert_uint_eq(c[HMC_STAT_HANDLES_LIVE], 0);
	ck_assert_uint_eq(c[HMC_STAT_EXPORTS_LIVE], 1);
	close(fd);
	close(dmabuf);
	expect_pattern(d, len, 31);
	ck_assert_int_eq(munmap(d, len), 0);
	expect_no_live();
}
END_TEST

static void send_fd(int sock, int fd)
{
	char data = 'x', ctl[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { &data, 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl, .msg_controllen = sizeof(ctl),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	CHILD_CHECK(sendmsg(sock, &msg, 0) == 1);
}

static int recv_fd(int sock)
{
	char data, ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &data, 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl, .msg_controllen = sizeof(ctl),
	};
	int fd;

	ck_assert_int_eq(recvmsg(sock, &msg, MSG_CMSG_CLOEXEC), 1);
	ck_assert_ptr_nonnull(CMSG_FIRSTHDR(&msg));
	memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&msg)), sizeof(int));
	return fd;
}

/* The exporting process dies; the dma-buf it sent stays good. */
START_TEST(export_outlives_process)
{
	size_t len = 16 * pg;
	uint8_t *d;
	int sv[2], dmabuf, st;
	pid_t pid;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		uint64_t off;
		uint8_t *p;
		uint32_t h;
		int fd = hmc_open();

		CHILD_CHECK(fd >= 0);
		CHILD_CHECK(hmc_alloc(fd, len, &h, &off) == 0);
		p = hmc_map(fd, off, len, PROT_READ | PROT_WRITE);
		CHILD_CHECK(p != MAP_FAILED);
		pattern_fill(p, len, 0x5eed);
		CHILD_CHECK(hmc_export(fd, h, HMC_BUF_EXPORT_F_RDWR, 0, 0,
				       &dmabuf) == 0);
		send_fd(sv[1], dmabuf);
		raise(SIGKILL);
	}
	dmabuf = recv_fd(sv[0]);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFSIGNALED(st));
	d = mmap(NULL, len, PROT_READ, MAP_SHARED, dmabuf, 0);
	ck_assert(d != MAP_FAILED);
	expect_pattern(d, len, 0x5eed);
	ck_assert_int_eq(munmap(d, len), 0);
	close(dmabuf);
	close(sv[0]);
	close(sv[1]);
	expect_no_live();
}
END_TEST

START_TEST(rmmod_refused_while_exported)
{
	static const char *const what[] = { "a dma-buf fd", "a mapping of it" };
	const char *ko = getenv("HMC_KO");
	int busy[2], dmabuf;
	uint8_t *d;
	uint32_t h;
	int fd;

	if (!ko || !*ko)
		SKIP("HMC_KO is not set");
	fd = open_dev();
	h = alloc_ok(fd, 4 * pg, NULL);
	dmabuf = export_ok(fd, h, HMC_BUF_EXPORT_F_RDWR, 0, 0);
	EXPECT_OK(hmc_free(fd, h));
	close(fd);
	busy[0] = delete_hmc();
	d = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_SHARED, dmabuf, 0);
	ck_assert(d != MAP_FAILED);
	pattern_fill(d, 4 * pg, 9);
	close(dmabuf);
	busy[1] = delete_hmc();
	expect_pattern(d, 4 * pg, 9);
	ck_assert_int_eq(munmap(d, 4 * pg), 0);
	expect_rmmod_sequence(ko, busy, what, 2);
	expect_no_live();
}
END_TEST

START_TEST(export_cycles_counters_back_to_zero)
{
	uint64_t c[HMC_STAT_COUNT];
	uint32_t h;
	int i, dmabuf, fd = open_dev();

	h = alloc_ok(fd, 8 * pg, NULL);
	for (i = 0; i < 2000; i++) {
		dmabuf = export_ok(fd, h, i & 3, (i % 8) * pg,
				   (i % 3 == 0 ? 0 : 1) * pg);
		close(dmabuf);
	}
	get_stats(fd, 0, c);
	ck_assert_uint_eq(c[HMC_STAT_EXPORTS_LIVE], 0);
	ck_assert_uint_eq(c[HMC_STAT_ERRORS], 0);
	EXPECT_OK(hmc_free(fd, h));
	close(fd);
	expect_no_live();
}
END_TEST

const struct test export_tests[] = {
	T(export_mmap_whole_buffer, 60),
	T(export_part, 30),
	T(export_errors, 30),
	T(export_result_not_writable, 30),
	T(export_read_only, 30),
	T(export_pinned_user_memory, 30),
	T(export_sync_flags, 30),
	T(export_outlives_handle_and_file, 30),
	T(export_outlives_process, 30),
	T(rmmod_refused_while_exported, 60),
	T(export_cycles_counters_back_to_zero, 120),
	{ NULL }
};
