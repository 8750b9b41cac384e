// SPDX-License-Identifier: GPL-2.0
/*
 * test_events: the generic netlink family "hmc" through libnl: requests,
 * dumps, strict validation, permissions and the events of a scripted run,
 * with their sequence numbers.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/userfaultfd.h>
#include <netlink/genl/ctrl.h>

#include "events.h"

/* ---- libnl plumbing ---------------------------------------------------- */

/* The errno behind a libnl error code, for the codes requests can get. */
static int nl_errno(int err)
{
	switch (-err) {
	case NLE_PERM:
		return -EPERM;
	case NLE_INVAL:
	case NLE_RANGE:
		return -EINVAL;
	case NLE_OPNOTSUPP:
		return -EOPNOTSUPP;
	case NLE_OBJ_NOTFOUND:
		return -ENOENT;
	case NLE_NOMEM:
		return -ENOBUFS;
	default:
		return err ? -EIO : 0;
	}
}

static void get_string(char *dst, size_t len, const struct nlattr *a)
{
	snprintf(dst, len, "%s", nla_get_string((struct nlattr *)a));
}

void ev_parse(struct nl_msg *msg, struct ev *e)
{
	struct genlmsghdr *gh = nlmsg_data(nlmsg_hdr(msg));
	struct nlattr *tb[HMC_A_MAX + 1];
	int i;

	memset(e, 0, sizeof(*e));
	e->cmd = gh->cmd;
	ck_assert_int_eq(genlmsg_parse(nlmsg_hdr(msg), 0, tb, HMC_A_MAX,
				       NULL), 0);
	for (i = 0; i <= HMC_A_MAX; i++)
		if (tb[i])
			e->has |= 1ULL << i;
#define U64(a, f) if (tb[a]) e->f = nla_get_u64(tb[a])
#define U32(a, f) if (tb[a]) e->f = nla_get_u32(tb[a])
	U64(HMC_A_SEQ, seq);
	U64(HMC_A_TIME_NS, time_ns);
	U64(HMC_A_SIZE, size);
	U64(HMC_A_OFFSET, offset);
	U64(HMC_A_PEER_ID, peer_id);
	U32(HMC_A_PID, pid);
	U32(HMC_A_FILE_ID, file_id);
	U32(HMC_A_BUF_ID, buf_id);
	U32(HMC_A_HANDLE, handle);
	U32(HMC_A_BUF_TYPE, buf_type);
	U32(HMC_A_NR_MAPPINGS, nr_mappings);
	U32(HMC_A_NR_EXPORTS, nr_exports);
	U32(HMC_A_IMPORT_ID, import_id);
	U32(HMC_A_IMPORT_STATE, import_state);
	U32(HMC_A_IMPORT_FLAGS, import_flags);
	U32(HMC_A_NENTS, nents);
	U32(HMC_A_TRANSPORT, transport);
	U32(HMC_A_ERRNO, err);
	U32(HMC_A_IOCTL, ioctl);
	U32(HMC_A_RDMA_PORT, port);
#undef U64
#undef U32
	if (tb[HMC_A_PEER_ADDR]) {
		e->addr_len = nla_len(tb[HMC_A_PEER_ADDR]);
		ck_assert_int_le(e->addr_len, HMC_PEER_ADDR_MAX);
		memcpy(e->addr, nla_data(tb[HMC_A_PEER_ADDR]), e->addr_len);
	}
	if (tb[HMC_A_EXPORTER])
		get_string(e->exporter, sizeof(e->exporter),
			   tb[HMC_A_EXPORTER]);
	if (tb[HMC_A_RDMA_DEV])
		get_string(e->dev, sizeof(e->dev), tb[HMC_A_RDMA_DEV]);
}

static int on_event(struct nl_msg *msg, void *arg)
{
	struct listener *l = arg;

	if (l->n < MAX_EVENTS)
		ev_parse(msg, &l->ev[l->n++]);
	return NL_OK;
}

