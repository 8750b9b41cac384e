// SPDX-License-Identifier: MIT
/*
 * test_lifetime: peers that go away at the worst moment (issue 15).
 *
 *  abort   the handshake-abort matrix: raw dialers that reset (SO_LINGER 0)
 *          or close their socket at every step of the handshake (before
 *          HELLO, in the middle of a frame, right after HELLO, after the
 *          CHALLENGE, right after AUTH, after WELCOME, in and right after a
 *          XPORT_REQ, after its ACK), with and without a secret, over TCP
 *          and Unix control sockets, each several times; after each step
 *          the listener still moves verified data with a good client, and
 *          at the end it still accepts a new one.
 *  race    worker threads doing put_nb/get_nb/flush/put_signal/send_tag to
 *          a peer while another thread disconnects it (from either side)
 *          and reconnects, for a bounded time: every transfer that
 *          completed is checked byte by byte, and afterwards the pair still
 *          works.
 *  churn   a listener process serves a good client process (verified
 *          round trips) while hundreds of dialer processes, connecting over
 *          Unix and TCP control sockets and streaming blocking puts, are
 *          SIGKILLed at random moments of connect, handshake and traffic.
 *          The listener must live on, the good client must never see an
 *          error, and the listener must close cleanly at the end.
 *
 *   test_lifetime abort|race|churn [-N NAME] [-t SECONDS] [-d DIALERS] [-s SLOW]
 *
 * -s stretches churn's kill times for a slow machine (an emulated guest),
 * where a dialer takes that much longer to reach each stage.
 *
 * The transport is HMC_TEST_TRANSPORT's (itest_transport()), for churn's
 * dialers and good client too. Not UCX over tcp for race and churn: where
 * UCX emulates RMA with active messages, a peer that dies or closes while
 * UCX still owes it a reply makes UCX abort the process (issue 15's third
 * defect, ended by issue 16's transports); run.sh uses UCX over posix,
 * the guest shm.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hmc/hmc.h>

#include "itest.h"
#include "sys/host.h"
#include "sys/util.h"
#include "wire/auth.h"
#include "wire/conn.h"
#include "wire/frame.h"
#include "wire/sock.h"

#define KIB		1024
#define MIB		(1024 * 1024)
#define IP		"127.0.0.1"
#define SECRET		"issue 15: no peer may take us down"

struct cfg {
	const char *name;
	int seconds;		/* race, churn: how long the storm lasts */
	int dialers;		/* churn: how many are killed */
	int slow;		/* churn: kill times stretched this much */
};

/* ============================================================= abort */

#define AB_BUF		(2 * MIB + 77)
#define AB_REPS		16		/* each combination, for the timing */
#define AB_FIRST_RANK	100		/* raw dialers: a fresh rank each */

enum ab_step {
	AB_CONNECT,		/* nothing sent */
	AB_HALF_HDR,		/* half a HELLO header */
	AB_HELLO,		/* HELLO, gone before the answer */
	AB_CHALLENGED,		/* secret: after reading the CHALLENGE */
	AB_AUTH,		/* secret: AUTH, gone before WELCOME */
	AB_WELCOMED,		/* after reading WELCOME */
	AB_HALF_XREQ,		/* WELCOME, then half a XPORT_REQ */
	AB_XREQ,		/* a XPORT_REQ, gone before the ACK */
	AB_XACK,		/* after reading the XPORT_ACK */
	AB_NR_STEPS,
};

static const char *const ab_step_names[AB_NR_STEPS] = {
	"connect", "half-header", "hello", "challenged", "auth", "welcomed",
	"half-xport-req", "xport-req", "xport-ack",
};

struct ab_end {
	struct hmc_buf *buf;
	struct hmc_comm *comm;
	uint8_t *p;
};

static int ab_end_new(struct ab_end *e, uint32_t rank, const char *secret,
		      bool listen)
{
	HMC_OPTS(hmc_comm_opts, o, .rank = rank, .secret = secret,
		 .connect_timeout_ms = 3000, .op_timeout_ms = 10000);
	int rc;

	memset(e, 0, sizeof(*e));
	rc = hmc_buf_create(HMC_MEM_CPU, 0, AB_BUF, NULL, &e->buf);
	if (!rc)
		rc = hmc_comm_create(e->buf, &o, &e->comm);
	if (!rc && listen)
		rc = hmc_comm_listen(e->comm, IP, 0);
	if (rc) {
		tap(false, "communicator of rank %u: %s", rank, hmc_strerror(rc));
		if (e->buf)
			hmc_buf_destroy(e->buf);
		e->buf = NULL;
		return -1;
	}
	e->p = hmc_buf_ptr(e->buf);
	return 0;
}

