// SPDX-License-Identifier: MIT
/*
 * test_tcp: the TCP transport against peers that lie. A fake dialer goes
 * through the real control handshake with raw sockets, asks for the tcp
 * transport, opens the data connection it is told to, with the token it
 * is given, and then sends frames (lib/xport/tcp.h):
 *
 *  valid     a PUT in range, then FLUSH: the bytes land, FLUSH_ACK comes
 *            (the fake speaks the protocol, so what follows tests refusal)
 *  liars     a PUT past the end of the buffer, one whose end wraps past
 *            2^64, one longer than a frame may be, a GET past the end, a
 *            GET_RESP and a FLUSH_ACK nobody asked for, an unknown type,
 *            reserved bits: each fails the fake's connection (EOF) and its
 *            peer (is_connected false), and not one byte of the server's
 *            buffer changes
 *  stranger  a data connection with a wrong token, or a right token for
 *            another rank: closed without an answer
 *  survivor  after all of them a real client connects over tcp and moves
 *            verified data both ways
 *
 *   test_tcp [-N NAME]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <hmc/hmc.h>

#include "itest.h"
#include "sys/util.h"
#include "wire/frame.h"
#include "xport/tcp.h"

#define MIB		(1024 * 1024)
#define BUF_SIZE	(4 * MIB + 333)
#define IO_MS		5000
#define SEED		0x7c9

static const char *name = "tcp";

struct server {
	struct hmc_buf *buf;
	struct hmc_comm *comm;
	uint8_t *p;
	uint16_t port;
};

/* A fake dialer: its control and data connections, what it was told. */
struct fake {
	uint32_t rank;
	int ctrl, data;
	uint16_t data_port;
	uint8_t token[TCP_TOKEN_LEN];
};

static int tcp_dial(uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = IO_MS / 1000 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	/* every blocking read and write of the fake has a deadline */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		close(fd);
		return -1;
	}
	return fd;
}

static bool send_all(int fd, const void *p, size_t len)
{
	return send(fd, p, len, MSG_NOSIGNAL) == (ssize_t)len;
}

static bool recv_all(int fd, void *p, size_t len)
{
	size_t have = 0;
	ssize_t n;

	while (have < len) {
		n = recv(fd, (uint8_t *)p + have, len - have, 0);
		if (n <= 0)
			return false;
		have += (size_t)n;
	}
	return true;
}

/* One control frame into @payload (at most @cap bytes): its header or -1. */
static int recv_frame(int fd, struct frame_hdr *h, uint8_t *payload,
		      size_t cap)
{
	uint8_t hdr[FRAME_HDR_LEN];

	if (!recv_all(fd, hdr, sizeof(hdr)) || frame_decode_hdr(hdr, h) ||
	    h->len > cap || !recv_all(fd, payload, h->len))
		return -1;
	return 0;
}

/* HELLO, WELCOME, XPORT_REQ(tcp), XPORT_ACK: 0 and @f's token and port. */
static int fake_control(struct fake *f, uint16_t port)
{
	static uint8_t msg[FRAME_HDR_LEN + FRAME_MAX_PAYLOAD];
	struct frame_hello hello = { .src_rank = f->rank, .dst_rank = 0 };
	struct frame_xport req = { .transport = HMC_TRANSPORT_TCP,
				   .buf_size = BUF_SIZE }, ack;
	uint8_t *blob = msg + FRAME_HDR_LEN + FRAME_XPORT_HDR_LEN;
	struct frame_hdr h;
	int n;

	f->ctrl = tcp_dial(port);
	if (f->ctrl < 0)
		return -1;
	memset(hello.nonce, 0x3c, sizeof(hello.nonce));
	frame_encode_hdr(msg, FRAME_HELLO, 0, FRAME_HELLO_LEN);
	n = (int)frame_encode_hello(msg + FRAME_HDR_LEN, &hello);
	if (!send_all(f->ctrl, msg, FRAME_HDR_LEN + (size_t)n) ||
	    recv_frame(f->ctrl, &h, msg, FRAME_MAX_PAYLOAD) ||
	    h.type != FRAME_WELCOME)
		return -1;

	/* the dialer's blob: version, no address, one stream */
	memset(blob, 0, TCP_BLOB_LEN);
	blob[0] = TCP_VERSION;
	put_be16(blob + 2, 1);
	req.blob_len = TCP_BLOB_LEN;
	n = frame_encode_xport(msg + FRAME_HDR_LEN, &req);
	if (n < 0)
		return -1;
	frame_encode_hdr(msg, FRAME_XPORT_REQ, 0, (uint32_t)n);
	if (!send_all(f->ctrl, msg, FRAME_HDR_LEN + (size_t)n) ||
	    recv_frame(f->ctrl, &h, msg, FRAME_MAX_PAYLOAD) ||
	    h.type != FRAME_XPORT_ACK ||
	    frame_decode_xport(msg, h.len, &ack) || ack.status ||
	    ack.blob_len != TCP_BLOB_LEN || ack.blob[0] != TCP_VERSION ||
	    get_be16(ack.blob + 2) != 1)
		return -1;
	f->data_port = get_be16(ack.blob + 4);
	memcpy(f->token, ack.blob + 24, TCP_TOKEN_LEN);
	return 0;
}

