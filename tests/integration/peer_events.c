// SPDX-License-Identifier: MIT
/*
 * A scripted run for the guest's event test (tests/vm/suites/66-peer-events.sh):
 * rank 0 creates a ConnBuffer from /dev/hmc and listens; a child, rank 1,
 * connects with HMC_TRANSPORT_AUTO (shm: rank 0 exports its buffer); rank 0
 * kills the child, sees the peer fail, and frees everything. hmc.ko must
 * then have reported, for rank 0's pid and in this order: buf-created,
 * buf-exported, peer-connected, peer-failed, buf-freed. Prints rank 0's pid
 * and the child's on stdout; exits non-zero if a step fails.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hmc/hmc.h>

#define BUF_SIZE	(1 << 20)

static int fail(const char *what, int err)
{
	fprintf(stderr, "peer_events: %s: %s\n", what, hmc_strerror(err));
	return 1;
}

static int child(uint16_t port, int ready)
{
	HMC_OPTS(hmc_comm_opts, o, .rank = 1);
	struct hmc_comm *comm;
	struct hmc_buf *buf;
	int rc;

	rc = hmc_buf_create(HMC_MEM_CPU, 0, BUF_SIZE, NULL, &buf);
	if (!rc)
		rc = hmc_comm_create(buf, &o, &comm);
	if (!rc)
		rc = hmc_comm_connect(comm, 0, "127.0.0.1", port,
				      HMC_TRANSPORT_AUTO);
	if (rc)
		return fail("rank 1", rc);
	if (write(ready, "r", 1) != 1)
		return 1;
	pause();	/* until rank 0 kills us */
	return 0;
}

int main(void)
{
	HMC_OPTS(hmc_comm_opts, o, .rank = 0);
	struct hmc_comm *comm;
	struct hmc_buf *buf;
	int p[2], rc, i, st;
	pid_t pid;
	char c;

	rc = hmc_buf_create(HMC_MEM_CPU, 0, BUF_SIZE, NULL, &buf);
	if (rc)
		return fail("ConnBuffer", rc);
	if (hmc_buf_backing(buf) != HMC_BUF_BACKING_KMOD)
		return fail("ConnBuffer backing", -ENODEV);
	rc = hmc_comm_create(buf, &o, &comm);
	if (!rc)
		rc = hmc_comm_listen(comm, "127.0.0.1", 0);
	if (rc)
		return fail("listen", rc);
	if (pipe(p))
		return fail("pipe", -errno);
	pid = fork();
	if (pid < 0)
		return fail("fork", -errno);
	if (!pid)
		_exit(child((uint16_t)hmc_comm_listen_port(comm), p[1]));
	if (read(p[0], &c, 1) != 1)
		return fail("rank 1 did not connect", -EIO);
	printf("%d %d\n", (int)getpid(), (int)pid);
	fflush(stdout);
	rc = hmc_comm_peer_transport(comm, 1);
	if (rc != HMC_TRANSPORT_SHM)
		return fail("rank 1 is not on shm", rc < 0 ? rc : -EPROTO);

	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	for (i = 0; i < 500 && hmc_comm_is_connected(comm, 1); i++)
		usleep(10000);
	if (hmc_comm_is_connected(comm, 1))
		return fail("rank 1's death went unnoticed", -ETIMEDOUT);
	hmc_comm_destroy(comm);
	hmc_buf_destroy(buf);
	return 0;
}
