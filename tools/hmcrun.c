// SPDX-License-Identifier: MIT
/*
 * hmcrun: start N ranks of a program on this host as one hmc_world.
 *
 *   hmcrun -n N [--tag-output] [--timeout S] [--] program [args...]
 *
 * hmcrun hosts the world store on loopback and starts the ranks with
 * HMC_BOOTSTRAP=store, HMC_STORE, HMC_RANK, HMC_WORLD_SIZE and HMC_SECRET
 * (a fresh one unless set; HMC_TLS_* are passed along and used for the
 * store too). It forwards SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and
 * SIGUSR2 to every rank. When a rank fails (a non-zero exit or a signal)
 * the others get SIGTERM, then SIGKILL after 2 s, and hmcrun exits with
 * the failed rank's status (128 + signal for a signal). --timeout S ends
 * the run the same way after S seconds and exits with 124. Across hosts,
 * use mpirun or srun: hmc_world takes their PMIx.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "../lib/sys/util.h"
#include "../lib/world/store.h"
#include "../lib/wire/tls.h"

#define KILL_GRACE_MS	2000
/*
 * How long the ranks' output is read after the last rank has gone: a
 * process a rank left behind may hold the pipes open for ever.
 */
#define DRAIN_MS	1000

struct rank {
	pid_t pid;
	int out[2];		/* --tag-output: the rank's stdout, stderr */
	char *buf[2];
	size_t len[2];
	bool running;
};

static const int fwd_sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
				SIGUSR2 };

static void usage(FILE *f)
{
	fprintf(f, "usage: hmcrun -n N [--tag-output] [--timeout S] [--] "
		"program [args...]\n");
}

static void emit(int r, int which, const char *line, size_t len)
{
	FILE *f = which ? stderr : stdout;

	fprintf(f, "[%d] %.*s\n", r, (int)len, line);
	fflush(f);
}

/* Print whole lines of rank @r's stream @which; at EOF the rest too. */
static void drain(struct rank *rk, int r, int which, bool eof)
{
	char *nl, *p = rk->buf[which];
	size_t left = rk->len[which];

	/* (before any output, buf is NULL: no mem* call may see it) */
	while (left && (nl = memchr(p, '\n', left))) {
		emit(r, which, p, (size_t)(nl - p));
		left -= (size_t)(nl - p) + 1;
		p = nl + 1;
	}
	if (eof && left) {
		emit(r, which, p, left);
		left = 0;
	}
	if (left)
		memmove(rk->buf[which], p, left);
	rk->len[which] = left;
}

/* Print what is left of @rk's stream @which and stop reading it. */
static void close_output(struct rank *rk, int r, int which)
{
	drain(rk, r, which, true);
	close(rk->out[which]);
	rk->out[which] = -1;
}

