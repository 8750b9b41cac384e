// SPDX-License-Identifier: MIT
/*
 * Pool copies: an address is resolved to where its bytes are (a pointer
 * this process may use, an offset in a remote rank's ConnBuffer, or a
 * remote rank's device segment), the kind is checked against what each
 * side is, and the copy runs as a memcpy, a device runtime copy,
 * communicator puts and gets (from and into a memory region where the
 * local side lies in one: the ConnBuffer, our device segment, registered
 * user memory; else staged through the ConnBuffer's window, chunks
 * copied while others are on the wire), or a transfer with a device
 * segment of another rank (owner.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hmc/world.h>

#include "mem/mem.h"
#include "pool/pool.h"
#include "sys/log.h"

/* Where a range of a copy lies. */
struct loc {
	int rank;		/* owner of a global range; -1: local memory */
	uint32_t type;		/* enum hmc_mem_type of the bytes */
	char *ptr;		/* usable here, or NULL: remote */
	size_t buf_off;		/* with in_buf: offset in the ConnBuffer */
	bool in_buf;		/* in this rank's ConnBuffer */
	bool host_seg;		/* a global range in a host segment */
	bool served;		/* in another rank's device segment, at buf_off */
	struct pool_lref ref;	/* local: the region it lies in, if any */
};

struct pool_job {
	struct list_node node;
	struct loc dst;
	struct loc src;
	size_t len;
};

static bool in_pool(const struct hmc_pool *p, uintptr_t a)
{
	uintptr_t base = (uintptr_t)p->base;

	return a >= base && a - base < (uintptr_t)p->nr_slots * p->stride;
}

/* [@addr, @addr + @len) of the global range, whole inside one segment. */
static int resolve_global(struct hmc_pool *p, const void *addr, size_t len,
			  struct loc *loc)
{
	uintptr_t rel = (uintptr_t)addr - (uintptr_t)p->base;
	uint32_t r = (uint32_t)(rel / p->stride);
	size_t off = rel % p->stride;
	uint64_t size;
	int ret;

	ret = pool_rank_check(p, r);
	if (ret)
		return ret;
	loc->rank = (int)r;
	loc->in_buf = false;
	loc->served = false;
	loc->host_seg = off < p->host_slot;
	if (!loc->host_seg)
		off -= p->host_slot;
	size = loc->host_seg ? p->ranks[r].host_size : p->ranks[r].dev_size;
	if (len > size || off > size - len) {
		pr_debug("pool: %p+%zu is not inside rank %u's %s segment of %llu bytes",
			 addr, len, r, loc->host_seg ? "host" : "device",
			 (unsigned long long)size);
		return -ERANGE;
	}
	loc->buf_off = off;
	if (!loc->host_seg) {
		if (r != p->rank) {
			/* Its owner moves the bytes (owner.c). */
			loc->ptr = NULL;
			loc->served = true;
			return 0;
		}
		loc->type = p->dev_type;
		loc->ptr = (char *)p->dev_ptr + off;
		loc->ref = (struct pool_lref){ p->dev_mr != 0, p->dev_mr, off };
		return 0;
	}
	loc->type = HMC_MEM_CPU;
	if (r == p->rank) {
		loc->ptr = (char *)hmc_buf_ptr(p->buf) + off;
		loc->in_buf = true;
		loc->ref = (struct pool_lref){ true, 0, off };
	} else {
		loc->ptr = p->ranks[r].mapped ? (char *)addr : NULL;
	}
	return 0;
}

/*
 * What this process's memory at @addr is: CPU or the pool's device type,
 * and, for registered memory moved into the ConnBuffer, where it lies
 * there (@loc->ptr then its alias in the buffer: the same bytes, which the
 * message layer recognises as the buffer's).
 */
static int classify_local(struct hmc_pool *p, const void *addr, size_t len,
			  struct loc *loc)
{
	const struct pool_user_range *u;
	int dev, ret;

