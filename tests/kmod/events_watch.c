// SPDX-License-Identifier: GPL-2.0
/*
 * test_events: hmcstat, run as the user would: `hmcstat -w -j` captures
 * exactly the events of a scripted run, reports lost events, and -s, -b
 * and -p show what the ioctls say.
 */
#include <ctype.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include "events.h"

/* ---- a flat JSON object, as hmcstat writes them ------------------------- */

#define MAX_FIELDS	32

struct jobj {
	int n;
	char key[MAX_FIELDS][32];
	char val[MAX_FIELDS][160];	/* strings without their quotes */
	int is_str[MAX_FIELDS];
};

static const char *skip_ws(const char *p)
{
	while (isspace((unsigned char)*p))
		p++;
	return p;
}

/* A JSON string at @p (after the quote) into @dst; the end, or NULL. */
static const char *parse_str(const char *p, char *dst, size_t len)
{
	size_t n = 0;

	for (; *p && *p != '"'; p++) {
		if (*p == '\\' && p[1])
			p++;
		if (n + 1 < len)
			dst[n++] = *p;
	}
	dst[n] = 0;
	return *p == '"' ? p + 1 : NULL;
}

/* Parses one flat object; the text after it, or NULL if malformed. */
static const char *parse_obj(const char *p, struct jobj *o)
{
	size_t n;

	memset(o, 0, sizeof(*o));
	p = skip_ws(p);
	if (*p++ != '{')
		return NULL;
	p = skip_ws(p);
	if (*p == '}')
		return p + 1;
	for (;;) {
		if (o->n == MAX_FIELDS || *p++ != '"')
			return NULL;
		p = parse_str(p, o->key[o->n], sizeof(o->key[0]));
		if (!p)
			return NULL;
		p = skip_ws(p);
		if (*p++ != ':')
			return NULL;
		p = skip_ws(p);
		if (*p == '"') {
			p = parse_str(p + 1, o->val[o->n], sizeof(o->val[0]));
			if (!p)
				return NULL;
			o->is_str[o->n] = 1;
		} else {
			n = strspn(p, "0123456789-truefals");
			if (!n || n >= sizeof(o->val[0]))
				return NULL;
			memcpy(o->val[o->n], p, n);
			p += n;
		}
		o->n++;
		p = skip_ws(p);
		if (*p == '}')
			return p + 1;
		if (*p++ != ',')
			return NULL;
		p = skip_ws(p);
	}
}

static const char *jget(const struct jobj *o, const char *key)
{
	int i;

	for (i = 0; i < o->n; i++)
		if (!strcmp(o->key[i], key))
			return o->val[i];
	return NULL;
}

static uint64_t jnum(const struct jobj *o, const char *key)
{
	const char *v = jget(o, key);

	ck_assert_msg(v, "no \"%s\"", key);
	return strtoull(v, NULL, 10);
}

static void expect_str(const struct jobj *o, const char *key, const char *want)
{
	const char *v = jget(o, key);

	ck_assert_msg(v && !strcmp(v, want), "\"%s\" is %s, want %s", key,
		      v ? v : "missing", want);
}

/* ---- running hmcstat ------------------------------------------------------ */

struct proc {
	pid_t pid;
	int out, err;		/* its stdout and stderr */
	char text[1 << 20];	/* what it wrote to stdout */
	size_t len;
};

static const char *hmcstat_path(void)
{
	const char *p = getenv("HMC_HMCSTAT");

	return p && *p ? p : NULL;
}

