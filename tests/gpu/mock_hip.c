// SPDX-License-Identifier: MIT
/*
 * A mock HIP runtime (libamdhip64.so) with the calls libhmc uses. Copies
 * whose pointers do not match their hipMemcpyKind (the reference's bug)
 * are violations; host memory is reported the way ROCm 6 does, as a
 * success with no device pointer. Devices report
 * hipDeviceAttributeDmaBufSupported as mock_dmabuf_supported() says and
 * export ranges with hipMemGetHandleForAddressRange. See mock_dev.h.
 */
#include <stdint.h>
#include <string.h>

#include "mock_dev.h"

typedef int hipError_t;

#define hipSuccess			0
#define hipErrorInvalidValue		1
#define hipErrorOutOfMemory		2
#define hipErrorInvalidMemcpyDirection	21
#define hipErrorInvalidDevice		101
#define hipErrorNotSupported		801
#define hipDeviceAttributeDmaBufSupported 93
#define hipMemRangeHandleTypeDmaBufFd	1

enum {
	hipMemcpyHostToHost,
	hipMemcpyHostToDevice,
	hipMemcpyDeviceToHost,
	hipMemcpyDeviceToDevice,
};

struct hip_pointer_attr {
	int type;			/* ROCm 6: 0 unregistered, 2 device */
	int device;
	void *device_pointer;
	void *host_pointer;
	unsigned int allocation_flags;
};

MOCK_THREAD_DEVICE(0)

MOCK_EXPORT hipError_t hipGetDeviceCount(int *count)
{
	*count = mock_nr_devices();
	return hipSuccess;
}

MOCK_EXPORT hipError_t hipGetDevice(int *device)
{
	*device = current;
	return hipSuccess;
}

MOCK_EXPORT hipError_t hipSetDevice(int device)
{
	if (device < 0 || device >= mock_nr_devices())
		return hipErrorInvalidDevice;
	current = device;
	return hipSuccess;
}

MOCK_EXPORT hipError_t hipMalloc(void **ptr, size_t size)
{
	if (!size)
		return hipErrorInvalidValue;
	*ptr = mock_alloc(current, size);
	return *ptr ? hipSuccess : hipErrorOutOfMemory;
}

MOCK_EXPORT hipError_t hipFree(void *ptr)
{
	return mock_free_ok("hipFree", ptr) ? hipSuccess : hipErrorInvalidValue;
}

MOCK_EXPORT hipError_t hipMemcpy(void *dst, const void *src, size_t len,
				 int kind)
{
	static const struct mock_dirs dirs = {
		hipMemcpyHostToDevice, hipMemcpyDeviceToHost,
		hipMemcpyDeviceToDevice,
	};

	if (!mock_copy_ok("hipMemcpy", &dirs, kind, dst, src, len))
		return hipErrorInvalidMemcpyDirection;
	mock_copy_stream(current, kind == hipMemcpyDeviceToHost, dst, src, len);
	return hipSuccess;
}

/*
 * Copies that return at once, on the default stream (the only one
 * mocked): both directions land at the device's next synchronisation.
 */
MOCK_EXPORT hipError_t hipMemcpyAsync(void *dst, const void *src, size_t len,
				     int kind, void *stream)
{
	static const struct mock_dirs dirs = {
		hipMemcpyHostToDevice, hipMemcpyDeviceToHost,
		hipMemcpyDeviceToDevice,
	};

	if (stream || kind == hipMemcpyDeviceToDevice ||
	    !mock_copy_ok("hipMemcpyAsync", &dirs, kind, dst, src, len))
		return hipErrorInvalidValue;
	mock_copy_later(current, dst, src, len);
	return hipSuccess;
}

MOCK_EXPORT hipError_t hipEventCreateWithFlags(struct mock_event **ev,
					      unsigned int flags)
{
	*ev = mock_event_create(current);
	return *ev ? hipSuccess : hipErrorOutOfMemory;
}

MOCK_EXPORT hipError_t hipEventRecord(struct mock_event *ev, void *stream)
{
	if (!ev || stream)
		return hipErrorInvalidValue;
	mock_event_record(ev);
	return hipSuccess;
}

MOCK_EXPORT hipError_t hipEventQuery(struct mock_event *ev)
{
	return mock_event_query(ev) ? hipSuccess : 600;	/* ErrorNotReady */
}

MOCK_EXPORT hipError_t hipEventSynchronize(struct mock_event *ev)
{
	mock_event_synchronize(ev);
	return hipSuccess;
}

MOCK_EXPORT hipError_t hipEventDestroy(struct mock_event *ev)
{
	mock_event_destroy(ev);
	return hipSuccess;
}

MOCK_EXPORT hipError_t hipStreamSynchronize(void *stream)
{
	if (stream)
		return hipErrorInvalidValue;
	mock_sync(current);
	return hipSuccess;
}

MOCK_EXPORT hipError_t hipPointerGetAttributes(struct hip_pointer_attr *attr,
					       const void *ptr)
{
	int where = mock_where(ptr, 1);

	memset(attr, 0, sizeof(*attr));
	if (where >= 0) {
		attr->type = 2;
		attr->device = where;
		attr->device_pointer = (void *)ptr;
	}
	return hipSuccess;
}

MOCK_EXPORT hipError_t hipDeviceGetAttribute(int *value, int attr, int device)
{
	if (device < 0 || device >= mock_nr_devices())
		return hipErrorInvalidDevice;
	if (attr != hipDeviceAttributeDmaBufSupported)
		return hipErrorInvalidValue;
	*value = mock_dmabuf_supported();
	return hipSuccess;
}

MOCK_EXPORT hipError_t hipMemGetHandleForAddressRange(void *handle, void *dptr,
						      size_t size, int type,
						      unsigned long long flags)
{
	int device, fd;

	if (type != hipMemRangeHandleTypeDmaBufFd || flags || !size)
		return hipErrorInvalidValue;
	device = mock_where(dptr, size);
	if (device < 0)
		return hipErrorInvalidValue;
	if (!mock_dmabuf_supported())
		return hipErrorNotSupported;
	fd = mock_export(device, dptr, size);
	if (fd < 0)
		return hipErrorInvalidValue;
	*(int *)handle = fd;
	return hipSuccess;
}

MOCK_EXPORT const char *hipGetErrorString(hipError_t err)
{
	return "mock error";
}
