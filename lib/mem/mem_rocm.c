// SPDX-License-Identifier: MIT
/*
 * ROCm backend over the HIP runtime (libamdhip64), loaded on first use.
 *
 * HIP selects devices per thread: every call switches the calling thread
 * to the device it names and back to the application's device afterwards.
 * Only the few types and prototypes used here are declared: the build
 * needs no HIP headers.
 */
#include <errno.h>
#include <pthread.h>

#include "mem/mem.h"
#include "sys/log.h"

typedef int hipError_t;
typedef struct ihipStream_t *hipStream_t;

#define hipSuccess			0
#define hipDeviceAttributeDmaBufSupported	93
#define hipMemRangeHandleTypeDmaBufFd	1

enum hip_memcpy_kind {
	hipMemcpyHostToDevice		= 1,
	hipMemcpyDeviceToHost		= 2,
	hipMemcpyDeviceToDevice		= 3,
};

/*
 * hipPointerAttribute_t: the memory type and then the device in every ROCm
 * release so far; the fields after them changed, so leave room.
 */
struct hip_pointer_attr {
	int type;
	int device;
	void *device_pointer;
	void *host_pointer;
	unsigned char later_fields[64];
};

static struct {
	pthread_once_t once;
	int count;			/* devices, or -ENODEV */
	hipError_t (*get_device_count)(int *count);
	hipError_t (*get_device)(int *device);
	hipError_t (*set_device)(int device);
	hipError_t (*malloc)(void **ptr, size_t size);
	hipError_t (*free)(void *ptr);
	hipError_t (*memcpy)(void *dst, const void *src, size_t len,
			     enum hip_memcpy_kind kind);
	hipError_t (*stream_synchronize)(hipStream_t stream);
	hipError_t (*pointer_get_attributes)(struct hip_pointer_attr *attr,
					     const void *ptr);
	const char *(*get_error_string)(hipError_t err);
	/* Optional: ROCm 7 and later, NULL before. */
	hipError_t (*device_get_attribute)(int *value, int attr, int device);
	hipError_t (*mem_get_handle_for_range)(void *handle, void *dptr,
					       size_t size, int type,
					       unsigned long long flags);
} hip = { .once = PTHREAD_ONCE_INIT, .count = -ENODEV };

static const struct mem_sym hip_syms[] = {
	{ "hipGetDeviceCount", (void **)&hip.get_device_count },
	{ "hipGetDevice", (void **)&hip.get_device },
	{ "hipSetDevice", (void **)&hip.set_device },
	{ "hipMalloc", (void **)&hip.malloc },
	{ "hipFree", (void **)&hip.free },
	{ "hipMemcpy", (void **)&hip.memcpy },
	{ "hipStreamSynchronize", (void **)&hip.stream_synchronize },
	{ "hipPointerGetAttributes", (void **)&hip.pointer_get_attributes },
	{ "hipGetErrorString", (void **)&hip.get_error_string },
};

/* For dma-buf export only. */
static const struct mem_sym hip_opt_syms[] = {
	{ "hipDeviceGetAttribute", (void **)&hip.device_get_attribute },
	{ "hipMemGetHandleForAddressRange",
	  (void **)&hip.mem_get_handle_for_range },
};

static int hip_errno(const char *what, hipError_t err)
{
	return mem_gpu_errno("rocm", what, err, hip.get_error_string(err));
}

static void hip_init(void)
{
	/* The unversioned name comes with the -dev package only. */
	static const char *const libs[] = {
		"libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6",
		"libamdhip64.so.5", NULL
	};
	hipError_t err;
	int count;

	if (!mem_dlopen("rocm", libs, hip_syms,
			sizeof(hip_syms) / sizeof(hip_syms[0]), hip_opt_syms,
			sizeof(hip_opt_syms) / sizeof(hip_opt_syms[0])))
		return;
	err = hip.get_device_count(&count);
	if (err != hipSuccess) {
		hip_errno("hipGetDeviceCount", err);
		return;
	}
	hip.count = count;
}

static int hip_device_count(void)
{
	pthread_once(&hip.once, hip_init);
	return hip.count;
}

/* Switch this thread to @device; its previous device goes to @saved. */
static int hip_enter(int device, int *saved)
{
	hipError_t err;

	err = hip.get_device(saved);
	if (err != hipSuccess)
		return hip_errno("hipGetDevice", err);
	err = hip.set_device(device);
	if (err != hipSuccess)
		return hip_errno("hipSetDevice", err);
	return 0;
}

