// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>

#include "sys/opts.h"

int opts_load(void *dst, size_t dst_size, const void *src, size_t min_size)
{
	const unsigned char *tail;
	size_t src_size, i;

	memset(dst, 0, dst_size);
	if (!src) {
		memcpy(dst, &dst_size, sizeof(dst_size));
		return 0;
	}
	memcpy(&src_size, src, sizeof(src_size));
	if (src_size < min_size)
		return -EINVAL;
	tail = (const unsigned char *)src;
	for (i = dst_size; i < src_size; i++)
		if (tail[i])
			return -E2BIG;
	memcpy(dst, src, src_size < dst_size ? src_size : dst_size);
	/* From here on the struct is ours: its size is our size. */
	memcpy(dst, &dst_size, sizeof(dst_size));
	return 0;
}
