// SPDX-License-Identifier: MIT
/*
 * Quick start, client side: stage a payload in the local ConnBuffer, put it
 * at offset 0 of the server's, then signal it with put_signal (the tag
 * reaches the server only once the data is visible there) and a length tag.
 *
 *   hmc_client [-a server_ip] [-p port] [message]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hmc/hmc.h>

#define BUFFER_SIZE	(128u << 20)
#define TAG_READY	1

static int fail(const char *what, int err)
{
	fprintf(stderr, "hmc_client: %s: %s\n", what, hmc_strerror(err));
	return 1;
}

int main(int argc, char **argv)
{
	const char *ip = "127.0.0.1", *msg = "hello hmc";
	uint16_t port = 2025;
	struct hmc_comm *comm;
	struct hmc_buf *buf;
	uint64_t ack;
	size_t len;
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
			fprintf(stderr, "usage: hmc_client [-a server_ip] [-p port] [message]\n");
			return 2;
		}
	}
	if (optind < argc)
		msg = argv[optind];
	len = strlen(msg);

	rc = hmc_buf_create(HMC_MEM_CPU, 0, BUFFER_SIZE, NULL, &buf);
	if (rc)
		return fail("ConnBuffer", rc);
	HMC_OPTS(hmc_comm_opts, opts, .rank = 1);
	rc = hmc_comm_create(buf, &opts, &comm);
	if (rc)
		return fail("communicator", rc);
	rc = hmc_comm_connect(comm, 0, ip, port, HMC_TRANSPORT_UCX);
	if (rc)
		return fail("connect", rc);

	rc = hmc_buf_write(buf, 0, msg, len, HMC_MEM_CPU);
	if (!rc)
		rc = hmc_comm_put_signal(comm, 0, 0, 0, len, TAG_READY);
	if (!rc)
		rc = hmc_comm_send_tag(comm, 0, len);
	if (rc)
		return fail("put", rc);
	rc = hmc_comm_recv_tag(comm, 0, &ack, 60000);
	if (rc)
		return fail("waiting for the ack", rc);
	printf("sent %zu bytes\n", len);

	hmc_comm_disconnect(comm, 0);
	hmc_comm_destroy(comm);
	hmc_buf_destroy(buf);
	return 0;
}
