// SPDX-License-Identifier: MIT
/*
 * buf_kmod MODE: ConnBuffers against the real hmc.ko, in the test guest
 * (tests/vm/suites/50-libhmc-kmod.sh). One TAP line per check; exits 1 if
 * any failed.
 *
 *  kmod      hmc is loaded: CPU buffers are backed by /dev/hmc, every byte
 *            goes through the mapping of the kernel's pages, and the
 *            module's global counters return to zero after destroy.
 *  autoload  hmc is installed but not loaded: libhmc loads it (libkmod)
 *            and the buffer is backed by it.
 *  noload    hmc is not loaded and this process drops CAP_SYS_MODULE:
 *            HMC_REQUIRE_KMOD=1 fails with -ENODEV, without it the buffer
 *            falls back to anonymous memory; hmc stays unloaded.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <hmc/hmc.h>

#include "mem/buf.h"
#include "mem/devhmc.h"
#include "pattern.h"

#define BUF_SIZE	((3 << 20) + 123)	/* not a page multiple */

static int failed;

__attribute__((format(printf, 2, 3)))
static bool tap(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s - libhmc-kmod: ", ok ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	failed += !ok;
	return ok;
}

static bool module_loaded(void)
{
	return access("/sys/module/hmc", F_OK) == 0;
}

static size_t page_round(size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (n + page - 1) / page * page;
}

/* The module's global counters, through a file of our own. */
static bool global_stats(uint64_t counters[HMC_STAT_COUNT])
{
	int fd = devhmc_open(0, NULL, HMC_LOG_ERROR), ret;

	if (fd < 0)
		return false;
	ret = devhmc_get_stats(fd, true, counters);
	close(fd);
	return ret == 0;
}

static void check_stats_zero(const char *when)
{
	static const char *const live[] = {
		[HMC_STAT_BUFS_LIVE] = "bufs_live",
		[HMC_STAT_BYTES_LIVE] = "bytes_live",
		[HMC_STAT_PAGES_PINNED] = "pages_pinned",
		[HMC_STAT_MAPPINGS_LIVE] = "mappings_live",
		[HMC_STAT_HANDLES_LIVE] = "handles_live",
	};
	uint64_t c[HMC_STAT_COUNT];
	char bad[256] = "";
	size_t i;

	if (!tap(global_stats(c), "GET_STATS global %s", when))
		return;
	for (i = 0; i < sizeof(live) / sizeof(live[0]); i++)
		if (c[i])
			snprintf(bad + strlen(bad), sizeof(bad) - strlen(bad),
				 " %s=%llu", live[i],
				 (unsigned long long)c[i]);
	tap(!bad[0], "live counters zero %s%s%s", when, bad[0] ? ":" : "",
	    bad);
}

/* Every byte through the API and the mapping, against a memmove model. */
static void check_data(struct hmc_buf *buf, const char *what)
{
	const size_t size = hmc_buf_size(buf);
	unsigned char *p = hmc_buf_ptr(buf);
	unsigned char *model = malloc(size), *out = malloc(size);

	if (!model || !out) {
		tap(false, "%s: out of memory", what);
		goto out;
	}
	pattern_fill(model, size, 21);
	tap(hmc_buf_write(buf, 0, model, size, HMC_MEM_CPU) == 0 &&
	    pattern_mismatch(p, size, 21) < 0,
	    "%s: write, every byte in the mapping", what);

	pattern_fill(p + 4097, 100000, 22);	/* straight into the pages */
	pattern_fill(model + 4097, 100000, 22);
	memset(out, 0, size);
	tap(hmc_buf_read(buf, 0, out, size, HMC_MEM_CPU) == 0 &&
	    !memcmp(out, model, size), "%s: read back every byte", what);

	memmove(model + 1000, model + 3, 500000);
	memmove(model + 7, model + 90001, 800000);
	tap(hmc_buf_copy_within(buf, 1000, 3, 500000) == 0 &&
	    hmc_buf_copy_within(buf, 7, 90001, 800000) == 0 &&
	    !memcmp(p, model, size), "%s: overlapping copy_within", what);
	tap(hmc_buf_write(buf, size - 1, model, 2, HMC_MEM_CPU) == -ERANGE &&
	    hmc_buf_read(buf, SIZE_MAX, out, 2, HMC_MEM_CPU) == -ERANGE &&
	    !memcmp(p, model, size), "%s: ranges checked", what);
out:
	free(model);
	free(out);
}

/*
 * The buffer is the module's: a second mapping of its handle shows the
 * same pages, and the counters see it.
 */