static void spawn(struct proc *pr, char *const argv[])
{
	int o[2], e[2];

	ck_assert_int_eq(pipe2(o, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(e, O_CLOEXEC), 0);
	pr->len = 0;
	pr->pid = fork();
	ck_assert_int_ge(pr->pid, 0);
	if (!pr->pid) {
		dup2(o[1], 1);
		dup2(e[1], 2);
		execv(argv[0], argv);
		_exit(127);
	}
	close(o[1]);
	close(e[1]);
	pr->out = o[0];
	pr->err = e[0];
}

/* Reads @fd into @buf until @want appears or @ms pass; whether it did. */
static int read_until(int fd, char *buf, size_t size, size_t *len,
		      const char *want, int ms)
{
	uint64_t deadline = now_ns() + ms * 1000000ULL;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	while (!(want && strstr(buf, want)) && now_ns() < deadline) {
		if (poll(&p, 1, 50) <= 0)
			continue;
		n = read(fd, buf + *len, size - 1 - *len);
		if (n <= 0)
			break;
		*len += n;
		buf[*len] = 0;
	}
	return want && strstr(buf, want);
}

/* Starts `hmcstat -w ...` and waits until it listens. */
static void start_watch(struct proc *pr, char *const argv[])
{
	char err[1024] = "";
	size_t len = 0;

	spawn(pr, argv);
	ck_assert_msg(read_until(pr->err, err, sizeof(err), &len,
				 "watching hmc events", 10000),
		      "hmcstat did not start: %s", err);
}

/* Stops it with SIGINT after @ms of quiet and collects its output. */
static void stop_watch(struct proc *pr, int ms)
{
	int st;

	usleep(ms * 1000);
	read_until(pr->out, pr->text, sizeof(pr->text), &pr->len, NULL, 100);
	kill(pr->pid, SIGINT);
	read_until(pr->out, pr->text, sizeof(pr->text), &pr->len, NULL, 2000);
	ck_assert_int_eq(waitpid(pr->pid, &st, 0), pr->pid);
	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGINT,
		      "hmcstat -w ended with status %#x", st);
	close(pr->out);
	close(pr->err);
}

/* Runs hmcstat to its end; its stdout in pr->text, its exit status. */
static int run_hmcstat(struct proc *pr, char *const argv[])
{
	int st;

	spawn(pr, argv);
	read_until(pr->out, pr->text, sizeof(pr->text), &pr->len, NULL, 10000);
	ck_assert_int_eq(waitpid(pr->pid, &st, 0), pr->pid);
	close(pr->out);
	close(pr->err);
	ck_assert_msg(WIFEXITED(st), "hmcstat: status %#x", st);
	return WEXITSTATUS(st);
}

/* Splits JSON lines into objects; their number. */
static int json_lines(char *text, struct jobj *o, int max)
{
	char *line, *save = NULL;
	int n = 0;

	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		ck_assert_int_lt(n, max);
		ck_assert_msg(parse_obj(line, &o[n]) &&
			      !*skip_ws(parse_obj(line, &o[n])),
			      "not a JSON object: %s", line);
		n++;
	}
	return n;
}

/* The leaf objects of a document, in order (those with no object inside). */
static int json_leaves(const char *doc, struct jobj *o, int max)
{
	const char *p = doc, *end;
	int n = 0;

	while ((p = strchr(p, '{'))) {
		end = strpbrk(p + 1, "{}");
		if (end && *end == '}') {
			ck_assert_int_lt(n, max);
			ck_assert_msg(parse_obj(p, &o[n]) == end + 1,
				      "malformed object: %.80s", p);
			n++;
		}
		p++;
	}
	return n;
}

#define HMCSTAT_OR_SKIP() do {						\
	if (!hmcstat_path())						\
		SKIP("HMC_HMCSTAT is not set");				\
} while (0)

/* ---- tests ----------------------------------------------------------------- */

/*
 * The run: a buffer is created and exported, a peer connects, the
 * peer is killed and reported failed, the buffer is freed.
 */
