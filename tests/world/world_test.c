// SPDX-License-Identifier: MIT
/*
 * One rank of the hmc_world tests (tests/world/run.sh), started by hmcrun,
 * mpirun, by hand with torchrun's or HMC's variables, or by itself (uid,
 * churn). Prints TAP lines; exits non-zero on any failure.
 *
 *   world_test basic [SIZE]      init from the environment, check rank, size,
 *                                allgather, bcast from every root, barrier and
 *                                a put_signal ring over the communicator
 *   world_test refused ERRNO     init must fail with -ERRNO (a wrong secret or
 *                                certificate)
 *   world_test missing R,R...    init must time out naming exactly those ranks
 *   world_test uid N             make a unique id, start N-1 more ranks with
 *                                it (HMC_WORLD_UID), run basic in all
 *   world_test churn             rank 0 of a uid world of 3: SIGKILL of rank 1
 *                                while it sends, rank 2 leaves, a joiner takes
 *                                rank 1; every member's view is checked
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hmc/world.h>

#include "pattern.h"

#define T_MS		20000
#define AG_LEN		4173	/* not a multiple of anything */
#define RING_LEN	(64 * 1024 + 37)
#define RING_OFF	(1 << 20)

static int failures;

#define CHECK(cond, ...) do {						\
	if (cond) {							\
		printf("ok - " __VA_ARGS__);				\
	} else {							\
		printf("not ok - " __VA_ARGS__);			\
		failures++;						\
	}								\
	printf("\n");							\
	fflush(stdout);							\
} while (0)

static uint64_t seed(uint32_t rank, uint32_t what)
{
	return ((uint64_t)what << 32) | (rank + 1);
}

static int check_allgather(struct hmc_world *w, const char *tag,
			   const uint8_t *absent)
{
	uint32_t n = hmc_world_size(w), me = hmc_world_rank(w), r;
	uint8_t *send = malloc(AG_LEN), *recv = malloc((size_t)n * AG_LEN);
	int rc, bad = 0;

	pattern_fill(send, AG_LEN, seed(me, 1));
	memset(recv, 0xa5, (size_t)n * AG_LEN);
	rc = hmc_world_allgather(w, send, AG_LEN, recv, T_MS);
	CHECK(!rc, "rank %u: %s allgather of %d B: %s", me, tag, AG_LEN,
	      rc ? hmc_world_last_error(w) : "done");
	for (r = 0; !rc && r < n; r++) {
		const uint8_t *p = recv + (size_t)r * AG_LEN;
		long at;
		size_t i;

		if (absent && absent[r]) {
			for (i = 0; i < AG_LEN && !p[i]; i++)
				;
			if (i != AG_LEN) {
				printf("# rank %u's slot: byte %zu not zero\n",
				       r, i);
				bad++;
			}
			continue;
		}
		at = pattern_mismatch(p, AG_LEN, seed(r, 1));
		if (at >= 0) {
			printf("# rank %u's block differs at byte %ld\n", r, at);
			bad++;
		}
	}
	if (!rc)
		CHECK(!bad, "rank %u: %s allgather: all %u blocks, every byte",
		      me, tag, n);
	free(send);
	free(recv);
	return rc || bad;
}

static void check_bcast(struct hmc_world *w)
{
	uint32_t n = hmc_world_size(w), me = hmc_world_rank(w), root;
	size_t len = 3001;
	uint8_t *buf = malloc(len);
	long at;
	int rc;

	for (root = 0; root < n; root++) {
		if (me == root)
			pattern_fill(buf, len, seed(root, 2));
		else
			memset(buf, 0x5a, len);
		rc = hmc_world_bcast(w, buf, len, root, T_MS);
		at = rc ? -2 : pattern_mismatch(buf, len, seed(root, 2));
		CHECK(!rc && at < 0, "rank %u: bcast of %zu B from root %u%s",
		      me, len, root, rc ? hmc_world_last_error(w) :
		      at >= 0 ? ": data differs" : "");
	}
	free(buf);
}

