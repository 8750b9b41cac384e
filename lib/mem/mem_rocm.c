// SPDX-License-Identifier: MIT
/*
 * ROCm backend over the HIP runtime (libamdhip64), loaded on first use.
 *
 * HIP selects devices per thread like CUDA's runtime does (rtapi.c), and
 * numbers its errors like CUDA. hipMemcpy may return before a copy to the
 * device has landed, so those are followed by a synchronisation. ROCm 7
 * and later export dma-bufs where the device supports it.
 * Only the few constants used here are declared: the build needs no HIP
 * headers.
 */
#include <errno.h>

#include "mem/rtapi.h"

static struct mem_rtapi hip = {
	.runtime = "rocm",
	/* The unversioned name comes with the -dev package only. */
	.libs = (const char *const[]){
		"libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6",
		"libamdhip64.so.5", NULL
	},
	.names = {
		.get_device_count	= "hipGetDeviceCount",
		.get_device		= "hipGetDevice",
		.set_device		= "hipSetDevice",
		.malloc			= "hipMalloc",
		.free			= "hipFree",
		.memcpy			= "hipMemcpy",
		.stream_synchronize	= "hipStreamSynchronize",
		.pointer_get_attributes	= "hipPointerGetAttributes",
		.get_error_string	= "hipGetErrorString",
		.memcpy_async		= "hipMemcpyAsync",
		.event_create		= "hipEventCreateWithFlags",
		.event_record		= "hipEventRecord",
		.event_query		= "hipEventQuery",
		.event_synchronize	= "hipEventSynchronize",
		.event_destroy		= "hipEventDestroy",
		.device_get_attribute	= "hipDeviceGetAttribute",
		.mem_get_handle_for_range = "hipMemGetHandleForAddressRange",
	},
	.h2d = 1,		/* hipMemcpyHostToDevice */
	.d2h = 2,		/* hipMemcpyDeviceToHost */
	.d2d = 3,		/* hipMemcpyDeviceToDevice */
	.cuda_errors = true,
	.not_ready = 600,	/* hipErrorNotReady, numbered like CUDA's */
	.event_disable_timing = 0x2,
	/* Newer releases report host memory as success, device -1 or so. */
	.device_type = -1,
	.dmabuf_supported_attr = 93,	/* hipDeviceAttributeDmaBufSupported */
	.dmabuf_handle_type = 1,	/* hipMemRangeHandleTypeDmaBufFd */
	MEM_RTAPI_UNLOADED,
};

MEM_RTAPI_BACKEND(mem_rocm, "rocm", hip);
