// SPDX-License-Identifier: GPL-2.0
/* test_kmod: GET_VERSION, ioctl dispatch, BUF_ALLOC/FREE/INFO, GET_STATS. */
#include <limits.h>
#include <sys/ioctl.h>

#include "kmod_test.h"

/* ---- version and ioctl dispatch ------------------------------------ */

START_TEST(version)
{
	struct hmc_version v;
	int fd = open_dev();

	memset(&v, 0xa5, sizeof(v));
	EXPECT_OK(hmc_ioc(fd, HMC_IOC_GET_VERSION, &v));
	ck_assert_uint_eq(v.abi_major, HMC_ABI_MAJOR);
	ck_assert_uint_eq(v.abi_minor, HMC_ABI_MINOR);
	ck_assert_uint_eq(v.features, HMC_FEAT_BUF_ALLOC | HMC_FEAT_BUF_PIN |
			  HMC_FEAT_NUMA | HMC_FEAT_BUF_EXPORT |
			  HMC_FEAT_PEER_IMPORT | HMC_FEAT_PEER_STATE |
			  HMC_FEAT_GENL);
	ck_assert_uint_eq(v.page_size, pg);
	ck_assert_uint_eq(v.pad, 0);
	ck_assert_uint_eq(v.max_buf_size, HMC_BUF_MAX_SIZE);
	ck_assert_uint_eq(v.reserved[0], 0);
	ck_assert_uint_eq(v.reserved[1], 0);
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(version_larger_struct_tail_cleared)
{
	static uint8_t big[_IOC_SIZEMASK];
	struct hmc_version v;
	size_t i;
	int fd = open_dev();

	memset(big, 0x5a, sizeof(big));
	EXPECT_OK(ioc_sized(fd, _IOC_READ, 0, 64, big));
	memcpy(&v, big, sizeof(v));
	ck_assert_uint_eq(v.abi_major, HMC_ABI_MAJOR);
	for (i = sizeof(v); i < 64; i++)
		ck_assert_msg(!big[i], "tail byte %zu not cleared", i);
	ck_assert_uint_eq(big[64], 0x5a);

	memset(big, 0x5a, sizeof(big));
	EXPECT_OK(ioc_sized(fd, _IOC_READ, 0, sizeof(big), big));
	for (i = sizeof(v); i < sizeof(big); i++)
		ck_assert_msg(!big[i], "tail byte %zu not cleared", i);
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(ioctl_unknown_command)
{
	static const unsigned int dirs[] = {
		_IOC_NONE, _IOC_READ, _IOC_WRITE, _IOC_READ | _IOC_WRITE,
	};
	uint8_t arg[64] = { 0 };
	unsigned int nr, d;
	int fd = open_dev();

	for (nr = NR_CMDS; nr <= _IOC_NRMASK; nr++)
		for (d = 0; d < 4; d++) {
			EXPECT_ERR(ioc_sized(fd, dirs[d], nr, 48, arg), ENOTTY);
			EXPECT_ERR(ioc_sized(fd, dirs[d], nr, 0, NULL), ENOTTY);
		}
	EXPECT_ERR(hmc_ioc(fd, _IO(HMC_IOC_MAGIC, 0), NULL), ENOTTY);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_ERRORS),
			  (_IOC_NRMASK + 1 - NR_CMDS) * 8 + 1);
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(ioctl_wrong_magic)
{
	static const unsigned int magics[] = { 0, 'x', HMC_IOC_MAGIC - 1,
					       HMC_IOC_MAGIC + 1, 0xff };
	struct hmc_buf_alloc a = { .size = 4096 };
	size_t i, m;
	int fd = open_dev();

	for (i = 0; i < NR_CMDS; i++)
		for (m = 0; m < sizeof(magics) / sizeof(magics[0]); m++) {
			unsigned int cmd = all_cmds[i];

			cmd = _IOC(_IOC_DIR(cmd), magics[m], _IOC_NR(cmd),
				   _IOC_SIZE(cmd));
			EXPECT_ERR(hmc_ioc(fd, cmd, &a), ENOTTY);
		}
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_BUFS_CREATED), 0);
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(ioctl_wrong_direction)
{
	struct hmc_buf_alloc a = { .size = 4096 };
	unsigned int d;
	size_t i;
	int fd = open_dev();

	for (i = 0; i < NR_CMDS; i++)
		for (d = 0; d < 4; d++) {
			if (d == _IOC_DIR(all_cmds[i]))
				continue;
			EXPECT_ERR(ioc_sized(fd, d, _IOC_NR(all_cmds[i]),
					     _IOC_SIZE(all_cmds[i]), &a),
				   ENOTTY);
		}
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_BUFS_CREATED), 0);
	close(fd);
	expect_no_live();
}
END_TEST

