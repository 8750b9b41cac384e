// SPDX-License-Identifier: MIT
/*
 * The deprecated interfaces OpenSHMEM 1.5 still lists, each the routine
 * that replaced it (shmem.h says which are which). The cache routines
 * have nothing to do: every PE's view of symmetric memory is coherent.
 * Names that shmem.h also defines as C11 generic macros are parenthesized
 * so that the macros do not expand.
 */
#include "internal.h"

void start_pes(int npes)
{
	shmem_init();
}

int _my_pe(void)
{
	return shmem_my_pe();
}

int _num_pes(void)
{
	return shmem_n_pes();
}

void *shmalloc(size_t size)
{
	return shmem_malloc(size);
}

void shfree(void *ptr)
{
	shmem_free(ptr);
}

void *shrealloc(void *ptr, size_t size)
{
	return shmem_realloc(ptr, size);
}

void *shmemalign(size_t alignment, size_t size)
{
	return shmem_align(alignment, size);
}

void shmem_clear_cache_inv(void)
{
}

void shmem_set_cache_inv(void)
{
}

void shmem_clear_cache_line_inv(void *dest)
{
}

void shmem_set_cache_line_inv(void *dest)
{
}

void shmem_udcflush(void)
{
}

void shmem_udcflush_line(void *dest)
{
}

#define DEFINE_OLD_EXT_AMO(TYPE, NAME)					\
TYPE shmem_##NAME##_fetch(const TYPE *source, int pe)			\
{									\
	return shmem_##NAME##_atomic_fetch(source, pe);			\
}									\
void shmem_##NAME##_set(TYPE *dest, TYPE value, int pe)			\
{									\
	shmem_##NAME##_atomic_set(dest, value, pe);			\
}									\
TYPE shmem_##NAME##_swap(TYPE *dest, TYPE value, int pe)		\
{									\
	return shmem_##NAME##_atomic_swap(dest, value, pe);		\
}
HMC_SHMEM_OLD_EXT_AMO_TYPES(DEFINE_OLD_EXT_AMO)

#define DEFINE_OLD_AMO(TYPE, NAME)					\
TYPE shmem_##NAME##_cswap(TYPE *dest, TYPE cond, TYPE value, int pe)	\
{									\
	return shmem_##NAME##_atomic_compare_swap(dest, cond, value, pe); \
}									\
TYPE shmem_##NAME##_finc(TYPE *dest, int pe)				\
{									\
	return shmem_##NAME##_atomic_fetch_inc(dest, pe);		\
}									\
void shmem_##NAME##_inc(TYPE *dest, int pe)				\
{									\
	shmem_##NAME##_atomic_inc(dest, pe);				\
}									\
TYPE shmem_##NAME##_fadd(TYPE *dest, TYPE value, int pe)		\
{									\
	return shmem_##NAME##_atomic_fetch_add(dest, value, pe);	\
}									\
void shmem_##NAME##_add(TYPE *dest, TYPE value, int pe)			\
{									\
	shmem_##NAME##_atomic_add(dest, value, pe);			\
}
HMC_SHMEM_OLD_AMO_TYPES(DEFINE_OLD_AMO)

long (shmem_swap)(long *dest, long value, int pe)
{
	return shmem_long_atomic_swap(dest, value, pe);
}

/* The replacements read *ivar with atomic loads: dropping volatile is safe. */
#define DEFINE_OLD_WAIT(TYPE, NAME)					\
void shmem_##NAME##_wait(volatile TYPE *ivar, TYPE cmp_value)		\
{									\
	shmem_##NAME##_wait_until((TYPE *)ivar, SHMEM_CMP_NE, cmp_value); \
}
HMC_SHMEM_OLD_WAIT_TYPES(DEFINE_OLD_WAIT)

void (shmem_wait)(volatile long *ivar, long cmp_value)
{
	shmem_long_wait_until((long *)ivar, SHMEM_CMP_NE, cmp_value);
}

void (shmem_wait_until)(long *ivar, int cmp, long cmp_value)
{
	shmem_long_wait_until(ivar, cmp, cmp_value);
}