/* Each rank puts into the next one's buffer and signals; the next checks. */
static void check_ring(struct hmc_world *w)
{
	uint32_t n = hmc_world_size(w), me = hmc_world_rank(w);
	uint32_t next = (me + 1) % n, prev = (me + n - 1) % n;
	struct hmc_comm *comm = hmc_world_comm(w);
	struct hmc_buf *buf = hmc_comm_buf(comm);
	uint64_t tag = 0;
	uint8_t *p = hmc_buf_ptr(buf);
	long at;
	int rc;

	if (n < 2)
		return;
	/* Eager worlds are connected already; lazy ones connect here, both
	 * sides of each pair at once. */
	rc = hmc_world_connect(w, next, T_MS);
	if (!rc && prev != next)
		rc = hmc_world_connect(w, prev, T_MS);
	CHECK(!rc, "rank %u: connect to ranks %u and %u: %s", me, prev, next,
	      rc ? hmc_world_last_error(w) : "done");
	CHECK(hmc_comm_is_connected(comm, next) &&
	      hmc_comm_is_connected(comm, prev),
	      "rank %u: connected to ranks %u and %u", me, prev, next);
	pattern_fill(p, RING_LEN, seed(me, 3));
	rc = hmc_comm_put_signal(comm, next, 0, RING_OFF, RING_LEN, 0x5100 + me);
	CHECK(!rc, "rank %u: put_signal of %d B to rank %u: %s", me, RING_LEN,
	      next, hmc_strerror(rc));
	rc = hmc_comm_recv_tag(comm, prev, &tag, T_MS);
	CHECK(!rc && tag == 0x5100 + prev, "rank %u: tag from rank %u: %s",
	      me, prev, hmc_strerror(rc));
	at = pattern_mismatch(p + RING_OFF, RING_LEN, seed(prev, 3));
	CHECK(at < 0, "rank %u: rank %u's %d B in our buffer, every byte (%ld)",
	      me, prev, RING_LEN, at);
}

/*
 * Tell the script we are in the middle of the run (DIR/ready.RANK) and
 * wait until it says go on (DIR/go): it restarts etcd meanwhile.
 */
static void pause_for(const char *dir, uint32_t me)
{
	char path[512];
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "%s/ready.%u", dir, me);
	f = fopen(path, "w");
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "%s/go", dir);
	for (i = 0; i < 600 && access(path, F_OK); i++)
		usleep(50000);
	CHECK(!access(path, F_OK), "rank %u: the script restarted etcd", me);
}

static int basic(struct hmc_world *w, long want_size)
{
	uint32_t me = hmc_world_rank(w), n = hmc_world_size(w);
	int rc;

	printf("# rank %u of %u, local %u of %u, bootstrap %d\n", me, n,
	       hmc_world_local_rank(w), hmc_world_local_size(w),
	       hmc_world_bootstrap_used(w));
	if (want_size > 0)
		CHECK(n == (uint32_t)want_size, "rank %u: size %u", me, n);
	CHECK(me < n && hmc_world_local_rank(w) < hmc_world_local_size(w) &&
	      hmc_world_local_size(w) <= n, "rank %u: rank and local rank in "
	      "range", me);
	check_allgather(w, "", NULL);
	if (getenv("HMC_TEST_PAUSE_DIR"))
		pause_for(getenv("HMC_TEST_PAUSE_DIR"), me);
	check_bcast(w);
	check_ring(w);
	rc = hmc_world_barrier(w, T_MS);
	CHECK(!rc, "rank %u: barrier: %s", me, hmc_strerror(rc));
	rc = hmc_world_finalize(w);
	CHECK(!rc, "rank %u: finalize: %s", me, hmc_strerror(rc));
	return failures ? 1 : 0;
}

static int init_or_fail(struct hmc_world **w, const struct hmc_world_uid *uid)
{
	char err[512];
	HMC_OPTS(hmc_world_opts, o, .uid = uid, .err_msg = err,
		 .err_msg_len = sizeof(err));
	int rc = hmc_world_init(&o, w);

	if (rc)
		CHECK(0, "init: %s: %s", hmc_strerror(rc), err);
	return rc;
}