static void check_kmod_buffer(struct hmc_buf *buf)
{
	struct hmc_buf_info info = { 0 };
	const size_t len = page_round(hmc_buf_size(buf));
	uint64_t c[HMC_STAT_COUNT];
	unsigned char *second;
	uint32_t handle;
	int fd, ret;

	if (!tap(buf_devhmc(buf, &fd, &handle) == 0, "file and handle"))
		return;
	info.handle = handle;
	ret = devhmc_ioctl(fd, HMC_IOC_BUF_INFO, &info);
	if (!tap(ret == 0 && info.type == HMC_BUF_TYPE_KERNEL &&
		 info.size == len && info.nr_mappings == 1,
		 "BUF_INFO: kernel pages, %llu bytes, %u mapping(s)",
		 (unsigned long long)info.size, info.nr_mappings))
		return;
	second = mmap(NULL, len, PROT_READ, MAP_SHARED, fd,
		      (off_t)info.mmap_offset);
	if (!tap(second != MAP_FAILED, "second mapping of the handle"))
		return;
	pattern_fill(hmc_buf_ptr(buf), hmc_buf_size(buf), 23);
	tap(pattern_mismatch(second, hmc_buf_size(buf), 23) < 0,
	    "second mapping sees every byte written");
	tap(global_stats(c) && c[HMC_STAT_BUFS_LIVE] >= 1 &&
	    c[HMC_STAT_BYTES_LIVE] >= len && c[HMC_STAT_MAPPINGS_LIVE] >= 2,
	    "counters see the live buffer and its two mappings");
	munmap(second, len);
}

/*
 * hmc_buf_export_fd(): the dma-buf maps the buffer's own pages (whole and
 * a part), read-only unless asked, and outlives the buffer.
 */
static void check_export(struct hmc_buf *buf)
{
	const size_t size = hmc_buf_size(buf), page = (size_t)getpagesize();
	unsigned char *whole, *part;
	int fd, fd_part, fd_ro, ret;

	pattern_fill(hmc_buf_ptr(buf), size, 41);
	ret = hmc_buf_export_fd(buf, 0, 0, HMC_BUF_EXPORT_RDWR, &fd);
	if (!tap(ret == 0, "export_fd of the whole buffer (%s)",
		 hmc_strerror(ret)))
		return;
	tap(fcntl(fd, F_GETFD) & FD_CLOEXEC, "the dma-buf fd is close-on-exec");
	whole = mmap(NULL, page_round(size), PROT_READ | PROT_WRITE, MAP_SHARED,
		     fd, 0);
	tap(whole != MAP_FAILED && pattern_mismatch(whole, size, 41) < 0,
	    "its mapping shows every byte of the buffer");
	ret = hmc_buf_export_fd(buf, page, 2 * page, 0, &fd_part);
	part = ret ? MAP_FAILED :
		     mmap(NULL, 2 * page, PROT_READ, MAP_SHARED, fd_part, 0);
	tap(part != MAP_FAILED &&
	    !memcmp(part, (unsigned char *)hmc_buf_ptr(buf) + page, 2 * page),
	    "a part [page, 3 pages) maps exactly those bytes");
	ret = hmc_buf_export_fd(buf, 0, 0, 0, &fd_ro);
	tap(!ret && mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd_ro,
			 0) == MAP_FAILED,
	    "without HMC_BUF_EXPORT_RDWR it cannot be mapped writable");
	tap(hmc_buf_export_fd(buf, 1, page, 0, &fd_ro) == -EINVAL &&
	    hmc_buf_export_fd(buf, 0, page_round(size) + page, 0, &fd_ro) ==
	    -ERANGE && hmc_buf_export_fd(buf, 0, 0, 0x80, &fd_ro) == -EINVAL,
	    "unaligned, out of range and unknown flags are refused");
	if (whole != MAP_FAILED) {
		whole[7] ^= 0xff;	/* writes through the dma-buf land in it */
		tap(((unsigned char *)hmc_buf_ptr(buf))[7] == whole[7],
		    "a write through the dma-buf lands in the buffer");
		munmap(whole, page_round(size));
	}
	if (part != MAP_FAILED)
		munmap(part, 2 * page);
	close(fd_ro);
	close(fd_part);
	close(fd);
}

static struct hmc_buf *create(uint32_t flags, int node, int *ret)
{
	HMC_OPTS(hmc_buf_opts, opts, .flags = flags, .numa_node = node);
	struct hmc_buf *buf = NULL;

	*ret = hmc_buf_create(HMC_MEM_CPU, 0, BUF_SIZE, &opts, &buf);
	return buf;
}

static void check_numa(void)
{
	struct hmc_buf_info info = { 0 };
	struct hmc_version ver;
	struct hmc_buf *buf;
	uint32_t handle;
	int fd, ret;

	fd = devhmc_open(0, &ver, HMC_LOG_ERROR);
	if (fd >= 0)
		close(fd);
	if (fd < 0 || !(ver.features & HMC_FEAT_NUMA)) {
		printf("ok - libhmc-kmod: HMC_BUF_F_NUMA # SKIP module without HMC_FEAT_NUMA\n");
		return;
	}
	buf = create(HMC_BUF_F_NUMA, 0, &ret);
	if (tap(ret == 0 && hmc_buf_backing(buf) == HMC_BUF_BACKING_KMOD &&
		!buf_devhmc(buf, &fd, &handle), "HMC_BUF_F_NUMA: kmod buffer")) {
		info.handle = handle;
		ret = devhmc_ioctl(fd, HMC_IOC_BUF_INFO, &info);
		tap(!ret && info.numa_node == 0,
		    "HMC_BUF_F_NUMA: pages on node %d", info.numa_node);
	}
	hmc_buf_destroy(buf);
}