/* Older than the first published struct: no binary ever passed that. */
START_TEST(ioctl_below_first_version)
{
	uint8_t arg[128] = { 0 };
	size_t i, size;
	int fd = open_dev();

	((struct hmc_buf_alloc *)arg)->size = 4096;
	for (i = 0; i < NR_CMDS; i++) {
		unsigned int cmd = all_cmds[i];
		size_t min = ver0_sizes[i];
		size_t sizes[] = { 0, 1, min - 8, min - 1 };

		ck_assert_uint_le(min, _IOC_SIZE(cmd));
		for (size = 0; size < 4; size++)
			EXPECT_ERR(ioc_sized(fd, _IOC_DIR(cmd), _IOC_NR(cmd),
					     sizes[size], arg), EINVAL);
	}
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_BUFS_CREATED), 0);
	close(fd);
	expect_no_live();
}
END_TEST

/* What a valid request of each command needs, made up front. */
struct valid_req {
	int fd;
	uint8_t *anon;		/* a page to pin */
	uint32_t buf;		/* a live buffer of one page */
	int dmabuf;		/* exported from it */
	uint32_t imp;		/* an import of that */
};

/* Fills the zeroed @arg with a valid request of @cmd. */
static void valid_request(const struct valid_req *r, unsigned int cmd,
			  void *arg)
{
	struct hmc_peer_import imp;

	switch (cmd) {
	case HMC_IOC_GET_VERSION:
		break;
	case HMC_IOC_BUF_ALLOC:
		((struct hmc_buf_alloc *)arg)->size = 2 * pg;
		break;
	case HMC_IOC_BUF_PIN:
		((struct hmc_buf_pin *)arg)->addr = (uintptr_t)r->anon;
		((struct hmc_buf_pin *)arg)->size = pg;
		break;
	case HMC_IOC_BUF_FREE:
		((struct hmc_buf_free *)arg)->handle = alloc_ok(r->fd, pg, NULL);
		break;
	case HMC_IOC_BUF_INFO:
		((struct hmc_buf_info *)arg)->handle = r->buf;
		break;
	case HMC_IOC_GET_STATS:
		break;
	case HMC_IOC_BUF_EXPORT:
		((struct hmc_buf_export *)arg)->handle = r->buf;
		((struct hmc_buf_export *)arg)->flags = HMC_BUF_EXPORT_F_CLOEXEC;
		break;
	case HMC_IOC_PEER_IMPORT:
		((struct hmc_peer_import *)arg)->fd = r->dmabuf;
		break;
	case HMC_IOC_PEER_RELEASE:
		EXPECT_OK(hmc_import(r->fd, r->dmabuf, 0, 0, 0, &imp));
		((struct hmc_peer_release *)arg)->handle = imp.handle;
		break;
	case HMC_IOC_PEER_INFO:
		((struct hmc_peer_info *)arg)->handle = r->imp;
		break;
	case HMC_IOC_PEER_STATE:
		((struct hmc_peer_state *)arg)->peer_id = 7;
		((struct hmc_peer_state *)arg)->state = HMC_PEER_CONNECTED;
		break;
	default:
		ck_abort_msg("command %#x has no valid request", cmd);
	}
}

