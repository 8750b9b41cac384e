// SPDX-License-Identifier: MIT
/*
 * Communicator API in one process: several communicators talk over
 * loopback, so handshake outcomes, argument checks and tag semantics can be
 * asserted precisely (multi-process behaviour is in tests/integration).
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hmc/hmc.h>

#include "pattern.h"
#include "run_tcase.h"

#define BUF_SIZE	(1 << 20)

struct node {
	struct hmc_buf *buf;
	struct hmc_comm *comm;
};

static void node_up(struct node *n, uint32_t rank, const char *secret,
		    bool listen)
{
	HMC_OPTS(hmc_comm_opts, o, .rank = rank, .secret = secret,
		 .connect_timeout_ms = 3000, .op_timeout_ms = 5000);

	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 0, BUF_SIZE, NULL, &n->buf), 0);
	ck_assert_int_eq(hmc_comm_create(n->buf, &o, &n->comm), 0);
	if (listen)
		ck_assert_int_eq(hmc_comm_listen(n->comm, "127.0.0.1", 0), 0);
}

static void node_down(struct node *n)
{
	hmc_comm_destroy(n->comm);
	hmc_buf_destroy(n->buf);
}

static uint16_t port_of(struct node *n)
{
	int port = hmc_comm_listen_port(n->comm);

	ck_assert_int_gt(port, 0);
	return (uint16_t)port;
}

/* connect() returns once both sides count each other as connected. */
static void assert_connected(struct node *n, uint32_t rank)
{
	ck_assert(hmc_comm_is_connected(n->comm, rank));
}

START_TEST(test_connect_put_get)
{
	struct node a, b;
	uint8_t *pa, *pb;

	node_up(&a, 0, NULL, true);
	node_up(&b, 1, NULL, false);
	ck_assert_int_eq(hmc_comm_connect(b.comm, 0, "127.0.0.1", port_of(&a),
					  HMC_TRANSPORT_UCX), 0);
	ck_assert(hmc_comm_is_connected(b.comm, 0));
	assert_connected(&a, 1);
	ck_assert_int_eq(hmc_comm_peer_buf_size(b.comm, 0), BUF_SIZE);
	ck_assert_int_eq(hmc_comm_connect(b.comm, 0, "127.0.0.1", port_of(&a),
					  HMC_TRANSPORT_UCX), -EISCONN);

	pa = hmc_buf_ptr(a.buf);
	pb = hmc_buf_ptr(b.buf);
	pattern_fill(pb, BUF_SIZE, 11);
	pattern_fill(pa, BUF_SIZE, 22);
	ck_assert_int_eq(hmc_comm_put(b.comm, 0, 100, 5000, 300000), 0);
	ck_assert_int_eq(hmc_comm_flush(b.comm, 0), 0);
	ck_assert_int_eq(memcmp(pa + 5000, pb + 100, 300000), 0);
	ck_assert_int_eq(pattern_mismatch(pa, 5000, 22), -1);
	/* a's own direction works too */
	ck_assert_int_eq(hmc_comm_get(a.comm, 1, 0, BUF_SIZE - 77, 77), 0);
	ck_assert_int_eq(memcmp(pa, pb + BUF_SIZE - 77, 77), 0);
	node_down(&b);
	node_down(&a);
}
END_TEST

START_TEST(test_bad_arguments)
{
	struct node a, b;
	hmc_req_t req;

	node_up(&a, 0, NULL, true);
	node_up(&b, 1, NULL, false);
	ck_assert_int_eq(hmc_comm_put(b.comm, 0, 0, 0, 8), -ENOTCONN);
	ck_assert_int_eq(hmc_comm_send_tag(b.comm, 9, 1), -ENOTCONN);
	ck_assert_int_eq(hmc_comm_connect(b.comm, 1, "127.0.0.1", port_of(&a),
					  HMC_TRANSPORT_UCX), -EINVAL);
	ck_assert_int_eq(hmc_comm_connect(b.comm, 0, "127.0.0.1", port_of(&a),
					  99), -EPROTONOSUPPORT);
	/* the listener is rank 0, not 5 */
	ck_assert_int_eq(hmc_comm_connect(b.comm, 5, "127.0.0.1", port_of(&a),
					  HMC_TRANSPORT_UCX), -ESRCH);
	ck_assert_int_eq(hmc_comm_connect(b.comm, 0, "127.0.0.1", port_of(&a),
					  HMC_TRANSPORT_UCX), 0);
	ck_assert_int_eq(hmc_comm_put(b.comm, 0, BUF_SIZE, 0, 1), -ERANGE);
	ck_assert_int_eq(hmc_comm_put(b.comm, 0, 0, BUF_SIZE - 1, 2), -ERANGE);
	ck_assert_int_eq(hmc_comm_get(b.comm, 0, 1, 0, SIZE_MAX), -ERANGE);
	ck_assert_int_eq(hmc_comm_put_nb(b.comm, 0, SIZE_MAX, 8, 8, &req), -ERANGE);
	ck_assert_int_eq(hmc_comm_put(b.comm, 0, BUF_SIZE, BUF_SIZE, 0), 0);
	ck_assert_int_eq(hmc_comm_wait(b.comm, 12345, 0), -ENOENT);
	ck_assert_int_eq(hmc_comm_listen(a.comm, "127.0.0.1", 0), -EALREADY);
	node_down(&b);
	node_down(&a);
}
END_TEST

