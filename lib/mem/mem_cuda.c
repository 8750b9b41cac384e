// SPDX-License-Identifier: MIT
/*
 * CUDA backend over the driver API of libcuda.so.1, loaded on first use.
 *
 * Every call runs in the primary context of the device it names, pushed on
 * the calling thread for the call only, so the application's current
 * context is left as it was. Each allocation holds a reference to its
 * device's primary context, which therefore lives at least as long as the
 * memory in it. Only the few types and prototypes used here are declared:
 * the build needs no CUDA headers.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include "mem/mem.h"
#include "sys/log.h"

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef unsigned long long CUdeviceptr;	/* CUdeviceptr_v2 on 64-bit */

#define CUDA_SUCCESS				0
#define CUDA_ERROR_INVALID_CONTEXT		201
#define CUDA_ERROR_NOT_READY			600
#define CU_EVENT_DISABLE_TIMING			0x2
#define CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL	9
#define CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED	124
#define CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD	1

static struct {
	pthread_once_t once;
	int count;			/* devices, or -ENODEV */
	CUresult (*init)(unsigned int flags);
	CUresult (*device_get_count)(int *count);
	CUresult (*device_get)(CUdevice *dev, int ordinal);
	CUresult (*primary_ctx_retain)(CUcontext *ctx, CUdevice dev);
	CUresult (*primary_ctx_release)(CUdevice dev);
	CUresult (*ctx_push)(CUcontext ctx);
	CUresult (*ctx_pop)(CUcontext *ctx);
	CUresult (*stream_synchronize)(CUstream stream);
	CUresult (*mem_alloc)(CUdeviceptr *dptr, size_t size);
	CUresult (*mem_free)(CUdeviceptr dptr);
	CUresult (*memcpy_htod)(CUdeviceptr dst, const void *src, size_t len);
	CUresult (*memcpy_dtoh)(void *dst, CUdeviceptr src, size_t len);
	CUresult (*memcpy_dtod)(CUdeviceptr dst, CUdeviceptr src, size_t len);
	CUresult (*pointer_get_attribute)(void *data, int attr,
					  CUdeviceptr ptr);
	CUresult (*get_error_string)(CUresult err, const char **str);
	/* Optional: CUDA 11.7 and later, NULL before. */
	CUresult (*device_get_attribute)(int *value, int attr, CUdevice dev);
	CUresult (*mem_get_handle_for_range)(void *handle, CUdeviceptr dptr,
					     size_t size, int type,
					     unsigned long long flags);
	/* Optional: copies that return at once (copy_start). */
	CUresult (*memcpy_htod_async)(CUdeviceptr dst, const void *src,
				      size_t len, CUstream stream);
	CUresult (*memcpy_dtoh_async)(void *dst, CUdeviceptr src, size_t len,
				      CUstream stream);
	CUresult (*event_create)(CUevent *ev, unsigned int flags);
	CUresult (*event_record)(CUevent ev, CUstream stream);
	CUresult (*event_query)(CUevent ev);
	CUresult (*event_synchronize)(CUevent ev);
	CUresult (*event_destroy)(CUevent ev);
} cu = { .once = PTHREAD_ONCE_INIT, .count = -ENODEV };

/* The _v2 entry points are the ones with 64-bit sizes and pointers. */
static const struct mem_sym cu_syms[] = {
	{ "cuInit", (void **)&cu.init },
	{ "cuDeviceGetCount", (void **)&cu.device_get_count },
	{ "cuDeviceGet", (void **)&cu.device_get },
	{ "cuDevicePrimaryCtxRetain", (void **)&cu.primary_ctx_retain },
	{ "cuDevicePrimaryCtxRelease_v2", (void **)&cu.primary_ctx_release },
	{ "cuCtxPushCurrent_v2", (void **)&cu.ctx_push },
	{ "cuCtxPopCurrent_v2", (void **)&cu.ctx_pop },
	{ "cuStreamSynchronize", (void **)&cu.stream_synchronize },
	{ "cuMemAlloc_v2", (void **)&cu.mem_alloc },
	{ "cuMemFree_v2", (void **)&cu.mem_free },
	{ "cuMemcpyHtoD_v2", (void **)&cu.memcpy_htod },
	{ "cuMemcpyDtoH_v2", (void **)&cu.memcpy_dtoh },
	{ "cuMemcpyDtoD_v2", (void **)&cu.memcpy_dtod },
	{ "cuPointerGetAttribute", (void **)&cu.pointer_get_attribute },
	{ "cuGetErrorString", (void **)&cu.get_error_string },
};

/* For dma-buf export and for copies that return at once. */
static const struct mem_sym cu_opt_syms[] = {
	{ "cuDeviceGetAttribute", (void **)&cu.device_get_attribute },
	{ "cuMemGetHandleForAddressRange",
	  (void **)&cu.mem_get_handle_for_range },
	{ "cuMemcpyHtoDAsync_v2", (void **)&cu.memcpy_htod_async },
	{ "cuMemcpyDtoHAsync_v2", (void **)&cu.memcpy_dtoh_async },
	{ "cuEventCreate", (void **)&cu.event_create },
	{ "cuEventRecord", (void **)&cu.event_record },
	{ "cuEventQuery", (void **)&cu.event_query },
	{ "cuEventSynchronize", (void **)&cu.event_synchronize },
	{ "cuEventDestroy_v2", (void **)&cu.event_destroy },
};

