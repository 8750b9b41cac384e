// SPDX-License-Identifier: MIT
/* Integration test helpers (see itest.h). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "itest.h"
#include "pattern.h"

/* ------------------------------------------------------------------ TAP */

static char prefix[128];
static int failures;

void itest_prefix(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
}

/* One line, one write(). */
static void emit(const char *head, const char *tail, const char *fmt,
		 va_list ap)
{
	char line[1024];
	int n;

	n = snprintf(line, sizeof(line), "%s%s", head, prefix);
	if (n < (int)sizeof(line))
		n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	if (n >= (int)sizeof(line) - 2 - (int)strlen(tail))
		n = (int)sizeof(line) - 2 - (int)strlen(tail);
	n += snprintf(line + n, sizeof(line) - (size_t)n, "%s\n", tail);
	if (write(STDOUT_FILENO, line, (size_t)n) < 0)
		failures++;
}

bool tap(bool ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(ok ? "ok - " : "not ok - ", "", fmt, ap);
	va_end(ap);
	failures += !ok;
	return ok;
}

void tap_skip(const char *reason, const char *fmt, ...)
{
	char tail[256];
	va_list ap;

	snprintf(tail, sizeof(tail), " # SKIP %s", reason);
	va_start(ap, fmt);
	emit("ok - ", tail, fmt, ap);
	va_end(ap);
}

void diag(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit("# ", "", fmt, ap);
	va_end(ap);
}

int itest_failures(void)
{
	return failures;
}

void itest_fail(void)
{
	failures++;
}

/* ----------------------------------------------------------------- time */

int64_t itest_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void itest_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ------------------------------------------------------------------ rng */

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void rng_seed(struct rng *r, uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	r->s = a;
	r->s = splitmix(&r->s) ^ b;
	r->s = splitmix(&r->s) ^ c;
	r->s = splitmix(&r->s) ^ d;
}

uint64_t rng_next(struct rng *r)
{
	return splitmix(&r->s);
}

uint64_t rng_range(struct rng *r, uint64_t lo, uint64_t hi)
{
	if (hi <= lo)
		return lo;
	if (hi - lo == UINT64_MAX)
		return rng_next(r);
	return lo + rng_next(r) % (hi - lo + 1);
}

bool rng_pct(struct rng *r, unsigned int pct)
{
	return rng_next(r) % 100 < pct;
}

void rng_shuffle(struct rng *r, size_t *v, size_t n)
{
	size_t i, j, t;

	for (i = n; i > 1; i--) {
		j = (size_t)rng_range(r, 0, i - 1);
		t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
}

/* ----------------------------------------------------------------- data */

#define DATA_REPORTS_MAX	16
static int data_reports;

void data_fill(uint8_t *buf, size_t off, size_t len, uint64_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[off + i] = pattern_at(seed, off + i);
}

bool data_check(const uint8_t *buf, size_t off, size_t len, uint64_t seed,
		size_t base, const char *what)
{
	size_t i, bad = 0, first = 0;

	for (i = 0; i < len; i++) {
		if (buf[off + i] == pattern_at(seed, base + i))
			continue;
		if (!bad++)
			first = i;
	}
	if (!bad)
		return true;
	if (++data_reports > DATA_REPORTS_MAX)
		return false;
	if (data_reports == DATA_REPORTS_MAX)
		diag("(more data mismatches follow; not shown)");
	diag("%s: %zu of %zu bytes wrong at buffer [%zu, +%zu), first at +%zu: 0x%02x, want 0x%02x",
	     what, bad, len, off, len, first, buf[off + first],
	     pattern_at(seed, base + first));
	return false;
}

void data_unlike(uint8_t *buf, size_t off, size_t len, uint64_t seed,
		 size_t base)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[off + i] == pattern_at(seed, base + i))
			buf[off + i] ^= 0xff;
}

/* ------------------------------------------------------------ transfers */

#define MIB	(1024 * 1024)

static void xfers_add(struct xfers *xs, const struct xfer *x)
{
	if (xs->n == xs->cap) {
		xs->cap = xs->cap ? xs->cap * 2 : 64;
		xs->v = realloc(xs->v, xs->cap * sizeof(*xs->v));
		if (!xs->v)
			abort();
	}
	xs->v[xs->n] = *x;
	xs->v[xs->n].idx = (uint32_t)xs->n;
	xs->n++;
}

