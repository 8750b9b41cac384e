// SPDX-License-Identifier: MIT
/*
 * Pool benchmark (tests/bench/pool.sh): rank 0 of a two-rank world times
 * copies into and out of rank 1's host segment against a reference, in
 * alternating rounds (both see the same background load), and prints the
 * median of the rounds' ratios as `RATIO <name> <value> <target>`:
 *
 *   host  pool_l2g_1MiB_vs_memcpy    1 MiB from local memory to rank 1's
 *                                    segment, against memcpy between two
 *                                    local buffers;
 *         pool_g2l_64MiB_vs_memcpy   64 MiB the other way;
 *   net   pool_l2g_1MiB_vs_put       1 MiB to rank 1's segment, against
 *                                    hmc_comm_put + flush of 1 MiB on the
 *                                    world's communicator (same transport);
 *         pool_l2g_1MiB_registered_vs_put  the same from memory registered
 *                                    with hmc_pool_register_user_mem(),
 *                                    which the transport reads directly.
 *
 * L is this process's memory: host memory here, as the machine may have
 * no GPU (with one, L2G adds the runtime's device-to-host copy to both).
 *   pool_bench host|net
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <hmc/pool.h>
#include <hmc/world.h>

#define ROUNDS		11
#define TIMEOUT_MS	300000

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

typedef int (*op_fn)(void *ctx);

/* Seconds per op of @fn over @iters calls, or a negative value on error. */
static double time_op(op_fn fn, void *ctx, int iters)
{
	double t0 = now();
	int i;

	for (i = 0; i < iters; i++)
		if (fn(ctx))
			return -1;
	return (now() - t0) / iters;
}

struct copy_ctx {
	struct hmc_pool *pool;
	struct hmc_comm *comm;
	void *dst;
	void *src;
	size_t len;
	enum hmc_pool_copy_kind kind;
};

static int op_memcpy(void *arg)
{
	struct copy_ctx *c = arg;

	memcpy(c->dst, c->src, c->len);
	__asm__ volatile("" ::: "memory");
	return 0;
}

static int op_pool(void *arg)
{
	struct copy_ctx *c = arg;

	return hmc_pool_copy(c->pool, c->dst, c->src, c->len, c->kind, 0);
}

static int op_put(void *arg)
{
	struct copy_ctx *c = arg;

	return hmc_comm_put(c->comm, 1, 0, 0, c->len) ?:
	       hmc_comm_flush(c->comm, 1);
}

/* Median over ROUNDS of reference time / pool time: >1 is faster. */
static void ratio(const char *name, double target, op_fn ref, void *ref_ctx,
		  op_fn pool, void *pool_ctx, int iters)
{
	double r[ROUNDS], tr, tp;
	int i;

	time_op(ref, ref_ctx, 1);	/* fault in, warm up */
	time_op(pool, pool_ctx, 1);
	for (i = 0; i < ROUNDS; i++) {
		tr = time_op(ref, ref_ctx, iters);
		tp = time_op(pool, pool_ctx, iters);
		if (tr < 0 || tp <= 0) {
			printf("# %s: a copy failed\n", name);
			return;
		}
		r[i] = tr / tp;
	}
	printf("# %s: last round %.1f us (reference) vs %.1f us (pool)\n",
	       name, tr * 1e6, tp * 1e6);
	qsort(r, ROUNDS, sizeof(r[0]), cmp_double);
	printf("RATIO %s %.3f %.2f\n", name, r[ROUNDS / 2], target);
}

int main(int argc, char **argv)
{
	const size_t mib = 1 << 20, big = 64 * mib;
	int net = argc > 1 && !strcmp(argv[1], "net");
	struct copy_ctx ref = { 0 }, cp = { 0 };
	struct hmc_world *world;
	struct hmc_pool *pool;
	char *a, *b, *seg;
	int ret;

	ret = hmc_world_init(NULL, &world);
	if (ret) {
		fprintf(stderr, "pool_bench: world: %s\n", hmc_strerror(ret));
		return 1;
	}
	{
		HMC_OPTS(hmc_pool_opts, po, .host_size = net ? 2 * mib : big,
			 .timeout_ms = TIMEOUT_MS, .user_mem_size = mib);

		ret = hmc_pool_create(world, &po, &pool);
	}
	if (ret) {
		fprintf(stderr, "pool_bench: pool: %s\n", hmc_strerror(ret));
		return 1;
	}
	if (hmc_world_rank(world) == 0 && hmc_world_size(world) == 2) {
		a = malloc(big);
		b = malloc(big);
		memset(a, 0x5a, big);
		memset(b, 0xa5, big);
		seg = hmc_pool_ptr(pool, HMC_POOL_HOST, 1);
		ref = (struct copy_ctx){ .dst = b, .src = a, .len = mib };
		cp = (struct copy_ctx){ .pool = pool, .dst = seg, .src = a,
					.len = mib, .kind = HMC_POOL_H2G };
		if (net) {
			char *reg = mmap(NULL, mib, PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			ref.comm = hmc_world_comm(world);
			ratio("pool_l2g_1MiB_vs_put", 0.95, op_put, &ref,
			      op_pool, &cp, 50);
			if (reg != MAP_FAILED) {
				memset(reg, 0x3c, mib);
				ret = hmc_pool_register_user_mem(pool, reg, mib,
								 HMC_MEM_CPU);
				cp.src = reg;
				if (ret)
					printf("# registering: %s\n",
					       hmc_strerror(ret));
				else
					ratio("pool_l2g_1MiB_registered_vs_put",
					      0.95, op_put, &ref, op_pool, &cp,
					      50);
				hmc_pool_unregister_user_mem(pool, reg);
				munmap(reg, mib);
			}
		} else {
			ratio("pool_l2g_1MiB_vs_memcpy", 0.9, op_memcpy, &ref,
			      op_pool, &cp, 200);
			ref.len = cp.len = big;
			cp.dst = b;
			cp.src = seg;
			cp.kind = HMC_POOL_G2H;
			ratio("pool_g2l_64MiB_vs_memcpy", 0.9, op_memcpy, &ref,
			      op_pool, &cp, 3);
		}
		free(a);
		free(b);
	}
	ret = hmc_pool_barrier(pool, TIMEOUT_MS);
	hmc_pool_destroy(pool);
	hmc_world_finalize(world);
	return ret ? 1 : 0;
}