int listener_open(struct listener *l, int rcvbuf)
{
	int grp, ret;

	l->n = l->overruns = 0;
	l->sk = nl_socket_alloc();
	ck_assert_ptr_nonnull(l->sk);
	ck_assert_int_eq(genl_connect(l->sk), 0);
	l->family = genl_ctrl_resolve(l->sk, HMC_GENL_NAME);
	ck_assert_msg(l->family > 0, "no family %s: %s", HMC_GENL_NAME,
		      nl_geterror(l->family));
	grp = genl_ctrl_resolve_grp(l->sk, HMC_GENL_NAME,
				    HMC_GENL_MCGRP_EVENTS);
	ck_assert_int_gt(grp, 0);
	nl_socket_disable_seq_check(l->sk);
	nl_socket_modify_cb(l->sk, NL_CB_VALID, NL_CB_CUSTOM, on_event, l);
	if (rcvbuf)
		ck_assert_int_eq(nl_socket_set_buffer_size(l->sk, rcvbuf, 0),
				 0);
	ret = nl_socket_add_membership(l->sk, grp);
	if (ret) {
		nl_socket_free(l->sk);
		l->sk = NULL;
		return nl_errno(ret);
	}
	ck_assert_int_eq(nl_socket_set_nonblocking(l->sk), 0);
	return 0;
}

int listener_wait(struct listener *l, int count, int timeout_ms)
{
	struct pollfd p = { .fd = nl_socket_get_fd(l->sk), .events = POLLIN };
	uint64_t deadline = now_ns() + timeout_ms * 1000000ULL, t;
	int ret;

	while (l->n < count && (t = now_ns()) < deadline) {
		if (poll(&p, 1, (deadline - t) / 1000000 + 1) <= 0)
			continue;
		ret = nl_recvmsgs_default(l->sk);
		if (ret == -NLE_NOMEM)
			l->overruns++;
	}
	return l->n;
}

void listener_close(struct listener *l)
{
	if (l->sk)
		nl_socket_free(l->sk);
	l->sk = NULL;
}

struct collect {
	struct ev *ev;
	int max, n;
};

static int on_reply(struct nl_msg *msg, void *arg)
{
	struct collect *c = arg;

	if (c->n < c->max)
		ev_parse(msg, &c->ev[c->n]);
	c->n++;
	return NL_OK;
}

/*
 * Sends request @cmd (a dump with NLM_F_DUMP in @flags) and parses the
 * replies into @out; @attr, if not 0, is added as a u32 attribute and
 * @reserved goes into the genl header. The number of replies, or -errno.
 */
static int request_raw(int cmd, int flags, struct ev *out, int max, int attr,
		       int reserved)
{
	struct collect c = { out, max, 0 };
	struct nl_sock *sk = nl_socket_alloc();
	struct genlmsghdr *gh;
	struct nl_msg *msg;
	int fam, ret;

	ck_assert_ptr_nonnull(sk);
	ck_assert_int_eq(genl_connect(sk), 0);
	fam = genl_ctrl_resolve(sk, HMC_GENL_NAME);
	ck_assert_int_gt(fam, 0);
	msg = nlmsg_alloc();
	ck_assert_ptr_nonnull(genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, fam,
					  0, flags, cmd, HMC_GENL_VERSION));
	gh = nlmsg_data(nlmsg_hdr(msg));
	gh->reserved = reserved;
	if (attr)
		ck_assert_int_eq(nla_put_u32(msg, attr, 1), 0);
	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, on_reply, &c);
	ret = nl_send_auto(sk, msg);
	ck_assert_int_ge(ret, 0);
	ret = nl_recvmsgs_default(sk);
	if (!ret && !(flags & NLM_F_DUMP))
		ret = nl_wait_for_ack(sk);
	nlmsg_free(msg);
	nl_socket_free(sk);
	return ret ? nl_errno(ret) : c.n;
}

static int request(int cmd, int flags, struct ev *out, int max)
{
	return request_raw(cmd, flags, out, max, 0, 0);
}

/* The global counters through netlink, and the last sequence number. */
static uint64_t genl_stats(uint64_t c[HMC_STAT_COUNT])
{
	struct nl_sock *sk = nl_socket_alloc();
	struct nlattr *tb[HMC_A_MAX + 1], *a;
	struct nlmsghdr *nlh;
	struct nl_msg *msg;
	unsigned char *buf;
	struct sockaddr_nl who;
	int fam, len, rem, n = 0;
	uint64_t seq;

	ck_assert_int_eq(genl_connect(sk), 0);
	fam = genl_ctrl_resolve(sk, HMC_GENL_NAME);
	msg = nlmsg_alloc();
	genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, fam, 0, 0,
		    HMC_CMD_GET_STATS, HMC_GENL_VERSION);
	ck_assert_int_ge(nl_send_auto(sk, msg), 0);
	len = nl_recv(sk, &who, &buf, NULL);
	ck_assert_int_gt(len, 0);
	nlh = (struct nlmsghdr *)buf;
	ck_assert_int_eq(nlh->nlmsg_type, fam);
	ck_assert_int_eq(genlmsg_parse(nlh, 0, tb, HMC_A_MAX, NULL), 0);
	ck_assert_ptr_nonnull(tb[HMC_A_STATS]);
	ck_assert_ptr_nonnull(tb[HMC_A_SEQ]);
	memset(c, 0xff, HMC_STAT_COUNT * sizeof(c[0]));
	nla_for_each_nested(a, tb[HMC_A_STATS], rem) {
		int i = nla_type(a) - HMC_STATS_A_BASE;

		ck_assert_int_ge(i, 0);
		ck_assert_int_lt(i, HMC_STAT_COUNT);
		c[i] = nla_get_u64(a);
		n++;
	}
	ck_assert_int_eq(n, HMC_STAT_COUNT);
	seq = nla_get_u64(tb[HMC_A_SEQ]);
	free(buf);
	nlmsg_free(msg);
	nl_socket_free(sk);
	return seq;
}

