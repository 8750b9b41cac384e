// SPDX-License-Identifier: MIT
/*
 * ConnBuffers: one stable region addressed by (offset, length).
 *
 * CPU buffers, in order of preference:
 *  KMOD:  pinned kernel pages from /dev/hmc (BUF_ALLOC), mapped MAP_SHARED.
 *         Each buffer has its own open file: the module lets only the
 *         opening process use a file, and closing it frees the handle.
 *  MEMFD: a memfd whose size is sealed, mapped MAP_SHARED and mlocked
 *         (pre-faulted only, when RLIMIT_MEMLOCK refuses the lock). The
 *         descriptor is what lets a peer on this host map the buffer
 *         (the shm transport) without the module.
 *  MLOCK: private anonymous memory, mlocked, where the kernel has no
 *         memfd_create (before 3.17, or a sandbox refusing it).
 *  ANON:  the same, pre-faulted but unlocked, when mlock is refused
 *         (RLIMIT_MEMLOCK); RDMA registration may still pin it.
 * The fallback to MEMFD happens when /dev/hmc is unusable or refuses
 * the memory (ENOMEM); HMC_REQUIRE_KMOD or HMC_BUF_F_REQUIRE_KMOD turn it
 * into an error, HMC_BUF_F_NO_KMOD skips /dev/hmc. HMC_BUF_F_NUMA goes to
 * BUF_ALLOC, or to mbind(MPOL_BIND) before the pages are faulted in.
 * KMOD and MEMFD mappings are not inherited across fork() (MADV_DONTFORK
 * for memfd, as the module does for its own): a child writing into a
 * shared mapping would write into the parent's buffer.
 * GPU buffers are device memory from hmc_mem_alloc() (DEVICE).
 */
#include <fcntl.h>
#include <linux/mempolicy.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mem/buf.h"
#include "mem/devhmc.h"
#include "mem/mem.h"
#include "sys/log.h"
#include "sys/opts.h"
#include "sys/util.h"

#define BUF_FLAGS	(HMC_BUF_F_REQUIRE_KMOD | HMC_BUF_F_NO_KMOD | \
			 HMC_BUF_F_NUMA)
#define BUF_MAX_NODES	1024		/* nodes mbind() can name here */

struct hmc_buf {
	enum hmc_mem_type type;
	int device;
	enum hmc_buf_backing backing;
	void *ptr;
	size_t size;
	size_t map_len;		/* KMOD, MEMFD, MLOCK, ANON: bytes mapped at ptr */
	int devhmc_fd;		/* KMOD: the file holding the buffer, else -1 */
	uint32_t handle;	/* KMOD: its handle in that file */
	int memfd;		/* MEMFD: the memfd, else -1 */
};

static bool env_require_kmod(void)
{
	const char *env = getenv("HMC_REQUIRE_KMOD");

	return env && *env && strcmp(env, "0");
}

static int buf_check_opts(enum hmc_mem_type type,
			  const struct hmc_buf_opts *o)
{
	if (o->flags & ~BUF_FLAGS)
		return -EINVAL;
	if ((o->flags & HMC_BUF_F_REQUIRE_KMOD) &&
	    (o->flags & HMC_BUF_F_NO_KMOD))
		return -EINVAL;
	if (o->flags & HMC_BUF_F_NUMA) {
		if (o->numa_node < 0 || o->numa_node >= BUF_MAX_NODES)
			return -EINVAL;
	} else if (o->numa_node) {
		return -EINVAL;
	}
	/* Placement flags mean nothing for device memory. */
	if (type != HMC_MEM_CPU &&
	    (o->flags & (HMC_BUF_F_REQUIRE_KMOD | HMC_BUF_F_NUMA)))
		return -EINVAL;
	return 0;
}

/*
 * 0, -ENODEV if /dev/hmc cannot serve this buffer, -ENOMEM if it refused
 * the memory, or another error to report as is.
 */
static int buf_alloc_kmod(struct hmc_buf *buf, int node,
			  enum hmc_log_level level)
{
	uint64_t features = HMC_FEAT_BUF_ALLOC;
	struct hmc_buf_alloc alloc;
	struct hmc_version ver;
	void *ptr;
	int fd, ret;

