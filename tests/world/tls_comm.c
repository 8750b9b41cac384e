// SPDX-License-Identifier: MIT
/*
 * TLS 1.3 on the communicator's control connections (tests/world/run.sh):
 *   tls_comm CA MEMBER.pem MEMBER.key ROGUE.pem ROGUE.key
 * Rank 0 listens with a certificate from CA; rank 1 (CA's too) connects
 * and moves data; rank 2, whose certificate another CA signed, and rank 3,
 * without TLS, are refused; rank 1 keeps working through it all.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hmc/hmc.h>

#include "pattern.h"

#define BUF	(1 << 20)
#define LEN	(200 * 1000 + 3)
#define T_MS	10000

static int failures;

#define CHECK(cond, ...) do {						\
	printf("%s - ", (cond) ? "ok" : "not ok");			\
	printf(__VA_ARGS__);						\
	printf("\n");							\
	failures += !(cond);						\
} while (0)

static struct hmc_comm *make(uint32_t rank, const char *cert, const char *key,
			     const char *ca, struct hmc_buf **buf)
{
	HMC_OPTS(hmc_comm_opts, o, .rank = rank, .tls_cert = cert,
		 .tls_key = key, .tls_ca = ca, .connect_timeout_ms = T_MS);
	struct hmc_comm *c;
	int rc;

	rc = hmc_buf_create(HMC_MEM_CPU, 0, BUF, NULL, buf);
	if (!rc)
		rc = hmc_comm_create(*buf, &o, &c);
	if (rc) {
		printf("not ok - rank %u: comm: %s\n", rank, hmc_strerror(rc));
		exit(1);
	}
	return c;
}

/* Rank 1 puts LEN non-uniform bytes into rank 0 and signals; 0 checks all. */
static void traffic(struct hmc_comm *a, struct hmc_comm *b, uint64_t seed,
		    const char *when)
{
	uint64_t tag = 0;
	long at;
	int rc;

	pattern_fill(hmc_buf_ptr(hmc_comm_buf(b)), LEN, seed);
	rc = hmc_comm_put_signal(b, 0, 0, 4096, LEN, seed);
	if (!rc)
		rc = hmc_comm_recv_tag(a, 1, &tag, T_MS);
	at = rc ? -2 : pattern_mismatch((uint8_t *)hmc_buf_ptr(hmc_comm_buf(a)) +
					4096, LEN, seed);
	CHECK(!rc && tag == seed && at < 0, "%s: %d B from rank 1 over a TLS "
	      "control plane, every byte (%s, at %ld)", when, LEN,
	      hmc_strerror(rc), at);
}

int main(int argc, char **argv)
{
	struct hmc_buf *ba, *bb, *bc, *bd;
	struct hmc_comm *a, *b, *c, *d;
	int port, rc;

	if (argc != 6) {
		fprintf(stderr, "usage: %s CA MEMBER.pem MEMBER.key ROGUE.pem "
			"ROGUE.key\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	unsetenv("HMC_TLS_CERT");
	unsetenv("HMC_TLS_KEY");
	unsetenv("HMC_TLS_CA");
	a = make(0, argv[2], argv[3], argv[1], &ba);
	b = make(1, argv[2], argv[3], argv[1], &bb);
	c = make(2, argv[4], argv[5], argv[1], &bc);
	d = make(3, NULL, NULL, NULL, &bd);
	rc = hmc_comm_listen(a, "127.0.0.1", 0);
	port = hmc_comm_listen_port(a);
	CHECK(!rc && port > 0, "rank 0 listens: %s", hmc_strerror(rc));

	rc = hmc_comm_connect(b, 0, "127.0.0.1", (uint16_t)port,
			      HMC_TRANSPORT_UCX);
	CHECK(!rc, "rank 1 (certificate from the CA) connects: %s",
	      hmc_strerror(rc));
	traffic(a, b, 11, "before the intruders");
	rc = hmc_comm_connect(c, 0, "127.0.0.1", (uint16_t)port,
			      HMC_TRANSPORT_UCX);
	CHECK(rc == -EACCES, "rank 2 (another CA's certificate) is refused: %s",
	      hmc_strerror(rc));
	rc = hmc_comm_connect(d, 0, "127.0.0.1", (uint16_t)port,
			      HMC_TRANSPORT_UCX);
	CHECK(rc && rc != -ETIMEDOUT, "rank 3 (no TLS) is refused: %s",
	      hmc_strerror(rc));
	CHECK(!hmc_comm_is_connected(a, 2) && !hmc_comm_is_connected(a, 3),
	      "rank 0 has no connection from ranks 2 and 3");
	traffic(a, b, 12, "after the intruders");

	hmc_comm_destroy(d);
	hmc_comm_destroy(c);
	hmc_comm_destroy(b);
	hmc_comm_destroy(a);
	hmc_buf_destroy(bd);
	hmc_buf_destroy(bc);
	hmc_buf_destroy(bb);
	hmc_buf_destroy(ba);
	return failures ? 1 : 0;
}
