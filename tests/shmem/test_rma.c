// SPDX-License-Identifier: MIT
/*
 * RMA for every standard RMA type, the sized and mem forms, the context
 * forms, strided forms, non-blocking forms and put-with-signal, to the
 * heap and to a global array, every element checked.
 */
#include <string.h>

#include "check.h"

#define N 300

static unsigned char global_buf[N * 16];
static uint64_t global_sig;

/* Value of element i written by PE pe in round r: differs everywhere. */
#define VAL(TYPE, pe, i, r) ((TYPE)((pe) * 37 + (i) * 3 + (r) * 11 + 1))

#define TEST_TYPE(TYPE, NAME)						\
static void test_##NAME(TYPE *heap, shmem_ctx_t ctx)			\
{									\
	int me = shmem_my_pe(), n = shmem_n_pes();			\
	int right = (me + 1) % n, left = (me + n - 1) % n;		\
	TYPE src[N], got[N], *glob = (TYPE *)global_buf;		\
	size_t i;							\
									\
	for (i = 0; i < N; i++)						\
		src[i] = VAL(TYPE, me, i, 1);				\
	shmem_##NAME##_put(heap, src, N, right);			\
	shmem_ctx_##NAME##_put_nbi(ctx, glob, src, N, right);		\
	shmem_quiet();							\
	shmem_barrier_all();						\
	for (i = 0; i < N; i++) {					\
		CHECK(heap[i] == VAL(TYPE, left, i, 1), #NAME " put %zu", i); \
		CHECK(glob[i] == VAL(TYPE, left, i, 1), #NAME " put_nbi %zu", i); \
	}								\
	shmem_##NAME##_get(got, heap, N, right);			\
	for (i = 0; i < N; i++)						\
		CHECK(got[i] == VAL(TYPE, me, i, 1), #NAME " get %zu", i); \
	memset(got, 0, sizeof(got));					\
	shmem_ctx_##NAME##_get_nbi(ctx, got, glob, N, left);		\
	shmem_ctx_quiet(ctx);						\
	for (i = 0; i < N; i++)						\
		CHECK(got[i] == VAL(TYPE, (left + n - 1) % n, i, 1),	\
		      #NAME " get_nbi %zu", i);				\
	/* Strided: every third element of src to every second of dest. */ \
	shmem_barrier_all();						\
	for (i = 0; i < N; i++)						\
		src[i] = VAL(TYPE, me, i, 2);				\
	shmem_##NAME##_iput(heap, src, 2, 3, N / 3, right);		\
	shmem_barrier_all();						\
	for (i = 0; i < N / 3; i++)					\
		CHECK(heap[2 * i] == VAL(TYPE, left, 3 * i, 2), #NAME " iput %zu", i); \
	for (i = 0; i < N / 3; i++)					\
		CHECK(heap[2 * i + 1] == VAL(TYPE, left, 2 * i + 1, 1), \
		      #NAME " iput gap %zu", i);			\
	memset(got, 0, sizeof(got));					\
	shmem_ctx_##NAME##_iget(ctx, got, heap, 3, 2, N / 3, right);	\
	for (i = 0; i < N / 3; i++)					\
		CHECK(got[3 * i] == VAL(TYPE, me, 3 * i, 2), #NAME " iget %zu", i); \
	/* Single elements. */						\
	shmem_barrier_all();						\
	shmem_##NAME##_p(&heap[7], VAL(TYPE, me, 7, 3), right);		\
	shmem_ctx_##NAME##_p(ctx, &glob[9], VAL(TYPE, me, 9, 3), right); \
	shmem_barrier_all();						\
	CHECK(heap[7] == VAL(TYPE, left, 7, 3), #NAME " p");		\
	CHECK(glob[9] == VAL(TYPE, left, 9, 3), #NAME " ctx p");	\
	CHECK(shmem_##NAME##_g(&heap[7], right) == VAL(TYPE, me, 7, 3), #NAME " g"); \
	CHECK(shmem_ctx_##NAME##_g(ctx, &glob[9], left) ==		\
	      VAL(TYPE, (left + n - 1) % n, 9, 3), #NAME " ctx g");	\
	shmem_barrier_all();						\
}
HMC_SHMEM_RMA_TYPES(TEST_TYPE)

static void test_sized(unsigned char *heap, int bits)
{
	int me = shmem_my_pe(), n = shmem_n_pes();
	int right = (me + 1) % n, left = (me + n - 1) % n;
	size_t es = (size_t)bits / 8, i, len = N * es;
	unsigned char src[N * 16], got[N * 16];

	for (i = 0; i < len; i++)
		src[i] = pat(me, i, bits);
	memset(heap, 0, len);
	shmem_barrier_all();
	switch (bits) {
	case 8: shmem_put8(heap, src, N, right); break;
	case 16: shmem_put16_nbi(heap, src, N, right); break;
	case 32: shmem_ctx_put32(SHMEM_CTX_DEFAULT, heap, src, N, right); break;
	case 64: shmem_put64(heap, src, N, right); break;
	case 128: shmem_ctx_put128_nbi(SHMEM_CTX_DEFAULT, heap, src, N, right); break;
	}
	shmem_barrier_all();
	for (i = 0; i < len; i++)
		CHECK(heap[i] == pat(left, i, bits), "put%d byte %zu", bits, i);
	memset(got, 0, sizeof(got));
	switch (bits) {
	case 8: shmem_get8_nbi(got, heap, N, right); break;
	case 16: shmem_get16(got, heap, N, right); break;
	case 32: shmem_get32_nbi(got, heap, N, right); break;
	case 64: shmem_ctx_get64(SHMEM_CTX_DEFAULT, got, heap, N, right); break;
	case 128: shmem_get128(got, heap, N, right); break;
	}
	shmem_quiet();
	for (i = 0; i < len; i++)
		CHECK(got[i] == pat(me, i, bits), "get%d byte %zu", bits, i);
	/* Strided sized: elements 0, 2, 4 ... of src to 0, 3, 6 ... */
	shmem_barrier_all();
	switch (bits) {
	case 8: shmem_iput8(heap, src, 3, 2, N / 3, right); break;
	case 16: shmem_iput16(heap, src, 3, 2, N / 3, right); break;
	case 32: shmem_iput32(heap, src, 3, 2, N / 3, right); break;
	case 64: shmem_iput64(heap, src, 3, 2, N / 3, right); break;
	case 128: shmem_iput128(heap, src, 3, 2, N / 3, right); break;
	}
	shmem_barrier_all();
	for (i = 0; i < N / 3; i++) {
		size_t k;

		for (k = 0; k < es; k++)
			CHECK(heap[3 * i * es + k] == pat(left, 2 * i * es + k, bits),
			      "iput%d element %zu", bits, i);
	}
	memset(got, 0, sizeof(got));
	switch (bits) {
	case 8: shmem_iget8(got, heap, 2, 3, N / 3, right); break;
	case 16: shmem_iget16(got, heap, 2, 3, N / 3, right); break;
	case 32: shmem_iget32(got, heap, 2, 3, N / 3, right); break;
	case 64: shmem_iget64(got, heap, 2, 3, N / 3, right); break;
	case 128: shmem_iget128(got, heap, 2, 3, N / 3, right); break;
	}
	for (i = 0; i < N / 3; i++) {
		size_t k;

		for (k = 0; k < es; k++)
			CHECK(got[2 * i * es + k] == pat(me, 2 * i * es + k, bits),
			      "iget%d element %zu", bits, i);
	}
	shmem_barrier_all();
}

/* put_signal: the data is visible once the signal is. */
static void test_signal(unsigned char *heap, uint64_t *sig)
{
	int me = shmem_my_pe(), n = shmem_n_pes();
	int right = (me + 1) % n, left = (me + n - 1) % n, r;
	size_t len = 1 << 16, i;
	unsigned char *src = malloc(len);
	uint64_t v;

	for (r = 0; r < 20; r++) {
		for (i = 0; i < len; i++)
			src[i] = pat(me, i, r);
		if (r % 4 == 0)
			shmem_putmem_signal(heap, src, len, sig, (uint64_t)r + 1,
					    SHMEM_SIGNAL_SET, right);
		else if (r % 4 == 1)
			shmem_putmem_signal_nbi(heap, src, len, &global_sig, 1,
						SHMEM_SIGNAL_ADD, right);
		else if (r % 4 == 2)
			shmem_ctx_uint64_put_signal(SHMEM_CTX_DEFAULT,
						    (uint64_t *)heap,
						    (uint64_t *)src, len / 8, sig,
						    (uint64_t)r + 1,
						    SHMEM_SIGNAL_SET, right);
		else
			shmem_put32_signal_nbi(heap, src, len / 4, &global_sig, 1,
					       SHMEM_SIGNAL_ADD, right);
		if (r % 2 == 0) {
			v = shmem_signal_wait_until(sig, SHMEM_CMP_EQ,
						    (uint64_t)r + 1);
			CHECK(v == (uint64_t)r + 1, "signal %llu",
			      (unsigned long long)v);
		} else {
			v = shmem_signal_wait_until(&global_sig, SHMEM_CMP_GE,
						    (uint64_t)(r + 1) / 2);
			CHECK(v == (uint64_t)(r + 1) / 2, "added signal %llu",
			      (unsigned long long)v);
		}
		for (i = 0; i < len; i++)
			CHECK(heap[i] == pat(left, i, r), "round %d byte %zu", r, i);
		CHECK(shmem_signal_fetch(r % 2 ? &global_sig : sig) == v, "fetch");
		shmem_barrier_all();
	}
	free(src);
}

#define WORD(pe, i)	(((uint64_t)(pe) << 40) ^ ((uint64_t)(i) * 0x9e3779b97f4a7c15ULL))

/* Strided, more elements than one request of the remote path carries. */
static void test_large_strided(unsigned char *sym, unsigned char *src,
			       unsigned char *got, size_t max, int right,
			       int left)
{
	uint64_t *ws = (uint64_t *)src, *wg = (uint64_t *)got;
	uint64_t *wsym = (uint64_t *)sym;
	size_t ne = 20000, i;
	int me = shmem_my_pe();

	CHECK(3 * ne * sizeof(uint64_t) <= max, "buffer");
	for (i = 0; i < ne; i++)
		ws[i] = WORD(me, i);
	memset(sym, 0, max);
	shmem_barrier_all();
	shmem_uint64_iput(wsym, ws, 3, 1, ne, right);
	shmem_barrier_all();
	for (i = 0; i < 3 * ne; i++)
		CHECK(wsym[i] == (i % 3 ? 0 : WORD(left, i / 3)),
		      "strided put: word %zu", i);
	/* Right's copy holds what we put. */
	memset(got, 0, ne * sizeof(uint64_t));
	shmem_uint64_iget(wg, wsym, 1, 3, ne, right);
	for (i = 0; i < ne; i++)
		CHECK(wg[i] == WORD(me, i), "strided get: word %zu", i);
	shmem_barrier_all();
}

/*
 * Sizes around the boundaries of the remote path (data in the request up
 * to 16 KiB, hmc_comm's eager limit at 32 KiB) and a large odd one: put to
 * the right, get from the left, every byte checked.
 */
static void test_large(void)
{
	static const size_t sizes[] = { 1, 16383, 16384, 16385, 32768, 32769,
					(1 << 20) + 13 };
	int me = shmem_my_pe(), n = shmem_n_pes();
	int right = (me + 1) % n, left = (me + n - 1) % n;
	size_t max = sizes[sizeof(sizes) / sizeof(sizes[0]) - 1], i, k;
	unsigned char *sym = shmem_malloc(max), *src = malloc(max);
	unsigned char *got = malloc(max);

	CHECK(sym && src && got, "malloc %zu", max);
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t len = sizes[k];

		for (i = 0; i < len; i++)
			src[i] = pat(me, i, (int)k);
		memset(sym, 0xee, max);
		shmem_barrier_all();
		shmem_putmem(sym, src, len, right);
		shmem_barrier_all();
		for (i = 0; i < max; i++)
			CHECK(sym[i] == (i < len ? pat(left, i, (int)k) : 0xee),
			      "put of %zu: byte %zu is %u", len, i, sym[i]);
		memset(got, 0, max);
		shmem_getmem(got, sym, len, left);
		/* Left's copy holds what left's left put. */
		for (i = 0; i < len; i++)
			CHECK(got[i] == pat((left + n - 1) % n, i, (int)k),
			      "get of %zu: byte %zu is %u", len, i, got[i]);
		/* Nobody gets from our copy once we overwrite it. */
		shmem_barrier_all();
	}
	test_large_strided(sym, src, got, max, right, left);
	shmem_free(sym);
	free(src);
	free(got);
}

/* A global: symmetric, in the program's data segment. */
static unsigned char big_global[(1 << 20) + 64];

/*
 * Symmetric sources and destinations of sizes above the 16 KiB a request
 * carries, which move one-sided between PEs on different hosts (heap and
 * data segment registered as memory regions): heap to heap, heap to a
 * global, a global to heap, gets into both; a signal after the data, and
 * a flag after a fence, each seen only with every byte of its data.
 */
static void test_symmetric_large(void)
{
	static const size_t sizes[] = { 16385, 65536 + 7, (1 << 20) + 13 };
	static uint64_t flag;
	int me = shmem_my_pe(), n = shmem_n_pes();
	int right = (me + 1) % n, left = (me + n - 1) % n;
	size_t max = sizes[sizeof(sizes) / sizeof(sizes[0]) - 1], i, k;
	unsigned char *src = shmem_malloc(max), *dst = shmem_malloc(max);
	uint64_t *sig = shmem_calloc(1, sizeof(*sig));

	CHECK(src && dst && sig, "shmem_malloc %zu", max);
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t len = sizes[k];
		int r = 100 + (int)k;

		for (i = 0; i < max; i++)
			src[i] = pat(me, i, r);
		memset(dst, 0xee, max);
		memset(big_global, 0xdd, sizeof(big_global));
		shmem_barrier_all();
		shmem_putmem(dst, src, len, right);
		shmem_putmem(big_global + 3, src + 1, len - 1, right);
		shmem_barrier_all();
		for (i = 0; i < max; i++)
			CHECK(dst[i] == (i < len ? pat(left, i, r) : 0xee),
			      "heap put of %zu: byte %zu is %u", len, i, dst[i]);
		for (i = 0; i < sizeof(big_global); i++)
			CHECK(big_global[i] == (i >= 3 && i < len + 2 ?
						pat(left, i - 2, r) : 0xdd),
			      "global put of %zu: byte %zu is %u", len, i,
			      big_global[i]);
		shmem_barrier_all();
		/* gets: left's src into our heap and our global */
		memset(dst, 0, max);
		shmem_getmem(dst, src, len, left);
		shmem_getmem(big_global, src + 5, len - 5, left);
		for (i = 0; i < len; i++) {
			CHECK(dst[i] == pat(left, i, r),
			      "get of %zu: byte %zu is %u", len, i, dst[i]);
			CHECK(i >= len - 5 || big_global[i] == pat(left, i + 5, r),
			      "get into a global of %zu: byte %zu is %u", len, i,
			      big_global[i]);
		}
		shmem_barrier_all();
		/* a global as the source, the data before its signal */
		memset(dst, 0xee, max);
		*sig = 0;
		for (i = 0; i < len; i++)
			big_global[i] = pat(me, i, r + 10);
		shmem_barrier_all();
		shmem_putmem_signal(dst, big_global, len, sig, 1,
				    SHMEM_SIGNAL_SET, right);
		shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 1);
		for (i = 0; i < len; i++)
			CHECK(dst[i] == pat(left, i, r + 10),
			      "data before its signal, %zu: byte %zu is %u", len,
			      i, dst[i]);
		shmem_barrier_all();
		/* a flag after a fence */
		flag = 0;
		shmem_barrier_all();
		shmem_putmem(dst, src, len, right);
		shmem_fence();
		shmem_uint64_p(&flag, 1, right);
		shmem_uint64_wait_until(&flag, SHMEM_CMP_EQ, 1);
		for (i = 0; i < len; i++)
			CHECK(dst[i] == pat(left, i, r),
			      "data before a fenced flag, %zu: byte %zu is %u",
			      len, i, dst[i]);
		shmem_barrier_all();
	}
	shmem_free(sig);
	shmem_free(dst);
	shmem_free(src);
}

int main(void)
{
	unsigned char *heap;
	uint64_t *sig;
	shmem_ctx_t ctx;
	int bits;

	shmem_init();
	heap = shmem_malloc(1 << 16);
	sig = shmem_calloc(1, sizeof(*sig));
	CHECK(heap && sig, "malloc");
	CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0, "ctx_create");
#define RUN(TYPE, NAME) test_##NAME((TYPE *)heap, ctx);
	HMC_SHMEM_RMA_TYPES(RUN)
	for (bits = 8; bits <= 128; bits *= 2)
		test_sized(heap, bits);
	test_signal(heap, sig);
	test_large();
	test_symmetric_large();
	shmem_ctx_destroy(ctx);
	shmem_free(sig);
	shmem_free(heap);
	if (shmem_my_pe() == 0)
		printf("rma: %d PEs ok\n", shmem_n_pes());
	shmem_finalize();
	return 0;
}