static int cuda_errno(const char *what, CUresult err)
{
	const char *text = NULL;

	if (cu.get_error_string(err, &text) != CUDA_SUCCESS)
		text = NULL;
	return mem_gpu_errno("cuda", what, err, text);
}

static void cuda_init(void)
{
	static const char *const libs[] = { "libcuda.so.1", NULL };
	CUresult err;
	int count;

	if (!mem_dlopen("cuda", libs, cu_syms,
			sizeof(cu_syms) / sizeof(cu_syms[0]), cu_opt_syms,
			sizeof(cu_opt_syms) / sizeof(cu_opt_syms[0])))
		return;
	err = cu.init(0);
	if (err == CUDA_SUCCESS)
		err = cu.device_get_count(&count);
	if (err != CUDA_SUCCESS) {
		cuda_errno("cuInit", err);
		return;
	}
	cu.count = count;
}

static int cuda_device_count(void)
{
	pthread_once(&cu.once, cuda_init);
	return cu.count;
}

static CUdeviceptr dptr_of(const void *ptr)
{
	return (CUdeviceptr)(uintptr_t)ptr;
}

/* Make @device's primary context current, holding a reference to it. */
static int cuda_enter(int device, CUdevice *dev)
{
	CUcontext ctx;
	CUresult err;

	err = cu.device_get(dev, device);
	if (err != CUDA_SUCCESS)
		return cuda_errno("cuDeviceGet", err);
	err = cu.primary_ctx_retain(&ctx, *dev);
	if (err != CUDA_SUCCESS)
		return cuda_errno("cuDevicePrimaryCtxRetain", err);
	err = cu.ctx_push(ctx);
	if (err != CUDA_SUCCESS) {
		cu.primary_ctx_release(*dev);
		return cuda_errno("cuCtxPushCurrent", err);
	}
	return 0;
}

static void cuda_leave(CUdevice dev)
{
	CUcontext ctx;

	cu.ctx_pop(&ctx);
	cu.primary_ctx_release(dev);
}

static int cuda_alloc(int device, size_t size, void **ptr)
{
	CUdeviceptr dptr;
	CUcontext ctx;
	CUdevice dev;
	CUresult err;
	int ret;

	ret = cuda_enter(device, &dev);
	if (ret)
		return ret;
	err = cu.mem_alloc(&dptr, size);
	if (err != CUDA_SUCCESS) {
		ret = cuda_errno("cuMemAlloc", err);
		goto out;
	}
	/* The allocation's own reference, dropped by cuda_free(). */
	err = cu.primary_ctx_retain(&ctx, dev);
	if (err != CUDA_SUCCESS) {
		ret = cuda_errno("cuDevicePrimaryCtxRetain", err);
		cu.mem_free(dptr);
		goto out;
	}
	*ptr = (void *)(uintptr_t)dptr;
out:
	cuda_leave(dev);
	return ret;
}

static int cuda_ptr_device(const void *ptr)
{
	CUdevice dev;
	CUresult err;
	int ordinal, ret;

	err = cu.pointer_get_attribute(&ordinal,
				       CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
				       dptr_of(ptr));
	if (err == CUDA_ERROR_INVALID_CONTEXT) {
		/* Some drivers want a current context for the lookup. */
		ret = cuda_enter(0, &dev);
		if (ret)
			return ret;
		err = cu.pointer_get_attribute(&ordinal,
				CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
				dptr_of(ptr));
		cuda_leave(dev);
	}
	if (err != CUDA_SUCCESS)
		return cuda_errno("cuPointerGetAttribute", err);
	return ordinal;
}

static int cuda_free(int device, void *ptr)
{
	CUdevice dev;
	CUresult err;
	int ret;

	ret = cuda_ptr_device(ptr);
	if (ret < 0)
		return ret;
	if (ret != device) {
		pr_debug("cuda: %p belongs to device %d, not %d", ptr, ret,
			 device);
		return -EINVAL;
	}
	ret = cuda_enter(device, &dev);
	if (ret)
		return ret;
	err = cu.mem_free(dptr_of(ptr));
	if (err == CUDA_SUCCESS)
		cu.primary_ctx_release(dev);	/* the allocation's */
	else
		ret = cuda_errno("cuMemFree", err);
	cuda_leave(dev);
	return ret;
}

static int cuda_copy(int device, void *dst, const void *src, size_t len,
		     enum hmc_copy_kind kind)
{
	const char *what;
	CUdevice dev;
	CUresult err;
	int ret;

