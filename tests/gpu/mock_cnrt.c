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

MOCK_THREAD_DEVICE(0)

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
	return mock_free_ok("cnrtFree", ptr) ? cnrtSuccess :
					       cnrtErrorArgsInvalid;
}

MOCK_EXPORT cnrtRet_t cnrtMemcpy(void *dst, void *src, size_t len, int dir)
{
	static const struct mock_dirs dirs = {
		cnrtMemcpyHostToDev, cnrtMemcpyDevToHost, cnrtMemcpyDevToDev,
	};

	if (!mock_copy_ok("cnrtMemcpy", &dirs, dir, dst, src, len))
		return cnrtErrorArgsInvalid;
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