void xfers_free(struct xfers *xs)
{
	free(xs->v);
	xs->v = NULL;
	xs->n = xs->cap = 0;
}

static size_t pick_len(struct rng *r, bool small, size_t max)
{
	uint64_t x = rng_range(r, 0, 99), len;

	if (small)
		len = x < 3 ? 0 : rng_range(r, 1, 48);
	else if (x < 8)
		len = 0;
	else if (x < 16)
		len = 1;
	else if (x < 34)
		len = rng_range(r, 2, 63);
	else if (x < 60)
		len = rng_range(r, 64, 8191);
	else if (x < 82)
		len = rng_range(r, 8192, 262143);
	else
		len = rng_range(r, 262144, 3 * MIB + 12345);
	return len < max ? len : max;
}

void xfers_carve(struct xfers *xs, struct rng *r, bool small, bool put,
		 int peer, size_t d0, size_t d1, size_t s0, size_t s1,
		 size_t max)
{
	struct xfer x = { .put = put, .peer = peer };
	size_t cur = d0, span = s1 - s0, other, added = 0;

	while (added < max) {
		size_t gap = small ? rng_range(r, 0, 3) :
			     rng_pct(r, 25) ? 0 : rng_range(r, 1, 300);

		if (gap > d1 - cur)
			break;
		cur += gap;
		x.len = pick_len(r, small, d1 - cur < span ? d1 - cur : span);
		other = rng_pct(r, 20) ? s1 - x.len :
			(size_t)rng_range(r, s0, s1 - x.len);
		x.loc = put ? other : cur;
		x.rem = put ? cur : other;
		xfers_add(xs, &x);
		added++;
		cur += x.len;
		if (cur == d1)
			return;
	}
	if (!small && added < max && cur < d1 && d1 - cur <= span &&
	    rng_pct(r, 50)) {
		x.len = d1 - cur;
		other = rng_pct(r, 50) ? s1 - x.len : s0;
		x.loc = put ? other : cur;
		x.rem = put ? cur : other;
		xfers_add(xs, &x);
	}
}

void xfers_poison(uint8_t *buf, const struct xfers *xs, size_t d0, size_t d1,
		  uint64_t src, uint64_t poison)
{
	size_t i;

	data_fill(buf, d0, d1 - d0, poison);
	for (i = 0; i < xs->n; i++) {
		const struct xfer *x = &xs->v[i];

		data_unlike(buf, x->put ? x->rem : x->loc, x->len, src,
			    x->put ? x->loc : x->rem);
	}
}

bool xfers_check(const uint8_t *buf, const struct xfers *xs, size_t d0,
		 size_t d1, uint64_t src, uint64_t poison, const char *what)
{
	size_t i, cur = d0;
	bool ok = true;
	char w[160];

	for (i = 0; i < xs->n; i++) {
		const struct xfer *x = &xs->v[i];
		size_t dst = x->put ? x->rem : x->loc;
		size_t from = x->put ? x->loc : x->rem;

		snprintf(w, sizeof(w), "%s: bytes before transfer %zu", what, i);
		ok &= data_check(buf, cur, dst - cur, poison, cur, w);
		snprintf(w, sizeof(w), "%s: transfer %zu (%zu bytes from %zu)",
			 what, i, x->len, from);
		ok &= data_check(buf, dst, x->len, src, from, w);
		cur = dst + x->len;
	}
	snprintf(w, sizeof(w), "%s: bytes after the last transfer", what);
	return data_check(buf, cur, d1 - cur, poison, cur, w) && ok;
}

/* ------------------------------------------------------------- launcher */

struct msg {
	uint32_t kind, a;
};

struct table {
	uint16_t port[ITEST_MAX_RANKS];
	int32_t pid[ITEST_MAX_RANKS];
};

