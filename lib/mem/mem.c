// SPDX-License-Identifier: MIT
/*
 * Memory: allocate, free and copy on the CPU or a GPU. Arguments are checked
 * here, then handed to the backend of the type; CPU memory needs no backend.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mem/mem.h"
#include "sys/log.h"

/*
 * Error codes that the CUDA driver API (CUDA_ERROR_*), the HIP runtime
 * (hipError*) and the MUSA runtime (musaError*) share: HIP and MUSA took
 * their numbers from CUDA. 17 and 21 are HIP's only.
 */
static const struct mem_errmap gpu_errors[] = {
	{ 1, -EINVAL },		/* INVALID_VALUE */
	{ 2, -ENOMEM },		/* OUT_OF_MEMORY */
	{ 3, -ENODEV },		/* NOT_INITIALIZED */
	{ 4, -ENODEV },		/* DEINITIALIZED */
	{ 17, -EINVAL },	/* INVALID_DEVICE_POINTER */
	{ 21, -EINVAL },	/* INVALID_MEMCPY_DIRECTION */
	{ 34, -ENODEV },	/* STUB_LIBRARY */
	{ 35, -ENODEV },	/* INSUFFICIENT_DRIVER */
	{ 46, -ENODEV },	/* DEVICE_UNAVAILABLE */
	{ 100, -ENODEV },	/* NO_DEVICE */
	{ 101, -ENODEV },	/* INVALID_DEVICE */
	{ 102, -ENODEV },	/* DEVICE_NOT_LICENSED */
	{ 201, -EINVAL },	/* INVALID_CONTEXT */
	{ 400, -EINVAL },	/* INVALID_HANDLE */
	{ 700, -EFAULT },	/* ILLEGAL_ADDRESS */
	{ 800, -EPERM },	/* NOT_PERMITTED */
	{ 801, -EOPNOTSUPP },	/* NOT_SUPPORTED */
	{ 803, -ENODEV },	/* SYSTEM_DRIVER_MISMATCH */
	{ 804, -ENODEV },	/* COMPAT_NOT_SUPPORTED */
	{ 909, -ETIMEDOUT },	/* TIMEOUT */
};

int mem_rt_errno(const char *runtime, const char *what, int code,
		 const char *text, const struct mem_errmap *map, size_t nr)
{
	int err = -EIO;
	size_t i;

	for (i = 0; i < nr; i++) {
		if (map[i].code == code) {
			err = map[i].err;
			break;
		}
	}
	pr_debug("%s: %s failed: error %d (%s)", runtime, what, code,
		 text ? text : "no description");
	return err;
}

int mem_gpu_errno(const char *runtime, const char *what, int code,
		  const char *text)
{
	return mem_rt_errno(runtime, what, code, text, gpu_errors,
			    sizeof(gpu_errors) / sizeof(gpu_errors[0]));
}

bool mem_dlopen(const char *runtime, const char *const *libs,
		const struct mem_sym *syms, size_t nr_syms,
		const struct mem_sym *opt, size_t nr_opt)
{
	const char *lib;
	void *handle;
	size_t i;

	for (; (lib = *libs); libs++) {
		handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		if (!handle) {
			pr_debug("%s: %s", runtime, dlerror());
			continue;
		}
		for (i = 0; i < nr_syms; i++) {
			*syms[i].slot = dlsym(handle, syms[i].name);
			if (!*syms[i].slot)
				break;
		}
		if (i == nr_syms) {
			pr_debug("%s: loaded %s", runtime, lib);
			for (i = 0; i < nr_opt; i++) {
				*opt[i].slot = dlsym(handle, opt[i].name);
				if (!*opt[i].slot)
					pr_debug("%s: %s lacks %s (optional)",
						 runtime, lib, opt[i].name);
			}
			return true;
		}
		pr_debug("%s: %s lacks %s", runtime, lib, syms[i].name);
		dlclose(handle);
	}
	return false;
}

static const struct mem_backend *mem_backend_of(enum hmc_mem_type type)
{
	switch (type) {
	case HMC_MEM_CUDA:
		return &mem_cuda;
	case HMC_MEM_ROCM:
		return &mem_rocm;
	case HMC_MEM_ASCEND:
		return &mem_ascend;
	case HMC_MEM_CNRT:
		return &mem_cnrt;
	case HMC_MEM_MUSA:
		return &mem_musa;
	default:
		return NULL;
	}
}

