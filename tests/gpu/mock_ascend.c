// SPDX-License-Identifier: MIT
/*
 * A mock AscendCL (libascendcl.so) with the calls libhmc uses. Every call
 * but aclInit fails with ACL_ERROR_UNINITIALIZE before aclInit; device
 * calls need a device bound to the thread (ACL_ERROR_RT_CONTEXT_NULL, and
 * aclrtGetDevice fails the same way on a thread without one). aclrtMemcpy
 * copies before it returns, as AscendCL's does; copies whose pointers do
 * not match their kind, or longer than destMax, are violations. See
 * mock_dev.h.
 */
#include <stdint.h>
#include <string.h>

#include "mock_dev.h"

typedef int aclError;

#define ACL_SUCCESS			0
#define ACL_ERROR_INVALID_PARAM		100000
#define ACL_ERROR_UNINITIALIZE		100001
#define ACL_ERROR_REPEAT_INITIALIZE	100002
#define ACL_ERROR_RT_INVALID_DEVICEID	107001
#define ACL_ERROR_RT_CONTEXT_NULL	107002
#define ACL_ERROR_RT_MEMORY_ALLOCATION	207001

enum {
	ACL_MEMCPY_HOST_TO_HOST,
	ACL_MEMCPY_HOST_TO_DEVICE,
	ACL_MEMCPY_DEVICE_TO_HOST,
	ACL_MEMCPY_DEVICE_TO_DEVICE,
};

enum {
	ACL_MEM_LOCATION_TYPE_HOST,
	ACL_MEM_LOCATION_TYPE_DEVICE,
	ACL_MEM_LOCATION_TYPE_UNREGISTERED,
};

struct acl_ptr_attr {
	uint32_t id;
	uint32_t type;
	uint32_t page_size;
	uint32_t rsv[4];
};

static int initialised;
MOCK_THREAD_DEVICE(-1)	/* no device bound yet */

MOCK_EXPORT aclError aclInit(const char *config_path)
{
	if (config_path)
		return ACL_ERROR_INVALID_PARAM;
	if (__atomic_exchange_n(&initialised, 1, __ATOMIC_SEQ_CST))
		return ACL_ERROR_REPEAT_INITIALIZE;
	return ACL_SUCCESS;
}

static aclError need_device(void)
{
	if (!__atomic_load_n(&initialised, __ATOMIC_SEQ_CST))
		return ACL_ERROR_UNINITIALIZE;
	return current < 0 ? ACL_ERROR_RT_CONTEXT_NULL : ACL_SUCCESS;
}

MOCK_EXPORT aclError aclrtGetDeviceCount(uint32_t *count)
{
	if (!__atomic_load_n(&initialised, __ATOMIC_SEQ_CST))
		return ACL_ERROR_UNINITIALIZE;
	*count = (uint32_t)mock_nr_devices();
	return ACL_SUCCESS;
}

MOCK_EXPORT aclError aclrtGetDevice(int32_t *device)
{
	aclError err = need_device();

	if (err)
		return err;
	*device = current;
	return ACL_SUCCESS;
}

MOCK_EXPORT aclError aclrtSetDevice(int32_t device)
{
	if (!__atomic_load_n(&initialised, __ATOMIC_SEQ_CST))
		return ACL_ERROR_UNINITIALIZE;
	if (device < 0 || device >= mock_nr_devices())
		return ACL_ERROR_RT_INVALID_DEVICEID;
	current = device;
	return ACL_SUCCESS;
}

MOCK_EXPORT aclError aclrtMalloc(void **ptr, size_t size, int policy)
{
	aclError err = need_device();

	if (err)
		return err;
	if (!size || policy < 0)
		return ACL_ERROR_INVALID_PARAM;
	*ptr = mock_alloc(current, size);
	return *ptr ? ACL_SUCCESS : ACL_ERROR_RT_MEMORY_ALLOCATION;
}

MOCK_EXPORT aclError aclrtFree(void *ptr)
{
	aclError err = need_device();

	if (err)
		return err;
	return mock_free_ok("aclrtFree", ptr) ? ACL_SUCCESS :
						ACL_ERROR_INVALID_PARAM;
}

MOCK_EXPORT aclError aclrtMemcpy(void *dst, size_t dst_max, const void *src,
				 size_t len, int kind)
{
	static const struct mock_dirs dirs = {
		ACL_MEMCPY_HOST_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST,
		ACL_MEMCPY_DEVICE_TO_DEVICE,
	};
	aclError err = need_device();

	if (err)
		return err;
	if (len > dst_max) {
		mock_violation("aclrtMemcpy of %zu bytes into %zu", len,
			       dst_max);
		return ACL_ERROR_INVALID_PARAM;
	}
	if (!mock_copy_ok("aclrtMemcpy", &dirs, kind, dst, src, len))
		return ACL_ERROR_INVALID_PARAM;
	mock_memcpy(dst, src, len);
	return ACL_SUCCESS;
}

MOCK_EXPORT aclError aclrtPointerGetAttributes(const void *ptr,
					       struct acl_ptr_attr *attr)
{
	int where = mock_where(ptr, 1);

	memset(attr, 0, sizeof(*attr));
	attr->page_size = 4096;
	if (where >= 0) {
		attr->type = ACL_MEM_LOCATION_TYPE_DEVICE;
		attr->id = (uint32_t)where;
	} else {
		attr->type = ACL_MEM_LOCATION_TYPE_UNREGISTERED;
	}
	return ACL_SUCCESS;
}

MOCK_EXPORT const char *aclGetRecentErrMsg(void)
{
	return "mock error";
}
