/* SPDX-License-Identifier: MIT */
/*
 * Backends over a runtime that follows CUDA's runtime API (HIP, MUSA,
 * CNRT): devices selected per thread with Get/SetDevice, Malloc, Free, a
 * Memcpy with a direction and PointerGetAttributes. rtapi.c holds the
 * logic; a backend gives its library and symbol names, its memcpy
 * direction codes and what sets it apart, and MEM_RTAPI_BACKEND() makes
 * its struct mem_backend.
 */
#ifndef HMC_LIB_MEM_RTAPI_H
#define HMC_LIB_MEM_RTAPI_H

#include <pthread.h>
#include <stdbool.h>

#include "mem/mem.h"

/*
 * The attribute struct of PointerGetAttributes: the memory type and then
 * the device in every release of each runtime; the fields after them
 * changed between HIP releases, so leave room.
 */
struct mem_rtapi_ptr_attr {
	int type;
	int device;
	void *device_pointer;
	void *host_pointer;
	unsigned char later_fields[64];
};

/* A runtime's entry point names; NULL where it has none. */
struct mem_rtapi_names {
	const char *get_device_count;
	const char *get_device;
	const char *set_device;
	const char *malloc;
	const char *free;
	const char *memcpy;
	/* NULL where memcpy has landed the data when it returns. */
	const char *stream_synchronize;
	const char *pointer_get_attributes;
	const char *get_error_string;
	/* Optional (newer releases), for dma-buf export; NULL: none. */
	const char *device_get_attribute;
	const char *mem_get_handle_for_range;
	/*
	 * Optional, for copies that return at once (copy_start): MemcpyAsync,
	 * EventCreateWithFlags, EventRecord, EventQuery, EventSynchronize,
	 * EventDestroy; NULL: none.
	 */
	const char *memcpy_async;
	const char *event_create;
	const char *event_record;
	const char *event_query;
	const char *event_synchronize;
	const char *event_destroy;
};

struct mem_rtapi {
	const char *runtime;			/* in messages */
	const char *const *libs;		/* NULL-terminated */
	struct mem_rtapi_names names;
	int h2d, d2h, d2d;			/* memcpy direction codes */
	/* Errors numbered like CUDA's (mem_gpu_errno()), else all -EIO. */
	bool cuda_errors;
	/*
	 * The attribute type of device memory; -1 where the type is not to
	 * be trusted and a device pointer marks device memory instead.
	 */
	int device_type;
	int dmabuf_supported_attr;		/* DeviceGetAttribute's */
	int dmabuf_handle_type;			/* GetHandleForAddressRange's */
	int not_ready;				/* EventQuery's "not yet" */
	int event_disable_timing;		/* EventCreateWithFlags' flag */

	/* Filled in on first use. */
	pthread_once_t once;
	int count;				/* devices, or -ENODEV */
	int (*get_device_count)(int *count);
	int (*get_device)(int *device);
	int (*set_device)(int device);
	int (*malloc)(void **ptr, size_t size);
	int (*free)(void *ptr);
	int (*memcpy)(void *dst, const void *src, size_t len, int dir);
	int (*stream_synchronize)(void *stream);
	int (*pointer_get_attributes)(struct mem_rtapi_ptr_attr *attr,
				      const void *ptr);
	const char *(*get_error_string)(int err);
	int (*device_get_attribute)(int *value, int attr, int device);
	int (*mem_get_handle_for_range)(void *handle, void *dptr, size_t size,
					int type, unsigned long long flags);
	int (*memcpy_async)(void *dst, const void *src, size_t len, int dir,
			    void *stream);
	int (*event_create)(void **ev, unsigned int flags);
	int (*event_record)(void *ev, void *stream);
	int (*event_query)(void *ev);
	int (*event_synchronize)(void *ev);
	int (*event_destroy)(void *ev);
};

/* Initialiser of the fields filled in on first use. */
#define MEM_RTAPI_UNLOADED	.once = PTHREAD_ONCE_INIT, .count = -ENODEV

void mem_rtapi_load(struct mem_rtapi *rt);
int mem_rtapi_alloc(struct mem_rtapi *rt, int device, size_t size,
		    void **ptr);
int mem_rtapi_free(struct mem_rtapi *rt, int device, void *ptr);
int mem_rtapi_copy(struct mem_rtapi *rt, int device, void *dst,
		   const void *src, size_t len, enum hmc_copy_kind kind);
int mem_rtapi_ptr_device(struct mem_rtapi *rt, const void *ptr);
int mem_rtapi_export_dmabuf(struct mem_rtapi *rt, int device, void *ptr,
			    size_t len, int *fd);
int mem_rtapi_copy_start(struct mem_rtapi *rt, int device, void *dst,
			 const void *src, size_t len, enum hmc_copy_kind kind,
			 void **ev);
int mem_rtapi_copy_done(struct mem_rtapi *rt, int device, void *ev, bool wait);

/*
 * struct mem_backend @var, named @name, over @rt: mem_backend's calls
 * carry no context, so each backend gets its own small forwarders.
 */
#define MEM_RTAPI_BACKEND(var, name_, rt)					\
static void var##_load(void)						\
{									\
	mem_rtapi_load(&(rt));						\
}									\
static int var##_device_count(void)					\
{									\
	pthread_once(&(rt).once, var##_load);				\
	return (rt).count;						\
}									\
static int var##_alloc(int device, size_t size, void **ptr)		\
{									\
	return mem_rtapi_alloc(&(rt), device, size, ptr);		\
}									\
static int var##_free(int device, void *ptr)				\
{									\
	return mem_rtapi_free(&(rt), device, ptr);			\
}									\
static int var##_copy(int device, void *dst, const void *src,		\
		      size_t len, enum hmc_copy_kind kind)		\
{									\
	return mem_rtapi_copy(&(rt), device, dst, src, len, kind);	\
}									\
static int var##_ptr_device(const void *ptr)				\
{									\
	return mem_rtapi_ptr_device(&(rt), ptr);			\
}									\
static int var##_export_dmabuf(int device, void *ptr, size_t len,	\
			       int *fd)					\
{									\
	return mem_rtapi_export_dmabuf(&(rt), device, ptr, len, fd);	\
}									\
static int var##_copy_start(int device, void *dst, const void *src,	\
			    size_t len, enum hmc_copy_kind kind,	\
			    void **ev)					\
{									\
	return mem_rtapi_copy_start(&(rt), device, dst, src, len, kind,	\
				    ev);				\
}									\
static int var##_copy_done(int device, void *ev, bool wait)		\
{									\
	return mem_rtapi_copy_done(&(rt), device, ev, wait);		\
}									\
const struct mem_backend var = {					\
	.name		= name_,					\
	.device_count	= var##_device_count,				\
	.alloc		= var##_alloc,					\
	.free		= var##_free,					\
	.copy		= var##_copy,					\
	.ptr_device	= var##_ptr_device,				\
	.export_dmabuf	= var##_export_dmabuf,				\
	.copy_start	= var##_copy_start,				\
	.copy_done	= var##_copy_done,				\
}

#endif
