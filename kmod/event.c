// SPDX-License-Identifier: GPL-2.0
/*
 * Events of the "events" multicast group.
 *
 * An event is built where it happens, with the gfp its context allows
 * (move_notify and RDMA event handlers may not sleep), then numbered,
 * stamped and queued under one spinlock, so that queue order is sequence
 * order. A work item sends the queue from process context. Nothing is
 * built while the group has no members; an event lost after that (no
 * memory, queue full) still takes its number, so listeners see the gap.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/ratelimit.h>
#include <linux/sched.h>
#include <linux/skbuff.h>
#include <linux/spinlock.h>
#include <linux/timekeeping.h>
#include <linux/workqueue.h>
#include <net/genetlink.h>

#include "hmc.h"

/* Events waiting for the work item; more are dropped (and counted). */
#define HMC_EVENTS_QUEUED_MAX	4096
/* Room for the largest event (a peer: 64 address bytes, 8 attributes). */
#define HMC_EVENT_SIZE		512

/* Its lock also guards the sequence number. */
static struct sk_buff_head hmc_event_queue;
static u64 hmc_event_seq;

/* ERROR events: at most 50 in 5 s, and no log line about the rest. */
static struct ratelimit_state hmc_error_rs =
	RATELIMIT_STATE_INIT_FLAGS(hmc_error_rs, 5 * HZ, 50,
				   RATELIMIT_MSG_ON_RELEASE);

static void hmc_event_work_fn(struct work_struct *work)
{
	struct sk_buff_head batch;
	struct sk_buff *skb;

	__skb_queue_head_init(&batch);
	spin_lock_irq(&hmc_event_queue.lock);
	skb_queue_splice_init(&hmc_event_queue, &batch);
	spin_unlock_irq(&hmc_event_queue.lock);
	/* A work item never runs twice at once: batches stay in order. */
	while ((skb = __skb_dequeue(&batch))) {
		/* -ESRCH: the last listener left meanwhile. */
		genlmsg_multicast(&hmc_genl_family, skb, 0, 0, GFP_KERNEL);
		hmc_stat_add_global(HMC_STAT_EVENTS_SENT, 1);
	}
}

static DECLARE_WORK(hmc_event_work, hmc_event_work_fn);

/* An event that listeners will miss: its number is spent. */
static void hmc_event_lost(void)
{
	unsigned long flags;

	spin_lock_irqsave(&hmc_event_queue.lock, flags);
	hmc_event_seq++;
	spin_unlock_irqrestore(&hmc_event_queue.lock, flags);
	hmc_stat_add_global(HMC_STAT_EVENTS_DROPPED, 1);
}

/* A message for event @cmd, or NULL if nobody listens (or no memory). */
struct sk_buff *hmc_event_new(u8 cmd, gfp_t gfp)
{
	struct sk_buff *skb;

	if (!genl_has_listeners(&hmc_genl_family, &init_net, 0))
		return NULL;
	skb = genlmsg_new(HMC_EVENT_SIZE, gfp);
	if (!skb)
		goto lost;
	if (!genlmsg_put(skb, 0, 0, &hmc_genl_family, 0, cmd)) {
		nlmsg_free(skb);
		goto lost;
	}
	return skb;
lost:
	hmc_event_lost();
	return NULL;
}

/*
 * Numbers, stamps and queues the event, whose attributes were put with
 * result @err (an event that did not fit is lost); the work item sends it.
 */
void hmc_event_send(struct sk_buff *skb, int err)
{
	unsigned long flags;
	bool queued = false;

	if (err) {
		nlmsg_free(skb);
		hmc_event_lost();
		return;
	}
	spin_lock_irqsave(&hmc_event_queue.lock, flags);
	hmc_event_seq++;
	if (skb_queue_len(&hmc_event_queue) < HMC_EVENTS_QUEUED_MAX &&
	    !nla_put_u64_64bit(skb, HMC_A_SEQ, hmc_event_seq, HMC_A_PAD) &&
	    !nla_put_u64_64bit(skb, HMC_A_TIME_NS, ktime_get_real_ns(),
			       HMC_A_PAD)) {
		nlmsg_end(skb, nlmsg_hdr(skb));
		__skb_queue_tail(&hmc_event_queue, skb);
		queued = true;
	}
	spin_unlock_irqrestore(&hmc_event_queue.lock, flags);
	if (queued) {
		schedule_work(&hmc_event_work);
		return;
	}
	nlmsg_free(skb);
	hmc_stat_add_global(HMC_STAT_EVENTS_DROPPED, 1);
}

