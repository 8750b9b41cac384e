/* SPDX-License-Identifier: MIT */
/*
 * The transports: one file (or folder) each, every one behind the typed
 * table of core/xport.h. Like rdma-core's providers, a transport sets the
 * ops it has; xport_get() hands out its table with every optional op
 * filled in with its default, so that callers never test for one.
 */
#ifndef HMC_LIB_XPORT_XPORT_H
#define HMC_LIB_XPORT_XPORT_H

#include <hmc/hmc.h>

#include "core/xport.h"

/* The table of transport @type (never AUTO), or NULL if there is none. */
const struct xport_ops *xport_get(enum hmc_transport type);

/* Each transport's own table, as it defines it. */
extern const struct xport_ops xport_ucx_ops;
extern const struct xport_ops xport_shm_ops;
extern const struct xport_ops xport_verbs_ops;
extern const struct xport_ops xport_tcp_ops;

/*
 * The peer's ConnBuffer as the shm transport maps it (*@size bytes), or
 * NULL before it is: valid until the transport peer is destroyed, so for
 * as long as the caller holds engine.lock or peer_use().
 */
uint8_t *xport_shm_peer_map(void *xpeer, uint64_t *size);

#endif