const char *hmc_mem_type_name(enum hmc_mem_type type)
{
	switch (type) {
	case HMC_MEM_CPU:
		return "cpu";
	case HMC_MEM_CUDA:
		return "cuda";
	case HMC_MEM_ROCM:
		return "rocm";
	case HMC_MEM_ASCEND:
		return "ascend";
	case HMC_MEM_CNRT:
		return "cnrt";
	case HMC_MEM_MUSA:
		return "musa";
	}
	return "unknown";
}

int hmc_mem_device_count(enum hmc_mem_type type)
{
	const struct mem_backend *be = mem_backend_of(type);

	if (type == HMC_MEM_CPU)
		return 1;
	return be ? be->device_count() : -EINVAL;
}

/* @device of @type exists: 0 and its backend in @be (NULL for the CPU). */
static int mem_check_device(enum hmc_mem_type type, int device,
			    const struct mem_backend **be)
{
	int count;

	*be = mem_backend_of(type);
	if (type != HMC_MEM_CPU && !*be)
		return -EINVAL;
	count = hmc_mem_device_count(type);
	if (count < 0)
		return count;
	if (device < 0 || device >= count) {
		pr_debug("%s: no device %d (%d present)",
			 hmc_mem_type_name(type), device, count);
		return -ENODEV;
	}
	return 0;
}

int mem_ptr_device(enum hmc_mem_type type, const void *ptr)
{
	const struct mem_backend *be = mem_backend_of(type);
	int count;

	if (!be)
		return -EINVAL;
	count = be->device_count();
	if (count < 0)
		return count;
	return be->ptr_device(ptr);
}

int mem_copy_start(enum hmc_mem_type type, int device, void *dst,
		   const void *src, size_t len, enum hmc_copy_kind kind,
		   void **ev)
{
	const struct mem_backend *be;
	int ret;

	*ev = NULL;
	if (kind != HMC_COPY_H2D && kind != HMC_COPY_D2H)
		return -EINVAL;
	ret = mem_check_device(type, device, &be);
	if (ret || !len)
		return ret;
	if (be->copy_start) {
		ret = be->copy_start(device, dst, src, len, kind, ev);
		if (ret != -EOPNOTSUPP)
			return ret;
	}
	return be->copy(device, dst, src, len, kind);
}

int mem_copy_done(enum hmc_mem_type type, int device, void *ev, bool wait)
{
	const struct mem_backend *be = mem_backend_of(type);

	if (!ev)
		return 0;
	return be->copy_done(device, ev, wait);
}

int hmc_mem_alloc(enum hmc_mem_type type, int device, size_t size, void **ptr)
{
	const struct mem_backend *be;
	int ret;

	if (!ptr)
		return -EINVAL;
	*ptr = NULL;
	if (!size)
		return -EINVAL;
	ret = mem_check_device(type, device, &be);
	if (ret)
		return ret;
	if (be)
		return be->alloc(device, size, ptr);
	return -posix_memalign(ptr, (size_t)sysconf(_SC_PAGESIZE), size);
}

int hmc_mem_free(enum hmc_mem_type type, int device, void *ptr)
{
	const struct mem_backend *be;
	int ret;

	ret = mem_check_device(type, device, &be);
	if (ret || !ptr)
		return ret;
	if (be)
		return be->free(device, ptr);
	free(ptr);
	return 0;
}

int hmc_mem_copy(enum hmc_mem_type type, int device, void *dst,
		 const void *src, size_t len, enum hmc_copy_kind kind)
{
	const struct mem_backend *be;
	int ret;

	switch (kind) {
	case HMC_COPY_H2H:
		break;
	case HMC_COPY_H2D:
	case HMC_COPY_D2H:
	case HMC_COPY_D2D:
		if (type == HMC_MEM_CPU)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	ret = mem_check_device(type, device, &be);
	if (ret || !len)
		return ret;
	if (!dst || !src)
		return -EINVAL;
	if (kind == HMC_COPY_H2H) {
		memmove(dst, src, len);
		return 0;
	}
	return be->copy(device, dst, src, len, kind);
}

int mem_export_dmabuf(enum hmc_mem_type type, int device, void *ptr,
		      size_t len, int *fd)
{
	const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	const struct mem_backend *be;
	int ret;

	if (type == HMC_MEM_CPU || !ptr || !len || !fd ||
	    ((uintptr_t)ptr | len) & (page - 1))
		return -EINVAL;
	ret = mem_check_device(type, device, &be);
	if (ret)
		return ret;
	return be->export_dmabuf(device, ptr, len, fd);
}
