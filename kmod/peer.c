// SPDX-License-Identifier: GPL-2.0
/*
 * PEER_STATE: fabric peers as libhmc reports them. The kernel keeps the
 * connected ones per file, so that one dump shows every process's peers,
 * and turns each report into an event stamped with the reporter's pid and
 * the time. Closing the file disconnects what is left.
 */
#include <linux/err.h>
#include <linux/lockdep.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>

#include "hmc.h"

/* Every connected peer, by a global id, for the netlink dump. */
DEFINE_XARRAY_ALLOC1(hmc_peers);
static u32 hmc_peers_next;

static int hmc_peer_check(const struct hmc_peer_state *arg)
{
	if (hmc_nonzero(arg->reserved, ARRAY_SIZE(arg->reserved)))
		return -EINVAL;
	if (arg->state < HMC_PEER_CONNECTED || arg->state > HMC_PEER_FAILED ||
	    arg->transport > HMC_PEER_TRANSPORT_MAX ||
	    arg->addr_len > HMC_PEER_ADDR_MAX)
		return -EINVAL;
	if (memchr_inv(arg->addr + arg->addr_len, 0,
		       HMC_PEER_ADDR_MAX - arg->addr_len))
		return -EINVAL;
	if (arg->error < 0 || arg->error > MAX_ERRNO)
		return -EINVAL;
	if ((arg->state == HMC_PEER_CONNECTED && arg->error) ||
	    (arg->state == HMC_PEER_FAILED && !arg->error))
		return -EINVAL;
	return 0;
}

static struct hmc_peer *hmc_peer_find(struct hmc_ctx *ctx, u64 peer_id)
{
	struct hmc_peer *peer;

	lockdep_assert_held(&ctx->peer_lock);
	list_for_each_entry(peer, &ctx->peers, node)
		if (peer->peer_id == peer_id)
			return peer;
	return NULL;
}

static void hmc_peer_set(struct hmc_peer *peer,
			 const struct hmc_peer_state *arg)
{
	peer->peer_id = arg->peer_id;
	peer->since_ns = ktime_get_real_ns();
	peer->transport = arg->transport;
	peer->addr_len = arg->addr_len;
	memcpy(peer->addr, arg->addr, sizeof(peer->addr));
}

static int hmc_peer_connect(struct hmc_ctx *ctx,
			    const struct hmc_peer_state *arg)
{
	struct hmc_peer *peer;
	int ret;

	lockdep_assert_held(&ctx->peer_lock);
	peer = hmc_peer_find(ctx, arg->peer_id);
	if (peer) {
		/* The dump reads peers under this lock. */
		xa_lock(&hmc_peers);
		hmc_peer_set(peer, arg);
		xa_unlock(&hmc_peers);
		hmc_event_peer(HMC_EVT_PEER_CONNECTED, peer, 0);
		return 0;
	}
	if (ctx->nr_peers >= HMC_PEERS_MAX)
		return -ENOSPC;
	peer = kzalloc(sizeof(*peer), GFP_KERNEL);
	if (!peer)
		return -ENOMEM;
	peer->ctx = ctx;
	hmc_peer_set(peer, arg);
	ret = xa_alloc_cyclic(&hmc_peers, &peer->id, peer, xa_limit_32b,
			      &hmc_peers_next, GFP_KERNEL);
	if (ret < 0) {
		kfree(peer);
		return ret == -EBUSY ? -ENOSPC : ret;
	}
	list_add_tail(&peer->node, &ctx->peers);
	ctx->nr_peers++;
	hmc_stat_add(ctx, HMC_STAT_PEERS_CONNECTED, 1);
	hmc_event_peer(HMC_EVT_PEER_CONNECTED, peer, 0);
	return 0;
}

/* Reports the end of @peer and forgets it. */
static void hmc_peer_remove(struct hmc_peer *peer, u8 cmd, u32 error)
{
	struct hmc_ctx *ctx = peer->ctx;

	lockdep_assert_held(&ctx->peer_lock);
	xa_erase(&hmc_peers, peer->id);
	list_del(&peer->node);
	ctx->nr_peers--;
	hmc_stat_add(ctx, HMC_STAT_PEERS_CONNECTED, -1);
	hmc_event_peer(cmd, peer, error);
	kfree(peer);
}

int hmc_ioctl_peer_state(struct hmc_ctx *ctx, struct hmc_ioctl_call *call)
{
	const struct hmc_peer_state *arg = &call->arg.peer_state;
	u8 cmd = arg->state == HMC_PEER_FAILED ? HMC_EVT_PEER_FAILED :
					       HMC_EVT_PEER_DISCONNECTED;
	struct hmc_peer *peer, gone = { .ctx = ctx };
	int ret;

	ret = hmc_peer_check(arg);
	if (ret)
		return ret;
	mutex_lock(&ctx->peer_lock);
	if (arg->state == HMC_PEER_CONNECTED) {
		ret = hmc_peer_connect(ctx, arg);
		goto out;
	}
	peer = hmc_peer_find(ctx, arg->peer_id);
	if (peer) {
		hmc_peer_remove(peer, cmd, arg->error);
	} else if (arg->state == HMC_PEER_FAILED) {
		/* A connection that failed before it was ever up. */
		hmc_peer_set(&gone, arg);
		hmc_event_peer(cmd, &gone, arg->error);
	} else {
		ret = -ENOENT;
	}
out:
	mutex_unlock(&ctx->peer_lock);
	return ret;
}

/* The file is closed: the peers it still had are gone. */
void hmc_peers_release(struct hmc_ctx *ctx)
{
	struct hmc_peer *peer, *next;

	mutex_lock(&ctx->peer_lock);
	list_for_each_entry_safe(peer, next, &ctx->peers, node)
		hmc_peer_remove(peer, HMC_EVT_PEER_DISCONNECTED, ESHUTDOWN);
	mutex_unlock(&ctx->peer_lock);
}