static void data_hello(uint8_t *b, const uint8_t *token, uint32_t rank)
{
	memset(b, 0, TCP_HELLO_LEN);
	put_be32(b, TCP_HELLO_MAGIC);
	b[4] = TCP_VERSION;
	put_be16(b + 6, 0);		/* stream 0 */
	put_be16(b + 8, 1);		/* of 1 */
	memcpy(b + 12, token, TCP_TOKEN_LEN);
	put_be32(b + 28, rank);
}

/* The whole handshake of a fake: 0, or -1 with a diagnostic. */
static int fake_up(struct fake *f, uint32_t rank, uint16_t port)
{
	uint8_t hello[TCP_HELLO_LEN], ack[TCP_ACK_LEN];

	memset(f, 0, sizeof(*f));
	f->rank = rank;
	f->data = -1;
	if (fake_control(f, port)) {
		diag("fake rank %u: control handshake: %s", rank,
		     strerror(errno));
		return -1;
	}
	f->data = tcp_dial(f->data_port);
	data_hello(hello, f->token, rank);
	if (f->data < 0 || !send_all(f->data, hello, sizeof(hello)) ||
	    !recv_all(f->data, ack, sizeof(ack)) ||
	    get_be32(ack) != TCP_ACK_MAGIC) {
		diag("fake rank %u: data connection: %s", rank,
		     strerror(errno));
		return -1;
	}
	return 0;
}

static void fake_down(struct fake *f)
{
	if (f->data >= 0)
		close(f->data);
	if (f->ctrl > 0)
		close(f->ctrl);
}

static void frame_hdr(uint8_t *h, uint8_t type, uint8_t flags, uint32_t len,
		      uint64_t off, uint64_t arg)
{
	h[0] = type;
	h[1] = flags;
	put_be16(h + 2, 0);
	put_be32(h + 4, len);
	put_be64(h + 8, off);
	put_be64(h + 16, arg);
}

/* Whether the server closes @fd (EOF or reset) within @ms. */
static bool closed_within(int fd, int ms)
{
	int64_t until = itest_now_ms() + ms;
	uint8_t junk[4096];
	ssize_t n;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = until - itest_now_ms();

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return false;
		n = recv(fd, junk, sizeof(junk), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return true;
	}
}

static int server_new(struct server *s)
{
	HMC_OPTS(hmc_comm_opts, o, .rank = 0, .connect_timeout_ms = IO_MS,
		 .op_timeout_ms = 10000, .flags = HMC_COMM_F_NO_UNIX);
	int rc;

	memset(s, 0, sizeof(*s));
	rc = hmc_buf_create(HMC_MEM_CPU, 0, BUF_SIZE, NULL, &s->buf);
	if (!rc)
		rc = hmc_comm_create(s->buf, &o, &s->comm);
	if (!rc)
		rc = hmc_comm_listen(s->comm, "127.0.0.1", 0);
	if (rc) {
		tap(false, "server communicator: %s", hmc_strerror(rc));
		return -1;
	}
	s->p = hmc_buf_ptr(s->buf);
	s->port = (uint16_t)hmc_comm_listen_port(s->comm);
	return 0;
}

