// SPDX-License-Identifier: MIT
/*
 * test_faults: what happens when peers die, lie or misbehave.
 *
 *  kill      3 ranks; rank 2 is SIGKILLed while ranks 0 and 1 have a window
 *            of put_nb/get_nb to it in flight: every request ends (error or
 *            success, never a hang) within its timeout, is_connected() turns
 *            false, put/get/flush/recv_tag to it fail at once, and ranks 0
 *            and 1 still move verified data between them.
 *  secret    wrong secret, no secret, and a listener without one: -EACCES;
 *            the server keeps serving good clients (Unix and TCP control).
 *  garbage   raw sockets send bad magic, a bad version, oversized lengths,
 *            reserved bits, unknown types, truncated frames, HELLOs for the
 *            wrong rank, junk after a valid HELLO, and nothing at all (a
 *            silent dialer is dropped at the handshake deadline and holds up
 *            nobody): each is dropped, the server keeps working.
 *  fdpass    the buffer's descriptor (shm) travels only after the
 *            handshake: a raw dialer that fails the challenge, skips it, or
 *            asks for shm before HELLO never receives the listener's, and
 *            one that passes does; a fake listener that proves nothing
 *            (WELCOME without CHALLENGE, a bad MAC) never receives the
 *            dialer's, and one without a secret to a dialer without one
 *            does. A Unix HELLO that is not meant for this listener
 *            (no host part, another boot, another network namespace and
 *            an address not ours) is refused with -ESRCH.
 *  unixpath  the Unix control socket's path: a stale socket there (its
 *            listener killed) is replaced, a dead listener's socket of
 *            another port removed once old, the path goes with the
 *            listener; two listeners of one rank on one port, at
 *            127.0.0.1 and 127.0.0.2 (the second without the path): a
 *            dialer to either reaches that one, every byte checked.
 *  dup       a second process (and a second communicator) claiming a rank
 *            that is connected: -EEXIST; the first connection still works.
 *  tags      tags queued before a peer disconnected (BYE) or was killed
 *            come out first, in order, then an error.
 *  barrier   a peer enters a barrier last and leaves at once: the barrier
 *            succeeds for the ranks that were waiting in it.
 *  segs      a process whose UCX tcp receive segment is smaller than the
 *            server's send segment (UCX would abort the process that
 *            receives one) is refused with -EPROTO on both sides, lives on,
 *            and the server keeps serving good clients.
 *
 *   test_faults [-N NAME] [-t SECONDS]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <hmc/hmc.h>

#include "sys/host.h"
#include "sys/util.h"
#include "wire/auth.h"
#include "wire/frame.h"
#include "wire/sock.h"
#include "itest.h"

#define MIB		(1024 * 1024)
#define BUF_SIZE	(4 * MIB + 333)
#define HS_TIMEOUT_MS	1500		/* the garbage server's handshake deadline */
#define SECRET		"correct horse battery staple"

static const char *name = "faults";

/* ------------------------------------------------------------- endpoints */

struct end {
	struct hmc_buf *buf;
	struct hmc_comm *comm;
	uint8_t *p;
	uint16_t port;
	enum hmc_transport transport;	/* what it dials with */
};

/* A communicator of @rank; listening (port 0) if @listen. 0 or -1. */
static int end_new(struct end *e, uint32_t rank, const char *secret,
		   uint32_t flags, int hs_timeout_ms, bool listen)
{
	HMC_OPTS(hmc_comm_opts, o, .rank = rank, .flags = flags,
		 .secret = secret, .connect_timeout_ms = hs_timeout_ms,
		 .op_timeout_ms = 10000);
	int rc;

	memset(e, 0, sizeof(*e));
	/* shm's descriptor needs a Unix control connection: AUTO over TCP */
	e->transport = itest_transport(0, 1);
	if (e->transport == HMC_TRANSPORT_SHM && (flags & HMC_COMM_F_NO_UNIX))
		e->transport = HMC_TRANSPORT_AUTO;
	rc = hmc_buf_create(HMC_MEM_CPU, 0, BUF_SIZE, NULL, &e->buf);
	if (!rc)
		rc = hmc_comm_create(e->buf, &o, &e->comm);
	if (!rc && listen)
		rc = hmc_comm_listen(e->comm, "127.0.0.1", 0);
	if (rc) {
		tap(false, "communicator for rank %u: %s", rank, hmc_strerror(rc));
		if (e->buf)
			hmc_buf_destroy(e->buf);
		e->buf = NULL;
		return -1;
	}
	e->p = hmc_buf_ptr(e->buf);
	if (listen)
		e->port = (uint16_t)hmc_comm_listen_port(e->comm);
	return 0;
}

static void end_free(struct end *e)
{
	if (!e->buf)
		return;
	hmc_comm_destroy(e->comm);
	hmc_buf_destroy(e->buf);
	e->buf = NULL;
}

/*
 * Client @c and server @s (rank @sr) in this process move data
 * both ways: put + flush, then get; every byte checked in the other's
 * buffer. True if all went well.
 */
static bool exchange(struct end *c, struct end *s, uint32_t sr, uint64_t seed)
{
	const size_t len = MIB + 17, src = 2 * MIB + 5, dst = 3;
	int rc;

	data_fill(c->p, src, len, seed);
	data_unlike(s->p, dst, len, seed, src);
	rc = hmc_comm_put(c->comm, sr, src, dst, len);
	if (!rc)
		rc = hmc_comm_flush(c->comm, sr);
	if (rc || !data_check(s->p, dst, len, seed, src, "put into the server")) {
		diag("put + flush to rank %u: %s", sr, hmc_strerror(rc));
		return false;
	}
	data_fill(s->p, src, len, seed + 1);
	data_unlike(c->p, dst, len, seed + 1, src);
	rc = hmc_comm_get(c->comm, sr, dst, src, len);
	if (rc || !data_check(c->p, dst, len, seed + 1, src, "get from the server")) {
		diag("get from rank %u: %s", sr, hmc_strerror(rc));
		return false;
	}
	return true;
}

/* Connect @c (rank @cr) to server @s, then exchange verified data. */
static bool connect_and_exchange(struct end *c, uint32_t cr, struct end *s,
				 uint64_t seed)
{
	int rc = hmc_comm_connect(c->comm, 0, "127.0.0.1", s->port,
				  c->transport);

	if (rc) {
		diag("rank %u connecting: %s", cr, hmc_strerror(rc));
		return false;
	}
	return exchange(c, s, 0, seed);
}

/* --------------------------------------------------------------- helpers */

/*
 * A helper process, forked while this process still has no threads: it
 * waits for the server's port, runs its function, and exits with 0 if all
 * its checks passed. It can tell the parent that it reached a point.
 */
struct helper {
	pid_t pid;
	int go;		/* parent writes the port */
	int ready;	/* parent reads checkpoints */
};

typedef void (*helper_fn)(uint16_t port, int ready_fd);

static int helper_start(struct helper *h, helper_fn fn, int timeout_s)
{
	int go[2], ready[2];
	uint16_t port;

	if (pipe(go) || pipe(ready))
		return -1;
	h->pid = fork();
	if (h->pid < 0)
		return -1;
	if (h->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		alarm((unsigned int)timeout_s);
		close(go[1]);
		close(ready[0]);
		if (read(go[0], &port, sizeof(port)) != sizeof(port))
			_exit(3);
		fn(port, ready[1]);
		_exit(itest_failures() ? 1 : 0);
	}
	close(go[0]);
	close(ready[1]);
	h->go = go[1];
	h->ready = ready[0];
	return 0;
}

