// SPDX-License-Identifier: MIT
/*
 * ConnBuffers (hmc_buf_*) on this host: option and range checks (overflow
 * included), data round trips against a memmove() model, the memfd backing
 * without /dev/hmc (sealed, exported whole, not inherited by a child), the
 * anonymous fallback where memfd_create() is refused (seccomp),
 * HMC_REQUIRE_KMOD, and mlock refused by RLIMIT_MEMLOCK.
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <linux/capability.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/mempolicy.h>
#include <linux/seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hmc/hmc.h>

#include "mem/buf.h"
#include "sys/opts.h"
#include "pattern.h"
#include "run_tcase.h"

/* AddressSanitizer intercepts mlock() and returns 0 without locking. */
#if defined(__SANITIZE_ADDRESS__)
#define ASAN_BUILD	1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN_BUILD	1
#endif
#endif
#ifndef ASAN_BUILD
#define ASAN_BUILD	0
#endif

/* Messages libhmc logged while a test ran. */
static struct {
	int count[HMC_LOG_DEBUG + 1];
	char last[HMC_LOG_DEBUG + 1][512];
} logged;

static void log_capture(enum hmc_log_level level, const char *msg, void *arg)
{
	logged.count[level]++;
	snprintf(logged.last[level], sizeof(logged.last[level]), "%s", msg);
}

static void capture_log(void)
{
	memset(&logged, 0, sizeof(logged));
	hmc_set_log(log_capture, HMC_LOG_DEBUG, NULL);
}

/* Drop @cap from this process's effective and permitted sets. */
static int drop_cap(int cap)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	data[CAP_TO_INDEX(cap)].effective &= ~CAP_TO_MASK(cap);
	data[CAP_TO_INDEX(cap)].permitted &= ~CAP_TO_MASK(cap);
	if (syscall(SYS_capset, &hdr, data))
		return -errno;
	return 0;
}

/*
 * No /dev/hmc here, and none can appear: without CAP_SYS_MODULE libhmc
 * does not try to load the module, wherever this test runs.
 */
static void no_module_loading(void)
{
	ck_assert_int_eq(drop_cap(CAP_SYS_MODULE), 0);
}

/* What a CPU buffer is without the module, on a kernel with memfd_create(). */
static bool fallback_backing(enum hmc_buf_backing b)
{
	return b == HMC_BUF_BACKING_MEMFD;
}

static struct hmc_buf *create_cpu(size_t size, uint32_t flags)
{
	HMC_OPTS(hmc_buf_opts, opts, .flags = flags);
	struct hmc_buf *buf = NULL;

	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 0, size, &opts, &buf), 0);
	ck_assert_ptr_nonnull(buf);
	return buf;
}

START_TEST(test_create_args)
{
	struct hmc_buf *buf = (struct hmc_buf *)1;

	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 0, 4096, NULL, NULL),
			 -EINVAL);
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 0, 0, NULL, &buf),
			 -EINVAL);
	ck_assert_ptr_null(buf);
	ck_assert_int_eq(hmc_buf_create((enum hmc_mem_type)7, 0, 4096, NULL,
					&buf), -EINVAL);
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 1, 4096, NULL, &buf),
			 -ENODEV);
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, -1, 4096, NULL, &buf),
			 -ENODEV);
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 0, SIZE_MAX, NULL, &buf),
			 -ENOMEM);
	ck_assert_ptr_null(buf);

	/* NULL is tolerated everywhere rather than crashing. */
	hmc_buf_destroy(NULL);
	ck_assert_ptr_null(hmc_buf_ptr(NULL));
	ck_assert_uint_eq(hmc_buf_size(NULL), 0);
	ck_assert_int_eq(hmc_buf_device(NULL), -EINVAL);
	ck_assert_int_eq(hmc_buf_write(NULL, 0, "x", 1, HMC_MEM_CPU), -EINVAL);
	ck_assert_int_eq(hmc_buf_read(NULL, 0, &buf, 1, HMC_MEM_CPU), -EINVAL);
	ck_assert_int_eq(hmc_buf_copy_within(NULL, 0, 1, 1), -EINVAL);

	ck_assert_str_eq(hmc_buf_backing_name(HMC_BUF_BACKING_KMOD), "kmod");
	ck_assert_str_eq(hmc_buf_backing_name(HMC_BUF_BACKING_MLOCK), "mlock");
	ck_assert_str_eq(hmc_buf_backing_name(HMC_BUF_BACKING_ANON), "anon");
	ck_assert_str_eq(hmc_buf_backing_name(HMC_BUF_BACKING_DEVICE),
			 "device");
	ck_assert_str_eq(hmc_buf_backing_name(HMC_BUF_BACKING_MEMFD), "memfd");
	ck_assert_str_eq(hmc_buf_backing_name(0), "unknown");
}
END_TEST

