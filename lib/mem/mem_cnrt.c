// SPDX-License-Identifier: MIT
/*
 * Cambricon MLU backend over CNRT (libcnrt.so, CNToolkit), loaded on first
 * use.
 *
 * CNRT selects devices per thread (cnrtSetDevice): every call switches the
 * calling thread to the device it names and back to the application's
 * device afterwards. cnrtMemcpy is synchronous. CNRT exports no dma-buf:
 * device memory is staged through the host where a NIC needs it. Its
 * error codes differ between releases, so all are -EIO here, with
 * cnrtGetErrorStr's text at debug level.
 * Only the few types and prototypes used here are declared: the build
 * needs no CNToolkit headers.
 */
#include <errno.h>
#include <pthread.h>

#include "mem/mem.h"
#include "sys/log.h"

typedef int cnrtRet_t;

#define cnrtSuccess	0

enum cnrt_memcpy_dir {
	cnrtMemcpyHostToDev	= 0,
	cnrtMemcpyDevToDev	= 1,
	cnrtMemcpyDevToHost	= 2,
};

#define cnrtMemTypeDevice	2

/* cnrtPointerAttributes_t. */
struct cnrt_pointer_attr {
	int type;
	int device;
	void *device_pointer;
	void *host_pointer;
};

static struct {
	pthread_once_t once;
	int count;			/* devices, or -ENODEV */
	cnrtRet_t (*get_device_count)(unsigned int *count);
	cnrtRet_t (*get_device)(int *device);
	cnrtRet_t (*set_device)(int device);
	cnrtRet_t (*malloc)(void **ptr, size_t size);
	cnrtRet_t (*free)(void *ptr);
	cnrtRet_t (*memcpy)(void *dst, void *src, size_t len,
			    enum cnrt_memcpy_dir dir);
	cnrtRet_t (*pointer_get_attributes)(struct cnrt_pointer_attr *attr,
					    void *ptr);
	const char *(*get_error_str)(cnrtRet_t err);
} cnrt = { .once = PTHREAD_ONCE_INIT, .count = -ENODEV };

static const struct mem_sym cnrt_syms[] = {
	{ "cnrtGetDeviceCount", (void **)&cnrt.get_device_count },
	{ "cnrtGetDevice", (void **)&cnrt.get_device },
	{ "cnrtSetDevice", (void **)&cnrt.set_device },
	{ "cnrtMalloc", (void **)&cnrt.malloc },
	{ "cnrtFree", (void **)&cnrt.free },
	{ "cnrtMemcpy", (void **)&cnrt.memcpy },
	{ "cnrtPointerGetAttributes", (void **)&cnrt.pointer_get_attributes },
	{ "cnrtGetErrorStr", (void **)&cnrt.get_error_str },
};

static int cnrt_errno(const char *what, cnrtRet_t err)
{
	return mem_rt_errno("cnrt", what, err, cnrt.get_error_str(err), NULL,
			    0);
}

static void cnrt_load(void)
{
	static const char *const libs[] = { "libcnrt.so", NULL };
	unsigned int count;
	cnrtRet_t err;

	if (!mem_dlopen("cnrt", libs, cnrt_syms,
			sizeof(cnrt_syms) / sizeof(cnrt_syms[0]), NULL, 0))
		return;
	err = cnrt.get_device_count(&count);
	if (err != cnrtSuccess) {
		cnrt_errno("cnrtGetDeviceCount", err);
		return;
	}
	cnrt.count = (int)count;
}

static int cnrt_device_count(void)
{
	pthread_once(&cnrt.once, cnrt_load);
	return cnrt.count;
}

/* Switch this thread to @device; its previous device goes to @saved. */
static int cnrt_enter(int device, int *saved)
{
	cnrtRet_t err;

	err = cnrt.get_device(saved);
	if (err != cnrtSuccess)
		return cnrt_errno("cnrtGetDevice", err);
	err = cnrt.set_device(device);
	if (err != cnrtSuccess)
		return cnrt_errno("cnrtSetDevice", err);
	return 0;
}

static void cnrt_leave(int saved)
{
	cnrt.set_device(saved);
}

static int cnrt_alloc(int device, size_t size, void **ptr)
{
	int saved, ret;
	cnrtRet_t err;

	ret = cnrt_enter(device, &saved);
	if (ret)
		return ret;
	err = cnrt.malloc(ptr, size);
	if (err != cnrtSuccess) {
		*ptr = NULL;
		ret = cnrt_errno("cnrtMalloc", err);
	}
	cnrt_leave(saved);
	return ret;
}

static int cnrt_ptr_device(const void *ptr)
{
	struct cnrt_pointer_attr attr = { .device = -1 };
	cnrtRet_t err;

	err = cnrt.pointer_get_attributes(&attr, (void *)ptr);
	if (err != cnrtSuccess)
		return cnrt_errno("cnrtPointerGetAttributes", err);
	if (attr.type != cnrtMemTypeDevice || attr.device < 0 ||
	    attr.device >= cnrt.count)
		return -EINVAL;
	return attr.device;
}

static int cnrt_free(int device, void *ptr)
{
	int saved, ret;
	cnrtRet_t err;

	ret = cnrt_ptr_device(ptr);
	if (ret < 0)
		return ret;
	if (ret != device) {
		pr_debug("cnrt: %p belongs to device %d, not %d", ptr, ret,
			 device);
		return -EINVAL;
	}
	ret = cnrt_enter(device, &saved);
	if (ret)
		return ret;
	err = cnrt.free(ptr);
	if (err != cnrtSuccess)
		ret = cnrt_errno("cnrtFree", err);
	cnrt_leave(saved);
	return ret;
}

static int cnrt_copy(int device, void *dst, const void *src, size_t len,
		     enum hmc_copy_kind kind)
{
	enum cnrt_memcpy_dir dir;
	int saved, ret;
	cnrtRet_t err;

	switch (kind) {
	case HMC_COPY_H2D:
		dir = cnrtMemcpyHostToDev;
		break;
	case HMC_COPY_D2H:
		dir = cnrtMemcpyDevToHost;
		break;
	default:
		dir = cnrtMemcpyDevToDev;
		break;
	}
	ret = cnrt_enter(device, &saved);
	if (ret)
		return ret;
	err = cnrt.memcpy(dst, (void *)src, len, dir);
	if (err != cnrtSuccess)
		ret = cnrt_errno("cnrtMemcpy", err);
	cnrt_leave(saved);
	return ret;
}

static int cnrt_export_dmabuf(int device, void *ptr, size_t len, int *fd)
{
	pr_debug("cnrt: CNRT exports no dma-buf");
	return -EOPNOTSUPP;
}

const struct mem_backend mem_cnrt = {
	.name		= "cnrt",
	.device_count	= cnrt_device_count,
	.alloc		= cnrt_alloc,
	.free		= cnrt_free,
	.copy		= cnrt_copy,
	.ptr_device	= cnrt_ptr_device,
	.export_dmabuf	= cnrt_export_dmabuf,
};