static void ab_end_free(struct ab_end *e)
{
	if (!e->buf)
		return;
	hmc_comm_destroy(e->comm);
	hmc_buf_destroy(e->buf);
	e->buf = NULL;
}

/* A put + flush and a get between @c and rank 0 (@s), every byte checked. */
static bool ab_exchange(struct ab_end *c, struct ab_end *s, uint64_t seed)
{
	const size_t len = 512 * KIB + 3, src = MIB + 5, dst = 11;
	int rc;

	data_fill(c->p, src, len, seed);
	data_unlike(s->p, dst, len, seed, src);
	rc = hmc_comm_put(c->comm, 0, src, dst, len);
	if (!rc)
		rc = hmc_comm_flush(c->comm, 0);
	if (rc || !data_check(s->p, dst, len, seed, src, "put into the listener")) {
		diag("put + flush: %s", hmc_strerror(rc));
		return false;
	}
	data_fill(s->p, src, len, seed + 1);
	data_unlike(c->p, dst, len, seed + 1, src);
	rc = hmc_comm_get(c->comm, 0, dst, src, len);
	if (rc || !data_check(c->p, dst, len, seed + 1, src, "get from the listener")) {
		diag("get: %s", hmc_strerror(rc));
		return false;
	}
	return true;
}

static int ab_send(struct conn *cn, enum frame_type type, const void *payload,
		   uint32_t len)
{
	return conn_send(cn, type, payload, len, deadline_after_ms(2000));
}

/* Half of a frame: its header and half its payload, then nothing. */
static int ab_send_half(struct conn *cn, enum frame_type type,
			const uint8_t *payload, uint32_t len)
{
	uint8_t buf[FRAME_HDR_LEN + FRAME_MAX_PAYLOAD];
	struct iovec iov = { buf, FRAME_HDR_LEN + len / 2 };

	frame_encode_hdr(buf, type, 0, len);
	memcpy(buf + FRAME_HDR_LEN, payload, len);
	return sock_send_all(cn->fd, &iov, 1, -1, deadline_after_ms(2000));
}

/* The next frame, which must be @type: 0, or -1 (reported). */
static int ab_expect(struct conn *cn, enum frame_type type,
		     struct frame_hdr *h, const uint8_t **payload,
		     const char *what)
{
	int rc = conn_recv_frame(cn, h, payload, deadline_after_ms(5000));

	if (rc || h->type != type) {
		diag("%s: wanted %s, got %s (%s)", what, frame_type_name(type),
		     rc ? "nothing" : frame_type_name(h->type),
		     hmc_strerror(rc));
		return -1;
	}
	return 0;
}

/*
 * Dial the listener on @port as @rank and go as far as @step, then reset or
 * close. 0, or -1 if the listener did not answer as a listener must.
 */
static int ab_dial(uint16_t port, bool is_unix, bool secret, bool reset,
		   enum ab_step step, uint32_t rank, const char *what)
{
	struct frame_hello hello = {
		.src_rank = rank, .dst_rank = 0,
		.flags = secret ? FRAME_HELLO_F_AUTH : 0,
	};
	uint8_t buf[FRAME_MAX_PAYLOAD], mac[FRAME_MAC_LEN];
	int64_t deadline = deadline_after_ms(5000);
	struct frame_xport x = { .transport = HMC_TRANSPORT_SHM };
	struct frame_challenge ch;
	const uint8_t *payload;
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	struct frame_hdr h;
	struct conn *cn;
	char name[108];
	int fd, rc, len, ret = -1;