static int refused(int want)
{
	struct hmc_world *w;
	char err[512];
	HMC_OPTS(hmc_world_opts, o, .err_msg = err, .err_msg_len = sizeof(err),
		 .timeout_ms = 5000);
	int rc = hmc_world_init(&o, &w);

	CHECK(rc == -want, "init refused with %s (got %s: %s)", strerror(want),
	      hmc_strerror(rc), rc ? err : "joined");
	if (!rc)
		hmc_world_finalize(w);
	return failures ? 1 : 0;
}

static int missing(const char *ranks)
{
	struct hmc_world *w;
	char err[512], want[128];
	HMC_OPTS(hmc_world_opts, o, .err_msg = err, .err_msg_len = sizeof(err));
	int rc = hmc_world_init(&o, &w);

	snprintf(want, sizeof(want), "(never joined: %s)", ranks);
	CHECK(rc == -ETIMEDOUT && strstr(err, want),
	      "init fails at its deadline naming %s: %s: %s", want,
	      hmc_strerror(rc), rc ? err : "joined");
	if (!rc)
		hmc_world_finalize(w);
	return failures ? 1 : 0;
}

static pid_t spawn(const char *self, const char *mode, uint32_t rank,
		   const char *size, const char *uid_hex)
{
	char r[16];
	pid_t pid = fork();

	if (pid)
		return pid;
	snprintf(r, sizeof(r), "%u", rank);
	setenv("HMC_RANK", r, 1);
	setenv("HMC_WORLD_SIZE", size, 1);
	if (uid_hex) {
		setenv("HMC_WORLD_UID", uid_hex, 1);
		setenv("HMC_BOOTSTRAP", "uid", 1);
	} else {
		setenv("HMC_BOOTSTRAP", "store", 1);	/* HMC_STORE=etcd:// */
	}
	execl(self, self, mode, size, (char *)NULL);
	_exit(127);
}

static int wait_ok(pid_t pid, const char *what)
{
	int st = 0;

	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && !WEXITSTATUS(st), "%s exited with 0 (%d)", what,
	      st);
	return !(WIFEXITED(st) && !WEXITSTATUS(st));
}

static int uid_world(const char *self, int n)
{
	char hex[2 * HMC_WORLD_UID_LEN + 1], sz[16];
	struct hmc_world_uid uid;
	struct hmc_world *w;
	pid_t pids[64];
	int i, rc;

	rc = hmc_world_get_uid(NULL, &uid);
	CHECK(!rc, "unique id: %s", hmc_strerror(rc));
	if (rc || n < 1 || n > 64)
		return 1;
	hmc_world_uid_to_hex(&uid, hex);
	snprintf(sz, sizeof(sz), "%d", n);
	for (i = 1; i < n; i++)
		pids[i] = spawn(self, "basic", (uint32_t)i, sz, hex);
	setenv("HMC_RANK", "0", 1);
	setenv("HMC_WORLD_SIZE", sz, 1);
	rc = init_or_fail(&w, &uid);
	if (!rc)
		rc = basic(w, n);
	for (i = 1; i < n; i++)
		rc |= wait_ok(pids[i], "a uid rank");
	return rc || failures;
}

/* ---- churn: the roles of a uid world of 3 */