/* A caller built against a newer header, with one more field. */
struct hmc_buf_opts_next {
	struct hmc_buf_opts v1;
	uint64_t added;
};

START_TEST(test_opts_size)
{
	struct hmc_buf_opts_next next = {
		.v1 = { .sz = sizeof(next), .flags = HMC_BUF_F_NO_KMOD },
	};
	struct hmc_buf_opts small = { .flags = HMC_BUF_F_NO_KMOD };
	struct hmc_buf *buf = NULL;

	small.sz = 0;
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 0, 64, &small, &buf),
			 -EINVAL);
	small.sz = sizeof(size_t);
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 0, 64, &small, &buf),
			 -EINVAL);
	small.sz = sizeof(small) - 1;
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 0, 64, &small, &buf),
			 -EINVAL);
	ck_assert_ptr_null(buf);

	/* Unknown but zero tail: fine. Non-zero: refused. */
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 0, 64, &next.v1, &buf),
			 0);
	ck_assert(fallback_backing(hmc_buf_backing(buf)));
	hmc_buf_destroy(buf);
	next.added = 1;
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 0, 64, &next.v1, &buf),
			 -E2BIG);
	ck_assert_ptr_null(buf);
}
END_TEST

START_TEST(test_flags)
{
	struct hmc_buf_opts opts = { .sz = sizeof(opts) };
	struct hmc_buf *buf = NULL;

	opts.flags = 1U << 31;
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 0, 64, &opts, &buf),
			 -EINVAL);
	opts.flags = HMC_BUF_F_REQUIRE_KMOD | HMC_BUF_F_NO_KMOD;
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 0, 64, &opts, &buf),
			 -EINVAL);
	opts.flags = HMC_BUF_F_NO_KMOD | HMC_BUF_F_NUMA;
	opts.numa_node = -1;
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 0, 64, &opts, &buf),
			 -EINVAL);
	/* A node without HMC_BUF_F_NUMA is a stray field. */
	opts.flags = HMC_BUF_F_NO_KMOD;
	opts.numa_node = 1;
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 0, 64, &opts, &buf),
			 -EINVAL);
	/* Placement flags do not apply to device memory. */
	opts.flags = HMC_BUF_F_NUMA;
	opts.numa_node = 0;
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CUDA, 0, 64, &opts, &buf),
			 -EINVAL);
	opts.flags = HMC_BUF_F_REQUIRE_KMOD;
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_ROCM, 0, 64, &opts, &buf),
			 -EINVAL);
	ck_assert_ptr_null(buf);
}
END_TEST

static bool node_online(int node)
{
	char path[64];

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d", node);
	return access(path, F_OK) == 0;
}

START_TEST(test_numa)
{
	HMC_OPTS(hmc_buf_opts, opts, .flags = HMC_BUF_F_NO_KMOD |
		 HMC_BUF_F_NUMA, .numa_node = 0);
	const size_t size = 1 << 20;
	struct hmc_buf *buf = NULL;
	int node = -1, mode = -1;
	char *p;

	if (!node_online(0)) {
		/* A kernel without NUMA: mbind() is not there. */
		ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 0, size, &opts,
						&buf), -EOPNOTSUPP);
		return;
	}
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 0, size, &opts, &buf), 0);
	p = hmc_buf_ptr(buf);
	ck_assert_int_eq(syscall(SYS_get_mempolicy, &node, NULL, 0,
				 p + size - 1, MPOL_F_NODE | MPOL_F_ADDR), 0);
	ck_assert_int_eq(node, 0);
	ck_assert_int_eq(syscall(SYS_get_mempolicy, &mode, NULL, 0, p,
				 MPOL_F_ADDR), 0);
	ck_assert_int_eq(mode, MPOL_BIND);
	hmc_buf_destroy(buf);

	/* A node that does not exist. */
	opts.numa_node = 1000;
	ck_assert(!node_online(1000));
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 0, size, &opts, &buf),
			 -EINVAL);
	ck_assert_ptr_null(buf);
}
END_TEST

