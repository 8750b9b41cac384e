// SPDX-License-Identifier: GPL-2.0
/*
 * ioctl dispatch: one table entry per command number. The caller's struct
 * size comes from the command (_IOC_SIZE), as the uapi header promises:
 * shorter than the command's first published size (HMC_*_SIZE_VER0) is
 * refused; shorter than ours (an older binary) is zero-extended, longer (a
 * newer one) is accepted only with a zero tail (copy_struct_from_user),
 * and results are written back in the caller's size, a longer caller's
 * tail cleared. Direction bits must match the published command.
 */
#include <linux/fs.h>
#include <linux/nospec.h>
#include <linux/uaccess.h>

#include "hmc.h"

typedef int (*hmc_ioctl_fn)(struct hmc_ctx *ctx, struct hmc_ioctl_call *call);

struct hmc_ioctl_desc {
	hmc_ioctl_fn fn;
	unsigned int cmd;
	unsigned int min_size;		/* HMC_*_SIZE_VER0 */
};

static int hmc_ioctl_version(struct hmc_ctx *ctx, struct hmc_ioctl_call *call)
{
	struct hmc_version *arg = &call->arg.version;

	arg->abi_major = HMC_ABI_MAJOR;
	arg->abi_minor = HMC_ABI_MINOR;
	arg->features = HMC_FEAT_BUF_ALLOC | HMC_FEAT_BUF_PIN | HMC_FEAT_NUMA |
			HMC_FEAT_BUF_EXPORT | HMC_FEAT_PEER_IMPORT |
			HMC_FEAT_PEER_STATE | HMC_FEAT_GENL;
	arg->page_size = PAGE_SIZE;
	arg->max_buf_size = HMC_BUF_MAX_SIZE;
	return 0;
}

#define HMC_IOCTL(_cmd, _fn, _min)					\
	[_IOC_NR(_cmd)] = { .fn = _fn, .cmd = _cmd, .min_size = _min }

static const struct hmc_ioctl_desc hmc_ioctls[] = {
	HMC_IOCTL(HMC_IOC_GET_VERSION, hmc_ioctl_version,
		  HMC_VERSION_SIZE_VER0),
	HMC_IOCTL(HMC_IOC_BUF_ALLOC, hmc_ioctl_buf_alloc,
		  HMC_BUF_ALLOC_SIZE_VER0),
	HMC_IOCTL(HMC_IOC_BUF_PIN, hmc_ioctl_buf_pin, HMC_BUF_PIN_SIZE_VER0),
	HMC_IOCTL(HMC_IOC_BUF_FREE, hmc_ioctl_buf_free,
		  HMC_BUF_FREE_SIZE_VER0),
	HMC_IOCTL(HMC_IOC_BUF_INFO, hmc_ioctl_buf_info,
		  HMC_BUF_INFO_SIZE_VER0),
	HMC_IOCTL(HMC_IOC_GET_STATS, hmc_ioctl_get_stats, HMC_STATS_SIZE_VER0),
	HMC_IOCTL(HMC_IOC_BUF_EXPORT, hmc_ioctl_buf_export,
		  HMC_BUF_EXPORT_SIZE_VER0),
	HMC_IOCTL(HMC_IOC_PEER_IMPORT, hmc_ioctl_peer_import,
		  HMC_PEER_IMPORT_SIZE_VER0),
	HMC_IOCTL(HMC_IOC_PEER_RELEASE, hmc_ioctl_peer_release,
		  HMC_PEER_RELEASE_SIZE_VER0),
	HMC_IOCTL(HMC_IOC_PEER_INFO, hmc_ioctl_peer_info,
		  HMC_PEER_INFO_SIZE_VER0),
	HMC_IOCTL(HMC_IOC_PEER_STATE, hmc_ioctl_peer_state,
		  HMC_PEER_STATE_SIZE_VER0),
};

static int hmc_ioctl_dispatch(struct hmc_ctx *ctx, unsigned int cmd,
			      void __user *uarg)
{
	const struct hmc_ioctl_desc *desc;
	struct hmc_ioctl_call call = {};
	size_t usize = _IOC_SIZE(cmd);
	unsigned int nr = _IOC_NR(cmd);
	size_t ksize;
	int ret;

	ret = hmc_ctx_check_owner(ctx);
	if (ret)
		return ret;
	if (_IOC_TYPE(cmd) != HMC_IOC_MAGIC || nr >= ARRAY_SIZE(hmc_ioctls))
		return -ENOTTY;
	/* A user-chosen index: no speculative load past the table. */
	nr = array_index_nospec(nr, ARRAY_SIZE(hmc_ioctls));
	desc = &hmc_ioctls[nr];
	if (!desc->fn || _IOC_DIR(cmd) != _IOC_DIR(desc->cmd))
		return -ENOTTY;
	if (usize < desc->min_size)
		return -EINVAL;
	ksize = _IOC_SIZE(desc->cmd);

	if (_IOC_DIR(cmd) & _IOC_WRITE) {
		ret = copy_struct_from_user(&call.arg, ksize, uarg, usize);
		if (ret)
			return ret;
	}
	ret = desc->fn(ctx, &call);
	if (ret)
		return ret;
	if (_IOC_DIR(cmd) & _IOC_READ) {
		/* An older caller gets the fields it knows of. */
		if (copy_to_user(uarg, &call.arg, min(usize, ksize)) ||
		    (usize > ksize && clear_user(uarg + ksize, usize - ksize)))
			ret = -EFAULT;
	}
	if (call.finish)
		call.finish(ctx, &call, !ret);
	return ret;
}

/* Errors that only say the request was malformed: no event for them. */
static bool hmc_ioctl_err_malformed(int err)
{
	return err == -ENOTTY || err == -EINVAL || err == -E2BIG ||
	       err == -EFAULT || err == -ENOENT || err == -EBADF ||
	       err == -EINTR;
}

long hmc_ioctl(struct file *file, unsigned int cmd, unsigned long uarg)
{
	struct hmc_ctx *ctx = file->private_data;
	int ret;

	ret = hmc_ioctl_dispatch(ctx, cmd, (void __user *)uarg);
	if (ret) {
		hmc_stat_add(ctx, HMC_STAT_ERRORS, 1);
		if (!hmc_ioctl_err_malformed(ret))
			hmc_event_error(ctx, _IOC_NR(cmd), ret);
	}
	return ret;
}