static void helper_go(struct helper *h, uint16_t port)
{
	if (write(h->go, &port, sizeof(port)) != sizeof(port))
		diag("helper %d: cannot send the port", (int)h->pid);
}

static void checkpoint(int fd)
{
	char c = 1;

	if (write(fd, &c, 1) != 1)
		itest_fail();
}

/* Wait for the helper's next checkpoint: true if it came in time. */
static bool helper_checkpoint(struct helper *h, int timeout_ms)
{
	struct pollfd p = { .fd = h->ready, .events = POLLIN };
	char c;

	return poll(&p, 1, timeout_ms) == 1 && read(h->ready, &c, 1) == 1;
}

/* Reap the helper (killing it at the deadline): its wait status. */
static int helper_end(struct helper *h, int timeout_ms, bool kill_it)
{
	int64_t deadline = itest_now_ms() + timeout_ms;
	int st = 0;

	if (kill_it)
		kill(h->pid, SIGKILL);
	while (waitpid(h->pid, &st, WNOHANG) == 0) {
		if (itest_now_ms() > deadline) {
			kill(h->pid, SIGKILL);
			waitpid(h->pid, &st, 0);
			diag("helper %d killed at its deadline", (int)h->pid);
			break;
		}
		itest_sleep_ms(5);
	}
	close(h->go);
	close(h->ready);
	return st;
}

/* ------------------------------------------------------------ kill case */

#define WINDOW		8
#define WIN_LEN		(256 * 1024 + 11)
#define TAG_POSTED	0x9057ed9057edULL
#define TAG_KILLED	0x4b111ed4b111edULL
#define TAG_DATA	0xda7ada7aULL
#define TAG_VICTIM	0x71c7171c7171ULL

static int kill_victim(struct hmc_comm *comm)
{
	uint64_t tag;
	int rc;

	/* Wait to be killed; coming back from this is a failure. */
	rc = hmc_comm_recv_tag(comm, 0, &tag, 60000);
	tap(false, "the victim outlived its killing: recv_tag: %s",
	    hmc_strerror(rc));
	return 1;
}

/* A survivor's window to the victim: WINDOW puts and WINDOW gets. */
static int post_window(struct hmc_comm *comm, int me, hmc_req_t *reqs)
{
	int i, rc, n = 0;

	for (i = 0; i < WINDOW; i++) {
		rc = hmc_comm_put_nb(comm, 2, 2 * MIB + (size_t)i * WIN_LEN / 4,
				     (size_t)me * 2 * MIB + (size_t)i * WIN_LEN / 8,
				     WIN_LEN, &reqs[n]);
		n += !rc;
		rc = hmc_comm_get_nb(comm, 2, 4 * MIB + (size_t)i * WIN_LEN / 4,
				     4 * MIB + (size_t)i * 1000, WIN_LEN,
				     &reqs[n]);
		n += !rc;
	}
	return n;
}

/* After the victim died: its requests end, and it is an error now. */
static int survivor_checks(struct hmc_comm *comm, hmc_req_t *reqs, int n)
{
	int i, rc, ok = 0, failed = 0, hung = 0, bad = 0;
	int64_t t0 = itest_now_ms(), t;
	hmc_req_t req;
	uint64_t tag;

	for (i = 0; i < n; i++) {
		rc = hmc_comm_wait(comm, reqs[i], 10000);
		if (rc == -ETIMEDOUT)
			hung++;
		else if (rc)
			failed++;
		else
			ok++;
	}
	t = itest_now_ms() - t0;
	bad += !tap(!hung && t < 12000,
		    "%d requests in flight to the killed rank ended in %lld ms: %d failed, %d had completed, %d hung",
		    n, (long long)t, failed, ok, hung);

	bad += !tap(wait_connected(comm, 2, false, 5000),
		    "is_connected(killed rank) turns false within 5 s");

	t0 = itest_now_ms();
	rc = hmc_comm_put(comm, 2, 0, 0, 4096);
	t = itest_now_ms() - t0;
	bad += !tap(rc && rc != -ETIMEDOUT && t < 6000,
		    "put to the killed rank: %s in %lld ms", hmc_strerror(rc),
		    (long long)t);
	rc = hmc_comm_get_nb(comm, 2, 0, 0, 4096, &req);
	if (!rc)
		rc = hmc_comm_wait(comm, req, 5000);
	bad += !tap(rc && rc != -ETIMEDOUT, "get_nb to the killed rank: %s",
		    hmc_strerror(rc));
	rc = hmc_comm_flush(comm, 2);
	bad += !tap(rc && rc != -ETIMEDOUT, "flush to the killed rank: %s",
		    hmc_strerror(rc));
	t0 = itest_now_ms();
	rc = hmc_comm_recv_tag(comm, 2, &tag, 5000);
	t = itest_now_ms() - t0;
	bad += !tap(rc && rc != -ETIMEDOUT && t < 1000,
		    "recv_tag from the killed rank: %s in %lld ms",
		    hmc_strerror(rc), (long long)t);
	bad += !tap(hmc_comm_peers(comm, NULL, 0) == 1,
		    "one connected peer left (%d)", hmc_comm_peers(comm, NULL, 0));
	return bad;
}

/* Ranks 0 and 1 move data after the death: put + flush + tag, and get. */
static int survivors_exchange(struct hmc_comm *comm, uint8_t *p, int me)
{
	const size_t len = MIB + 7, src = 2 * MIB + 1, dst = 5;
	int peer = !me, rc, bad = 0;
	uint32_t q = (uint32_t)peer;
	uint64_t tag = 0;

	data_fill(p, src, len, 0x5e0 + (uint64_t)me);
	rc = hmc_comm_put(comm, q, src, dst, len);
	if (!rc)
		rc = hmc_comm_flush(comm, q);
	if (!rc)
		rc = hmc_comm_send_tag(comm, q, TAG_DATA);
	bad += !tap(rc == 0, "put + flush + tag to the other survivor: %s",
		    hmc_strerror(rc));
	rc = hmc_comm_recv_tag(comm, q, &tag, 10000);
	bad += !tap(rc == 0 && tag == TAG_DATA &&
		    data_check(p, dst, len, 0x5e0 + (uint64_t)peer, src,
			       "survivor's put"),
		    "the other survivor's put arrived, every byte (%s)",
		    hmc_strerror(rc));
	rc = hmc_comm_get(comm, q, 6 * MIB, src, len);
	bad += !tap(rc == 0 && data_check(p, 6 * MIB, len,
					  0x5e0 + (uint64_t)peer, src,
					  "get from the survivor"),
		    "get from the other survivor, every byte (%s)",
		    hmc_strerror(rc));
	return bad;
}

