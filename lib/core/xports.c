// SPDX-License-Identifier: MIT
/* The communicator's transport slots and their part of each progress round. */
#include <errno.h>

#include "core/comm.h"
#include "sys/log.h"

const char *hmc_transport_name(enum hmc_transport transport)
{
	switch (transport) {
	case HMC_TRANSPORT_AUTO:
		return "auto";
	case HMC_TRANSPORT_UCX:
		return "ucx";
	case HMC_TRANSPORT_VERBS:
		return "verbs";
	case HMC_TRANSPORT_SHM:
		return "shm";
	case HMC_TRANSPORT_TCP:
		return "tcp";
	}
	return "unknown";
}

static int slot_progress(struct xport_slot *x)
{
	int rc;

	__atomic_store_n(&x->armed, false, __ATOMIC_RELAXED);
	rc = x->ops->progress(x->ctx);
	return rc > 0 ? rc : 0;
}

/* A slot's event fd became readable. */
static int slot_event(struct engine_src *src)
{
	return slot_progress(container_of(src, struct xport_slot, src));
}

int comm_xport(struct hmc_comm *c, const struct xport_ops *ops,
	       struct xport_slot **slotp)
{
	struct xport_slot *slot = &c->xports[ops->type];
	void *ctx;
	int fd, rc = 0;

	pthread_mutex_lock(&c->xport_lock);
	if (slot->ctx)
		goto out;
	slot->ops = ops;
	slot->comm = c;
	slot->src.handle = slot_event;
	rc = ops->init(c, &ctx);
	if (rc) {
		pr_info("rank %u: %s transport: %s", c->rank,
			hmc_transport_name(ops->type), hmc_strerror(rc));
		goto out;
	}
	fd = ops->event_fd(ctx);
	if (fd >= 0) {
		rc = engine_watch(&c->engine, fd, &slot->src);
		if (rc) {
			ops->fini(ctx);
			goto out;
		}
	}
	__atomic_store_n(&slot->ctx, ctx, __ATOMIC_RELEASE);
	mr_xport_up(c, slot);
out:
	pthread_mutex_unlock(&c->xport_lock);
	*slotp = slot;
	return rc;
}

void comm_xports_fini(struct hmc_comm *c)
{
	int i;

	for (i = 0; i < XPORT_SLOTS; i++)
		if (c->xports[i].ctx)
			c->xports[i].ops->fini(c->xports[i].ctx);
}

int xport_watch(struct hmc_comm *c, enum hmc_transport type, int fd)
{
	return engine_watch(&c->engine, fd, &c->xports[type].src);
}

void xport_unwatch(struct hmc_comm *c, int fd)
{
	engine_unwatch(&c->engine, fd);
}

__hot int comm_xports_poll(struct hmc_comm *c)
{
	int i, n = 0;

	for (i = 0; i < XPORT_SLOTS; i++)
		if (__atomic_load_n(&c->xports[i].ctx, __ATOMIC_ACQUIRE))
			n += slot_progress(&c->xports[i]);
	return n;
}

/* Transports that are armed have nothing to do. */
int comm_xports_poll_unarmed(struct hmc_comm *c)
{
	int i, n = 0;

	for (i = 0; i < XPORT_SLOTS; i++) {
		struct xport_slot *x = &c->xports[i];

		if (__atomic_load_n(&x->ctx, __ATOMIC_ACQUIRE) &&
		    !__atomic_load_n(&x->armed, __ATOMIC_RELAXED))
			n += slot_progress(x);
	}
	return n;
}

int comm_xports_arm(struct hmc_comm *c)
{
	int i, armed = 0;

	for (i = 0; i < XPORT_SLOTS; i++) {
		struct xport_slot *x = &c->xports[i];

		if (!__atomic_load_n(&x->ctx, __ATOMIC_ACQUIRE) ||
		    __atomic_load_n(&x->armed, __ATOMIC_RELAXED))
			continue;
		armed = 1;
		if (x->ops->arm(x->ctx) == -EBUSY)
			return -EBUSY;
		__atomic_store_n(&x->armed, true, __ATOMIC_RELAXED);
	}
	return armed;
}

/*
 * Nobody has slept in epoll_wait for a while: the callers spin, and
 * descriptors watched for sleepers only cost every packet a wake-up. The
 * next arm() watches them again, so the slot must not stay armed. Once
 * per arm: spinning callers do not pay the transports' locks again.
 */
void comm_xports_unwatch(struct hmc_comm *c)
{
	int i;

	for (i = 0; i < XPORT_SLOTS; i++) {
		struct xport_slot *x = &c->xports[i];

		if (!__atomic_load_n(&x->ctx, __ATOMIC_ACQUIRE))
			continue;
		x->ops->unwatch(x->ctx);
		__atomic_store_n(&x->armed, false, __ATOMIC_RELAXED);
	}
}