/* A PUT of 4 KiB in range, then FLUSH: the bytes land and the ack comes. */
static void valid_case(struct server *s, uint32_t rank)
{
	const uint64_t off = 1 * MIB + 7, len = 4096;
	uint8_t msg[TCP_HDR_LEN + 4096], ack[TCP_HDR_LEN];
	struct fake f;
	bool ok;

	if (fake_up(&f, rank, s->port)) {
		tap(false, "valid: the fake dialer comes up over tcp");
		fake_down(&f);
		return;
	}
	frame_hdr(msg, TCP_PUT, 0, len, off, 0);
	data_fill(msg, TCP_HDR_LEN, len, SEED + 1);
	ok = send_all(f.data, msg, sizeof(msg));
	frame_hdr(msg, TCP_FLUSH, 0, 0, 0, 0);
	ok = ok && send_all(f.data, msg, TCP_HDR_LEN) &&
	     recv_all(f.data, ack, sizeof(ack)) && ack[0] == TCP_FLUSH_ACK;
	tap(ok, "valid: a PUT then a FLUSH from the fake is acknowledged");
	tap(ok && data_check(s->p, off, len, SEED + 1, TCP_HDR_LEN,
		       "the fake's valid PUT"),
	    "valid: its %llu bytes landed at offset %llu",
	    (unsigned long long)len, (unsigned long long)off);
	/* put back what was there, for the liars' checks */
	data_fill(s->p, 0, BUF_SIZE, SEED);
	fake_down(&f);
	wait_connected(s->comm, rank, false, IO_MS);
}

struct lie {
	const char *what;
	uint8_t type, flags;
	uint32_t len;
	uint64_t off, arg;
	uint32_t payload;	/* bytes sent after the header */
};

static void liar_case(struct server *s, uint32_t rank, const struct lie *l)
{
	static uint8_t msg[TCP_HDR_LEN + 65536];
	struct fake f;
	bool ok;

	if (fake_up(&f, rank, s->port)) {
		tap(false, "%s: the fake dialer comes up over tcp", l->what);
		fake_down(&f);
		return;
	}
	if (!wait_connected(s->comm, rank, true, IO_MS))
		diag("%s: the server never counted rank %u as connected",
		     l->what, rank);
	frame_hdr(msg, l->type, l->flags, l->len, l->off, l->arg);
	memset(msg + TCP_HDR_LEN, 0xa5, l->payload);
	ok = send_all(f.data, msg, TCP_HDR_LEN + l->payload);
	tap(ok && closed_within(f.data, IO_MS) &&
	    wait_connected(s->comm, rank, false, IO_MS),
	    "%s: the liar's connection and peer fail", l->what);
	tap(data_check(s->p, 0, BUF_SIZE, SEED, 0, l->what),
	    "%s: not a byte of the server's buffer changed", l->what);
	fake_down(&f);
}

static void stranger_case(struct server *s, uint32_t rank)
{
	uint8_t hello[TCP_HELLO_LEN];
	struct fake f;
	int fd;

	if (fake_up(&f, rank, s->port)) {
		tap(false, "stranger: the fake dialer comes up over tcp");
		fake_down(&f);
		return;
	}
	/* a wrong token */
	fd = tcp_dial(f.data_port);
	f.token[3] ^= 0x40;
	data_hello(hello, f.token, rank);
	f.token[3] ^= 0x40;
	tap(fd >= 0 && send_all(fd, hello, sizeof(hello)) &&
	    closed_within(fd, IO_MS),
	    "stranger: a data connection with a wrong token is closed unanswered");
	if (fd >= 0)
		close(fd);
	/* the right token, claiming another rank */
	fd = tcp_dial(f.data_port);
	data_hello(hello, f.token, rank + 1);
	tap(fd >= 0 && send_all(fd, hello, sizeof(hello)) &&
	    closed_within(fd, IO_MS),
	    "stranger: the right token for another rank is closed unanswered");
	if (fd >= 0)
		close(fd);
	tap(data_check(s->p, 0, BUF_SIZE, SEED, 0, "strangers"),
	    "stranger: not a byte of the server's buffer changed");
	fake_down(&f);
	wait_connected(s->comm, rank, false, IO_MS);
}

