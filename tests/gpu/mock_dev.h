/* SPDX-License-Identifier: MIT */
/*
 * Fake GPU memory shared by the mock CUDA driver and HIP runtime, which
 * test how libhmc drives them on machines without a GPU (gpu-mock-test).
 *
 * "Device" memory is host memory that the mock tracks per device, so each
 * copy can be checked against the kind it claims (host to device and so
 * on). Copies that the real runtimes may complete after they return (to
 * the device, device to device) are queued per device and land only on a
 * synchronisation, a copy to the host from that device, or a free, so a
 * missing synchronisation shows as stale data. Misuse is recorded as a
 * violation; mock_report() tells what went wrong and what leaked.
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
 * Where [ptr, ptr + len) lies: a device number for device memory, -1 for
 * host memory; a range straddling the two is a violation (-2).
 */
int mock_where(const void *ptr, size_t len);

/* A copy issued to @device's stream: lands at mock_sync(@device). */
void mock_copy_later(int device, void *dst, const void *src, size_t len);
void mock_sync(int device);

__attribute__((format(printf, 1, 2)))
void mock_violation(const char *fmt, ...);

/* Violations, then leaks (live allocations, unsynced copies): 0 if none. */
int mock_dev_report(char *msg, size_t len);

#endif
