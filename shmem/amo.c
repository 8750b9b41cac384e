// SPDX-License-Identifier: MIT
/*
 * Atomic memory operations, through peer.c: CPU atomics on a mapped
 * target's copy, and on a remote target's by its progress thread. The
 * target's own AMOs are CPU atomics on the same memory, so every AMO on a
 * location is atomic with respect to every other, whoever issues it. The
 * non-blocking fetching forms complete at once. Values travel as their
 * bits (every AMO type is 4 or 8 bytes), so float and double fetch, set
 * and swap are the integer ones of their width.
 */
#include <string.h>

#include "internal.h"

static uint64_t amo(const char *call, shmem_ctx_t ctx, const void *dest,
		    unsigned int size, enum shm_amo_op op, uint64_t val,
		    uint64_t cond, bool fetch, int pe)
{
	shm_check_init(call);
	pe = shm_ctx_pe(call, ctx, pe);
	shm_check_addr(call, dest, size, pe);
	/* Peers' copies lie at the same offset of page-aligned segments. */
	if ((uintptr_t)dest & (size - 1))
		shm_fatal(call, "%p is not aligned to its %u-byte type", dest,
			  size);
	return shm_amo(call, pe, (void *)dest, size, op, val, cond, fetch);
}

/* A value as the bits an AMO carries, and back. */
#define BITS(TYPE, v)							\
	({								\
		union { TYPE t; uint32_t u4; uint64_t u8; } b_ = { .u8 = 0 }; \
		b_.t = (v);						\
		sizeof(TYPE) == 4 ? (uint64_t)b_.u4 : b_.u8;		\
	})
#define VALUE(TYPE, b)							\
	({								\
		union { TYPE t; uint32_t u4; uint64_t u8; } v_;		\
		if (sizeof(TYPE) == 4)					\
			v_.u4 = (uint32_t)(b);				\
		else							\
			v_.u8 = (b);					\
		v_.t;							\
	})

/* One AMO of TYPE at @dest on @pe of @ctx's team, its old value if FETCH. */
#define AMO(CALL, TYPE, ctx, dest, pe, OP, val, cond, FETCH)		\
	VALUE(TYPE, amo(CALL, ctx, dest, sizeof(TYPE), SHM_AMO_##OP,	\
			BITS(TYPE, val), BITS(TYPE, cond), FETCH, pe))

/* Fetch, set and swap: any extended AMO type, floating point included. */
#define DEFINE_EXT_AMO(TYPE, NAME)					\
TYPE shmem_ctx_##NAME##_atomic_fetch(shmem_ctx_t ctx, const TYPE *source, \
				     int pe)				\
{									\
	return AMO("shmem_" #NAME "_atomic_fetch", TYPE, ctx, source, pe, \
		   FETCH, 0, 0, true);					\
}									\
TYPE shmem_##NAME##_atomic_fetch(const TYPE *source, int pe)		\
{									\
	return shmem_ctx_##NAME##_atomic_fetch(SHMEM_CTX_DEFAULT, source, pe); \
}									\
void shmem_ctx_##NAME##_atomic_fetch_nbi(shmem_ctx_t ctx, TYPE *fetch,	\
					 const TYPE *source, int pe)	\
{									\
	*fetch = shmem_ctx_##NAME##_atomic_fetch(ctx, source, pe);	\
}									\
void shmem_##NAME##_atomic_fetch_nbi(TYPE *fetch, const TYPE *source,	\
				     int pe)				\
{									\
	*fetch = shmem_ctx_##NAME##_atomic_fetch(SHMEM_CTX_DEFAULT, source, \
						 pe);			\
}									\
void shmem_ctx_##NAME##_atomic_set(shmem_ctx_t ctx, TYPE *dest,		\
				   TYPE value, int pe)			\
{									\
	AMO("shmem_" #NAME "_atomic_set", TYPE, ctx, dest, pe, SET, value, \
	    0, false);							\
}									\
void shmem_##NAME##_atomic_set(TYPE *dest, TYPE value, int pe)		\
{									\
	shmem_ctx_##NAME##_atomic_set(SHMEM_CTX_DEFAULT, dest, value, pe); \
}									\
TYPE shmem_ctx_##NAME##_atomic_swap(shmem_ctx_t ctx, TYPE *dest,	\
				    TYPE value, int pe)			\
{									\
	return AMO("shmem_" #NAME "_atomic_swap", TYPE, ctx, dest, pe,	\
		   SWAP, value, 0, true);				\
}									\
TYPE shmem_##NAME##_atomic_swap(TYPE *dest, TYPE value, int pe)		\
{									\
	return shmem_ctx_##NAME##_atomic_swap(SHMEM_CTX_DEFAULT, dest,	\
					      value, pe);		\
}									\
void shmem_ctx_##NAME##_atomic_swap_nbi(shmem_ctx_t ctx, TYPE *fetch,	\
					TYPE *dest, TYPE value, int pe)	\
{									\
	*fetch = shmem_ctx_##NAME##_atomic_swap(ctx, dest, value, pe);	\
}									\
void shmem_##NAME##_atomic_swap_nbi(TYPE *fetch, TYPE *dest, TYPE value, \
				    int pe)				\
{									\
	*fetch = shmem_ctx_##NAME##_atomic_swap(SHMEM_CTX_DEFAULT, dest, \
						value, pe);		\
}
HMC_SHMEM_EXT_AMO_TYPES(DEFINE_EXT_AMO)