	if (is_unix) {
		/* The listener's path, and a HELLO that says it meant IP. */
		rc = sock_unix_path(name, sizeof(name), port, false);
		if (!rc)
			rc = sock_dial_unix(name, false, deadline, &fd);
		hello.flags |= FRAME_HELLO_F_HOST;
		host_boot_id(hello.boot_id);
		hello.netns = host_netns();
		sock_addr_v6(IP, hello.addr);
	} else {
		rc = sock_dial_tcp(IP, port, deadline, &fd);
	}
	if (rc) {
		diag("%s: dial: %s", what, hmc_strerror(rc));
		return -1;
	}
	cn = conn_new(fd, is_unix);
	if (!cn) {
		close(fd);
		return -1;
	}
	if (step == AB_CONNECT)
		goto done;
	if (auth_nonce(hello.nonce))
		goto out;
	len = (int)frame_encode_hello(buf, &hello);
	if (step == AB_HALF_HDR) {
		struct iovec iov = { buf + FRAME_MAX_PAYLOAD - FRAME_HDR_LEN,
				     FRAME_HDR_LEN / 2 };

		frame_encode_hdr(iov.iov_base, FRAME_HELLO, 0, (uint32_t)len);
		if (sock_send_all(fd, &iov, 1, -1, deadline))
			goto out;
		goto done;
	}
	if (ab_send(cn, FRAME_HELLO, buf, (uint32_t)len))
		goto out;
	if (step == AB_HELLO)
		goto done;
	if (secret) {
		if (ab_expect(cn, FRAME_CHALLENGE, &h, &payload, what) ||
		    frame_decode_challenge(payload, h.len, &ch))
			goto out;
		conn_consume(cn, &h);
		if (step == AB_CHALLENGED)
			goto done;
		if (auth_mac(SECRET, strlen(SECRET), AUTH_ROLE_DIALER,
			     hello.nonce, ch.nonce, rank, 0, mac) ||
		    ab_send(cn, FRAME_AUTH, mac, FRAME_MAC_LEN))
			goto out;
		if (step == AB_AUTH)
			goto done;
	}
	if (ab_expect(cn, FRAME_WELCOME, &h, &payload, what))
		goto out;
	conn_consume(cn, &h);
	if (step == AB_WELCOMED)
		goto done;
	/* Metadata no transport accepts: the listener answers with an error. */
	memset(buf + FRAME_XPORT_HDR_LEN, 0x5a, 8);
	x.blob_len = 8;
	x.buf_size = AB_BUF;
	len = frame_encode_xport(buf, &x);
	if (len < 0)
		goto out;
	if (step == AB_HALF_XREQ) {
		if (ab_send_half(cn, FRAME_XPORT_REQ, buf, (uint32_t)len))
			goto out;
		goto done;
	}
	if (ab_send(cn, FRAME_XPORT_REQ, buf, (uint32_t)len))
		goto out;
	if (step == AB_XREQ)
		goto done;
	if (ab_expect(cn, FRAME_XPORT_ACK, &h, &payload, what) ||
	    frame_decode_xport(payload, h.len, &x) || !x.status) {
		diag("%s: a XPORT_ACK with an error expected", what);
		goto out;
	}
done:
	ret = 0;
out:
	/* A TCP reset; a Unix socket only knows close. */
	if (reset && !is_unix &&
	    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)))
		ret = -1;
	conn_free(cn);
	return ret;
}

static int run_abort(const struct cfg *cfg)
{
	uint32_t rank = AB_FIRST_RANK;
	int secret, is_unix, reset, step, rep, port;
	uint64_t seed = 1;
	bool ok;

	for (secret = 0; secret < 2; secret++) {
		struct ab_end l, g, g2;
		const char *sec = secret ? SECRET : NULL;
		int rc;

		if (ab_end_new(&l, 0, sec, true))
			return 1;
		if (ab_end_new(&g, 1, sec, false)) {
			ab_end_free(&l);
			return 1;
		}
		port = hmc_comm_listen_port(l.comm);
		rc = hmc_comm_connect(g.comm, 0, IP, (uint16_t)port,
				      itest_transport(0, 1));
		if (!tap(!rc, "%s: %s: good client connects", cfg->name,
			 sec ? "secret" : "no secret")) {
			diag("connect: %s", hmc_strerror(rc));
			ab_end_free(&g);
			ab_end_free(&l);
			return 1;
		}
		for (is_unix = 0; is_unix < 2; is_unix++)
		for (reset = 0; reset < 2; reset++)
		for (step = 0; step < AB_NR_STEPS; step++) {
			char what[160];

			if (!secret && (step == AB_CHALLENGED || step == AB_AUTH))
				continue;
			snprintf(what, sizeof(what), "%s: %s, %s, %s at %s",
				 cfg->name, sec ? "secret" : "no secret",
				 is_unix ? "unix" : "tcp",
				 reset ? "reset" : "close", ab_step_names[step]);
			ok = true;
			for (rep = 0; rep < AB_REPS && ok; rep++)
				ok = !ab_dial((uint16_t)port, is_unix, secret,
					      reset, step, rank++, what);
			ok = ok && ab_exchange(&g, &l, seed++);
			tap(ok, "%s: the listener answers and serves on", what);
		}
		/* And it still takes new dialers. */
		ok = !ab_end_new(&g2, 2, sec, false);
		if (ok) {
			rc = hmc_comm_connect(g2.comm, 0, IP, (uint16_t)port,
					      itest_transport(0, 2));
			if (rc)
				diag("connect: %s", hmc_strerror(rc));
			ok = !rc && ab_exchange(&g2, &l, seed++);
			ab_end_free(&g2);
		}
		tap(ok, "%s: %s: a new client connects and moves data",
		    cfg->name, sec ? "secret" : "no secret");
		ok = ab_exchange(&g, &l, seed++);
		tap(ok, "%s: %s: the first client still moves data", cfg->name,
		    sec ? "secret" : "no secret");
		ab_end_free(&g);
		ab_end_free(&l);
	}
	return itest_failures() ? 1 : 0;
}