/* Checks what @cmd did with the request of valid_request(), and undoes it. */
static void expect_result(const struct valid_req *r, unsigned int cmd,
			  const void *arg)
{
	const struct hmc_buf_alloc *alloc = arg;
	const struct hmc_buf_pin *pin = arg;
	const struct hmc_buf_info *info = arg;
	const struct hmc_peer_import *imp = arg;
	struct hmc_buf_info bi;
	struct hmc_peer_info pi;

	switch (cmd) {
	case HMC_IOC_GET_VERSION:
		ck_assert_uint_eq(((const struct hmc_version *)arg)->abi_major,
				  HMC_ABI_MAJOR);
		break;
	case HMC_IOC_BUF_ALLOC:
		EXPECT_OK(hmc_info(r->fd, alloc->handle, &bi));
		ck_assert_uint_eq(bi.size, 2 * pg);
		ck_assert_uint_eq(alloc->mmap_offset, bi.mmap_offset);
		EXPECT_OK(hmc_free(r->fd, alloc->handle));
		break;
	case HMC_IOC_BUF_PIN:
		EXPECT_OK(hmc_info(r->fd, pin->handle, &bi));
		ck_assert_uint_eq(bi.type, HMC_BUF_TYPE_PINNED);
		EXPECT_OK(hmc_free(r->fd, pin->handle));
		break;
	case HMC_IOC_BUF_FREE:
		EXPECT_ERR(hmc_info(r->fd, ((const struct hmc_buf_free *)arg)->handle,
				    &bi), ENOENT);
		break;
	case HMC_IOC_BUF_INFO:
		ck_assert_uint_eq(info->type, HMC_BUF_TYPE_KERNEL);
		ck_assert_uint_eq(info->size, pg);
		break;
	case HMC_IOC_GET_STATS:
		ck_assert_uint_eq(((const struct hmc_stats *)arg)->nr_counters,
				  HMC_STAT_COUNT);
		break;
	case HMC_IOC_BUF_EXPORT:
		ck_assert_int_ge(((const struct hmc_buf_export *)arg)->fd, 0);
		ck_assert_int_eq(close(((const struct hmc_buf_export *)arg)->fd),
				 0);
		break;
	case HMC_IOC_PEER_IMPORT:
		EXPECT_OK(hmc_peer_info(r->fd, imp->handle, &pi));
		ck_assert_uint_eq(pi.size, pg);
		ck_assert_uint_eq(imp->mmap_offset, pi.mmap_offset);
		EXPECT_OK(hmc_release(r->fd, imp->handle));
		break;
	case HMC_IOC_PEER_RELEASE:
		EXPECT_ERR(hmc_peer_info(r->fd,
			   ((const struct hmc_peer_release *)arg)->handle, &pi),
			   ENOENT);
		break;
	case HMC_IOC_PEER_INFO:
		ck_assert_uint_eq(((const struct hmc_peer_info *)arg)->size, pg);
		ck_assert_uint_eq(((const struct hmc_peer_info *)arg)->state,
				  HMC_PEER_ST_MAPPED);
		break;
	case HMC_IOC_PEER_STATE:
		EXPECT_OK(hmc_peer_report(r->fd, 7, HMC_PEER_DISCONNECTED, 0, 0,
					  NULL, 0));
		break;
	}
}

/*
 * Every size from the first published one on works: an older binary's
 * (HMC_*_SIZE_VER0, zero-extended while a struct is longer than that), the
 * kernel's own, and a newer binary's with a zero tail. Results are written
 * in the caller's size: nothing past it, and a newer caller's tail cleared.
 */