static int churn_child(const char *role)
{
	struct hmc_world *w;
	struct hmc_comm *comm;
	struct hmc_world_uid uid;
	struct hmc_world_event ev;
	uint32_t i;
	int rc;

	if (!strcmp(role, "joiner")) {
		const char *etcd = getenv("HMC_TEST_ETCD");
		char err[512];
		HMC_OPTS(hmc_world_opts, o, .uid = etcd ? NULL : &uid,
			 .err_msg = err, .err_msg_len = sizeof(err));

		if (!etcd && hmc_world_uid_from_hex(getenv("HMC_WORLD_UID"),
						    &uid))
			return 2;
		rc = hmc_world_join(etcd, &o, &w);
		CHECK(!rc, "joiner: join: %s: %s", hmc_strerror(rc), err);
		if (rc)
			return 1;
		CHECK(hmc_world_rank(w) == 1 && hmc_world_size(w) == 3,
		      "joiner: took the failed rank 1 of 3 (rank %u of %u)",
		      hmc_world_rank(w), hmc_world_size(w));
		check_allgather(w, "joiner", (const uint8_t[]){ 0, 0, 1 });
		rc = hmc_comm_send_tag(hmc_world_comm(w), 0, 0x7701);
		CHECK(!rc, "joiner: tag to rank 0: %s", hmc_strerror(rc));
		rc = hmc_world_barrier(w, T_MS);
		CHECK(!rc, "joiner: barrier: %s", hmc_strerror(rc));
		rc = hmc_world_finalize(w);
		CHECK(!rc, "joiner: leave: %s", hmc_strerror(rc));
		return failures ? 1 : 0;
	}
	if (!getenv("HMC_TEST_ETCD") &&
	    hmc_world_uid_from_hex(getenv("HMC_WORLD_UID"), &uid))
		return 2;
	if (init_or_fail(&w, getenv("HMC_TEST_ETCD") ? NULL : &uid))
		return 1;
	comm = hmc_world_comm(w);
	check_allgather(w, role, NULL);
	if (!strcmp(role, "victim")) {
		/* Put and signal to rank 0 until SIGKILL ends us. */
		pattern_fill(hmc_buf_ptr(hmc_comm_buf(comm)), RING_LEN,
			     seed(1, 4));
		for (i = 0;; i++) {
			rc = hmc_comm_put_signal(comm, 0, 0, RING_OFF, RING_LEN,
						 i);
			if (rc)
				return 1;
			usleep(2000);
		}
	}
	/* leaver: see rank 1 fail, then leave */
	rc = hmc_world_wait_event(w, &ev, 3 * HMC_WORLD_FAIL_DETECT_MS);
	CHECK(!rc && ev.type == HMC_WORLD_EV_FAILED && ev.rank == 1,
	      "leaver: event %s of rank %u (%s)", hmc_world_event_name(ev.type),
	      ev.rank, hmc_strerror(rc));
	rc = hmc_world_finalize(w);
	CHECK(!rc, "leaver: leave: %s", hmc_strerror(rc));
	return failures ? 1 : 0;
}

/*
 * The same with HMC_TEST_ETCD=etcd://...: no process hosts the store, the
 * first rank is as mortal as the others.
 */
