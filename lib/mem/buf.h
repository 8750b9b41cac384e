/* SPDX-License-Identifier: MIT */
/*
 * ConnBuffer internals that other parts of libhmc need: range checks
 * against any buffer size (a peer's too), and the /dev/hmc file and handle
 * behind a kmod-backed buffer (for dma-buf export and the like).
 */
#ifndef HMC_LIB_BUF_H
#define HMC_LIB_BUF_H

#include <errno.h>
#include <stdint.h>

#include <hmc/hmc.h>

/* 0 if [@offset, @offset + @len) lies within @size bytes, else -ERANGE. */
static inline int range_check(uint64_t size, uint64_t offset, uint64_t len)
{
	/* Written so that offset + len cannot wrap. */
	if (offset > size || len > size - offset)
		return -ERANGE;
	return 0;
}

/*
 * The /dev/hmc file holding a HMC_BUF_BACKING_KMOD buffer and the buffer's
 * handle in it; -ENODEV for other backings. The file stays the buffer's:
 * do not close it.
 */
int buf_devhmc(const struct hmc_buf *buf, int *fd, uint32_t *handle);

#endif