	loc->ptr = (char *)addr;
	loc->in_buf = false;
	pthread_mutex_lock(&p->lock);
	ret = pool_user_find(p, (uintptr_t)addr, len, &u);
	if (u) {
		loc->type = u->type;
		if (!ret && u->moved) {
			loc->buf_off = p->user_off + u->user_off +
				       ((uintptr_t)addr - u->start);
			loc->ptr = (char *)hmc_buf_ptr(p->buf) + loc->buf_off;
			loc->in_buf = true;
			loc->ref = (struct pool_lref){ true, 0, loc->buf_off };
		} else if (!ret && u->mr) {
			loc->ref = (struct pool_lref){
				true, u->mr, (uintptr_t)addr - u->start };
		}
	}
	pthread_mutex_unlock(&p->lock);
	if (u)
		return ret;
	loc->type = HMC_MEM_CPU;
	if (p->dev_type == HMC_MEM_CPU)
		return 0;
	dev = mem_ptr_device(p->dev_type, addr);
	if (dev < 0)
		return 0;
	if (dev != p->dev_id) {
		pr_debug("pool: %p is memory of %s device %d, the pool's is %d",
			 addr, hmc_mem_type_name(p->dev_type), dev, p->dev_id);
		return -EINVAL;
	}
	loc->type = p->dev_type;
	return 0;
}

enum side { SIDE_L, SIDE_H, SIDE_G, SIDE_GH, SIDE_ANY };

static int resolve(struct hmc_pool *p, const void *addr, size_t len,
		   enum side want, struct loc *loc)
{
	int ret;

	if (!addr)
		return -EINVAL;
	loc->ref = (struct pool_lref){ 0 };
	if (in_pool(p, (uintptr_t)addr)) {
		if (want == SIDE_L || want == SIDE_H) {
			pr_debug("pool: %p is a global address, the kind wants local memory",
				 addr);
			return -EINVAL;
		}
		ret = resolve_global(p, addr, len, loc);
		if (!ret && want == SIDE_GH && !loc->host_seg) {
			pr_debug("pool: %p is in a device segment, the kind wants a host one",
				 addr);
			return -EINVAL;
		}
		return ret;
	}
	if (want == SIDE_G || want == SIDE_GH) {
		pr_debug("pool: %p is outside the pool, the kind wants a global address",
			 addr);
		return -EINVAL;
	}
	/* Local memory that runs into the pool's range is no local memory. */
	if ((uintptr_t)addr + len < (uintptr_t)addr ||
	    (uintptr_t)p->base - (uintptr_t)addr < len)
		return -ERANGE;
	ret = classify_local(p, addr, len, loc);
	if (ret)
		return ret;
	if ((want == SIDE_L && loc->type == HMC_MEM_CPU) ||
	    (want == SIDE_H && loc->type != HMC_MEM_CPU)) {
		pr_debug("pool: %p is %s memory, the kind wants %s memory", addr,
			 hmc_mem_type_name(loc->type),
			 want == SIDE_L ? "device" : "host");
		return -EINVAL;
	}
	loc->rank = -1;
	loc->host_seg = false;
	loc->served = false;
	return 0;
}

static int kind_sides(enum hmc_pool_copy_kind kind, enum side *dst,
		      enum side *src)
{
	static const enum side sides[][2] = {	/* dst, src */
		[HMC_POOL_L2G]	= { SIDE_G, SIDE_L },
		[HMC_POOL_G2L]	= { SIDE_L, SIDE_G },
		[HMC_POOL_H2G]	= { SIDE_G, SIDE_H },
		[HMC_POOL_G2H]	= { SIDE_H, SIDE_G },
		[HMC_POOL_G2G]	= { SIDE_G, SIDE_G },
		[HMC_POOL_L2GH]	= { SIDE_GH, SIDE_L },
		[HMC_POOL_GH2L]	= { SIDE_L, SIDE_GH },
		[HMC_POOL_GH2H]	= { SIDE_H, SIDE_GH },
		[HMC_POOL_H2GH]	= { SIDE_GH, SIDE_H },
		[HMC_POOL_AUTO]	= { SIDE_ANY, SIDE_ANY },
	};

