// SPDX-License-Identifier: MIT
/*
 * The logic of the backends over CUDA-runtime-like APIs (rtapi.h): every
 * call switches the calling thread to the device it names and back to the
 * application's device afterwards.
 */
#include <errno.h>

#include "mem/rtapi.h"
#include "sys/log.h"

static int rtapi_errno(struct mem_rtapi *rt, const char *what, int err)
{
	const char *text = rt->get_error_string(err);

	if (rt->cuda_errors)
		return mem_gpu_errno(rt->runtime, what, err, text);
	/* Codes that differ between releases: -EIO, the text says more. */
	return mem_rt_errno(rt->runtime, what, err, text, NULL, 0);
}

void mem_rtapi_load(struct mem_rtapi *rt)
{
	const struct mem_rtapi_names *n = &rt->names;
	struct mem_sym syms[] = {
		{ n->get_device_count, (void **)&rt->get_device_count },
		{ n->get_device, (void **)&rt->get_device },
		{ n->set_device, (void **)&rt->set_device },
		{ n->malloc, (void **)&rt->malloc },
		{ n->free, (void **)&rt->free },
		{ n->memcpy, (void **)&rt->memcpy },
		{ n->pointer_get_attributes,
		  (void **)&rt->pointer_get_attributes },
		{ n->get_error_string, (void **)&rt->get_error_string },
		/* Last: left out where memcpy is synchronous. */
		{ n->stream_synchronize, (void **)&rt->stream_synchronize },
	};
	struct mem_sym opt[8];
	size_t nr_syms = sizeof(syms) / sizeof(syms[0]), nr_opt = 0;
	int err, count;

	if (!n->stream_synchronize)
		nr_syms--;
	if (n->mem_get_handle_for_range) {
		opt[nr_opt++] = (struct mem_sym){ n->device_get_attribute,
						  (void **)&rt->device_get_attribute };
		opt[nr_opt++] = (struct mem_sym){ n->mem_get_handle_for_range,
						  (void **)&rt->mem_get_handle_for_range };
	}
	if (n->memcpy_async) {
		opt[nr_opt++] = (struct mem_sym){ n->memcpy_async,
						  (void **)&rt->memcpy_async };
		opt[nr_opt++] = (struct mem_sym){ n->event_create,
						  (void **)&rt->event_create };
		opt[nr_opt++] = (struct mem_sym){ n->event_record,
						  (void **)&rt->event_record };
		opt[nr_opt++] = (struct mem_sym){ n->event_query,
						  (void **)&rt->event_query };
		opt[nr_opt++] = (struct mem_sym){ n->event_synchronize,
						  (void **)&rt->event_synchronize };
		opt[nr_opt++] = (struct mem_sym){ n->event_destroy,
						  (void **)&rt->event_destroy };
	}
	if (!mem_dlopen(rt->runtime, rt->libs, syms, nr_syms, opt, nr_opt))
		return;
	err = rt->get_device_count(&count);
	if (err) {
		rtapi_errno(rt, n->get_device_count, err);
		return;
	}
	rt->count = count;
}

/* Switch this thread to @device; its previous device goes to @saved. */
static int rtapi_enter(struct mem_rtapi *rt, int device, int *saved)
{
	int err;

	err = rt->get_device(saved);
	if (err)
		return rtapi_errno(rt, rt->names.get_device, err);
	err = rt->set_device(device);
	if (err)
		return rtapi_errno(rt, rt->names.set_device, err);
	return 0;
}

static void rtapi_leave(struct mem_rtapi *rt, int saved)
{
	rt->set_device(saved);
}

int mem_rtapi_alloc(struct mem_rtapi *rt, int device, size_t size,
		    void **ptr)
{
	int saved, ret, err;

	ret = rtapi_enter(rt, device, &saved);
	if (ret)
		return ret;
	err = rt->malloc(ptr, size);
	if (err) {
		*ptr = NULL;
		ret = rtapi_errno(rt, rt->names.malloc, err);
	}
	rtapi_leave(rt, saved);
	return ret;
}

int mem_rtapi_ptr_device(struct mem_rtapi *rt, const void *ptr)
{
	struct mem_rtapi_ptr_attr attr = { .device = -1 };
	int err;

	err = rt->pointer_get_attributes(&attr, ptr);
	if (err)
		return rtapi_errno(rt, rt->names.pointer_get_attributes, err);
	if (rt->device_type >= 0 ? attr.type != rt->device_type :
				   !attr.device_pointer)
		return -EINVAL;
	if (attr.device < 0 || attr.device >= rt->count)
		return -EINVAL;
	return attr.device;
}

