// SPDX-License-Identifier: MIT
/*
 * Moore Threads GPU backend over the MUSA runtime (libmusart.so), loaded
 * on first use.
 *
 * MUSA's runtime follows CUDA's: devices are selected per thread, so every
 * call switches the calling thread to the device it names and back to the
 * application's device afterwards; errors are numbered like CUDA's; and
 * musaMemcpy may return before a copy to the device has landed, so those
 * are followed by a synchronisation. MUSA exports no dma-buf: device
 * memory is staged through the host where a NIC needs it.
 * Only the few types and prototypes used here are declared: the build
 * needs no MUSA headers.
 */
#include <errno.h>
#include <pthread.h>

#include "mem/mem.h"
#include "sys/log.h"

typedef int musaError_t;
typedef struct MUstream_st *musaStream_t;

#define musaSuccess		0
#define musaMemoryTypeDevice	2

enum musa_memcpy_kind {
	musaMemcpyHostToDevice		= 1,
	musaMemcpyDeviceToHost		= 2,
	musaMemcpyDeviceToDevice	= 3,
};

/* musaPointerAttributes, laid out like CUDA 10's cudaPointerAttributes. */
struct musa_pointer_attr {
	int type;
	int device;
	void *device_pointer;
	void *host_pointer;
};

static struct {
	pthread_once_t once;
	int count;			/* devices, or -ENODEV */
	musaError_t (*get_device_count)(int *count);
	musaError_t (*get_device)(int *device);
	musaError_t (*set_device)(int device);
	musaError_t (*malloc)(void **ptr, size_t size);
	musaError_t (*free)(void *ptr);
	musaError_t (*memcpy)(void *dst, const void *src, size_t len,
			      enum musa_memcpy_kind kind);
	musaError_t (*stream_synchronize)(musaStream_t stream);
	musaError_t (*pointer_get_attributes)(struct musa_pointer_attr *attr,
					      const void *ptr);
	const char *(*get_error_string)(musaError_t err);
} musa = { .once = PTHREAD_ONCE_INIT, .count = -ENODEV };

static const struct mem_sym musa_syms[] = {
	{ "musaGetDeviceCount", (void **)&musa.get_device_count },
	{ "musaGetDevice", (void **)&musa.get_device },
	{ "musaSetDevice", (void **)&musa.set_device },
	{ "musaMalloc", (void **)&musa.malloc },
	{ "musaFree", (void **)&musa.free },
	{ "musaMemcpy", (void **)&musa.memcpy },
	{ "musaStreamSynchronize", (void **)&musa.stream_synchronize },
	{ "musaPointerGetAttributes", (void **)&musa.pointer_get_attributes },
	{ "musaGetErrorString", (void **)&musa.get_error_string },
};

static int musa_errno(const char *what, musaError_t err)
{
	return mem_gpu_errno("musa", what, err, musa.get_error_string(err));
}

static void musa_load(void)
{
	static const char *const libs[] = { "libmusart.so", NULL };
	musaError_t err;
	int count;

	if (!mem_dlopen("musa", libs, musa_syms,
			sizeof(musa_syms) / sizeof(musa_syms[0]), NULL, 0))
		return;
	err = musa.get_device_count(&count);
	if (err != musaSuccess) {
		musa_errno("musaGetDeviceCount", err);
		return;
	}
	musa.count = count;
}

static int musa_device_count(void)
{
	pthread_once(&musa.once, musa_load);
	return musa.count;
}

/* Switch this thread to @device; its previous device goes to @saved. */
static int musa_enter(int device, int *saved)
{
	musaError_t err;

	err = musa.get_device(saved);
	if (err != musaSuccess)
		return musa_errno("musaGetDevice", err);
	err = musa.set_device(device);
	if (err != musaSuccess)
		return musa_errno("musaSetDevice", err);
	return 0;
}

static void musa_leave(int saved)
{
	musa.set_device(saved);
}

static int musa_alloc(int device, size_t size, void **ptr)
{
	musaError_t err;
	int saved, ret;

	ret = musa_enter(device, &saved);
	if (ret)
		return ret;
	err = musa.malloc(ptr, size);
	if (err != musaSuccess) {
		*ptr = NULL;
		ret = musa_errno("musaMalloc", err);
	}
	musa_leave(saved);
	return ret;
}

static int musa_ptr_device(const void *ptr)
{
	struct musa_pointer_attr attr = { .device = -1 };
	musaError_t err;

	err = musa.pointer_get_attributes(&attr, ptr);
	if (err != musaSuccess)
		return musa_errno("musaPointerGetAttributes", err);
	if (attr.type != musaMemoryTypeDevice || attr.device < 0 ||
	    attr.device >= musa.count)
		return -EINVAL;
	return attr.device;
}

static int musa_free(int device, void *ptr)
{
	musaError_t err;
	int saved, ret;

	ret = musa_ptr_device(ptr);
	if (ret < 0)
		return ret;
	if (ret != device) {
		pr_debug("musa: %p belongs to device %d, not %d", ptr, ret,
			 device);
		return -EINVAL;
	}
	ret = musa_enter(device, &saved);
	if (ret)
		return ret;
	err = musa.free(ptr);
	if (err != musaSuccess)
		ret = musa_errno("musaFree", err);
	musa_leave(saved);
	return ret;
}

static int musa_copy(int device, void *dst, const void *src, size_t len,
		     enum hmc_copy_kind kind)
{
	enum musa_memcpy_kind musa_kind;
	const char *what = "musaMemcpy";
	musaError_t err;
	int saved, ret;

	switch (kind) {
	case HMC_COPY_H2D:
		musa_kind = musaMemcpyHostToDevice;
		break;
	case HMC_COPY_D2H:
		musa_kind = musaMemcpyDeviceToHost;
		break;
	default:
		musa_kind = musaMemcpyDeviceToDevice;
		break;
	}
	ret = musa_enter(device, &saved);
	if (ret)
		return ret;
	err = musa.memcpy(dst, src, len, musa_kind);
	/* As for CUDA: do not return before H2D and D2D data has landed. */
	if (err == musaSuccess && kind != HMC_COPY_D2H) {
		what = "musaStreamSynchronize";
		err = musa.stream_synchronize(NULL);
	}
	if (err != musaSuccess)
		ret = musa_errno(what, err);
	musa_leave(saved);
	return ret;
}

static int musa_export_dmabuf(int device, void *ptr, size_t len, int *fd)
{
	pr_debug("musa: the MUSA runtime exports no dma-buf");
	return -EOPNOTSUPP;
}

const struct mem_backend mem_musa = {
	.name		= "musa",
	.device_count	= musa_device_count,
	.alloc		= musa_alloc,
	.free		= musa_free,
	.copy		= musa_copy,
	.ptr_device	= musa_ptr_device,
	.export_dmabuf	= musa_export_dmabuf,
};
