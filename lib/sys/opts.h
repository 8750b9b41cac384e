/* SPDX-License-Identifier: MIT */
/*
 * Option structs (struct hmc_*_opts) start with their own size, so that a
 * caller built against an older or newer header still works (libbpf's
 * rules): a shorter struct is zero-extended; every byte after the last
 * field this library knows must be zero, reserved ones (-EINVAL) as well as
 * those of a newer caller's fields (-E2BIG). The structs have no implicit
 * padding, whose bytes nobody zeroes: a future field there would read
 * garbage.
 */
#ifndef HMC_LIB_OPTS_H
#define HMC_LIB_OPTS_H

#include <errno.h>
#include <stddef.h>

/* Offset of the end of @FIELD in struct @TYPE. */
#define OPTS_END(TYPE, FIELD)						\
	(offsetof(struct TYPE, FIELD) + sizeof(((struct TYPE *)0)->FIELD))

/* Size of the first published version of an option struct. */
#define OPTS_MIN_SIZE(TYPE, LAST_FIELD)	OPTS_END(TYPE, LAST_FIELD)

/*
 * The last field of each option struct that this library knows, and its
 * reserved fields before that one, which must be zero.
 */
#define hmc_buf_opts__last_field	numa_node
#define hmc_buf_opts__reserved(o)	0
#define hmc_comm_opts__last_field	msg_slot_size
#define hmc_comm_opts__reserved(o)	((o)->reserved0 || (o)->reserved1)
#define hmc_world_opts__last_field	err_msg_len
#define hmc_world_opts__reserved(o)	0
#define hmc_pool_opts__last_field	user_mem_size
#define hmc_pool_opts__reserved(o)	0
#define hmc_mr_opts__last_field		notify
#define hmc_mr_opts__reserved(o)	0

/*
 * Copy the caller's @src (NULL: all defaults) into @dst of @dst_size bytes,
 * zero-filling what the caller did not pass. -EINVAL if src->sz is below
 * @min_size or a byte from @known_size (the end of the last known field) up
 * to @dst_size is not zero; -E2BIG if one beyond @dst_size is not. The
 * first member of both must be the size_t size.
 */
int opts_load(void *dst, size_t dst_size, const void *src, size_t min_size,
	      size_t known_size);

/* Loads @SRC into @DST; @FIRST_LAST: the first version's last field. */
#define OPTS_LOAD(DST, SRC, TYPE, FIRST_LAST)				\
	(opts_load((DST), sizeof(struct TYPE), (SRC),			\
		   OPTS_MIN_SIZE(TYPE, FIRST_LAST),			\
		   OPTS_END(TYPE, TYPE##__last_field)) ?:		\
	 (TYPE##__reserved(DST) ? -EINVAL : 0))

#endif