START_TEST(hmcstat_watch_captures_a_run)
{
	static struct proc pr;
	static struct jobj ev[64];
	char *argv[] = { (char *)hmcstat_path(), "-w", "-j", NULL };
	uint8_t gid[16] = { 0xfe, 0x80, [14] = 0x12, [15] = 0x34 };
	char pidstr[16];
	pid_t peer;
	uint32_t h;
	int i, n, st, dmabuf, fd;

	HMCSTAT_OR_SKIP();
	start_watch(&pr, argv);
	fd = open_dev();
	h = alloc_ok(fd, 16 * pg, NULL);
	EXPECT_OK(hmc_export(fd, h, HMC_BUF_EXPORT_F_RDWR, 0, 0, &dmabuf));
	peer = fork();
	ck_assert_int_ge(peer, 0);
	if (!peer) {
		pause();
		_exit(0);
	}
	EXPECT_OK(hmc_peer_report(fd, peer, HMC_PEER_CONNECTED, 0,
				  HMC_PEER_TRANSPORT_VERBS, gid, sizeof(gid)));
	kill(peer, SIGKILL);
	ck_assert_int_eq(waitpid(peer, &st, 0), peer);
	EXPECT_OK(hmc_peer_report(fd, peer, HMC_PEER_FAILED, ECONNRESET, 0,
				  NULL, 0));
	close(dmabuf);
	EXPECT_OK(hmc_free(fd, h));
	stop_watch(&pr, 500);

	n = json_lines(pr.text, ev, 64);
	ck_assert_msg(n == 5, "%d events: %s", n, pr.text);
	for (i = 1; i < n; i++)
		ck_assert_uint_eq(jnum(&ev[i], "seq"), jnum(&ev[i - 1], "seq") + 1);
	for (i = 0; i < n; i++) {
		ck_assert_uint_eq(jnum(&ev[i], "pid"), getpid());
		ck_assert_uint_gt(jnum(&ev[i], "time_ns"), 0);
	}
	expect_str(&ev[0], "event", "buf-created");
	ck_assert_uint_eq(jnum(&ev[0], "handle"), h);
	ck_assert_uint_eq(jnum(&ev[0], "size"), 16 * pg);
	expect_str(&ev[0], "type", "kernel");
	expect_str(&ev[1], "event", "buf-exported");
	ck_assert_uint_eq(jnum(&ev[1], "buf"), jnum(&ev[0], "buf"));
	ck_assert_uint_eq(jnum(&ev[1], "offset"), 0);
	snprintf(pidstr, sizeof(pidstr), "%d", peer);
	expect_str(&ev[2], "event", "peer-connected");
	expect_str(&ev[2], "peer", pidstr);
	expect_str(&ev[2], "transport", "verbs");
	expect_str(&ev[2], "addr", "fe800000000000000000000000001234");
	expect_str(&ev[3], "event", "peer-failed");
	expect_str(&ev[3], "peer", pidstr);
	ck_assert_uint_eq(jnum(&ev[3], "errno"), ECONNRESET);
	expect_str(&ev[4], "event", "buf-freed");
	ck_assert_uint_eq(jnum(&ev[4], "buf"), jnum(&ev[0], "buf"));
	close(fd);
	expect_no_live();
}
END_TEST

/* Text lines: SEQ TIME EVENT key=value... */
START_TEST(hmcstat_watch_text)
{
	static struct proc pr;
	char *argv[] = { (char *)hmcstat_path(), "-w", NULL };
	char *line, *save = NULL;
	unsigned long long seq[2];
	char event[2][32], rest[2][512];
	int n = 0, fd;

	HMCSTAT_OR_SKIP();
	start_watch(&pr, argv);
	fd = open_dev();
	EXPECT_OK(hmc_peer_report(fd, 9, HMC_PEER_CONNECTED, 0,
				  HMC_PEER_TRANSPORT_SHM, "\x01\x02", 2));
	close(fd);
	stop_watch(&pr, 500);
	for (line = strtok_r(pr.text, "\n", &save); line && n < 2;
	     line = strtok_r(NULL, "\n", &save), n++)
		ck_assert_msg(sscanf(line, "%llu %*[0-9T:.-] %31s %511[^\n]",
				     &seq[n], event[n], rest[n]) == 3,
			      "line: %s", line);
	ck_assert_int_eq(n, 2);
	ck_assert_uint_eq(seq[1], seq[0] + 1);
	ck_assert_str_eq(event[0], "peer-connected");
	ck_assert_msg(strstr(rest[0], "peer=9 transport=shm addr=0102"),
		      "%s", rest[0]);
	ck_assert_str_eq(event[1], "peer-disconnected");
	ck_assert_msg(strstr(rest[1], "errno=ESHUTDOWN"), "%s", rest[1]);
	expect_no_live();
}
END_TEST

/* A watcher that is stopped while events pour in reports what it lost. */
START_TEST(hmcstat_reports_lost_events)
{
	static struct proc pr;
	static struct jobj ev[8192];
	char *argv[] = { (char *)hmcstat_path(), "-w", "-j", NULL };
	uint64_t first = 0, last = 0, lost = 0, got = 0, sent;
	int i, n, overruns = 0, fd;
	const char *e;

	HMCSTAT_OR_SKIP();
	start_watch(&pr, argv);
	fd = open_dev();
	sent = events_done(fd);
	kill(pr.pid, SIGSTOP);
	for (i = 0; i < 6000; i++)
		EXPECT_OK(hmc_peer_report(fd, 1, i % 2 ? HMC_PEER_DISCONNECTED :
					  HMC_PEER_CONNECTED, 0, 0, NULL, 0));
	expect_events_done(fd, sent + 6000);
	kill(pr.pid, SIGCONT);
	usleep(200000);
	EXPECT_OK(hmc_peer_report(fd, 99, HMC_PEER_CONNECTED, 0, 0, NULL, 0));
	stop_watch(&pr, 1000);
	close(fd);

	n = json_lines(pr.text, ev, 8192);
	for (i = 0; i < n; i++) {
		e = jget(&ev[i], "event");
		ck_assert_ptr_nonnull(e);
		if (!strcmp(e, "overrun")) {
			overruns++;
		} else if (!strcmp(e, "lost")) {
			lost += jnum(&ev[i], "count");
		} else {
			last = jnum(&ev[i], "seq");
			first = first ? first : last;
			got++;
		}
	}
	ck_assert_int_ge(overruns, 1);
	ck_assert_uint_gt(lost, 0);
	/* Every number from the first to the last: shown or counted lost. */
	ck_assert_uint_eq(got + lost, last - first + 1);
	expect_str(&ev[n - 1], "event", "peer-connected");
	ck_assert_uint_eq(jnum(&ev[n - 1], "peer"), 99);
	expect_no_live();
}
END_TEST

