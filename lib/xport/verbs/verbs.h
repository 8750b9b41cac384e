/* SPDX-License-Identifier: MIT */
/*
 * Verbs transport internals shared by its two files: verbs_dev.c finds
 * the device, port and GID and registers the ConnBuffer and regions;
 * verbs.c runs the queue pairs.
 */
#ifndef HMC_LIB_XPORT_VERBS_H
#define HMC_LIB_XPORT_VERBS_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <hmc/hmc.h>

#include "sys/util.h"

/* The port we talk through, as the peer needs to know it. */
struct vb_port {
	struct ibv_context *dev;
	uint8_t num;
	bool roce;			/* Ethernet link layer: a GRH on every packet */
	int gid_index;
	union ibv_gid gid;
	uint16_t lid;			/* InfiniBand */
	enum ibv_mtu mtu;		/* the port's active MTU */
	struct ibv_device_attr attr;
	uint32_t max_msg_sz;
};

/*
 * Open the device and port named by @name/@port (NULL/0: HMC_IB_DEV, then
 * the first active port of any device) and pick its GID. 0 or -ENODEV,
 * -ENETDOWN (port not active), or another negative errno.
 */
int vb_port_open(const char *name, uint8_t port, struct vb_port *p);

/*
 * Register @buf in @pd for local and remote access: a /dev/hmc or GPU
 * buffer as a dma-buf where it exports one and the device takes it, else
 * its mapping (GPU memory: peer memory). NULL and a negative errno in
 * @err: -EOPNOTSUPP for GPU memory the device cannot reach at all.
 */
struct ibv_mr *vb_reg_buf(struct vb_port *p, struct ibv_pd *pd,
			  struct hmc_buf *buf, int *err);

/*
 * Register [@addr, @addr + @len) of memory @type (of @device) in @pd with
 * @access (IBV_ACCESS_*), as vb_reg_buf() does a buffer: a dma-buf where
 * the runtime exports one and the device takes it, else the mapping.
 */
struct ibv_mr *vb_reg_mem(struct vb_port *p, struct ibv_pd *pd, void *addr,
			  size_t len, enum hmc_mem_type type, int device,
			  int access, int *err);

#endif
