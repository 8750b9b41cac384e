// SPDX-License-Identifier: GPL-2.0
/*
 * hmc_ib.ko: an ib_client that reports RDMA devices coming and going and
 * their ports going active or down as hmc events.
 *
 * It is a module of its own so that hmc.ko loads on machines without the
 * RDMA core: this one depends on ib_core and hmc, and is loaded where both
 * are wanted (modprobe hmc_ib). Registering the client reports the devices
 * present at that time as added.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/slab.h>
#include <rdma/ib_verbs.h>

#include "hmc.h"

MODULE_IMPORT_NS(HMC);

struct hmc_ib_dev {
	struct ib_event_handler handler;
};

static struct ib_client hmc_ib_client;

/* Called by the RDMA core, possibly in atomic context. */
static void hmc_ib_event(struct ib_event_handler *handler,
			 struct ib_event *event)
{
	const char *name = dev_name(&event->device->dev);

	switch (event->event) {
	case IB_EVENT_PORT_ACTIVE:
		hmc_event_rdma(HMC_EVT_RDMA_PORT_ACTIVE, name,
			       event->element.port_num);
		break;
	case IB_EVENT_PORT_ERR:
		hmc_event_rdma(HMC_EVT_RDMA_PORT_DOWN, name,
			       event->element.port_num);
		break;
	default:
		break;
	}
}

static int hmc_ib_add(struct ib_device *ibdev)
{
	struct hmc_ib_dev *dev;

	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return -ENOMEM;
	INIT_IB_EVENT_HANDLER(&dev->handler, ibdev, hmc_ib_event);
	ib_register_event_handler(&dev->handler);
	ib_set_client_data(ibdev, &hmc_ib_client, dev);
	hmc_event_rdma(HMC_EVT_RDMA_DEV_ADDED, dev_name(&ibdev->dev), 0);
	return 0;
}

static void hmc_ib_remove(struct ib_device *ibdev, void *client_data)
{
	struct hmc_ib_dev *dev = client_data;

	ib_unregister_event_handler(&dev->handler);
	kfree(dev);
	hmc_event_rdma(HMC_EVT_RDMA_DEV_REMOVED, dev_name(&ibdev->dev), 0);
}

static struct ib_client hmc_ib_client = {
	.name	= "hmc",
	.add	= hmc_ib_add,
	.remove	= hmc_ib_remove,
};

static int __init hmc_ib_init(void)
{
	return ib_register_client(&hmc_ib_client);
}

static void __exit hmc_ib_exit(void)
{
	ib_unregister_client(&hmc_ib_client);
}

module_init(hmc_ib_init);
module_exit(hmc_ib_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("HMC: RDMA device and port events for the hmc event group");
MODULE_VERSION(HMC_VERSION);
