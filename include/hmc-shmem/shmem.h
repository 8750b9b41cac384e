/* SPDX-License-Identifier: MIT */
/*
 * OpenSHMEM 1.5 on HMC.
 *
 * The names, types and constants are the standard's; constant values and
 * handle representations are this implementation's. Typed routines are
 * declared from the standard's type tables below (HMC_SHMEM_*_TYPES), one
 * X-macro per table, so that every table is written once.
 */
#ifndef HMC_SHMEM_SHMEM_H
#define HMC_SHMEM_SHMEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------------------------
 * Library constants.
 */
#define SHMEM_MAJOR_VERSION		1
#define SHMEM_MINOR_VERSION		5
#define SHMEM_MAX_NAME_LEN		256
#define SHMEM_VENDOR_STRING		"HMC OpenSHMEM"

#define SHMEM_THREAD_SINGLE		0
#define SHMEM_THREAD_FUNNELED		1
#define SHMEM_THREAD_SERIALIZED		2
#define SHMEM_THREAD_MULTIPLE		3

#define SHMEM_CMP_EQ			0
#define SHMEM_CMP_NE			1
#define SHMEM_CMP_GT			2
#define SHMEM_CMP_GE			3
#define SHMEM_CMP_LT			4
#define SHMEM_CMP_LE			5

#define SHMEM_SIGNAL_SET		0
#define SHMEM_SIGNAL_ADD		1

#define SHMEM_CTX_SERIALIZED		(1L << 0)
#define SHMEM_CTX_PRIVATE		(1L << 1)
#define SHMEM_CTX_NOSTORE		(1L << 2)

#define SHMEM_MALLOC_ATOMICS_REMOTE	(1L << 0)
#define SHMEM_MALLOC_SIGNAL_REMOTE	(1L << 1)

#define SHMEM_TEAM_NUM_CONTEXTS		(1L << 0)

/*
 * pSync arrays of the active-set routines hold one counter per round of a
 * dissemination barrier, one arrival counter per member of a small group,
 * and an inbox through which small groups exchange small reductions in
 * one step; every routine uses the same layout, so one size serves them
 * all.
 */
#define SHMEM_SYNC_VALUE		0L
#define SHMEM_SYNC_SIZE			560
#define SHMEM_BCAST_SYNC_SIZE		SHMEM_SYNC_SIZE
#define SHMEM_BARRIER_SYNC_SIZE		SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_SYNC_SIZE		SHMEM_SYNC_SIZE
#define SHMEM_COLLECT_SYNC_SIZE		SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALL_SYNC_SIZE	SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALLS_SYNC_SIZE	SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE	1

/* ----------------------------------------------------------------------
 * Handles.
 */
typedef struct hmc_shmem_team *shmem_team_t;
typedef struct hmc_shmem_ctx *shmem_ctx_t;

typedef struct {
	int num_contexts;
} shmem_team_config_t;

extern struct hmc_shmem_team hmc_shmem_team_world;
extern struct hmc_shmem_team hmc_shmem_team_shared;
extern struct hmc_shmem_ctx hmc_shmem_ctx_default;

#define SHMEM_TEAM_WORLD		(&hmc_shmem_team_world)
#define SHMEM_TEAM_SHARED		(&hmc_shmem_team_shared)
#define SHMEM_TEAM_INVALID		((shmem_team_t)0)
#define SHMEM_CTX_DEFAULT		(&hmc_shmem_ctx_default)
#define SHMEM_CTX_INVALID		((shmem_ctx_t)0)

/* ----------------------------------------------------------------------
 * The standard's type tables: X(TYPE, TYPENAME).
 */
#define HMC_SHMEM_INT_TYPES(X)						\
	X(int, int) X(long, long) X(long long, longlong)		\
	X(unsigned int, uint) X(unsigned long, ulong)			\
	X(unsigned long long, ulonglong)				\
	X(int32_t, int32) X(int64_t, int64)				\
	X(uint32_t, uint32) X(uint64_t, uint64)				\
	X(size_t, size) X(ptrdiff_t, ptrdiff)

/* Table 5: standard RMA types. */
#define HMC_SHMEM_RMA_TYPES(X)						\
	X(float, float) X(double, double) X(long double, longdouble)	\
	X(char, char) X(signed char, schar) X(short, short)		\
	X(int, int) X(long, long) X(long long, longlong)		\
	X(unsigned char, uchar) X(unsigned short, ushort)		\
	X(unsigned int, uint) X(unsigned long, ulong)			\
	X(unsigned long long, ulonglong)				\
	X(int8_t, int8) X(int16_t, int16) X(int32_t, int32)		\
	X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16)		\
	X(uint32_t, uint32) X(uint64_t, uint64)				\
	X(size_t, size) X(ptrdiff_t, ptrdiff)

/* Table 6: standard AMO types; extended adds float and double; bitwise. */
#define HMC_SHMEM_AMO_TYPES(X)		HMC_SHMEM_INT_TYPES(X)
#define HMC_SHMEM_EXT_AMO_TYPES(X)					\
	X(float, float) X(double, double) HMC_SHMEM_INT_TYPES(X)
#define HMC_SHMEM_BITWISE_AMO_TYPES(X)					\
	X(unsigned int, uint) X(unsigned long, ulong)			\
	X(unsigned long long, ulonglong)				\
	X(int32_t, int32) X(int64_t, int64)				\
	X(uint32_t, uint32) X(uint64_t, uint64)

/* Table 12: point-to-point synchronisation types. */
#define HMC_SHMEM_P2P_TYPES(X)						\
	X(short, short) X(unsigned short, ushort) HMC_SHMEM_INT_TYPES(X)

/* Table 10: reduction types. And, or and xor also take long long, which
 * has no intN_t name on LP64 (short, int and long reach int16..int64):
 * as in other implementations, and in the tests written for them. */
#define HMC_SHMEM_BITWISE_RED_TYPES(X)					\
	X(long long, longlong)						\
	X(unsigned char, uchar) X(unsigned short, ushort)		\
	X(unsigned int, uint) X(unsigned long, ulong)			\
	X(unsigned long long, ulonglong)				\
	X(int8_t, int8) X(int16_t, int16) X(int32_t, int32)		\
	X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16)		\
	X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)
#define HMC_SHMEM_MINMAX_RED_TYPES(X)					\
	X(char, char) X(signed char, schar) X(short, short)		\
	X(int, int) X(long, long) X(long long, longlong)		\
	X(ptrdiff_t, ptrdiff)						\
	X(unsigned char, uchar) X(unsigned short, ushort)		\
	X(unsigned int, uint) X(unsigned long, ulong)			\
	X(unsigned long long, ulonglong)				\
	X(int8_t, int8) X(int16_t, int16) X(int32_t, int32)		\
	X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16)		\
	X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)		\
	X(float, float) X(double, double) X(long double, longdouble)
#ifndef __cplusplus
#define HMC_SHMEM_ARITH_RED_TYPES(X)					\
	HMC_SHMEM_MINMAX_RED_TYPES(X)					\
	X(double _Complex, complexd) X(float _Complex, complexf)
#else
#define HMC_SHMEM_ARITH_RED_TYPES(X)	HMC_SHMEM_MINMAX_RED_TYPES(X)
#endif

/* Deprecated active-set reductions (TYPE_OP_to_all). */
#define HMC_SHMEM_TOALL_BITWISE_TYPES(X)				\
	X(short, short) X(int, int) X(long, long) X(long long, longlong)
#define HMC_SHMEM_TOALL_MINMAX_TYPES(X)					\
	HMC_SHMEM_TOALL_BITWISE_TYPES(X)				\
	X(float, float) X(double, double) X(long double, longdouble)