/* One read-modify-write op (add, and, or, xor) and its forms. */
#define DEFINE_RMW(TYPE, NAME, OP, AOP)					\
TYPE shmem_ctx_##NAME##_atomic_fetch_##OP(shmem_ctx_t ctx, TYPE *dest,	\
					  TYPE value, int pe)		\
{									\
	return AMO("shmem_" #NAME "_atomic_fetch_" #OP, TYPE, ctx, dest, \
		   pe, AOP, value, 0, true);				\
}									\
TYPE shmem_##NAME##_atomic_fetch_##OP(TYPE *dest, TYPE value, int pe)	\
{									\
	return shmem_ctx_##NAME##_atomic_fetch_##OP(SHMEM_CTX_DEFAULT,	\
						    dest, value, pe);	\
}									\
void shmem_ctx_##NAME##_atomic_fetch_##OP##_nbi(shmem_ctx_t ctx,	\
						TYPE *fetch, TYPE *dest, \
						TYPE value, int pe)	\
{									\
	*fetch = shmem_ctx_##NAME##_atomic_fetch_##OP(ctx, dest, value, pe); \
}									\
void shmem_##NAME##_atomic_fetch_##OP##_nbi(TYPE *fetch, TYPE *dest,	\
					    TYPE value, int pe)		\
{									\
	*fetch = shmem_ctx_##NAME##_atomic_fetch_##OP(SHMEM_CTX_DEFAULT, \
						      dest, value, pe);	\
}									\
void shmem_ctx_##NAME##_atomic_##OP(shmem_ctx_t ctx, TYPE *dest,	\
				    TYPE value, int pe)			\
{									\
	AMO("shmem_" #NAME "_atomic_" #OP, TYPE, ctx, dest, pe, AOP, value, \
	    0, false);							\
}									\
void shmem_##NAME##_atomic_##OP(TYPE *dest, TYPE value, int pe)		\
{									\
	shmem_ctx_##NAME##_atomic_##OP(SHMEM_CTX_DEFAULT, dest, value, pe); \
}

#define DEFINE_AMO(TYPE, NAME)						\
	DEFINE_RMW(TYPE, NAME, add, ADD)					\
TYPE shmem_ctx_##NAME##_atomic_compare_swap(shmem_ctx_t ctx, TYPE *dest, \
					    TYPE cond, TYPE value, int pe) \
{									\
	return AMO("shmem_" #NAME "_atomic_compare_swap", TYPE, ctx, dest, \
		   pe, CSWAP, value, cond, true);			\
}									\
TYPE shmem_##NAME##_atomic_compare_swap(TYPE *dest, TYPE cond, TYPE value, \
					int pe)				\
{									\
	return shmem_ctx_##NAME##_atomic_compare_swap(SHMEM_CTX_DEFAULT, \
						      dest, cond, value, pe); \
}									\
void shmem_ctx_##NAME##_atomic_compare_swap_nbi(shmem_ctx_t ctx,	\
						TYPE *fetch, TYPE *dest, \
						TYPE cond, TYPE value,	\
						int pe)			\
{									\
	*fetch = shmem_ctx_##NAME##_atomic_compare_swap(ctx, dest, cond, \
							value, pe);	\
}									\
void shmem_##NAME##_atomic_compare_swap_nbi(TYPE *fetch, TYPE *dest,	\
					    TYPE cond, TYPE value, int pe) \
{									\
	*fetch = shmem_ctx_##NAME##_atomic_compare_swap(SHMEM_CTX_DEFAULT, \
							dest, cond, value, pe); \
}									\
TYPE shmem_ctx_##NAME##_atomic_fetch_inc(shmem_ctx_t ctx, TYPE *dest,	\
					 int pe)			\
{									\
	return shmem_ctx_##NAME##_atomic_fetch_add(ctx, dest, 1, pe);	\
}									\
TYPE shmem_##NAME##_atomic_fetch_inc(TYPE *dest, int pe)		\
{									\
	return shmem_ctx_##NAME##_atomic_fetch_add(SHMEM_CTX_DEFAULT, dest, \
						   1, pe);		\
}									\
void shmem_ctx_##NAME##_atomic_fetch_inc_nbi(shmem_ctx_t ctx, TYPE *fetch, \
					     TYPE *dest, int pe)	\
{									\
	*fetch = shmem_ctx_##NAME##_atomic_fetch_add(ctx, dest, 1, pe);	\
}									\
void shmem_##NAME##_atomic_fetch_inc_nbi(TYPE *fetch, TYPE *dest, int pe) \
{									\
	*fetch = shmem_ctx_##NAME##_atomic_fetch_add(SHMEM_CTX_DEFAULT, dest, \
						     1, pe);		\
}									\
void shmem_ctx_##NAME##_atomic_inc(shmem_ctx_t ctx, TYPE *dest, int pe) \
{									\
	shmem_ctx_##NAME##_atomic_add(ctx, dest, 1, pe);		\
}									\
void shmem_##NAME##_atomic_inc(TYPE *dest, int pe)			\
{									\
	shmem_ctx_##NAME##_atomic_add(SHMEM_CTX_DEFAULT, dest, 1, pe);	\
}
HMC_SHMEM_AMO_TYPES(DEFINE_AMO)

#define DEFINE_BITWISE(TYPE, NAME)					\
	DEFINE_RMW(TYPE, NAME, and, AND)				\
	DEFINE_RMW(TYPE, NAME, or, OR)					\
	DEFINE_RMW(TYPE, NAME, xor, XOR)
HMC_SHMEM_BITWISE_AMO_TYPES(DEFINE_BITWISE)
