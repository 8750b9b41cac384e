// SPDX-License-Identifier: MIT
/*
 * Option structs (libbpf's rules): the loader on its own, with a struct
 * that grew; then hmc_buf_opts and hmc_comm_opts through the public calls
 * as older, same-size and newer callers pass them, reserved fields
 * included. The public structs have no implicit padding: the pragma turns
 * any padding in <hmc/hmc.h> into a build error.
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wpadded"
#include <hmc/hmc.h>
#pragma GCC diagnostic pop

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "sys/opts.h"
#include "run_tcase.h"

/* Version 1 ended at @a; version 2 added @b and reserves @r (must be 0). */
struct opts_v2 {
	size_t sz;
	uint32_t a;
	uint32_t r;
	uint64_t b;
	uint32_t c;
	uint32_t tail_reserved;
};
#define opts_v2__last_field	c
#define opts_v2__reserved(o)	((o)->r)

START_TEST(test_opts_load)
{
	struct opts_v2 out, in = { .sz = sizeof(in), .a = 5, .b = 6, .c = 7 };
	unsigned char bigger[sizeof(in) + 8] = { 0 };

	memset(&out, 0xff, sizeof(out));
	ck_assert_int_eq(OPTS_LOAD(&out, NULL, opts_v2, a), 0);
	ck_assert_uint_eq(out.sz, sizeof(out));
	ck_assert_uint_eq(out.a, 0);
	ck_assert_uint_eq(out.b, 0);
	ck_assert_uint_eq(out.c, 0);

	ck_assert_int_eq(OPTS_LOAD(&out, &in, opts_v2, a), 0);
	ck_assert_uint_eq(out.a, 5);
	ck_assert_uint_eq(out.b, 6);
	ck_assert_uint_eq(out.c, 7);

	/* An older caller: what it does not pass reads as zero. */
	in.sz = OPTS_MIN_SIZE(opts_v2, a);
	memset(&out, 0xff, sizeof(out));
	ck_assert_int_eq(OPTS_LOAD(&out, &in, opts_v2, a), 0);
	ck_assert_uint_eq(out.sz, sizeof(out));
	ck_assert_uint_eq(out.a, 5);
	ck_assert_uint_eq(out.r, 0);
	ck_assert_uint_eq(out.b, 0);
	ck_assert_uint_eq(out.c, 0);
	ck_assert_uint_eq(out.tail_reserved, 0);

	in.sz = OPTS_MIN_SIZE(opts_v2, a) - 1;
	ck_assert_int_eq(OPTS_LOAD(&out, &in, opts_v2, a), -EINVAL);
	in.sz = 0;
	ck_assert_int_eq(OPTS_LOAD(&out, &in, opts_v2, a), -EINVAL);

	/* Reserved fields: inside, and after the last known field. */
	in.sz = sizeof(in);
	in.r = 1;
	ck_assert_int_eq(OPTS_LOAD(&out, &in, opts_v2, a), -EINVAL);
	in.r = 0;
	in.tail_reserved = 1U << 31;
	ck_assert_int_eq(OPTS_LOAD(&out, &in, opts_v2, a), -EINVAL);
	/* ... which an older caller that ends before it never passes. */
	in.sz = OPTS_END(opts_v2, c);
	ck_assert_int_eq(OPTS_LOAD(&out, &in, opts_v2, a), 0);
	ck_assert_uint_eq(out.tail_reserved, 0);
	in.tail_reserved = 0;

	/* A newer caller: a zero tail is fine, any other byte is not. */
	in.sz = sizeof(bigger);
	memcpy(bigger, &in, sizeof(in));
	ck_assert_int_eq(OPTS_LOAD(&out, bigger, opts_v2, a), 0);
	ck_assert_uint_eq(out.sz, sizeof(out));
	ck_assert_uint_eq(out.c, 7);
	for (size_t i = sizeof(in); i < sizeof(bigger); i++) {
		bigger[i] = 0x80;
		ck_assert_int_eq(OPTS_LOAD(&out, bigger, opts_v2, a), -E2BIG);
		bigger[i] = 0;
	}
}
END_TEST

