// SPDX-License-Identifier: MIT
/*
 * oshrun: start N PEs of an OpenSHMEM program on this host.
 *
 *   oshrun -np N [--timeout S] [--startup-timeout S] prog [args...]
 *
 * Shares a job file with the PEs (see job.h), forwards SIGINT, SIGTERM and
 * SIGHUP to them, and when one PE fails (a non-zero status, a signal, or
 * shmem_global_exit) ends the others and exits with that PE's status, so a
 * job never outlives a dead PE. -n is a synonym of -np.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "job.h"

static pid_t *pids;
static int npes;
static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: oshrun -np N [--timeout S] [--startup-timeout S] prog [args...]\n"
		"  -np, -n N              number of PEs (1..%d)\n"
		"  --timeout S            end the job after S seconds (exit 124)\n"
		"  --startup-timeout S    deadline for every PE to reach shmem_init (default 60)\n",
		SHM_JOB_MAX_PES);
	exit(2);
}

static long parse_num(const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		usage();
	return v;
}

static void kill_all(int sig)
{
	int i;

	for (i = 0; i < npes; i++)
		if (pids[i] > 0)
			kill(pids[i], sig);
}

static int pe_of(pid_t pid)
{
	int i;

	for (i = 0; i < npes; i++)
		if (pids[i] == pid)
			return i;
	return -1;
}

/* End the remaining PEs: SIGTERM, then SIGKILL after two seconds. */
static void end_job(int *alive)
{
	struct timespec step = { 0, 10 * 1000 * 1000 };
	int i, status;
	pid_t pid;

	kill_all(SIGTERM);
	for (i = 0; i < 200 && *alive; i++) {
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
			int pe = pe_of(pid);

			if (pe >= 0) {
				pids[pe] = 0;
				(*alive)--;
			}
		}
		if (*alive)
			nanosleep(&step, NULL);
	}
	if (*alive) {
		kill_all(SIGKILL);
		while (*alive && waitpid(-1, &status, 0) > 0)
			(*alive)--;
	}
}

static void report(int pe, int status)
{
	if (WIFSIGNALED(status))
		fprintf(stderr, "oshrun: PE %d (pid %d) was killed by signal %d (%s); ending the job\n",
			pe, (int)pids[pe], WTERMSIG(status),
			strsignal(WTERMSIG(status)));
	else
		fprintf(stderr, "oshrun: PE %d (pid %d) exited with status %d; ending the job\n",
			pe, (int)pids[pe], WEXITSTATUS(status));
}

static int start_pes(char **prog, int fd)
{
	char v[32];
	int pe;

	for (pe = 0; pe < npes; pe++) {
		pids[pe] = fork();
		if (pids[pe] < 0) {
			perror("oshrun: fork");
			return -1;
		}
		if (pids[pe])
			continue;
		snprintf(v, sizeof(v), "%d", pe);
		setenv("HMC_SHMEM_RANK", v, 1);
		snprintf(v, sizeof(v), "%d", npes);
		setenv("HMC_SHMEM_SIZE", v, 1);
		snprintf(v, sizeof(v), "%d", fd);
		setenv("HMC_SHMEM_JOB_FD", v, 1);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGALRM, SIG_DFL);
		execvp(prog[0], prog);
		fprintf(stderr, "oshrun: %s: %s\n", prog[0], strerror(errno));
		_exit(127);
	}
	return 0;
}

int main(int argc, char **argv)
{
	long timeout = 0, startup = 60;
	struct shm_job *job;
	struct sigaction sa;
	int i, fd, alive, status, rc = 0;
	size_t len;
	pid_t pid;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if ((!strcmp(argv[i], "-np") || !strcmp(argv[i], "-n")) &&
		    i + 1 < argc)
			npes = (int)parse_num(argv[++i], 1, SHM_JOB_MAX_PES);
		else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
			timeout = parse_num(argv[++i], 1, INT_MAX);
		else if (!strcmp(argv[i], "--startup-timeout") && i + 1 < argc)
			startup = parse_num(argv[++i], 1, INT_MAX / 1000);
		else
			usage();
	}
	if (!npes || i >= argc)
		usage();

	len = shm_job_len(npes);
	fd = memfd_create("hmc-shmem-job", 0);	/* inherited by the PEs */
	if (fd < 0 || ftruncate(fd, (off_t)len)) {
		perror("oshrun: job file");
		return 1;
	}
	job = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (job == MAP_FAILED) {
		perror("oshrun: job file");
		return 1;
	}
	job->magic = SHM_JOB_MAGIC;
	job->size = (uint32_t)npes;
	job->timeout_ms = (uint32_t)(startup * 1000);

	pids = calloc((size_t)npes, sizeof(*pids));
	if (!pids)
		return 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	if (timeout)
		alarm((unsigned int)timeout);

	if (start_pes(&argv[i], fd)) {
		for (alive = 0, i = 0; i < npes; i++)
			alive += pids[i] > 0;
		end_job(&alive);
		return 1;
	}
	close(fd);
	alive = npes;
	while (alive) {
		pid = waitpid(-1, &status, 0);
		if (pid < 0) {
			if (errno != EINTR)
				break;
			if (got_signal == SIGALRM) {
				fprintf(stderr, "oshrun: the job ran past --timeout %ld s; ending it\n",
					timeout);
				rc = 124;
			} else {
				/* Let the PEs see the signal first, then make sure. */
				kill_all(got_signal);
				rc = 128 + got_signal;
			}
			end_job(&alive);
			break;
		}
		i = pe_of(pid);
		if (i < 0)
			continue;
		alive--;
		if (__atomic_load_n(&job->abort_status, __ATOMIC_ACQUIRE) &
		    SHM_JOB_ABORTED) {
			rc = (int)(job->abort_status & 0xff);
			fprintf(stderr, "oshrun: PE %d called shmem_global_exit(%d); ending the job\n",
				i, rc);
			pids[i] = 0;
			end_job(&alive);
			break;
		}
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			pids[i] = 0;
			continue;
		}
		report(i, status);
		rc = WIFEXITED(status) ? WEXITSTATUS(status) :
					 128 + WTERMSIG(status);
		pids[i] = 0;
		end_job(&alive);
	}
	munmap(job, len);
	return rc;
}