static int kill_rank(struct mesh *m, void *arg)
{
	static const char *const ips[] = { "127.0.0.1", "127.0.0.1", "127.0.0.1" };
	static const int survivors[] = { 0, 1 };
	HMC_OPTS(hmc_comm_opts, o, .rank = (uint32_t)m->rank,
		 .connect_timeout_ms = 5000, .op_timeout_ms = 5000);
	hmc_req_t reqs[2 * WINDOW];
	struct hmc_comm *comm;
	struct hmc_buf *buf;
	uint64_t tag = 0;
	int n, rc, bad = 0;

	itest_prefix("%s kill r%d: ", name, m->rank);
	if (comm_setup(m->rank, rank_buf_size(8 * MIB, m->rank), "127.0.0.1",
		       &o, &buf, &comm))
		return 1;
	data_fill(hmc_buf_ptr(buf), 0, hmc_buf_size(buf), 0x77 + (uint64_t)m->rank);
	if (mesh_exchange(m, (uint16_t)hmc_comm_listen_port(comm)) ||
	    mesh_connect(m, comm, ips, 10000))
		goto out;
	rc = hmc_comm_barrier(comm, 10000);
	if (!tap(rc == 0, "barrier: %s", hmc_strerror(rc)))
		goto out;
	if (m->rank == 2) {
		rc = hmc_comm_send_tag(comm, 0, TAG_VICTIM);
		bad = rc ? !tap(false, "ready tag: %s", hmc_strerror(rc)) :
		      kill_victim(comm);
		goto out;
	}
	if (m->rank == 1) {
		n = post_window(comm, 1, reqs);
		rc = hmc_comm_send_tag(comm, 0, TAG_POSTED);
		rc = rc ? rc : hmc_comm_recv_tag(comm, 0, &tag, 20000);
		bad += !tap(rc == 0 && tag == TAG_KILLED,
			    "rank 0 killed rank 2 while my %d requests were posted (%s)",
			    n, hmc_strerror(rc));
	} else {
		rc = hmc_comm_recv_tag(comm, 2, &tag, 20000);
		rc = rc ? rc : tag == TAG_VICTIM ? 0 : -EPROTO;
		rc = rc ? rc : hmc_comm_recv_tag(comm, 1, &tag, 20000);
		n = post_window(comm, 0, reqs);
		bad += !tap(rc == 0 && tag == TAG_POSTED && !mesh_kill(m, 2),
			    "SIGKILL rank 2 with %d of my requests and rank 1's posted",
			    n);
		hmc_comm_send_tag(comm, 1, TAG_KILLED);
	}
	bad += survivor_checks(comm, reqs, n);
	bad += survivors_exchange(comm, hmc_buf_ptr(buf), m->rank);
	mesh_goodbye(comm, m->rank, survivors, 2);
out:
	hmc_comm_destroy(comm);
	hmc_buf_destroy(buf);
	return bad;
}

/* ----------------------------------------------------------- secret case */

static void secret_case(void)
{
	static const struct { uint32_t flags; const char *ctrl; } ways[] = {
		{ 0, "unix" }, { HMC_COMM_F_NO_UNIX, "tcp" },
	};
	struct end s, plain, c;
	unsigned int w;
	int rc;

	itest_prefix("%s secret: ", name);
	if (end_new(&s, 0, SECRET, 0, 5000, true))
		return;
	for (w = 0; w < 2; w++) {
		const char *how = ways[w].ctrl;
		uint32_t f = ways[w].flags;

		if (!end_new(&c, 1, "not the secret", f, 5000, false)) {
			rc = hmc_comm_connect(c.comm, 0, "127.0.0.1", s.port,
					      c.transport);
			tap(rc == -EACCES, "%s: wrong secret refused: %s", how,
			    hmc_strerror(rc));
			end_free(&c);
		}
		if (!end_new(&c, 2, NULL, f, 5000, false)) {
			rc = hmc_comm_connect(c.comm, 0, "127.0.0.1", s.port,
					      c.transport);
			tap(rc == -EACCES, "%s: no secret refused: %s", how,
			    hmc_strerror(rc));
			end_free(&c);
		}
		tap(!hmc_comm_is_connected(s.comm, 1) &&
		    !hmc_comm_is_connected(s.comm, 2) &&
		    hmc_comm_peers(s.comm, NULL, 0) == 0,
		    "%s: the server has no peer from the refused dialers", how);
		/* The refused rank is not burnt: with the secret it gets in. */
		if (!end_new(&c, 1, SECRET, f, 5000, false)) {
			tap(connect_and_exchange(&c, 1, &s, 0x5ec + w),
			    "%s: the right secret gets in and moves verified data",
			    how);
			end_free(&c);
		}
		wait_connected(s.comm, 1, false, 5000);
	}
	/* A dialer with a secret refuses a listener that proves nothing. */
	if (!end_new(&plain, 0, NULL, 0, 5000, true)) {
		if (!end_new(&c, 3, SECRET, 0, 5000, false)) {
			rc = hmc_comm_connect(c.comm, 0, "127.0.0.1", plain.port,
					      c.transport);
			tap(rc == -EACCES,
			    "a listener without the secret is refused by the dialer: %s",
			    hmc_strerror(rc));
			end_free(&c);
		}
		end_free(&plain);
	}
	end_free(&s);
}

/* ---------------------------------------------------------- garbage case */

static int raw_connect(bool is_unix, uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port) };
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd;

	fd = socket(is_unix ? AF_UNIX : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (is_unix) {
		/* The listener's socket path (lib/wire/sock.c). */
		if (!sock_unix_path(sun.sun_path, sizeof(sun.sun_path), port,
				    false) &&
		    !connect(fd, (struct sockaddr *)&sun, sizeof(sun)))
			return fd;
	} else {
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (!connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
			return fd;
	}
	close(fd);
	return -1;
}

static bool raw_send(int fd, const void *p, size_t len)
{
	return send(fd, p, len, MSG_NOSIGNAL) == (ssize_t)len;
}

struct drop {
	bool dropped;		/* EOF or reset before the deadline */
	int64_t ms;		/* when */
	int reject;		/* errno of a REJECT frame, or 0 */
	int welcome;		/* WELCOME frames seen */
};

/* Read until the server closes the connection or @timeout_ms passes. */
static struct drop raw_wait_drop(int fd, int timeout_ms)
{
	int64_t t0 = itest_now_ms(), left;
	struct drop d = { 0 };
	uint8_t in[4096];
	size_t have = 0;
	ssize_t n;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		left = t0 + timeout_ms - itest_now_ms();
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		n = recv(fd, in + have, sizeof(in) - have, 0);
		if (n <= 0) {
			d.dropped = true;
			break;
		}
		have += (size_t)n;
		while (have >= FRAME_HDR_LEN) {
			struct frame_hdr h;
			int32_t err;

			if (frame_decode_hdr(in, &h) || have < FRAME_HDR_LEN + h.len)
				break;
			if (h.type == FRAME_REJECT &&
			    !frame_decode_s32(in + FRAME_HDR_LEN, h.len, &err))
				d.reject = err;
			d.welcome += h.type == FRAME_WELCOME;
			memmove(in, in + FRAME_HDR_LEN + h.len,
				have - FRAME_HDR_LEN - h.len);
			have -= FRAME_HDR_LEN + h.len;
		}
		if (have == sizeof(in))
			have = 0;
	}
	d.ms = itest_now_ms() - t0;
	return d;
}

static uint32_t probe_rank = 100;	/* fake ranks the probes bind */

/* Over Unix (@ux), the HELLO says who we are and that we meant 127.0.0.1. */
static size_t hello(uint8_t *p, bool ux, uint32_t src, uint32_t dst,
		    uint32_t flags)
{
	struct frame_hello h = { .src_rank = src, .dst_rank = dst,
				 .flags = flags };
	size_t n;

	memset(h.nonce, 0x5a, sizeof(h.nonce));
	if (ux) {
		h.flags |= FRAME_HELLO_F_HOST;
		host_boot_id(h.boot_id);
		h.netns = host_netns();
		sock_addr_v6("127.0.0.1", h.addr);
	}
	n = frame_encode_hello(p + FRAME_HDR_LEN, &h);
	frame_encode_hdr(p, FRAME_HELLO, 0, (uint32_t)n);
	return FRAME_HDR_LEN + n;
}

/*
 * Send @len bytes of @msg (closing our side after them if @close_after)
 * and expect the server to drop us, REJECTing with @want_reject if that is
 * not 0.
 */