/* hmc_comm_create() with @o; destroys what it made. */
static int comm_with(struct hmc_buf *buf, const void *o)
{
	struct hmc_comm *c;
	int rc = hmc_comm_create(buf, o, &c);

	if (!rc)
		hmc_comm_destroy(c);
	return rc;
}

START_TEST(test_comm_opts)
{
	struct { struct hmc_comm_opts o; uint64_t future[2]; } big;
	HMC_OPTS(hmc_comm_opts, o, .rank = 3);
	struct hmc_comm *c;
	struct hmc_buf *buf;

	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 0, 4096, NULL, &buf), 0);
	ck_assert_int_eq(comm_with(buf, &o), 0);

	/*
	 * An older caller (the first version ended at op_timeout_ms): the
	 * bytes after it are not read, whatever they hold.
	 */
	o.sz = OPTS_MIN_SIZE(hmc_comm_opts, op_timeout_ms);
	o.num_chs = HMC_VERBS_MAX_CHANNELS + 1;
	o.reserved0 = 1;
	o.ib_port = 1000;
	o.reserved1 = 1;
	ck_assert_int_eq(hmc_comm_create(buf, &o, &c), 0);
	ck_assert_uint_eq(hmc_comm_rank(c), 3);
	hmc_comm_destroy(c);
	o.sz = OPTS_MIN_SIZE(hmc_comm_opts, op_timeout_ms) - 1;
	ck_assert_int_eq(comm_with(buf, &o), -EINVAL);

	/* Reserved fields must be zero, wherever they are. */
	memset(&o, 0, sizeof(o));
	o.sz = sizeof(o);
	o.reserved0 = 1;
	ck_assert_int_eq(comm_with(buf, &o), -EINVAL);
	o.reserved0 = 0;
	o.reserved1 = 0x100;
	ck_assert_int_eq(comm_with(buf, &o), -EINVAL);
	o.reserved1 = 0;
	o.reserved2 = 1;
	ck_assert_int_eq(comm_with(buf, &o), -EINVAL);
	o.reserved2 = 0;
	o.msg_slot_size = 0x100;	/* a known field, checked: not whole pages */
	ck_assert_int_eq(comm_with(buf, &o), -EINVAL);
	o.msg_slot_size = 0;
	ck_assert_int_eq(comm_with(buf, &o), 0);

	/* A newer caller. */
	memset(&big, 0, sizeof(big));
	big.o.sz = sizeof(big);
	ck_assert_int_eq(comm_with(buf, &big), 0);
	big.future[1] = 1ULL << 63;
	ck_assert_int_eq(comm_with(buf, &big), -E2BIG);
	big.future[1] = 0;
	big.o.reserved1 = 1;
	ck_assert_int_eq(comm_with(buf, &big), -EINVAL);
	hmc_buf_destroy(buf);
}
END_TEST

START_TEST(test_buf_opts)
{
	struct { struct hmc_buf_opts o; uint32_t future[2]; } big;
	HMC_OPTS(hmc_buf_opts, o, .flags = HMC_BUF_F_NO_KMOD);
	struct hmc_buf *buf;

	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 0, 64, &o, &buf), 0);
	hmc_buf_destroy(buf);
	/* The first version is today's: nothing shorter. */
	o.sz = OPTS_MIN_SIZE(hmc_buf_opts, numa_node) - 1;
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 0, 64, &o, &buf),
			 -EINVAL);
	memset(&big, 0, sizeof(big));
	big.o.sz = sizeof(big);
	big.o.flags = HMC_BUF_F_NO_KMOD;
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 0, 64, &big.o, &buf), 0);
	hmc_buf_destroy(buf);
	big.future[0] = 1;
	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 0, 64, &big.o, &buf),
			 -E2BIG);
	ck_assert_ptr_null(buf);
}
END_TEST

int main(void)
{
	TCase *tc = tcase_create("opts");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_opts_load);
	tcase_add_test(tc, test_comm_opts);
	tcase_add_test(tc, test_buf_opts);
	return run_tcase("opts", tc);
}
