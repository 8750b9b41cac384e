// SPDX-License-Identifier: MIT
/*
 * Remote memory access, signals, fence and quiet, through peer.c.
 *
 * A mapped peer's put or get is a copy, complete when it returns: the
 * non-blocking forms are the blocking ones. A remote peer's put is
 * complete locally when it returns and remotely after quiet; its get
 * returns with the data. A signal is an AMO after the data: on a mapped
 * peer an atomic store or add made after the copy (sequentially
 * consistent, so a PE that sees the signal with an acquire load sees the
 * data); on a remote one a second request, which the target applies after
 * the first.
 */
#include <string.h>

#include "internal.h"

static void put(const char *call, shmem_ctx_t ctx, void *dest,
		const void *source, size_t len, int pe)
{
	shm_check_init(call);
	pe = shm_ctx_pe(call, ctx, pe);
	shm_check_addr(call, dest, len, pe);
	shm_put(call, pe, dest, source, len);
}

static void get(const char *call, shmem_ctx_t ctx, void *dest,
		const void *source, size_t len, int pe)
{
	shm_check_init(call);
	pe = shm_ctx_pe(call, ctx, pe);
	shm_check_addr(call, source, len, pe);
	shm_get(call, pe, dest, source, len);
}

static void iput(const char *call, shmem_ctx_t ctx, void *dest,
		 const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t n,
		 size_t size, int pe)
{
	shm_check_init(call);
	if (!n)
		return;
	pe = shm_ctx_pe(call, ctx, pe);
	shm_check_addr(call, dest, ((n - 1) * (size_t)dst + 1) * size, pe);
	shm_iput(call, pe, dest, source, (size_t)dst, (size_t)sst, n, size);
}

static void iget(const char *call, shmem_ctx_t ctx, void *dest,
		 const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t n,
		 size_t size, int pe)
{
	shm_check_init(call);
	if (!n)
		return;
	pe = shm_ctx_pe(call, ctx, pe);
	shm_check_addr(call, source, ((n - 1) * (size_t)sst + 1) * size, pe);
	shm_iget(call, pe, dest, source, (size_t)dst, (size_t)sst, n, size);
}

static void put_signal(const char *call, shmem_ctx_t ctx, void *dest,
		       const void *source, size_t len, uint64_t *sig_addr,
		       uint64_t signal, int sig_op, int pe)
{
	shm_check_init(call);
	if (sig_op != SHMEM_SIGNAL_SET && sig_op != SHMEM_SIGNAL_ADD)
		shm_fatal(call, "signal operation %d is not SHMEM_SIGNAL_SET or _ADD",
			  sig_op);
	pe = shm_ctx_pe(call, ctx, pe);
	shm_check_addr(call, dest, len, pe);
	shm_check_addr(call, sig_addr, sizeof(*sig_addr), pe);
	shm_put(call, pe, dest, source, len);
	shm_amo(call, pe, sig_addr, sizeof(*sig_addr),
		sig_op == SHMEM_SIGNAL_SET ? SHM_AMO_SET : SHM_AMO_ADD, signal,
		0, false);
}

/*
 * Every RMA form of one element size, typed or sized; PUT and GET are the
 * names' stems (int_put, put8, putmem), which the _nbi and _signal forms
 * extend.
 */
#define DEFINE_RMA(PUT, GET, TYPE, SIZE)				\
void shmem_ctx_##PUT(shmem_ctx_t ctx, TYPE *dest, const TYPE *source,	\
		     size_t nelems, int pe)				\
{									\
	put("shmem_" #PUT, ctx, dest, source, nelems * (SIZE), pe);	\
}									\
void shmem_##PUT(TYPE *dest, const TYPE *source, size_t nelems, int pe) \
{									\
	put("shmem_" #PUT, SHMEM_CTX_DEFAULT, dest, source,		\
	    nelems * (SIZE), pe);					\
}									\
void shmem_ctx_##PUT##_nbi(shmem_ctx_t ctx, TYPE *dest,		\
			   const TYPE *source, size_t nelems, int pe)	\
{									\
	put("shmem_" #PUT "_nbi", ctx, dest, source, nelems * (SIZE), pe); \
}									\
void shmem_##PUT##_nbi(TYPE *dest, const TYPE *source, size_t nelems,	\
		       int pe)						\
{									\
	put("shmem_" #PUT "_nbi", SHMEM_CTX_DEFAULT, dest, source,	\
	    nelems * (SIZE), pe);					\
}									\
void shmem_ctx_##GET(shmem_ctx_t ctx, TYPE *dest, const TYPE *source,	\
		     size_t nelems, int pe)				\
{									\
	get("shmem_" #GET, ctx, dest, source, nelems * (SIZE), pe);	\
}									\
void shmem_##GET(TYPE *dest, const TYPE *source, size_t nelems, int pe) \
{									\
	get("shmem_" #GET, SHMEM_CTX_DEFAULT, dest, source,		\
	    nelems * (SIZE), pe);					\
}									\
void shmem_ctx_##GET##_nbi(shmem_ctx_t ctx, TYPE *dest,		\
			   const TYPE *source, size_t nelems, int pe)	\
{									\
	get("shmem_" #GET "_nbi", ctx, dest, source, nelems * (SIZE), pe); \
}									\
void shmem_##GET##_nbi(TYPE *dest, const TYPE *source, size_t nelems,	\
		       int pe)						\
{									\
	get("shmem_" #GET "_nbi", SHMEM_CTX_DEFAULT, dest, source,	\
	    nelems * (SIZE), pe);					\
}									\
void shmem_ctx_##PUT##_signal(shmem_ctx_t ctx, TYPE *dest,		\
			      const TYPE *source, size_t nelems,	\
			      uint64_t *sig_addr, uint64_t signal,	\
			      int sig_op, int pe)			\
{									\
	put_signal("shmem_" #PUT "_signal", ctx, dest, source,		\
		   nelems * (SIZE), sig_addr, signal, sig_op, pe);	\
}									\
void shmem_##PUT##_signal(TYPE *dest, const TYPE *source, size_t nelems, \
			  uint64_t *sig_addr, uint64_t signal, int sig_op, \
			  int pe)					\
{									\
	put_signal("shmem_" #PUT "_signal", SHMEM_CTX_DEFAULT, dest,	\
		   source, nelems * (SIZE), sig_addr, signal, sig_op, pe); \
}									\
void shmem_ctx_##PUT##_signal_nbi(shmem_ctx_t ctx, TYPE *dest,		\
				  const TYPE *source, size_t nelems,	\
				  uint64_t *sig_addr, uint64_t signal,	\
				  int sig_op, int pe)			\
{									\
	put_signal("shmem_" #PUT "_signal_nbi", ctx, dest, source,	\
		   nelems * (SIZE), sig_addr, signal, sig_op, pe);	\
}									\
void shmem_##PUT##_signal_nbi(TYPE *dest, const TYPE *source,		\
			      size_t nelems, uint64_t *sig_addr,	\
			      uint64_t signal, int sig_op, int pe)	\
{									\
	put_signal("shmem_" #PUT "_signal_nbi", SHMEM_CTX_DEFAULT, dest, \
		   source, nelems * (SIZE), sig_addr, signal, sig_op, pe); \
}