int mem_rtapi_free(struct mem_rtapi *rt, int device, void *ptr)
{
	int saved, ret, err;

	ret = mem_rtapi_ptr_device(rt, ptr);
	if (ret < 0)
		return ret;
	if (ret != device) {
		pr_debug("%s: %p belongs to device %d, not %d", rt->runtime,
			 ptr, ret, device);
		return -EINVAL;
	}
	ret = rtapi_enter(rt, device, &saved);
	if (ret)
		return ret;
	err = rt->free(ptr);
	if (err)
		ret = rtapi_errno(rt, rt->names.free, err);
	rtapi_leave(rt, saved);
	return ret;
}

int mem_rtapi_copy(struct mem_rtapi *rt, int device, void *dst,
		   const void *src, size_t len, enum hmc_copy_kind kind)
{
	const char *what = rt->names.memcpy;
	int dir, saved, ret, err;

	switch (kind) {
	case HMC_COPY_H2D:
		dir = rt->h2d;
		break;
	case HMC_COPY_D2H:
		dir = rt->d2h;
		break;
	default:
		dir = rt->d2d;
		break;
	}
	ret = rtapi_enter(rt, device, &saved);
	if (ret)
		return ret;
	err = rt->memcpy(dst, src, len, dir);
	/* As for CUDA: do not return before H2D and D2D data has landed. */
	if (!err && kind != HMC_COPY_D2H && rt->stream_synchronize) {
		what = rt->names.stream_synchronize;
		err = rt->stream_synchronize(NULL);
	}
	if (err)
		ret = rtapi_errno(rt, what, err);
	rtapi_leave(rt, saved);
	return ret;
}

/*
 * A copy queued on the default stream with an event behind it, as
 * mem_rtapi_copy()'s but without waiting for it.
 */
int mem_rtapi_copy_start(struct mem_rtapi *rt, int device, void *dst,
			 const void *src, size_t len, enum hmc_copy_kind kind,
			 void **ev)
{
	const char *what = rt->names.event_create;
	int saved, ret, err;
	void *e;

	if (!rt->memcpy_async || !rt->event_create || !rt->event_record ||
	    !rt->event_query || !rt->event_synchronize || !rt->event_destroy)
		return -EOPNOTSUPP;
	ret = rtapi_enter(rt, device, &saved);
	if (ret)
		return ret;
	err = rt->event_create(&e, rt->event_disable_timing);
	if (err)
		goto out;
	what = rt->names.memcpy_async;
	err = rt->memcpy_async(dst, src, len,
			       kind == HMC_COPY_H2D ? rt->h2d : rt->d2h, NULL);
	if (!err && !rt->event_record(e, NULL)) {
		*ev = e;
		goto out;
	}
	/* No copy, or no event behind it: let what was queued land now. */
	if (!err && rt->stream_synchronize) {
		what = rt->names.stream_synchronize;
		err = rt->stream_synchronize(NULL);
	}
	rt->event_destroy(e);
out:
	if (err)
		ret = rtapi_errno(rt, what, err);
	rtapi_leave(rt, saved);
	return ret;
}

int mem_rtapi_copy_done(struct mem_rtapi *rt, int device, void *ev, bool wait)
{
	int saved, ret, err;

	ret = rtapi_enter(rt, device, &saved);
	if (ret)
		return ret;
	err = wait ? rt->event_synchronize(ev) : rt->event_query(ev);
	if (err == rt->not_ready && !wait) {
		ret = -EINPROGRESS;
	} else {
		if (err)
			ret = rtapi_errno(rt, wait ? rt->names.event_synchronize :
					  rt->names.event_query, err);
		rt->event_destroy(ev);
	}
	rtapi_leave(rt, saved);
	return ret;
}

/* Where the device says it can, a range as a dma-buf. */
int mem_rtapi_export_dmabuf(struct mem_rtapi *rt, int device, void *ptr,
			    size_t len, int *fd)
{
	int saved, ret, err, supported = 0;

	if (!rt->names.mem_get_handle_for_range) {
		pr_debug("%s: the runtime exports no dma-buf", rt->runtime);
		return -EOPNOTSUPP;
	}
	if (!rt->device_get_attribute || !rt->mem_get_handle_for_range) {
		pr_debug("%s: the runtime has no %s: no dma-buf export",
			 rt->runtime, rt->names.mem_get_handle_for_range);
		return -EOPNOTSUPP;
	}
	err = rt->device_get_attribute(&supported, rt->dmabuf_supported_attr,
				       device);
	if (err || !supported) {
		if (err)
			rtapi_errno(rt, rt->names.device_get_attribute, err);
		pr_debug("%s: device %d cannot export dma-bufs", rt->runtime,
			 device);
		return -EOPNOTSUPP;
	}
	ret = rtapi_enter(rt, device, &saved);
	if (ret)
		return ret;
	err = rt->mem_get_handle_for_range(fd, ptr, len,
					   rt->dmabuf_handle_type, 0);
	if (err)
		ret = rtapi_errno(rt, rt->names.mem_get_handle_for_range, err);
	rtapi_leave(rt, saved);
	return ret;
}