START_TEST(hmcstat_stats)
{
	static struct proc pr;
	static struct jobj o[8];
	char *argv[] = { (char *)hmcstat_path(), "-s", "-j", NULL };
	char *argv_i[] = { (char *)hmcstat_path(), "-s", "-j", "-i", "50",
			   "-c", "3", NULL };
	char *argv_t[] = { (char *)hmcstat_path(), NULL };
	uint64_t c[HMC_STAT_COUNT];
	uint32_t a, b;
	int fd = open_dev();

	HMCSTAT_OR_SKIP();
	a = alloc_ok(fd, 3 * pg, NULL);
	b = alloc_ok(fd, 5 * pg, NULL);
	EXPECT_OK(hmc_peer_report(fd, 3, HMC_PEER_CONNECTED, 0, 0, NULL, 0));
	get_stats(fd, 1, c);
	ck_assert_int_eq(run_hmcstat(&pr, argv), 0);
	ck_assert_int_eq(json_lines(pr.text, o, 8), 1);
	ck_assert_uint_eq(jnum(&o[0], "bufs_live"), c[HMC_STAT_BUFS_LIVE]);
	ck_assert_uint_eq(jnum(&o[0], "bytes_live"), c[HMC_STAT_BYTES_LIVE]);
	ck_assert_uint_eq(jnum(&o[0], "peers_connected"), 1);
	ck_assert_uint_eq(jnum(&o[0], "exports_live"), 0);
	ck_assert_ptr_nonnull(jget(&o[0], "events_dropped"));
	ck_assert_ptr_nonnull(jget(&o[0], "seq"));
	ck_assert_int_eq(o[0].n, HMC_STAT_COUNT + 1);

	ck_assert_int_eq(run_hmcstat(&pr, argv_i), 0);
	ck_assert_int_eq(json_lines(pr.text, o, 8), 3);
	ck_assert_uint_eq(jnum(&o[2], "bufs_live"), c[HMC_STAT_BUFS_LIVE]);

	ck_assert_int_eq(run_hmcstat(&pr, argv_t), 0);
	ck_assert_msg(strstr(pr.text, "bufs_live"), "%s", pr.text);
	ck_assert_msg(strstr(pr.text, "peers_connected      1\n"), "%s",
		      pr.text);
	EXPECT_OK(hmc_free(fd, a));
	EXPECT_OK(hmc_free(fd, b));
	close(fd);
	expect_no_live();
}
END_TEST

