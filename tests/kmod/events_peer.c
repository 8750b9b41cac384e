// SPDX-License-Identifier: GPL-2.0
/* test_events: PEER_STATE, the fabric peers libhmc reports. */
#include <signal.h>

#include "kmod_test.h"

static const uint8_t gid[16] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 99, 0, 1,
};

static uint64_t peers(int fd, int global)
{
	return stat_of(fd, global, HMC_STAT_PEERS_CONNECTED);
}

START_TEST(peer_state_table)
{
	int fd = open_dev();

	EXPECT_OK(hmc_peer_report(fd, 1, HMC_PEER_CONNECTED, 0,
				  HMC_PEER_TRANSPORT_VERBS, gid, sizeof(gid)));
	ck_assert_uint_eq(peers(fd, 0), 1);
	/* Connected again: the same peer, updated. */
	EXPECT_OK(hmc_peer_report(fd, 1, HMC_PEER_CONNECTED, 0,
				  HMC_PEER_TRANSPORT_UCX, gid, 4));
	ck_assert_uint_eq(peers(fd, 0), 1);
	EXPECT_OK(hmc_peer_report(fd, 2, HMC_PEER_CONNECTED, 0,
				  HMC_PEER_TRANSPORT_SHM, NULL, 0));
	ck_assert_uint_eq(peers(fd, 0), 2);
	EXPECT_OK(hmc_peer_report(fd, 1, HMC_PEER_DISCONNECTED, 0,
				  HMC_PEER_TRANSPORT_UCX, NULL, 0));
	ck_assert_uint_eq(peers(fd, 0), 1);
	EXPECT_ERR(hmc_peer_report(fd, 1, HMC_PEER_DISCONNECTED, 0, 0, NULL,
				   0), ENOENT);
	EXPECT_OK(hmc_peer_report(fd, 2, HMC_PEER_FAILED, ETIMEDOUT, 0, NULL,
				  0));
	ck_assert_uint_eq(peers(fd, 0), 0);
	EXPECT_ERR(hmc_peer_report(fd, 2, HMC_PEER_DISCONNECTED, ECONNRESET,
				   0, NULL, 0), ENOENT);
	/* A connection that never came up may fail too. */
	EXPECT_OK(hmc_peer_report(fd, 3, HMC_PEER_FAILED, ECONNREFUSED,
				  HMC_PEER_TRANSPORT_TCP, gid, 16));
	ck_assert_uint_eq(peers(fd, 0), 0);
	/* Peer ids are per file. */
	EXPECT_OK(hmc_peer_report(fd, 7, HMC_PEER_CONNECTED, 0, 0, NULL, 0));
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(peer_state_errors)
{
	struct hmc_peer_state s;
	int fd = open_dev();

#define TRY_STATE(assignment) do {					\
	memset(&s, 0, sizeof(s));					\
	s.peer_id = 1;							\
	s.state = HMC_PEER_CONNECTED;					\
	assignment;							\
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_PEER_STATE, &s), EINVAL);	\
} while (0)
	TRY_STATE(s.state = 0);
	TRY_STATE(s.state = 4);
	TRY_STATE(s.state = ~0U);
	TRY_STATE(s.transport = HMC_PEER_TRANSPORT_MAX + 1);
	TRY_STATE(s.addr_len = HMC_PEER_ADDR_MAX + 1);
	TRY_STATE(s.addr_len = ~0U);
	TRY_STATE(s.addr[HMC_PEER_ADDR_MAX - 1] = 1);	/* after addr_len */
	TRY_STATE(s.error = ECONNRESET);		/* with CONNECTED */
	TRY_STATE(s.error = -1);
	TRY_STATE(s.reserved[0] = 1);
	TRY_STATE(s.reserved[1] = 1ULL << 63);
#undef TRY_STATE
	memset(&s, 0, sizeof(s));
	s.state = HMC_PEER_FAILED;			/* without an error */
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_PEER_STATE, &s), EINVAL);
	s.error = 4096;					/* not an errno */
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_PEER_STATE, &s), EINVAL);
	s.state = HMC_PEER_DISCONNECTED;
	s.error = 0;
	EXPECT_ERR(hmc_ioc(fd, HMC_IOC_PEER_STATE, &s), ENOENT);
	/* The full address is fine. */
	s.state = HMC_PEER_CONNECTED;
	s.addr_len = HMC_PEER_ADDR_MAX;
	memset(s.addr, 0x33, sizeof(s.addr));
	EXPECT_OK(hmc_ioc(fd, HMC_IOC_PEER_STATE, &s));
	ck_assert_uint_eq(peers(fd, 0), 1);
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_ERRORS), 14);
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(peer_table_limit)
{
	int i, fd = open_dev();

	for (i = 0; i < HMC_PEERS_MAX; i++)
		EXPECT_OK(hmc_peer_report(fd, 1000 + i, HMC_PEER_CONNECTED, 0,
					  HMC_PEER_TRANSPORT_UCX, &i, sizeof(i)));
	ck_assert_uint_eq(peers(fd, 0), HMC_PEERS_MAX);
	EXPECT_ERR(hmc_peer_report(fd, 1, HMC_PEER_CONNECTED, 0, 0, NULL, 0),
		   ENOSPC);
	/* Known ones can still change. */
	EXPECT_OK(hmc_peer_report(fd, 1000, HMC_PEER_CONNECTED, 0,
				  HMC_PEER_TRANSPORT_SHM, NULL, 0));
	EXPECT_OK(hmc_peer_report(fd, 1001, HMC_PEER_DISCONNECTED, 0, 0,
				  NULL, 0));
	EXPECT_OK(hmc_peer_report(fd, 1, HMC_PEER_CONNECTED, 0, 0, NULL, 0));
	ck_assert_uint_eq(peers(fd, 1), HMC_PEERS_MAX);
	close(fd);
	expect_no_live();
}
END_TEST

static void die_with_peers(void *arg)
{
	int i, fd = hmc_open();

	CHILD_CHECK(fd >= 0);
	for (i = 0; i < 10; i++)
		CHILD_CHECK(hmc_peer_report(fd, i, HMC_PEER_CONNECTED, 0,
					    HMC_PEER_TRANSPORT_VERBS, gid,
					    sizeof(gid)) == 0);
	raise(SIGKILL);
}

START_TEST(peers_gone_at_process_death)
{
	run_child_killed(die_with_peers, NULL);
	expect_no_live();
}
END_TEST

const struct test peer_tests[] = {
	T(peer_state_table, 30),
	T(peer_state_errors, 30),
	T(peer_table_limit, 60),
	T(peers_gone_at_process_death, 30),
	{ NULL }
};