/* ============================================================== race */

#define RC_WORKERS	4
#define RC_SLOTS	256		/* per worker */
#define RC_SLOT		(4 * KIB)
#define RC_BUF		(RC_WORKERS * RC_SLOTS * RC_SLOT + 4 * MIB)
#define RC_FINAL	(RC_WORKERS * RC_SLOTS * RC_SLOT)	/* the final check's area */
#define RC_MIN_CYCLES	20

enum rc_kind { RC_PUT, RC_GET, RC_FLUSH, RC_SIGNAL, RC_TAG, RC_NR_KINDS };

static const char *const rc_kind_names[RC_NR_KINDS] = {
	"put_nb", "get_nb", "flush", "put_signal", "send_tag",
};

struct race {
	const struct cfg *cfg;
	struct hmc_buf *abuf, *bbuf;
	struct hmc_comm *a, *b;		/* ranks 0 (listens) and 1 */
	uint8_t *ap, *bp;
	uint16_t port;
	enum hmc_transport transport;
	int stop;			/* atomic */
	int cycles;
	int connect_errors;
};

struct worker {
	struct race *r;
	int id;
	pthread_t thread;
	struct rng rng;
	bool retired[RC_SLOTS];
	unsigned long verified[RC_NR_KINDS];
	unsigned long failed;		/* ended in an error (allowed) */
	unsigned long corrupt;		/* completed, wrong data (never) */
};

static bool rc_stopped(struct race *r)
{
	return __atomic_load_n(&r->stop, __ATOMIC_ACQUIRE);
}

/* A slot no failed operation touched; -1 when none is left. */
static int rc_slot(struct worker *w)
{
	int i, s = (int)rng_range(&w->rng, 0, RC_SLOTS - 1);

	for (i = 0; i < RC_SLOTS; i++, s = (s + 1) % RC_SLOTS)
		if (!w->retired[s])
			return s;
	return -1;
}

/*
 * One operation on slot @s. Its result: 0 verified, 1 refused before it
 * was posted (nothing moved), 2 failed after it was posted (the slot may
 * still be written: retired), -1 completed with wrong data.
 */
static int rc_op(struct worker *w, enum rc_kind kind, int s, uint64_t seed)
{
	struct race *r = w->r;
	size_t off = ((size_t)w->id * RC_SLOTS + (size_t)s) * RC_SLOT;
	size_t len = rng_range(&w->rng, 1, RC_SLOT);
	hmc_req_t req;
	uint64_t tag;
	int rc;

	switch (kind) {
	case RC_PUT:
		data_fill(r->bp, off, len, seed);
		data_unlike(r->ap, off, len, seed, off);
		rc = hmc_comm_put_nb(r->b, 0, off, off, len, &req);
		if (rc)
			return 1;
		rc = hmc_comm_wait(r->b, req, 10000);
		if (!rc)
			rc = hmc_comm_flush(r->b, 0);
		if (rc)
			return 2;
		return data_check(r->ap, off, len, seed, off, "race put") ? 0 : -1;
	case RC_GET:
		data_fill(r->ap, off, len, seed);
		data_unlike(r->bp, off, len, seed, off);
		rc = hmc_comm_get_nb(r->b, 0, off, off, len, &req);
		if (rc)
			return 1;
		rc = hmc_comm_wait(r->b, req, 10000);
		if (rc)
			return 2;
		return data_check(r->bp, off, len, seed, off, "race get") ? 0 : -1;
	case RC_FLUSH:
		rc = hmc_comm_flush(r->b, 0);
		return rc == 0 ? 0 : rc == -ENOTCONN ? 1 : 2;
	case RC_SIGNAL:
		data_fill(r->bp, off, len, seed);
		data_unlike(r->ap, off, len, seed, off);
		rc = hmc_comm_put_signal(r->b, 0, off, off, len, seed);
		/*
		 * Like a put, it completes once our range may be reused
		 * (over tcp, before the bytes land): flush for visibility.
		 */
		if (!rc)
			rc = hmc_comm_flush(r->b, 0);
		if (rc)
			return rc == -ENOTCONN ? 1 : 2;
		return data_check(r->ap, off, len, seed, off, "race put_signal") ?
		       0 : -1;
	case RC_TAG:
		tag = seed;
		rc = hmc_comm_send_tag(r->b, 0, tag);
		return rc == 0 ? 0 : rc == -ENOTCONN ? 1 : 2;
	default:
		return -1;
	}
}