#ifndef __cplusplus
#define HMC_SHMEM_TOALL_ARITH_TYPES(X)					\
	HMC_SHMEM_TOALL_MINMAX_TYPES(X)					\
	X(double _Complex, complexd) X(float _Complex, complexf)
#else
#define HMC_SHMEM_TOALL_ARITH_TYPES(X)	HMC_SHMEM_TOALL_MINMAX_TYPES(X)
#endif

/* Sized RMA: X(BITS). */
#define HMC_SHMEM_SIZES(X)	X(8) X(16) X(32) X(64) X(128)

/* ----------------------------------------------------------------------
 * Library setup, exit and query.
 */
void shmem_init(void);
int shmem_init_thread(int requested, int *provided);
void shmem_query_thread(int *provided);
void shmem_finalize(void);
void shmem_global_exit(int status);
int shmem_my_pe(void);
int shmem_n_pes(void);
int shmem_pe_accessible(int pe);
int shmem_addr_accessible(const void *addr, int pe);
void *shmem_ptr(const void *dest, int pe);
void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe);
void shmem_info_get_version(int *major, int *minor);
void shmem_info_get_name(char *name);
/* Profiling control: no profiling library is attached, so every level
 * (0 off, 1 on, others implementation-defined) is accepted and ignored. */
void shmem_pcontrol(const int level, ...);

/* ----------------------------------------------------------------------
 * Memory management.
 */
void *shmem_malloc(size_t size);
void *shmem_calloc(size_t count, size_t size);
void *shmem_align(size_t alignment, size_t size);
void *shmem_realloc(void *ptr, size_t size);
void shmem_free(void *ptr);
void *shmem_malloc_with_hints(size_t size, long hints);

/* ----------------------------------------------------------------------
 * Teams.
 */
int shmem_team_my_pe(shmem_team_t team);
int shmem_team_n_pes(shmem_team_t team);
int shmem_team_get_config(shmem_team_t team, long config_mask,
			  shmem_team_config_t *config);
int shmem_team_translate_pe(shmem_team_t src_team, int src_pe,
			    shmem_team_t dest_team);
int shmem_team_split_strided(shmem_team_t parent_team, int start,
			     int stride, int size,
			     const shmem_team_config_t *config,
			     long config_mask, shmem_team_t *new_team);
int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
			const shmem_team_config_t *xaxis_config,
			long xaxis_mask, shmem_team_t *xaxis_team,
			const shmem_team_config_t *yaxis_config,
			long yaxis_mask, shmem_team_t *yaxis_team);
void shmem_team_destroy(shmem_team_t team);

/* ----------------------------------------------------------------------
 * Communication management (contexts).
 */
int shmem_ctx_create(long options, shmem_ctx_t *ctx);
int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx);
void shmem_ctx_destroy(shmem_ctx_t ctx);
int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team);

/* ----------------------------------------------------------------------
 * Remote memory access.
 */
#define HMC_SHMEM_DECL_RMA(TYPE, NAME)					\
void shmem_##NAME##_put(TYPE *dest, const TYPE *source, size_t nelems, int pe); \
void shmem_ctx_##NAME##_put(shmem_ctx_t ctx, TYPE *dest, const TYPE *source, \
			    size_t nelems, int pe);			\
void shmem_##NAME##_get(TYPE *dest, const TYPE *source, size_t nelems, int pe); \
void shmem_ctx_##NAME##_get(shmem_ctx_t ctx, TYPE *dest, const TYPE *source, \
			    size_t nelems, int pe);			\
void shmem_##NAME##_put_nbi(TYPE *dest, const TYPE *source, size_t nelems, \
			    int pe);					\
void shmem_ctx_##NAME##_put_nbi(shmem_ctx_t ctx, TYPE *dest,		\
				const TYPE *source, size_t nelems, int pe); \
void shmem_##NAME##_get_nbi(TYPE *dest, const TYPE *source, size_t nelems, \
			    int pe);					\
void shmem_ctx_##NAME##_get_nbi(shmem_ctx_t ctx, TYPE *dest,		\
				const TYPE *source, size_t nelems, int pe); \
void shmem_##NAME##_p(TYPE *dest, TYPE value, int pe);			\
void shmem_ctx_##NAME##_p(shmem_ctx_t ctx, TYPE *dest, TYPE value, int pe); \
TYPE shmem_##NAME##_g(const TYPE *source, int pe);			\
TYPE shmem_ctx_##NAME##_g(shmem_ctx_t ctx, const TYPE *source, int pe);	\
void shmem_##NAME##_iput(TYPE *dest, const TYPE *source, ptrdiff_t dst, \
			 ptrdiff_t sst, size_t nelems, int pe);		\
void shmem_ctx_##NAME##_iput(shmem_ctx_t ctx, TYPE *dest,		\
			     const TYPE *source, ptrdiff_t dst,		\
			     ptrdiff_t sst, size_t nelems, int pe);	\
void shmem_##NAME##_iget(TYPE *dest, const TYPE *source, ptrdiff_t dst, \
			 ptrdiff_t sst, size_t nelems, int pe);		\
void shmem_ctx_##NAME##_iget(shmem_ctx_t ctx, TYPE *dest,		\
			     const TYPE *source, ptrdiff_t dst,		\
			     ptrdiff_t sst, size_t nelems, int pe);	\
void shmem_##NAME##_put_signal(TYPE *dest, const TYPE *source,		\
			       size_t nelems, uint64_t *sig_addr,	\
			       uint64_t signal, int sig_op, int pe);	\
void shmem_ctx_##NAME##_put_signal(shmem_ctx_t ctx, TYPE *dest,	\
				   const TYPE *source, size_t nelems,	\
				   uint64_t *sig_addr, uint64_t signal,	\
				   int sig_op, int pe);			\
void shmem_##NAME##_put_signal_nbi(TYPE *dest, const TYPE *source,	\
				   size_t nelems, uint64_t *sig_addr,	\
				   uint64_t signal, int sig_op, int pe); \
void shmem_ctx_##NAME##_put_signal_nbi(shmem_ctx_t ctx, TYPE *dest,	\
				       const TYPE *source, size_t nelems, \
				       uint64_t *sig_addr, uint64_t signal, \
				       int sig_op, int pe);
HMC_SHMEM_RMA_TYPES(HMC_SHMEM_DECL_RMA)
#undef HMC_SHMEM_DECL_RMA

#define HMC_SHMEM_DECL_SIZED(BITS)					\
void shmem_put##BITS(void *dest, const void *source, size_t nelems, int pe); \
void shmem_ctx_put##BITS(shmem_ctx_t ctx, void *dest, const void *source, \
			 size_t nelems, int pe);			\
void shmem_get##BITS(void *dest, const void *source, size_t nelems, int pe); \
void shmem_ctx_get##BITS(shmem_ctx_t ctx, void *dest, const void *source, \
			 size_t nelems, int pe);			\
void shmem_put##BITS##_nbi(void *dest, const void *source, size_t nelems, \
			   int pe);					\
void shmem_ctx_put##BITS##_nbi(shmem_ctx_t ctx, void *dest,		\
			       const void *source, size_t nelems, int pe); \
void shmem_get##BITS##_nbi(void *dest, const void *source, size_t nelems, \
			   int pe);					\
void shmem_ctx_get##BITS##_nbi(shmem_ctx_t ctx, void *dest,		\
			       const void *source, size_t nelems, int pe); \
void shmem_iput##BITS(void *dest, const void *source, ptrdiff_t dst,	\
		      ptrdiff_t sst, size_t nelems, int pe);		\