	if ((unsigned int)kind > HMC_POOL_AUTO)
		return -EINVAL;
	*dst = sides[kind][0];
	*src = sides[kind][1];
	return 0;
}

/* Both sides usable here: a memcpy or a copy by the device runtime. */
static int copy_here(struct hmc_pool *p, char *dst, uint32_t dst_type,
		     const char *src, uint32_t src_type, size_t len)
{
	enum hmc_copy_kind kind;

	if (dst_type == HMC_MEM_CPU && src_type == HMC_MEM_CPU) {
		memmove(dst, src, len);
		return 0;
	}
	if (dst_type == HMC_MEM_CPU)
		kind = HMC_COPY_D2H;
	else if (src_type == HMC_MEM_CPU)
		kind = HMC_COPY_H2D;
	else
		kind = HMC_COPY_D2D;
	return hmc_mem_copy(p->dev_type, p->dev_id, dst, src, len, kind);
}

static char *stage_ptr(struct hmc_pool *p, unsigned int slot)
{
	return (char *)hmc_buf_ptr(p->buf) +
	       pool_stage_off(p, p->ranks[p->rank].host_size) +
	       slot * POOL_STAGE_CHUNK;
}

static size_t stage_off(struct hmc_pool *p, unsigned int slot)
{
	return pool_stage_off(p, p->ranks[p->rank].host_size) +
	       slot * POOL_STAGE_CHUNK;
}

/* Wait for every request of @req still in flight; the first error wins. */
static int stage_drain(struct hmc_pool *p, hmc_req_t *req, int ret)
{
	unsigned int i;
	int r;

	for (i = 0; i < POOL_STAGE_SLOTS; i++) {
		if (!req[i])
			continue;
		r = hmc_comm_wait(p->comm, req[i], p->timeout_ms);
		req[i] = 0;
		if (!ret)
			ret = r;
	}
	return ret;
}

/*
 * Between a remote host segment and a region of ours (the ConnBuffer, or
 * not): one put (and a flush), or one get.
 */
static int direct(struct hmc_pool *p, bool put, const struct loc *remote,
		  const struct loc *local, size_t len)
{
	uint32_t rank = (uint32_t)remote->rank;
	hmc_req_t req;
	int ret;

	ret = (put ? hmc_comm_put_mr_nb : hmc_comm_get_mr_nb)(
		p->comm, rank, local->ref.mr, local->ref.off, 0,
		remote->buf_off, len, &req);
	if (!ret)
		ret = hmc_comm_wait(p->comm, req, p->timeout_ms);
	return ret || !put ? ret : hmc_comm_flush(p->comm, rank);
}

/*
 * To a remote host segment from memory outside our ConnBuffer: each chunk
 * is copied into a free slot of the window while the earlier ones fly.
 */
static int put_staged(struct hmc_pool *p, const struct loc *dst,
		      const struct loc *src, size_t len)
{
	hmc_req_t req[POOL_STAGE_SLOTS] = { 0 };
	unsigned int slot = 0;
	size_t pos, n;
	int ret = 0;

	pthread_mutex_lock(&p->stage_lock);
	for (pos = 0; pos < len && !ret; pos += n) {
		n = min_t(size_t, len - pos, POOL_STAGE_CHUNK);
		if (req[slot]) {
			ret = hmc_comm_wait(p->comm, req[slot], p->timeout_ms);
			req[slot] = 0;
			if (ret)
				break;
		}
		ret = copy_here(p, stage_ptr(p, slot), HMC_MEM_CPU,
				src->ptr + pos, src->type, n);
		if (!ret)
			ret = hmc_comm_put_nb(p->comm, (uint32_t)dst->rank,
					      stage_off(p, slot),
					      dst->buf_off + pos, n, &req[slot]);
		slot = (slot + 1) % POOL_STAGE_SLOTS;
	}
	ret = stage_drain(p, req, ret);
	if (!ret)
		ret = hmc_comm_flush(p->comm, (uint32_t)dst->rank);
	pthread_mutex_unlock(&p->stage_lock);
	return ret;
}

