// SPDX-License-Identifier: MIT
/* The transport tables, with defaults for the optional ops (see xport.h). */
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include "core/comm.h"
#include "xport/xport.h"

static const struct xport_ops *const xport_defs[XPORT_SLOTS] = {
	[HMC_TRANSPORT_UCX] = &xport_ucx_ops,
	[HMC_TRANSPORT_VERBS] = &xport_verbs_ops,
	[HMC_TRANSPORT_SHM] = &xport_shm_ops,
	[HMC_TRANSPORT_TCP] = &xport_tcp_ops,
};

static struct xport_ops xport_tables[XPORT_SLOTS];
static pthread_once_t xport_once = PTHREAD_ONCE_INIT;

/* No descriptor goes along with our metadata. */
static int default_peer_fd(void *ctx, void *xpeer)
{
	return -1;
}

/* The peer passed a descriptor that we never asked for. */
static int default_peer_attach_fd(void *ctx, void *xpeer, int fd)
{
	close(fd);
	return -EPROTO;
}

/* The core sends the tag over the control plane instead. */
static int default_put_signal(void *ctx, void *xpeer, struct req *r,
			      uint64_t local_off, uint64_t remote_off,
			      uint64_t len, uint64_t tag)
{
	return -EOPNOTSUPP;
}

/* The transport's descriptors are watched per peer (xport_watch()). */
static int default_event_fd(void *ctx)
{
	return -1;
}

/* Nothing is watched for sleepers only. */
static void default_unwatch(void *ctx)
{
}

/* AUTO cannot tell: an active transport is taken as reaching the peer. */
static int default_reaches(void *ctx, int ctrl_fd)
{
	return 0;
}

/* Regions: none but the ConnBuffer. */
static int default_mr_reg(void *ctx, const struct comm_mr *mr, void **xmr)
{
	return -EOPNOTSUPP;
}

static void default_mr_dereg(void *ctx, void *xmr)
{
}

static int default_mr_pack(void *ctx, void *xmr, uint8_t *key, uint32_t cap,
			   uint32_t *len)
{
	return -EOPNOTSUPP;
}

static int default_rmr_import(void *ctx, void *xpeer, const uint8_t *key,
			      uint32_t len, uint64_t size, void **xrmr)
{
	return -EOPNOTSUPP;
}

static int default_post_mr(void *ctx, void *xpeer, struct req *r,
			   enum req_op op, void *xmr, uint64_t local_off,
			   void *xrmr, uint64_t remote_off, uint64_t len)
{
	return -EOPNOTSUPP;
}

static int default_amo(void *ctx, void *xpeer, struct req *r, void *xrmr,
		       const struct xport_amo *a)
{
	return -EOPNOTSUPP;
}

static void fill_tables(void)
{
	unsigned int i;

	for (i = 0; i < XPORT_SLOTS; i++) {
		struct xport_ops *o = &xport_tables[i];

		if (!xport_defs[i])
			continue;
		*o = *xport_defs[i];
		if (!o->peer_fd)
			o->peer_fd = default_peer_fd;
		if (!o->peer_attach_fd)
			o->peer_attach_fd = default_peer_attach_fd;
		if (!o->put_signal)
			o->put_signal = default_put_signal;
		if (!o->event_fd)
			o->event_fd = default_event_fd;
		if (!o->unwatch)
			o->unwatch = default_unwatch;
		if (!o->reaches)
			o->reaches = default_reaches;
		if (!o->mr_reg)
			o->mr_reg = default_mr_reg;
		if (!o->mr_dereg)
			o->mr_dereg = default_mr_dereg;
		if (!o->mr_pack)
			o->mr_pack = default_mr_pack;
		if (!o->rmr_import)
			o->rmr_import = default_rmr_import;
		if (!o->post_mr)
			o->post_mr = default_post_mr;
		if (!o->amo)
			o->amo = default_amo;
	}
}

const struct xport_ops *xport_get(enum hmc_transport type)
{
	if ((unsigned int)type >= XPORT_SLOTS || !xport_defs[type])
		return NULL;
	pthread_once(&xport_once, fill_tables);
	return &xport_tables[type];
}
