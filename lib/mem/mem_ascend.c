// SPDX-License-Identifier: MIT
/*
 * Ascend NPU backend over AscendCL (libascendcl.so, CANN), loaded on first
 * use.
 *
 * AscendCL binds a device to the calling thread (aclrtSetDevice): every
 * call switches the thread to the device it names and back to the
 * application's device afterwards. A thread that had no device yet keeps
 * the one we set, as AscendCL has no way to unset it short of
 * aclrtResetDevice, which would free the application's resources on it.
 * aclrtMemcpy copies before it returns. aclrtPointerGetAttributes (CANN 8
 * and later) tells which device owns a pointer; without it the thread's
 * current device is taken. AscendCL exports no dma-buf: device memory is
 * staged through the host where a NIC needs it.
 * Only the few types and prototypes used here are declared: the build
 * needs no CANN headers.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include "mem/mem.h"
#include "sys/log.h"

typedef int aclError;

#define ACL_SUCCESS			0
#define ACL_ERROR_REPEAT_INITIALIZE	100002
#define ACL_MEM_MALLOC_HUGE_FIRST	0

enum acl_memcpy_kind {
	ACL_MEMCPY_HOST_TO_DEVICE	= 1,
	ACL_MEMCPY_DEVICE_TO_HOST	= 2,
	ACL_MEMCPY_DEVICE_TO_DEVICE	= 3,
};

#define ACL_MEM_LOCATION_TYPE_DEVICE	1

/* aclrtPtrAttributes: aclrtMemLocation {id, type}, pageSize, rsv[4]. */
struct acl_ptr_attr {
	uint32_t id;
	uint32_t type;
	uint32_t page_size;
	uint32_t rsv[4];
};

/* AscendCL's codes (aclError, with the runtime's passed through). */
static const struct mem_errmap acl_errors[] = {
	{ 100000, -EINVAL },	/* ACL_ERROR_INVALID_PARAM */
	{ 100001, -ENODEV },	/* ACL_ERROR_UNINITIALIZE */
	{ 200000, -ENOMEM },	/* ACL_ERROR_BAD_ALLOC */
	{ 200001, -EOPNOTSUPP },	/* ACL_ERROR_API_NOT_SUPPORT */
	{ 200002, -ENODEV },	/* ACL_ERROR_INVALID_DEVICE */
	{ 200006, -EOPNOTSUPP },	/* ACL_ERROR_FEATURE_UNSUPPORTED */
	{ 107000, -EINVAL },	/* ACL_ERROR_RT_PARAM_INVALID */
	{ 107001, -ENODEV },	/* ACL_ERROR_RT_INVALID_DEVICEID */
	{ 107002, -EINVAL },	/* ACL_ERROR_RT_CONTEXT_NULL */
	{ 107016, -EINVAL },	/* ACL_ERROR_RT_INVALID_MEMORY_TYPE */
	{ 107019, -ETIMEDOUT },	/* ACL_ERROR_RT_WAIT_TIMEOUT */
	{ 207000, -EOPNOTSUPP },	/* ACL_ERROR_RT_FEATURE_NOT_SUPPORT */
	{ 207001, -ENOMEM },	/* ACL_ERROR_RT_MEMORY_ALLOCATION */
	{ 207004, -ENODEV },	/* ACL_ERROR_RT_NO_DEVICE */
	{ 207006, -EPERM },	/* ACL_ERROR_RT_NO_PERMISSION */
};

static struct {
	pthread_once_t once;
	int count;			/* devices, or -ENODEV */
	aclError (*init)(const char *config_path);
	aclError (*get_device_count)(uint32_t *count);
	aclError (*get_device)(int32_t *device);
	aclError (*set_device)(int32_t device);
	aclError (*malloc)(void **ptr, size_t size, int policy);
	aclError (*free)(void *ptr);
	aclError (*memcpy)(void *dst, size_t dst_max, const void *src,
			   size_t len, enum acl_memcpy_kind kind);
	const char *(*recent_err_msg)(void);
	/* Optional: CANN 8 and later, NULL before. */
	aclError (*pointer_get_attributes)(const void *ptr,
					   struct acl_ptr_attr *attr);
} acl = { .once = PTHREAD_ONCE_INIT, .count = -ENODEV };

static const struct mem_sym acl_syms[] = {
	{ "aclInit", (void **)&acl.init },
	{ "aclrtGetDeviceCount", (void **)&acl.get_device_count },
	{ "aclrtGetDevice", (void **)&acl.get_device },
	{ "aclrtSetDevice", (void **)&acl.set_device },
	{ "aclrtMalloc", (void **)&acl.malloc },
	{ "aclrtFree", (void **)&acl.free },
	{ "aclrtMemcpy", (void **)&acl.memcpy },
	{ "aclGetRecentErrMsg", (void **)&acl.recent_err_msg },
};

static const struct mem_sym acl_opt_syms[] = {
	{ "aclrtPointerGetAttributes", (void **)&acl.pointer_get_attributes },
};