static void garbage(bool is_unix, uint16_t port, const char *what,
		    const void *msg, size_t len, bool close_after,
		    int want_reject)
{
	const char *ctrl = is_unix ? "unix" : "tcp";
	struct drop d;
	int fd = raw_connect(is_unix, port);

	if (fd < 0) {
		tap(false, "%s: %s: connect: %s", ctrl, what, strerror(errno));
		return;
	}
	if (!raw_send(fd, msg, len)) {
		/* The server may already have dropped us: fine. */
		diag("%s: %s: send: %s", ctrl, what, strerror(errno));
	}
	if (close_after) {
		uint8_t h[FRAME_HDR_LEN + FRAME_HELLO_LEN + FRAME_HELLO_HOST_LEN];
		size_t n = hello(h, is_unix, probe_rank, 0, 0);

		close(fd);
		/* Nothing to see on that socket: the server must go on. */
		fd = raw_connect(is_unix, port);
		d = raw_wait_drop(fd, fd >= 0 && raw_send(fd, h, n) ? 300 : 0);
		if (fd >= 0)
			close(fd);
		tap(d.welcome == 1, "%s: %s, then close: the next HELLO is still WELCOMEd",
		    ctrl, what);
		probe_rank++;
		return;
	}
	d = raw_wait_drop(fd, 3000);
	close(fd);
	tap(d.dropped && (!want_reject || d.reject == want_reject),
	    "%s: %s: dropped after %lld ms%s%s", ctrl, what, (long long)d.ms,
	    d.reject ? ", REJECT " : "",
	    d.reject ? hmc_strerror(d.reject) : "");
}

static void garbage_case(void)
{
	uint8_t msg[256], junk[64];
	struct end s, c;
	struct drop d;
	int fds[8], fd, i, ways;
	size_t n;
	int64_t t0;
	bool ok;

	itest_prefix("%s garbage: ", name);
	if (end_new(&s, 0, NULL, 0, HS_TIMEOUT_MS, true))
		return;
	for (i = 0; i < (int)sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 37 + 11);

	for (ways = 0; ways < 2; ways++) {
		bool ux = ways == 0;

		n = hello(msg, ux, 7, 0, 0);
		msg[0] ^= 0xff;
		garbage(ux, s.port, "bad magic", msg, n, false, -EPROTO);
		n = hello(msg, ux, 7, 0, 0);
		msg[4] = FRAME_VERSION + 1;
		garbage(ux, s.port, "bad version", msg, n, false, -EPROTO);
		frame_encode_hdr(msg, FRAME_HELLO, 0, FRAME_MAX_PAYLOAD + 1);
		garbage(ux, s.port, "length over the maximum", msg,
			FRAME_HDR_LEN, false, -EPROTO);
		frame_encode_hdr(msg, FRAME_XPORT_REQ, 0, 0xffffffffu);
		garbage(ux, s.port, "length 0xffffffff", msg, FRAME_HDR_LEN,
			false, -EPROTO);
		n = hello(msg, ux, 7, 0, 0);
		msg[14] = 1;
		garbage(ux, s.port, "reserved bits set", msg, n, false, -EPROTO);
		n = hello(msg, ux, 7, 0, 0);
		msg[5] = 0x7f;
		garbage(ux, s.port, "unknown frame type", msg, n, false, -EPROTO);
		frame_encode_hdr(msg, FRAME_TAG, 0, 8);
		memset(msg + FRAME_HDR_LEN, 1, 8);
		garbage(ux, s.port, "a TAG before HELLO", msg, FRAME_HDR_LEN + 8,
			false, -EPROTO);
		n = hello(msg, ux, 7, 9, 0);
		garbage(ux, s.port, "HELLO for another rank", msg, n, false,
			-ESRCH);
		n = hello(msg, ux, 0, 0, 0);
		garbage(ux, s.port, "HELLO claiming the server's own rank", msg,
			n, false, -EINVAL);
		n = hello(msg, ux, 7, 0, FRAME_HELLO_F_AUTH);
		garbage(ux, s.port, "HELLO asking for auth the server lacks",
			msg, n, false, -EACCES);
		garbage(ux, s.port, "7 bytes of a header", msg, 7, true, 0);
		n = hello(msg, ux, 7, 0, 0);
		garbage(ux, s.port, "a HELLO cut short", msg, n - 20, true, 0);
		garbage(ux, s.port, "64 bytes of junk", junk, sizeof(junk),
			false, 0);

		/* A valid HELLO gets a WELCOME; junk after it ends the peer. */
		fd = raw_connect(ux, s.port);
		n = hello(msg, ux, 7, 0, 0);
		memcpy(msg + n, junk, sizeof(junk));
		ok = fd >= 0 && raw_send(fd, msg, n + sizeof(junk));
		d = raw_wait_drop(fd, 3000);
		if (fd >= 0)
			close(fd);
		tap(ok && d.welcome == 1 && d.dropped,
		    "%s: a valid HELLO then junk: WELCOMEd, then dropped after %lld ms",
		    ux ? "unix" : "tcp", (long long)d.ms);
		/* ... and rank 7 is free again for a real client. */
		if (!end_new(&c, 7, NULL, 0, 5000, false)) {
			int64_t until = itest_now_ms() + 3000;
			int rc;

			do {	/* the server may still be tearing the fake down */
				rc = hmc_comm_connect(c.comm, 0, "127.0.0.1",
						      s.port, c.transport);
			} while (rc == -EEXIST && itest_now_ms() < until &&
				 (itest_sleep_ms(20), true));
			tap(!rc && exchange(&c, &s, 0, 0x700 + (uint64_t)ways),
			    "%s: rank 7 connects for real after the fake was dropped: %s",
			    ux ? "unix" : "tcp", hmc_strerror(rc));
			end_free(&c);
			wait_connected(s.comm, 7, false, 3000);
		}

		/* A HELLO that trickles in byte by byte is still a HELLO. */
		fd = raw_connect(ux, s.port);
		n = hello(msg, ux, 8, 0, 0);
		ok = fd >= 0;
		for (i = 0; ok && i < (int)n; i++) {
			ok = raw_send(fd, msg + i, 1);
			itest_sleep_ms(2);
		}
		d = raw_wait_drop(fd, 300);
		tap(ok && d.welcome == 1 && !d.dropped,
		    "%s: a HELLO sent one byte at a time is WELCOMEd",
		    ux ? "unix" : "tcp");
		if (fd >= 0)
			close(fd);
	}

	/*
	 * Silent dialers hold up nobody: with 8 of them connected, a real
	 * client gets in at once; they are dropped at the handshake deadline.
	 */
	t0 = itest_now_ms();
	for (i = 0; i < 8; i++)
		fds[i] = raw_connect(i & 1, s.port);
	if (!end_new(&c, 5, NULL, HMC_COMM_F_NO_UNIX, 5000, false)) {
		int64_t t1 = itest_now_ms();
		int rc = hmc_comm_connect(c.comm, 0, "127.0.0.1", s.port,
					  c.transport);

		t1 = itest_now_ms() - t1;
		tap(!rc && t1 < HS_TIMEOUT_MS / 2 && exchange(&c, &s, 0, 0x51),
		    "a client connects in %lld ms past 8 silent dialers and moves verified data (%s)",
		    (long long)t1, hmc_strerror(rc));
		end_free(&c);
	}
	for (i = 0; i < 8; i++) {
		if (fds[i] < 0) {
			tap(false, "silent dialer %d: connect", i);
			continue;
		}
		d = raw_wait_drop(fds[i], HS_TIMEOUT_MS + 3000);
		d.ms = itest_now_ms() - t0;
		close(fds[i]);
		tap(d.dropped && d.ms >= HS_TIMEOUT_MS - 100 &&
		    d.ms < HS_TIMEOUT_MS + 2500,
		    "silent %s dialer %d dropped at the handshake deadline: after %lld ms (deadline %d)",
		    i & 1 ? "unix" : "tcp", i, (long long)d.ms, HS_TIMEOUT_MS);
	}

	/* After all that, the server still serves. */
	if (!end_new(&c, 6, NULL, 0, 5000, false)) {
		tap(connect_and_exchange(&c, 6, &s, 0x66),
		    "after the garbage, a client connects and moves verified data");
		end_free(&c);
	}
	end_free(&s);
}