/* Entries of a dump made by this process. */
static int mine(struct ev *ev, int n, struct ev *out)
{
	int i, m = 0;

	for (i = 0; i < n; i++)
		if (ev[i].pid == (uint32_t)getpid())
			out[m++] = ev[i];
	return m;
}

/* ---- tests ----------------------------------------------------------- */

START_TEST(genl_stats_match_ioctl)
{
	uint64_t g[HMC_STAT_COUNT], n[HMC_STAT_COUNT];
	uint32_t a, b;
	int i, fd = open_dev();

	a = alloc_ok(fd, 3 * pg, NULL);
	b = alloc_ok(fd, 5 * pg, NULL);
	genl_stats(n);
	get_stats(fd, 1, g);
	for (i = 0; i < HMC_STAT_COUNT; i++) {
		/* Counters of activity may move between the two reads. */
		if (i == HMC_STAT_EVENTS_SENT || i == HMC_STAT_ERRORS ||
		    i == HMC_STAT_BUFS_CREATED)
			continue;
		ck_assert_msg(n[i] == g[i], "%s: netlink %llu, ioctl %llu",
			      stat_names[i], (unsigned long long)n[i],
			      (unsigned long long)g[i]);
	}
	ck_assert_uint_ge(n[HMC_STAT_BUFS_LIVE], 2);
	EXPECT_OK(hmc_free(fd, a));
	EXPECT_OK(hmc_free(fd, b));
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(genl_dumps)
{
	static struct ev all[4096], e[64];
	struct hmc_peer_import imp;
	uint8_t addr[20], *anon = map_anon(4 * pg);
	uint32_t hk, hp;
	int n, m, i, dmabuf, fd = open_dev();

	hk = alloc_ok(fd, 6 * pg, NULL);
	EXPECT_OK(hmc_pin(fd, anon, 4 * pg, 0, &hp));
	EXPECT_OK(hmc_export(fd, hk, HMC_BUF_EXPORT_F_RDWR, pg, 2 * pg,
			     &dmabuf));
	EXPECT_OK(hmc_import(fd, dmabuf, HMC_PEER_IMPORT_F_DYNAMIC, 0, pg,
			     &imp));
	for (i = 0; i < 20; i++)
		addr[i] = 0xa0 + i;
	EXPECT_OK(hmc_peer_report(fd, 41, HMC_PEER_CONNECTED, 0,
				  HMC_PEER_TRANSPORT_VERBS, addr, 20));
	EXPECT_OK(hmc_peer_report(fd, 42, HMC_PEER_CONNECTED, 0,
				  HMC_PEER_TRANSPORT_SHM, NULL, 0));

	n = request(HMC_CMD_GET_BUFS, NLM_F_DUMP, all, 4096);
	ck_assert_int_ge(n, 2);
	m = mine(all, n < 4096 ? n : 4096, e);
	ck_assert_int_eq(m, 2);
	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(e[i].cmd, HMC_CMD_GET_BUFS);
		ck_assert(HAS(&e[i], HMC_A_HANDLE_LIVE));
		ck_assert(HAS(&e[i], HMC_A_BUF_ID) && HAS(&e[i], HMC_A_FILE_ID));
		ck_assert(!HAS(&e[i], HMC_A_SEQ));
	}
	/* In creation order (ids grow). */
	ck_assert_uint_lt(e[0].buf_id, e[1].buf_id);
	ck_assert_uint_eq(e[0].handle, hk);
	ck_assert_uint_eq(e[0].buf_type, HMC_BUF_TYPE_KERNEL);
	ck_assert_uint_eq(e[0].size, 6 * pg);
	ck_assert_uint_eq(e[0].nr_exports, 1);
	ck_assert_uint_eq(e[1].handle, hp);
	ck_assert_uint_eq(e[1].buf_type, HMC_BUF_TYPE_PINNED);
	ck_assert_uint_eq(e[1].size, 4 * pg);
	ck_assert_uint_eq(e[1].nr_exports, 0);
	ck_assert_uint_eq(e[0].file_id, e[1].file_id);

	n = request(HMC_CMD_GET_IMPORTS, NLM_F_DUMP, all, 4096);
	m = mine(all, n, e);
	ck_assert_int_eq(m, 1);
	ck_assert_int_eq(e[0].cmd, HMC_CMD_GET_IMPORTS);
	ck_assert_uint_eq(e[0].handle, imp.handle);
	ck_assert_uint_eq(e[0].size, pg);
	ck_assert_uint_eq(e[0].offset, 0);
	ck_assert_uint_eq(e[0].import_flags, HMC_PEER_IMPORT_F_DYNAMIC);
	ck_assert_uint_eq(e[0].import_state, HMC_PEER_ST_MAPPED);
	ck_assert_uint_eq(e[0].nents, imp.nents);
	ck_assert_str_eq(e[0].exporter, "hmc");

	n = request(HMC_CMD_GET_PEERS, NLM_F_DUMP, all, 4096);
	m = mine(all, n, e);
	ck_assert_int_eq(m, 2);
	ck_assert_uint_eq(e[0].peer_id, 41);
	ck_assert_uint_eq(e[0].transport, HMC_PEER_TRANSPORT_VERBS);
	ck_assert_int_eq(e[0].addr_len, 20);
	ck_assert_int_eq(memcmp(e[0].addr, addr, 20), 0);
	ck_assert(HAS(&e[0], HMC_A_TIME_NS));
	ck_assert_uint_eq(e[1].peer_id, 42);
	ck_assert_int_eq(e[1].addr_len, 0);

	/* A freed handle whose buffer an export keeps. */
	EXPECT_OK(hmc_free(fd, hk));
	n = request(HMC_CMD_GET_BUFS, NLM_F_DUMP, all, 4096);
	m = mine(all, n, e);
	ck_assert_int_eq(m, 2);
	ck_assert(!HAS(&e[0], HMC_A_HANDLE_LIVE));
	ck_assert(HAS(&e[1], HMC_A_HANDLE_LIVE));

	close(dmabuf);
	close(fd);
	n = request(HMC_CMD_GET_BUFS, NLM_F_DUMP, all, 4096);
	ck_assert_int_eq(mine(all, n, e), 0);
	n = request(HMC_CMD_GET_PEERS, NLM_F_DUMP, all, 4096);
	ck_assert_int_eq(mine(all, n, e), 0);
	munmap(anon, 4 * pg);
	expect_no_live();
}
END_TEST