#define DEFINE_STRIDED(IPUT, IGET, TYPE, SIZE)				\
void shmem_ctx_##IPUT(shmem_ctx_t ctx, TYPE *dest, const TYPE *source,	\
		      ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) \
{									\
	iput("shmem_" #IPUT, ctx, dest, source, dst, sst, nelems, SIZE, pe); \
}									\
void shmem_##IPUT(TYPE *dest, const TYPE *source, ptrdiff_t dst,	\
		  ptrdiff_t sst, size_t nelems, int pe)			\
{									\
	iput("shmem_" #IPUT, SHMEM_CTX_DEFAULT, dest, source, dst, sst,	\
	     nelems, SIZE, pe);						\
}									\
void shmem_ctx_##IGET(shmem_ctx_t ctx, TYPE *dest, const TYPE *source,	\
		      ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) \
{									\
	iget("shmem_" #IGET, ctx, dest, source, dst, sst, nelems, SIZE, pe); \
}									\
void shmem_##IGET(TYPE *dest, const TYPE *source, ptrdiff_t dst,	\
		  ptrdiff_t sst, size_t nelems, int pe)			\
{									\
	iget("shmem_" #IGET, SHMEM_CTX_DEFAULT, dest, source, dst, sst,	\
	     nelems, SIZE, pe);						\
}

#define DEFINE_TYPED(TYPE, NAME)					\
	DEFINE_RMA(NAME##_put, NAME##_get, TYPE, sizeof(TYPE))		\
	DEFINE_STRIDED(NAME##_iput, NAME##_iget, TYPE, sizeof(TYPE))	\
void shmem_ctx_##NAME##_p(shmem_ctx_t ctx, TYPE *dest, TYPE value, int pe) \
{									\
	put("shmem_" #NAME "_p", ctx, dest, &value, sizeof(TYPE), pe);	\
}									\
void shmem_##NAME##_p(TYPE *dest, TYPE value, int pe)			\
{									\
	put("shmem_" #NAME "_p", SHMEM_CTX_DEFAULT, dest, &value,	\
	    sizeof(TYPE), pe);						\
}									\
TYPE shmem_ctx_##NAME##_g(shmem_ctx_t ctx, const TYPE *source, int pe)	\
{									\
	TYPE v;								\
									\
	get("shmem_" #NAME "_g", ctx, &v, source, sizeof(TYPE), pe);	\
	return v;							\
}									\
TYPE shmem_##NAME##_g(const TYPE *source, int pe)			\
{									\
	TYPE v;								\
									\
	get("shmem_" #NAME "_g", SHMEM_CTX_DEFAULT, &v, source,		\
	    sizeof(TYPE), pe);						\
	return v;							\
}
HMC_SHMEM_RMA_TYPES(DEFINE_TYPED)

#define DEFINE_SIZED(BITS)						\
	DEFINE_RMA(put##BITS, get##BITS, void, (BITS) / 8)		\
	DEFINE_STRIDED(iput##BITS, iget##BITS, void, (BITS) / 8)
HMC_SHMEM_SIZES(DEFINE_SIZED)

DEFINE_RMA(putmem, getmem, void, 1)

/*
 * Fence: mapped peers' stores are ordered by the CPU fence, remote peers
 * apply our requests in the order sent, and our one-sided puts are
 * flushed (see peer.c).
 */
void shmem_ctx_fence(shmem_ctx_t ctx)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	shm_peer_fence();
}

void shmem_fence(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	shm_peer_fence();
}

void shmem_ctx_quiet(shmem_ctx_t ctx)
{
	shm_quiet();
}

void shmem_quiet(void)
{
	shm_quiet();
}