static int churn(const char *self)
{
	const char *etcd = getenv("HMC_TEST_ETCD");
	char hex[2 * HMC_WORLD_UID_LEN + 1], *uid_hex = etcd ? NULL : hex;
	struct hmc_world_event ev;
	struct hmc_world_uid uid;
	struct hmc_world *w;
	struct hmc_comm *comm;
	struct timespec t0, t1;
	pid_t victim, leaver, joiner;
	uint64_t tag, got = 0;
	uint8_t *p;
	double ms;
	int rc, st;

	if (etcd) {
		setenv("HMC_STORE", etcd, 1);
	} else {
		if (hmc_world_get_uid(NULL, &uid))
			return 1;
		hmc_world_uid_to_hex(&uid, hex);
	}
	victim = spawn(self, "churn-victim", 1, "3", uid_hex);
	leaver = spawn(self, "churn-leaver", 2, "3", uid_hex);
	setenv("HMC_RANK", "0", 1);
	setenv("HMC_WORLD_SIZE", "3", 1);
	if (!etcd)
		setenv("HMC_BOOTSTRAP", "uid", 1);
	if (init_or_fail(&w, etcd ? NULL : &uid))
		return 1;
	comm = hmc_world_comm(w);
	p = hmc_buf_ptr(hmc_comm_buf(comm));
	check_allgather(w, "rank 0", NULL);
	/* Traffic from rank 1, checked whole each time, then SIGKILL. */
	while (got < 20) {
		rc = hmc_comm_recv_tag(comm, 1, &tag, T_MS);
		if (rc)
			break;
		if (pattern_mismatch(p + RING_OFF, RING_LEN, seed(1, 4)) >= 0)
			break;
		got++;
	}
	CHECK(got == 20, "rank 0: 20 put_signals of %d B from rank 1, every "
	      "byte checked", RING_LEN);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	kill(victim, SIGKILL);
	waitpid(victim, &st, 0);
	rc = hmc_world_wait_event(w, &ev, 3 * HMC_WORLD_FAIL_DETECT_MS);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	CHECK(!rc && ev.type == HMC_WORLD_EV_FAILED && ev.rank == 1 &&
	      ms < HMC_WORLD_FAIL_DETECT_MS,
	      "rank 0: SIGKILLed rank 1 reported failed in %.0f ms (deadline "
	      "%d ms)", ms, HMC_WORLD_FAIL_DETECT_MS);
	/* Its traffic ends with an error, not a hang. */
	do {
		rc = hmc_comm_recv_tag(comm, 1, &tag, T_MS);
	} while (!rc);
	CHECK(rc != -ETIMEDOUT, "rank 0: receiving from the dead rank 1 "
	      "fails at once: %s", hmc_strerror(rc));
	rc = hmc_world_wait_event(w, &ev, T_MS);
	CHECK(!rc && ev.type == HMC_WORLD_EV_LEFT && ev.rank == 2,
	      "rank 0: rank 2 left (%s of %u)", hmc_world_event_name(ev.type),
	      ev.rank);
	wait_ok(leaver, "the leaver");

	joiner = spawn(self, "churn-joiner", 9, "3", uid_hex);
	rc = hmc_world_wait_event(w, &ev, T_MS);
	CHECK(!rc && ev.type == HMC_WORLD_EV_JOINED && ev.rank == 1 &&
	      ev.size == 3, "rank 0: a joiner took rank 1 (%s of %u)",
	      hmc_world_event_name(ev.type), ev.rank);
	check_allgather(w, "rank 0 with the joiner",
			(const uint8_t[]){ 0, 0, 1 });
	rc = hmc_comm_recv_tag(comm, 1, &tag, T_MS);
	CHECK(!rc && tag == 0x7701, "rank 0: tag from the joiner over the "
	      "communicator: %s", hmc_strerror(rc));
	rc = hmc_world_barrier(w, T_MS);
	CHECK(!rc, "rank 0: barrier with the joiner: %s", hmc_strerror(rc));
	rc = hmc_world_wait_event(w, &ev, T_MS);
	CHECK(!rc && ev.type == HMC_WORLD_EV_LEFT && ev.rank == 1,
	      "rank 0: the joiner left (%s of %u)",
	      hmc_world_event_name(ev.type), ev.rank);
	wait_ok(joiner, "the joiner");
	rc = hmc_world_finalize(w);
	CHECK(!rc, "rank 0: finalize: %s", hmc_strerror(rc));
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct hmc_world *w;
	const char *mode = argc > 1 ? argv[1] : "basic";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "basic")) {
		if (init_or_fail(&w, NULL))
			return 1;
		return basic(w, argc > 2 ? atol(argv[2]) : 0);
	}
	if (!strcmp(mode, "refused") && argc > 2)
		return refused(atoi(argv[2]));
	if (!strcmp(mode, "missing") && argc > 2)
		return missing(argv[2]);
	if (!strcmp(mode, "uid") && argc > 2)
		return uid_world(argv[0], atoi(argv[2]));
	if (!strcmp(mode, "churn"))
		return churn(argv[0]);
	if (!strncmp(mode, "churn-", 6))
		return churn_child(mode + 6);
	fprintf(stderr, "usage: see the comment at the top of %s\n", __FILE__);
	return 2;
}