/* Dumps longer than one message buffer resume where they stopped. */
START_TEST(genl_dump_many)
{
	static struct ev all[4096], e[4096];
	int n, i, fd = open_dev();

	for (i = 0; i < 1000; i++)
		EXPECT_OK(hmc_peer_report(fd, i, HMC_PEER_CONNECTED, 0,
					  HMC_PEER_TRANSPORT_UCX, &i, sizeof(i)));
	n = request(HMC_CMD_GET_PEERS, NLM_F_DUMP, all, 4096);
	ck_assert_int_eq(mine(all, n, e), 1000);
	for (i = 0; i < 1000; i++) {
		ck_assert_uint_eq(e[i].peer_id, i);
		ck_assert_int_eq(memcmp(e[i].addr, &i, sizeof(i)), 0);
	}
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(genl_strict_validation)
{
	struct ev e[1];

	ck_assert_int_eq(request(HMC_CMD_GET_STATS, 0, e, 1), 1);
	ck_assert_int_eq(e[0].cmd, HMC_CMD_GET_STATS);
	/* No request takes an attribute; the header's reserved byte is 0. */
	EXPECT_ERR(request_raw(HMC_CMD_GET_STATS, 0, e, 1, HMC_A_PID, 0),
		   EINVAL);
	EXPECT_ERR(request_raw(HMC_CMD_GET_BUFS, NLM_F_DUMP, e, 1,
			       HMC_A_BUF_ID, 0), EINVAL);
	EXPECT_ERR(request_raw(HMC_CMD_GET_STATS, 0, e, 1, HMC_A_MAX + 1, 0),
		   EINVAL);
	EXPECT_ERR(request_raw(HMC_CMD_GET_STATS, 0, e, 1, 0, 1), EINVAL);
	/* Events are not requests; unknown commands are refused. */
	EXPECT_ERR(request(HMC_EVT_BUF_CREATED, 0, e, 1), EOPNOTSUPP);
	EXPECT_ERR(request(HMC_CMD_MAX + 1, 0, e, 1), EOPNOTSUPP);
	EXPECT_ERR(request(HMC_CMD_UNSPEC, 0, e, 1), EOPNOTSUPP);
	EXPECT_ERR(request(HMC_CMD_GET_STATS, NLM_F_DUMP, e, 1), EOPNOTSUPP);
}
END_TEST

static void genl_as_nobody(void *arg)
{
	static struct listener l;
	uint64_t c[HMC_STAT_COUNT];
	struct ev e[1];
	int fd = hmc_open();

	CHILD_CHECK(fd >= 0);
	become_nobody(MiB);
	/* The counters are for anyone. */
	genl_stats(c);
	CHILD_CHECK(c[HMC_STAT_BUFS_LIVE] == 0);
	/* Other users' buffers, imports, peers and events are not. */
	CHILD_CHECK(request(HMC_CMD_GET_BUFS, NLM_F_DUMP, e, 1) == -EPERM);
	CHILD_CHECK(request(HMC_CMD_GET_IMPORTS, NLM_F_DUMP, e, 1) == -EPERM);
	CHILD_CHECK(request(HMC_CMD_GET_PEERS, NLM_F_DUMP, e, 1) == -EPERM);
	CHILD_CHECK(listener_open(&l, 0) == -EPERM);
	close(fd);
}

START_TEST(genl_permissions)
{
	run_child(genl_as_nobody, NULL);
	expect_no_live();
}
END_TEST

uint64_t events_done(int fd)
{
	uint64_t c[HMC_STAT_COUNT];

	get_stats(fd, 1, c);
	return c[HMC_STAT_EVENTS_SENT] + c[HMC_STAT_EVENTS_DROPPED];
}

void expect_events_done(int fd, uint64_t n)
{
	uint64_t deadline = now_ns() + 10000000000ULL;

	while (events_done(fd) < n && now_ns() < deadline)
		usleep(10000);
	ck_assert_uint_ge(events_done(fd), n);
}

/* Waits for @n events and checks their sequence numbers: +1 each. */
static void expect_events(struct listener *l, int n)
{
	int i;

	ck_assert_int_eq(listener_wait(l, n, 5000), n);
	ck_assert_int_eq(listener_wait(l, n + 1, 200), n);	/* no more */
	for (i = 0; i < n; i++) {
		ck_assert(HAS(&l->ev[i], HMC_A_SEQ));
		ck_assert(HAS(&l->ev[i], HMC_A_TIME_NS));
		if (i)
			ck_assert_uint_eq(l->ev[i].seq, l->ev[i - 1].seq + 1);
		if (i)
			ck_assert_uint_ge(l->ev[i].time_ns,
					  l->ev[i - 1].time_ns);
	}
}

static void refused_as_other_process(void *arg)
{
	int *fd = arg;

	CHILD_CHECK(hmc_free(*fd, 1) == -EACCES);
}

/* Every event of a scripted run, in order, with its attributes. */
START_TEST(genl_events_of_a_run)
{
	static struct listener l;
	struct hmc_peer_import imp;
	uint8_t addr[16] = { 0xfe, 0x80, [15] = 7 };
	uint64_t seq0;
	uint32_t h;
	int dmabuf, fd, i;
	struct ev *e;

	EXPECT_OK(listener_open(&l, 0));
	seq0 = genl_stats((uint64_t[HMC_STAT_COUNT]){ 0 });
	fd = open_dev();
	h = alloc_ok(fd, 4 * pg, NULL);
	EXPECT_OK(hmc_export(fd, h, HMC_BUF_EXPORT_F_RDWR, pg, 2 * pg,
			     &dmabuf));
	EXPECT_OK(hmc_import(fd, dmabuf, 0, 0, 0, &imp));
	EXPECT_OK(hmc_peer_report(fd, 5, HMC_PEER_CONNECTED, 0,
				  HMC_PEER_TRANSPORT_VERBS, addr, 16));
	EXPECT_OK(hmc_peer_report(fd, 5, HMC_PEER_FAILED, ETIMEDOUT, 0, NULL,
				  0));
	EXPECT_OK(hmc_peer_report(fd, 6, HMC_PEER_CONNECTED, 0,
				  HMC_PEER_TRANSPORT_SHM, NULL, 0));
	run_child(refused_as_other_process, &fd);
	EXPECT_OK(hmc_release(fd, imp.handle));
	close(dmabuf);
	EXPECT_OK(hmc_free(fd, h));
	close(fd);	/* peer 6 goes */

	expect_events(&l, 10);
	e = l.ev;
	ck_assert_uint_eq(e[0].seq, seq0 + 1);
	for (i = 0; i < 10; i++)
		if (i != 6)
			ck_assert_uint_eq(e[i].pid, getpid());
	ck_assert_int_eq(e[0].cmd, HMC_EVT_BUF_CREATED);
	ck_assert_uint_eq(e[0].handle, h);
	ck_assert_uint_eq(e[0].size, 4 * pg);
	ck_assert_uint_eq(e[0].buf_type, HMC_BUF_TYPE_KERNEL);
	ck_assert_int_eq(e[1].cmd, HMC_EVT_BUF_EXPORTED);
	ck_assert_uint_eq(e[1].buf_id, e[0].buf_id);
	ck_assert_uint_eq(e[1].offset, pg);
	ck_assert_uint_eq(e[1].size, 2 * pg);
	ck_assert_uint_eq(e[1].nr_exports, 1);
	ck_assert_int_eq(e[2].cmd, HMC_EVT_PEER_IMPORTED);
	ck_assert_uint_eq(e[2].handle, imp.handle);
	ck_assert_uint_eq(e[2].size, 2 * pg);
	ck_assert_str_eq(e[2].exporter, "hmc");
	ck_assert_int_eq(e[3].cmd, HMC_EVT_PEER_CONNECTED);
	ck_assert_uint_eq(e[3].peer_id, 5);
	ck_assert_uint_eq(e[3].transport, HMC_PEER_TRANSPORT_VERBS);
	ck_assert_int_eq(e[3].addr_len, 16);
	ck_assert_int_eq(memcmp(e[3].addr, addr, 16), 0);
	ck_assert(!HAS(&e[3], HMC_A_ERRNO));
	ck_assert_int_eq(e[4].cmd, HMC_EVT_PEER_FAILED);
	ck_assert_uint_eq(e[4].peer_id, 5);
	ck_assert_uint_eq(e[4].err, ETIMEDOUT);
	ck_assert_uint_eq(e[4].transport, HMC_PEER_TRANSPORT_VERBS);
	ck_assert_int_eq(e[5].cmd, HMC_EVT_PEER_CONNECTED);
	ck_assert_uint_eq(e[5].peer_id, 6);
	/* The other process's refused ioctl. */
	ck_assert_int_eq(e[6].cmd, HMC_EVT_ERROR);
	ck_assert_uint_ne(e[6].pid, getpid());
	ck_assert_uint_eq(e[6].err, EACCES);
	ck_assert_uint_eq(e[6].ioctl, _IOC_NR(HMC_IOC_BUF_FREE));
	ck_assert_uint_eq(e[6].file_id, e[0].file_id);
	ck_assert_int_eq(e[7].cmd, HMC_EVT_PEER_RELEASED);
	ck_assert_uint_eq(e[7].import_id, e[2].import_id);
	/* The import held the dma-buf, which held the buffer. */
	ck_assert_int_eq(e[8].cmd, HMC_EVT_BUF_FREED);
	ck_assert_uint_eq(e[8].buf_id, e[0].buf_id);
	ck_assert_int_eq(e[9].cmd, HMC_EVT_PEER_DISCONNECTED);
	ck_assert_uint_eq(e[9].peer_id, 6);
	ck_assert_uint_eq(e[9].err, ESHUTDOWN);
	listener_close(&l);
	expect_no_live();
}
END_TEST

/* An exporter moves the memory of a dynamic import: the event says so. */
START_TEST(genl_invalidation_event)
{
	static struct listener l;
	struct hmc_peer_import imp;
	int dmabuf, fd;
	struct ev *e;

	dmabuf = mover_create(8 * pg, 3);
	if (dmabuf < 0)
		SKIP("no hmc_test_mover.ko");
	EXPECT_OK(listener_open(&l, 0));
	fd = open_dev();
	EXPECT_OK(hmc_import(fd, dmabuf, HMC_PEER_IMPORT_F_DYNAMIC, 0, 0,
			     &imp));
	EXPECT_OK(mover_move(dmabuf));
	EXPECT_OK(hmc_release(fd, imp.handle));
	expect_events(&l, 3);
	e = l.ev;
	ck_assert_int_eq(e[0].cmd, HMC_EVT_PEER_IMPORTED);
	ck_assert_uint_eq(e[0].import_state, HMC_PEER_ST_MAPPED);
	ck_assert_uint_ge(e[0].nents, 1);
	ck_assert_str_eq(e[0].exporter, "hmc_test_mover");
	ck_assert_int_eq(e[1].cmd, HMC_EVT_PEER_INVALIDATED);
	ck_assert_uint_eq(e[1].import_id, e[0].import_id);
	ck_assert_uint_eq(e[1].handle, imp.handle);
	ck_assert_uint_eq(e[1].pid, getpid());
	ck_assert_uint_eq(e[1].import_state, HMC_PEER_ST_INVALIDATED);
	ck_assert_uint_eq(e[1].nents, 0);
	ck_assert_int_eq(e[2].cmd, HMC_EVT_PEER_RELEASED);
	ck_assert_uint_eq(e[2].import_id, e[0].import_id);
	listener_close(&l);
	close(dmabuf);
	close(fd);
	expect_no_live();
}
END_TEST

/*
 * An import caught between being made and being announced: the ioctl's
 * copy of the results back to user space stops on a write-protected page
 * (userfaultfd) while a helper thread moves the exporter's memory, then
 * either lets the copy go on (the import is published) or unmaps the page
 * (the copy fails and the import is undone).
 */
struct wp_move {
	int uffd, dmabuf;
	uint8_t *page;
	int undo;
	int moved;		/* mover_move()'s result */
	char err[128];
};

/* A userfaultfd that write-protects the (populated) page @p. */
static int uffd_write_protect(uint8_t *p)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)p, .len = pg },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};
	struct uffdio_writeprotect wp = {
		.range = { .start = (uintptr_t)p, .len = pg },
		.mode = UFFDIO_WRITEPROTECT_MODE_WP,
	};
	int uffd = syscall(SYS_userfaultfd, O_CLOEXEC);

	ck_assert_msg(uffd >= 0, "userfaultfd: %s", strerror(errno));
	ck_assert_int_eq(ioctl(uffd, UFFDIO_API, &api), 0);
	ck_assert_msg(!ioctl(uffd, UFFDIO_REGISTER, &reg),
		      "UFFDIO_REGISTER (WP): %s", strerror(errno));
	ck_assert_int_eq(ioctl(uffd, UFFDIO_WRITEPROTECT, &wp), 0);
	return uffd;
}

