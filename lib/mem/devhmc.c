// SPDX-License-Identifier: MIT
/*
 * The /dev/hmc client.
 *
 * When the node is missing, libhmc tries once per process to load hmc.ko
 * the way modprobe would (libkmod, honouring the blacklist), but only if
 * the caller holds CAP_SYS_MODULE in its effective set: uid 0 alone does
 * not let a process load modules. devtmpfs creates the node at once, but
 * udev may still be applying its mode, so opening is retried for a second.
 */
#include <errno.h>
#include <fcntl.h>
#include <libkmod.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "mem/devhmc.h"
#include "sys/log.h"

#define DEVHMC_NODE_WAIT_MS	1000
#define DEVHMC_NODE_POLL_MS	10

static struct {
	pthread_once_t once;
	char why[192];		/* why hmc.ko could not be loaded, or "" */
} autoload = { .once = PTHREAD_ONCE_INIT };

static void autoload_failed(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static void autoload_failed(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(autoload.why, sizeof(autoload.why), fmt, ap);
	va_end(ap);
}

/* libkmod logs to stderr by default: route it to our debug log. */
static void kmod_log(void *data, int priority, const char *file, int line,
		     const char *fn, const char *format, va_list args)
{
	char msg[256];

	if (!log_enabled(HMC_LOG_DEBUG))
		return;
	vsnprintf(msg, sizeof(msg), format, args);
	pr_debug("libkmod: %s", msg);
}

static bool may_load_modules(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = { 0 };

	if (syscall(SYS_capget, &hdr, data))
		return false;
	return data[CAP_TO_INDEX(CAP_SYS_MODULE)].effective &
	       CAP_TO_MASK(CAP_SYS_MODULE);
}

/* 0 if hmc is loaded (or now being loaded), else -errno and autoload.why. */
static int load_module(void)
{
	struct kmod_module *mod = NULL;
	struct kmod_ctx *ctx;
	int ret;

	ctx = kmod_new(NULL, NULL);
	if (!ctx) {
		autoload_failed("libkmod could not start");
		return -ENOMEM;
	}
	kmod_set_log_fn(ctx, kmod_log, NULL);
	ret = kmod_module_new_from_name(ctx, "hmc", &mod);
	if (ret < 0) {
		autoload_failed("libkmod: %s", strerror(-ret));
		goto out;
	}
	switch (kmod_module_get_initstate(mod)) {
	case KMOD_MODULE_LIVE:
	case KMOD_MODULE_COMING:
	case KMOD_MODULE_BUILTIN:
		ret = 0;
		goto out;
	default:
		break;
	}
	if (!may_load_modules()) {
		autoload_failed("hmc.ko is not loaded and this process may not load it (no CAP_SYS_MODULE): run 'modprobe hmc' as root");
		ret = -EPERM;
		goto out;
	}
	ret = kmod_module_probe_insert_module(mod, KMOD_PROBE_APPLY_BLACKLIST,
					      NULL, NULL, NULL, NULL);
	if (ret > 0) {
		autoload_failed("hmc.ko is blacklisted");
		ret = -EPERM;
	} else if (ret < 0) {
		autoload_failed("loading hmc.ko failed: %s%s", strerror(-ret),
				ret == -ENOENT ?
				" (is it installed? make dkms-install)" : "");
	} else {
		pr_info("loaded hmc.ko");
	}
out:
	kmod_module_unref(mod);
	kmod_unref(ctx);
	return ret;
}

static int open_node(void)
{
	int fd;

	do
		fd = open(HMC_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	return fd < 0 ? -errno : fd;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void autoload_module(void)
{
	const struct timespec poll = {
		.tv_nsec = DEVHMC_NODE_POLL_MS * 1000000L,
	};
	int64_t deadline;
	int fd;

	if (load_module())
		return;
	deadline = now_ms() + DEVHMC_NODE_WAIT_MS;
	for (;;) {
		fd = open_node();
		if (fd >= 0) {
			close(fd);
			return;
		}
		if ((fd != -ENOENT && fd != -EACCES) || now_ms() >= deadline)
			break;
		nanosleep(&poll, NULL);
	}
	autoload_failed("hmc is loaded but %s cannot be opened: %s",
			HMC_DEVICE_PATH, strerror(-fd));
}

int devhmc_ioctl(int fd, unsigned long cmd, void *arg)
{
	int ret;

	do
		ret = ioctl(fd, cmd, arg);
	while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : 0;
}

int devhmc_open(uint64_t features, struct hmc_version *version,
		enum hmc_log_level level)
{
	struct hmc_version ver = { 0 };
	int fd, ret;

	fd = open_node();
	if (fd == -ENOENT) {
		pthread_once(&autoload.once, autoload_module);
		fd = open_node();
	}
	if (fd < 0) {
		if (fd == -ENOENT)
			log_emit(level, "no %s: %s", HMC_DEVICE_PATH,
				 autoload.why[0] ? autoload.why :
				 "hmc.ko is not loaded");
		else
			log_emit(level, "cannot open %s: %s", HMC_DEVICE_PATH,
				 strerror(-fd));
		return fd == -EPERM ? -EACCES : fd;
	}

	ret = devhmc_ioctl(fd, HMC_IOC_GET_VERSION, &ver);
	if (ret) {
		log_emit(level, "%s: GET_VERSION failed: %s", HMC_DEVICE_PATH,
			 strerror(-ret));
	} else if (ver.abi_major != HMC_ABI_MAJOR) {
		log_emit(level, "%s speaks ABI %u.%u, libhmc %u.%u",
			 HMC_DEVICE_PATH, ver.abi_major, ver.abi_minor,
			 HMC_ABI_MAJOR, HMC_ABI_MINOR);
		ret = -EPROTO;
	} else if ((ver.features & features) != features) {
		log_emit(level, "%s lacks features 0x%llx", HMC_DEVICE_PATH,
			 (unsigned long long)(features & ~ver.features));
		ret = -EOPNOTSUPP;
	}
	if (ret) {
		close(fd);
		return ret;
	}
	if (version)
		*version = ver;
	return fd;
}

int devhmc_buf_alloc(int fd, uint64_t size, int numa_node,
		     struct hmc_buf_alloc *alloc)
{
	memset(alloc, 0, sizeof(*alloc));
	alloc->size = size;
	if (numa_node >= 0) {
		alloc->flags = HMC_BUF_ALLOC_F_NUMA;
		alloc->numa_node = numa_node;
	}
	return devhmc_ioctl(fd, HMC_IOC_BUF_ALLOC, alloc);
}

int devhmc_peer_state(int fd, uint64_t peer_id, uint32_t state, int err,
		      uint32_t transport, const void *addr, uint32_t addr_len)
{
	struct hmc_peer_state arg = {
		.peer_id = peer_id,
		.state = state,
		.error = -err,
		.transport = transport,
		.addr_len = addr_len,
	};

	if (addr_len > sizeof(arg.addr))
		return -EINVAL;
	memcpy(arg.addr, addr, addr_len);
	return devhmc_ioctl(fd, HMC_IOC_PEER_STATE, &arg);
}

int devhmc_get_stats(int fd, bool global, uint64_t counters[HMC_STAT_COUNT])
{
	struct hmc_stats stats = {
		.flags = global ? HMC_STATS_F_GLOBAL : 0,
		.nr_counters = HMC_STAT_COUNT,
		.counters_ptr = (uintptr_t)counters,
	};

	return devhmc_ioctl(fd, HMC_IOC_GET_STATS, &stats);
}