u64 hmc_event_last_seq(void)
{
	unsigned long flags;
	u64 seq;

	spin_lock_irqsave(&hmc_event_queue.lock, flags);
	seq = hmc_event_seq;
	spin_unlock_irqrestore(&hmc_event_queue.lock, flags);
	return seq;
}

void hmc_event_init(void)
{
	skb_queue_head_init(&hmc_event_queue);
}

/* Module exit, when nothing can queue events any more: send the rest. */
void hmc_event_flush(void)
{
	flush_work(&hmc_event_work);
}

void hmc_event_buf(u8 cmd, const struct hmc_buf *buf)
{
	struct sk_buff *skb = hmc_event_new(cmd, GFP_KERNEL);

	if (skb)
		hmc_event_send(skb, hmc_nl_put_buf(skb, buf) ?:
			       nla_put_u64_64bit(skb, HMC_A_SIZE,
						 (u64)buf->nr_pages << PAGE_SHIFT,
						 HMC_A_PAD));
}

void hmc_event_export(const struct hmc_buf *buf, u64 offset, u64 size)
{
	struct sk_buff *skb = hmc_event_new(HMC_EVT_BUF_EXPORTED, GFP_KERNEL);

	if (skb)
		hmc_event_send(skb, hmc_nl_put_buf(skb, buf) ?:
			       nla_put_u64_64bit(skb, HMC_A_OFFSET, offset,
						 HMC_A_PAD) ?:
			       nla_put_u64_64bit(skb, HMC_A_SIZE, size,
						 HMC_A_PAD));
}

void hmc_event_import(u8 cmd, const struct hmc_import *imp, gfp_t gfp)
{
	struct sk_buff *skb = hmc_event_new(cmd, gfp);

	if (skb)
		hmc_event_send(skb, hmc_nl_put_import(skb, imp));
}

void hmc_event_peer(u8 cmd, const struct hmc_peer *peer, u32 error)
{
	struct sk_buff *skb = hmc_event_new(cmd, GFP_KERNEL);

	if (skb)
		hmc_event_send(skb, hmc_nl_put_peer(skb, peer) ?:
			       (error ? nla_put_u32(skb, HMC_A_ERRNO, error) :
					0));
}

/* An ioctl failed: PID is the caller's, who may not own the file. */
void hmc_event_error(const struct hmc_ctx *ctx, unsigned int nr, int err)
{
	struct sk_buff *skb;

	if (!genl_has_listeners(&hmc_genl_family, &init_net, 0) ||
	    !__ratelimit(&hmc_error_rs))
		return;
	skb = hmc_event_new(HMC_EVT_ERROR, GFP_KERNEL);
	if (skb)
		hmc_event_send(skb,
			       nla_put_u32(skb, HMC_A_PID, task_tgid_nr(current)) ?:
			       nla_put_u32(skb, HMC_A_FILE_ID, ctx->id) ?:
			       nla_put_u32(skb, HMC_A_IOCTL, nr) ?:
			       nla_put_u32(skb, HMC_A_ERRNO, -err));
}

/*
 * For hmc_ib.ko, the ib_client: RDMA device and port events. May be
 * called from atomic context.
 */
void hmc_event_rdma(u8 cmd, const char *dev, u32 port)
{
	struct sk_buff *skb;

	if (WARN_ON_ONCE(cmd < HMC_EVT_RDMA_DEV_ADDED ||
			 cmd > HMC_EVT_RDMA_PORT_DOWN))
		return;
	skb = hmc_event_new(cmd, GFP_ATOMIC);
	if (skb)
		hmc_event_send(skb, nla_put_string(skb, HMC_A_RDMA_DEV, dev) ?:
			       (port ? nla_put_u32(skb, HMC_A_RDMA_PORT, port) :
				       0));
}
EXPORT_SYMBOL_NS_GPL(hmc_event_rdma, HMC);
