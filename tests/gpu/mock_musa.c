// SPDX-License-Identifier: MIT
/*
 * A mock MUSA runtime (libmusart.so) with the calls libhmc uses. Like
 * CUDA's runtime, musaMemcpy to the device and between devices may land
 * after it returns: such copies land at musaStreamSynchronize, so a
 * missing synchronisation shows as stale data. Copies whose pointers do
 * not match their musaMemcpyKind are violations; host memory is
 * "unregistered" to musaPointerGetAttributes. See mock_dev.h.
 */
#include <string.h>

#include "mock_dev.h"

typedef int musaError_t;

#define musaSuccess			0
#define musaErrorInvalidValue		1
#define musaErrorMemoryAllocation	2
#define musaErrorInvalidDevice		101

enum {
	musaMemcpyHostToHost,
	musaMemcpyHostToDevice,
	musaMemcpyDeviceToHost,
	musaMemcpyDeviceToDevice,
};

enum {
	musaMemoryTypeUnregistered,
	musaMemoryTypeHost,
	musaMemoryTypeDevice,
};

struct musa_pointer_attr {
	int type;
	int device;
	void *device_pointer;
	void *host_pointer;
};

MOCK_THREAD_DEVICE(0)

MOCK_EXPORT musaError_t musaGetDeviceCount(int *count)
{
	*count = mock_nr_devices();
	return musaSuccess;
}

MOCK_EXPORT musaError_t musaGetDevice(int *device)
{
	*device = current;
	return musaSuccess;
}

MOCK_EXPORT musaError_t musaSetDevice(int device)
{
	if (device < 0 || device >= mock_nr_devices())
		return musaErrorInvalidDevice;
	current = device;
	return musaSuccess;
}

MOCK_EXPORT musaError_t musaMalloc(void **ptr, size_t size)
{
	if (!size)
		return musaErrorInvalidValue;
	*ptr = mock_alloc(current, size);
	return *ptr ? musaSuccess : musaErrorMemoryAllocation;
}

MOCK_EXPORT musaError_t musaFree(void *ptr)
{
	return mock_free_ok("musaFree", ptr) ? musaSuccess :
					       musaErrorInvalidValue;
}

MOCK_EXPORT musaError_t musaMemcpy(void *dst, const void *src, size_t len,
				   int kind)
{
	static const struct mock_dirs dirs = {
		musaMemcpyHostToDevice, musaMemcpyDeviceToHost,
		musaMemcpyDeviceToDevice,
	};

	if (!mock_copy_ok("musaMemcpy", &dirs, kind, dst, src, len))
		return musaErrorInvalidValue;
	mock_copy_stream(current, kind == musaMemcpyDeviceToHost, dst, src,
			 len);
	return musaSuccess;
}

/*
 * Copies that return at once, on the default stream (the only one
 * mocked): both directions land at the device's next synchronisation.
 */
MOCK_EXPORT musaError_t musaMemcpyAsync(void *dst, const void *src, size_t len,
				     int kind, void *stream)
{
	static const struct mock_dirs dirs = {
		musaMemcpyHostToDevice, musaMemcpyDeviceToHost,
		musaMemcpyDeviceToDevice,
	};

	if (stream || kind == musaMemcpyDeviceToDevice ||
	    !mock_copy_ok("musaMemcpyAsync", &dirs, kind, dst, src, len))
		return musaErrorInvalidValue;
	mock_copy_later(current, dst, src, len);
	return musaSuccess;
}

MOCK_EXPORT musaError_t musaEventCreateWithFlags(struct mock_event **ev,
					      unsigned int flags)
{
	*ev = mock_event_create(current);
	return *ev ? musaSuccess : musaErrorMemoryAllocation;
}

MOCK_EXPORT musaError_t musaEventRecord(struct mock_event *ev, void *stream)
{
	if (!ev || stream)
		return musaErrorInvalidValue;
	mock_event_record(ev);
	return musaSuccess;
}

MOCK_EXPORT musaError_t musaEventQuery(struct mock_event *ev)
{
	return mock_event_query(ev) ? musaSuccess : 600;	/* ErrorNotReady */
}

MOCK_EXPORT musaError_t musaEventSynchronize(struct mock_event *ev)
{
	mock_event_synchronize(ev);
	return musaSuccess;
}

MOCK_EXPORT musaError_t musaEventDestroy(struct mock_event *ev)
{
	mock_event_destroy(ev);
	return musaSuccess;
}

MOCK_EXPORT musaError_t musaStreamSynchronize(void *stream)
{
	if (stream)
		return musaErrorInvalidValue;
	mock_sync(current);
	return musaSuccess;
}

MOCK_EXPORT musaError_t musaPointerGetAttributes(struct musa_pointer_attr *attr,
						 const void *ptr)
{
	int where = mock_where(ptr, 1);

	memset(attr, 0, sizeof(*attr));
	attr->device = -1;
	if (where >= 0) {
		attr->type = musaMemoryTypeDevice;
		attr->device = where;
		attr->device_pointer = (void *)ptr;
	}
	return musaSuccess;
}

MOCK_EXPORT const char *musaGetErrorString(musaError_t err)
{
	return "mock error";
}