/*
 * The listener checks the dialer's proof itself: a raw dialer that answers
 * the CHALLENGE with a wrong MAC, or claims no secret, is refused.
 */
static void raw_auth_case(void)
{
	uint8_t msg[128], in[FRAME_HDR_LEN + FRAME_CHALLENGE_LEN];
	struct frame_hdr h;
	struct drop d;
	struct end s;
	size_t n, got = 0;
	ssize_t r;
	int fd, ways;

	itest_prefix("%s secret: ", name);
	if (end_new(&s, 0, SECRET, 0, 5000, true))
		return;
	for (ways = 0; ways < 2; ways++) {
		const char *ctrl = ways ? "tcp" : "unix";

		n = hello(msg, !ways, 11, 0, 0);
		garbage(!ways, s.port, "HELLO without auth to a server with a secret",
			msg, n, false, -EACCES);

		fd = raw_connect(!ways, s.port);
		n = hello(msg, !ways, 11, 0, FRAME_HELLO_F_AUTH);
		if (fd < 0 || !raw_send(fd, msg, n)) {
			tap(false, "%s: raw dialer: %s", ctrl, strerror(errno));
			if (fd >= 0)
				close(fd);
			continue;
		}
		got = 0;
		while (got < sizeof(in)) {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			if (poll(&p, 1, 3000) != 1)
				break;
			r = recv(fd, in + got, sizeof(in) - got, 0);
			if (r <= 0)
				break;
			got += (size_t)r;
		}
		if (got != sizeof(in) || frame_decode_hdr(in, &h) ||
		    h.type != FRAME_CHALLENGE) {
			tap(false, "%s: a HELLO with auth gets a CHALLENGE", ctrl);
			close(fd);
			continue;
		}
		frame_encode_hdr(msg, FRAME_AUTH, 0, FRAME_MAC_LEN);
		memset(msg + FRAME_HDR_LEN, 0xab, FRAME_MAC_LEN);
		raw_send(fd, msg, FRAME_HDR_LEN + FRAME_MAC_LEN);
		d = raw_wait_drop(fd, 3000);
		close(fd);
		tap(d.dropped && d.reject == -EACCES && !d.welcome &&
		    !hmc_comm_is_connected(s.comm, 11),
		    "%s: an AUTH with a wrong MAC: REJECT %s, dropped", ctrl,
		    hmc_strerror(d.reject));
	}
	end_free(&s);
}

/* ----------------------------------------------------------- fdpass case */

/*
 * Read one whole frame into @p (@cap bytes) within @timeout_ms, counting
 * the descriptors that come with it in *@nfds (and closing them). 0, or -1
 * at EOF, on error or at the deadline.
 */
static int raw_frame(int fd, uint8_t *p, size_t cap, struct frame_hdr *h,
		     int *nfds, int timeout_ms)
{
	int64_t until = itest_now_ms() + timeout_ms;
	size_t want = FRAME_HDR_LEN, have = 0;
	bool hdr_done = false;

	while (have < want) {
		union {
			char buf[CMSG_SPACE(4 * sizeof(int))];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = { p + have, want - have };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
				      .msg_control = ctl.buf,
				      .msg_controllen = sizeof(ctl.buf) };
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		struct cmsghdr *cm;
		int64_t left = until - itest_now_ms();
		ssize_t n;

		if (left <= 0 || poll(&pfd, 1, (int)left) != 1)
			return -1;
		n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
		if (n <= 0)
			return -1;
		for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
			int k, one;

			if (cm->cmsg_level != SOL_SOCKET ||
			    cm->cmsg_type != SCM_RIGHTS)
				continue;
			for (k = 0; (size_t)k < (cm->cmsg_len - CMSG_LEN(0)) /
						sizeof(int); k++) {
				memcpy(&one, CMSG_DATA(cm) + k * sizeof(int),
				       sizeof(int));
				close(one);
				(*nfds)++;
			}
		}
		have += (size_t)n;
		if (!hdr_done && have == FRAME_HDR_LEN) {
			if (frame_decode_hdr(p, h) || FRAME_HDR_LEN + h->len > cap)
				return -1;
			hdr_done = true;
			want += h->len;
		}
	}
	return 0;
}

/* Every frame until EOF or @timeout_ms: the descriptors that came along. */
static int raw_drain_fds(int fd, int timeout_ms)
{
	static uint8_t in[FRAME_HDR_LEN + FRAME_MAX_PAYLOAD];
	struct frame_hdr h;
	int nfds = 0;

	while (!raw_frame(fd, in, sizeof(in), &h, &nfds, timeout_ms))
		;
	return nfds;
}

/* An XPORT_REQ (or ACK) for shm with our buffer's memfd. */
static bool raw_send_xport(int fd, enum frame_type type, int memfd,
			   uint64_t size)
{
	uint8_t msg[FRAME_HDR_LEN + FRAME_XPORT_HDR_LEN + 32];
	uint8_t *blob = msg + FRAME_HDR_LEN + FRAME_XPORT_HDR_LEN;
	struct frame_xport x = { .transport = HMC_TRANSPORT_SHM,
				 .buf_size = size, .blob_len = 32 };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { msg, sizeof(msg) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = ctl.buf,
			    .msg_controllen = sizeof(ctl.buf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);

	/* The shm blob: magic "HMCS", 0, size, boot id (lib/xport/shm.c). */
	put_be32(blob, 0x484d4353u);
	put_be32(blob + 4, 0);
	put_be64(blob + 8, size);
	host_boot_id(blob + 16);
	frame_encode_xport(msg + FRAME_HDR_LEN, &x);
	frame_encode_hdr(msg, type, FRAME_F_FD, FRAME_XPORT_HDR_LEN + 32);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &memfd, sizeof(int));
	return sendmsg(fd, &m, MSG_NOSIGNAL) == (ssize_t)sizeof(msg);
}

/*
 * A raw dialer against a listener with SECRET: @mode 0 answers the
 * CHALLENGE right, 1 wrong, 2 not at all; each then asks for shm with a
 * descriptor. The descriptors the listener sent back, or -1.
 */
static int raw_dialer_fds(struct end *s, int mode, int memfd, uint32_t rank)
{
	uint8_t msg[FRAME_HDR_LEN + FRAME_MAX_PAYLOAD];
	struct frame_challenge ch;
	uint8_t mine[FRAME_NONCE_LEN];
	struct frame_hdr h;
	int fd, nfds = 0;
	size_t n;

	fd = raw_connect(true, s->port);
	if (fd < 0)
		return -1;
	n = hello(msg, true, rank, 0, FRAME_HELLO_F_AUTH);
	memset(mine, 0x5a, sizeof(mine));	/* hello()'s nonce */
	if (!raw_send(fd, msg, n) ||
	    raw_frame(fd, msg, sizeof(msg), &h, &nfds, 3000) ||
	    h.type != FRAME_CHALLENGE ||
	    frame_decode_challenge(msg + FRAME_HDR_LEN, h.len, &ch)) {
		close(fd);
		return -1;
	}
	if (mode < 2) {
		frame_encode_hdr(msg, FRAME_AUTH, 0, FRAME_MAC_LEN);
		auth_mac(SECRET, strlen(SECRET), AUTH_ROLE_DIALER, mine,
			 ch.nonce, rank, 0, msg + FRAME_HDR_LEN);
		if (mode == 1)
			msg[FRAME_HDR_LEN] ^= 1;
		raw_send(fd, msg, FRAME_HDR_LEN + FRAME_MAC_LEN);
	}
	raw_send_xport(fd, FRAME_XPORT_REQ, memfd, BUF_SIZE);
	nfds += raw_drain_fds(fd, 1500);
	close(fd);
	return nfds;
}