void shmem_ctx_iput##BITS(shmem_ctx_t ctx, void *dest,			\
			  const void *source, ptrdiff_t dst,		\
			  ptrdiff_t sst, size_t nelems, int pe);	\
void shmem_iget##BITS(void *dest, const void *source, ptrdiff_t dst,	\
		      ptrdiff_t sst, size_t nelems, int pe);		\
void shmem_ctx_iget##BITS(shmem_ctx_t ctx, void *dest,			\
			  const void *source, ptrdiff_t dst,		\
			  ptrdiff_t sst, size_t nelems, int pe);	\
void shmem_put##BITS##_signal(void *dest, const void *source,		\
			      size_t nelems, uint64_t *sig_addr,	\
			      uint64_t signal, int sig_op, int pe);	\
void shmem_ctx_put##BITS##_signal(shmem_ctx_t ctx, void *dest,		\
				  const void *source, size_t nelems,	\
				  uint64_t *sig_addr, uint64_t signal,	\
				  int sig_op, int pe);			\
void shmem_put##BITS##_signal_nbi(void *dest, const void *source,	\
				  size_t nelems, uint64_t *sig_addr,	\
				  uint64_t signal, int sig_op, int pe);	\
void shmem_ctx_put##BITS##_signal_nbi(shmem_ctx_t ctx, void *dest,	\
				      const void *source, size_t nelems, \
				      uint64_t *sig_addr, uint64_t signal, \
				      int sig_op, int pe);
HMC_SHMEM_SIZES(HMC_SHMEM_DECL_SIZED)
#undef HMC_SHMEM_DECL_SIZED

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_putmem(shmem_ctx_t ctx, void *dest, const void *source,
		      size_t nelems, int pe);
void shmem_getmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_getmem(shmem_ctx_t ctx, void *dest, const void *source,
		      size_t nelems, int pe);
void shmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_putmem_nbi(shmem_ctx_t ctx, void *dest, const void *source,
			  size_t nelems, int pe);
void shmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_getmem_nbi(shmem_ctx_t ctx, void *dest, const void *source,
			  size_t nelems, int pe);
void shmem_putmem_signal(void *dest, const void *source, size_t nelems,
			 uint64_t *sig_addr, uint64_t signal, int sig_op,
			 int pe);
void shmem_ctx_putmem_signal(shmem_ctx_t ctx, void *dest, const void *source,
			     size_t nelems, uint64_t *sig_addr,
			     uint64_t signal, int sig_op, int pe);
void shmem_putmem_signal_nbi(void *dest, const void *source, size_t nelems,
			     uint64_t *sig_addr, uint64_t signal, int sig_op,
			     int pe);
void shmem_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void *dest,
				 const void *source, size_t nelems,
				 uint64_t *sig_addr, uint64_t signal,
				 int sig_op, int pe);

/* Signals. */
uint64_t shmem_signal_fetch(const uint64_t *sig_addr);
uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp,
				 uint64_t cmp_value);

/* ----------------------------------------------------------------------
 * Atomic memory operations.
 */
#define HMC_SHMEM_DECL_EXT_AMO(TYPE, NAME)				\
TYPE shmem_##NAME##_atomic_fetch(const TYPE *source, int pe);		\
TYPE shmem_ctx_##NAME##_atomic_fetch(shmem_ctx_t ctx, const TYPE *source, \
				     int pe);				\
void shmem_##NAME##_atomic_fetch_nbi(TYPE *fetch, const TYPE *source,	\
				     int pe);				\
void shmem_ctx_##NAME##_atomic_fetch_nbi(shmem_ctx_t ctx, TYPE *fetch,	\
					 const TYPE *source, int pe);	\
void shmem_##NAME##_atomic_set(TYPE *dest, TYPE value, int pe);		\
void shmem_ctx_##NAME##_atomic_set(shmem_ctx_t ctx, TYPE *dest,		\
				   TYPE value, int pe);			\
TYPE shmem_##NAME##_atomic_swap(TYPE *dest, TYPE value, int pe);	\
TYPE shmem_ctx_##NAME##_atomic_swap(shmem_ctx_t ctx, TYPE *dest,	\
				    TYPE value, int pe);		\
void shmem_##NAME##_atomic_swap_nbi(TYPE *fetch, TYPE *dest, TYPE value, \
				    int pe);				\
void shmem_ctx_##NAME##_atomic_swap_nbi(shmem_ctx_t ctx, TYPE *fetch,	\
					TYPE *dest, TYPE value, int pe);
HMC_SHMEM_EXT_AMO_TYPES(HMC_SHMEM_DECL_EXT_AMO)
#undef HMC_SHMEM_DECL_EXT_AMO

#define HMC_SHMEM_DECL_AMO(TYPE, NAME)					\
TYPE shmem_##NAME##_atomic_compare_swap(TYPE *dest, TYPE cond, TYPE value, \
					int pe);			\
TYPE shmem_ctx_##NAME##_atomic_compare_swap(shmem_ctx_t ctx, TYPE *dest, \
					    TYPE cond, TYPE value, int pe); \
void shmem_##NAME##_atomic_compare_swap_nbi(TYPE *fetch, TYPE *dest,	\
					    TYPE cond, TYPE value, int pe); \
void shmem_ctx_##NAME##_atomic_compare_swap_nbi(shmem_ctx_t ctx,	\
						TYPE *fetch, TYPE *dest, \
						TYPE cond, TYPE value,	\
						int pe);		\
TYPE shmem_##NAME##_atomic_fetch_inc(TYPE *dest, int pe);		\
TYPE shmem_ctx_##NAME##_atomic_fetch_inc(shmem_ctx_t ctx, TYPE *dest,	\
					 int pe);			\
void shmem_##NAME##_atomic_fetch_inc_nbi(TYPE *fetch, TYPE *dest, int pe); \
void shmem_ctx_##NAME##_atomic_fetch_inc_nbi(shmem_ctx_t ctx, TYPE *fetch, \
					     TYPE *dest, int pe);	\
void shmem_##NAME##_atomic_inc(TYPE *dest, int pe);			\
void shmem_ctx_##NAME##_atomic_inc(shmem_ctx_t ctx, TYPE *dest, int pe); \
TYPE shmem_##NAME##_atomic_fetch_add(TYPE *dest, TYPE value, int pe);	\
TYPE shmem_ctx_##NAME##_atomic_fetch_add(shmem_ctx_t ctx, TYPE *dest,	\
					 TYPE value, int pe);		\
void shmem_##NAME##_atomic_fetch_add_nbi(TYPE *fetch, TYPE *dest,	\
					 TYPE value, int pe);		\
void shmem_ctx_##NAME##_atomic_fetch_add_nbi(shmem_ctx_t ctx, TYPE *fetch, \
					     TYPE *dest, TYPE value,	\
					     int pe);			\
void shmem_##NAME##_atomic_add(TYPE *dest, TYPE value, int pe);		\
void shmem_ctx_##NAME##_atomic_add(shmem_ctx_t ctx, TYPE *dest,		\
				   TYPE value, int pe);
HMC_SHMEM_AMO_TYPES(HMC_SHMEM_DECL_AMO)
#undef HMC_SHMEM_DECL_AMO

#define HMC_SHMEM_DECL_BITWISE_AMO_OP(TYPE, NAME, OP)			\
TYPE shmem_##NAME##_atomic_fetch_##OP(TYPE *dest, TYPE value, int pe);	\
TYPE shmem_ctx_##NAME##_atomic_fetch_##OP(shmem_ctx_t ctx, TYPE *dest,	\
					  TYPE value, int pe);		\
void shmem_##NAME##_atomic_fetch_##OP##_nbi(TYPE *fetch, TYPE *dest,	\
					    TYPE value, int pe);	\
