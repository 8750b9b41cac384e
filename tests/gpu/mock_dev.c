// SPDX-License-Identifier: MIT
#define _GNU_SOURCE	/* memfd_create */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mock_dev.h"

#define MOCK_MAX_ALLOCS		256
#define MOCK_MAX_PENDING	64

struct mock_allocation {
	char *base;
	size_t map_len;		/* whole pages */
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
	pthread_mutex_t access;	/* held while unreachable memory is open */
	struct mock_allocation allocs[MOCK_MAX_ALLOCS];
	struct mock_pending pending[MOCK_MAX_PENDING];
	int nr_pending;
	int violations;
	char first[256];
} mock = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.access = PTHREAD_MUTEX_INITIALIZER,
};

static bool env_set(const char *name, const char *value)
{
	const char *env = getenv(name);

	return env && !strcmp(env, value);
}

static bool unreachable(void)
{
	return env_set("MOCK_GPU_UNREACHABLE", "1");
}

bool mock_dmabuf_supported(void)
{
	return !unreachable() && !env_set("MOCK_GPU_DMABUF", "0");
}

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* Every allocation to @prot; mock.lock held. */
static void protect_all(int prot)
{
	int i;

	for (i = 0; i < MOCK_MAX_ALLOCS; i++)
		if (mock.allocs[i].base &&
		    mprotect(mock.allocs[i].base, mock.allocs[i].map_len, prot))
			abort();
}

/* Open unreachable device memory for the mock's own access, or close it. */
static void access_begin(void)
{
	if (!unreachable())
		return;
	pthread_mutex_lock(&mock.access);
	pthread_mutex_lock(&mock.lock);
	protect_all(PROT_READ | PROT_WRITE);
	pthread_mutex_unlock(&mock.lock);
}

static void access_end(void)
{
	if (!unreachable())
		return;
	pthread_mutex_lock(&mock.lock);
	protect_all(PROT_NONE);
	pthread_mutex_unlock(&mock.lock);
	pthread_mutex_unlock(&mock.access);
}

void mock_memcpy(void *dst, const void *src, size_t len)
{
	access_begin();
	memcpy(dst, src, len);
	access_end();
}

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
	size_t map_len = (size + page_size() - 1) & ~(page_size() - 1);
	void *p;
	int i;

	if (!size || size > SIZE_MAX - page_size())
		return NULL;
	p = mmap(NULL, map_len, unreachable() ? PROT_NONE :
		 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	pthread_mutex_lock(&mock.lock);
	for (i = 0; i < MOCK_MAX_ALLOCS; i++) {
		if (!mock.allocs[i].base) {
			mock.allocs[i] = (struct mock_allocation){
				p, map_len, device
			};
			break;
		}
	}
	pthread_mutex_unlock(&mock.lock);
	if (i == MOCK_MAX_ALLOCS) {
		munmap(p, map_len);
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
	munmap(ptr, mock.allocs[i].map_len);
	mock.allocs[i].base = NULL;
	pthread_mutex_unlock(&mock.lock);
	return device;
}

int mock_export(int device, const void *ptr, size_t len)
{
	const char *p = ptr;
	bool inside = false;
	int i, fd;

	pthread_mutex_lock(&mock.lock);
	for (i = 0; i < MOCK_MAX_ALLOCS; i++) {
		const struct mock_allocation *a = &mock.allocs[i];

		if (a->base && a->device == device && p >= a->base &&
		    len <= a->map_len &&
		    (size_t)(p - a->base) <= a->map_len - len) {
			inside = true;
			break;
		}
	}
	pthread_mutex_unlock(&mock.lock);
	if (!inside || !len || ((uintptr_t)p | len) & (page_size() - 1)) {
		mock_violation("export of %p+%zu: not whole pages of one allocation of device %d",
			       ptr, len, device);
		return -1;
	}
	fd = memfd_create("mock-dmabuf", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)len)) {
		mock_violation("mock: memfd for an export");
		return -1;
	}
	mock_sync(device);
	access_begin();
	if (write(fd, ptr, len) != (ssize_t)len)
		mock_violation("mock: writing an export");
	access_end();
	return fd;
}

