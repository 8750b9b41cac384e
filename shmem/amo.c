// SPDX-License-Identifier: MIT
/*
 * Atomic memory operations: CPU atomics on the target's mapped copy. The
 * target's own AMOs are CPU atomics on the same memory, so every AMO on a
 * location is atomic with respect to every other, whoever issues it. The
 * non-blocking fetching forms complete at once.
 */
#include "internal.h"

#define ORDER	__ATOMIC_SEQ_CST

/* The target address of an AMO on @dest at @pe of @ctx's team. */
#define TARGET(CALL, TYPE, ctx, dest, pe)				\
	((TYPE *)amo_addr(CALL, ctx, dest, sizeof(TYPE), pe))

static void *amo_addr(const char *call, shmem_ctx_t ctx, const void *dest,
		      size_t size, int pe)
{
	void *p;

	shm_check_init(call);
	pe = shm_ctx_pe(call, ctx, pe);
	p = shm_addr(call, dest, size, pe);
	if ((uintptr_t)p & (size - 1))
		shm_fatal(call, "%p is not aligned to its %zu-byte type", dest,
			  size);
	return p;
}

/* Fetch, set and swap: any extended AMO type, floating point included. */
#define DEFINE_EXT_AMO(TYPE, NAME)					\
TYPE shmem_ctx_##NAME##_atomic_fetch(shmem_ctx_t ctx, const TYPE *source, \
				     int pe)				\
{									\
	TYPE v;								\
									\
	__atomic_load(TARGET("shmem_" #NAME "_atomic_fetch", TYPE, ctx,	\
			     source, pe), &v, ORDER);			\
	return v;							\
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
	__atomic_store(TARGET("shmem_" #NAME "_atomic_set", TYPE, ctx,	\
			      dest, pe), &value, ORDER);		\
}									\
void shmem_##NAME##_atomic_set(TYPE *dest, TYPE value, int pe)		\
{									\
	shmem_ctx_##NAME##_atomic_set(SHMEM_CTX_DEFAULT, dest, value, pe); \
}									\
TYPE shmem_ctx_##NAME##_atomic_swap(shmem_ctx_t ctx, TYPE *dest,	\
				    TYPE value, int pe)			\
{									\
	TYPE old;							\
									\
	__atomic_exchange(TARGET("shmem_" #NAME "_atomic_swap", TYPE, ctx, \
				 dest, pe), &value, &old, ORDER);	\
	return old;							\
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

/* One fetching read-modify-write op (add, and, or, xor) and its forms. */
#define DEFINE_RMW(TYPE, NAME, OP, BUILTIN)				\
TYPE shmem_ctx_##NAME##_atomic_fetch_##OP(shmem_ctx_t ctx, TYPE *dest,	\
					  TYPE value, int pe)		\
{									\
	return BUILTIN(TARGET("shmem_" #NAME "_atomic_fetch_" #OP, TYPE, \
			      ctx, dest, pe), value, ORDER);		\
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
	BUILTIN(TARGET("shmem_" #NAME "_atomic_" #OP, TYPE, ctx, dest, pe), \
		value, ORDER);						\
}									\
void shmem_##NAME##_atomic_##OP(TYPE *dest, TYPE value, int pe)		\
{									\
	shmem_ctx_##NAME##_atomic_##OP(SHMEM_CTX_DEFAULT, dest, value, pe); \
}

#define DEFINE_AMO(TYPE, NAME)						\
	DEFINE_RMW(TYPE, NAME, add, __atomic_fetch_add)			\
TYPE shmem_ctx_##NAME##_atomic_compare_swap(shmem_ctx_t ctx, TYPE *dest, \
					    TYPE cond, TYPE value, int pe) \
{									\
	/* On failure @cond receives the value found: the result either way. */ \
	__atomic_compare_exchange_n(TARGET("shmem_" #NAME "_atomic_compare_swap", \
					   TYPE, ctx, dest, pe),	\
				    &cond, value, false, ORDER, ORDER);	\
	return cond;							\
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
	DEFINE_RMW(TYPE, NAME, and, __atomic_fetch_and)			\
	DEFINE_RMW(TYPE, NAME, or, __atomic_fetch_or)			\
	DEFINE_RMW(TYPE, NAME, xor, __atomic_fetch_xor)
HMC_SHMEM_BITWISE_AMO_TYPES(DEFINE_BITWISE)