void shmem_ctx_##NAME##_atomic_fetch_##OP##_nbi(shmem_ctx_t ctx,	\
						TYPE *fetch, TYPE *dest, \
						TYPE value, int pe);	\
void shmem_##NAME##_atomic_##OP(TYPE *dest, TYPE value, int pe);	\
void shmem_ctx_##NAME##_atomic_##OP(shmem_ctx_t ctx, TYPE *dest,	\
				    TYPE value, int pe);
#define HMC_SHMEM_DECL_BITWISE_AMO(TYPE, NAME)				\
	HMC_SHMEM_DECL_BITWISE_AMO_OP(TYPE, NAME, and)			\
	HMC_SHMEM_DECL_BITWISE_AMO_OP(TYPE, NAME, or)			\
	HMC_SHMEM_DECL_BITWISE_AMO_OP(TYPE, NAME, xor)
HMC_SHMEM_BITWISE_AMO_TYPES(HMC_SHMEM_DECL_BITWISE_AMO)
#undef HMC_SHMEM_DECL_BITWISE_AMO
#undef HMC_SHMEM_DECL_BITWISE_AMO_OP

/* ----------------------------------------------------------------------
 * Collectives.
 */
void shmem_barrier_all(void);
void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync);
void shmem_sync_all(void);
void shmem_sync(int PE_start, int logPE_stride, int PE_size, long *pSync);
int shmem_team_sync(shmem_team_t team);

#define HMC_SHMEM_DECL_COLL(TYPE, NAME)					\
int shmem_##NAME##_broadcast(shmem_team_t team, TYPE *dest,		\
			     const TYPE *source, size_t nelems, int PE_root); \
int shmem_##NAME##_collect(shmem_team_t team, TYPE *dest,		\
			   const TYPE *source, size_t nelems);		\
int shmem_##NAME##_fcollect(shmem_team_t team, TYPE *dest,		\
			    const TYPE *source, size_t nelems);		\
int shmem_##NAME##_alltoall(shmem_team_t team, TYPE *dest,		\
			    const TYPE *source, size_t nelems);		\
int shmem_##NAME##_alltoalls(shmem_team_t team, TYPE *dest,		\
			     const TYPE *source, ptrdiff_t dst,		\
			     ptrdiff_t sst, size_t nelems);
HMC_SHMEM_RMA_TYPES(HMC_SHMEM_DECL_COLL)
#undef HMC_SHMEM_DECL_COLL

int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source,
		       size_t nelems, int PE_root);
int shmem_collectmem(shmem_team_t team, void *dest, const void *source,
		     size_t nelems);
int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source,
		      size_t nelems);
int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source,
		      size_t nelems);
int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source,
		       ptrdiff_t dst, ptrdiff_t sst, size_t nelems);

#define HMC_SHMEM_DECL_REDUCE(TYPE, NAME, OP)				\
int shmem_##NAME##_##OP##_reduce(shmem_team_t team, TYPE *dest,		\
				 const TYPE *source, size_t nreduce);
#define HMC_SHMEM_DECL_RED_BITWISE(TYPE, NAME)				\
	HMC_SHMEM_DECL_REDUCE(TYPE, NAME, and)				\
	HMC_SHMEM_DECL_REDUCE(TYPE, NAME, or)				\
	HMC_SHMEM_DECL_REDUCE(TYPE, NAME, xor)
#define HMC_SHMEM_DECL_RED_MINMAX(TYPE, NAME)				\
	HMC_SHMEM_DECL_REDUCE(TYPE, NAME, max)				\
	HMC_SHMEM_DECL_REDUCE(TYPE, NAME, min)
#define HMC_SHMEM_DECL_RED_ARITH(TYPE, NAME)				\
	HMC_SHMEM_DECL_REDUCE(TYPE, NAME, sum)				\
	HMC_SHMEM_DECL_REDUCE(TYPE, NAME, prod)
HMC_SHMEM_BITWISE_RED_TYPES(HMC_SHMEM_DECL_RED_BITWISE)
HMC_SHMEM_MINMAX_RED_TYPES(HMC_SHMEM_DECL_RED_MINMAX)
HMC_SHMEM_ARITH_RED_TYPES(HMC_SHMEM_DECL_RED_ARITH)
#undef HMC_SHMEM_DECL_RED_BITWISE
#undef HMC_SHMEM_DECL_RED_MINMAX
#undef HMC_SHMEM_DECL_RED_ARITH
#undef HMC_SHMEM_DECL_REDUCE

/* Deprecated active-set collectives that 1.5 still defines. */
void shmem_broadcast32(void *dest, const void *source, size_t nelems,
		       int PE_root, int PE_start, int logPE_stride,
		       int PE_size, long *pSync);
void shmem_broadcast64(void *dest, const void *source, size_t nelems,
		       int PE_root, int PE_start, int logPE_stride,
		       int PE_size, long *pSync);
void shmem_collect32(void *dest, const void *source, size_t nelems,
		     int PE_start, int logPE_stride, int PE_size, long *pSync);
void shmem_collect64(void *dest, const void *source, size_t nelems,
		     int PE_start, int logPE_stride, int PE_size, long *pSync);
void shmem_fcollect32(void *dest, const void *source, size_t nelems,
		      int PE_start, int logPE_stride, int PE_size,
		      long *pSync);
void shmem_fcollect64(void *dest, const void *source, size_t nelems,
		      int PE_start, int logPE_stride, int PE_size,
		      long *pSync);
void shmem_alltoall32(void *dest, const void *source, size_t nelems,
		      int PE_start, int logPE_stride, int PE_size,
		      long *pSync);
void shmem_alltoall64(void *dest, const void *source, size_t nelems,
		      int PE_start, int logPE_stride, int PE_size,
		      long *pSync);
void shmem_alltoalls32(void *dest, const void *source, ptrdiff_t dst,
		       ptrdiff_t sst, size_t nelems, int PE_start,
		       int logPE_stride, int PE_size, long *pSync);
void shmem_alltoalls64(void *dest, const void *source, ptrdiff_t dst,
		       ptrdiff_t sst, size_t nelems, int PE_start,
		       int logPE_stride, int PE_size, long *pSync);

#define HMC_SHMEM_DECL_TOALL(TYPE, NAME, OP)				\
void shmem_##NAME##_##OP##_to_all(TYPE *dest, const TYPE *source,	\
				  int nreduce, int PE_start,		\
				  int logPE_stride, int PE_size,	\
				  TYPE *pWrk, long *pSync);
#define HMC_SHMEM_DECL_TOALL_BITWISE(TYPE, NAME)			\
	HMC_SHMEM_DECL_TOALL(TYPE, NAME, and)				\
	HMC_SHMEM_DECL_TOALL(TYPE, NAME, or)				\
	HMC_SHMEM_DECL_TOALL(TYPE, NAME, xor)
#define HMC_SHMEM_DECL_TOALL_MINMAX(TYPE, NAME)				\
	HMC_SHMEM_DECL_TOALL(TYPE, NAME, max)				\
	HMC_SHMEM_DECL_TOALL(TYPE, NAME, min)
#define HMC_SHMEM_DECL_TOALL_ARITH(TYPE, NAME)				\
	HMC_SHMEM_DECL_TOALL(TYPE, NAME, sum)				\
	HMC_SHMEM_DECL_TOALL(TYPE, NAME, prod)