/*
 * From a remote host segment into memory outside our ConnBuffer: gets
 * fill the window's slots ahead while landed chunks are copied out.
 */
static int get_staged(struct hmc_pool *p, const struct loc *dst,
		      const struct loc *src, size_t len)
{
	hmc_req_t req[POOL_STAGE_SLOTS] = { 0 };
	size_t asked = 0, pos, n;
	unsigned int slot;
	int ret = 0;

	pthread_mutex_lock(&p->stage_lock);
	for (pos = 0; pos < len && !ret; pos += n) {
		/* Keep every slot busy with a chunk not yet copied out. */
		while (!ret && asked < len &&
		       asked < pos + POOL_STAGE_SLOTS * POOL_STAGE_CHUNK) {
			slot = (unsigned int)(asked / POOL_STAGE_CHUNK %
					      POOL_STAGE_SLOTS);
			ret = hmc_comm_get_nb(p->comm, (uint32_t)src->rank,
					      stage_off(p, slot),
					      src->buf_off + asked,
					      min_t(size_t, len - asked,
						    POOL_STAGE_CHUNK),
					      &req[slot]);
			asked += POOL_STAGE_CHUNK;
		}
		if (ret)
			break;
		slot = (unsigned int)(pos / POOL_STAGE_CHUNK % POOL_STAGE_SLOTS);
		n = min_t(size_t, len - pos, POOL_STAGE_CHUNK);
		ret = hmc_comm_wait(p->comm, req[slot], p->timeout_ms);
		req[slot] = 0;
		if (!ret)
			ret = copy_here(p, dst->ptr + pos, dst->type,
					stage_ptr(p, slot), HMC_MEM_CPU, n);
	}
	ret = stage_drain(p, req, ret);
	pthread_mutex_unlock(&p->stage_lock);
	return ret;
}

/* @n bytes at @pos of remote @src into the window. */
static int relay_fetch(struct hmc_pool *p, const struct loc *src, size_t pos,
		       size_t n)
{
	struct pool_lref win = { true, 0, stage_off(p, 0) };

	if (src->served)
		return pool_dev_read(p, (uint32_t)src->rank, src->buf_off + pos,
				     stage_ptr(p, 0), HMC_MEM_CPU, &win, n);
	return hmc_comm_get(p->comm, (uint32_t)src->rank, stage_off(p, 0),
			    src->buf_off + pos, n);
}

/* @n bytes of the window to @pos of remote @dst. */
static int relay_store(struct hmc_pool *p, const struct loc *dst, size_t pos,
		       size_t n)
{
	struct pool_lref win = { true, 0, stage_off(p, 0) };

	if (dst->served)
		return pool_dev_write(p, (uint32_t)dst->rank,
				      dst->buf_off + pos, stage_ptr(p, 0),
				      HMC_MEM_CPU, &win, n);
	return hmc_comm_put(p->comm, (uint32_t)dst->rank, stage_off(p, 0),
			    dst->buf_off + pos, n);
}

/*
 * Between two remote segments: through the window, a window at a time
 * (a device segment's side is an exchange with its owner, which takes
 * the window's bytes or lands them without a copy).
 */