static void *rc_worker(void *arg)
{
	struct worker *w = arg;
	uint64_t seed = (uint64_t)w->id << 40;
	int s, res;

	while (!rc_stopped(w->r)) {
		enum rc_kind kind = (enum rc_kind)rng_range(&w->rng, 0,
							    RC_NR_KINDS - 1);

		s = rc_slot(w);
		if (s < 0)
			break;
		res = rc_op(w, kind, s, ++seed);
		if (res == 0) {
			w->verified[kind]++;
		} else if (res == 1) {
			sched_yield();	/* disconnected: let it come back */
		} else if (res == 2) {
			w->failed++;
			if (kind != RC_FLUSH && kind != RC_TAG)
				w->retired[s] = true;
		} else {
			w->corrupt++;
			w->retired[s] = true;
		}
	}
	return NULL;
}

/* Rank 0 reads the tags, racing the disconnects too. */
static void *rc_tag_reader(void *arg)
{
	struct race *r = arg;
	uint64_t tag;

	while (!rc_stopped(r))
		if (hmc_comm_recv_tag(r->a, 1, &tag, 5) == -ECONNRESET)
			sched_yield();
	return NULL;
}

/* Rank 1 connects to rank 0 again, retrying what a race refuses. */
static int rc_connect(struct race *r)
{
	int64_t deadline = itest_now_ms() + 10000;
	int rc;

	for (;;) {
		rc = hmc_comm_connect(r->b, 0, IP, r->port, r->transport);
		if (!rc || rc == -EISCONN)
			return 0;
		r->connect_errors++;
		if (itest_now_ms() >= deadline) {
			diag("reconnect: %s", hmc_strerror(rc));
			return -1;
		}
		itest_sleep_ms(1);
	}
}

static int rc_setup(struct race *r, int rank, struct hmc_buf **buf,
		    struct hmc_comm **comm, uint8_t **p)
{
	HMC_OPTS(hmc_comm_opts, o, .rank = (uint32_t)rank,
		 .connect_timeout_ms = 5000, .op_timeout_ms = 10000);

	if (comm_setup(rank, RC_BUF, IP, &o, buf, comm))
		return -1;
	*p = hmc_buf_ptr(*buf);
	return 0;
}

static int run_race(const struct cfg *cfg)
{
	struct worker w[RC_WORKERS];
	struct race r = { .cfg = cfg, .transport = itest_transport(0, 1) };
	unsigned long verified[RC_NR_KINDS] = { 0 }, failed = 0, corrupt = 0;
	int64_t end = itest_now_ms() + (int64_t)cfg->seconds * 1000;
	struct rng rng;
	pthread_t reader;
	bool ok = true;
	int i, k;

	if (rc_setup(&r, 0, &r.abuf, &r.a, &r.ap))
		return 1;
	if (rc_setup(&r, 1, &r.bbuf, &r.b, &r.bp)) {
		hmc_comm_destroy(r.a);
		hmc_buf_destroy(r.abuf);
		return 1;
	}
	r.port = (uint16_t)hmc_comm_listen_port(r.a);
	if (!tap(!rc_connect(&r), "%s: connect", cfg->name))
		goto out;

	rng_seed(&rng, 15, 2, 0, 0);
	for (i = 0; i < RC_WORKERS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].r = &r;
		w[i].id = i;
		rng_seed(&w[i].rng, 15, 2, 1, (uint64_t)i);
		if (pthread_create(&w[i].thread, NULL, rc_worker, &w[i]))
			abort();
	}
	if (pthread_create(&reader, NULL, rc_tag_reader, &r))
		abort();

	/* The storm: disconnect from either side at random moments. */
	while (itest_now_ms() < end) {
		int rc;

		itest_sleep_ms((int)rng_range(&rng, 0, 4));
		rc = rng_pct(&rng, 70) ? hmc_comm_disconnect(r.b, 0) :
					 hmc_comm_disconnect(r.a, 1);
		if (rc && rc != -ENOTCONN) {
			diag("disconnect: %s", hmc_strerror(rc));
			ok = false;
			break;
		}
		itest_sleep_ms((int)rng_range(&rng, 0, 2));
		if (rc_connect(&r)) {
			ok = false;
			break;
		}
		r.cycles++;
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < RC_WORKERS; i++)
		pthread_join(w[i].thread, NULL);
	pthread_join(reader, NULL);

	for (i = 0; i < RC_WORKERS; i++) {
		for (k = 0; k < RC_NR_KINDS; k++)
			verified[k] += w[i].verified[k];
		failed += w[i].failed;
		corrupt += w[i].corrupt;
	}
	diag("%s: %d disconnect cycles (%d connects refused and retried), "
	     "%lu operations failed with their peer", cfg->name, r.cycles,
	     r.connect_errors, failed);
	tap(ok && r.cycles >= RC_MIN_CYCLES,
	    "%s: %d disconnect/reconnect cycles (at least %d)", cfg->name,
	    r.cycles, RC_MIN_CYCLES);
	tap(!corrupt, "%s: no completed transfer with wrong data (%lu)",
	    cfg->name, corrupt);
	for (k = 0; k < RC_NR_KINDS; k++)
		tap(verified[k] > 0, "%s: %lu %s completed and checked",
		    cfg->name, verified[k], rc_kind_names[k]);

	/* After the storm, the pair still works. */
	if (tap(!rc_connect(&r) && wait_connected(r.a, 1, true, 5000),
		"%s: connected after the storm", cfg->name)) {
		const size_t len = 3 * MIB + 1;
		int rc;

		data_fill(r.bp, RC_FINAL, len, 0x15);
		data_unlike(r.ap, RC_FINAL, len, 0x15, RC_FINAL);
		rc = hmc_comm_put(r.b, 0, RC_FINAL, RC_FINAL, len);
		if (!rc)
			rc = hmc_comm_flush(r.b, 0);
		tap(!rc && data_check(r.ap, RC_FINAL, len, 0x15, RC_FINAL,
				      "final put"),
		    "%s: a final put moves verified data (%s)", cfg->name,
		    hmc_strerror(rc));
	}