static void check_fresh_cpu_buf(struct hmc_buf *buf, size_t size)
{
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	unsigned char *p = hmc_buf_ptr(buf);
	uint32_t handle;
	size_t i;
	int fd;

	ck_assert(fallback_backing(hmc_buf_backing(buf)));
	ck_assert_uint_eq(hmc_buf_size(buf), size);
	ck_assert_int_eq(hmc_buf_mem_type(buf), HMC_MEM_CPU);
	ck_assert_int_eq(hmc_buf_device(buf), 0);
	ck_assert_uint_eq((uintptr_t)p % page, 0);
	ck_assert_int_eq(buf_devhmc(buf, &fd, &handle), -ENODEV);
	for (i = 0; i < size; i++)
		if (p[i])
			ck_abort_msg("byte %zu of a new buffer is %u", i, p[i]);
}

/* The mapping is gone once the buffer is destroyed. */
static void check_destroyed(void *p, size_t len)
{
	unsigned char vec[4];

	ck_assert_int_eq(mincore(p, len < 4096 ? len : 4096, vec), -1);
	ck_assert_int_eq(errno, ENOMEM);
}

START_TEST(test_no_kmod)
{
	const size_t size = 3 * 4096 + 5;
	struct hmc_buf *buf = create_cpu(size, HMC_BUF_F_NO_KMOD);
	void *p = hmc_buf_ptr(buf);

	check_fresh_cpu_buf(buf, size);
	hmc_buf_destroy(buf);
	check_destroyed(p, size);
}
END_TEST

/* Only where /dev/hmc does not exist (see main()). */
START_TEST(test_without_module)
{
	const size_t size = 64 * 1024;
	struct hmc_buf *buf;

	no_module_loading();
	unsetenv("HMC_REQUIRE_KMOD");
	buf = create_cpu(size, 0);
	check_fresh_cpu_buf(buf, size);
	hmc_buf_destroy(buf);
}
END_TEST

START_TEST(test_require_kmod)
{
	HMC_OPTS(hmc_buf_opts, opts, .flags = HMC_BUF_F_REQUIRE_KMOD);
	struct hmc_buf *buf = (struct hmc_buf *)1;

	no_module_loading();
	capture_log();
	unsetenv("HMC_REQUIRE_KMOD");
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 0, 4096, &opts, &buf),
			 -ENODEV);
	ck_assert_ptr_null(buf);
	ck_assert_int_eq(logged.count[HMC_LOG_ERROR], 2);
	ck_assert_ptr_nonnull(strstr(logged.last[HMC_LOG_ERROR],
				     "HMC_BUF_F_REQUIRE_KMOD"));

	setenv("HMC_REQUIRE_KMOD", "1", 1);
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 0, 4096, NULL, &buf),
			 -ENODEV);
	ck_assert_ptr_null(buf);
	ck_assert_int_eq(logged.count[HMC_LOG_ERROR], 4);
	ck_assert_ptr_nonnull(strstr(logged.last[HMC_LOG_ERROR],
				     "HMC_REQUIRE_KMOD"));

	/* Asking for no module at all is not a fallback. */
	buf = create_cpu(4096, HMC_BUF_F_NO_KMOD);
	ck_assert(fallback_backing(hmc_buf_backing(buf)));
	hmc_buf_destroy(buf);

	setenv("HMC_REQUIRE_KMOD", "0", 1);
	buf = create_cpu(4096, 0);
	ck_assert(fallback_backing(hmc_buf_backing(buf)));
	hmc_buf_destroy(buf);
	hmc_set_log(NULL, HMC_LOG_ERROR, NULL);
}
END_TEST