START_TEST(ioctl_sizes_from_first_version)
{
	static uint8_t arg[512];
	struct hmc_peer_import imp;
	struct valid_req r;
	size_t i, s, b;

	r.fd = open_dev();
	r.anon = map_anon(pg);
	r.buf = alloc_ok(r.fd, pg, NULL);
	EXPECT_OK(hmc_export(r.fd, r.buf, HMC_BUF_EXPORT_F_CLOEXEC, 0, 0,
			     &r.dmabuf));
	EXPECT_OK(hmc_import(r.fd, r.dmabuf, 0, 0, 0, &imp));
	r.imp = imp.handle;
	for (i = 0; i < NR_CMDS; i++) {
		unsigned int cmd = all_cmds[i];
		size_t ksize = _IOC_SIZE(cmd);
		size_t sizes[] = { ver0_sizes[i], ksize, ksize + 16,
				   sizeof(arg) - 8 };

		for (s = 0; s < 4; s++) {
			memset(arg, 0, sizes[s]);
			memset(arg + sizes[s], 0x5a, sizeof(arg) - sizes[s]);
			valid_request(&r, cmd, arg);
			ck_assert_msg(!ioc_sized(r.fd, _IOC_DIR(cmd),
						 _IOC_NR(cmd), sizes[s], arg),
				      "command %zu, %zu bytes: %s", i,
				      sizes[s], strerror(errno));
			for (b = sizes[s]; b < sizeof(arg); b++)
				ck_assert_msg(arg[b] == 0x5a,
					      "command %zu, %zu bytes: wrote byte %zu",
					      i, sizes[s], b);
			for (b = ksize; b < sizes[s]; b++)
				ck_assert_msg(!arg[b],
					      "command %zu, %zu bytes: tail byte %zu",
					      i, sizes[s], b);
			expect_result(&r, cmd, arg);
		}
	}
	EXPECT_OK(hmc_release(r.fd, r.imp));
	close(r.dmabuf);
	EXPECT_OK(hmc_free(r.fd, r.buf));
	munmap(r.anon, pg);
	close(r.fd);
	expect_no_live();
}
END_TEST

START_TEST(ioctl_larger_struct)
{
	static uint8_t big[_IOC_SIZEMASK];
	struct hmc_buf_alloc *a = (void *)big;
	size_t i, pos[] = { 48, 63, sizeof(big) - 1 };
	uint32_t handle;
	int fd = open_dev();

	/* A newer, longer struct whose extra fields are zero: accepted. */
	memset(big, 0, sizeof(big));
	a->size = 3 * pg;
	EXPECT_OK(ioc_sized(fd, _IOC_READ | _IOC_WRITE, 1, 64, big));
	ck_assert_uint_ne(a->handle, 0);
	ck_assert_uint_eq(a->mmap_offset,
			  (uint64_t)a->handle << HMC_MMAP_SHIFT);
	for (i = 48; i < 64; i++)
		ck_assert_uint_eq(big[i], 0);
	EXPECT_OK(hmc_free(fd, a->handle));

	memset(big, 0, sizeof(big));
	a->size = pg;
	EXPECT_OK(ioc_sized(fd, _IOC_READ | _IOC_WRITE, 1, sizeof(big), big));
	EXPECT_OK(hmc_free(fd, a->handle));

	/* A non-zero field this kernel does not know: E2BIG, nothing made. */
	for (i = 0; i < 3; i++) {
		memset(big, 0, sizeof(big));
		a->size = pg;
		big[pos[i]] = 1;
		EXPECT_ERR(ioc_sized(fd, _IOC_READ | _IOC_WRITE, 1,
				     pos[i] < 64 ? 64 : sizeof(big), big),
			   E2BIG);
	}
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_BUFS_CREATED), 2);

	/* The same for every command that reads a struct. */
	handle = alloc_ok(fd, pg, NULL);
	for (i = 0; i < NR_CMDS; i++) {
		unsigned int cmd = all_cmds[i];
		size_t ksize = _IOC_SIZE(cmd);

		if (!(_IOC_DIR(cmd) & _IOC_WRITE))
			continue;
		memset(big, 0, sizeof(big));
		*(uint32_t *)big = handle;	/* FREE and INFO: a live one */
		big[ksize + 3] = 0x80;
		EXPECT_ERR(ioc_sized(fd, _IOC_DIR(cmd), _IOC_NR(cmd),
				     ksize + 8, big), E2BIG);
	}
	ck_assert_uint_eq(nr_mappings(fd, handle), 0);	/* still there */
	EXPECT_OK(hmc_free(fd, handle));
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(bad_user_pointers)
{
	struct hmc_buf_alloc *ro_alloc;
	struct hmc_buf_pin *ro_pin;
	uint64_t c[HMC_STAT_COUNT];
	struct hmc_stats s = { .nr_counters = HMC_STAT_COUNT };
	void *kernel = (void *)0xffffffff81000000UL;
	long pin_before = vm_pinned_kib();
	uint8_t *ro, *anon = map_anon(4 * pg);
	size_t i;
	int fd = open_dev();

	for (i = 0; i < NR_CMDS; i++) {
		EXPECT_ERR(hmc_ioc(fd, all_cmds[i], NULL), EFAULT);
		EXPECT_ERR(hmc_ioc(fd, all_cmds[i], kernel), EFAULT);
	}

	/* Valid requests in read-only memory: done, then undone. */
	ro = map_anon(pg);
	ro_alloc = (void *)ro;
	ro_alloc->size = MiB;
	ro_pin = (void *)(ro + 1024);
	ro_pin->addr = (uintptr_t)anon;
	ro_pin->size = 4 * pg;
	ck_assert_int_eq(mprotect(ro, pg, PROT_READ), 0);
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_BUF_ALLOC, ro_alloc), EFAULT);
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_BUF_PIN, ro_pin), EFAULT);
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_GET_VERSION, ro), EFAULT);
	get_stats(fd, 0, c);
	expect_live_zero(c, "per-file");
	ck_assert_uint_eq(c[HMC_STAT_BUFS_CREATED], 2);
	ck_assert_int_eq(vm_pinned_kib(), pin_before);

	s.counters_ptr = (uintptr_t)ro;
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_GET_STATS, &s), EFAULT);
	s.counters_ptr = (uintptr_t)kernel;
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_GET_STATS, &s), EFAULT);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_ERRORS), 2 * NR_CMDS + 5);
	close(fd);
	munmap(ro, pg);
	munmap(anon, 4 * pg);
	expect_no_live();
}
END_TEST

