// SPDX-License-Identifier: MIT
/*
 * Quick start, server side (the reference HMC's CPU-over-UCX example in C):
 * a 128 MiB ConnBuffer, rank 0, listening for the client; when the client's
 * tag says the payload is in place, print it.
 *
 *   hmc_server [-a bind_ip] [-p port]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hmc/hmc.h>

#define BUFFER_SIZE	(128u << 20)
#define TAG_READY	1	/* tag = 1: payload length follows as the next tag */

static int fail(const char *what, int err)
{
	fprintf(stderr, "hmc_server: %s: %s\n", what, hmc_strerror(err));
	return 1;
}

int main(int argc, char **argv)
{
	const char *ip = "127.0.0.1";
	uint16_t port = 2025;
	struct hmc_comm *comm;
	struct hmc_buf *buf;
	uint64_t tag, len;
	char *msg;
	int opt, rc;

	while ((opt = getopt(argc, argv, "a:p:")) != -1) {
		switch (opt) {
		case 'a':
			ip = optarg;
			break;
		case 'p':
			port = (uint16_t)atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: hmc_server [-a bind_ip] [-p port]\n");
			return 2;
		}
	}

	rc = hmc_buf_create(HMC_MEM_CPU, 0, BUFFER_SIZE, NULL, &buf);
	if (rc)
		return fail("ConnBuffer", rc);
	HMC_OPTS(hmc_comm_opts, opts, .rank = 0);
	rc = hmc_comm_create(buf, &opts, &comm);
	if (rc)
		return fail("communicator", rc);
	rc = hmc_comm_listen(comm, ip, port);
	if (rc)
		return fail("listen", rc);
	printf("server ready on %s:%u (ConnBuffer: %s)\n", ip, port,
	       hmc_buf_backing_name(hmc_buf_backing(buf)));
	fflush(stdout);

	/* The client puts its payload at offset 0, then signals. */
	rc = hmc_comm_recv_tag(comm, 1, &tag, 60000);
	if (!rc && tag != TAG_READY)
		rc = -EPROTO;
	if (!rc)
		rc = hmc_comm_recv_tag(comm, 1, &len, 60000);
	if (rc)
		return fail("waiting for the client", rc);
	if (len >= BUFFER_SIZE)
		return fail("payload length", -ERANGE);

	msg = calloc(1, len + 1);
	rc = msg ? hmc_buf_read(buf, 0, msg, len, HMC_MEM_CPU) : -ENOMEM;
	if (rc)
		return fail("reading the ConnBuffer", rc);
	printf("received %llu bytes: %s\n", (unsigned long long)len, msg);

	rc = hmc_comm_send_tag(comm, 1, TAG_READY);	/* acknowledge */
	if (rc)
		return fail("ack", rc);
	/* Let the client disconnect first. */
	hmc_comm_recv_tag(comm, 1, &tag, 10000);
	free(msg);
	hmc_comm_destroy(comm);
	hmc_buf_destroy(buf);
	return 0;
}