/*
 * A memfd buffer exports the memfd itself, whole: read-write, a mapping of
 * it is the buffer; read-only, a writable shared mapping is refused; its
 * size cannot change. Arguments are checked first.
 */
START_TEST(test_export_without_module)
{
	const size_t size = 1 << 16;
	struct hmc_buf *buf;
	unsigned char *map;
	int fd = -1, rofd = -1;

	no_module_loading();
	unsetenv("HMC_REQUIRE_KMOD");
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 0, size, NULL, &buf), 0);
	ck_assert_int_eq(hmc_buf_backing(buf), HMC_BUF_BACKING_MEMFD);
	ck_assert_int_eq(hmc_buf_export_fd(buf, 0, 0, 1U << 5, &fd), -EINVAL);
	ck_assert_int_eq(hmc_buf_export_fd(buf, size, 1, 0, &fd), -ERANGE);
	ck_assert_int_eq(hmc_buf_export_fd(buf, 0, 0, 0, NULL), -EINVAL);
	ck_assert_int_eq(hmc_buf_export_fd(NULL, 0, 0, 0, &fd), -EINVAL);
	/* A part of a file has no descriptor of its own. */
	ck_assert_int_eq(hmc_buf_export_fd(buf, 4096, 0, 0, &fd), -EOPNOTSUPP);
	ck_assert_int_eq(hmc_buf_export_fd(buf, 0, 4096, 0, &fd), -EOPNOTSUPP);

	ck_assert_int_eq(hmc_buf_export_fd(buf, 0, size, HMC_BUF_EXPORT_RDWR,
					   &fd), 0);
	ck_assert_int_eq(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	ck_assert_int_eq(fcntl(fd, F_GET_SEALS),
			 F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	ck_assert_int_eq(ftruncate(fd, 4096), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(ftruncate(fd, 2 * size), -1);
	ck_assert_int_eq(errno, EPERM);
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(map, MAP_FAILED);
	pattern_fill(map, size, 11);
	ck_assert_int_eq(pattern_mismatch(hmc_buf_ptr(buf), size, 11), -1);
	pattern_fill(hmc_buf_ptr(buf), size, 12);
	ck_assert_int_eq(pattern_mismatch(map, size, 12), -1);

	ck_assert_int_eq(hmc_buf_export_fd(buf, 0, 0, 0, &rofd), 0);
	ck_assert_ptr_eq(mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
			      rofd, 0), MAP_FAILED);
	ck_assert_int_eq(errno, EACCES);

	/* The memory outlives the buffer while a descriptor holds it. */
	hmc_buf_destroy(buf);
	ck_assert_int_eq(pattern_mismatch(map, size, 12), -1);
	munmap(map, size);
	map = mmap(NULL, size, PROT_READ, MAP_SHARED, rofd, 0);
	ck_assert_ptr_ne(map, MAP_FAILED);
	ck_assert_int_eq(pattern_mismatch(map, size, 12), -1);
	munmap(map, size);
	close(fd);
	close(rofd);

	buf = (struct hmc_buf *)1;
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CUDA, 0, 4096, NULL, &buf),
			 -ENODEV);
	ck_assert_ptr_null(buf);
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_ROCM, 0, 4096, NULL, &buf),
			 -ENODEV);
}
END_TEST

/* A forked child has no mapping of the buffer: it cannot write into ours. */
START_TEST(test_memfd_not_inherited)
{
	struct hmc_buf *buf = create_cpu(8192, HMC_BUF_F_NO_KMOD);
	unsigned char vec[2];
	int status;
	pid_t pid;

	ck_assert_int_eq(hmc_buf_backing(buf), HMC_BUF_BACKING_MEMFD);
	pattern_fill(hmc_buf_ptr(buf), 8192, 13);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid)
		_exit(mincore(hmc_buf_ptr(buf), 8192, vec) == -1 &&
		      errno == ENOMEM ? 0 : 1);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the child still maps the buffer (status 0x%x)", status);
	ck_assert_int_eq(pattern_mismatch(hmc_buf_ptr(buf), 8192, 13), -1);
	hmc_buf_destroy(buf);
}
END_TEST

