// SPDX-License-Identifier: GPL-2.0
/*
 * ioctl dispatch: one table entry per command number. The caller's struct
 * size comes from the command (_IOC_SIZE): shorter than ours is refused,
 * longer is accepted only with a zero tail (copy_struct_from_user), and
 * results are written back in our size with the caller's tail cleared.
 * Direction bits must match the published command.
 */
#include <linux/fs.h>
#include <linux/uaccess.h>

#include "hmc.h"

typedef int (*hmc_ioctl_fn)(struct hmc_ctx *ctx, struct hmc_ioctl_call *call);

struct hmc_ioctl_desc {
	hmc_ioctl_fn fn;
	unsigned int cmd;
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

#define HMC_IOCTL(_cmd, _fn)	[_IOC_NR(_cmd)] = { .fn = _fn, .cmd = _cmd }

static const struct hmc_ioctl_desc hmc_ioctls[] = {
	HMC_IOCTL(HMC_IOC_GET_VERSION, hmc_ioctl_version),
	HMC_IOCTL(HMC_IOC_BUF_ALLOC, hmc_ioctl_buf_alloc),
	HMC_IOCTL(HMC_IOC_BUF_PIN, hmc_ioctl_buf_pin),
	HMC_IOCTL(HMC_IOC_BUF_FREE, hmc_ioctl_buf_free),
	HMC_IOCTL(HMC_IOC_BUF_INFO, hmc_ioctl_buf_info),
	HMC_IOCTL(HMC_IOC_GET_STATS, hmc_ioctl_get_stats),
	HMC_IOCTL(HMC_IOC_BUF_EXPORT, hmc_ioctl_buf_export),
	HMC_IOCTL(HMC_IOC_PEER_IMPORT, hmc_ioctl_peer_import),
	HMC_IOCTL(HMC_IOC_PEER_RELEASE, hmc_ioctl_peer_release),
	HMC_IOCTL(HMC_IOC_PEER_INFO, hmc_ioctl_peer_info),
	HMC_IOCTL(HMC_IOC_PEER_STATE, hmc_ioctl_peer_state),
};

static int hmc_ioctl_dispatch(struct hmc_ctx *ctx, unsigned int cmd,
			      void __user *uarg)
{
	const struct hmc_ioctl_desc *desc;
	struct hmc_ioctl_call call = {};
	size_t usize = _IOC_SIZE(cmd);
	size_t ksize;
	int ret;

	ret = hmc_ctx_check_owner(ctx);
	if (ret)
		return ret;
	if (_IOC_TYPE(cmd) != HMC_IOC_MAGIC ||
	    _IOC_NR(cmd) >= ARRAY_SIZE(hmc_ioctls))
		return -ENOTTY;
	desc = &hmc_ioctls[_IOC_NR(cmd)];
	if (!desc->fn || _IOC_DIR(cmd) != _IOC_DIR(desc->cmd))
		return -ENOTTY;
	ksize = _IOC_SIZE(desc->cmd);
	if (usize < ksize)
		return -EINVAL;

	if (_IOC_DIR(cmd) & _IOC_WRITE) {
		ret = copy_struct_from_user(&call.arg, ksize, uarg, usize);
		if (ret)
			return ret;
	}
	ret = desc->fn(ctx, &call);
	if (ret)
		return ret;
	if (_IOC_DIR(cmd) & _IOC_READ) {
		if (copy_to_user(uarg, &call.arg, ksize) ||
		    clear_user(uarg + ksize, usize - ksize))
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
