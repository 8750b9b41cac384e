// SPDX-License-Identifier: GPL-2.0
/*
 * test_events: RDMA device and port events from hmc_ib.ko. A soft-RoCE
 * device of the test's own, on a veth pair of its own, is added, its link
 * taken down and up, and deleted; rxe0 of the guest is left alone.
 */
#include <sys/wait.h>

#include "events.h"

#define DEV	"hmcrxe0"
#define VETH	"hmcv0"
#define VPEER	"hmcv1"

static int sh_run(const char *cmd)
{
	int st = system(cmd);

	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Waits for the port of DEV to reach @state (ACTIVE or DOWN) in sysfs. */
static int port_state_is(const char *state, int ms)
{
	char buf[64] = "";
	uint64_t deadline = now_ns() + ms * 1000000ULL;
	FILE *f;

	do {
		f = fopen("/sys/class/infiniband/" DEV "/ports/1/state", "re");
		if (f) {
			if (!fgets(buf, sizeof(buf), f))
				buf[0] = 0;
			fclose(f);
			if (strstr(buf, state))
				return 1;
		}
		usleep(20000);
	} while (now_ns() < deadline);
	return 0;
}

/* The events about DEV received, in order; shown as a TAP comment. */
static int dev_events(struct listener *l, int *cmds, int max)
{
	int i, n = 0;

	printf("# %s:", DEV);
	for (i = 0; i < l->n && n < max; i++)
		if (!strcmp(l->ev[i].dev, DEV)) {
			cmds[n++] = l->ev[i].cmd;
			printf(" %d/%u", l->ev[i].cmd, l->ev[i].port);
		}
	printf("\n");
	fflush(stdout);
	return n;
}

/* Receives for @ms; the number of events about DEV so far. */
static int settle(struct listener *l, int ms, int *cmds, int max)
{
	listener_wait(l, MAX_EVENTS, ms);
	return dev_events(l, cmds, max);
}

START_TEST(rdma_device_and_port_events)
{
	static struct listener l;
	int cmds[16], n, i;

	if (access("/sys/module/hmc_ib", F_OK))
		SKIP("hmc_ib is not loaded");
	if (access("/sys/module/rdma_rxe", F_OK))
		SKIP("rdma_rxe is not loaded");
	sh_run("rdma link del " DEV " 2>/dev/null; ip link del " VETH
	       " 2>/dev/null");
	EXPECT_OK(listener_open(&l, 0));
	ck_assert_int_eq(sh_run("ip link add " VETH " type veth peer name "
				VPEER " && ip link set " VETH " up && "
				"ip link set " VPEER " up"), 0);
	ck_assert_int_eq(sh_run("rdma link add " DEV " type rxe netdev "
				VETH), 0);
	ck_assert_msg(port_state_is("ACTIVE", 10000), "port never ACTIVE");
	/* rxe starts with the port up: no port event. */
	n = settle(&l, 500, cmds, 16);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(cmds[0], HMC_EVT_RDMA_DEV_ADDED);
	ck_assert(!HAS(&l.ev[0], HMC_A_RDMA_PORT));
	l.n = 0;

	ck_assert_int_eq(sh_run("ip link set " VETH " down"), 0);
	ck_assert_msg(port_state_is("DOWN", 10000), "port never DOWN");
	n = settle(&l, 500, cmds, 16);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(cmds[0], HMC_EVT_RDMA_PORT_DOWN);
	ck_assert_uint_eq(l.ev[0].port, 1);
	l.n = 0;

	/* rxe reports the link up and then its carrier: once or twice. */
	ck_assert_int_eq(sh_run("ip link set " VETH " up"), 0);
	ck_assert_msg(port_state_is("ACTIVE", 10000), "port never ACTIVE");
	n = settle(&l, 500, cmds, 16);
	ck_assert_int_ge(n, 1);
	ck_assert_int_le(n, 2);
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(cmds[i], HMC_EVT_RDMA_PORT_ACTIVE);
		ck_assert_uint_eq(l.ev[i].port, 1);
	}
	l.n = 0;

	ck_assert_int_eq(sh_run("rdma link del " DEV), 0);
	n = settle(&l, 1000, cmds, 16);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(cmds[0], HMC_EVT_RDMA_DEV_REMOVED);
	ck_assert_int_eq(sh_run("ip link del " VETH), 0);
	listener_close(&l);
}
END_TEST

const struct test rdma_event_tests[] = {
	T(rdma_device_and_port_events, 90),
	{ NULL }
};