/* ---- BUF_ALLOC, BUF_FREE, BUF_INFO --------------------------------- */

START_TEST(alloc_success)
{
	struct hmc_buf_alloc a = {
		.size = 3 * pg + 1, .handle = 0xdeadbeef, .mmap_offset = ~0ULL,
	};
	struct hmc_buf_info info;
	uint64_t c[HMC_STAT_COUNT];
	int fd = open_dev();

	EXPECT_OK(hmc_ioc(fd, HMC_IOC_BUF_ALLOC, &a));
	ck_assert_uint_ne(a.handle, 0);
	ck_assert_uint_ne(a.handle, 0xdeadbeef);
	ck_assert_uint_eq(a.mmap_offset, (uint64_t)a.handle << HMC_MMAP_SHIFT);
	ck_assert_uint_eq(a.pad, 0);

	EXPECT_OK(hmc_info(fd, a.handle, &info));
	ck_assert_uint_eq(info.type, HMC_BUF_TYPE_KERNEL);
	ck_assert_uint_eq(info.size, 4 * pg);
	ck_assert_uint_eq(info.mmap_offset, a.mmap_offset);

	get_stats(fd, 0, c);
	ck_assert_uint_eq(c[HMC_STAT_BUFS_LIVE], 1);
	ck_assert_uint_eq(c[HMC_STAT_BYTES_LIVE], 4 * pg);
	ck_assert_uint_eq(c[HMC_STAT_PAGES_PINNED], 4);
	ck_assert_uint_eq(c[HMC_STAT_HANDLES_LIVE], 1);
	ck_assert_uint_eq(c[HMC_STAT_MAPPINGS_LIVE], 0);
	ck_assert_uint_eq(c[HMC_STAT_BUFS_CREATED], 1);
	ck_assert_uint_eq(c[HMC_STAT_ERRORS], 0);

	EXPECT_OK(hmc_free(fd, a.handle));
	get_stats(fd, 0, c);
	expect_live_zero(c, "per-file");
	ck_assert_uint_eq(c[HMC_STAT_BUFS_CREATED], 1);
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(alloc_bad_flags_and_reserved)
{
	struct hmc_buf_alloc a;
	int fd = open_dev();

#define TRY_ALLOC(field, value) do {					\
	memset(&a, 0, sizeof(a));					\
	a.size = pg;							\
	a.field = value;						\
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_BUF_ALLOC, &a), EINVAL);		\
} while (0)
	TRY_ALLOC(flags, 2);
	TRY_ALLOC(flags, 1U << 31);
	TRY_ALLOC(flags, ~0U);
	TRY_ALLOC(pad, 1);
	TRY_ALLOC(reserved[0], 1);
	TRY_ALLOC(reserved[1], 1ULL << 63);
	TRY_ALLOC(numa_node, 1);	/* without HMC_BUF_ALLOC_F_NUMA */