	ret = cuda_enter(device, &dev);
	if (ret)
		return ret;
	switch (kind) {
	case HMC_COPY_H2D:
		what = "cuMemcpyHtoD";
		err = cu.memcpy_htod(dptr_of(dst), src, len);
		break;
	case HMC_COPY_D2H:
		what = "cuMemcpyDtoH";
		err = cu.memcpy_dtoh(dst, dptr_of(src), len);
		break;
	default:
		what = "cuMemcpyDtoD";
		err = cu.memcpy_dtod(dptr_of(dst), dptr_of(src), len);
		break;
	}
	/*
	 * H2D from pageable memory and D2D may return before the data has
	 * landed; wait on the legacy default stream they were issued to.
	 */
	if (err == CUDA_SUCCESS && kind != HMC_COPY_D2H) {
		what = "cuStreamSynchronize";
		err = cu.stream_synchronize(NULL);
	}
	if (err != CUDA_SUCCESS)
		ret = cuda_errno(what, err);
	cuda_leave(dev);
	return ret;
}

/* Where the device says it can (DMA_BUF_SUPPORTED), a range as a dma-buf. */
static int cuda_export_dmabuf(int device, void *ptr, size_t len, int *fd)
{
	int ret, supported = 0;
	CUdevice dev;
	CUresult err;

	if (!cu.device_get_attribute || !cu.mem_get_handle_for_range) {
		pr_debug("cuda: the driver has no cuMemGetHandleForAddressRange: no dma-buf export");
		return -EOPNOTSUPP;
	}
	ret = cuda_enter(device, &dev);
	if (ret)
		return ret;
	err = cu.device_get_attribute(&supported,
				      CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
				      dev);
	if (err != CUDA_SUCCESS || !supported) {
		if (err != CUDA_SUCCESS)
			cuda_errno("cuDeviceGetAttribute(DMA_BUF_SUPPORTED)",
				   err);
		pr_debug("cuda: device %d cannot export dma-bufs", device);
		ret = -EOPNOTSUPP;
		goto out;
	}
	err = cu.mem_get_handle_for_range(fd, dptr_of(ptr), len,
					  CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
					  0);
	if (err != CUDA_SUCCESS)
		ret = cuda_errno("cuMemGetHandleForAddressRange", err);
out:
	cuda_leave(dev);
	return ret;
}

/*
 * A copy queued on the legacy default stream, as cuda_copy()'s, with an
 * event behind it to ask about: the caller overlaps it with other work
 * (lib/msg's slots) instead of waiting for each.
 */
static int cuda_copy_start(int device, void *dst, const void *src,
			   size_t len, enum hmc_copy_kind kind, void **ev)
{
	const char *what;
	CUdevice dev;
	CUevent e;
	CUresult err;
	int ret;

	if (!cu.memcpy_htod_async || !cu.memcpy_dtoh_async ||
	    !cu.event_create || !cu.event_record || !cu.event_query ||
	    !cu.event_synchronize || !cu.event_destroy)
		return -EOPNOTSUPP;
	ret = cuda_enter(device, &dev);
	if (ret)
		return ret;
	what = "cuEventCreate";
	err = cu.event_create(&e, CU_EVENT_DISABLE_TIMING);
	if (err != CUDA_SUCCESS)
		goto out;
	if (kind == HMC_COPY_H2D) {
		what = "cuMemcpyHtoDAsync";
		err = cu.memcpy_htod_async(dptr_of(dst), src, len, NULL);
	} else {
		what = "cuMemcpyDtoHAsync";
		err = cu.memcpy_dtoh_async(dst, dptr_of(src), len, NULL);
	}
	if (err == CUDA_SUCCESS && cu.event_record(e, NULL) == CUDA_SUCCESS) {
		*ev = e;
		goto out;
	}
	/* No copy, or no event behind it: let what was queued land now. */
	if (err == CUDA_SUCCESS) {
		what = "cuStreamSynchronize";
		err = cu.stream_synchronize(NULL);
	}
	cu.event_destroy(e);
out:
	if (err != CUDA_SUCCESS)
		ret = cuda_errno(what, err);
	cuda_leave(dev);
	return ret;
}

static int cuda_copy_done(int device, void *ev, bool wait)
{
	CUdevice dev;
	CUresult err;
	int ret;

	ret = cuda_enter(device, &dev);
	if (ret)
		return ret;
	err = wait ? cu.event_synchronize(ev) : cu.event_query(ev);
	if (err == CUDA_ERROR_NOT_READY) {
		ret = -EINPROGRESS;
	} else {
		if (err != CUDA_SUCCESS)
			ret = cuda_errno(wait ? "cuEventSynchronize" :
					 "cuEventQuery", err);
		cu.event_destroy(ev);
	}
	cuda_leave(dev);
	return ret;
}

const struct mem_backend mem_cuda = {
	.name		= "cuda",
	.device_count	= cuda_device_count,
	.alloc		= cuda_alloc,
	.free		= cuda_free,
	.copy		= cuda_copy,
	.ptr_device	= cuda_ptr_device,
	.export_dmabuf	= cuda_export_dmabuf,
	.copy_start	= cuda_copy_start,
	.copy_done	= cuda_copy_done,
};