/* memfd_create() fails with @err from now on in this process (seccomp). */
static int refuse_memfd_create(int err)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_memfd_create, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (uint32_t)err),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = sizeof(filter) / sizeof(filter[0]),
		.filter = filter,
	};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -errno;
	return 0;
}

/* The child of test_no_memfd: the number of the failed check, or 0. */
static int no_memfd_child(void)
{
	struct hmc_buf *buf;
	int fd;

	if (drop_cap(CAP_SYS_MODULE) || refuse_memfd_create(ENOSYS))
		return 1;
	unsetenv("HMC_REQUIRE_KMOD");
	if (hmc_buf_create(HMC_MEM_CPU, 0, 3 * 4096 + 5, NULL, &buf))
		return 2;
	if (hmc_buf_backing(buf) != HMC_BUF_BACKING_MLOCK &&
	    hmc_buf_backing(buf) != HMC_BUF_BACKING_ANON)
		return 3;
	pattern_fill(hmc_buf_ptr(buf), 3 * 4096 + 5, 14);
	if (pattern_mismatch(hmc_buf_ptr(buf), 3 * 4096 + 5, 14) != -1)
		return 4;
	/* Anonymous memory has no descriptor to hand out. */
	if (hmc_buf_export_fd(buf, 0, 0, 0, &fd) != -EOPNOTSUPP)
		return 5;
	hmc_buf_destroy(buf);
	return 0;
}

/* Only where /dev/hmc does not exist (see main()). */
START_TEST(test_no_memfd)
{
	int status;
	pid_t pid;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid)
		_exit(no_memfd_child());
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child failed check %d (status 0x%x)",
		      WEXITSTATUS(status), status);
}
END_TEST

START_TEST(test_range_helper)
{
	ck_assert_int_eq(range_check(100, 0, 100), 0);
	ck_assert_int_eq(range_check(100, 100, 0), 0);
	ck_assert_int_eq(range_check(100, 99, 1), 0);
	ck_assert_int_eq(range_check(100, 99, 2), -ERANGE);
	ck_assert_int_eq(range_check(100, 101, 0), -ERANGE);
	ck_assert_int_eq(range_check(100, 0, 101), -ERANGE);
	ck_assert_int_eq(range_check(100, UINT64_MAX, 2), -ERANGE);
	ck_assert_int_eq(range_check(100, 2, UINT64_MAX), -ERANGE);
	ck_assert_int_eq(range_check(UINT64_MAX, UINT64_MAX, 0), 0);
	ck_assert_int_eq(range_check(UINT64_MAX, UINT64_MAX, 1), -ERANGE);
	ck_assert_int_eq(range_check(0, 0, 0), 0);
}
END_TEST