static int acl_errno(const char *what, aclError err)
{
	return mem_rt_errno("ascend", what, err, acl.recent_err_msg(),
			    acl_errors, sizeof(acl_errors) / sizeof(acl_errors[0]));
}

static void acl_load(void)
{
	static const char *const libs[] = { "libascendcl.so", NULL };
	uint32_t count;
	aclError err;

	if (!mem_dlopen("ascend", libs, acl_syms,
			sizeof(acl_syms) / sizeof(acl_syms[0]), acl_opt_syms,
			sizeof(acl_opt_syms) / sizeof(acl_opt_syms[0])))
		return;
	/* The application may have initialised AscendCL already. */
	err = acl.init(NULL);
	if (err != ACL_SUCCESS && err != ACL_ERROR_REPEAT_INITIALIZE) {
		acl_errno("aclInit", err);
		return;
	}
	err = acl.get_device_count(&count);
	if (err != ACL_SUCCESS) {
		acl_errno("aclrtGetDeviceCount", err);
		return;
	}
	acl.count = (int)count;
}

static int acl_device_count(void)
{
	pthread_once(&acl.once, acl_load);
	return acl.count;
}

/*
 * Switch this thread to @device; its previous device goes to @saved, -1
 * if it had none.
 */
static int acl_enter(int device, int32_t *saved)
{
	aclError err;

	if (acl.get_device(saved) != ACL_SUCCESS)
		*saved = -1;
	if (*saved == device)
		return 0;
	err = acl.set_device(device);
	if (err != ACL_SUCCESS)
		return acl_errno("aclrtSetDevice", err);
	return 0;
}

static void acl_leave(int device, int32_t saved)
{
	if (saved >= 0 && saved != device)
		acl.set_device(saved);
}

static int acl_alloc(int device, size_t size, void **ptr)
{
	int32_t saved;
	aclError err;
	int ret;

	ret = acl_enter(device, &saved);
	if (ret)
		return ret;
	err = acl.malloc(ptr, size, ACL_MEM_MALLOC_HUGE_FIRST);
	if (err != ACL_SUCCESS) {
		*ptr = NULL;
		ret = acl_errno("aclrtMalloc", err);
	}
	acl_leave(device, saved);
	return ret;
}

static int acl_ptr_device(const void *ptr)
{
	struct acl_ptr_attr attr = { 0 };
	int32_t device;
	aclError err;

	if (!acl.pointer_get_attributes) {
		if (acl.get_device(&device) != ACL_SUCCESS) {
			pr_debug("ascend: no aclrtPointerGetAttributes and no current device: whose is %p?",
				 ptr);
			return -EINVAL;
		}
		return device;
	}
	err = acl.pointer_get_attributes(ptr, &attr);
	if (err != ACL_SUCCESS)
		return acl_errno("aclrtPointerGetAttributes", err);
	if (attr.type != ACL_MEM_LOCATION_TYPE_DEVICE ||
	    attr.id >= (uint32_t)acl.count)
		return -EINVAL;
	return (int)attr.id;
}

static int acl_free(int device, void *ptr)
{
	int32_t saved;
	aclError err;
	int ret;

	ret = acl_ptr_device(ptr);
	if (ret < 0)
		return ret;
	if (acl.pointer_get_attributes && ret != device) {
		pr_debug("ascend: %p belongs to device %d, not %d", ptr, ret,
			 device);
		return -EINVAL;
	}
	ret = acl_enter(device, &saved);
	if (ret)
		return ret;
	err = acl.free(ptr);
	if (err != ACL_SUCCESS)
		ret = acl_errno("aclrtFree", err);
	acl_leave(device, saved);
	return ret;
}

static int acl_copy(int device, void *dst, const void *src, size_t len,
		    enum hmc_copy_kind kind)
{
	enum acl_memcpy_kind acl_kind;
	int32_t saved;
	aclError err;
	int ret;

	switch (kind) {
	case HMC_COPY_H2D:
		acl_kind = ACL_MEMCPY_HOST_TO_DEVICE;
		break;
	case HMC_COPY_D2H:
		acl_kind = ACL_MEMCPY_DEVICE_TO_HOST;
		break;
	default:
		acl_kind = ACL_MEMCPY_DEVICE_TO_DEVICE;
		break;
	}
	ret = acl_enter(device, &saved);
	if (ret)
		return ret;
	err = acl.memcpy(dst, len, src, len, acl_kind);
	if (err != ACL_SUCCESS)
		ret = acl_errno("aclrtMemcpy", err);
	acl_leave(device, saved);
	return ret;
}

static int acl_export_dmabuf(int device, void *ptr, size_t len, int *fd)
{
	pr_debug("ascend: AscendCL exports no dma-buf");
	return -EOPNOTSUPP;
}

const struct mem_backend mem_ascend = {
	.name		= "ascend",
	.device_count	= acl_device_count,
	.alloc		= acl_alloc,
	.free		= acl_free,
	.copy		= acl_copy,
	.ptr_device	= acl_ptr_device,
	.export_dmabuf	= acl_export_dmabuf,
};