out:
	hmc_comm_destroy(r.b);
	hmc_comm_destroy(r.a);
	hmc_buf_destroy(r.bbuf);
	hmc_buf_destroy(r.abuf);
	return itest_failures() ? 1 : 0;
}

/* ============================================================= churn */

#define CH_BUF		(4 * MIB + 123)
#define CH_GOOD_LEN	(256 * KIB + 9)
#define CH_GOOD_OFF	(3 * MIB)		/* the good client's area at the listener */
#define CH_CONCURRENT	6
#define CH_FIRST_RANK	1000

/* A child's comm; its failures go to stderr and its exit status. */
static struct hmc_comm *ch_comm(uint32_t rank, uint32_t flags, bool listen,
				struct hmc_buf **buf)
{
	HMC_OPTS(hmc_comm_opts, o, .rank = rank, .flags = flags,
		 .connect_timeout_ms = 3000, .op_timeout_ms = 5000);
	struct hmc_comm *c = NULL;
	int rc;

	rc = hmc_buf_create(HMC_MEM_CPU, 0, CH_BUF, NULL, buf);
	if (!rc)
		rc = hmc_comm_create(*buf, &o, &c);
	if (!rc && listen)
		rc = hmc_comm_listen(c, IP, 0);
	if (rc) {
		diag("churn: rank %u: %s", rank, hmc_strerror(rc));
		return NULL;
	}
	return c;
}

/* Whether the parent asked us to stop (its pipe is readable or closed). */
static bool ch_told_to_stop(int fd, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, timeout_ms) > 0;
}

/* The listener: serves until told to stop, then closes cleanly. */
static int ch_listener(int port_fd, int stop_fd)
{
	struct hmc_buf *buf;
	struct hmc_comm *c = ch_comm(0, 0, true, &buf);
	uint16_t port;

	if (!c)
		return 1;
	port = (uint16_t)hmc_comm_listen_port(c);
	if (write(port_fd, &port, sizeof(port)) != sizeof(port))
		return 1;
	while (!ch_told_to_stop(stop_fd, 100))
		;
	hmc_comm_destroy(c);
	hmc_buf_destroy(buf);
	return 0;
}

/*
 * The good client: round trips of verified data (put, flush, get back)
 * until told to stop. Exits 0 only if it made some and none failed; the
 * count goes to @out_fd.
 */