static int read_full(int fd, void *p, size_t len)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = read(fd, (char *)p + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

static int write_full(int fd, const void *p, size_t len)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = write(fd, (const char *)p + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

int mesh_exchange(struct mesh *m, uint16_t port)
{
	struct msg msg = { MESH_PORT, port };
	struct table t;
	int i;

	if (write_full(m->to_parent, &msg, sizeof(msg)) ||
	    read_full(m->from_parent, &t, sizeof(t)))
		return -1;
	for (i = 0; i < m->nranks; i++) {
		m->port[i] = t.port[i];
		m->pid[i] = t.pid[i];
	}
	return 0;
}

int mesh_kill(struct mesh *m, int rank)
{
	struct msg msg = { MESH_KILL, (uint32_t)rank };

	if (write_full(m->to_parent, &msg, sizeof(msg)) ||
	    read_full(m->from_parent, &msg, sizeof(msg)) ||
	    msg.kind != MESH_KILLED)
		return -1;
	return 0;
}

struct child {
	pid_t pid;
	int up, down;		/* parent's ends */
	bool has_port, eof, reaped, planned_kill;
	int status;
};

static void describe(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "status 0x%x", status);
}

static void reap(struct child *c, int flags)
{
	if (c->reaped || c->pid <= 0)
		return;
	if (waitpid(c->pid, &c->status, flags) == c->pid)
		c->reaped = true;
}

static void kill_all(struct child *ch, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (!ch[i].reaped && ch[i].pid > 0)
			kill(ch[i].pid, SIGKILL);
	for (i = 0; i < n; i++)
		reap(&ch[i], 0);
}

static void run_child(struct mesh *m, int n, int up[][2], int down[][2],
		      rank_fn fn, void *arg, int timeout_s)
{
	int i, rc;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (i = 0; i < n; i++) {
		if (i == m->rank)
			continue;
		close(up[i][1]);
		close(down[i][0]);
	}
	alarm((unsigned int)timeout_s + 5);	/* should the parent hang */
	m->to_parent = up[m->rank][1];
	m->from_parent = down[m->rank][0];
	rc = fn(m, arg);
	_exit(rc || itest_failures() ? 1 : 0);
}

int mesh_run(const char *name, int n, rank_fn fn, void *arg, int timeout_s)
{
	int up[ITEST_MAX_RANKS][2], down[ITEST_MAX_RANKS][2];
	struct child ch[ITEST_MAX_RANKS] = { 0 };
	int64_t deadline = itest_now_ms() + (int64_t)timeout_s * 1000;
	struct mesh m = { .nranks = n, .rank = -1 };
	bool sent_table = false, timed_out = false;
	int i, open_pipes, nports = 0, bad = 0;
	char what[128];

	if (n < 1 || n > ITEST_MAX_RANKS)
		return tap(false, "%s: %d ranks", name, n) ? 0 : 1;
	for (i = 0; i < n; i++) {
		if (pipe(up[i]) || pipe(down[i])) {
			tap(false, "%s: pipe: %s", name, strerror(errno));
			return n;
		}
	}
	for (i = 0; i < n; i++) {
		ch[i].pid = fork();
		if (ch[i].pid < 0) {
			tap(false, "%s: fork: %s", name, strerror(errno));
			kill_all(ch, i);
			return n;
		}
		if (ch[i].pid == 0) {
			m.rank = i;
			run_child(&m, n, up, down, fn, arg, timeout_s);
		}
	}
	for (i = 0; i < n; i++) {
		close(up[i][1]);
		close(down[i][0]);
		ch[i].up = up[i][0];
		ch[i].down = down[i][1];
	}

	open_pipes = n;
	while (open_pipes) {
		struct pollfd pfd[ITEST_MAX_RANKS];
		int64_t left = deadline - itest_now_ms();

		if (left <= 0) {
			timed_out = true;
			break;
		}
		for (i = 0; i < n; i++) {
			pfd[i].fd = ch[i].eof ? -1 : ch[i].up;
			pfd[i].events = POLLIN;
			pfd[i].revents = 0;
		}
		if (poll(pfd, (nfds_t)n, (int)(left > 1000 ? 1000 : left)) < 0 &&
		    errno != EINTR)
			break;
		for (i = 0; i < n; i++) {
			struct msg msg;

			if (!pfd[i].revents)
				continue;
			if (read_full(ch[i].up, &msg, sizeof(msg))) {
				ch[i].eof = true;
				open_pipes--;
				if (!ch[i].has_port && !sent_table) {
					diag("%s: rank %d ended before the mesh formed",
					     name, i);
					kill_all(ch, n);
				}
				continue;
			}
			if (msg.kind == MESH_PORT) {
				ch[i].has_port = true;
				m.port[i] = (uint16_t)msg.a;
				nports++;
			} else if (msg.kind == MESH_KILL && msg.a < (uint32_t)n) {
				struct child *v = &ch[msg.a];

				v->planned_kill = true;
				kill(v->pid, SIGKILL);
				reap(v, 0);
				msg.kind = MESH_KILLED;
				write_full(ch[i].down, &msg, sizeof(msg));
			}
		}
		if (nports == n && !sent_table) {
			struct table t = { 0 };

			for (i = 0; i < n; i++) {
				t.port[i] = m.port[i];
				t.pid[i] = ch[i].pid;
			}
			for (i = 0; i < n; i++)
				write_full(ch[i].down, &t, sizeof(t));
			sent_table = true;
		}
	}
	if (timed_out) {
		for (i = 0; i < n; i++) {
			reap(&ch[i], WNOHANG);
			if (!ch[i].reaped)
				diag("%s: rank %d still running at the deadline",
				     name, i);
		}
		tap(false, "%s: all ranks done within %d s", name, timeout_s);
		kill_all(ch, n);
		bad++;
	}
	/* Every pipe is closed: the ranks are exiting; give them the rest. */
	for (i = 0; i < n; i++) {
		while (!ch[i].reaped && itest_now_ms() < deadline + 5000) {
			reap(&ch[i], WNOHANG);
			if (!ch[i].reaped)
				itest_sleep_ms(5);
		}
	}
	kill_all(ch, n);
	for (i = 0; i < n; i++) {
		bool ok;

		close(ch[i].up);
		close(ch[i].down);
		describe(ch[i].status, what, sizeof(what));
		if (ch[i].planned_kill)
			ok = WIFSIGNALED(ch[i].status) &&
			     WTERMSIG(ch[i].status) == SIGKILL;
		else
			ok = WIFEXITED(ch[i].status) &&
			     WEXITSTATUS(ch[i].status) == 0;
		bad += !tap(ok, "%s: rank %d %s%s", name, i, what,
			    ch[i].planned_kill ? " (killed by plan)" : "");
	}
	return bad;
}

/* ---------------------------------------------------------- communicator */

size_t rank_buf_size(size_t base, int rank)
{
	return base + (size_t)rank * 4099 + 1237;
}

enum hmc_transport itest_transport(int a, int b)
{
	const char *env = getenv("HMC_TEST_TRANSPORT"), *s;
	int n = 1, k;

	if (!env || !*env)
		return HMC_TRANSPORT_UCX;
	for (s = env; (s = strchr(s, ',')); s++)
		n++;
	for (s = env, k = (a + b) % n; k; k--)
		s = strchr(s, ',') + 1;
	if (!strncmp(s, "verbs", 5))
		return HMC_TRANSPORT_VERBS;
	if (!strncmp(s, "shm", 3))
		return HMC_TRANSPORT_SHM;
	if (!strncmp(s, "tcp", 3))
		return HMC_TRANSPORT_TCP;
	if (!strncmp(s, "auto", 4))
		return HMC_TRANSPORT_AUTO;
	return HMC_TRANSPORT_UCX;
}

/*
 * The transport a pair must end up on: AUTO resolves to HMC_TEST_AUTO_IS
 * (shm, verbs, tcp, ucx; default ucx), the rest to themselves.
 */
static enum hmc_transport expected_transport(int a, int b)
{
	enum hmc_transport t = itest_transport(a, b);
	const char *env = getenv("HMC_TEST_AUTO_IS");

	if (t != HMC_TRANSPORT_AUTO)
		return t;
	if (env && !strcmp(env, "shm"))
		return HMC_TRANSPORT_SHM;
	if (env && !strcmp(env, "verbs"))
		return HMC_TRANSPORT_VERBS;
	if (env && !strcmp(env, "tcp"))
		return HMC_TRANSPORT_TCP;
	return HMC_TRANSPORT_UCX;
}

int comm_setup(int rank, size_t size, const char *ip,
	       const struct hmc_comm_opts *opts, struct hmc_buf **buf,
	       struct hmc_comm **comm)
{
	HMC_OPTS(hmc_comm_opts, o);
	const char *chs = getenv("HMC_TEST_CHS");
	int rc;

	if (opts)
		o = *opts;
	if (chs && !o.num_chs)
		o.num_chs = (uint32_t)atoi(chs);

	rc = hmc_buf_create(HMC_MEM_CPU, 0, size, NULL, buf);
	if (rc) {
		tap(false, "buffer of %zu bytes: %s", size, hmc_strerror(rc));
		return -1;
	}
	rc = hmc_comm_create(*buf, &o, comm);
	if (rc) {
		tap(false, "communicator: %s", hmc_strerror(rc));
		hmc_buf_destroy(*buf);
		return -1;
	}
	rc = hmc_comm_listen(*comm, ip, 0);
	if (rc || hmc_comm_listen_port(*comm) <= 0) {
		tap(false, "listen on %s: %s", ip, hmc_strerror(rc));
		hmc_comm_destroy(*comm);
		hmc_buf_destroy(*buf);
		return -1;
	}
	return 0;
}

bool wait_connected(struct hmc_comm *comm, uint32_t peer, bool want,
		    int timeout_ms)
{
	int64_t deadline = itest_now_ms() + timeout_ms;

	for (;;) {
		if (hmc_comm_is_connected(comm, peer) == want)
			return true;
		if (itest_now_ms() >= deadline)
			return false;
		itest_sleep_ms(2);
	}
}

int mesh_connect(struct mesh *m, struct hmc_comm *comm, const char *const *ips,
		 int timeout_ms)
{
	int q, rc, bad = 0;

	for (q = m->rank + 1; q < m->nranks; q++) {
		rc = hmc_comm_connect(comm, (uint32_t)q, ips[q], m->port[q],
				      itest_transport(m->rank, q));
		if (rc) {
			diag("connect to rank %d at %s:%u: %s", q, ips[q],
			     m->port[q], hmc_strerror(rc));
			bad++;
		}
	}
	for (q = 0; q < m->rank; q++) {
		if (!wait_connected(comm, (uint32_t)q, true, timeout_ms)) {
			diag("rank %d did not connect within %d ms", q,
			     timeout_ms);
			bad++;
		}
	}
	for (q = 0; q < m->nranks && !bad; q++) {
		if (q == m->rank)
			continue;
		rc = hmc_comm_peer_transport(comm, (uint32_t)q);
		if (rc != (int)expected_transport(m->rank, q)) {
			diag("rank %d is on transport %s, not %s", q,
			     rc < 0 ? hmc_strerror(rc) :
				      hmc_transport_name((enum hmc_transport)rc),
			     hmc_transport_name(expected_transport(m->rank, q)));
			bad++;
		}
	}
	return tap(!bad, "full mesh of %d ranks connected", m->nranks) ? 0 : -1;
}

#define TAG_GOODBYE	0x600d0b7e600d0b7eULL

int mesh_goodbye(struct hmc_comm *comm, int me, const int *ranks, int n)
{
	uint64_t tag;
	int i, rc, bad = 0;

	for (i = 0; i < n; i++) {
		if (ranks[i] == me)
			continue;
		rc = hmc_comm_send_tag(comm, (uint32_t)ranks[i], TAG_GOODBYE);
		if (rc) {
			diag("goodbye to rank %d: %s", ranks[i], hmc_strerror(rc));
			bad++;
		}
	}
	for (i = 0; i < n; i++) {
		if (ranks[i] == me)
			continue;
		tag = 0;
		rc = hmc_comm_recv_tag(comm, (uint32_t)ranks[i], &tag, 20000);
		if (rc || tag != TAG_GOODBYE) {
			diag("goodbye from rank %d: %s, tag 0x%llx", ranks[i],
			     hmc_strerror(rc), (unsigned long long)tag);
			bad++;
		}
	}
	return tap(!bad, "goodbye tags exchanged with %d peers", n - 1) ? 0 : -1;
}
