// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>

#include "sys/opts.h"

int opts_load(void *dst, size_t dst_size, const void *src, size_t min_size,
	      size_t known_size)
{
	const unsigned char *bytes;
	size_t src_size, i;

	memset(dst, 0, dst_size);
	if (!src) {
		memcpy(dst, &dst_size, sizeof(dst_size));
		return 0;
	}
	memcpy(&src_size, src, sizeof(src_size));
	if (src_size < min_size)
		return -EINVAL;
	/*
	 * After the last known field: reserved bytes of ours (EINVAL), then
	 * a newer caller's fields (E2BIG).
	 */
	bytes = (const unsigned char *)src;
	for (i = known_size; i < src_size; i++)
		if (bytes[i])
			return i < dst_size ? -EINVAL : -E2BIG;
	memcpy(dst, src, src_size < dst_size ? src_size : dst_size);
	/* From here on the struct is ours: its size is our size. */
	memcpy(dst, &dst_size, sizeof(dst_size));
	return 0;
}
