// SPDX-License-Identifier: GPL-2.0
/*
 * hmc.ko: /dev/hmc, a misc device with a dynamic minor, and the generic
 * netlink family "hmc". Each open file is a context that belongs to the
 * opening process; closing the file (or the process dying) releases
 * everything it holds, except exported dma-bufs, which hold the module.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/build_bug.h>
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>

#include "hmc.h"

/*
 * mmap offsets carry the handle from bit HMC_MMAP_SHIFT (40) up to
 * HMC_MMAP_IMPORT (bit 62), in unsigned long page offsets and u64 results
 * alike: a 32-bit kernel cannot express them (Kconfig's "depends on 64BIT";
 * dkms.conf's BUILD_EXCLUSIVE_CONFIG skips such kernels).
 */
#ifndef CONFIG_64BIT
#error "hmc.ko needs a 64-bit kernel (CONFIG_64BIT): mmap offsets use bits 40 to 62"
#endif

static int hmc_open(struct inode *inode, struct file *file)
{
	struct hmc_ctx *ctx;

	/* A kernel thread has no mm to charge. */
	if (!current->mm)
		return -EINVAL;
	ctx = hmc_ctx_create();
	if (!ctx)
		return -ENOMEM;
	file->private_data = ctx;
	return 0;
}

static int hmc_release(struct inode *inode, struct file *file)
{
	hmc_ctx_release(file->private_data);
	return 0;
}

static const struct file_operations hmc_fops = {
	.owner		= THIS_MODULE,
	.open		= hmc_open,
	.release	= hmc_release,
	.unlocked_ioctl	= hmc_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.mmap		= hmc_mmap,
	.llseek		= noop_llseek,
};

static struct miscdevice hmc_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= HMC_DEVICE_NAME,
	.fops	= &hmc_fops,
};

/* The device that PEER_IMPORT attaches to dma-bufs with. */
struct device *hmc_dma_device(void)
{
	return hmc_misc.this_device;
}

/* The uapi layout is frozen: any change here is an ABI break. */
static void __init hmc_check_abi(void)
{
	BUILD_BUG_ON(sizeof(struct hmc_version) != 48);
	BUILD_BUG_ON(sizeof(struct hmc_buf_alloc) != 48);
	BUILD_BUG_ON(sizeof(struct hmc_buf_pin) != 40);
	BUILD_BUG_ON(sizeof(struct hmc_buf_free) != 8);
	BUILD_BUG_ON(sizeof(struct hmc_buf_info) != 48);
	BUILD_BUG_ON(sizeof(struct hmc_stats) != 32);
	BUILD_BUG_ON(sizeof(struct hmc_buf_export) != 48);
	BUILD_BUG_ON(sizeof(struct hmc_peer_import) != 64);
	BUILD_BUG_ON(sizeof(struct hmc_peer_release) != 8);
	BUILD_BUG_ON(sizeof(struct hmc_peer_info) != 112);
	BUILD_BUG_ON(sizeof(struct hmc_sg_entry) != 16);
	BUILD_BUG_ON(sizeof(struct hmc_peer_state) != 104);
	BUILD_BUG_ON(HMC_STAT_COUNT != 15);
	/* Each command's struct is at least as long as its first version. */
	BUILD_BUG_ON(HMC_VERSION_SIZE_VER0 > sizeof(struct hmc_version));
	BUILD_BUG_ON(HMC_BUF_ALLOC_SIZE_VER0 > sizeof(struct hmc_buf_alloc));
	BUILD_BUG_ON(HMC_BUF_PIN_SIZE_VER0 > sizeof(struct hmc_buf_pin));
	BUILD_BUG_ON(HMC_BUF_FREE_SIZE_VER0 > sizeof(struct hmc_buf_free));
	BUILD_BUG_ON(HMC_BUF_INFO_SIZE_VER0 > sizeof(struct hmc_buf_info));
	BUILD_BUG_ON(HMC_STATS_SIZE_VER0 > sizeof(struct hmc_stats));
	BUILD_BUG_ON(HMC_BUF_EXPORT_SIZE_VER0 > sizeof(struct hmc_buf_export));
	BUILD_BUG_ON(HMC_PEER_IMPORT_SIZE_VER0 >
		     sizeof(struct hmc_peer_import));
	BUILD_BUG_ON(HMC_PEER_RELEASE_SIZE_VER0 >
		     sizeof(struct hmc_peer_release));
	BUILD_BUG_ON(HMC_PEER_INFO_SIZE_VER0 > sizeof(struct hmc_peer_info));
	BUILD_BUG_ON(HMC_PEER_STATE_SIZE_VER0 > sizeof(struct hmc_peer_state));
	BUILD_BUG_ON(HMC_MMAP_SHIFT <= PAGE_SHIFT);
	BUILD_BUG_ON((u64)HMC_HANDLE_MAX << HMC_MMAP_SHIFT >= HMC_MMAP_IMPORT);
}

static int __init hmc_init(void)
{
	int ret;

	hmc_check_abi();
	/* Events may flow as soon as /dev/hmc exists. */
	ret = hmc_genl_init();
	if (ret) {
		pr_err("cannot register generic netlink family %s: %d\n",
		       HMC_GENL_NAME, ret);
		return ret;
	}
	ret = misc_register(&hmc_misc);
	if (ret) {
		pr_err("cannot register /dev/%s: %d\n", HMC_DEVICE_NAME, ret);
		goto err_genl;
	}
	/* Imports are mapped for this device (udmabuf does the same). */
	ret = dma_coerce_mask_and_coherent(hmc_misc.this_device,
					   DMA_BIT_MASK(64));
	if (ret) {
		pr_err("cannot set the DMA mask: %d\n", ret);
		goto err_misc;
	}
	pr_debug("loaded, ABI %d.%d\n", HMC_ABI_MAJOR, HMC_ABI_MINOR);
	return 0;

err_misc:
	misc_deregister(&hmc_misc);
err_genl:
	hmc_genl_exit();
	return ret;
}

static void __exit hmc_exit(void)
{
	misc_deregister(&hmc_misc);
	hmc_genl_exit();
	hmc_stats_check_idle();
}

module_init(hmc_init);
module_exit(hmc_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("HMC: pinned ConnBuffers, user-memory pinning, dma-buf export and import, fabric events");
MODULE_VERSION(HMC_VERSION);