struct fake {
	int lfd;
	int mode;		/* 0 WELCOME at once, 1 a bad CHALLENGE */
	int nfds;		/* descriptors the dialer sent us */
	bool helloed;
};

/* A listener that proves nothing, at the Unix path of a free port. */
static void *fake_listener(void *arg)
{
	static uint8_t msg[FRAME_HDR_LEN + FRAME_MAX_PAYLOAD];
	struct fake *f = arg;
	struct pollfd pfd = { .fd = f->lfd, .events = POLLIN };
	struct frame_hdr h;
	int fd;

	if (poll(&pfd, 1, 5000) != 1)
		return NULL;
	fd = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (!raw_frame(fd, msg, sizeof(msg), &h, &f->nfds, 3000) &&
	    h.type == FRAME_HELLO) {
		f->helloed = true;
		if (f->mode == 0) {
			frame_encode_hdr(msg, FRAME_WELCOME, 0, 0);
			raw_send(fd, msg, FRAME_HDR_LEN);
		} else {
			frame_encode_hdr(msg, FRAME_CHALLENGE, 0,
					 FRAME_CHALLENGE_LEN);
			memset(msg + FRAME_HDR_LEN, 0x77, FRAME_CHALLENGE_LEN);
			raw_send(fd, msg, FRAME_HDR_LEN + FRAME_CHALLENGE_LEN);
		}
	}
	f->nfds += raw_drain_fds(fd, 1500);
	close(fd);
	return NULL;
}

/*
 * Our dialer (@secret, AUTO) against a fake listener: its hmc_comm_connect()
 * result, and in f->nfds the descriptors that reached the fake.
 */
static int fake_dial(struct fake *f, const char *secret)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	socklen_t sl = sizeof(sin);
	pthread_t t;
	struct end c;
	int tfd, rc = -EIO;

	/* A TCP port that is ours while the fake runs: nobody else's path. */
	tfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (tfd < 0 || bind(tfd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    getsockname(tfd, (struct sockaddr *)&sin, &sl))
		goto out_tcp;
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (f->lfd < 0 ||
	    sock_unix_path(sun.sun_path, sizeof(sun.sun_path),
			   ntohs(sin.sin_port), true) ||
	    bind(f->lfd, (struct sockaddr *)&sun, sizeof(sun)) ||
	    listen(f->lfd, 4))
		goto out_unix;
	if (pthread_create(&t, NULL, fake_listener, f))
		goto out_path;
	if (!end_new(&c, 1, secret, 0, 2000, false)) {
		rc = hmc_comm_connect(c.comm, 0, "127.0.0.1",
				      ntohs(sin.sin_port), HMC_TRANSPORT_AUTO);
		end_free(&c);
	}
	pthread_join(t, NULL);
out_path:
	unlink(sun.sun_path);
out_unix:
	if (f->lfd >= 0)
		close(f->lfd);
out_tcp:
	if (tfd >= 0)
		close(tfd);
	return rc;
}

/* Raw Unix HELLOs that are not meant for this listener. */
static void host_check_case(struct end *s)
{
	uint8_t msg[FRAME_HDR_LEN + FRAME_HELLO_LEN + FRAME_HELLO_HOST_LEN];
	struct frame_hello h = { .src_rank = 21, .dst_rank = 0 };
	static const struct { const char *what; int how; } cases[] = {
		{ "a HELLO without the host part", 0 },
		{ "a HELLO from another boot", 1 },
		{ "a HELLO from another network namespace for 127.0.0.1", 2 },
		{ "a HELLO from another network namespace for 192.0.2.1", 3 },
	};
	unsigned int i;
	size_t n;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		memset(h.nonce, 0x5a, sizeof(h.nonce));
		h.flags = cases[i].how ? FRAME_HELLO_F_HOST : 0;
		host_boot_id(h.boot_id);
		h.netns = host_netns();
		sock_addr_v6("127.0.0.1", h.addr);
		if (cases[i].how == 1)
			h.boot_id[3] ^= 0x10;
		if (cases[i].how >= 2)
			h.netns += 1;
		if (cases[i].how == 3)
			sock_addr_v6("192.0.2.1", h.addr);
		n = frame_encode_hello(msg + FRAME_HDR_LEN, &h);
		frame_encode_hdr(msg, FRAME_HELLO, 0, (uint32_t)n);
		garbage(true, s->port, cases[i].what, msg, FRAME_HDR_LEN + n,
			false, -ESRCH);
	}
}

static void fdpass_case(void)
{
	static const char *const modes[] = {
		"passes the challenge", "answers the challenge wrong",
		"skips the challenge",
	};
	struct hmc_buf *mine;
	struct fake f;
	struct end s;
	int memfd, n, m, rc;

	itest_prefix("%s fdpass: ", name);
	if (end_new(&s, 0, SECRET, 0, 3000, true))
		return;
	host_check_case(&s);
	if (hmc_buf_create(HMC_MEM_CPU, 0, BUF_SIZE, NULL, &mine) ||
	    hmc_buf_export_fd(mine, 0, 0, HMC_BUF_EXPORT_RDWR, &memfd)) {
		tap(false, "a memfd buffer to offer");
		end_free(&s);
		return;
	}
	for (m = 2; m >= 0; m--) {
		n = raw_dialer_fds(&s, m, memfd, 30 + (uint32_t)m);
		tap(m ? n == 0 : n == 1,
		    "a raw unix dialer that %s and asks for shm receives %d descriptor(s)",
		    modes[m], n);
	}
	close(memfd);
	hmc_buf_destroy(mine);
	end_free(&s);

	memset(&f, 0, sizeof(f));
	rc = fake_dial(&f, SECRET);
	tap(rc == -EACCES && f.helloed && f.nfds == 0,
	    "a fake listener that WELCOMEs a dialer with a secret unchallenged: %s, %d descriptor(s) reached it",
	    hmc_strerror(rc), f.nfds);
	memset(&f, 0, sizeof(f));
	f.mode = 1;
	rc = fake_dial(&f, SECRET);
	tap(rc == -EACCES && f.helloed && f.nfds == 0,
	    "a fake listener with a bad CHALLENGE: %s, %d descriptor(s) reached it",
	    hmc_strerror(rc), f.nfds);
	/* Without secrets, the dialer's shm request does carry its buffer. */
	memset(&f, 0, sizeof(f));
	rc = fake_dial(&f, NULL);
	tap(rc && f.helloed && f.nfds == 1,
	    "a dialer without a secret passes its descriptor after WELCOME (%d; connect: %s)",
	    f.nfds, hmc_strerror(rc));
}

/* --------------------------------------------------------- unixpath case */