	if (node >= 0)
		features |= HMC_FEAT_NUMA;
	fd = devhmc_open(features, &ver, level);
	if (fd < 0)
		return -ENODEV;
	if (buf->map_len > ver.max_buf_size) {
		log_emit(level, "%s: %zu bytes exceed its limit of %llu",
			 HMC_DEVICE_PATH, buf->size,
			 (unsigned long long)ver.max_buf_size);
		ret = -ENODEV;
		goto err_close;
	}
	ret = devhmc_buf_alloc(fd, buf->map_len, node, &alloc);
	if (ret) {
		log_emit(level < HMC_LOG_WARN ? level : HMC_LOG_WARN,
			 "%s: BUF_ALLOC of %zu bytes failed: %s%s",
			 HMC_DEVICE_PATH, buf->size, strerror(-ret),
			 ret == -ENOMEM ? " (over RLIMIT_MEMLOCK?)" : "");
		goto err_close;
	}
	ptr = mmap(NULL, buf->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   (off_t)alloc.mmap_offset);
	if (ptr == MAP_FAILED) {
		ret = -errno;
		pr_err("%s: mmap of %zu bytes failed: %s", HMC_DEVICE_PATH,
		       buf->map_len, strerror(-ret));
		goto err_close;		/* closing frees the handle */
	}
	buf->ptr = ptr;
	buf->devhmc_fd = fd;
	buf->handle = alloc.handle;
	buf->backing = HMC_BUF_BACKING_KMOD;
	return 0;

err_close:
	close(fd);
	return ret;
}

static int bind_node(void *ptr, size_t len, int node)
{
	unsigned long mask[BUF_MAX_NODES / (8 * sizeof(unsigned long))] = { 0 };
	const size_t bits = 8 * sizeof(mask[0]);

	mask[node / bits] = 1UL << (node % bits);
	/* maxnode counts one more than the bits the kernel reads. */
	if (syscall(SYS_mbind, ptr, len, MPOL_BIND, mask, BUF_MAX_NODES + 1,
		    MPOL_MF_STRICT)) {
		pr_debug("mbind to node %d: %s", node, strerror(errno));
		return errno == ENOSYS ? -EOPNOTSUPP : -errno;
	}
	return 0;
}

/*
 * Lock @buf's pages in memory, or at least have every page present before
 * a transfer needs it: 0 if locked, 1 if only faulted in.
 */
static int buf_lock_pages(struct hmc_buf *buf)
{
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	volatile char *p = buf->ptr;
	size_t off;

	if (!mlock(buf->ptr, buf->map_len))
		return 0;
	pr_warn("mlock of %zu bytes refused (%s): the ConnBuffer is not pinned; raise RLIMIT_MEMLOCK or load hmc.ko",
		buf->map_len, strerror(errno));
	for (off = 0; off < buf->map_len; off += page)
		p[off] = 0;
	return 1;
}

