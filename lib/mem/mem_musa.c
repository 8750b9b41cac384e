// SPDX-License-Identifier: MIT
/*
 * Moore Threads GPU backend over the MUSA runtime (libmusart.so), loaded
 * on first use.
 *
 * MUSA's runtime follows CUDA's (rtapi.c): devices are selected per
 * thread, errors are numbered like CUDA's, and musaMemcpy may return
 * before a copy to the device has landed, so those are followed by a
 * synchronisation. MUSA exports no dma-buf: device memory is staged
 * through the host where a NIC needs it.
 * Only the few constants used here are declared: the build needs no MUSA
 * headers.
 */
#include <errno.h>

#include "mem/rtapi.h"

static struct mem_rtapi musa = {
	.runtime = "musa",
	.libs = (const char *const[]){ "libmusart.so", NULL },
	.names = {
		.get_device_count	= "musaGetDeviceCount",
		.get_device		= "musaGetDevice",
		.set_device		= "musaSetDevice",
		.malloc			= "musaMalloc",
		.free			= "musaFree",
		.memcpy			= "musaMemcpy",
		.stream_synchronize	= "musaStreamSynchronize",
		.pointer_get_attributes	= "musaPointerGetAttributes",
		.get_error_string	= "musaGetErrorString",
		.memcpy_async		= "musaMemcpyAsync",
		.event_create		= "musaEventCreateWithFlags",
		.event_record		= "musaEventRecord",
		.event_query		= "musaEventQuery",
		.event_synchronize	= "musaEventSynchronize",
		.event_destroy		= "musaEventDestroy",
	},
	.h2d = 1,		/* musaMemcpyHostToDevice */
	.d2h = 2,		/* musaMemcpyDeviceToHost */
	.d2d = 3,		/* musaMemcpyDeviceToDevice */
	.cuda_errors = true,
	.not_ready = 600,	/* musaErrorNotReady, numbered like CUDA's */
	.event_disable_timing = 0x2,
	.device_type = 2,	/* musaMemoryTypeDevice */
	MEM_RTAPI_UNLOADED,
};

MEM_RTAPI_BACKEND(mem_musa, "musa", musa);