int mock_where(const void *ptr, size_t len)
{
	const char *p = ptr;
	int i, where = -1;

	pthread_mutex_lock(&mock.lock);
	for (i = 0; i < MOCK_MAX_ALLOCS; i++) {
		const struct mock_allocation *a = &mock.allocs[i];

		if (!a->base || p + len <= a->base || p >= a->base + a->map_len)
			continue;
		where = p >= a->base && p + len <= a->base + a->map_len ?
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
	mock_memcpy(data, src, len);
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

	access_begin();
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
	access_end();
}

struct mock_event {
	int device;
	bool recorded;
	int queries;
};
static int events_live, events_created;

struct mock_event *mock_event_create(int device)
{
	struct mock_event *ev = calloc(1, sizeof(*ev));

	if (!ev)
		return NULL;
	ev->device = device;
	__atomic_add_fetch(&events_live, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&events_created, 1, __ATOMIC_RELAXED);
	return ev;
}

void mock_event_record(struct mock_event *ev)
{
	ev->recorded = true;
}

bool mock_event_query(struct mock_event *ev)
{
	if (!ev->recorded) {
		mock_violation("query of an event never recorded");
		return false;
	}
	if (!ev->queries++)
		return false;
	mock_sync(ev->device);
	return true;
}

void mock_event_synchronize(struct mock_event *ev)
{
	if (!ev->recorded)
		mock_violation("wait for an event never recorded");
	mock_sync(ev->device);
}

void mock_event_destroy(struct mock_event *ev)
{
	__atomic_sub_fetch(&events_live, 1, __ATOMIC_RELAXED);
	free(ev);
}

/* For tests of copies on a stream: how many events the library made. */
MOCK_EXPORT int mock_events_created(void)
{
	return __atomic_load_n(&events_created, __ATOMIC_RELAXED);
}

int mock_dev_report(char *msg, size_t len)
{
	int i, live = 0, ret, events;

	pthread_mutex_lock(&mock.lock);
	for (i = 0; i < MOCK_MAX_ALLOCS; i++)
		live += !!mock.allocs[i].base;
	events = __atomic_load_n(&events_live, __ATOMIC_RELAXED);
	if (mock.violations)
		snprintf(msg, len, "%d violations, first: %s", mock.violations,
			 mock.first);
	else if (live || mock.nr_pending || events)
		snprintf(msg, len,
			 "%d allocations live, %d copies unsynced, %d events never destroyed",
			 live, mock.nr_pending, events);
	ret = mock.violations + live + mock.nr_pending + events;
	pthread_mutex_unlock(&mock.lock);
	return ret;
}

bool mock_copy_ok(const char *call, const struct mock_dirs *dirs, int dir,
		  const void *dst, const void *src, size_t len)
{
	int dst_dev = mock_where(dst, len), src_dev = mock_where(src, len);
	bool ok = false;

	if (dir == dirs->h2d)
		ok = dst_dev >= 0 && src_dev == -1;
	else if (dir == dirs->d2h)
		ok = dst_dev == -1 && src_dev >= 0;
	else if (dir == dirs->d2d)
		ok = dst_dev >= 0 && src_dev >= 0;
	if (!ok)
		mock_violation("%s kind %d does not match its pointers", call,
			       dir);
	return ok;
}

void mock_copy_stream(int device, bool to_host, void *dst, const void *src,
		      size_t len)
{
	if (to_host) {
		mock_sync(device);
		mock_memcpy(dst, src, len);
	} else {
		mock_copy_later(device, dst, src, len);
	}
}

bool mock_free_ok(const char *call, void *ptr)
{
	if (mock_free(ptr) >= 0)
		return true;
	mock_violation("%s of %p, not an allocation", call, ptr);
	return false;
}