HMC_SHMEM_TOALL_BITWISE_TYPES(HMC_SHMEM_DECL_TOALL_BITWISE)
HMC_SHMEM_TOALL_MINMAX_TYPES(HMC_SHMEM_DECL_TOALL_MINMAX)
HMC_SHMEM_TOALL_ARITH_TYPES(HMC_SHMEM_DECL_TOALL_ARITH)
#undef HMC_SHMEM_DECL_TOALL_BITWISE
#undef HMC_SHMEM_DECL_TOALL_MINMAX
#undef HMC_SHMEM_DECL_TOALL_ARITH
#undef HMC_SHMEM_DECL_TOALL

/* ----------------------------------------------------------------------
 * Point-to-point synchronisation.
 */
#define HMC_SHMEM_DECL_P2P(TYPE, NAME)					\
void shmem_##NAME##_wait_until(TYPE *ivar, int cmp, TYPE cmp_value);	\
size_t shmem_##NAME##_wait_until_all(TYPE *ivars, size_t nelems,	\
				     const int *status, int cmp,	\
				     TYPE cmp_value);			\
size_t shmem_##NAME##_wait_until_any(TYPE *ivars, size_t nelems,	\
				     const int *status, int cmp,	\
				     TYPE cmp_value);			\
size_t shmem_##NAME##_wait_until_some(TYPE *ivars, size_t nelems,	\
				      size_t *indices, const int *status, \
				      int cmp, TYPE cmp_value);		\
void shmem_##NAME##_wait_until_all_vector(TYPE *ivars, size_t nelems,	\
					  const int *status, int cmp,	\
					  TYPE *cmp_values);		\
size_t shmem_##NAME##_wait_until_any_vector(TYPE *ivars, size_t nelems, \
					    const int *status, int cmp,	\
					    TYPE *cmp_values);		\
size_t shmem_##NAME##_wait_until_some_vector(TYPE *ivars, size_t nelems, \
					     size_t *indices,		\
					     const int *status, int cmp, \
					     TYPE *cmp_values);		\
int shmem_##NAME##_test(TYPE *ivar, int cmp, TYPE cmp_value);		\
int shmem_##NAME##_test_all(TYPE *ivars, size_t nelems, const int *status, \
			    int cmp, TYPE cmp_value);			\
size_t shmem_##NAME##_test_any(TYPE *ivars, size_t nelems,		\
			       const int *status, int cmp, TYPE cmp_value); \
size_t shmem_##NAME##_test_some(TYPE *ivars, size_t nelems,		\
				size_t *indices, const int *status,	\
				int cmp, TYPE cmp_value);		\
int shmem_##NAME##_test_all_vector(TYPE *ivars, size_t nelems,		\
				   const int *status, int cmp,		\
				   TYPE *cmp_values);			\
size_t shmem_##NAME##_test_any_vector(TYPE *ivars, size_t nelems,	\
				      const int *status, int cmp,	\
				      TYPE *cmp_values);		\
size_t shmem_##NAME##_test_some_vector(TYPE *ivars, size_t nelems,	\
				       size_t *indices, const int *status, \
				       int cmp, TYPE *cmp_values);
HMC_SHMEM_P2P_TYPES(HMC_SHMEM_DECL_P2P)
#undef HMC_SHMEM_DECL_P2P

/* ----------------------------------------------------------------------
 * Memory ordering.
 */
void shmem_fence(void);
void shmem_ctx_fence(shmem_ctx_t ctx);
void shmem_quiet(void);
void shmem_ctx_quiet(shmem_ctx_t ctx);

/* ----------------------------------------------------------------------
 * Distributed locking.
 */
void shmem_set_lock(long *lock);
void shmem_clear_lock(long *lock);
int shmem_test_lock(long *lock);

/* ----------------------------------------------------------------------
 * Deprecated API that OpenSHMEM 1.5 still lists (its annex of deprecated
 * interfaces), for the many programs and test suites written against
 * 1.0-1.3: the _SHMEM_ constants, start_pes, shmalloc and friends, the
 * old AMO and wait names, and the cache routines (no-ops: every mapping
 * here is cache coherent).
 */
#define _SHMEM_MAJOR_VERSION		SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION		SHMEM_MINOR_VERSION
#define _SHMEM_MAX_NAME_LEN		SHMEM_MAX_NAME_LEN
#define _SHMEM_VENDOR_STRING		SHMEM_VENDOR_STRING
#define _SHMEM_CMP_EQ			SHMEM_CMP_EQ
#define _SHMEM_CMP_NE			SHMEM_CMP_NE
#define _SHMEM_CMP_GT			SHMEM_CMP_GT
#define _SHMEM_CMP_GE			SHMEM_CMP_GE
#define _SHMEM_CMP_LT			SHMEM_CMP_LT
#define _SHMEM_CMP_LE			SHMEM_CMP_LE
#define _SHMEM_SYNC_VALUE		SHMEM_SYNC_VALUE
#define _SHMEM_BCAST_SYNC_SIZE		SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_BARRIER_SYNC_SIZE	SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE		SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE	SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE	SHMEM_REDUCE_MIN_WRKDATA_SIZE

void start_pes(int npes);
int _my_pe(void);
int _num_pes(void);
void *shmalloc(size_t size);
void shfree(void *ptr);
void *shrealloc(void *ptr, size_t size);
void *shmemalign(size_t alignment, size_t size);

void shmem_clear_cache_inv(void);
void shmem_set_cache_inv(void);
void shmem_clear_cache_line_inv(void *dest);
void shmem_set_cache_line_inv(void *dest);
void shmem_udcflush(void);
void shmem_udcflush_line(void *dest);

/* Old AMO names: fetch, set, swap on these; the others on the integers. */
#define HMC_SHMEM_OLD_EXT_AMO_TYPES(X)					\
	X(float, float) X(double, double) HMC_SHMEM_OLD_AMO_TYPES(X)
#define HMC_SHMEM_OLD_AMO_TYPES(X)					\
	X(int, int) X(long, long) X(long long, longlong)
#define HMC_SHMEM_DECL_OLD_EXT_AMO(TYPE, NAME)				\
TYPE shmem_##NAME##_fetch(const TYPE *source, int pe);			\
void shmem_##NAME##_set(TYPE *dest, TYPE value, int pe);		\
TYPE shmem_##NAME##_swap(TYPE *dest, TYPE value, int pe);
#define HMC_SHMEM_DECL_OLD_AMO(TYPE, NAME)				\
TYPE shmem_##NAME##_cswap(TYPE *dest, TYPE cond, TYPE value, int pe);	\
TYPE shmem_##NAME##_finc(TYPE *dest, int pe);				\
void shmem_##NAME##_inc(TYPE *dest, int pe);				\
TYPE shmem_##NAME##_fadd(TYPE *dest, TYPE value, int pe);		\
void shmem_##NAME##_add(TYPE *dest, TYPE value, int pe);
HMC_SHMEM_OLD_EXT_AMO_TYPES(HMC_SHMEM_DECL_OLD_EXT_AMO)
HMC_SHMEM_OLD_AMO_TYPES(HMC_SHMEM_DECL_OLD_AMO)
#undef HMC_SHMEM_DECL_OLD_EXT_AMO
#undef HMC_SHMEM_DECL_OLD_AMO
long shmem_swap(long *dest, long value, int pe);

/* Old waits: until *ivar differs from cmp_value, and the untyped long form;
 * 1.0-1.3 declared ivar volatile, as the flags of their programs are. */
#define HMC_SHMEM_OLD_WAIT_TYPES(X)					\
	X(short, short) X(int, int) X(long, long) X(long long, longlong)
