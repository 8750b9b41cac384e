/* SPDX-License-Identifier: MIT */
/*
 * Two-sided messages (hmc_comm_send() and the like), a layer above the
 * core: it hooks into the communicator through struct comm_ext and uses
 * the core's peers, requests, control connections and transfers.
 */
#ifndef HMC_LIB_MSG_H
#define HMC_LIB_MSG_H

#include <stdint.h>

struct hmc_comm;

/*
 * Set up messages on @c (c->ext, c->ext_ctx) with the options'
 * msg_slot_size and msg_region (0: defaults): 0 or a negative errno.
 */
int msg_init(struct hmc_comm *c, uint32_t slot_size, uint64_t region);

#endif