START_TEST(hmcstat_buffers_peers_imports)
{
	static struct proc pr;
	static struct jobj o[512];
	char *argv_b[] = { (char *)hmcstat_path(), "-b", "-j", NULL };
	char *argv_p[] = { (char *)hmcstat_path(), "-p", "-j", NULL };
	char *argv_pt[] = { (char *)hmcstat_path(), "-p", NULL };
	struct hmc_peer_import imp;
	uint32_t h;
	int i, n, dmabuf, mine = 0, fd = open_dev();

	HMCSTAT_OR_SKIP();
	h = alloc_ok(fd, 7 * pg, NULL);
	EXPECT_OK(hmc_export(fd, h, HMC_BUF_EXPORT_F_RDWR, 0, 0, &dmabuf));
	EXPECT_OK(hmc_import(fd, dmabuf, HMC_PEER_IMPORT_F_READONLY, pg, pg,
			     &imp));
	EXPECT_OK(hmc_peer_report(fd, 77, HMC_PEER_CONNECTED, 0,
				  HMC_PEER_TRANSPORT_TCP, "\xab", 1));

	ck_assert_int_eq(run_hmcstat(&pr, argv_b), 0);
	ck_assert_msg(!strncmp(pr.text, "{\"buffers\":[", 12), "%s", pr.text);
	n = json_leaves(pr.text, o, 512);
	for (i = 0; i < n; i++) {
		if (jnum(&o[i], "pid") != (uint64_t)getpid())
			continue;
		mine++;
		ck_assert_uint_eq(jnum(&o[i], "handle"), h);
		ck_assert_uint_eq(jnum(&o[i], "size"), 7 * pg);
		ck_assert_uint_eq(jnum(&o[i], "exports"), 1);
		expect_str(&o[i], "handle_live", "true");
		expect_str(&o[i], "type", "kernel");
	}
	ck_assert_int_eq(mine, 1);

	ck_assert_int_eq(run_hmcstat(&pr, argv_p), 0);
	ck_assert_msg(!strncmp(pr.text, "{\"peers\":[", 10), "%s", pr.text);
	ck_assert_msg(strstr(pr.text, "],\"imports\":["), "%s", pr.text);
	n = json_leaves(pr.text, o, 512);
	mine = 0;
	for (i = 0; i < n; i++) {
		if (jnum(&o[i], "pid") != (uint64_t)getpid())
			continue;
		if (jget(&o[i], "peer")) {
			ck_assert_uint_eq(jnum(&o[i], "peer"), 77);
			expect_str(&o[i], "transport", "tcp");
			expect_str(&o[i], "addr", "ab");
		} else {
			ck_assert_uint_eq(jnum(&o[i], "handle"), imp.handle);
			expect_str(&o[i], "exporter", "hmc");
			expect_str(&o[i], "flags", "readonly");
			expect_str(&o[i], "state", "mapped");
			ck_assert_uint_eq(jnum(&o[i], "offset"), pg);
		}
		mine++;
	}
	ck_assert_int_eq(mine, 2);

	ck_assert_int_eq(run_hmcstat(&pr, argv_pt), 0);
	ck_assert_msg(strstr(pr.text, "peers:\n") &&
		      strstr(pr.text, "imports:\n") &&
		      strstr(pr.text, " exporter=hmc "), "%s", pr.text);
	close(dmabuf);
	close(fd);
	expect_no_live();
}
END_TEST

static void hmcstat_as_nobody(void *arg)
{
	static struct proc pr;
	char *argv_b[] = { (char *)hmcstat_path(), "-b", NULL };
	char *argv_s[] = { (char *)hmcstat_path(), "-s", NULL };

	become_nobody(MiB);
	CHILD_CHECK(run_hmcstat(&pr, argv_s) == 0);
	CHILD_CHECK(strstr(pr.text, "bufs_live"));
	CHILD_CHECK(run_hmcstat(&pr, argv_b) == 1);
}

START_TEST(hmcstat_unprivileged)
{
	HMCSTAT_OR_SKIP();
	run_child(hmcstat_as_nobody, NULL);
}
END_TEST

START_TEST(hmcstat_usage)
{
	static struct proc pr;
	char *bad[][5] = {
		{ (char *)hmcstat_path(), "-x", NULL },
		{ (char *)hmcstat_path(), "-w", "-b", NULL },
		{ (char *)hmcstat_path(), "-b", "-i", "10", NULL },
		{ (char *)hmcstat_path(), "-s", "-i", "0", NULL },
		{ (char *)hmcstat_path(), "-s", "extra", NULL },
	};
	char *help[] = { (char *)hmcstat_path(), "-h", NULL };
	size_t i;

	HMCSTAT_OR_SKIP();
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(run_hmcstat(&pr, bad[i]), 2);
		ck_assert_uint_eq(pr.len, 0);	/* nothing on stdout */
	}
	ck_assert_int_eq(run_hmcstat(&pr, help), 0);
	ck_assert_msg(strstr(pr.text, "Usage: hmcstat"), "%s", pr.text);
}
END_TEST

const struct test watch_tests[] = {
	T(hmcstat_watch_captures_a_run, 60),
	T(hmcstat_watch_text, 30),
	T(hmcstat_reports_lost_events, 120),
	T(hmcstat_stats, 30),
	T(hmcstat_buffers_peers_imports, 30),
	T(hmcstat_unprivileged, 30),
	T(hmcstat_usage, 30),
	{ NULL }
};