#define HMC_SHMEM_DECL_OLD_WAIT(TYPE, NAME)				\
void shmem_##NAME##_wait(volatile TYPE *ivar, TYPE cmp_value);
HMC_SHMEM_OLD_WAIT_TYPES(HMC_SHMEM_DECL_OLD_WAIT)
#undef HMC_SHMEM_DECL_OLD_WAIT
void shmem_wait(volatile long *ivar, long cmp_value);
/* With C11 the generic shmem_wait_until below takes a long * the same way. */
void shmem_wait_until(long *ivar, int cmp, long cmp_value);

/* ----------------------------------------------------------------------
 * C11 generic bindings: shmem_put(dest, source, nelems, pe) and the other
 * type-generic names, with an optional leading context for RMA and AMOs.
 * Dispatch is on the standard C types (the intN_t and size_t routines are
 * the same types under other names); an unsupported type fails to build.
 */
#if !defined(__cplusplus) && defined(__STDC_VERSION__) && \
	__STDC_VERSION__ >= 201112L && !defined(HMC_SHMEM_NO_GENERIC)

/* Declared, never defined: selecting it is a compile or link error. */
void hmc_shmem_generic_unsupported(void);

#define HMC_SHMEM_ARG1(a, ...)		a
#define HMC_SHMEM_ARG2(a, b, ...)	b

#define HMC_SHMEM_G_RMA(PFX, SFX)					\
	char *: PFX##char##SFX, const char *: PFX##char##SFX,	\
	signed char *: PFX##schar##SFX, const signed char *: PFX##schar##SFX,	\
	short *: PFX##short##SFX, const short *: PFX##short##SFX,	\
	int *: PFX##int##SFX, const int *: PFX##int##SFX,	\
	long *: PFX##long##SFX, const long *: PFX##long##SFX,	\
	long long *: PFX##longlong##SFX, const long long *: PFX##longlong##SFX,	\
	unsigned char *: PFX##uchar##SFX, const unsigned char *: PFX##uchar##SFX,	\
	unsigned short *: PFX##ushort##SFX, const unsigned short *: PFX##ushort##SFX,	\
	unsigned int *: PFX##uint##SFX, const unsigned int *: PFX##uint##SFX,	\
	unsigned long *: PFX##ulong##SFX, const unsigned long *: PFX##ulong##SFX,	\
	unsigned long long *: PFX##ulonglong##SFX, const unsigned long long *: PFX##ulonglong##SFX,	\
	float *: PFX##float##SFX, const float *: PFX##float##SFX,	\
	double *: PFX##double##SFX, const double *: PFX##double##SFX,	\
	long double *: PFX##longdouble##SFX, const long double *: PFX##longdouble##SFX,	\
	default: hmc_shmem_generic_unsupported
#define HMC_SHMEM_G_STD(PFX, SFX)					\
	int *: PFX##int##SFX, const int *: PFX##int##SFX,	\
	long *: PFX##long##SFX, const long *: PFX##long##SFX,	\
	long long *: PFX##longlong##SFX, const long long *: PFX##longlong##SFX,	\
	unsigned int *: PFX##uint##SFX, const unsigned int *: PFX##uint##SFX,	\
	unsigned long *: PFX##ulong##SFX, const unsigned long *: PFX##ulong##SFX,	\
	unsigned long long *: PFX##ulonglong##SFX, const unsigned long long *: PFX##ulonglong##SFX,	\
	default: hmc_shmem_generic_unsupported
#define HMC_SHMEM_G_EXT(PFX, SFX)					\
	float *: PFX##float##SFX, const float *: PFX##float##SFX,	\
	double *: PFX##double##SFX, const double *: PFX##double##SFX,	\
	int *: PFX##int##SFX, const int *: PFX##int##SFX,	\
	long *: PFX##long##SFX, const long *: PFX##long##SFX,	\
	long long *: PFX##longlong##SFX, const long long *: PFX##longlong##SFX,	\
	unsigned int *: PFX##uint##SFX, const unsigned int *: PFX##uint##SFX,	\
	unsigned long *: PFX##ulong##SFX, const unsigned long *: PFX##ulong##SFX,	\
	unsigned long long *: PFX##ulonglong##SFX, const unsigned long long *: PFX##ulonglong##SFX,	\
	default: hmc_shmem_generic_unsupported
#define HMC_SHMEM_G_BIT(PFX, SFX)					\
	unsigned int *: PFX##uint##SFX, const unsigned int *: PFX##uint##SFX,	\
	unsigned long *: PFX##ulong##SFX, const unsigned long *: PFX##ulong##SFX,	\
	unsigned long long *: PFX##ulonglong##SFX, const unsigned long long *: PFX##ulonglong##SFX,	\
	int *: PFX##int32##SFX, const int *: PFX##int32##SFX,	\
	long *: PFX##int64##SFX, const long *: PFX##int64##SFX,	\
	default: hmc_shmem_generic_unsupported
#define HMC_SHMEM_G_P2P(PFX, SFX)					\
	short *: PFX##short##SFX, const short *: PFX##short##SFX,	\
	unsigned short *: PFX##ushort##SFX, const unsigned short *: PFX##ushort##SFX,	\
	int *: PFX##int##SFX, const int *: PFX##int##SFX,	\
	long *: PFX##long##SFX, const long *: PFX##long##SFX,	\
	long long *: PFX##longlong##SFX, const long long *: PFX##longlong##SFX,	\
	unsigned int *: PFX##uint##SFX, const unsigned int *: PFX##uint##SFX,	\
	unsigned long *: PFX##ulong##SFX, const unsigned long *: PFX##ulong##SFX,	\
	unsigned long long *: PFX##ulonglong##SFX, const unsigned long long *: PFX##ulonglong##SFX,	\
	default: hmc_shmem_generic_unsupported
#define HMC_SHMEM_G_WAIT(PFX, SFX)					\
	short *: PFX##short##SFX, volatile short *: PFX##short##SFX,	\
	int *: PFX##int##SFX, volatile int *: PFX##int##SFX,		\
	long *: PFX##long##SFX, volatile long *: PFX##long##SFX,	\
	long long *: PFX##longlong##SFX, volatile long long *: PFX##longlong##SFX, \
	default: hmc_shmem_generic_unsupported
#define HMC_SHMEM_G_RBIT(PFX, SFX)					\
	unsigned char *: PFX##uchar##SFX, const unsigned char *: PFX##uchar##SFX,	\
	unsigned short *: PFX##ushort##SFX, const unsigned short *: PFX##ushort##SFX,	\
	unsigned int *: PFX##uint##SFX, const unsigned int *: PFX##uint##SFX,	\
	unsigned long *: PFX##ulong##SFX, const unsigned long *: PFX##ulong##SFX,	\
	unsigned long long *: PFX##ulonglong##SFX, const unsigned long long *: PFX##ulonglong##SFX,	\
	signed char *: PFX##int8##SFX, const signed char *: PFX##int8##SFX,	\
	short *: PFX##int16##SFX, const short *: PFX##int16##SFX,	\
	int *: PFX##int32##SFX, const int *: PFX##int32##SFX,	\
	long *: PFX##int64##SFX, const long *: PFX##int64##SFX,	\
	long long *: PFX##longlong##SFX, const long long *: PFX##longlong##SFX,	\
	default: hmc_shmem_generic_unsupported