static int relay(struct hmc_pool *p, const struct loc *dst,
		 const struct loc *src, size_t len)
{
	/* Within one segment, onto a later part of its own range: from the end. */
	bool back = dst->rank == src->rank && dst->served == src->served &&
		    dst->buf_off > src->buf_off &&
		    dst->buf_off - src->buf_off < len;
	size_t done, pos, n;
	int ret = 0;

	pthread_mutex_lock(&p->stage_lock);
	for (done = 0; done < len && !ret; done += n) {
		n = min_t(size_t, len - done, POOL_STAGE_SIZE);
		pos = back ? len - done - n : done;
		ret = relay_fetch(p, src, pos, n);
		if (!ret)
			ret = relay_store(p, dst, pos, n);
	}
	if (!ret && !dst->served)
		ret = hmc_comm_flush(p->comm, (uint32_t)dst->rank);
	pthread_mutex_unlock(&p->stage_lock);
	return ret;
}

/* Check the ranks again (one may have gone since), then copy. */
static int run_copy(struct hmc_pool *p, const struct loc *dst,
		    const struct loc *src, size_t len)
{
	int ret;

	if ((dst->rank >= 0 && (ret = pool_rank_check(p, (uint32_t)dst->rank))) ||
	    (src->rank >= 0 && (ret = pool_rank_check(p, (uint32_t)src->rank))))
		return ret;
	if (dst->ptr && src->ptr)
		return copy_here(p, dst->ptr, dst->type, src->ptr, src->type,
				 len);
	if (!dst->ptr && !src->ptr)
		return relay(p, dst, src, len);
	if (dst->served)
		return pool_dev_write(p, (uint32_t)dst->rank, dst->buf_off,
				      src->ptr, src->type, &src->ref, len);
	if (src->served)
		return pool_dev_read(p, (uint32_t)src->rank, src->buf_off,
				     dst->ptr, dst->type, &dst->ref, len);
	if (!dst->ptr)
		return src->ref.ok ? direct(p, true, dst, src, len) :
				     put_staged(p, dst, src, len);
	return dst->ref.ok ? direct(p, false, src, dst, len) :
			     get_staged(p, dst, src, len);
}

static int prepare(struct hmc_pool *p, void *dst, const void *src, size_t len,
		   enum hmc_pool_copy_kind kind, struct loc *d, struct loc *s)
{
	enum side want_dst, want_src;
	int ret;

	ret = kind_sides(kind, &want_dst, &want_src);
	if (ret)
		return ret;
	ret = resolve(p, dst, len, want_dst, d);
	if (!ret)
		ret = resolve(p, src, len, want_src, s);
	if (!ret && d->rank < 0 && s->rank < 0) {
		/* Only AUTO gets here: every other kind names a global side. */
		pr_debug("pool: neither %p nor %p is a global address", dst, src);
		return -EINVAL;
	}
	return ret;
}

static void *worker_main(void *arg)
{
	struct hmc_pool *p = arg;
	struct pool_job *job;
	int ret;

	pthread_mutex_lock(&p->q_lock);
	for (;;) {
		while (list_empty(&p->queue) && !p->q_stop)
			pthread_cond_wait(&p->q_cond, &p->q_lock);
		if (list_empty(&p->queue))
			break;
		job = container_of(p->queue.next, struct pool_job, node);
		list_del(&job->node);
		pthread_mutex_unlock(&p->q_lock);
		ret = run_copy(p, &job->dst, &job->src, job->len);
		free(job);
		pthread_mutex_lock(&p->q_lock);
		if (ret && !p->q_error)
			p->q_error = ret;
		if (!--p->q_pending)
			pthread_cond_broadcast(&p->q_idle);
	}
	pthread_mutex_unlock(&p->q_lock);
	return NULL;
}

int pool_copy_start(struct hmc_pool *p)
{
	pthread_condattr_t ca;
	int ret;

	list_init(&p->queue);
	pthread_mutex_init(&p->q_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->q_cond, NULL);
	pthread_cond_init(&p->q_idle, &ca);
	pthread_condattr_destroy(&ca);
	ret = -pthread_create(&p->worker, NULL, worker_main, p);
	p->q_started = !ret;
	return ret;
}