START_TEST(test_opts_size)
{
	struct { struct hmc_comm_opts o; uint64_t future; } big;
	struct hmc_comm *c;
	struct hmc_buf *buf;
	struct hmc_comm_opts o;

	ck_assert_int_eq(hmc_buf_create(HMC_MEM_CPU, 0, 4096, NULL, &buf), 0);
	memset(&big, 0, sizeof(big));
	big.o.sz = sizeof(big);
	ck_assert_int_eq(hmc_comm_create(buf, &big.o, &c), 0);	/* zero tail */
	hmc_comm_destroy(c);
	big.future = 1;
	ck_assert_int_eq(hmc_comm_create(buf, &big.o, &c), -E2BIG);
	memset(&o, 0, sizeof(o));
	o.sz = 4;
	ck_assert_int_eq(hmc_comm_create(buf, &o, &c), -EINVAL);
	o.sz = sizeof(o);
	o.flags = 1U << 31;
	ck_assert_int_eq(hmc_comm_create(buf, &o, &c), -EINVAL);
	ck_assert_int_eq(hmc_comm_create(buf, NULL, &c), 0);	/* defaults */
	ck_assert_uint_eq(hmc_comm_rank(c), 0);
	ck_assert_ptr_eq(hmc_comm_buf(c), buf);
	ck_assert_int_eq(hmc_comm_listen_port(c), -ENOTCONN);
	hmc_comm_destroy(c);
	hmc_buf_destroy(buf);
}
END_TEST

START_TEST(test_authentication)
{
	struct node a, good, bad, none, open_srv;

	node_up(&a, 0, "right horse battery", true);
	node_up(&bad, 1, "wrong horse battery", false);
	node_up(&none, 2, NULL, false);
	node_up(&good, 3, "right horse battery", false);
	ck_assert_int_eq(hmc_comm_connect(bad.comm, 0, "127.0.0.1", port_of(&a),
					  HMC_TRANSPORT_UCX), -EACCES);
	ck_assert_int_eq(hmc_comm_connect(none.comm, 0, "127.0.0.1", port_of(&a),
					  HMC_TRANSPORT_UCX), -EACCES);
	ck_assert(!hmc_comm_is_connected(a.comm, 1));
	ck_assert(!hmc_comm_is_connected(a.comm, 2));
	ck_assert_int_eq(hmc_comm_connect(good.comm, 0, "127.0.0.1", port_of(&a),
					  HMC_TRANSPORT_UCX), 0);
	ck_assert_int_eq(hmc_comm_send_tag(good.comm, 0, 77), 0);
	/* a secret-holding dialer refuses a listener that cannot prove one */
	node_up(&open_srv, 9, NULL, true);
	ck_assert_int_eq(hmc_comm_connect(good.comm, 9, "127.0.0.1",
					  port_of(&open_srv), HMC_TRANSPORT_UCX),
			 -EACCES);
	node_down(&open_srv);
	node_down(&good);
	node_down(&none);
	node_down(&bad);
	node_down(&a);
}
END_TEST

START_TEST(test_duplicate_rank)
{
	struct node a, b1, b2;

	node_up(&a, 0, NULL, true);
	node_up(&b1, 1, NULL, false);
	node_up(&b2, 1, NULL, false);
	ck_assert_int_eq(hmc_comm_connect(b1.comm, 0, "127.0.0.1", port_of(&a),
					  HMC_TRANSPORT_UCX), 0);
	assert_connected(&a, 1);
	ck_assert_int_eq(hmc_comm_connect(b2.comm, 0, "127.0.0.1", port_of(&a),
					  HMC_TRANSPORT_UCX), -EEXIST);
	ck_assert_int_eq(hmc_comm_send_tag(b1.comm, 0, 5), 0);	/* unharmed */
	node_down(&b2);
	node_down(&b1);
	node_down(&a);
}
END_TEST

