// SPDX-License-Identifier: MIT
/*
 * Cambricon MLU backend over CNRT (libcnrt.so, CNToolkit), loaded on first
 * use.
 *
 * CNRT selects devices per thread (cnrtSetDevice) like CUDA's runtime does
 * (rtapi.c). cnrtMemcpy is synchronous. CNRT exports no dma-buf: device
 * memory is staged through the host where a NIC needs it. Its error codes
 * differ between releases, so all are -EIO here, with cnrtGetErrorStr's
 * text at debug level.
 * Only the few constants used here are declared: the build needs no
 * CNToolkit headers.
 */
#include <errno.h>

#include "mem/rtapi.h"

static struct mem_rtapi cnrt = {
	.runtime = "cnrt",
	.libs = (const char *const[]){ "libcnrt.so", NULL },
	.names = {
		.get_device_count	= "cnrtGetDeviceCount",
		.get_device		= "cnrtGetDevice",
		.set_device		= "cnrtSetDevice",
		.malloc			= "cnrtMalloc",
		.free			= "cnrtFree",
		.memcpy			= "cnrtMemcpy",
		.pointer_get_attributes	= "cnrtPointerGetAttributes",
		.get_error_string	= "cnrtGetErrorStr",
	},
	.h2d = 0,		/* cnrtMemcpyHostToDev */
	.d2h = 2,		/* cnrtMemcpyDevToHost */
	.d2d = 1,		/* cnrtMemcpyDevToDev */
	.device_type = 2,	/* cnrtMemTypeDevice */
	MEM_RTAPI_UNLOADED,
};

MEM_RTAPI_BACKEND(mem_cnrt, "cnrt", cnrt);