static int ch_good(uint16_t port, int stop_fd, int out_fd)
{
	struct hmc_buf *buf;
	struct hmc_comm *c = ch_comm(1, 0, false, &buf);
	unsigned long rounds = 0;
	uint64_t seed = 0x15c0;
	uint8_t *p;
	int rc;

	if (!c)
		return 1;
	p = hmc_buf_ptr(buf);
	rc = hmc_comm_connect(c, 0, IP, port, itest_transport(0, 1));
	while (!rc && !ch_told_to_stop(stop_fd, 0)) {
		seed++;
		data_fill(p, 0, CH_GOOD_LEN, seed);
		data_unlike(p, MIB, CH_GOOD_LEN, seed, 0);
		rc = hmc_comm_put(c, 0, 0, CH_GOOD_OFF, CH_GOOD_LEN);
		if (!rc)
			rc = hmc_comm_flush(c, 0);
		if (!rc)
			rc = hmc_comm_get(c, 0, MIB, CH_GOOD_OFF, CH_GOOD_LEN);
		if (!rc && !data_check(p, MIB, CH_GOOD_LEN, seed, 0,
				       "churn: round trip"))
			rc = -EIO;
		if (!rc)
			rounds++;
	}
	if (rc)
		diag("churn: good client, after %lu round trips: %s", rounds,
		     hmc_strerror(rc));
	if (write(out_fd, &rounds, sizeof(rounds)) != sizeof(rounds))
		rc = -EIO;
	hmc_comm_destroy(c);
	hmc_buf_destroy(buf);
	return rc || !rounds ? 1 : 0;
}

/*
 * A dialer: connect and stream 4 KiB puts (and some gets) until killed.
 * It tells @note_fd when it is connected ('c') and when its first
 * transfer is done ('t'), so that the parent knows what the kills hit.
 */
static int ch_dialer(uint16_t port, uint32_t rank, bool tcp_control,
		     int note_fd)
{
	struct hmc_buf *buf;
	struct hmc_comm *c = ch_comm(rank, tcp_control ? HMC_COMM_F_NO_UNIX : 0,
				     false, &buf);
	size_t off = 0;
	bool first = true;
	int rc;

	if (!c)
		return 1;
	rc = hmc_comm_connect(c, 0, IP, port, itest_transport(0, 1));
	if (!rc && write(note_fd, "c", 1) != 1)
		return 1;
	while (!rc) {
		off = (off + 4 * KIB) % (2 * MIB);
		rc = (off / (4 * KIB)) % 8 ? hmc_comm_put(c, 0, off, off, 4 * KIB) :
					     hmc_comm_get(c, 0, off, off, 4 * KIB);
		if (!rc && first && write(note_fd, "t", 1) != 1)
			return 1;
		first = false;
	}
	/* the parent kills us first: getting here is no failure */
	pause();
	return 0;
}

/* The write ends of the pipes whose closing tells the children to stop. */
static int ch_stop_w = -1, ch_gstop_w = -1;

/* A child that dies with the test and holds no stop pipe open. */
static pid_t ch_fork(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(ch_stop_w);
		close(ch_gstop_w);
	}
	return pid;
}