#undef TRY_ALLOC
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_BUFS_CREATED), 0);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_ERRORS), 7);
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(alloc_zero_and_absurd_sizes)
{
	uint32_t h;
	int fd = open_dev();

	EXPECT_ERR(hmc_alloc(fd, 0, &h, NULL), EINVAL);
	EXPECT_ERR(hmc_alloc(fd, HMC_BUF_MAX_SIZE + 1, &h, NULL), EINVAL);
	EXPECT_ERR(hmc_alloc(fd, ~0ULL, &h, NULL), EINVAL);
	EXPECT_ERR(hmc_alloc(fd, 1ULL << 63, &h, NULL), EINVAL);
	/* Valid sizes that cannot fit in this machine's RAM: refused now. */
	EXPECT_ERR(hmc_alloc(fd, HMC_BUF_MAX_SIZE, &h, NULL), ENOMEM);
	EXPECT_ERR(hmc_alloc(fd, (uint64_t)sysconf(_SC_PHYS_PAGES) * pg + pg,
			     &h, NULL), ENOMEM);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_BUFS_CREATED), 0);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_MEMLOCK_REFUSED), 0);
	/* The largest size is page-rounded, the smallest is one page. */
	h = alloc_ok(fd, 1, NULL);
	EXPECT_OK(hmc_free(fd, h));
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(alloc_numa)
{
	struct hmc_buf_alloc a = {
		.size = 2 * pg, .flags = HMC_BUF_ALLOC_F_NUMA, .numa_node = 0,
	};
	static const int bad[] = { -1, -2, 4096, INT_MAX, INT_MIN };
	struct hmc_buf_info info;
	char path[64];
	int node, fd = open_dev();
	size_t i;

	EXPECT_OK(hmc_ioc(fd, HMC_IOC_BUF_ALLOC, &a));
	EXPECT_OK(hmc_info(fd, a.handle, &info));
	ck_assert_int_eq(info.numa_node, 0);
	EXPECT_OK(hmc_free(fd, a.handle));

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		a.numa_node = bad[i];
		EXPECT_ERR(hmc_ioc(fd, HMC_IOC_BUF_ALLOC, &a), EINVAL);
	}
	/* The first node number this machine does not have. */
	for (node = 0; node < 1024; node++) {
		snprintf(path, sizeof(path),
			 "/sys/devices/system/node/node%d", node);
		if (access(path, F_OK))
			break;
	}
	ck_assert_int_gt(node, 0);
	a.numa_node = node;
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_BUF_ALLOC, &a), EINVAL);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_BUFS_CREATED), 1);
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(free_errors)
{
	struct hmc_buf_free f;
	uint32_t h;
	int fd = open_dev();

	h = alloc_ok(fd, pg, NULL);
	f = (struct hmc_buf_free){ .handle = h, .flags = 1 };
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_BUF_FREE, &f), EINVAL);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_HANDLES_LIVE), 1);
	EXPECT_OK(hmc_free(fd, h));
	EXPECT_ERR(hmc_free(fd, h), ENOENT);		/* double free */
	EXPECT_ERR(hmc_free(fd, 0), ENOENT);
	EXPECT_ERR(hmc_free(fd, h + 1), ENOENT);
	EXPECT_ERR(hmc_free(fd, ~0U), ENOENT);
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(free_other_files_handle)
{
	uint32_t h;
	int a = open_dev(), b = open_dev();

	h = alloc_ok(a, pg, NULL);
	EXPECT_ERR(hmc_free(b, h), ENOENT);	/* handles are per file */
	EXPECT_OK(hmc_free(a, h));
	close(a);
	close(b);
	expect_no_live();
}
END_TEST

