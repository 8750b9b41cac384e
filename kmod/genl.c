// SPDX-License-Identifier: GPL-2.0
/*
 * The generic netlink family "hmc": the counters for anyone, dumps of every
 * process's buffers, imports and peers for CAP_NET_ADMIN, and the "events"
 * multicast group (event.c), also for CAP_NET_ADMIN only, since events
 * carry pids and fabric addresses of all users.
 *
 * A new family: resv_start_op is 0, so every command gets strict checks,
 * and the policy refuses every attribute, since no request takes one. The
 * dumps read the global object tables under their spinlock and need no
 * reference; the cursor is the next object id. The family is not an alias
 * for module autoloading: looking it up must not load hmc.
 */
#include <linux/sched.h>
#include <linux/xarray.h>
#include <net/genetlink.h>

#include "hmc.h"

static const struct nla_policy hmc_genl_policy[HMC_A_MAX + 1] = {
	[0 ... HMC_A_MAX] = { .type = NLA_REJECT },
};

int hmc_nl_put_ctx(struct sk_buff *skb, const struct hmc_ctx *ctx)
{
	if (nla_put_u32(skb, HMC_A_PID, ctx->tgid) ||
	    nla_put_u32(skb, HMC_A_FILE_ID, ctx->id))
		return -EMSGSIZE;
	return 0;
}

int hmc_nl_put_buf(struct sk_buff *skb, const struct hmc_buf *buf)
{
	if (hmc_nl_put_ctx(skb, buf->ctx) ||
	    nla_put_u32(skb, HMC_A_BUF_ID, buf->id) ||
	    nla_put_u32(skb, HMC_A_HANDLE, buf->handle) ||
	    nla_put_u32(skb, HMC_A_BUF_TYPE, buf->type) ||
	    nla_put_u32(skb, HMC_A_NR_MAPPINGS,
			atomic_read(&buf->nr_mappings)) ||
	    nla_put_u32(skb, HMC_A_NR_EXPORTS,
			atomic_read(&buf->nr_exports)) ||
	    (READ_ONCE(buf->handle_live) &&
	     nla_put_flag(skb, HMC_A_HANDLE_LIVE)))
		return -EMSGSIZE;
	return 0;
}

int hmc_nl_put_import(struct sk_buff *skb, const struct hmc_import *imp)
{
	if (hmc_nl_put_ctx(skb, imp->ctx) ||
	    nla_put_u32(skb, HMC_A_IMPORT_ID, imp->id) ||
	    nla_put_u32(skb, HMC_A_HANDLE, imp->handle) ||
	    nla_put_u64_64bit(skb, HMC_A_SIZE, imp->size, HMC_A_PAD) ||
	    nla_put_u64_64bit(skb, HMC_A_OFFSET, imp->offset, HMC_A_PAD) ||
	    nla_put_u32(skb, HMC_A_IMPORT_FLAGS, imp->flags) ||
	    nla_put_u32(skb, HMC_A_IMPORT_STATE, READ_ONCE(imp->state)) ||
	    nla_put_u32(skb, HMC_A_NENTS, READ_ONCE(imp->nents)) ||
	    nla_put_string(skb, HMC_A_EXPORTER, imp->exporter))
		return -EMSGSIZE;
	return 0;
}

int hmc_nl_put_peer(struct sk_buff *skb, const struct hmc_peer *peer)
{
	if (hmc_nl_put_ctx(skb, peer->ctx) ||
	    nla_put_u64_64bit(skb, HMC_A_PEER_ID, peer->peer_id, HMC_A_PAD) ||
	    nla_put_u32(skb, HMC_A_TRANSPORT, peer->transport) ||
	    nla_put(skb, HMC_A_PEER_ADDR, peer->addr_len, peer->addr))
		return -EMSGSIZE;
	return 0;
}

static int hmc_genl_get_stats(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *nest;
	struct sk_buff *msg;
	unsigned int i;
	void *hdr;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &hmc_genl_family, 0,
				HMC_CMD_GET_STATS);
	if (!hdr)
		goto err_size;
	nest = nla_nest_start(msg, HMC_A_STATS);
	if (!nest)
		goto err_size;
	for (i = 0; i < HMC_STAT_COUNT; i++)
		if (nla_put_u64_64bit(msg, HMC_STATS_A_BASE + i,
				      hmc_stat_global(i), HMC_STATS_A_PAD))
			goto err_size;
	nla_nest_end(msg, nest);
	if (nla_put_u64_64bit(msg, HMC_A_SEQ, hmc_event_last_seq(),
			      HMC_A_PAD))
		goto err_size;
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);

err_size:
	nlmsg_free(msg);
	return -EMSGSIZE;
}