/* Runs what is queued, then ends the worker. */
void pool_copy_stop(struct hmc_pool *p)
{
	if (!p->q_started)
		return;
	pthread_mutex_lock(&p->q_lock);
	p->q_stop = true;
	pthread_cond_signal(&p->q_cond);
	pthread_mutex_unlock(&p->q_lock);
	pthread_join(p->worker, NULL);
	p->q_started = false;
}

static int enqueue(struct hmc_pool *p, struct pool_job **jobs, size_t n)
{
	size_t i;

	pthread_mutex_lock(&p->q_lock);
	for (i = 0; i < n; i++)
		list_add_tail(&p->queue, &jobs[i]->node);
	p->q_pending += n;
	pthread_cond_signal(&p->q_cond);
	pthread_mutex_unlock(&p->q_lock);
	return 0;
}

int hmc_pool_copy_batch(struct hmc_pool *p,
			const struct hmc_pool_copy_desc *descs, size_t n,
			enum hmc_pool_copy_kind kind, uint32_t flags)
{
	struct pool_job **jobs;
	size_t i;
	int ret = 0;

	if (!p || (n && !descs) || (flags & ~HMC_POOL_COPY_ASYNC))
		return -EINVAL;
	jobs = calloc(n ? n : 1, sizeof(*jobs));
	if (!jobs)
		return -ENOMEM;
	/* Every copy is checked before any starts. */
	for (i = 0; i < n && !ret; i++) {
		jobs[i] = malloc(sizeof(**jobs));
		if (!jobs[i]) {
			ret = -ENOMEM;
			break;
		}
		jobs[i]->len = descs[i].len;
		if (descs[i].len != (size_t)descs[i].len)
			ret = -ERANGE;
		else if (descs[i].len)
			ret = prepare(p, descs[i].dst, descs[i].src,
				      descs[i].len, kind, &jobs[i]->dst,
				      &jobs[i]->src);
		else
			jobs[i]->dst.ptr = jobs[i]->src.ptr = NULL;
	}
	if (ret)
		goto out;
	if (flags & HMC_POOL_COPY_ASYNC) {
		/* Empty copies have nothing to run. */
		size_t m = 0;

		for (i = 0; i < n; i++) {
			if (jobs[i]->len)
				jobs[m++] = jobs[i];
			else
				free(jobs[i]);
		}
		enqueue(p, jobs, m);
		free(jobs);
		return 0;
	}
	for (i = 0; i < n && !ret; i++)
		if (jobs[i]->len)
			ret = run_copy(p, &jobs[i]->dst, &jobs[i]->src,
				       jobs[i]->len);
out:
	for (i = 0; i < n; i++)
		free(jobs[i]);
	free(jobs);
	return ret;
}

int hmc_pool_copy(struct hmc_pool *p, void *dst, const void *src, size_t len,
		  enum hmc_pool_copy_kind kind, uint32_t flags)
{
	struct hmc_pool_copy_desc d = { .dst = dst, .src = src, .len = len };

	return hmc_pool_copy_batch(p, &d, 1, kind, flags);
}

int hmc_pool_wait(struct hmc_pool *p, int timeout_ms)
{
	int64_t deadline = deadline_after_ms(timeout_ms);
	struct timespec ts;
	int ret;

	if (!p)
		return -EINVAL;
	pthread_mutex_lock(&p->q_lock);
	while (p->q_pending) {
		if (deadline == DEADLINE_NEVER) {
			pthread_cond_wait(&p->q_idle, &p->q_lock);
			continue;
		}
		ts.tv_sec = deadline / 1000000000;
		ts.tv_nsec = deadline % 1000000000;
		if (pthread_cond_timedwait(&p->q_idle, &p->q_lock, &ts) ==
		    ETIMEDOUT && p->q_pending) {
			pthread_mutex_unlock(&p->q_lock);
			return -ETIMEDOUT;
		}
	}
	ret = p->q_error;
	p->q_error = 0;
	pthread_mutex_unlock(&p->q_lock);
	return ret;
}