static void *wp_move_fn(void *arg)
{
	struct wp_move *w = arg;
	struct pollfd pfd = { .fd = w->uffd, .events = POLLIN };
	struct uffdio_writeprotect wp = {
		.range = { .start = (uintptr_t)w->page, .len = pg },
	};
	struct uffd_msg msg;

	if (poll(&pfd, 1, 10000) != 1 ||
	    read(w->uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT ||
	    !(msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP)) {
		snprintf(w->err, sizeof(w->err),
			 "no write-protect fault in 10 s (errno %d)", errno);
		return NULL;
	}
	w->moved = mover_move(w->dmabuf);
	if (w->undo) {
		/* The copy retries, finds nothing mapped and fails. */
		if (munmap(w->page, pg) ||
		    ioctl(w->uffd, UFFDIO_WAKE, &wp.range))
			snprintf(w->err, sizeof(w->err), "unmap, wake: %s",
				 strerror(errno));
	} else if (ioctl(w->uffd, UFFDIO_WRITEPROTECT, &wp)) {
		snprintf(w->err, sizeof(w->err), "unprotect: %s",
			 strerror(errno));
	}
	return NULL;
}

/*
 * move_notify of an import that was not announced yet sends nothing: a
 * published import comes with PEER_IMPORTED (showing it invalidated), an
 * undone one with no event at all.
 */
START_TEST(genl_no_invalidation_before_import)
{
	static struct listener l;
	struct hmc_peer_import *arg;
	struct hmc_peer_info info;
	struct wp_move w;
	uint32_t handle = 0;
	int dmabuf, fd, round, ret;
	pthread_t t;
	struct ev *e;

	dmabuf = mover_create(4 * pg, 5);
	if (dmabuf < 0)
		SKIP("no hmc_test_mover.ko");
	EXPECT_OK(listener_open(&l, 0));
	fd = open_dev();
	for (round = 0; round < 2; round++) {
		memset(&w, 0, sizeof(w));
		w.page = map_anon(pg);
		memset(w.page, 0, pg);	/* populated: write-protectable */
		arg = (void *)w.page;
		arg->fd = dmabuf;
		arg->flags = HMC_PEER_IMPORT_F_DYNAMIC;
		w.dmabuf = dmabuf;
		w.undo = round;
		w.moved = 1;
		w.uffd = uffd_write_protect(w.page);
		ck_assert_int_eq(pthread_create(&t, NULL, wp_move_fn, &w), 0);
		ret = hmc_ioc(fd, HMC_IOC_PEER_IMPORT, arg);
		ck_assert_int_eq(pthread_join(t, NULL), 0);
		ck_assert_msg(!w.err[0], "%s", w.err);
		EXPECT_OK(w.moved);
		close(w.uffd);
		if (w.undo) {
			EXPECT_ERR(ret, EFAULT);
			continue;
		}
		EXPECT_OK(ret);
		handle = arg->handle;
		EXPECT_OK(hmc_peer_info(fd, handle, &info));
		ck_assert_uint_eq(info.state, HMC_PEER_ST_INVALIDATED);
		EXPECT_OK(hmc_release(fd, handle));
		munmap(w.page, pg);
	}
	ck_assert_uint_eq(stat_of(fd, 0, HMC_STAT_IMPORTS_LIVE), 0);
	/* The last event: all before it have come. */
	EXPECT_OK(hmc_peer_report(fd, 9, HMC_PEER_CONNECTED, 0, 0, NULL, 0));
	expect_events(&l, 3);
	e = l.ev;
	ck_assert_int_eq(e[0].cmd, HMC_EVT_PEER_IMPORTED);
	ck_assert_uint_eq(e[0].handle, handle);
	ck_assert_uint_eq(e[0].import_state, HMC_PEER_ST_INVALIDATED);
	ck_assert_uint_eq(e[0].nents, 0);
	ck_assert_int_eq(e[1].cmd, HMC_EVT_PEER_RELEASED);
	ck_assert_uint_eq(e[1].import_id, e[0].import_id);
	ck_assert_int_eq(e[2].cmd, HMC_EVT_PEER_CONNECTED);
	ck_assert_uint_eq(e[2].peer_id, 9);
	listener_close(&l);
	close(dmabuf);
	close(fd);
	expect_no_live();
}
END_TEST

/*
 * A listener that does not read loses events: its socket overruns
 * (ENOBUFS), and the next event it gets shows how many it missed.
 */
START_TEST(genl_overrun_shows_as_gap)
{
	static struct listener l;
	int i, n, fd = open_dev();
	uint64_t sent;

	EXPECT_OK(listener_open(&l, 4096));
	sent = events_done(fd);
	for (i = 0; i < 2000; i++)
		EXPECT_OK(hmc_peer_report(fd, 1, i % 2 ? HMC_PEER_DISCONNECTED :
					  HMC_PEER_CONNECTED, 0, 0, NULL, 0));
	/* Once the work item has sent them all, read what was kept. */
	expect_events_done(fd, sent + 2000);
	n = listener_wait(&l, 2000, 1000);
	ck_assert_int_ge(l.overruns, 1);
	ck_assert_int_ge(n, 1);
	ck_assert_int_lt(n, 2000);
	for (i = 1; i < n; i++)
		ck_assert_uint_eq(l.ev[i].seq, l.ev[i - 1].seq + 1);
	EXPECT_OK(hmc_peer_report(fd, 2, HMC_PEER_CONNECTED, 0, 0, NULL, 0));
	ck_assert_int_eq(listener_wait(&l, n + 1, 5000), n + 1);
	ck_assert_uint_eq(l.ev[n].seq - l.ev[n - 1].seq - 1, 2000 - n);
	ck_assert_uint_eq(l.ev[n].peer_id, 2);
	listener_close(&l);
	close(fd);
	expect_no_live();
}
END_TEST

const struct test genl_tests[] = {
	T(genl_stats_match_ioctl, 30),
	T(genl_dumps, 30),
	T(genl_dump_many, 60),
	T(genl_strict_validation, 30),
	T(genl_permissions, 30),
	T(genl_events_of_a_run, 30),
	T(genl_invalidation_event, 30),
	T(genl_no_invalidation_before_import, 30),
	T(genl_overrun_shows_as_gap, 60),
	{ NULL }
};