START_TEST(test_tags_order_and_disconnect)
{
	struct node a, b;
	uint64_t tag, i;

	node_up(&a, 0, NULL, true);
	node_up(&b, 1, NULL, false);
	/* recv_tag waits for a rank that has not connected yet */
	ck_assert_int_eq(hmc_comm_recv_tag(a.comm, 1, &tag, 50), -ETIMEDOUT);
	ck_assert_int_eq(hmc_comm_connect(b.comm, 0, "127.0.0.1", port_of(&a),
					  HMC_TRANSPORT_UCX), 0);
	for (i = 0; i < 3000; i++)
		ck_assert_int_eq(hmc_comm_send_tag(b.comm, 0, i * 0x9e3779b97f4a7c15ULL), 0);
	for (i = 0; i < 2000; i++) {
		ck_assert_int_eq(hmc_comm_recv_tag(a.comm, 1, &tag, 5000), 0);
		ck_assert_uint_eq(tag, i * 0x9e3779b97f4a7c15ULL);
	}
	/* the rest is still delivered after an orderly disconnect, then ENOTCONN */
	ck_assert_int_eq(hmc_comm_disconnect(b.comm, 0), 0);
	ck_assert(!hmc_comm_is_connected(b.comm, 0));
	ck_assert_int_eq(hmc_comm_disconnect(b.comm, 0), -ENOTCONN);
	for (; i < 3000; i++) {
		ck_assert_int_eq(hmc_comm_recv_tag(a.comm, 1, &tag, 5000), 0);
		ck_assert_uint_eq(tag, i * 0x9e3779b97f4a7c15ULL);
	}
	ck_assert_int_eq(hmc_comm_recv_tag(a.comm, 1, &tag, 5000), -ENOTCONN);
	ck_assert(!hmc_comm_is_connected(a.comm, 1));
	ck_assert_int_eq(hmc_comm_put(a.comm, 1, 0, 0, 8), -ENOTCONN);
	/* the same rank may come back */
	ck_assert_int_eq(hmc_comm_connect(b.comm, 0, "127.0.0.1", port_of(&a),
					  HMC_TRANSPORT_UCX), 0);
	ck_assert_int_eq(hmc_comm_send_tag(b.comm, 0, 42), 0);
	ck_assert_int_eq(hmc_comm_recv_tag(a.comm, 1, &tag, 5000), 0);
	ck_assert_uint_eq(tag, 42);
	node_down(&b);
	node_down(&a);
}
END_TEST

START_TEST(test_nb_any_order)
{
	enum { N = 600 };
	struct node a, b;
	hmc_req_t reqs[N];
	int status[N], i;
	uint8_t *pa, *pb;

	node_up(&a, 0, NULL, true);
	node_up(&b, 1, NULL, false);
	ck_assert_int_eq(hmc_comm_connect(b.comm, 0, "127.0.0.1", port_of(&a),
					  HMC_TRANSPORT_UCX), 0);
	pa = hmc_buf_ptr(a.buf);
	pb = hmc_buf_ptr(b.buf);
	pattern_fill(pb, BUF_SIZE, 5);
	memset(pa, 0, BUF_SIZE);
	for (i = 0; i < N; i++)		/* disjoint 1000-byte slices */
		ck_assert_int_eq(hmc_comm_put_nb(b.comm, 0, (size_t)i * 1000,
						 (size_t)i * 1000, 1000, &reqs[i]), 0);
	for (i = N - 1; i >= N / 2; i--)	/* last first */
		ck_assert_int_eq(hmc_comm_wait(b.comm, reqs[i], 5000), 0);
	ck_assert_int_eq(hmc_comm_wait_all(b.comm, reqs, N / 2, 5000, status), 0);
	for (i = 0; i < N / 2; i++)
		ck_assert_int_eq(status[i], 0);
	ck_assert_int_eq(hmc_comm_wait(b.comm, reqs[0], 0), -ENOENT);
	ck_assert_int_eq(hmc_comm_flush(b.comm, 0), 0);
	ck_assert_int_eq(memcmp(pa, pb, (size_t)N * 1000), 0);
	node_down(&b);
	node_down(&a);
}
END_TEST

int main(void)
{
	TCase *tc = tcase_create("comm");

	setenv("UCX_TLS", "tcp,self", 0);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_connect_put_get);
	tcase_add_test(tc, test_bad_arguments);
	tcase_add_test(tc, test_opts_size);
	tcase_add_test(tc, test_authentication);
	tcase_add_test(tc, test_duplicate_rank);
	tcase_add_test(tc, test_tags_order_and_disconnect);
	tcase_add_test(tc, test_nb_any_order);
	return run_tcase("comm", tc);
}
