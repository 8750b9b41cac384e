/* SPDX-License-Identifier: MIT */
/*
 * Option structs (struct hmc_*_opts) start with their own size, so that a
 * caller built against an older or newer header still works: a shorter
 * struct is zero-extended, a longer one is accepted only if the fields we
 * do not know are zero.
 */
#ifndef HMC_LIB_OPTS_H
#define HMC_LIB_OPTS_H

#include <stddef.h>

/* Size of the first published version of an option struct. */
#define OPTS_MIN_SIZE(TYPE, LAST_FIELD)					\
	(offsetof(struct TYPE, LAST_FIELD) +				\
	 sizeof(((struct TYPE *)0)->LAST_FIELD))

/*
 * Copy the caller's @src (NULL: all defaults) into @dst of @dst_size bytes,
 * zero-filling what the caller did not pass. -EINVAL if src->sz is below
 * @min_size, -E2BIG if it is larger than @dst_size with a non-zero tail.
 * The first member of both must be the size_t size.
 */
int opts_load(void *dst, size_t dst_size, const void *src, size_t min_size);

#define OPTS_LOAD(DST, SRC, TYPE, LAST_FIELD)				\
	opts_load((DST), sizeof(struct TYPE), (SRC),			\
		  OPTS_MIN_SIZE(TYPE, LAST_FIELD))

#endif
