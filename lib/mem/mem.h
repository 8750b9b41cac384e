/* SPDX-License-Identifier: MIT */
/*
 * Memory backends. hmc_mem_*() (mem.c) validate their arguments and
 * dispatch to a backend; each GPU backend dlopens its runtime on first use
 * (pthread_once) and reports -ENODEV if it is missing or has no devices.
 * Backend calls get a device already checked against device_count().
 */
#ifndef HMC_LIB_MEM_H
#define HMC_LIB_MEM_H

#include <stdbool.h>

#include <hmc/hmc.h>

struct mem_backend {
	const char *name;
	/* Devices of this runtime, or -ENODEV if the runtime is missing. */
	int (*device_count)(void);
	int (*alloc)(int device, size_t size, void **ptr);
	int (*free)(int device, void *ptr);
	/* Synchronous: the data is in place when it returns. */
	int (*copy)(int device, void *dst, const void *src, size_t len,
		    enum hmc_copy_kind kind);
	/* Device that owns the device memory at @ptr, -EINVAL if none does. */
	int (*ptr_device)(const void *ptr);
	/*
	 * A dma-buf of [@ptr, @ptr + @len) of @device's memory (page aligned,
	 * checked by mem_export_dmabuf()) in a new descriptor *@fd, its byte
	 * 0 at @ptr; -EOPNOTSUPP where the runtime, its version or the
	 * device cannot export.
	 */
	int (*export_dmabuf)(int device, void *ptr, size_t len, int *fd);
	/*
	 * Optional (NULL, or -EOPNOTSUPP where the runtime lacks the calls:
	 * copy() does it instead). Queue a host-to-device or device-to-host
	 * copy on the backend's own stream of @device and return at once;
	 * *@ev then stands for it until copy_done() says it has landed.
	 * Both ends must stay put until then.
	 */
	int (*copy_start)(int device, void *dst, const void *src, size_t len,
			  enum hmc_copy_kind kind, void **ev);
	/*
	 * 0 once @ev's copy has landed, or an error: either way @ev is gone;
	 * -EINPROGRESS while it runs (with @wait, it waits instead).
	 */
	int (*copy_done)(int device, void *ev, bool wait);
};

extern const struct mem_backend mem_cuda;
extern const struct mem_backend mem_rocm;
extern const struct mem_backend mem_ascend;
extern const struct mem_backend mem_cnrt;
extern const struct mem_backend mem_musa;

/* The last enum hmc_mem_type: types above it are invalid. */
#define MEM_TYPE_LAST	HMC_MEM_MUSA

/* A runtime symbol and where its address goes. */
struct mem_sym {
	const char *name;
	void **slot;
};

/*
 * dlopen the first of the NULL-terminated @libs that loads and resolve all
 * @syms in it, and those of the @nr_opt optional @opt it has (newer
 * runtimes only; the slots of missing ones are NULL); false (and a
 * pr_debug saying why) if none has all @syms. A loaded runtime stays
 * loaded for the life of the process.
 */
bool mem_dlopen(const char *runtime, const char *const *libs,
		const struct mem_sym *syms, size_t nr_syms,
		const struct mem_sym *opt, size_t nr_opt);

/* A runtime's error code and the errno it stands for. */
struct mem_errmap {
	int code;
	int err;
};

/*
 * Errno for a runtime's error @code as @map (@nr entries) says, -EIO for
 * codes it does not list; @what and the runtime's @text go to pr_debug.
 */
int mem_rt_errno(const char *runtime, const char *what, int code,
		 const char *text, const struct mem_errmap *map, size_t nr);

/*
 * Errno for a CUDA driver, CUDA-style runtime (MUSA) or HIP runtime error
 * code: HIP and MUSA number their errors like CUDA does.
 */
int mem_gpu_errno(const char *runtime, const char *what, int code,
		  const char *text);

/*
 * A copy between host memory and @device's memory of GPU @type (H2D or
 * D2H), queued on the backend's stream where it has one: *@ev is then
 * for mem_copy_done(); else it is done at once and *@ev is NULL. Both
 * ends must stay put until mem_copy_done() returns anything but
 * -EINPROGRESS.
 */
int mem_copy_start(enum hmc_mem_type type, int device, void *dst,
		   const void *src, size_t len, enum hmc_copy_kind kind,
		   void **ev);
/* See struct mem_backend's copy_done(); @ev NULL: 0. */
int mem_copy_done(enum hmc_mem_type type, int device, void *ev, bool wait);

/* The device of @type that owns @ptr (GPU types only), or -errno. */
int mem_ptr_device(enum hmc_mem_type type, const void *ptr);

/*
 * Export [@ptr, @ptr + @len) of @device's memory of GPU @type as a dma-buf
 * in a new descriptor *@fd whose byte 0 is @ptr: for ibv_reg_dmabuf_mr()
 * and the like. @ptr and @len must be page aligned (-EINVAL), the device
 * must exist (-ENODEV); -EOPNOTSUPP where the runtime or device cannot.
 */
int mem_export_dmabuf(enum hmc_mem_type type, int device, void *ptr,
		      size_t len, int *fd);

#endif