/* A communicator of @rank listening on @ip:@port. 0 or -1. */
static int end_listen(struct end *e, uint32_t rank, const char *ip,
		      uint16_t port)
{
	HMC_OPTS(hmc_comm_opts, o, .rank = rank, .op_timeout_ms = 10000);
	int rc;

	memset(e, 0, sizeof(*e));
	rc = hmc_buf_create(HMC_MEM_CPU, 0, BUF_SIZE, NULL, &e->buf);
	if (!rc)
		rc = hmc_comm_create(e->buf, &o, &e->comm);
	if (!rc)
		rc = hmc_comm_listen(e->comm, ip, port);
	if (rc) {
		tap(false, "rank %u listening on %s:%u: %s", rank, ip, port,
		    hmc_strerror(rc));
		if (e->comm)
			hmc_comm_destroy(e->comm);
		if (e->buf)
			hmc_buf_destroy(e->buf);
		e->buf = NULL;
		return -1;
	}
	e->p = hmc_buf_ptr(e->buf);
	e->port = port;
	return 0;
}

/* Connect rank @cr to @ip:@s->port (AUTO) and move data with @s. */
static bool dial_exchange(struct end *c, uint32_t cr, const char *ip,
			  struct end *s, uint64_t seed, const char *what)
{
	int rc;

	if (end_new(c, cr, NULL, 0, 5000, false))
		return false;
	rc = hmc_comm_connect(c->comm, 0, ip, s->port, HMC_TRANSPORT_AUTO);
	if (rc) {
		tap(false, "%s: connect: %s", what, hmc_strerror(rc));
		end_free(c);
		return false;
	}
	return tap(hmc_comm_is_connected(s->comm, cr) && exchange(c, s, 0, seed),
		   "%s: connected over %s, verified data with that listener",
		   what, hmc_transport_name(hmc_comm_peer_transport(c->comm, 0)));
}

/* A socket at @path that nobody listens on, last changed @age_s ago. */
static int stale_socket(const char *path, int age_s)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct timespec ts[2];
	int fd;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)))
		return -1;
	close(fd);
	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec -= age_s;
	ts[1] = ts[0];
	return utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW);
}

static void unixpath_case(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char old_path[sizeof(sun.sun_path)], young_path[sizeof(sun.sun_path)];
	socklen_t sl = sizeof(sin);
	struct end a, b, c;
	struct stat st;
	uint16_t port;
	int fd;

	itest_prefix("%s unixpath: ", name);
	/* A free port, and a socket at its path that nobody listens on. */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    getsockname(fd, (struct sockaddr *)&sin, &sl)) {
		tap(false, "a free port: %s", strerror(errno));
		return;
	}
	close(fd);
	port = ntohs(sin.sin_port);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || sock_unix_path(sun.sun_path, sizeof(sun.sun_path), port,
				     true) ||
	    bind(fd, (struct sockaddr *)&sun, sizeof(sun))) {
		tap(false, "a stale socket at the path: %s", strerror(errno));
		return;
	}
	close(fd);		/* left behind, as by a killed listener */

	/* Other ports' sockets of listeners that died: old ones go. */
	snprintf(old_path, sizeof(old_path), "%s.old-%d", sun.sun_path,
		 (int)getpid());
	snprintf(young_path, sizeof(young_path), "%s.young-%d", sun.sun_path,
		 (int)getpid());
	if (stale_socket(old_path, 60) || stale_socket(young_path, 0)) {
		tap(false, "stale sockets beside it: %s", strerror(errno));
		return;
	}

	if (end_listen(&a, 0, "127.0.0.1", port))
		return;
	tap(!stat(sun.sun_path, &st) && S_ISSOCK(st.st_mode),
	    "a listener replaces the stale socket at %s", sun.sun_path);
	tap(stat(old_path, &st) && errno == ENOENT && !stat(young_path, &st),
	    "it removes a dead listener's socket older than 10 s, not a younger one");
	unlink(young_path);
	if (dial_exchange(&c, 1, "127.0.0.1", &a, 0xa1, "to 127.0.0.1"))
		end_free(&c);
	/* The same rank and port at another address: not at the path. */
	if (!end_listen(&b, 0, "127.0.0.2", port)) {
		if (dial_exchange(&c, 2, "127.0.0.2", &b, 0xb2,
				  "to 127.0.0.2, whose port's path is another listener's"))
			end_free(&c);
		tap(!hmc_comm_is_connected(a.comm, 2),
		    "the listener at the path did not take the dialer meant for 127.0.0.2");
		end_free(&b);
	}
	end_free(&a);
	tap(stat(sun.sun_path, &st) && errno == ENOENT,
	    "the path goes with its listener");
}

/* -------------------------------------------------------------- dup case */

/* Another process claims rank 1, which is connected. */
static void dup_helper(uint16_t port, int ready)
{
	struct end c;
	int rc;

	itest_prefix("%s dup (other process): ", name);
	if (end_new(&c, 1, NULL, 0, 5000, false))
		return;
	rc = hmc_comm_connect(c.comm, 0, "127.0.0.1", port, c.transport);
	tap(rc == -EEXIST, "a second process claiming connected rank 1: %s",
	    hmc_strerror(rc));
	end_free(&c);
	checkpoint(ready);
}

static void dup_case(struct helper *h)
{
	struct end s, a, b;
	int rc, st;

	itest_prefix("%s dup: ", name);
	if (end_new(&s, 0, NULL, 0, 5000, true))
		return;
	if (end_new(&a, 1, NULL, 0, 5000, false))
		goto out_s;
	tap(connect_and_exchange(&a, 1, &s, 0xd1),
	    "rank 1 connects and moves verified data");
	helper_go(h, s.port);
	st = helper_end(h, 15000, false);
	tap(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	    "the other process was refused (exit status 0x%x)", st);
	if (!end_new(&b, 1, NULL, HMC_COMM_F_NO_UNIX, 5000, false)) {
		rc = hmc_comm_connect(b.comm, 0, "127.0.0.1", s.port,
				      b.transport);
		tap(rc == -EEXIST, "a second communicator claiming rank 1 over tcp: %s",
		    hmc_strerror(rc));
		end_free(&b);
	}
	rc = hmc_comm_connect(a.comm, 0, "127.0.0.1", s.port, a.transport);
	tap(rc == -EISCONN, "connecting again while connected: %s",
	    hmc_strerror(rc));
	tap(hmc_comm_is_connected(s.comm, 1) && exchange(&a, &s, 0, 0xd2),
	    "the first rank 1 is still connected and moves verified data");
	end_free(&a);
out_s:
	end_free(&s);
}

/* ------------------------------------------------------------- segs case */

static void segs_helper(uint16_t port, int ready)
{
	struct end c;
	int rc;

	itest_prefix("%s segs (other process): ", name);
	setenv("UCX_TCP_RX_SEG_SIZE", "16k", 1);
	if (end_new(&c, 2, NULL, 0, 5000, false))
		return;
	rc = hmc_comm_connect(c.comm, 0, "127.0.0.1", port, HMC_TRANSPORT_UCX);
	tap(rc == -EPROTO && !hmc_comm_is_connected(c.comm, 0),
	    "a rank with a 16 KiB UCX tcp receive segment is refused: %s",
	    hmc_strerror(rc));
	end_free(&c);
	checkpoint(ready);
}

static void segs_case(struct helper *h)
{
	struct end s, a;
	int st;

	itest_prefix("%s segs: ", name);
	if (end_new(&s, 0, NULL, 0, 5000, true))
		return;
	helper_go(h, s.port);
	st = helper_end(h, 15000, false);
	tap(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	    "the process with other segments was refused and lived on (exit status 0x%x)",
	    st);
	tap(!hmc_comm_is_connected(s.comm, 2), "rank 2 is not connected");
	if (!end_new(&a, 1, NULL, 0, 5000, false)) {
		tap(connect_and_exchange(&a, 1, &s, 0x5e9),
		    "a rank with the same segments connects and moves verified data");
		end_free(&a);
	}
	end_free(&s);
}