/* A real client over tcp: put + flush, then get, every byte checked. */
static void survivor_case(struct server *s)
{
	HMC_OPTS(hmc_comm_opts, o, .rank = 99, .op_timeout_ms = 10000);
	const size_t len = MIB + 17, src = 2 * MIB + 5, dst = 3;
	struct hmc_buf *buf = NULL;
	struct hmc_comm *c = NULL;
	uint8_t *p;
	int rc;

	rc = hmc_buf_create(HMC_MEM_CPU, 0, BUF_SIZE, NULL, &buf);
	if (!rc)
		rc = hmc_comm_create(buf, &o, &c);
	if (!rc)
		rc = hmc_comm_connect(c, 0, "127.0.0.1", s->port,
				      HMC_TRANSPORT_TCP);
	if (rc) {
		tap(false, "survivor: a real client connects over tcp: %s",
		    hmc_strerror(rc));
		goto out;
	}
	p = hmc_buf_ptr(buf);
	data_fill(p, src, len, SEED + 2);
	rc = hmc_comm_put(c, 0, src, dst, len);
	if (!rc)
		rc = hmc_comm_flush(c, 0);
	tap(!rc && data_check(s->p, dst, len, SEED + 2, src, "survivor put"),
	    "survivor: a real client's put lands, every byte checked: %s",
	    hmc_strerror(rc));
	data_fill(s->p, src, len, SEED + 3);
	data_unlike(p, dst, len, SEED + 3, src);
	rc = hmc_comm_get(c, 0, dst, src, len);
	tap(!rc && data_check(p, dst, len, SEED + 3, src, "survivor get"),
	    "survivor: a real client's get returns the server's bytes: %s",
	    hmc_strerror(rc));
out:
	if (c)
		hmc_comm_destroy(c);
	if (buf)
		hmc_buf_destroy(buf);
}

int main(int argc, char **argv)
{
	const uint64_t end = BUF_SIZE;
	const struct lie lies[] = {
		{ "PUT past the end", TCP_PUT, 0, 64, end - 8, 0, 64 },
		{ "PUT whose end wraps", TCP_PUT, 0, 64, UINT64_MAX - 7, 0, 64 },
		{ "PUT longer than a frame", TCP_PUT, 0, TCP_FRAME_MAX + 1,
		  0, 0, 4096 },
		{ "PUT with reserved flags", TCP_PUT, 0x80, 8, 0, 0, 8 },
		{ "GET past the end", TCP_GET, 0, 4096, end - 100, 0, 0 },
		{ "GET_RESP nobody asked for", TCP_GET_RESP, 0, 64, 0, 0, 64 },
		{ "FLUSH_ACK nobody asked for", TCP_FLUSH_ACK, 0, 0, 0, 0, 0 },
		{ "unknown frame type", 0x7f, 0, 0, 0, 0, 0 },
	};
	struct server s;
	uint32_t rank = 10;
	size_t i;
	int opt;

	while ((opt = getopt(argc, argv, "N:")) != -1) {
		if (opt != 'N') {
			fprintf(stderr, "usage: test_tcp [-N NAME]\n");
			return 2;
		}
		name = optarg;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	unsetenv("HMC_SECRET");
	alarm(120);
	itest_prefix("%s: ", name);
	if (server_new(&s))
		return 1;
	data_fill(s.p, 0, BUF_SIZE, SEED);
	valid_case(&s, rank++);
	for (i = 0; i < ARRAY_SIZE(lies); i++)
		liar_case(&s, rank++, &lies[i]);
	stranger_case(&s, rank++);
	survivor_case(&s);
	hmc_comm_destroy(s.comm);
	hmc_buf_destroy(s.buf);
	return itest_failures() ? 1 : 0;
}