START_TEST(test_range_checks)
{
	const size_t size = 4096;
	struct {
		size_t off, len;
	} const bad[] = {
		{ size + 1, 0 }, { size, 1 }, { 0, size + 1 }, { 1, size },
		{ SIZE_MAX, 0 }, { SIZE_MAX, 2 }, { 2, SIZE_MAX },
		{ size - 1, SIZE_MAX }, { SIZE_MAX - 10, 20 },
	};
	struct hmc_buf *buf = create_cpu(size, HMC_BUF_F_NO_KMOD);
	unsigned char *io = malloc(2 * size);
	size_t i;

	ck_assert_ptr_nonnull(io);
	pattern_fill(hmc_buf_ptr(buf), size, 1);
	pattern_fill(io, 2 * size, 2);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(hmc_buf_write(buf, bad[i].off, io, bad[i].len,
					       HMC_MEM_CPU), -ERANGE);
		ck_assert_int_eq(hmc_buf_read(buf, bad[i].off, io, bad[i].len,
					      HMC_MEM_CPU), -ERANGE);
		ck_assert_int_eq(hmc_buf_copy_within(buf, bad[i].off, 0,
						     bad[i].len), -ERANGE);
		ck_assert_int_eq(hmc_buf_copy_within(buf, 0, bad[i].off,
						     bad[i].len), -ERANGE);
	}
	/* Empty ranges inside the buffer, its end included, succeed. */
	ck_assert_int_eq(hmc_buf_write(buf, size, NULL, 0, HMC_MEM_CPU), 0);
	ck_assert_int_eq(hmc_buf_read(buf, 0, NULL, 0, HMC_MEM_CPU), 0);
	ck_assert_int_eq(hmc_buf_copy_within(buf, size, 0, 0), 0);
	ck_assert_int_eq(hmc_buf_copy_within(buf, 7, 7, size - 7), 0);
	/* Other bad arguments. */
	ck_assert_int_eq(hmc_buf_write(buf, 0, NULL, 1, HMC_MEM_CPU), -EINVAL);
	ck_assert_int_eq(hmc_buf_read(buf, 0, NULL, 1, HMC_MEM_CPU), -EINVAL);
	ck_assert_int_eq(hmc_buf_write(buf, 0, io, 1, (enum hmc_mem_type)9),
			 -EINVAL);
	ck_assert_int_eq(hmc_buf_read(buf, 0, io, 1, (enum hmc_mem_type)-1),
			 -EINVAL);

	/* Nothing moved: neither the buffer nor the caller's memory. */
	ck_assert_int_eq(pattern_mismatch(hmc_buf_ptr(buf), size, 1), -1);
	ck_assert_int_eq(pattern_mismatch(io, 2 * size, 2), -1);
	free(io);
	hmc_buf_destroy(buf);
}
END_TEST

START_TEST(test_round_trip)
{
	const size_t size = (1 << 20) + 3;
	struct hmc_buf *buf = create_cpu(size, HMC_BUF_F_NO_KMOD);
	unsigned char *src = malloc(size), *dst = malloc(size + 2);
	const size_t off = 4097, len = 300001;

	ck_assert(src && dst);
	pattern_fill(src, size, 3);
	ck_assert_int_eq(hmc_buf_write(buf, 0, src, size, HMC_MEM_CPU), 0);
	ck_assert_int_eq(pattern_mismatch(hmc_buf_ptr(buf), size, 3), -1);
	pattern_fill(dst, size + 2, 4);
	ck_assert_int_eq(hmc_buf_read(buf, 0, dst + 1, size, HMC_MEM_CPU), 0);
	ck_assert_int_eq(pattern_mismatch(dst + 1, size, 3), -1);
	ck_assert_uint_eq(dst[0], pattern_at(4, 0));
	ck_assert_uint_eq(dst[size + 1], pattern_at(4, size + 1));

	/* A piece in the middle; the bytes around it keep seed 3. */
	pattern_fill(src, len, 5);
	ck_assert_int_eq(hmc_buf_write(buf, off, src, len, HMC_MEM_CPU), 0);
	ck_assert_int_eq(hmc_buf_read(buf, 0, dst, size, HMC_MEM_CPU), 0);
	ck_assert_int_eq(pattern_mismatch(dst, off, 3), -1);
	ck_assert_int_eq(pattern_mismatch(dst + off, len, 5), -1);
	pattern_fill(src, size, 3);
	ck_assert_int_eq(memcmp(dst + off + len, src + off + len,
				size - off - len), 0);
	/* The last byte alone. */
	ck_assert_int_eq(hmc_buf_read(buf, size - 1, dst, 1, HMC_MEM_CPU), 0);
	ck_assert_uint_eq(dst[0], pattern_at(3, size - 1));
	free(src);
	free(dst);
	hmc_buf_destroy(buf);
}
END_TEST

/* Every byte of @buf against the model @ref, read through the API. */
static void check_model(struct hmc_buf *buf, const unsigned char *ref,
			unsigned char *scratch, size_t size, int step)
{
	size_t i;

	memset(scratch, 0xa5, size);
	ck_assert_int_eq(hmc_buf_read(buf, 0, scratch, size, HMC_MEM_CPU), 0);
	for (i = 0; i < size; i++)
		if (scratch[i] != ref[i])
			ck_abort_msg("step %d: byte %zu is %u, not %u", step,
				     i, scratch[i], ref[i]);
}