static void read_output(struct rank *rk, int r, int which)
{
	char tmp[4096], *nb;
	ssize_t n = read(rk->out[which], tmp, sizeof(tmp));

	if (n <= 0) {
		if (n < 0 && errno == EINTR)
			return;
		close_output(rk, r, which);
		return;
	}
	nb = realloc(rk->buf[which], rk->len[which] + (size_t)n);
	if (!nb) {
		drain(rk, r, which, true);	/* print what we have */
		nb = realloc(rk->buf[which], (size_t)n);
		if (!nb)
			return;
	}
	rk->buf[which] = nb;
	memcpy(nb + rk->len[which], tmp, (size_t)n);
	rk->len[which] += (size_t)n;
	drain(rk, r, which, false);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "np", required_argument, NULL, 'n' },
		{ "tag-output", no_argument, NULL, 't' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int n = 0, timeout_s = 0, c, i, r, live, first_bad = -1, status = 0;
	int64_t deadline = DEADLINE_NEVER, kill_at = DEADLINE_NEVER;
	int64_t drain_until = DEADLINE_NEVER;
	bool tag = false, timed_out = false;
	struct store_srv *srv;
	struct tls_ctx *tls;
	struct rank *ranks;
	sigset_t mask, oldmask;
	struct pollfd *pfd;
	char store[64], secret[65];
	const char *sec;
	uint8_t rnd[32];
	int sfd, rc;

	while ((c = getopt_long(argc, argv, "+n:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			n = atoi(optarg);
			break;
		case 't':
			tag = true;
			break;
		case 'T':
			timeout_s = atoi(optarg);
			if (timeout_s <= 0) {
				fprintf(stderr, "hmcrun: bad --timeout %s\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (n <= 0 || n > 4096 || optind >= argc) {
		usage(stderr);
		return 2;
	}

	/*
	 * Signals arrive through a signalfd: nothing runs in a handler. They
	 * are blocked before the store's thread starts, which inherits that.
	 */
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	for (i = 0; i < (int)(sizeof(fwd_sigs) / sizeof(fwd_sigs[0])); i++)
		sigaddset(&mask, fwd_sigs[i]);
	sigprocmask(SIG_BLOCK, &mask, &oldmask);

	sec = getenv("HMC_SECRET");
	if (!sec || !*sec) {
		if (RAND_bytes(rnd, sizeof(rnd)) != 1)
			return 1;
		for (i = 0; i < 32; i++)
			snprintf(secret + 2 * i, 3, "%02x", rnd[i]);
		setenv("HMC_SECRET", secret, 1);
		sec = getenv("HMC_SECRET");
	}
	rc = tls_ctx_from_env(NULL, NULL, NULL, true, &tls);
	if (rc) {
		fprintf(stderr, "hmcrun: TLS settings: %s\n", strerror(-rc));
		return 1;
	}
	rc = store_srv_start("127.0.0.1", 0, sec, strlen(sec), tls, &srv);
	if (rc) {
		fprintf(stderr, "hmcrun: cannot start the store: %s\n",
			strerror(-rc));
		return 1;
	}
	snprintf(store, sizeof(store), "tcp://127.0.0.1:%u",
		 store_srv_port(srv));

	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	ranks = calloc((size_t)n, sizeof(*ranks));
	pfd = calloc(2 * (size_t)n + 1, sizeof(*pfd));
	if (sfd < 0 || !ranks || !pfd) {
		fprintf(stderr, "hmcrun: %s\n", strerror(errno));
		return 1;
	}
	if (timeout_s)
		deadline = deadline_after_ms(timeout_s * 1000);
	for (r = 0; r < n; r++) {
		struct rank *rk = &ranks[r];

		rk->out[0] = rk->out[1] = -1;
		if (tag) {
			int p1[2], p2[2];

			if (pipe2(p1, O_CLOEXEC) || pipe2(p2, O_CLOEXEC)) {
				fprintf(stderr, "hmcrun: pipe: %s\n",
					strerror(errno));
				return 1;
			}
			rk->pid = fork();
			if (!rk->pid) {
				dup2(p1[1], STDOUT_FILENO);
				dup2(p2[1], STDERR_FILENO);
			}
			if (rk->pid) {
				close(p1[1]);
				close(p2[1]);
				rk->out[0] = p1[0];
				rk->out[1] = p2[0];
			}
		} else {
			rk->pid = fork();
		}
		if (!rk->pid) {
			char v[32];

			sigprocmask(SIG_SETMASK, &oldmask, NULL);
			snprintf(v, sizeof(v), "%d", r);
			setenv("HMC_RANK", v, 1);
			snprintf(v, sizeof(v), "%d", n);
			setenv("HMC_WORLD_SIZE", v, 1);
			setenv("HMC_STORE", store, 1);
			setenv("HMC_BOOTSTRAP", "store", 1);
			execvp(argv[optind], argv + optind);
			fprintf(stderr, "hmcrun: cannot run %s: %s\n",
				argv[optind], strerror(errno));
			_exit(127);
		}
		if (rk->pid < 0) {
			fprintf(stderr, "hmcrun: fork: %s\n", strerror(errno));
			first_bad = r;
			status = 1;
			kill_at = now_ns();
			break;
		}
		rk->running = true;
	}

	for (;;) {
		int nfds = 1, running = 0;

		live = 0;
		for (r = 0; r < n; r++) {
			running += ranks[r].running;
			live += ranks[r].running || ranks[r].out[0] >= 0 ||
				ranks[r].out[1] >= 0;
		}
		if (!live)
			break;
		if (!running && drain_until == DEADLINE_NEVER)
			drain_until = deadline_after_ms(DRAIN_MS);
		if (deadline_passed(drain_until)) {
			for (r = 0; r < n; r++)
				for (i = 0; i < 2; i++)
					if (ranks[r].out[i] >= 0)
						close_output(&ranks[r], r, i);
			continue;
		}
		pfd[0] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		for (r = 0; r < n; r++)
			for (i = 0; i < 2; i++)
				if (ranks[r].out[i] >= 0)
					pfd[nfds++] = (struct pollfd){
						.fd = ranks[r].out[i],
						.events = POLLIN };
		{
			int64_t d = deadline < kill_at ? deadline : kill_at;

			if (drain_until < d)
				d = drain_until;

			rc = poll(pfd, (nfds_t)nfds, deadline_remaining_ms(d));
		}
		if (rc < 0 && errno != EINTR)
			break;
		if (deadline_passed(deadline)) {
			fprintf(stderr, "hmcrun: timed out after %d s; "
				"stopping the ranks\n", timeout_s);
			timed_out = true;
			deadline = DEADLINE_NEVER;
			for (r = 0; r < n; r++)
				if (ranks[r].running)
					kill(ranks[r].pid, SIGTERM);
			kill_at = deadline_after_ms(KILL_GRACE_MS);
		}
		if (deadline_passed(kill_at)) {
			for (r = 0; r < n; r++)
				if (ranks[r].running)
					kill(ranks[r].pid, SIGKILL);
			kill_at = DEADLINE_NEVER;
		}
		if (pfd[0].revents) {
			struct signalfd_siginfo si;

			while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGCHLD)
					continue;
				for (r = 0; r < n; r++)
					if (ranks[r].running)
						kill(ranks[r].pid,
						     (int)si.ssi_signo);
			}
		}
		for (i = 1; i < nfds; i++) {
			if (!pfd[i].revents)
				continue;
			for (r = 0; r < n; r++) {
				if (ranks[r].out[0] == pfd[i].fd)
					read_output(&ranks[r], r, 0);
				else if (ranks[r].out[1] == pfd[i].fd)
					read_output(&ranks[r], r, 1);
			}
		}
		for (;;) {
			int ws, code;
			pid_t pid = waitpid(-1, &ws, WNOHANG);

			if (pid <= 0)
				break;
			for (r = 0; r < n && ranks[r].pid != pid; r++)
				;
			if (r == n)
				continue;
			ranks[r].running = false;
			code = WIFEXITED(ws) ? WEXITSTATUS(ws) :
			       128 + WTERMSIG(ws);
			if (!code || first_bad >= 0 || timed_out)
				continue;
			first_bad = r;
			status = code;
			if (WIFEXITED(ws))
				fprintf(stderr, "hmcrun: rank %d (pid %d) exited "
					"with status %d; stopping the others\n",
					r, pid, code);
			else
				fprintf(stderr, "hmcrun: rank %d (pid %d) killed "
					"by signal %d (%s); stopping the others\n",
					r, pid, WTERMSIG(ws),
					strsignal(WTERMSIG(ws)));
			for (c = 0; c < n; c++)
				if (ranks[c].running)
					kill(ranks[c].pid, SIGTERM);
			kill_at = deadline_after_ms(KILL_GRACE_MS);
		}
	}
	store_srv_stop(srv);
	close(sfd);
	free(pfd);
	for (r = 0; r < n; r++) {
		free(ranks[r].buf[0]);
		free(ranks[r].buf[1]);
	}
	free(ranks);
	return timed_out ? 124 : status;
}
