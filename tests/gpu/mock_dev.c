// SPDX-License-Identifier: MIT
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock_dev.h"

#define MOCK_MAX_ALLOCS		256
#define MOCK_MAX_PENDING	64

struct mock_allocation {
	char *base;
	size_t size;
	int device;
};

struct mock_pending {
	int device;
	void *dst;
	void *data;		/* what lands there */
	size_t len;
};

static struct {
	pthread_mutex_t lock;
	struct mock_allocation allocs[MOCK_MAX_ALLOCS];
	struct mock_pending pending[MOCK_MAX_PENDING];
	int nr_pending;
	int violations;
	char first[256];
} mock = { .lock = PTHREAD_MUTEX_INITIALIZER };

int mock_nr_devices(void)
{
	const char *env = getenv("MOCK_GPU_DEVICES");

	return env ? atoi(env) : 2;
}

void mock_violation(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&mock.lock);
	if (!mock.violations++) {
		va_start(ap, fmt);
		vsnprintf(mock.first, sizeof(mock.first), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&mock.lock);
}

void *mock_alloc(int device, size_t size)
{
	void *p = malloc(size);
	int i;

	if (!p)
		return NULL;
	pthread_mutex_lock(&mock.lock);
	for (i = 0; i < MOCK_MAX_ALLOCS; i++) {
		if (!mock.allocs[i].base) {
			mock.allocs[i] = (struct mock_allocation){
				p, size, device
			};
			break;
		}
	}
	pthread_mutex_unlock(&mock.lock);
	if (i == MOCK_MAX_ALLOCS) {
		free(p);
		return NULL;
	}
	return p;
}

int mock_free(void *ptr)
{
	int i, device = -1;

	pthread_mutex_lock(&mock.lock);
	for (i = 0; i < MOCK_MAX_ALLOCS; i++) {
		if (ptr && mock.allocs[i].base == ptr) {
			device = mock.allocs[i].device;
			break;
		}
	}
	pthread_mutex_unlock(&mock.lock);
	if (device < 0)
		return -1;
	mock_sync(device);
	pthread_mutex_lock(&mock.lock);
	mock.allocs[i].base = NULL;
	pthread_mutex_unlock(&mock.lock);
	free(ptr);
	return device;
}

int mock_where(const void *ptr, size_t len)
{
	const char *p = ptr;
	int i, where = -1;

	pthread_mutex_lock(&mock.lock);
	for (i = 0; i < MOCK_MAX_ALLOCS; i++) {
		const struct mock_allocation *a = &mock.allocs[i];

		if (!a->base || p + len <= a->base || p >= a->base + a->size)
			continue;
		where = p >= a->base && p + len <= a->base + a->size ?
			a->device : -2;
		break;
	}
	pthread_mutex_unlock(&mock.lock);
	if (where == -2)
		mock_violation("range %p+%zu straddles device memory", ptr,
			       len);
	return where;
}

void mock_copy_later(int device, void *dst, const void *src, size_t len)
{
	void *data = malloc(len);

	if (!data) {
		mock_violation("mock: out of memory");
		return;
	}
	/* The source is read when the copy is issued, as in the runtimes. */
	memcpy(data, src, len);
	pthread_mutex_lock(&mock.lock);
	if (mock.nr_pending < MOCK_MAX_PENDING) {
		mock.pending[mock.nr_pending++] = (struct mock_pending){
			device, dst, data, len
		};
		data = NULL;
	}
	pthread_mutex_unlock(&mock.lock);
	if (data) {
		free(data);
		mock_violation("more than %d copies never synchronised",
			       MOCK_MAX_PENDING);
	}
}

void mock_sync(int device)
{
	int i, kept = 0;

	pthread_mutex_lock(&mock.lock);
	for (i = 0; i < mock.nr_pending; i++) {
		struct mock_pending *c = &mock.pending[i];

		if (c->device != device) {
			mock.pending[kept++] = *c;
			continue;
		}
		memcpy(c->dst, c->data, c->len);
		free(c->data);
	}
	mock.nr_pending = kept;
	pthread_mutex_unlock(&mock.lock);
}

int mock_dev_report(char *msg, size_t len)
{
	int i, live = 0, ret;

	pthread_mutex_lock(&mock.lock);
	for (i = 0; i < MOCK_MAX_ALLOCS; i++)
		live += !!mock.allocs[i].base;
	if (mock.violations)
		snprintf(msg, len, "%d violations, first: %s", mock.violations,
			 mock.first);
	else if (live || mock.nr_pending)
		snprintf(msg, len, "%d allocations live, %d copies unsynced",
			 live, mock.nr_pending);
	ret = mock.violations + live + mock.nr_pending;
	pthread_mutex_unlock(&mock.lock);
	return ret;
}