static int buf_alloc_anon(struct hmc_buf *buf, int node)
{
	void *p;
	int ret;

	p = mmap(NULL, buf->map_len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	if (node >= 0) {
		ret = bind_node(p, buf->map_len, node);
		if (ret) {
			munmap(p, buf->map_len);
			return ret;
		}
	}
	buf->ptr = p;
	buf->backing = buf_lock_pages(buf) ? HMC_BUF_BACKING_ANON :
					     HMC_BUF_BACKING_MLOCK;
	return 0;
}

/*
 * A sealed memfd mapped shared: -ENOSYS where memfd_create() (or sealing)
 * is unavailable, so that the caller falls back to anonymous memory.
 */
static int buf_alloc_memfd(struct hmc_buf *buf, int node)
{
	const int seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	void *p;
	int fd, ret;

	fd = memfd_create("hmc-connbuf", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		ret = -errno;
		pr_debug("memfd_create: %s", strerror(-ret));
		/* EINVAL: a kernel without MFD_ALLOW_SEALING; EPERM: a sandbox */
		return ret == -EINVAL || ret == -EPERM ? -ENOSYS : ret;
	}
	if (ftruncate(fd, (off_t)buf->map_len)) {
		ret = -errno;
		goto err_close;
	}
	/*
	 * Peers map the descriptor: its size must never change under their
	 * mapping (a shrink would turn their stores into SIGBUS), and nobody
	 * may add seals that break ours (F_SEAL_FUTURE_WRITE).
	 */
	if (fcntl(fd, F_ADD_SEALS, seals)) {
		ret = errno == EINVAL ? -ENOSYS : -errno;
		goto err_close;
	}
	p = mmap(NULL, buf->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		ret = -errno;
		goto err_close;
	}
	if (node >= 0) {
		ret = bind_node(p, buf->map_len, node);
		if (ret)
			goto err_unmap;
	}
	if (madvise(p, buf->map_len, MADV_DONTFORK)) {
		ret = -errno;
		goto err_unmap;
	}
	buf->ptr = p;
	buf->memfd = fd;
	buf->backing = HMC_BUF_BACKING_MEMFD;
	buf_lock_pages(buf);
	return 0;

err_unmap:
	munmap(p, buf->map_len);
err_close:
	close(fd);
	return ret;
}

/* Memory of our own: a memfd, or anonymous memory without memfd_create(). */
static int buf_alloc_user(struct hmc_buf *buf, int node)
{
	int ret = buf_alloc_memfd(buf, node);

	if (ret != -ENOSYS)
		return ret;
	pr_info("ConnBuffer: no memfd_create here: anonymous memory, which peers on this host cannot map");
	return buf_alloc_anon(buf, node);
}

static int buf_alloc_host(struct hmc_buf *buf, const struct hmc_buf_opts *o)
{
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	int node = o->flags & HMC_BUF_F_NUMA ? o->numa_node : -1;
	bool require;
	int ret;

	if (buf->size > SIZE_MAX - (page - 1))
		return -ENOMEM;
	buf->map_len = (buf->size + page - 1) & ~(page - 1);
	if (o->flags & HMC_BUF_F_NO_KMOD)
		return buf_alloc_user(buf, node);

	require = (o->flags & HMC_BUF_F_REQUIRE_KMOD) || env_require_kmod();
	ret = buf_alloc_kmod(buf, node,
			     require ? HMC_LOG_ERROR : HMC_LOG_INFO);
	if (ret != -ENODEV && ret != -ENOMEM)
		return ret;
	if (require) {
		pr_err("ConnBuffer: /dev/hmc is required (%s) and cannot serve %zu bytes; not falling back to memfd memory",
		       o->flags & HMC_BUF_F_REQUIRE_KMOD ?
		       "HMC_BUF_F_REQUIRE_KMOD" : "HMC_REQUIRE_KMOD",
		       buf->size);
		return ret;
	}
	pr_info("ConnBuffer: /dev/hmc unusable, using a memfd");
	return buf_alloc_user(buf, node);
}

int hmc_buf_create(enum hmc_mem_type type, int device, size_t size,
		   const struct hmc_buf_opts *opts, struct hmc_buf **out)
{
	struct hmc_buf_opts o;
	struct hmc_buf *buf;
	int ret;

	if (!out)
		return -EINVAL;
	*out = NULL;
	ret = OPTS_LOAD(&o, opts, hmc_buf_opts, numa_node);
	if (ret)
		return ret;
	if (!size || (unsigned int)type > MEM_TYPE_LAST)
		return -EINVAL;
	ret = buf_check_opts(type, &o);
	if (ret)
		return ret;
	if (type == HMC_MEM_CPU && device != 0)
		return -ENODEV;

	buf = calloc(1, sizeof(*buf));
	if (!buf)
		return -ENOMEM;
	buf->type = type;
	buf->device = device;
	buf->size = size;
	buf->devhmc_fd = -1;
	buf->memfd = -1;
	if (type == HMC_MEM_CPU) {
		ret = buf_alloc_host(buf, &o);
	} else {
		ret = hmc_mem_alloc(type, device, size, &buf->ptr);
		buf->backing = HMC_BUF_BACKING_DEVICE;
	}
	if (ret) {
		free(buf);
		return ret;
	}
	pr_debug("ConnBuffer %p: %zu bytes of %s memory (device %d, %s)",
		 buf->ptr, size, hmc_mem_type_name(type), device,
		 hmc_buf_backing_name(buf->backing));
	*out = buf;
	return 0;
}

void hmc_buf_destroy(struct hmc_buf *buf)
{
	int ret;

	if (!buf)
		return;
	if (buf->backing == HMC_BUF_BACKING_DEVICE) {
		ret = hmc_mem_free(buf->type, buf->device, buf->ptr);
		if (ret)
			pr_warn("ConnBuffer: freeing %s memory failed: %s",
				hmc_mem_type_name(buf->type),
				hmc_strerror(ret));
	} else {
		munmap(buf->ptr, buf->map_len);
		if (buf->devhmc_fd >= 0)
			close(buf->devhmc_fd);
		if (buf->memfd >= 0)
			close(buf->memfd);
	}
	free(buf);
}

void *hmc_buf_ptr(const struct hmc_buf *buf)
{
	return buf ? buf->ptr : NULL;
}

__hot size_t hmc_buf_size(const struct hmc_buf *buf)
{
	return buf ? buf->size : 0;
}

enum hmc_mem_type hmc_buf_mem_type(const struct hmc_buf *buf)
{
	return buf ? buf->type : HMC_MEM_CPU;
}

int hmc_buf_device(const struct hmc_buf *buf)
{
	return buf ? buf->device : -EINVAL;
}

enum hmc_buf_backing hmc_buf_backing(const struct hmc_buf *buf)
{
	return buf ? buf->backing : 0;
}

/*
 * Device memory through its runtime: whole pages, @len 0 to the end (the
 * runtime allocates whole pages, so the last one is the buffer's too).
 */
static int buf_export_device(struct hmc_buf *buf, size_t offset, size_t len,
			     int *fd)
{
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	int ret;

	if (offset & (page - 1) || len & (page - 1))
		return -EINVAL;
	if (!len)
		len = (buf->size - offset + page - 1) & ~(page - 1);
	ret = mem_export_dmabuf(buf->type, buf->device,
				(char *)buf->ptr + offset, len, fd);
	if (ret)
		return ret;
	/* The runtimes do not say whether theirs is close-on-exec. */
	if (fcntl(*fd, F_SETFD, FD_CLOEXEC)) {
		ret = -errno;
		close(*fd);
		return ret;
	}
	return 0;
}

/*
 * The memfd itself, only whole: a descriptor cannot name a part of a file.
 * Read-write, a duplicate; read-only, the file opened anew without write
 * access, so that the importer's mmap(PROT_WRITE, MAP_SHARED) is refused.
 */
static int buf_export_memfd(struct hmc_buf *buf, size_t offset, size_t len,
			    uint32_t flags, int *fd)
{
	char path[32];
	int nfd;

	if (offset || (len && len != buf->size && len != buf->map_len))
		return -EOPNOTSUPP;
	if (flags & HMC_BUF_EXPORT_RDWR) {
		nfd = fcntl(buf->memfd, F_DUPFD_CLOEXEC, 0);
	} else {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", buf->memfd);
		nfd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (nfd < 0)
		return -errno;
	*fd = nfd;
	return 0;
}

int hmc_buf_export_fd(struct hmc_buf *buf, size_t offset, size_t len,
		      uint32_t flags, int *fd)
{
	struct hmc_buf_export exp = {
		.flags = HMC_BUF_EXPORT_F_CLOEXEC,
		.offset = offset,
		.size = len,
	};
	int ret;

	if (!buf || !fd || (flags & ~HMC_BUF_EXPORT_RDWR))
		return -EINVAL;
	ret = range_check(buf->size, offset, len);
	if (ret)
		return ret;
	if (buf->backing == HMC_BUF_BACKING_DEVICE)
		return buf_export_device(buf, offset, len, fd);
	if (buf->backing == HMC_BUF_BACKING_MEMFD)
		return buf_export_memfd(buf, offset, len, flags, fd);
	if (buf->backing != HMC_BUF_BACKING_KMOD) {
		pr_debug("ConnBuffer %p: %s memory is not exportable", buf->ptr,
			 hmc_buf_backing_name(buf->backing));
		return -EOPNOTSUPP;
	}
	if (flags & HMC_BUF_EXPORT_RDWR)
		exp.flags |= HMC_BUF_EXPORT_F_RDWR;
	exp.handle = buf->handle;
	ret = devhmc_ioctl(buf->devhmc_fd, HMC_IOC_BUF_EXPORT, &exp);
	if (ret)
		return ret == -ENOTTY ? -EOPNOTSUPP : ret;
	*fd = exp.fd;
	return 0;
}

const char *hmc_buf_backing_name(enum hmc_buf_backing backing)
{
	switch (backing) {
	case HMC_BUF_BACKING_KMOD:
		return "kmod";
	case HMC_BUF_BACKING_MLOCK:
		return "mlock";
	case HMC_BUF_BACKING_ANON:
		return "anon";
	case HMC_BUF_BACKING_DEVICE:
		return "device";
	case HMC_BUF_BACKING_MEMFD:
		return "memfd";
	}
	return "unknown";
}

int buf_devhmc(const struct hmc_buf *buf, int *fd, uint32_t *handle)
{
	if (!buf || buf->backing != HMC_BUF_BACKING_KMOD)
		return -ENODEV;
	*fd = buf->devhmc_fd;
	*handle = buf->handle;
	return 0;
}

/*
 * Copy @len bytes between the buffer's memory at @at and the caller's
 * @user of @user_type, into the buffer if @into_buf.
 */
static int buf_copy(struct hmc_buf *buf, char *at, void *user, size_t len,
		    enum hmc_mem_type user_type, bool into_buf)
{
	void *dst = into_buf ? (void *)at : user;
	const void *src = into_buf ? user : (void *)at;
	enum hmc_mem_type runtime = buf->type;
	enum hmc_copy_kind kind;
	int device = buf->device;

	if (buf->type == HMC_MEM_CPU) {
		if (user_type == HMC_MEM_CPU) {
			memmove(dst, src, len);
			return 0;
		}
		/* Device memory: use the device that owns it. */
		device = mem_ptr_device(user_type, user);
		if (device < 0)
			return device;
		runtime = user_type;
		kind = into_buf ? HMC_COPY_D2H : HMC_COPY_H2D;
	} else if (user_type == HMC_MEM_CPU) {
		kind = into_buf ? HMC_COPY_H2D : HMC_COPY_D2H;
	} else if (user_type == buf->type) {
		kind = HMC_COPY_D2D;
	} else {
		return -EOPNOTSUPP;	/* between two GPU runtimes */
	}
	return hmc_mem_copy(runtime, device, dst, src, len, kind);
}

static int buf_user_io(struct hmc_buf *buf, size_t offset, void *user,
		       size_t len, enum hmc_mem_type user_type, bool into_buf)
{
	int ret;

	if (!buf || (unsigned int)user_type > MEM_TYPE_LAST)
		return -EINVAL;
	ret = range_check(buf->size, offset, len);
	if (ret || !len)
		return ret;
	if (!user)
		return -EINVAL;
	return buf_copy(buf, (char *)buf->ptr + offset, user, len, user_type,
			into_buf);
}

int hmc_buf_write(struct hmc_buf *buf, size_t offset, const void *src,
		  size_t len, enum hmc_mem_type src_type)
{
	return buf_user_io(buf, offset, (void *)src, len, src_type, true);
}

int hmc_buf_read(struct hmc_buf *buf, size_t offset, void *dst, size_t len,
		 enum hmc_mem_type dst_type)
{
	return buf_user_io(buf, offset, dst, len, dst_type, false);
}

int hmc_buf_copy_within(struct hmc_buf *buf, size_t dst_offset,
			size_t src_offset, size_t len)
{
	char *dst, *src;
	void *bounce;
	int ret;

	if (!buf)
		return -EINVAL;
	ret = range_check(buf->size, dst_offset, len);
	if (!ret)
		ret = range_check(buf->size, src_offset, len);
	if (ret || !len || dst_offset == src_offset)
		return ret;
	dst = (char *)buf->ptr + dst_offset;
	src = (char *)buf->ptr + src_offset;
	if (buf->type == HMC_MEM_CPU) {
		memmove(dst, src, len);
		return 0;
	}
	if (dst + len <= src || src + len <= dst)
		return hmc_mem_copy(buf->type, buf->device, dst, src, len,
				    HMC_COPY_D2D);

	/* Device copies of overlapping ranges are undefined: bounce. */
	ret = hmc_mem_alloc(buf->type, buf->device, len, &bounce);
	if (ret)
		return ret;
	ret = hmc_mem_copy(buf->type, buf->device, bounce, src, len,
			   HMC_COPY_D2D);
	if (!ret)
		ret = hmc_mem_copy(buf->type, buf->device, dst, bounce, len,
				   HMC_COPY_D2D);
	hmc_mem_free(buf->type, buf->device, bounce);
	return ret;
}