START_TEST(test_copy_within)
{
	const size_t size = 65536 + 17;
	struct hmc_buf *buf = create_cpu(size, HMC_BUF_F_NO_KMOD);
	unsigned char *ref = malloc(size), *scratch = malloc(size);
	unsigned int seed = 12345;
	size_t dst, src, len;
	int step;

	ck_assert(ref && scratch);
	pattern_fill(ref, size, 6);
	ck_assert_int_eq(hmc_buf_write(buf, 0, ref, size, HMC_MEM_CPU), 0);

	/* Overlapping, forwards (dst > src) and backwards (dst < src). */
	ck_assert_int_eq(hmc_buf_copy_within(buf, 100, 0, 5000), 0);
	memmove(ref + 100, ref, 5000);
	check_model(buf, ref, scratch, size, -1);
	ck_assert_int_eq(hmc_buf_copy_within(buf, 0, 77, 6000), 0);
	memmove(ref, ref + 77, 6000);
	check_model(buf, ref, scratch, size, -2);
	/* By one byte, the whole buffer less one. */
	ck_assert_int_eq(hmc_buf_copy_within(buf, 1, 0, size - 1), 0);
	memmove(ref + 1, ref, size - 1);
	check_model(buf, ref, scratch, size, -3);
	ck_assert_int_eq(hmc_buf_copy_within(buf, 0, 1, size - 1), 0);
	memmove(ref, ref + 1, size - 1);
	check_model(buf, ref, scratch, size, -4);

	/* Random writes and copies, overlapping or not. */
	for (step = 0; step < 200; step++) {
		len = rand_r(&seed) % (size / 2);
		dst = rand_r(&seed) % (size - len + 1);
		src = rand_r(&seed) % (size - len + 1);
		if (step % 3 == 0) {
			pattern_fill(scratch, len, 100 + step);
			ck_assert_int_eq(hmc_buf_write(buf, dst, scratch, len,
						       HMC_MEM_CPU), 0);
			memcpy(ref + dst, scratch, len);
		} else {
			ck_assert_int_eq(hmc_buf_copy_within(buf, dst, src,
							     len), 0);
			memmove(ref + dst, ref + src, len);
		}
		check_model(buf, ref, scratch, size, step);
	}
	free(ref);
	free(scratch);
	hmc_buf_destroy(buf);
}
END_TEST

/* Only where no GPU runtime loads (see main()). */
START_TEST(test_gpu_absent)
{
	struct hmc_buf *buf = create_cpu(4096, HMC_BUF_F_NO_KMOD);
	char host[64];

	pattern_fill(hmc_buf_ptr(buf), 4096, 7);
	/* A "device" source or destination needs its runtime. */
	ck_assert_int_eq(hmc_buf_write(buf, 0, host, sizeof(host),
				       HMC_MEM_CUDA), -ENODEV);
	ck_assert_int_eq(hmc_buf_read(buf, 0, host, sizeof(host),
				      HMC_MEM_ROCM), -ENODEV);
	ck_assert_int_eq(pattern_mismatch(hmc_buf_ptr(buf), 4096, 7), -1);
	hmc_buf_destroy(buf);

	buf = (struct hmc_buf *)1;
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CUDA, 0, 4096, NULL, &buf),
			 -ENODEV);
	ck_assert_ptr_null(buf);
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_ROCM, 0, 4096, NULL, &buf),
			 -ENODEV);
}
END_TEST

/*
 * The child of test_mlock_refused: returns the number of the check that
 * failed, or 0.
 */