#define HMC_SHMEM_G_RMM(PFX, SFX)					\
	char *: PFX##char##SFX, const char *: PFX##char##SFX,	\
	signed char *: PFX##schar##SFX, const signed char *: PFX##schar##SFX,	\
	short *: PFX##short##SFX, const short *: PFX##short##SFX,	\
	int *: PFX##int##SFX, const int *: PFX##int##SFX,	\
	long *: PFX##long##SFX, const long *: PFX##long##SFX,	\
	long long *: PFX##longlong##SFX, const long long *: PFX##longlong##SFX,	\
	unsigned char *: PFX##uchar##SFX, const unsigned char *: PFX##uchar##SFX,	\
	unsigned short *: PFX##ushort##SFX, const unsigned short *: PFX##ushort##SFX,	\
	unsigned int *: PFX##uint##SFX, const unsigned int *: PFX##uint##SFX,	\
	unsigned long *: PFX##ulong##SFX, const unsigned long *: PFX##ulong##SFX,	\
	unsigned long long *: PFX##ulonglong##SFX, const unsigned long long *: PFX##ulonglong##SFX,	\
	float *: PFX##float##SFX, const float *: PFX##float##SFX,	\
	double *: PFX##double##SFX, const double *: PFX##double##SFX,	\
	long double *: PFX##longdouble##SFX, const long double *: PFX##longdouble##SFX,	\
	default: hmc_shmem_generic_unsupported
#define HMC_SHMEM_G_RAR(PFX, SFX)					\
	char *: PFX##char##SFX, const char *: PFX##char##SFX,	\
	signed char *: PFX##schar##SFX, const signed char *: PFX##schar##SFX,	\
	short *: PFX##short##SFX, const short *: PFX##short##SFX,	\
	int *: PFX##int##SFX, const int *: PFX##int##SFX,	\
	long *: PFX##long##SFX, const long *: PFX##long##SFX,	\
	long long *: PFX##longlong##SFX, const long long *: PFX##longlong##SFX,	\
	unsigned char *: PFX##uchar##SFX, const unsigned char *: PFX##uchar##SFX,	\
	unsigned short *: PFX##ushort##SFX, const unsigned short *: PFX##ushort##SFX,	\
	unsigned int *: PFX##uint##SFX, const unsigned int *: PFX##uint##SFX,	\
	unsigned long *: PFX##ulong##SFX, const unsigned long *: PFX##ulong##SFX,	\
	unsigned long long *: PFX##ulonglong##SFX, const unsigned long long *: PFX##ulonglong##SFX,	\
	float *: PFX##float##SFX, const float *: PFX##float##SFX,	\
	double *: PFX##double##SFX, const double *: PFX##double##SFX,	\
	long double *: PFX##longdouble##SFX, const long double *: PFX##longdouble##SFX,	\
	double _Complex *: PFX##complexd##SFX, const double _Complex *: PFX##complexd##SFX,	\
	float _Complex *: PFX##complexf##SFX, const float _Complex *: PFX##complexf##SFX,	\
	default: hmc_shmem_generic_unsupported

/* A leading shmem_ctx_t selects the shmem_ctx_ form, dispatched on the
 * second argument; otherwise the first argument picks the type. */