static int run_churn(const struct cfg *cfg)
{
	int64_t end = itest_now_ms() + (int64_t)cfg->seconds * 1000;
	int port_pipe[2], stop_pipe[2], gstop_pipe[2], out_pipe[2], note_pipe[2];
	unsigned int connected = 0, streamed = 0;
	char notes[64];
	ssize_t nn;
	pid_t lpid, gpid, live[CH_CONCURRENT] = { 0 };
	int64_t kill_at[CH_CONCURRENT] = { 0 };
	int started = 0, killed = 0, slot, status, lstatus = 0;
	bool ldead = false;
	unsigned long rounds = 0;
	uint32_t windows[3] = { 0 };
	struct rng rng;
	uint16_t port;
	bool ok;

	if (pipe(port_pipe) || pipe(stop_pipe) || pipe(gstop_pipe) ||
	    pipe(out_pipe) || pipe2(note_pipe, O_NONBLOCK))
		return 1;
	ch_stop_w = stop_pipe[1];
	ch_gstop_w = gstop_pipe[1];
	lpid = ch_fork();
	if (lpid == 0)
		_exit(ch_listener(port_pipe[1], stop_pipe[0]));
	if (read(port_pipe[0], &port, sizeof(port)) != sizeof(port)) {
		tap(false, "%s: the listener starts", cfg->name);
		kill(lpid, SIGKILL);
		return 1;
	}
	gpid = ch_fork();
	if (gpid == 0)
		_exit(ch_good(port, gstop_pipe[0], out_pipe[1]));
	close(gstop_pipe[0]);

	rng_seed(&rng, 15, 3, 0, 0);
	while (killed < cfg->dialers) {
		for (slot = 0; slot < CH_CONCURRENT; slot++) {
			int64_t now = itest_now_ms();
			unsigned int w;

			if (live[slot] && now >= kill_at[slot]) {
				kill(live[slot], SIGKILL);
				waitpid(live[slot], &status, 0);
				live[slot] = 0;
				killed++;
			}
			if (live[slot] || started >= cfg->dialers ||
			    now >= end)
				continue;
			live[slot] = ch_fork();
			if (live[slot] == 0)
				_exit(ch_dialer(port, CH_FIRST_RANK + (uint32_t)started,
						started % 2, note_pipe[1]));
			/*
			 * Killed while it connects, while it shakes hands and
			 * brings up the transport, or while it streams puts.
			 */
			w = (unsigned int)rng_range(&rng, 0, 2);
			windows[w]++;
			kill_at[slot] = now + cfg->slow *
				(int64_t)(w == 0 ? rng_range(&rng, 0, 20) :
					  w == 1 ? rng_range(&rng, 20, 150) :
					  rng_range(&rng, 150, 600));
			started++;
		}
		if (started == killed && (itest_now_ms() >= end ||
					  started >= cfg->dialers))
			break;
		itest_sleep_ms(1);
		while ((nn = read(note_pipe[0], notes, sizeof(notes))) > 0)
			while (nn--) {
				connected += notes[nn] == 'c';
				streamed += notes[nn] == 't';
			}
		/* the listener must be alive throughout */
		if (waitpid(lpid, &lstatus, WNOHANG) == lpid) {
			ldead = true;
			break;
		}
	}
	diag("%s: %d dialers killed (%u early, %u in the handshake window, %u late); %u had connected, %u had moved data",
	     cfg->name, killed, windows[0], windows[1], windows[2], connected,
	     streamed);
	for (slot = 0; slot < CH_CONCURRENT; slot++)
		if (live[slot]) {
			kill(live[slot], SIGKILL);
			waitpid(live[slot], NULL, 0);
		}

	if (!ldead)
		ldead = waitpid(lpid, &lstatus, WNOHANG) == lpid;
	ok = !ldead;
	if (ldead && WIFSIGNALED(lstatus))
		diag("%s: the listener died of signal %d", cfg->name,
		     WTERMSIG(lstatus));
	tap(ok, "%s: the listener lived through %d killed dialers", cfg->name,
	    killed);
	tap(killed >= cfg->dialers || itest_now_ms() >= end,
	    "%s: %d of %d dialers started and killed", cfg->name, killed,
	    cfg->dialers);
	/* The kills must have hit every stage, or the test tests little. */
	tap(connected < (unsigned int)killed && streamed >= (unsigned int)killed / 10,
	    "%s: kills before the connect returned (%u) and while moving data (%u)",
	    cfg->name, killed - connected, streamed);
	close(gstop_pipe[1]);	/* the good client stops first */
	if (waitpid(gpid, &status, 0) == gpid &&
	    read(out_pipe[0], &rounds, sizeof(rounds)) != sizeof(rounds))
		rounds = 0;
	tap(WIFEXITED(status) && WEXITSTATUS(status) == 0 && rounds > 0,
	    "%s: the good client's %lu verified round trips never failed",
	    cfg->name, rounds);
	close(stop_pipe[1]);
	if (!ldead)
		ok = waitpid(lpid, &lstatus, 0) == lpid && WIFEXITED(lstatus) &&
		     WEXITSTATUS(lstatus) == 0;
	tap(ok, "%s: the listener closes cleanly", cfg->name);
	return itest_failures() ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct cfg cfg = { .name = NULL, .seconds = 10, .dialers = 200,
			   .slow = 1 };
	const char *mode;
	int opt;

	while ((opt = getopt(argc, argv, "N:t:d:s:")) != -1) {
		switch (opt) {
		case 'N': cfg.name = optarg; break;
		case 't': cfg.seconds = atoi(optarg); break;
		case 'd': cfg.dialers = atoi(optarg); break;
		case 's': cfg.slow = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: see the comment at the top of %s\n",
				__FILE__);
			return 2;
		}
	}
	if (optind != argc - 1 || cfg.seconds < 1 || cfg.dialers < 1 ||
	    cfg.slow < 1) {
		fprintf(stderr, "usage: test_lifetime abort|race|churn [-N NAME] [-t SECONDS] [-d DIALERS] [-s SLOW]\n");
		return 2;
	}
	mode = argv[optind];
	if (!cfg.name)
		cfg.name = mode;
	setvbuf(stdout, NULL, _IONBF, 0);
	if (!strcmp(mode, "abort"))
		return run_abort(&cfg);
	if (!strcmp(mode, "race"))
		return run_race(&cfg);
	if (!strcmp(mode, "churn"))
		return run_churn(&cfg);
	fprintf(stderr, "test_lifetime: unknown mode %s\n", mode);
	return 2;
}
