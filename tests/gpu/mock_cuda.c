// SPDX-License-Identifier: MIT
/*
 * A mock libcuda.so.1 with the driver API calls libhmc uses, strict where
 * the real driver is: calls before cuInit, device memory use without a
 * current context, over-released primary contexts, contexts destroyed
 * under live memory, copies whose pointers do not match their kind and
 * overlapping device-to-device copies are violations. Devices report
 * CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED as mock_dmabuf_supported() says
 * and export ranges with cuMemGetHandleForAddressRange. See mock_dev.h.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mock_dev.h"

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

#define CUDA_SUCCESS			0
#define CUDA_ERROR_INVALID_VALUE	1
#define CUDA_ERROR_OUT_OF_MEMORY	2
#define CUDA_ERROR_NOT_INITIALIZED	3
#define CUDA_ERROR_INVALID_DEVICE	101
#define CUDA_ERROR_INVALID_CONTEXT	201
#define CUDA_ERROR_NOT_READY		600
#define CUDA_ERROR_NOT_SUPPORTED	801
#define CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9
#define CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED 124
#define CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD 1

#define MOCK_MAX_DEVICES	8
#define MOCK_STACK_DEPTH	8

typedef struct CUctx_st {
	int device;
	int refs;		/* primary context retains */
} *CUcontext;

static struct CUctx_st primary[MOCK_MAX_DEVICES];
static int initialized;
static __thread CUcontext stack[MOCK_STACK_DEPTH];
static __thread int depth;

static int nr_devices(void)
{
	int n = mock_nr_devices();

	return n < MOCK_MAX_DEVICES ? n : MOCK_MAX_DEVICES;
}

static CUcontext current(void)
{
	return depth ? stack[depth - 1] : NULL;
}

/* The current context, or NULL (a violation) for a call that needs one. */
static CUcontext need_context(const char *call)
{
	if (!__atomic_load_n(&initialized, __ATOMIC_ACQUIRE)) {
		mock_violation("%s before cuInit", call);
		return NULL;
	}
	if (!current())
		mock_violation("%s without a current context", call);
	return current();
}

