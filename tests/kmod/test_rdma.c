// SPDX-License-Identifier: GPL-2.0
/* test_kmod: a ConnBuffer registered and used by soft-RoCE (rxe). */

#include "kmod_test.h"

struct rdma {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp[2];
	union ibv_gid gid;
	int gid_index;
	enum ibv_mtu mtu;
};

static void rdma_qp_connect(struct rdma *r, struct ibv_qp *qp, uint32_t dqpn)
{
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			   IBV_ACCESS_REMOTE_WRITE;
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = access,
	};

	ck_assert_int_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE |
				       IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS), 0);
	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTR, .path_mtu = r->mtu,
		.dest_qp_num = dqpn, .max_dest_rd_atomic = 1,
		.min_rnr_timer = 12,
		.ah_attr = {
			.is_global = 1, .port_num = 1,
			.grh = { .dgid = r->gid, .sgid_index = r->gid_index,
				 .hop_limit = 1 },
		},
	};
	ck_assert_int_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
				       IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				       IBV_QP_RQ_PSN |
				       IBV_QP_MAX_DEST_RD_ATOMIC |
				       IBV_QP_MIN_RNR_TIMER), 0);
	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7, .max_rd_atomic = 1,
	};
	ck_assert_int_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
				       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				       IBV_QP_SQ_PSN |
				       IBV_QP_MAX_QP_RD_ATOMIC), 0);
}

/* Two RC QPs on one device, connected to each other through loopback. */
static void rdma_setup(struct rdma *r, const char *dev)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_port_attr port;
	int i;

	r->ctx = rdma_open(dev);
	ck_assert_msg(r->ctx, "cannot open RDMA device %s", dev);
	r->gid_index = rdma_ipv4_gid(r->ctx, &r->gid);
	ck_assert_msg(r->gid_index >= 0, "%s has no IPv4 GID", dev);
	ck_assert_int_eq(ibv_query_port(r->ctx, 1, &port), 0);
	ck_assert_int_eq(port.state, IBV_PORT_ACTIVE);
	r->mtu = port.active_mtu;
	r->pd = ibv_alloc_pd(r->ctx);
	ck_assert_ptr_nonnull(r->pd);
	r->cq = ibv_create_cq(r->ctx, 16, NULL, NULL, 0);
	ck_assert_ptr_nonnull(r->cq);
	ia.send_cq = ia.recv_cq = r->cq;
	for (i = 0; i < 2; i++) {
		r->qp[i] = ibv_create_qp(r->pd, &ia);
		ck_assert_ptr_nonnull(r->qp[i]);
	}
	rdma_qp_connect(r, r->qp[0], r->qp[1]->qp_num);
	rdma_qp_connect(r, r->qp[1], r->qp[0]->qp_num);
}

/* One signaled RDMA READ or WRITE on qp[0], completed within 10 s. */
static void rdma_one(struct rdma *r, enum ibv_wr_opcode op,
		     struct ibv_mr *local, struct ibv_mr *remote, size_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)local->addr, .length = len,
		.lkey = local->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = op, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)remote->addr,
			     .rkey = remote->rkey },
	}, *bad;
	uint64_t deadline = now_ns() + 10000000000ULL;
	struct ibv_wc wc;
	int n;

	ck_assert_int_eq(ibv_post_send(r->qp[0], &wr, &bad), 0);
	while (!(n = ibv_poll_cq(r->cq, 1, &wc)))
		ck_assert_msg(now_ns() < deadline, "no completion in 10 s");
	ck_assert_int_eq(n, 1);
	ck_assert_msg(wc.status == IBV_WC_SUCCESS, "RDMA %s: %s",
		      op == IBV_WR_RDMA_READ ? "READ" : "WRITE",
		      ibv_wc_status_str(wc.status));
}

START_TEST(rdma_reg_mr_on_connbuffer)
{
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			   IBV_ACCESS_REMOTE_WRITE;
	const char *dev = getenv("HMC_RXE_DEV");
	size_t len = 256 * KiB;
	struct ibv_mr *cb_mr, *local_mr, *pfn_mr;
	uint8_t *cb, *cb2, *local, *anon, *pfn;
	struct rdma r;
	uint64_t off;
	uint32_t h, hp;
	int fd;

	if (!dev || !*dev)
		SKIP("HMC_RXE_DEV is not set");
	rdma_setup(&r, dev);
	fd = open_dev();
	h = alloc_ok(fd, len, &off);
	cb = map_ok(fd, off, len);
	cb_mr = ibv_reg_mr(r.pd, cb, len, access);
	ck_assert_msg(cb_mr, "ibv_reg_mr on a ConnBuffer: %s", strerror(errno));
	ck_assert_uint_eq(nr_mappings(fd, h), 1);
	local = aligned_alloc(pg, len);
	ck_assert_ptr_nonnull(local);
	local_mr = ibv_reg_mr(r.pd, local, len, access);
	ck_assert_ptr_nonnull(local_mr);

	/* Written by the CPU, read by the RDMA device. */
	pattern_fill(cb, len, 51);
	memset(local, 0, len);
	rdma_one(&r, IBV_WR_RDMA_READ, local_mr, cb_mr, len);
	expect_pattern(local, len, 51);
	/* Written by the RDMA device, read by the CPU. */
	pattern_fill(local, len, 52);
	rdma_one(&r, IBV_WR_RDMA_WRITE, local_mr, cb_mr, len);
	expect_pattern(cb, len, 52);
	cb2 = map_ok(fd, off, len);
	expect_pattern(cb2, len, 52);
	munmap(cb2, len);

	/* The PFN mapping of a pinned buffer cannot be registered. */
	anon = map_anon(4 * pg);
	EXPECT_OK(hmc_pin(fd, anon, 4 * pg, 0, &hp));
	pfn = map_ok(fd, offset_of(fd, hp), 4 * pg);
	pfn_mr = ibv_reg_mr(r.pd, pfn, 4 * pg, access);
	ck_assert_ptr_null(pfn_mr);
	munmap(pfn, 4 * pg);

	ck_assert_int_eq(ibv_dereg_mr(cb_mr), 0);
	ck_assert_int_eq(ibv_dereg_mr(local_mr), 0);
	ibv_destroy_qp(r.qp[0]);
	ibv_destroy_qp(r.qp[1]);
	ibv_destroy_cq(r.cq);
	ibv_dealloc_pd(r.pd);
	ibv_close_device(r.ctx);
	free(local);
	munmap(cb, len);
	munmap(anon, 4 * pg);
	EXPECT_OK(hmc_free(fd, h));
	close(fd);
	expect_no_live();
}
END_TEST

const struct test rdma_tests[] = {
	T(rdma_reg_mr_on_connbuffer, 120),
	{ NULL }
};
