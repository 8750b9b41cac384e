// SPDX-License-Identifier: MIT
/*
 * A mock CNRT (libcnrt.so) with the calls libhmc uses. cnrtMemcpy copies
 * before it returns, as CNRT's does; copies whose pointers do not match
 * their direction are violations; host memory is "unregistered" to
 * cnrtPointerGetAttributes. See mock_dev.h.
 */
#include <string.h>

#include "mock_dev.h"

typedef int cnrtRet_t;

#define cnrtSuccess		0
#define cnrtErrorArgsInvalid	1	/* the mock's own numbers */
#define cnrtErrorNoMem		2
#define cnrtErrorDevice		3

enum {
	cnrtMemcpyHostToDev,
	cnrtMemcpyDevToDev,
	cnrtMemcpyDevToHost,
	cnrtMemcpyHostToHost,
};

enum {
	cnrtMemTypeUnregistered,
	cnrtMemTypeHost,
	cnrtMemTypeDevice,
};

struct cnrt_pointer_attr {
	int type;
	int device;
	void *device_pointer;
	void *host_pointer;
};

static __thread int current;

MOCK_EXPORT cnrtRet_t cnrtGetDeviceCount(unsigned int *count)
{
	*count = (unsigned int)mock_nr_devices();
	return cnrtSuccess;
}

MOCK_EXPORT cnrtRet_t cnrtGetDevice(int *device)
{
	*device = current;
	return cnrtSuccess;
}

MOCK_EXPORT cnrtRet_t cnrtSetDevice(int device)
{
	if (device < 0 || device >= mock_nr_devices())
		return cnrtErrorDevice;
	current = device;
	return cnrtSuccess;
}

MOCK_EXPORT cnrtRet_t cnrtMalloc(void **ptr, size_t size)
{
	if (!size)
		return cnrtErrorArgsInvalid;
	*ptr = mock_alloc(current, size);
	return *ptr ? cnrtSuccess : cnrtErrorNoMem;
}

MOCK_EXPORT cnrtRet_t cnrtFree(void *ptr)
{
	if (mock_free(ptr) < 0) {
		mock_violation("cnrtFree of %p, not an allocation", ptr);
		return cnrtErrorArgsInvalid;
	}
	return cnrtSuccess;
}

MOCK_EXPORT cnrtRet_t cnrtMemcpy(void *dst, void *src, size_t len, int dir)
{
	int dst_dev = mock_where(dst, len), src_dev = mock_where(src, len);
	bool ok;

	switch (dir) {
	case cnrtMemcpyHostToDev:
		ok = dst_dev >= 0 && src_dev == -1;
		break;
	case cnrtMemcpyDevToHost:
		ok = dst_dev == -1 && src_dev >= 0;
		break;
	case cnrtMemcpyDevToDev:
		ok = dst_dev >= 0 && src_dev >= 0;
		break;
	default:
		ok = false;
		break;
	}
	if (!ok) {
		mock_violation("cnrtMemcpy direction %d does not match its pointers",
			       dir);
		return cnrtErrorArgsInvalid;
	}
	mock_memcpy(dst, src, len);
	return cnrtSuccess;
}

MOCK_EXPORT cnrtRet_t cnrtPointerGetAttributes(struct cnrt_pointer_attr *attr,
					       void *ptr)
{
	int where = mock_where(ptr, 1);

	memset(attr, 0, sizeof(*attr));
	attr->device = -1;
	if (where >= 0) {
		attr->type = cnrtMemTypeDevice;
		attr->device = where;
		attr->device_pointer = ptr;
	}
	return cnrtSuccess;
}

MOCK_EXPORT const char *cnrtGetErrorStr(cnrtRet_t err)
{
	return "mock error";
}

MOCK_EXPORT void mock_app_device_enter(int dev)
{
	current = dev;
}

MOCK_EXPORT void mock_app_device_leave(int dev)
{
	current = 0;
}

MOCK_EXPORT int mock_current_device(void)
{
	return current;
}

MOCK_EXPORT int mock_report(char *msg, size_t len)
{
	return mock_dev_report(msg, len);
}
