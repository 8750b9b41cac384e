// SPDX-License-Identifier: GPL-2.0
/*
 * Per-open context: the owning process, its mm (for memlock charges), the
 * tables of buffer and import handles and the peers it reported.
 *
 * A handle is reserved while its buffer is being built and published only
 * once the ioctl has written it back to user space, so a failed copy leaves
 * nothing behind and nobody can map a half-made buffer.
 */
#include <linux/idr.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "hmc.h"

/* HMC_A_FILE_ID: unique among contexts alive. */
static DEFINE_IDA(hmc_ctx_ida);

struct hmc_ctx *hmc_ctx_create(void)
{
	struct hmc_ctx *ctx;
	int id;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return NULL;
	id = ida_alloc_min(&hmc_ctx_ida, 1, GFP_KERNEL);
	if (id < 0) {
		kfree(ctx);
		return NULL;
	}
	ctx->id = id;
	kref_init(&ctx->ref);
	xa_init_flags(&ctx->bufs, XA_FLAGS_ALLOC1);
	xa_init_flags(&ctx->imports, XA_FLAGS_ALLOC1);
	mutex_init(&ctx->peer_lock);
	INIT_LIST_HEAD(&ctx->peers);
	ctx->owner = get_pid(task_tgid(current));
	ctx->tgid = pid_nr(ctx->owner);
	ctx->mm = current->mm;
	mmgrab(ctx->mm);
	return ctx;
}

void hmc_ctx_get(struct hmc_ctx *ctx)
{
	kref_get(&ctx->ref);
}

static void hmc_ctx_free(struct kref *ref)
{
	struct hmc_ctx *ctx = container_of(ref, struct hmc_ctx, ref);

	xa_destroy(&ctx->bufs);
	xa_destroy(&ctx->imports);
	mutex_destroy(&ctx->peer_lock);
	mmdrop(ctx->mm);
	put_pid(ctx->owner);
	ida_free(&hmc_ctx_ida, ctx->id);
	kfree(ctx);
}

void hmc_ctx_put(struct hmc_ctx *ctx)
{
	kref_put(&ctx->ref, hmc_ctx_free);
}

/*
 * The file is gone: its peers are disconnected, its imports released, its
 * buffer handles dropped, then the file's reference.
 */
void hmc_ctx_release(struct hmc_ctx *ctx)
{
	unsigned long handle;
	struct hmc_buf *buf;

	hmc_peers_release(ctx);
	hmc_imports_release(ctx);
	xa_for_each(&ctx->bufs, handle, buf) {
		xa_erase(&ctx->bufs, handle);
		WRITE_ONCE(buf->handle_live, false);
		hmc_stat_add(ctx, HMC_STAT_HANDLES_LIVE, -1);
		hmc_buf_put(buf);
	}
	hmc_ctx_put(ctx);
}

/*
 * Only the opener may use the file. The mm check also refuses the opener
 * after an exec, whose new mm the context does not charge.
 */
int hmc_ctx_check_owner(const struct hmc_ctx *ctx)
{
	if (task_tgid(current) != ctx->owner || current->mm != ctx->mm)
		return -EACCES;
	return 0;
}

int hmc_ctx_reserve_handle(struct hmc_ctx *ctx, struct hmc_buf *buf)
{
	u32 handle;
	int ret;

	ret = xa_alloc_cyclic(&ctx->bufs, &handle, NULL,
			      XA_LIMIT(1, HMC_HANDLE_MAX), &ctx->next_handle,
			      GFP_KERNEL);
	if (ret < 0)
		return ret == -EBUSY ? -ENOSPC : ret;
	buf->handle = handle;
	return 0;
}

/* Publish a reserved handle, or give it back and drop the new buffer. */
void hmc_ctx_finish_buf(struct hmc_ctx *ctx, struct hmc_ioctl_call *call,
			bool publish)
{
	struct hmc_buf *buf = call->obj;

	if (publish) {
		WRITE_ONCE(buf->handle_live, true);
		buf->announced = true;
		hmc_stat_add(ctx, HMC_STAT_HANDLES_LIVE, 1);
		hmc_event_buf(HMC_EVT_BUF_CREATED, buf);
		/*
		 * Published last: from the table, another thread may free the
		 * handle, and with it the buffer, at once. Replaces the
		 * reserved entry: no allocation, cannot fail.
		 */
		xa_store(&ctx->bufs, buf->handle, buf, GFP_KERNEL);
		return;
	}
	xa_release(&ctx->bufs, buf->handle);
	hmc_buf_put(buf);
}

/* Returns the buffer of a published handle with a reference, or NULL. */
struct hmc_buf *hmc_ctx_get_buf(struct hmc_ctx *ctx, unsigned long handle)
{
	struct hmc_buf *buf;

	xa_lock(&ctx->bufs);
	buf = xa_load(&ctx->bufs, handle);
	if (buf)
		hmc_buf_get(buf);
	xa_unlock(&ctx->bufs);
	return buf;
}

int hmc_ctx_free_handle(struct hmc_ctx *ctx, u32 handle)
{
	struct hmc_buf *buf;

	/* xa_load() skips reserved entries, which stay reserved. */
	xa_lock(&ctx->bufs);
	buf = xa_load(&ctx->bufs, handle);
	if (buf)
		__xa_erase(&ctx->bufs, handle);
	xa_unlock(&ctx->bufs);
	if (!buf)
		return -ENOENT;
	WRITE_ONCE(buf->handle_live, false);
	hmc_stat_add(ctx, HMC_STAT_HANDLES_LIVE, -1);
	hmc_buf_put(buf);
	return 0;
}