/* ------------------------------------------------------------- tags case */

static const uint64_t queued[] = { 0x1111, 0x2222222222ULL, 0x3333 };

/* Rank 2 sends three tags, says so, and waits to be killed. */
static void tags_helper(uint16_t port, int ready)
{
	struct end c;
	unsigned int i;
	int rc;

	itest_prefix("%s tags (victim): ", name);
	if (end_new(&c, 2, NULL, 0, 5000, false))
		return;
	rc = hmc_comm_connect(c.comm, 0, "127.0.0.1", port, c.transport);
	for (i = 0; !rc && i < 3; i++)
		rc = hmc_comm_send_tag(c.comm, 0, queued[i]);
	if (rc)
		tap(false, "connect and send three tags: %s", hmc_strerror(rc));
	checkpoint(ready);
	pause();
}

/* Three tags came from @rank, which is gone: they, then an error. */
static void drain_tags(struct end *s, uint32_t rank, const char *how)
{
	uint64_t tag;
	int64_t t0;
	unsigned int i;
	int rc;
	bool ok = wait_connected(s->comm, rank, false, 5000);

	tap(ok, "%s: is_connected turns false", how);
	for (i = 0; i < 3; i++) {
		tag = 0;
		rc = hmc_comm_recv_tag(s->comm, rank, &tag, 2000);
		ok = !rc && tag == queued[i];
		tap(ok, "%s: queued tag %u of 3 still delivered (%s, 0x%llx)",
		    how, i + 1, hmc_strerror(rc), (unsigned long long)tag);
	}
	t0 = itest_now_ms();
	rc = hmc_comm_recv_tag(s->comm, rank, &tag, 5000);
	t0 = itest_now_ms() - t0;
	tap(rc && rc != -ETIMEDOUT && t0 < 1000,
	    "%s: then recv_tag fails at once: %s in %lld ms", how,
	    hmc_strerror(rc), (long long)t0);
}

static void tags_case(struct helper *h)
{
	struct end s, c;
	unsigned int i;
	int rc;

	itest_prefix("%s tags: ", name);
	if (end_new(&s, 0, NULL, 0, 5000, true))
		return;
	if (!end_new(&c, 1, NULL, 0, 5000, false)) {
		rc = hmc_comm_connect(c.comm, 0, "127.0.0.1", s.port,
				      c.transport);
		for (i = 0; !rc && i < 3; i++)
			rc = hmc_comm_send_tag(c.comm, 0, queued[i]);
		if (!rc)
			rc = hmc_comm_disconnect(c.comm, 0);
		tap(rc == 0, "a peer sends three tags and disconnects: %s",
		    hmc_strerror(rc));
		drain_tags(&s, 1, "after disconnect");
		end_free(&c);
	}
	helper_go(h, s.port);
	if (tap(helper_checkpoint(h, 15000),
		"another process connected and sent three tags")) {
		/*
		 * A put to it and back first: UCX 1.13 aborts the process
		 * (wireup_ep.c: pending_count == 0) whose endpoint to a peer
		 * that dies is still in its wireup; a finished put means both
		 * ends' wireup is done. The tags stay queued meanwhile.
		 */
		rc = hmc_comm_put(s.comm, 2, 0, 0, 8);
		if (!rc)
			rc = hmc_comm_flush(s.comm, 2);
		tap(!rc, "a put to it before it is killed: %s",
		    hmc_strerror(rc));
		helper_end(h, 5000, true);
		drain_tags(&s, 2, "after SIGKILL");
	} else {
		helper_end(h, 5000, true);
	}
	end_free(&s);
}

/* ---------------------------------------------------------- barrier case */

#define BARRIER_ROUNDS	5
#define TAG_GO		0x60

/* Rank 3 enters the barrier last and leaves at once, BARRIER_ROUNDS times. */
static void barrier_helper(uint16_t port, int ready)
{
	int64_t until;
	uint64_t tag;
	struct end c;
	int i, rc;

	itest_prefix("%s barrier (leaver): ", name);
	for (i = 0; i < BARRIER_ROUNDS; i++) {
		if (end_new(&c, 3, NULL, 0, 5000, false))
			return;
		until = itest_now_ms() + 5000;
		do {	/* the server may not have seen our last BYE yet */
			rc = hmc_comm_connect(c.comm, 0, "127.0.0.1", port,
					      c.transport);
		} while (rc == -EEXIST && itest_now_ms() < until &&
			 (itest_sleep_ms(10), true));
		if (!rc)
			rc = hmc_comm_recv_tag(c.comm, 0, &tag, 10000);
		if (!rc)
			rc = hmc_comm_barrier(c.comm, 10000);
		if (rc)
			tap(false, "round %d: connect, tag, barrier: %s", i,
			    hmc_strerror(rc));
		end_free(&c);	/* leave right after the barrier */
	}
	checkpoint(ready);
}

static void barrier_case(struct helper *h)
{
	struct end s;
	int i, rc, good = 0;

	itest_prefix("%s barrier: ", name);
	if (end_new(&s, 0, NULL, 0, 5000, true))
		return;
	helper_go(h, s.port);
	for (i = 0; i < BARRIER_ROUNDS; i++) {
		if (!wait_connected(s.comm, 3, true, 10000)) {
			tap(false, "round %d: rank 3 did not connect", i);
			break;
		}
		rc = hmc_comm_send_tag(s.comm, 3, TAG_GO);
		if (!rc)
			rc = hmc_comm_barrier(s.comm, 10000);
		if (rc)
			diag("round %d: barrier: %s", i, hmc_strerror(rc));
		good += !rc;
		wait_connected(s.comm, 3, false, 10000);
	}
	tap(good == BARRIER_ROUNDS,
	    "a barrier succeeds when the last rank in leaves right away (%d of %d)",
	    good, BARRIER_ROUNDS);
	tap(helper_checkpoint(h, 15000), "the leaving rank went through all rounds");
	i = helper_end(h, 5000, false);
	tap(WIFEXITED(i) && WEXITSTATUS(i) == 0,
	    "the leaving rank saw no error (exit status 0x%x)", i);
	end_free(&s);
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv)
{
	struct helper dup_h, tags_h, barrier_h, segs_h;
	int timeout_s = 120, opt, bad;

	while ((opt = getopt(argc, argv, "N:t:")) != -1) {
		switch (opt) {
		case 'N': name = optarg; break;
		case 't': timeout_s = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: see the comment at the top of %s\n",
				__FILE__);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	unsetenv("HMC_SECRET");		/* the cases choose their secrets */
	alarm((unsigned int)timeout_s + 10);

	bad = mesh_run(name, 3, kill_rank, NULL, 60);

	/* Forked before this process has any communicator (and thread). */
	if (helper_start(&dup_h, dup_helper, timeout_s) ||
	    helper_start(&tags_h, tags_helper, timeout_s) ||
	    helper_start(&barrier_h, barrier_helper, timeout_s) ||
	    helper_start(&segs_h, segs_helper, timeout_s)) {
		tap(false, "fork helpers: %s", strerror(errno));
		return 1;
	}
	secret_case();
	garbage_case();
	raw_auth_case();
	fdpass_case();
	unixpath_case();
	dup_case(&dup_h);
	tags_case(&tags_h);
	barrier_case(&barrier_h);
	segs_case(&segs_h);
	return bad || itest_failures() ? 1 : 0;
}