START_TEST(buf_info)
{
	struct hmc_buf_info info;
	uint64_t off;
	uint32_t h;
	int fd = open_dev();

	h = alloc_ok(fd, 5 * pg, &off);
	memset(&info, 0xee, sizeof(info));
	info.handle = h;
	info.reserved[0] = info.reserved[1] = 0;
	EXPECT_OK(hmc_ioc(fd, HMC_IOC_BUF_INFO, &info));
	ck_assert_uint_eq(info.handle, h);
	ck_assert_uint_eq(info.type, HMC_BUF_TYPE_KERNEL);
	ck_assert_uint_eq(info.size, 5 * pg);
	ck_assert_uint_eq(info.mmap_offset, off);
	ck_assert_uint_eq(info.nr_mappings, 0);
	ck_assert_int_ge(info.numa_node, 0);

	info.reserved[1] = 1;
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_BUF_INFO, &info), EINVAL);
	EXPECT_ERR(hmc_info(fd, h + 1, &info), ENOENT);
	EXPECT_ERR(hmc_info(fd, 0, &info), ENOENT);
	EXPECT_OK(hmc_free(fd, h));
	EXPECT_ERR(hmc_info(fd, h, &info), ENOENT);
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(info_nr_mappings)
{
	uint8_t *a, *b;
	uint64_t off;
	uint32_t h;
	int fd = open_dev();

	h = alloc_ok(fd, 3 * pg, &off);
	a = map_ok(fd, off, 3 * pg);
	ck_assert_uint_eq(nr_mappings(fd, h), 1);
	b = map_ok(fd, off + pg, pg);
	ck_assert_uint_eq(nr_mappings(fd, h), 2);
	/* Unmapping the middle page splits the first VMA in two. */
	ck_assert_int_eq(munmap(a + pg, pg), 0);
	ck_assert_uint_eq(nr_mappings(fd, h), 3);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_MAPPINGS_LIVE), 3);
	ck_assert_uint_eq(stat_of(fd, 1, HMC_STAT_MAPPINGS_LIVE), 3);
	ck_assert_int_eq(munmap(a, pg), 0);
	ck_assert_int_eq(munmap(a + 2 * pg, pg), 0);
	ck_assert_uint_eq(nr_mappings(fd, h), 1);
	ck_assert_int_eq(munmap(b, pg), 0);
	ck_assert_uint_eq(nr_mappings(fd, h), 0);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_MAPPINGS_LIVE), 0);
	EXPECT_OK(hmc_free(fd, h));
	close(fd);
	expect_no_live();
}
END_TEST

/* ---- GET_STATS ----------------------------------------------------- */

START_TEST(stats_per_file_and_global)
{
	uint64_t fa[HMC_STAT_COUNT], fb[HMC_STAT_COUNT], g[HMC_STAT_COUNT];
	uint32_t ha1, ha2, hb;
	int a = open_dev(), b = open_dev();

	ha1 = alloc_ok(a, pg, NULL);
	ha2 = alloc_ok(a, 2 * pg, NULL);
	hb = alloc_ok(b, 4 * pg, NULL);
	EXPECT_ERR(hmc_free(a, 0), ENOENT);
	get_stats(a, 0, fa);
	get_stats(b, 0, fb);
	get_stats(b, 1, g);
	ck_assert_uint_eq(fa[HMC_STAT_BUFS_LIVE], 2);
	ck_assert_uint_eq(fa[HMC_STAT_PAGES_PINNED], 3);
	ck_assert_uint_eq(fa[HMC_STAT_ERRORS], 1);
	ck_assert_uint_eq(fb[HMC_STAT_BUFS_LIVE], 1);
	ck_assert_uint_eq(fb[HMC_STAT_BYTES_LIVE], 4 * pg);
	ck_assert_uint_eq(fb[HMC_STAT_ERRORS], 0);
	ck_assert_uint_eq(g[HMC_STAT_BUFS_LIVE], 3);
	ck_assert_uint_eq(g[HMC_STAT_BYTES_LIVE], 7 * pg);
	ck_assert_uint_eq(g[HMC_STAT_PAGES_PINNED], 7);
	ck_assert_uint_eq(g[HMC_STAT_HANDLES_LIVE], 3);
	ck_assert_uint_ge(g[HMC_STAT_ERRORS], 1);
	ck_assert_uint_ge(g[HMC_STAT_BUFS_CREATED], 3);

	EXPECT_OK(hmc_free(a, ha1));
	EXPECT_OK(hmc_free(a, ha2));
	get_stats(a, 0, fa);
	expect_live_zero(fa, "file a");
	ck_assert_uint_eq(stat_of(b, 1, HMC_STAT_BUFS_LIVE), 1);
	close(a);
	ck_assert_uint_eq(stat_of(b, 0, HMC_STAT_BUFS_LIVE), 1);
	EXPECT_OK(hmc_free(b, hb));
	close(b);
	expect_no_live();
}
END_TEST