static void hip_leave(int saved)
{
	hip.set_device(saved);
}

static int hip_alloc(int device, size_t size, void **ptr)
{
	hipError_t err;
	int saved, ret;

	ret = hip_enter(device, &saved);
	if (ret)
		return ret;
	err = hip.malloc(ptr, size);
	if (err != hipSuccess) {
		*ptr = NULL;
		ret = hip_errno("hipMalloc", err);
	}
	hip_leave(saved);
	return ret;
}

static int hip_ptr_device(const void *ptr)
{
	struct hip_pointer_attr attr = { .device = -1 };
	hipError_t err;

	err = hip.pointer_get_attributes(&attr, ptr);
	if (err != hipSuccess)
		return hip_errno("hipPointerGetAttributes", err);
	/* Newer releases report host memory as success, device -1 or so. */
	if (attr.device < 0 || attr.device >= hip.count || !attr.device_pointer)
		return -EINVAL;
	return attr.device;
}

static int hip_free(int device, void *ptr)
{
	hipError_t err;
	int saved, ret;

	ret = hip_ptr_device(ptr);
	if (ret < 0)
		return ret;
	if (ret != device) {
		pr_debug("rocm: %p belongs to device %d, not %d", ptr, ret,
			 device);
		return -EINVAL;
	}
	ret = hip_enter(device, &saved);
	if (ret)
		return ret;
	err = hip.free(ptr);
	if (err != hipSuccess)
		ret = hip_errno("hipFree", err);
	hip_leave(saved);
	return ret;
}

static int hip_copy(int device, void *dst, const void *src, size_t len,
		    enum hmc_copy_kind kind)
{
	enum hip_memcpy_kind hip_kind;
	const char *what = "hipMemcpy";
	hipError_t err;
	int saved, ret;

	switch (kind) {
	case HMC_COPY_H2D:
		hip_kind = hipMemcpyHostToDevice;
		break;
	case HMC_COPY_D2H:
		hip_kind = hipMemcpyDeviceToHost;
		break;
	default:
		hip_kind = hipMemcpyDeviceToDevice;
		break;
	}
	ret = hip_enter(device, &saved);
	if (ret)
		return ret;
	err = hip.memcpy(dst, src, len, hip_kind);
	/* As for CUDA: do not return before H2D and D2D data has landed. */
	if (err == hipSuccess && kind != HMC_COPY_D2H) {
		what = "hipStreamSynchronize";
		err = hip.stream_synchronize(NULL);
	}
	if (err != hipSuccess)
		ret = hip_errno(what, err);
	hip_leave(saved);
	return ret;
}

/* Where the device says it can (DmaBufSupported), a range as a dma-buf. */
static int hip_export_dmabuf(int device, void *ptr, size_t len, int *fd)
{
	int saved, ret, supported = 0;
	hipError_t err;

	if (!hip.device_get_attribute || !hip.mem_get_handle_for_range) {
		pr_debug("rocm: the runtime has no hipMemGetHandleForAddressRange: no dma-buf export");
		return -EOPNOTSUPP;
	}
	err = hip.device_get_attribute(&supported,
				       hipDeviceAttributeDmaBufSupported,
				       device);
	if (err != hipSuccess || !supported) {
		if (err != hipSuccess)
			hip_errno("hipDeviceGetAttribute(DmaBufSupported)", err);
		pr_debug("rocm: device %d cannot export dma-bufs", device);
		return -EOPNOTSUPP;
	}
	ret = hip_enter(device, &saved);
	if (ret)
		return ret;
	err = hip.mem_get_handle_for_range(fd, ptr, len,
					   hipMemRangeHandleTypeDmaBufFd, 0);
	if (err != hipSuccess)
		ret = hip_errno("hipMemGetHandleForAddressRange", err);
	hip_leave(saved);
	return ret;
}

const struct mem_backend mem_rocm = {
	.name		= "rocm",
	.device_count	= hip_device_count,
	.alloc		= hip_alloc,
	.free		= hip_free,
	.copy		= hip_copy,
	.ptr_device	= hip_ptr_device,
	.export_dmabuf	= hip_export_dmabuf,
};
