/* SPDX-License-Identifier: MIT */
/* What the public entry points share among themselves. */
#ifndef HMC_LIB_API_H
#define HMC_LIB_API_H

#include <stddef.h>
#include <stdint.h>

#include "core/comm.h"
#include "core/req.h"
#include "wire/frame.h"

/*
 * Post a put or get between region @mr of ours and @rmr of @peer's (0:
 * the ConnBuffers), a flush, or a put_signal (with @signal, between the
 * ConnBuffers); the request in *@id.
 */
int comm_post(struct hmc_comm *c, uint32_t peer, enum req_op op, uint32_t mr,
	      size_t local_off, uint32_t rmr, size_t remote_off, size_t len,
	      const uint64_t *signal, hmc_req_t *id);
/*
 * Post a put, get or flush (a put_signal with @signal) and wait for it
 * until @deadline; a request that times out is abandoned.
 */
int comm_post_wait(struct hmc_comm *c, uint32_t peer, enum req_op op,
		   size_t local_off, size_t remote_off, size_t len,
		   const uint64_t *signal, int64_t deadline);
/* Send a frame carrying @v to connected @rank over its control connection. */
int comm_send_frame(struct hmc_comm *c, uint32_t rank, enum frame_type type,
		    uint64_t v, int64_t deadline);

#endif