START_TEST(stats_short_and_long_arrays)
{
	uint64_t c[16];
	struct hmc_stats s = { .counters_ptr = (uintptr_t)c };
	uint32_t h;
	int i, fd = open_dev();

	h = alloc_ok(fd, pg, NULL);
	/* Three slots: only three written, the count of known ones returned. */
	memset(c, 0xab, sizeof(c));
	s.nr_counters = 3;
	EXPECT_OK(hmc_ioc(fd, HMC_IOC_GET_STATS, &s));
	ck_assert_uint_eq(s.nr_counters, HMC_STAT_COUNT);
	ck_assert_uint_eq(c[HMC_STAT_BUFS_LIVE], 1);
	ck_assert_uint_eq(c[HMC_STAT_BYTES_LIVE], pg);
	ck_assert_uint_eq(c[HMC_STAT_PAGES_PINNED], 1);
	for (i = 3; i < 16; i++)
		ck_assert_uint_eq(c[i], 0xababababababababULL);

	/* No slots: a query of the count, with no pointer needed. */
	s = (struct hmc_stats){ .nr_counters = 0 };
	EXPECT_OK(hmc_ioc(fd, HMC_IOC_GET_STATS, &s));
	ck_assert_uint_eq(s.nr_counters, HMC_STAT_COUNT);

	/* More slots than counters: the extra ones are left alone. */
	memset(c, 0xab, sizeof(c));
	s = (struct hmc_stats){ .nr_counters = 16,
				.counters_ptr = (uintptr_t)c };
	EXPECT_OK(hmc_ioc(fd, HMC_IOC_GET_STATS, &s));
	ck_assert_uint_eq(s.nr_counters, HMC_STAT_COUNT);
	ck_assert_uint_eq(c[HMC_STAT_HANDLES_LIVE], 1);
	ck_assert_uint_eq(c[HMC_STAT_BUFS_CREATED], 1);
	for (i = HMC_STAT_COUNT; i < 16; i++)
		ck_assert_uint_eq(c[i], 0xababababababababULL);

	s.flags = 2;
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_GET_STATS, &s), EINVAL);
	s.flags = 0;
	s.reserved[0] = 1;
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_GET_STATS, &s), EINVAL);
	EXPECT_OK(hmc_free(fd, h));
	close(fd);
	expect_no_live();
}
END_TEST

const struct test ioctl_tests[] = {
	T(version, 30),
	T(version_larger_struct_tail_cleared, 30),
	T(ioctl_unknown_command, 30),
	T(ioctl_wrong_magic, 30),
	T(ioctl_wrong_direction, 30),
	T(ioctl_below_first_version, 30),
	T(ioctl_sizes_from_first_version, 30),
	T(ioctl_larger_struct, 30),
	T(bad_user_pointers, 30),
	T(alloc_success, 30),
	T(alloc_bad_flags_and_reserved, 30),
	T(alloc_zero_and_absurd_sizes, 30),
	T(alloc_numa, 30),
	T(free_errors, 30),
	T(free_other_files_handle, 30),
	T(buf_info, 30),
	T(info_nr_mappings, 30),
	T(stats_per_file_and_global, 30),
	T(stats_short_and_long_arrays, 30),
	{ NULL }
};