static void mode_kmod(void)
{
	struct hmc_buf *buf;
	int ret;

	buf = create(0, 0, &ret);
	if (tap(ret == 0 && hmc_buf_backing(buf) == HMC_BUF_BACKING_KMOD,
		"default CPU buffer is backed by kmod (%d, %s)", ret,
		hmc_buf_backing_name(hmc_buf_backing(buf)))) {
		check_kmod_buffer(buf);
		check_data(buf, "kmod");
		check_export(buf);
	}
	hmc_buf_destroy(buf);
	check_stats_zero("after destroy");

	buf = create(HMC_BUF_F_REQUIRE_KMOD, 0, &ret);
	tap(ret == 0 && hmc_buf_backing(buf) == HMC_BUF_BACKING_KMOD,
	    "HMC_BUF_F_REQUIRE_KMOD is satisfied");
	hmc_buf_destroy(buf);

	check_numa();

	/* A memfd: the fallback of a process that skips the module. */
	buf = create(HMC_BUF_F_NO_KMOD, 0, &ret);
	tap(ret == 0 && hmc_buf_backing(buf) == HMC_BUF_BACKING_MEMFD,
	    "HMC_BUF_F_NO_KMOD skips /dev/hmc (%s)",
	    hmc_buf_backing_name(hmc_buf_backing(buf)));
	hmc_buf_destroy(buf);
	check_stats_zero("at the end");
}

static void mode_autoload(void)
{
	struct hmc_buf *buf;
	int ret;

	if (!tap(!module_loaded() && access(HMC_DEVICE_PATH, F_OK),
		 "hmc not loaded, no %s", HMC_DEVICE_PATH))
		return;
	setenv("HMC_REQUIRE_KMOD", "1", 1);
	buf = create(0, 0, &ret);
	tap(ret == 0 && hmc_buf_backing(buf) == HMC_BUF_BACKING_KMOD,
	    "libkmod loads hmc, buffer backed by kmod (%d, %s)", ret,
	    hmc_buf_backing_name(hmc_buf_backing(buf)));
	tap(module_loaded(), "hmc is loaded now");
	if (buf)
		check_data(buf, "autoloaded");
	hmc_buf_destroy(buf);
	if (module_loaded())
		check_stats_zero("after destroy");
}

static bool drop_cap_sys_module(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	const int i = CAP_TO_INDEX(CAP_SYS_MODULE);

	if (syscall(SYS_capget, &hdr, data))
		return false;
	data[i].effective &= ~CAP_TO_MASK(CAP_SYS_MODULE);
	data[i].permitted &= ~CAP_TO_MASK(CAP_SYS_MODULE);
	data[i].inheritable &= ~CAP_TO_MASK(CAP_SYS_MODULE);
	return syscall(SYS_capset, &hdr, data) == 0;
}

static void mode_noload(void)
{
	struct hmc_buf *buf;
	int ret;

	if (!tap(!module_loaded(), "hmc not loaded") ||
	    !tap(drop_cap_sys_module(), "CAP_SYS_MODULE dropped (uid %d)",
		 (int)getuid()))
		return;
	setenv("HMC_REQUIRE_KMOD", "1", 1);
	buf = create(0, 0, &ret);
	tap(ret == -ENODEV && !buf,
	    "HMC_REQUIRE_KMOD=1 without a loadable module: -ENODEV (%d)", ret);
	unsetenv("HMC_REQUIRE_KMOD");
	buf = create(0, 0, &ret);
	tap(ret == 0 && hmc_buf_backing(buf) == HMC_BUF_BACKING_MEMFD,
	    "fallback without it (%d, %s)", ret,
	    hmc_buf_backing_name(hmc_buf_backing(buf)));
	if (buf)
		check_data(buf, "fallback");
	hmc_buf_destroy(buf);
	tap(!module_loaded(), "hmc still not loaded");
}

int main(int argc, char **argv)
{
	const char *mode = argc == 2 ? argv[1] : "";

	/* Say why things fail, on stderr. */
	if (!getenv("HMC_LOG"))
		setenv("HMC_LOG", "warn", 1);
	if (!strcmp(mode, "kmod"))
		mode_kmod();
	else if (!strcmp(mode, "autoload"))
		mode_autoload();
	else if (!strcmp(mode, "noload"))
		mode_noload();
	else {
		fprintf(stderr, "usage: buf_kmod kmod|autoload|noload\n");
		return 2;
	}
	return failed ? 1 : 0;
}
