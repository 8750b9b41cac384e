/* SPDX-License-Identifier: MIT */
/*
 * Fake GPU memory shared by the mock runtimes (CUDA driver, HIP, AscendCL,
 * CNRT, MUSA), which test how libhmc drives them on machines without a GPU (gpu-mock-test).
 *
 * "Device" memory is host memory that the mock tracks per device, so each
 * copy can be checked against the kind it claims (host to device and so
 * on). Copies that the real runtimes may complete after they return (to
 * the device, device to device) are queued per device and land only on a
 * synchronisation, a copy to the host from that device, or a free, so a
 * missing synchronisation shows as stale data. Misuse is recorded as a
 * violation; mock_report() tells what went wrong and what leaked.
 *
 * Allocations are whole pages of their own. With MOCK_GPU_UNREACHABLE=1
 * they are mapped PROT_NONE and opened (read-write) only for the mock's
 * own copies, under a lock: like GPU memory without peer-memory support,
 * a NIC cannot register them (ibv_reg_mr fails with EFAULT) and any other
 * access faults. Devices export dma-bufs (a memfd holding a copy of the
 * range, as the host cannot make a real one) unless MOCK_GPU_DMABUF=0 or
 * the memory is unreachable.
 */
#ifndef HMC_TESTS_MOCK_DEV_H
#define HMC_TESTS_MOCK_DEV_H

#include <stdbool.h>
#include <stddef.h>

#define MOCK_EXPORT __attribute__((visibility("default")))

/* Devices: MOCK_GPU_DEVICES from the environment, default 2. */
int mock_nr_devices(void);

void *mock_alloc(int device, size_t size);
/* The device of the allocation starting at @ptr, which is freed; or -1. */
int mock_free(void *ptr);

/*
 * Where [ptr, ptr + len) lies: a device number for device memory (whole
 * pages), -1 for host memory; a range straddling the two is a violation
 * (-2).
 */
int mock_where(const void *ptr, size_t len);

/* Whether devices export dma-bufs (DMA_BUF_SUPPORTED). */
bool mock_dmabuf_supported(void);

/*
 * A dma-buf of [@ptr, @ptr + @len), which must be page aligned and within
 * one allocation, as a memfd of @len bytes holding the range's data after
 * @device's copies have landed; -1 (a violation) otherwise.
 */
int mock_export(int device, const void *ptr, size_t len);

/* memcpy() that may touch unreachable device memory. */
void mock_memcpy(void *dst, const void *src, size_t len);

/* A copy issued to @device's stream: lands at mock_sync(@device). */
void mock_copy_later(int device, void *dst, const void *src, size_t len);
void mock_sync(int device);

/*
 * Events of the CUDA-like runtimes, on the default stream (the only one
 * mocked): the first query of one says "not ready", the next lands its
 * device's copies, as synchronising on it does. Events never destroyed
 * are leaks (mock_dev_report()); mock_events_created() counts them all.
 */
struct mock_event;
struct mock_event *mock_event_create(int device);
void mock_event_record(struct mock_event *ev);
/* Whether its copies have landed; false (a violation) if never recorded. */
bool mock_event_query(struct mock_event *ev);
void mock_event_synchronize(struct mock_event *ev);
void mock_event_destroy(struct mock_event *ev);

__attribute__((format(printf, 1, 2)))
void mock_violation(const char *fmt, ...);

/* Violations, then leaks (live allocations, unsynced copies): 0 if none. */
int mock_dev_report(char *msg, size_t len);

/*
 * For the runtimes that bind a device to each thread (HIP, MUSA, CNRT,
 * AscendCL), with no contexts of their own.
 */

/* A runtime's memcpy direction codes. */
struct mock_dirs {
	int h2d, d2h, d2d;
};

/*
 * Whether the copy's pointers match direction @dir of @dirs (host memory
 * on the host side, device memory on the device side); a violation, named
 * after @call, if not.
 */
bool mock_copy_ok(const char *call, const struct mock_dirs *dirs, int dir,
		  const void *dst, const void *src, size_t len);

/*
 * A copy as CUDA-like runtimes make it on @device's default stream: one to
 * the host waits for the stream and lands now, the others land at
 * mock_sync(@device).
 */
void mock_copy_stream(int device, bool to_host, void *dst, const void *src,
		      size_t len);

/* Free @ptr for @call: false (a violation) if it is not an allocation. */
bool mock_free_ok(const char *call, void *ptr);

/*
 * The calling thread's device, `current`, @none until one is set, and
 * test_gpu's hooks over it: the application's own device and the report.
 */
#define MOCK_THREAD_DEVICE(none)					\
static __thread int current = (none);					\
MOCK_EXPORT void mock_app_device_enter(int dev)				\
{									\
	current = dev;							\
}									\
MOCK_EXPORT void mock_app_device_leave(int dev)				\
{									\
	current = (none);						\
}									\
MOCK_EXPORT int mock_current_device(void)				\
{									\
	return current;							\
}									\
MOCK_EXPORT int mock_report(char *msg, size_t len)			\
{									\
	return mock_dev_report(msg, len);				\
}

#endif