#define HMC_SHMEM_CTX_GENERIC(LIST, SFX, ...)				\
	_Generic((HMC_SHMEM_ARG1(__VA_ARGS__, 0)),			\
		 shmem_ctx_t: _Generic((HMC_SHMEM_ARG2(__VA_ARGS__, 0)), \
				       HMC_SHMEM_G_##LIST(shmem_ctx_, SFX)), \
		 default: _Generic((HMC_SHMEM_ARG1(__VA_ARGS__, 0)),	\
				   HMC_SHMEM_G_##LIST(shmem_, SFX)))(__VA_ARGS__)

#define shmem_put(...)	HMC_SHMEM_CTX_GENERIC(RMA, _put, __VA_ARGS__)
#define shmem_get(...)	HMC_SHMEM_CTX_GENERIC(RMA, _get, __VA_ARGS__)
#define shmem_p(...)	HMC_SHMEM_CTX_GENERIC(RMA, _p, __VA_ARGS__)
#define shmem_g(...)	HMC_SHMEM_CTX_GENERIC(RMA, _g, __VA_ARGS__)
#define shmem_iput(...)	HMC_SHMEM_CTX_GENERIC(RMA, _iput, __VA_ARGS__)
#define shmem_iget(...)	HMC_SHMEM_CTX_GENERIC(RMA, _iget, __VA_ARGS__)
#define shmem_put_nbi(...)	HMC_SHMEM_CTX_GENERIC(RMA, _put_nbi, __VA_ARGS__)
#define shmem_get_nbi(...)	HMC_SHMEM_CTX_GENERIC(RMA, _get_nbi, __VA_ARGS__)
#define shmem_put_signal(...)	HMC_SHMEM_CTX_GENERIC(RMA, _put_signal, __VA_ARGS__)
#define shmem_put_signal_nbi(...)	HMC_SHMEM_CTX_GENERIC(RMA, _put_signal_nbi, __VA_ARGS__)
#define shmem_atomic_fetch(...)	HMC_SHMEM_CTX_GENERIC(EXT, _atomic_fetch, __VA_ARGS__)
#define shmem_atomic_set(...)	HMC_SHMEM_CTX_GENERIC(EXT, _atomic_set, __VA_ARGS__)
#define shmem_atomic_swap(...)	HMC_SHMEM_CTX_GENERIC(EXT, _atomic_swap, __VA_ARGS__)
#define shmem_atomic_compare_swap(...)	HMC_SHMEM_CTX_GENERIC(STD, _atomic_compare_swap, __VA_ARGS__)
#define shmem_atomic_fetch_inc(...)	HMC_SHMEM_CTX_GENERIC(STD, _atomic_fetch_inc, __VA_ARGS__)
#define shmem_atomic_inc(...)	HMC_SHMEM_CTX_GENERIC(STD, _atomic_inc, __VA_ARGS__)
#define shmem_atomic_fetch_add(...)	HMC_SHMEM_CTX_GENERIC(STD, _atomic_fetch_add, __VA_ARGS__)
#define shmem_atomic_add(...)	HMC_SHMEM_CTX_GENERIC(STD, _atomic_add, __VA_ARGS__)
#define shmem_atomic_fetch_and(...)	HMC_SHMEM_CTX_GENERIC(BIT, _atomic_fetch_and, __VA_ARGS__)
#define shmem_atomic_and(...)	HMC_SHMEM_CTX_GENERIC(BIT, _atomic_and, __VA_ARGS__)
#define shmem_atomic_fetch_or(...)	HMC_SHMEM_CTX_GENERIC(BIT, _atomic_fetch_or, __VA_ARGS__)
#define shmem_atomic_or(...)	HMC_SHMEM_CTX_GENERIC(BIT, _atomic_or, __VA_ARGS__)
#define shmem_atomic_fetch_xor(...)	HMC_SHMEM_CTX_GENERIC(BIT, _atomic_fetch_xor, __VA_ARGS__)
#define shmem_atomic_xor(...)	HMC_SHMEM_CTX_GENERIC(BIT, _atomic_xor, __VA_ARGS__)
#define shmem_atomic_fetch_nbi(...)	HMC_SHMEM_CTX_GENERIC(EXT, _atomic_fetch_nbi, __VA_ARGS__)
#define shmem_atomic_swap_nbi(...)	HMC_SHMEM_CTX_GENERIC(EXT, _atomic_swap_nbi, __VA_ARGS__)
#define shmem_atomic_compare_swap_nbi(...)	HMC_SHMEM_CTX_GENERIC(STD, _atomic_compare_swap_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_inc_nbi(...)	HMC_SHMEM_CTX_GENERIC(STD, _atomic_fetch_inc_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_add_nbi(...)	HMC_SHMEM_CTX_GENERIC(STD, _atomic_fetch_add_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_and_nbi(...)	HMC_SHMEM_CTX_GENERIC(BIT, _atomic_fetch_and_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_or_nbi(...)	HMC_SHMEM_CTX_GENERIC(BIT, _atomic_fetch_or_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_xor_nbi(...)	HMC_SHMEM_CTX_GENERIC(BIT, _atomic_fetch_xor_nbi, __VA_ARGS__)
#define shmem_wait_until(ivars, ...)	_Generic((ivars), HMC_SHMEM_G_P2P(shmem_, _wait_until))(ivars, __VA_ARGS__)
#define shmem_wait_until_all(ivars, ...)	_Generic((ivars), HMC_SHMEM_G_P2P(shmem_, _wait_until_all))(ivars, __VA_ARGS__)
#define shmem_wait_until_any(ivars, ...)	_Generic((ivars), HMC_SHMEM_G_P2P(shmem_, _wait_until_any))(ivars, __VA_ARGS__)
#define shmem_wait_until_some(ivars, ...)	_Generic((ivars), HMC_SHMEM_G_P2P(shmem_, _wait_until_some))(ivars, __VA_ARGS__)
#define shmem_wait_until_all_vector(ivars, ...)	_Generic((ivars), HMC_SHMEM_G_P2P(shmem_, _wait_until_all_vector))(ivars, __VA_ARGS__)
#define shmem_wait_until_any_vector(ivars, ...)	_Generic((ivars), HMC_SHMEM_G_P2P(shmem_, _wait_until_any_vector))(ivars, __VA_ARGS__)
#define shmem_wait_until_some_vector(ivars, ...)	_Generic((ivars), HMC_SHMEM_G_P2P(shmem_, _wait_until_some_vector))(ivars, __VA_ARGS__)
#define shmem_test(ivars, ...)	_Generic((ivars), HMC_SHMEM_G_P2P(shmem_, _test))(ivars, __VA_ARGS__)
#define shmem_test_all(ivars, ...)	_Generic((ivars), HMC_SHMEM_G_P2P(shmem_, _test_all))(ivars, __VA_ARGS__)
#define shmem_test_any(ivars, ...)	_Generic((ivars), HMC_SHMEM_G_P2P(shmem_, _test_any))(ivars, __VA_ARGS__)
#define shmem_test_some(ivars, ...)	_Generic((ivars), HMC_SHMEM_G_P2P(shmem_, _test_some))(ivars, __VA_ARGS__)
#define shmem_test_all_vector(ivars, ...)	_Generic((ivars), HMC_SHMEM_G_P2P(shmem_, _test_all_vector))(ivars, __VA_ARGS__)
#define shmem_test_any_vector(ivars, ...)	_Generic((ivars), HMC_SHMEM_G_P2P(shmem_, _test_any_vector))(ivars, __VA_ARGS__)
#define shmem_test_some_vector(ivars, ...)	_Generic((ivars), HMC_SHMEM_G_P2P(shmem_, _test_some_vector))(ivars, __VA_ARGS__)
#define shmem_broadcast(team, dest, ...)	_Generic((dest), HMC_SHMEM_G_RMA(shmem_, _broadcast))(team, dest, __VA_ARGS__)
#define shmem_collect(team, dest, ...)	_Generic((dest), HMC_SHMEM_G_RMA(shmem_, _collect))(team, dest, __VA_ARGS__)
#define shmem_fcollect(team, dest, ...)	_Generic((dest), HMC_SHMEM_G_RMA(shmem_, _fcollect))(team, dest, __VA_ARGS__)
#define shmem_alltoall(team, dest, ...)	_Generic((dest), HMC_SHMEM_G_RMA(shmem_, _alltoall))(team, dest, __VA_ARGS__)
#define shmem_alltoalls(team, dest, ...)	_Generic((dest), HMC_SHMEM_G_RMA(shmem_, _alltoalls))(team, dest, __VA_ARGS__)
#define shmem_and_reduce(team, dest, ...)	_Generic((dest), HMC_SHMEM_G_RBIT(shmem_, _and_reduce))(team, dest, __VA_ARGS__)
#define shmem_or_reduce(team, dest, ...)	_Generic((dest), HMC_SHMEM_G_RBIT(shmem_, _or_reduce))(team, dest, __VA_ARGS__)
#define shmem_xor_reduce(team, dest, ...)	_Generic((dest), HMC_SHMEM_G_RBIT(shmem_, _xor_reduce))(team, dest, __VA_ARGS__)
#define shmem_max_reduce(team, dest, ...)	_Generic((dest), HMC_SHMEM_G_RMM(shmem_, _max_reduce))(team, dest, __VA_ARGS__)
#define shmem_min_reduce(team, dest, ...)	_Generic((dest), HMC_SHMEM_G_RMM(shmem_, _min_reduce))(team, dest, __VA_ARGS__)
#define shmem_sum_reduce(team, dest, ...)	_Generic((dest), HMC_SHMEM_G_RAR(shmem_, _sum_reduce))(team, dest, __VA_ARGS__)
#define shmem_prod_reduce(team, dest, ...)	_Generic((dest), HMC_SHMEM_G_RAR(shmem_, _prod_reduce))(team, dest, __VA_ARGS__)
/*
 * 1.5 names the C11 team sync shmem_sync(team) while the deprecated
 * active-set routine keeps shmem_sync(PE_start, logPE_stride, PE_size,
 * pSync): the argument count picks one. The shmem_sync produced here is
 * not expanded again, so the four-argument call reaches the function.
 */
#define HMC_SHMEM_SYNC_PICK(_1, _2, _3, _4, NAME, ...)	NAME
#define shmem_sync(...)							\
	HMC_SHMEM_SYNC_PICK(__VA_ARGS__, shmem_sync,			\
			    hmc_shmem_generic_unsupported,		\
			    hmc_shmem_generic_unsupported,		\
			    shmem_team_sync, 0)(__VA_ARGS__)

/* The generic names of 1.3 that 1.4 deprecated and 1.5 still lists: each
 * has its replacement's call signature (without a context), so it
 * dispatches to the same typed routine. shmem_swap and shmem_wait also
 * name untyped long routines from before C11; (shmem_swap)(...) and
 * (shmem_wait)(...) still call those. */
#define shmem_fetch(source, ...)	_Generic((source), HMC_SHMEM_G_EXT(shmem_, _atomic_fetch))(source, __VA_ARGS__)
#define shmem_set(dest, ...)	_Generic((dest), HMC_SHMEM_G_EXT(shmem_, _atomic_set))(dest, __VA_ARGS__)
#define shmem_swap(dest, ...)	_Generic((dest), HMC_SHMEM_G_EXT(shmem_, _atomic_swap))(dest, __VA_ARGS__)
#define shmem_cswap(dest, ...)	_Generic((dest), HMC_SHMEM_G_STD(shmem_, _atomic_compare_swap))(dest, __VA_ARGS__)
#define shmem_finc(dest, ...)	_Generic((dest), HMC_SHMEM_G_STD(shmem_, _atomic_fetch_inc))(dest, __VA_ARGS__)
#define shmem_inc(dest, ...)	_Generic((dest), HMC_SHMEM_G_STD(shmem_, _atomic_inc))(dest, __VA_ARGS__)
#define shmem_fadd(dest, ...)	_Generic((dest), HMC_SHMEM_G_STD(shmem_, _atomic_fetch_add))(dest, __VA_ARGS__)
#define shmem_add(dest, ...)	_Generic((dest), HMC_SHMEM_G_STD(shmem_, _atomic_add))(dest, __VA_ARGS__)
#define shmem_wait(ivar, ...)	_Generic((ivar), HMC_SHMEM_G_WAIT(shmem_, _wait))(ivar, __VA_ARGS__)

#endif /* C11 generics */

#ifdef __cplusplus
}
#endif

#endif /* HMC_SHMEM_SHMEM_H */
