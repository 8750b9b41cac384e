// SPDX-License-Identifier: MIT
/*
 * The symmetric heap allocator.
 *
 * Every PE runs the same deterministic first-fit over the same sequence of
 * collective calls, so an object has the same offset on every PE without
 * any exchange. Block headers live in private memory, out of the heap, so
 * a stray remote write cannot corrupt the allocator. The routines are
 * collective: allocations end with a barrier (the memory is then usable
 * on every PE), frees begin with one (no PE still uses it).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Large enough for any type and a cache line, so no false sharing. */
#define SHM_HEAP_ALIGN	64

struct block {
	struct block *next;
	size_t off;
	size_t len;
	bool used;
};

static struct block *blocks;	/* sorted by offset, covering the heap */
static unsigned char *heap_base;
static pthread_mutex_t heap_lock = PTHREAD_MUTEX_INITIALIZER;

void shm_heap_init(void *base, size_t len)
{
	heap_base = base;
	blocks = calloc(1, sizeof(*blocks));
	if (!blocks)
		shm_fatal("shmem_init", "out of memory");
	blocks->len = len;
}

static struct block *split(struct block *b, size_t len)
{
	struct block *rest;

	if (b->len == len)
		return b;
	rest = calloc(1, sizeof(*rest));
	if (!rest)
		return NULL;
	rest->off = b->off + len;
	rest->len = b->len - len;
	rest->next = b->next;
	b->next = rest;
	b->len = len;
	return b;
}

static void *alloc_locked(size_t align, size_t size)
{
	struct block *b;
	size_t pad;

	if (align < SHM_HEAP_ALIGN)
		align = SHM_HEAP_ALIGN;
	size = (size + SHM_HEAP_ALIGN - 1) & ~(size_t)(SHM_HEAP_ALIGN - 1);
	for (b = blocks; b; b = b->next) {
		uintptr_t start = (uintptr_t)heap_base + b->off;

		if (b->used)
			continue;
		pad = ((start + align - 1) & ~(uintptr_t)(align - 1)) - start;
		if (b->len < pad || b->len - pad < size)
			continue;
		if (pad) {
			if (!split(b, pad))
				return NULL;
			b = b->next;
		}
		if (!split(b, size))
			return NULL;
		b->used = true;
		return heap_base + b->off;
	}
	return NULL;
}

static struct block *find_locked(void *ptr, struct block **prev)
{
	struct block *b, *p = NULL;

	for (b = blocks; b; p = b, b = b->next) {
		if (heap_base + b->off == ptr && b->used) {
			*prev = p;
			return b;
		}
	}
	return NULL;
}

static void merge_next(struct block *b)
{
	struct block *n = b->next;

	if (!n || n->used || b->used)
		return;
	b->len += n->len;
	b->next = n->next;
	free(n);
}

static void free_locked(struct block *b, struct block *prev)
{
	b->used = false;
	merge_next(b);
	if (prev && !prev->used)
		merge_next(prev);
}

/*
 * Grow @b into a free neighbour or shrink it, giving back what it no longer
 * needs; false when the neighbour is too small.
 */
static bool resize_in_place(struct block *b, size_t need)
{
	struct block *n = b->next;

	if (need > b->len) {
		if (!n || n->used || b->len + n->len < need)
			return false;
		b->len += n->len;
		b->next = n->next;
		free(n);
	}
	/* Without memory for a new header, @b keeps the extra bytes. */
	if (split(b, need) && b->next)
		merge_next(b->next);
	return true;
}

static void barrier(void)
{
	shm_team_barrier(SHMEM_TEAM_WORLD);
}

static void *alloc(const char *call, size_t align, size_t size)
{
	void *p = NULL;

	shm_check_init(call);
	if (align & (align - 1))
		shm_fatal(call, "alignment %zu is not a power of two", align);
	if (size) {
		pthread_mutex_lock(&heap_lock);
		p = alloc_locked(align, size);
		pthread_mutex_unlock(&heap_lock);
	}
	barrier();
	return p;
}

void *shmem_malloc(size_t size)
{
	return alloc("shmem_malloc", SHM_HEAP_ALIGN, size);
}

void *shmem_malloc_with_hints(size_t size, long hints)
{
	/* Every placement already serves remote atomics and signals. */
	return alloc("shmem_malloc_with_hints", SHM_HEAP_ALIGN, size);
}

void *shmem_align(size_t alignment, size_t size)
{
	if (!alignment)
		alignment = 1;
	return alloc("shmem_align", alignment, size);
}

void *shmem_calloc(size_t count, size_t size)
{
	void *p;

	if (size && count > SIZE_MAX / size)
		return alloc("shmem_calloc", SHM_HEAP_ALIGN, 0);
	shm_check_init("shmem_calloc");
	if (!count || !size) {
		barrier();
		return NULL;
	}
	pthread_mutex_lock(&heap_lock);
	p = alloc_locked(SHM_HEAP_ALIGN, count * size);
	pthread_mutex_unlock(&heap_lock);
	/* Freed blocks hold old data; zero ours before peers may touch it. */
	if (p)
		memset(p, 0, count * size);
	barrier();
	return p;
}

void shmem_free(void *ptr)
{
	struct block *b, *prev;

	shm_check_init("shmem_free");
	barrier();
	if (!ptr)
		return;
	pthread_mutex_lock(&heap_lock);
	b = find_locked(ptr, &prev);
	if (b)
		free_locked(b, prev);
	pthread_mutex_unlock(&heap_lock);
	if (!b)
		shm_fatal("shmem_free", "%p was not returned by a symmetric allocation",
			  ptr);
}

void *shmem_realloc(void *ptr, size_t size)
{
	struct block *b, *prev;
	size_t need, old;
	void *p;

	if (!ptr)
		return alloc("shmem_realloc", SHM_HEAP_ALIGN, size);
	shm_check_init("shmem_realloc");
	barrier();
	pthread_mutex_lock(&heap_lock);
	b = find_locked(ptr, &prev);
	if (!b) {
		pthread_mutex_unlock(&heap_lock);
		shm_fatal("shmem_realloc", "%p was not returned by a symmetric allocation",
			  ptr);
	}
	if (!size) {
		free_locked(b, prev);
		pthread_mutex_unlock(&heap_lock);
		barrier();
		return NULL;
	}
	need = (size + SHM_HEAP_ALIGN - 1) & ~(size_t)(SHM_HEAP_ALIGN - 1);
	old = b->len;
	if (resize_in_place(b, need)) {
		p = ptr;
	} else {
		p = alloc_locked(SHM_HEAP_ALIGN, size);
		if (p) {
			memcpy(p, ptr, old);
			b = find_locked(ptr, &prev);
			free_locked(b, prev);
		}
	}
	pthread_mutex_unlock(&heap_lock);
	barrier();
	return p;
}