/* Puts the attributes of one object of a dump. */
typedef int (*hmc_genl_fill_fn)(struct sk_buff *skb, const void *obj);

static int hmc_genl_dump(struct sk_buff *skb, struct netlink_callback *cb,
			 struct xarray *xa, u8 cmd, hmc_genl_fill_fn fill)
{
	unsigned long id;
	void *obj, *hdr;

	xa_lock(xa);
	xa_for_each_start(xa, id, obj, cb->args[0]) {
		hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid,
				  cb->nlh->nlmsg_seq, &hmc_genl_family,
				  NLM_F_MULTI, cmd);
		if (!hdr)
			break;
		if (fill(skb, obj)) {
			genlmsg_cancel(skb, hdr);
			break;
		}
		genlmsg_end(skb, hdr);
		cb->args[0] = id + 1;
	}
	xa_unlock(xa);
	return skb->len;
}

static int hmc_genl_fill_buf(struct sk_buff *skb, const void *obj)
{
	const struct hmc_buf *buf = obj;

	if (hmc_nl_put_buf(skb, buf) ||
	    nla_put_u64_64bit(skb, HMC_A_SIZE, (u64)buf->nr_pages << PAGE_SHIFT,
			      HMC_A_PAD))
		return -EMSGSIZE;
	return 0;
}

static int hmc_genl_fill_import(struct sk_buff *skb, const void *obj)
{
	return hmc_nl_put_import(skb, obj);
}

static int hmc_genl_fill_peer(struct sk_buff *skb, const void *obj)
{
	const struct hmc_peer *peer = obj;

	if (hmc_nl_put_peer(skb, peer) ||
	    nla_put_u64_64bit(skb, HMC_A_TIME_NS, peer->since_ns, HMC_A_PAD))
		return -EMSGSIZE;
	return 0;
}

static int hmc_genl_dump_bufs(struct sk_buff *skb, struct netlink_callback *cb)
{
	return hmc_genl_dump(skb, cb, &hmc_bufs, HMC_CMD_GET_BUFS,
			     hmc_genl_fill_buf);
}

static int hmc_genl_dump_imports(struct sk_buff *skb,
				 struct netlink_callback *cb)
{
	return hmc_genl_dump(skb, cb, &hmc_imports, HMC_CMD_GET_IMPORTS,
			     hmc_genl_fill_import);
}

static int hmc_genl_dump_peers(struct sk_buff *skb,
			       struct netlink_callback *cb)
{
	return hmc_genl_dump(skb, cb, &hmc_peers, HMC_CMD_GET_PEERS,
			     hmc_genl_fill_peer);
}

static const struct genl_small_ops hmc_genl_ops[] = {
	{
		.cmd	= HMC_CMD_GET_STATS,
		.doit	= hmc_genl_get_stats,
	},
	{
		.cmd	= HMC_CMD_GET_BUFS,
		.dumpit	= hmc_genl_dump_bufs,
		.flags	= GENL_ADMIN_PERM,
	},
	{
		.cmd	= HMC_CMD_GET_IMPORTS,
		.dumpit	= hmc_genl_dump_imports,
		.flags	= GENL_ADMIN_PERM,
	},
	{
		.cmd	= HMC_CMD_GET_PEERS,
		.dumpit	= hmc_genl_dump_peers,
		.flags	= GENL_ADMIN_PERM,
	},
};

static const struct genl_multicast_group hmc_genl_mcgrps[] = {
	{
		.name	= HMC_GENL_MCGRP_EVENTS,
#ifdef GENL_MCAST_CAP_NET_ADMIN
		.flags	= GENL_MCAST_CAP_NET_ADMIN,
#else
		/* Before the GENL_MCAST_CAP_* backport: the same check. */
		.flags	= GENL_UNS_ADMIN_PERM,
#endif
	},
};

struct genl_family hmc_genl_family __ro_after_init = {
	.name		= HMC_GENL_NAME,
	.version	= HMC_GENL_VERSION,
	.maxattr	= HMC_A_MAX,
	.policy		= hmc_genl_policy,
	.netnsok	= false,
	.parallel_ops	= true,
	.resv_start_op	= 0,
	.module		= THIS_MODULE,
	.small_ops	= hmc_genl_ops,
	.n_small_ops	= ARRAY_SIZE(hmc_genl_ops),
	.mcgrps		= hmc_genl_mcgrps,
	.n_mcgrps	= ARRAY_SIZE(hmc_genl_mcgrps),
};

int __init hmc_genl_init(void)
{
	hmc_event_init();
	return genl_register_family(&hmc_genl_family);
}

/* After every source of events is gone: the queue is sent first. */
void hmc_genl_exit(void)
{
	hmc_event_flush();
	genl_unregister_family(&hmc_genl_family);
}