MOCK_EXPORT CUresult cuInit(unsigned int flags)
{
	int i;

	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < MOCK_MAX_DEVICES; i++)
		primary[i].device = i;
	__atomic_store_n(&initialized, 1, __ATOMIC_RELEASE);
	return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuDeviceGetCount(int *count)
{
	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	*count = nr_devices();
	return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (ordinal < 0 || ordinal >= nr_devices())
		return CUDA_ERROR_INVALID_DEVICE;
	*dev = ordinal;
	return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev < 0 || dev >= nr_devices())
		return CUDA_ERROR_INVALID_DEVICE;
	__atomic_add_fetch(&primary[dev].refs, 1, __ATOMIC_ACQ_REL);
	*ctx = &primary[dev];
	return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	int refs;

	if (dev < 0 || dev >= nr_devices())
		return CUDA_ERROR_INVALID_DEVICE;
	refs = __atomic_sub_fetch(&primary[dev].refs, 1, __ATOMIC_ACQ_REL);
	if (refs < 0) {
		mock_violation("primary context %d released once too often",
			       dev);
		__atomic_add_fetch(&primary[dev].refs, 1, __ATOMIC_ACQ_REL);
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
	if (!ctx || __atomic_load_n(&ctx->refs, __ATOMIC_ACQUIRE) <= 0) {
		mock_violation("pushing a context nobody retains");
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	if (depth == MOCK_STACK_DEPTH) {
		mock_violation("context stack overflow: pops missing");
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	stack[depth++] = ctx;
	return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *ctx)
{
	if (!depth) {
		mock_violation("popping an empty context stack");
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	depth--;
	if (ctx)
		*ctx = stack[depth];
	return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuStreamSynchronize(void *stream)
{
	CUcontext ctx = need_context("cuStreamSynchronize");

	if (!ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (stream)
		return CUDA_ERROR_INVALID_VALUE;
	mock_sync(ctx->device);
	return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size)
{
	CUcontext ctx = need_context("cuMemAlloc");
	void *p;

	if (!ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!size)
		return CUDA_ERROR_INVALID_VALUE;
	p = mock_alloc(ctx->device, size);
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*dptr = (uintptr_t)p;
	return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	int device;

	if (!need_context("cuMemFree"))
		return CUDA_ERROR_INVALID_CONTEXT;
	device = mock_free((void *)(uintptr_t)dptr);
	if (device < 0) {
		mock_violation("cuMemFree of %#llx, not an allocation", dptr);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (__atomic_load_n(&primary[device].refs, __ATOMIC_ACQUIRE) <= 0)
		mock_violation("memory of device %d outlived its context",
			       device);
	return CUDA_SUCCESS;
}

/* Checks one copy: its context and where both ends lie. */
static CUcontext check_copy(const char *call, const void *dst, int dst_dev,
			    const void *src, int src_dev, size_t len)
{
	CUcontext ctx = need_context(call);

	if (!ctx)
		return NULL;
	if ((mock_where(dst, len) >= 0) != (dst_dev >= 0) ||
	    (mock_where(src, len) >= 0) != (src_dev >= 0)) {
		mock_violation("%s: pointers do not match the copy's kind",
			       call);
		return NULL;
	}
	return ctx;
}

MOCK_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src,
				     size_t len)
{
	void *d = (void *)(uintptr_t)dst;
	CUcontext ctx = check_copy("cuMemcpyHtoD", d, 0, src, -1, len);

	if (!ctx)
		return CUDA_ERROR_INVALID_VALUE;
	mock_copy_later(ctx->device, d, src, len);
	return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t len)
{
	const void *s = (const void *)(uintptr_t)src;
	CUcontext ctx = check_copy("cuMemcpyDtoH", dst, -1, s, 0, len);

	if (!ctx)
		return CUDA_ERROR_INVALID_VALUE;
	/* Stream order, then synchronous for the host. */
	mock_sync(ctx->device);
	mock_memcpy(dst, s, len);
	return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src,
				     size_t len)
{
	void *d = (void *)(uintptr_t)dst, *s = (void *)(uintptr_t)src;
	CUcontext ctx = check_copy("cuMemcpyDtoD", d, 0, s, 0, len);

	if (!ctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (dst < src + len && src < dst + len) {
		mock_violation("cuMemcpyDtoD of overlapping ranges");
		return CUDA_ERROR_INVALID_VALUE;
	}
	mock_copy_later(ctx->device, d, s, len);
	return CUDA_SUCCESS;
}

/*
 * Copies that return at once, on the legacy default stream (the only one
 * mocked): both directions land at the device's next synchronisation, so
 * a caller that uses the data before its event says so reads stale data.
 */
MOCK_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src,
					  size_t len, void *stream)
{
	void *d = (void *)(uintptr_t)dst;
	CUcontext ctx = check_copy("cuMemcpyHtoDAsync", d, 0, src, -1, len);

	if (!ctx || stream)
		return CUDA_ERROR_INVALID_VALUE;
	mock_copy_later(ctx->device, d, src, len);
	return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src,
					  size_t len, void *stream)
{
	const void *s = (const void *)(uintptr_t)src;
	CUcontext ctx = check_copy("cuMemcpyDtoHAsync", dst, -1, s, 0, len);

	if (!ctx || stream)
		return CUDA_ERROR_INVALID_VALUE;
	mock_copy_later(ctx->device, dst, s, len);
	return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuEventCreate(struct mock_event **ev, unsigned int flags)
{
	CUcontext ctx = need_context("cuEventCreate");

	if (!ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	*ev = mock_event_create(ctx->device);
	return *ev ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

MOCK_EXPORT CUresult cuEventRecord(struct mock_event *ev, void *stream)
{
	if (!need_context("cuEventRecord"))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!ev || stream)
		return CUDA_ERROR_INVALID_VALUE;
	mock_event_record(ev);
	return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuEventQuery(struct mock_event *ev)
{
	return mock_event_query(ev) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

MOCK_EXPORT CUresult cuEventSynchronize(struct mock_event *ev)
{
	mock_event_synchronize(ev);
	return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuEventDestroy_v2(struct mock_event *ev)
{
	mock_event_destroy(ev);
	return CUDA_SUCCESS;
}

/* Wants a current context, as some drivers do. */
MOCK_EXPORT CUresult cuPointerGetAttribute(void *data, int attr,
					   CUdeviceptr ptr)
{
	int where;

	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!current())
		return CUDA_ERROR_INVALID_CONTEXT;
	if (attr != CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
		return CUDA_ERROR_INVALID_VALUE;
	where = mock_where((void *)(uintptr_t)ptr, 1);
	if (where < 0)
		return CUDA_ERROR_INVALID_VALUE;
	*(int *)data = where;
	return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuDeviceGetAttribute(int *value, int attr, CUdevice dev)
{
	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev < 0 || dev >= nr_devices())
		return CUDA_ERROR_INVALID_DEVICE;
	if (attr != CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED)
		return CUDA_ERROR_INVALID_VALUE;
	*value = mock_dmabuf_supported();
	return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuMemGetHandleForAddressRange(void *handle,
						   CUdeviceptr dptr,
						   size_t size, int type,
						   unsigned long long flags)
{
	void *p = (void *)(uintptr_t)dptr;
	int device, fd;

	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (type != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD || flags || !size)
		return CUDA_ERROR_INVALID_VALUE;
	device = mock_where(p, size);
	if (device < 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (!mock_dmabuf_supported())
		return CUDA_ERROR_NOT_SUPPORTED;
	fd = mock_export(device, p, size);
	if (fd < 0)
		return CUDA_ERROR_INVALID_VALUE;
	*(int *)handle = fd;
	return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult cuGetErrorString(CUresult err, const char **str)
{
	*str = "mock error";
	return CUDA_SUCCESS;
}

/* The test's hooks: the application's own current device, and a report. */
MOCK_EXPORT void mock_app_device_enter(int dev)
{
	CUcontext ctx;

	cuDevicePrimaryCtxRetain(&ctx, dev);
	cuCtxPushCurrent_v2(ctx);
}

MOCK_EXPORT void mock_app_device_leave(int dev)
{
	cuCtxPopCurrent_v2(NULL);
	cuDevicePrimaryCtxRelease_v2(dev);
}

MOCK_EXPORT int mock_current_device(void)
{
	return current() ? current()->device : -1;
}

MOCK_EXPORT int mock_report(char *msg, size_t len)
{
	int i, ret = mock_dev_report(msg, len);

	for (i = 0; i < MOCK_MAX_DEVICES && !ret; i++) {
		if (primary[i].refs) {
			snprintf(msg, len, "primary context %d: %d refs left",
				 i, primary[i].refs);
			ret = 1;
		}
	}
	if (!ret && depth) {
		snprintf(msg, len, "%d contexts left pushed", depth);
		ret = 1;
	}
	return ret;
}