static int mlock_refused_child(void)
{
	const struct rlimit lim = { 64 << 10, 64 << 10 };
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	const size_t size = 8 << 20;
	struct hmc_buf *buf;
	unsigned char *data;

	/* Without CAP_IPC_LOCK, RLIMIT_MEMLOCK applies (root too). */
	if (drop_cap(CAP_IPC_LOCK) || drop_cap(CAP_SYS_MODULE) ||
	    setrlimit(RLIMIT_MEMLOCK, &lim))
		return 1;
	capture_log();
	unsetenv("HMC_REQUIRE_KMOD");

	/* Under the limit: locked, so nothing to say. */
	if (hmc_buf_create(HMC_MEM_CPU, 0, 4096, NULL, &buf))
		return 2;
	if (hmc_buf_backing(buf) != HMC_BUF_BACKING_MEMFD ||
	    logged.count[HMC_LOG_WARN])
		return 3;
	hmc_buf_destroy(buf);

	/* Over it: unlocked, said so, and still correct. */
	if (hmc_buf_create(HMC_MEM_CPU, 0, size, NULL, &buf))
		return 4;
	if (hmc_buf_backing(buf) != HMC_BUF_BACKING_MEMFD)
		return 5;
	if (logged.count[HMC_LOG_WARN] != 1 ||
	    !strstr(logged.last[HMC_LOG_WARN], "mlock"))
		return 6;
	/* Unlocked, but every page is there already. */
	data = malloc(size / page);
	if (!data || mincore(hmc_buf_ptr(buf), size, data) ||
	    memchr(data, 0, size / page))
		return 7;
	free(data);
	data = malloc(size);
	if (!data)
		return 7;
	pattern_fill(data, size, 8);
	if (hmc_buf_write(buf, 0, data, size, HMC_MEM_CPU))
		return 8;
	memset(data, 0, size);
	if (hmc_buf_read(buf, 0, data, size, HMC_MEM_CPU) ||
	    pattern_mismatch(data, size, 8) != -1 ||
	    pattern_mismatch(hmc_buf_ptr(buf), size, 8) != -1)
		return 9;
	hmc_buf_destroy(buf);

	buf = NULL;
	if (hmc_buf_create(HMC_MEM_CPU, 0, size,
			   &(struct hmc_buf_opts){ .sz = sizeof(struct hmc_buf_opts),
						   .flags = HMC_BUF_F_NO_KMOD },
			   &buf) || hmc_buf_backing(buf) != HMC_BUF_BACKING_MEMFD ||
	    logged.count[HMC_LOG_WARN] != 2)
		return 10;
	hmc_buf_destroy(buf);
	free(data);
	return 0;
}

/* Only where /dev/hmc does not exist (see main()). */
START_TEST(test_mlock_refused)
{
	int status;
	pid_t pid;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid)
		_exit(mlock_refused_child());
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child failed check %d (status 0x%x)",
		      WEXITSTATUS(status), status);
}
END_TEST

static bool gpu_runtime_present(void)
{
	static const char *const libs[] = {
		"libcuda.so.1", "libamdhip64.so", "libamdhip64.so.7",
		"libamdhip64.so.6", "libamdhip64.so.5", NULL
	};
	const char *const *lib;
	void *h;

	for (lib = libs; *lib; lib++) {
		h = dlopen(*lib, RTLD_NOW | RTLD_LOCAL);
		if (h) {
			dlclose(h);
			return true;
		}
	}
	return false;
}

int main(void)
{
	TCase *tc = tcase_create("buf");
	bool devhmc = access("/dev/hmc", F_OK) == 0;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_create_args);
	tcase_add_test(tc, test_opts_size);
	tcase_add_test(tc, test_flags);
	tcase_add_test(tc, test_numa);
	tcase_add_test(tc, test_no_kmod);
	tcase_add_test(tc, test_memfd_not_inherited);
	tcase_add_test(tc, test_range_helper);
	tcase_add_test(tc, test_range_checks);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_copy_within);
	if (devhmc) {
		printf("SKIP: /dev/hmc exists: the fallback tests need a host without hmc.ko (the guest tests cover /dev/hmc)\n");
	} else {
		tcase_add_test(tc, test_without_module);
		tcase_add_test(tc, test_export_without_module);
		tcase_add_test(tc, test_require_kmod);
		if (ASAN_BUILD)
			printf("SKIP: mlock_refused: AddressSanitizer makes mlock() a no-op (the plain build runs it)\n");
		else
			tcase_add_test(tc, test_mlock_refused);
		tcase_add_test(tc, test_no_memfd);
	}
	if (gpu_runtime_present())
		printf("SKIP: a GPU runtime is present: its -ENODEV test does not apply (tests/gpu covers it)\n");
	else
		tcase_add_test(tc, test_gpu_absent);
	return run_tcase("buf", tc);
}
