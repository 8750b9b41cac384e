// SPDX-License-Identifier: MIT
/* Control-plane wire format: encoding, and strict rejection of bad input. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hmc/hmc.h>

#include "sys/util.h"
#include "wire/conn.h"
#include "wire/frame.h"
#include "pattern.h"
#include "run_tcase.h"

static void hdr(uint8_t *h, enum frame_type t, uint32_t len)
{
	frame_encode_hdr(h, t, 0, len);
}

START_TEST(test_header_round_trip)
{
	static const struct { enum frame_type t; uint32_t len; } ok[] = {
		{ FRAME_HELLO, FRAME_HELLO_LEN },
		{ FRAME_HELLO, FRAME_HELLO_LEN + FRAME_HELLO_HOST_LEN },
		{ FRAME_CHALLENGE, FRAME_CHALLENGE_LEN },
		{ FRAME_AUTH, FRAME_MAC_LEN }, { FRAME_WELCOME, 0 }, { FRAME_REJECT, 4 },
		{ FRAME_TAG, 8 }, { FRAME_SIGNAL, 8 }, { FRAME_BARRIER, 8 },
		{ FRAME_XPORT_REQ, FRAME_XPORT_HDR_LEN },
		{ FRAME_XPORT_ACK, FRAME_MAX_PAYLOAD }, { FRAME_BYE, 0 },
	};
	uint8_t h[FRAME_HDR_LEN];
	struct frame_hdr d;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		hdr(h, ok[i].t, ok[i].len);
		ck_assert_int_eq(frame_decode_hdr(h, &d), 0);
		ck_assert_int_eq(d.type, ok[i].t);
		ck_assert_uint_eq(d.len, ok[i].len);
	}
	/* network byte order, fixed layout */
	hdr(h, FRAME_TAG, 8);
	ck_assert_int_eq(h[0], 'H');
	ck_assert_int_eq(h[3], 'F');
	ck_assert_int_eq(h[4], FRAME_VERSION);
	ck_assert_int_eq(h[5], FRAME_TAG);
	ck_assert_int_eq(h[11], 8);
}
END_TEST

START_TEST(test_header_rejects)
{
	uint8_t h[FRAME_HDR_LEN];
	struct frame_hdr d;

	hdr(h, FRAME_TAG, 8);
	h[0] ^= 1;				/* bad magic */
	ck_assert_int_eq(frame_decode_hdr(h, &d), -EPROTO);
	hdr(h, FRAME_TAG, 8);
	h[4] = FRAME_VERSION + 1;		/* from the future */
	ck_assert_int_eq(frame_decode_hdr(h, &d), -EPROTO);
	hdr(h, FRAME_TAG, 8);
	h[4] = 0;
	ck_assert_int_eq(frame_decode_hdr(h, &d), -EPROTO);
	hdr(h, FRAME_TAG, 8);
	h[5] = 0;				/* unknown types */
	ck_assert_int_eq(frame_decode_hdr(h, &d), -EPROTO);
	h[5] = FRAME_TYPE_MAX + 1;
	ck_assert_int_eq(frame_decode_hdr(h, &d), -EPROTO);
	h[5] = 0xff;
	ck_assert_int_eq(frame_decode_hdr(h, &d), -EPROTO);
	hdr(h, FRAME_TAG, 8);
	h[7] = FRAME_F_FD;			/* flags the type does not allow */
	ck_assert_int_eq(frame_decode_hdr(h, &d), -EPROTO);
	frame_encode_hdr(h, FRAME_XPORT_REQ, FRAME_F_FD, FRAME_XPORT_HDR_LEN);
	ck_assert_int_eq(frame_decode_hdr(h, &d), 0);
	ck_assert_uint_eq(d.flags, FRAME_F_FD);
	h[7] = 2;				/* undefined flags */
	ck_assert_int_eq(frame_decode_hdr(h, &d), -EPROTO);
	h[6] = 0x80;
	h[7] = 0;
	ck_assert_int_eq(frame_decode_hdr(h, &d), -EPROTO);
	hdr(h, FRAME_TAG, 8);
	h[15] = 1;				/* reserved */
	ck_assert_int_eq(frame_decode_hdr(h, &d), -EPROTO);
	hdr(h, FRAME_TAG, 7);			/* lengths the type forbids */
	ck_assert_int_eq(frame_decode_hdr(h, &d), -EPROTO);
	hdr(h, FRAME_TAG, 9);
	ck_assert_int_eq(frame_decode_hdr(h, &d), -EPROTO);
	hdr(h, FRAME_WELCOME, 1);
	ck_assert_int_eq(frame_decode_hdr(h, &d), -EPROTO);
	hdr(h, FRAME_XPORT_REQ, FRAME_XPORT_HDR_LEN - 1);
	ck_assert_int_eq(frame_decode_hdr(h, &d), -EPROTO);
	hdr(h, FRAME_XPORT_REQ, FRAME_MAX_PAYLOAD + 1);	/* oversized */
	ck_assert_int_eq(frame_decode_hdr(h, &d), -EPROTO);
	hdr(h, FRAME_XPORT_ACK, UINT32_MAX);
	ck_assert_int_eq(frame_decode_hdr(h, &d), -EPROTO);
}
END_TEST

START_TEST(test_payloads)
{
	struct frame_hello hello = { .src_rank = 7, .dst_rank = 0xfffffffe,
				     .flags = FRAME_HELLO_F_AUTH }, h2;
	struct frame_challenge ch, ch2;
	uint8_t p[FRAME_MAX_PAYLOAD], mac[FRAME_MAC_LEN];
	struct frame_xport x = { .status = 0, .transport = HMC_TRANSPORT_UCX,
				 .buf_size = 1ULL << 40 }, x2;
	uint64_t v;
	int32_t e;
	int n;

	pattern_fill(hello.nonce, sizeof(hello.nonce), 1);
	ck_assert_uint_eq(frame_encode_hello(p, &hello), FRAME_HELLO_LEN);
	ck_assert_int_eq(frame_decode_hello(p, FRAME_HELLO_LEN, &h2), 0);
	ck_assert_uint_eq(h2.src_rank, 7);
	ck_assert_uint_eq(h2.dst_rank, 0xfffffffe);
	ck_assert_uint_eq(h2.flags, FRAME_HELLO_F_AUTH);
	ck_assert_mem_eq(h2.nonce, hello.nonce, FRAME_NONCE_LEN);
	ck_assert_int_eq(frame_decode_hello(p, FRAME_HELLO_LEN - 1, &h2), -EPROTO);
	p[11] = 4;				/* unknown hello flag */
	ck_assert_int_eq(frame_decode_hello(p, FRAME_HELLO_LEN, &h2), -EPROTO);
	p[11] = FRAME_HELLO_F_HOST;		/* says a host part, has none */
	ck_assert_int_eq(frame_decode_hello(p, FRAME_HELLO_LEN, &h2), -EPROTO);

	/* With the host part: every field back, and only at its length. */
	hello.flags = FRAME_HELLO_F_AUTH | FRAME_HELLO_F_HOST;
	pattern_fill(hello.boot_id, sizeof(hello.boot_id), 4);
	hello.netns = 0x0102030405060708ULL;
	pattern_fill(hello.addr, sizeof(hello.addr), 5);
	ck_assert_uint_eq(frame_encode_hello(p, &hello),
			  FRAME_HELLO_LEN + FRAME_HELLO_HOST_LEN);
	memset(&h2, 0, sizeof(h2));
	ck_assert_int_eq(frame_decode_hello(p, FRAME_HELLO_LEN +
					    FRAME_HELLO_HOST_LEN, &h2), 0);
	ck_assert_uint_eq(h2.flags, hello.flags);
	ck_assert_mem_eq(h2.nonce, hello.nonce, FRAME_NONCE_LEN);
	ck_assert_mem_eq(h2.boot_id, hello.boot_id, sizeof(h2.boot_id));
	ck_assert_uint_eq(h2.netns, hello.netns);
	ck_assert_mem_eq(h2.addr, hello.addr, sizeof(h2.addr));
	ck_assert_int_eq(frame_decode_hello(p, FRAME_HELLO_LEN, &h2), -EPROTO);
	ck_assert_int_eq(frame_decode_hello(p, FRAME_HELLO_LEN +
					    FRAME_HELLO_HOST_LEN - 1, &h2),
			 -EPROTO);

	pattern_fill(ch.nonce, sizeof(ch.nonce), 2);
	pattern_fill(ch.mac, sizeof(ch.mac), 3);
	ck_assert_uint_eq(frame_encode_challenge(p, &ch), FRAME_CHALLENGE_LEN);
	ck_assert_int_eq(frame_decode_challenge(p, FRAME_CHALLENGE_LEN, &ch2), 0);
	ck_assert_mem_eq(&ch, &ch2, sizeof(ch));
	ck_assert_int_eq(frame_decode_challenge(p, 3, &ch2), -EPROTO);
	ck_assert_int_eq(frame_decode_mac(p, FRAME_MAC_LEN, mac), 0);
	ck_assert_int_eq(frame_decode_mac(p, FRAME_MAC_LEN + 1, mac), -EPROTO);

	ck_assert_uint_eq(frame_encode_u64(p, 0x0102030405060708ULL), 8);
	ck_assert_int_eq(p[0], 1);
	ck_assert_int_eq(frame_decode_u64(p, 8, &v), 0);
	ck_assert_uint_eq(v, 0x0102030405060708ULL);
	ck_assert_int_eq(frame_decode_u64(p, 4, &v), -EPROTO);
	frame_encode_s32(p, -EEXIST);
	ck_assert_int_eq(frame_decode_s32(p, 4, &e), 0);
	ck_assert_int_eq(e, -EEXIST);

	pattern_fill(p + FRAME_XPORT_HDR_LEN, 100, 4);
	x.blob_len = 100;
	n = frame_encode_xport(p, &x);
	ck_assert_int_eq(n, FRAME_XPORT_HDR_LEN + 100);
	ck_assert_int_eq(frame_decode_xport(p, (uint32_t)n, &x2), 0);
	ck_assert_uint_eq(x2.transport, HMC_TRANSPORT_UCX);
	ck_assert_uint_eq(x2.buf_size, 1ULL << 40);
	ck_assert_uint_eq(x2.blob_len, 100);
	ck_assert_int_eq(pattern_mismatch(x2.blob, 100, 4), -1);
	x.blob_len = FRAME_XPORT_MAX_BLOB + 1;
	ck_assert_int_eq(frame_encode_xport(p, &x), -EMSGSIZE);
	x.status = 5;				/* a positive status is a lie */
	x.blob_len = 0;
	frame_encode_xport(p, &x);
	ck_assert_int_eq(frame_decode_xport(p, FRAME_XPORT_HDR_LEN, &x2), -EPROTO);
	x.status = -FRAME_MAX_ERRNO;		/* the last errno */
	frame_encode_xport(p, &x);
	ck_assert_int_eq(frame_decode_xport(p, FRAME_XPORT_HDR_LEN, &x2), 0);
	ck_assert_int_eq(x2.status, -FRAME_MAX_ERRNO);
	x.status = -FRAME_MAX_ERRNO - 1;	/* no errno: garbage */
	frame_encode_xport(p, &x);
	ck_assert_int_eq(frame_decode_xport(p, FRAME_XPORT_HDR_LEN, &x2), -EPROTO);
}
END_TEST

/* ---- the stream parser over a real socket */

static struct conn *rx_conn(int *wfd)
{
	int sv[2];
	struct conn *cn;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	cn = conn_new(sv[0], true);
	ck_assert_ptr_nonnull(cn);
	*wfd = sv[1];
	return cn;
}

static void put_frame(int fd, enum frame_type t, const void *payload,
		      uint32_t len)
{
	uint8_t h[FRAME_HDR_LEN];

	hdr(h, t, len);
	ck_assert_int_eq(write(fd, h, sizeof(h)), sizeof(h));
	if (len)
		ck_assert_int_eq(write(fd, payload, len), (ssize_t)len);
}

START_TEST(test_stream_truncated_and_split)
{
	const uint8_t *payload;
	struct frame_hdr h;
	uint8_t raw[FRAME_HDR_LEN + 8], stream[500 * 24 + FRAME_HDR_LEN + 3];
	struct conn *cn;
	int wfd;
	size_t i;

	cn = rx_conn(&wfd);
	hdr(raw, FRAME_TAG, 8);
	frame_encode_u64(raw + FRAME_HDR_LEN, 0xabcdef);
	/* byte by byte: no frame until the last byte */
	for (i = 0; i < sizeof(raw); i++) {
		ck_assert_int_eq(conn_next_frame(cn, &h, &payload), 0);
		ck_assert_int_eq(write(wfd, raw + i, 1), 1);
		ck_assert_int_eq(conn_fill(cn), 1);
	}
	ck_assert_int_eq(conn_next_frame(cn, &h, &payload), 1);
	ck_assert_int_eq(h.type, FRAME_TAG);
	ck_assert_uint_eq(get_be64(payload), 0xabcdef);
	conn_consume(cn, &h);
	ck_assert_int_eq(conn_next_frame(cn, &h, &payload), 0);
	ck_assert_int_eq(conn_fill(cn), -EAGAIN);

	/* many frames in one read, then a truncated one and EOF */
	for (i = 0; i < 500; i++) {
		hdr(stream + i * 24, FRAME_TAG, 8);
		frame_encode_u64(stream + i * 24 + FRAME_HDR_LEN, i * 0x1000193);
	}
	memcpy(stream + 500 * 24, raw, FRAME_HDR_LEN + 3);
	ck_assert_int_eq(write(wfd, stream, sizeof(stream)), sizeof(stream));
	close(wfd);
	for (i = 0; i < 500;) {
		int rc = conn_next_frame(cn, &h, &payload);

		if (rc == 0) {
			ck_assert_int_gt(conn_fill(cn), 0);
			continue;
		}
		ck_assert_int_eq(rc, 1);
		ck_assert_uint_eq(get_be64(payload), i * 0x1000193);
		conn_consume(cn, &h);
		i++;
	}
	while (conn_next_frame(cn, &h, &payload) == 0) {
		ssize_t n = conn_fill(cn);

		if (n == -ECONNRESET)
			break;
		ck_assert_int_gt(n, 0);
	}
	ck_assert_int_eq(conn_next_frame(cn, &h, &payload), 0); /* truncated */
	conn_free(cn);
}
END_TEST

START_TEST(test_stream_garbage)
{
	static const uint8_t junk[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	const uint8_t *payload;
	struct frame_hdr h;
	uint8_t raw[FRAME_HDR_LEN];
	struct conn *cn;
	int wfd;

	cn = rx_conn(&wfd);
	ck_assert_int_eq(write(wfd, junk, sizeof(junk)), sizeof(junk));
	ck_assert_int_gt(conn_fill(cn), 0);
	ck_assert_int_eq(conn_next_frame(cn, &h, &payload), -EPROTO);
	conn_free(cn);
	close(wfd);

	/* a huge announced length is refused before any allocation */
	cn = rx_conn(&wfd);
	hdr(raw, FRAME_XPORT_ACK, FRAME_MAX_PAYLOAD);
	raw[8] = 0x7f;
	ck_assert_int_eq(write(wfd, raw, sizeof(raw)), sizeof(raw));
	ck_assert_int_gt(conn_fill(cn), 0);
	ck_assert_int_eq(conn_next_frame(cn, &h, &payload), -EPROTO);
	ck_assert_uint_le(cn->rx_cap, 2 * 4096);
	conn_free(cn);
	close(wfd);
}
END_TEST

START_TEST(test_stream_max_frame)
{
	uint8_t *big = malloc(FRAME_MAX_PAYLOAD);
	const uint8_t *payload;
	struct frame_hdr h;
	struct conn *cn;
	int wfd, rc;
	pid_t pid;

	cn = rx_conn(&wfd);
	pattern_fill(big, FRAME_MAX_PAYLOAD, 9);
	memset(big, 0, FRAME_XPORT_HDR_LEN);	/* status 0 */
	pid = fork();
	if (pid == 0) {
		fcntl(wfd, F_SETFL, 0);		/* blocking writer */
		put_frame(wfd, FRAME_XPORT_REQ, big, FRAME_MAX_PAYLOAD);
		_exit(0);
	}
	close(wfd);
	while ((rc = conn_next_frame(cn, &h, &payload)) == 0) {
		ssize_t n = conn_fill(cn);

		if (n == -EAGAIN)
			usleep(100);
		else
			ck_assert_int_gt(n, 0);
	}
	ck_assert_int_eq(rc, 1);
	ck_assert_uint_eq(h.len, FRAME_MAX_PAYLOAD);
	ck_assert_int_eq(memcmp(payload, big, FRAME_MAX_PAYLOAD), 0);
	waitpid(pid, NULL, 0);
	conn_free(cn);
	free(big);
}
END_TEST

/* A descriptor travels with its frame over a Unix socket, and only there. */
START_TEST(test_stream_fd_passing)
{
	const uint8_t *payload;
	struct frame_hdr h;
	uint8_t p[FRAME_XPORT_HDR_LEN] = { 0 };
	struct stat a, b;
	struct conn *rx, *tx;
	int sv[2], fd, got, i;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	rx = conn_new(sv[0], true);
	tx = conn_new(sv[1], true);
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(conn_send_fd(tx, FRAME_XPORT_REQ, p, sizeof(p), fd,
				      DEADLINE_NEVER), 0);
	ck_assert_int_eq(conn_send(tx, FRAME_TAG, p, 8, DEADLINE_NEVER), 0);
	ck_assert_int_gt(conn_fill(rx), 0);
	ck_assert_int_eq(conn_next_frame(rx, &h, &payload), 1);
	ck_assert_uint_eq(h.flags, FRAME_F_FD);
	got = conn_take_fd(rx);
	ck_assert_int_ge(got, 0);
	ck_assert_int_eq(conn_take_fd(rx), -1);
	ck_assert_int_eq(fstat(fd, &a), 0);
	ck_assert_int_eq(fstat(got, &b), 0);
	ck_assert(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	ck_assert_int_eq(fcntl(got, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	close(got);
	conn_consume(rx, &h);
	if (conn_next_frame(rx, &h, &payload) == 0)
		ck_assert_int_gt(conn_fill(rx), 0);
	ck_assert_int_eq(conn_next_frame(rx, &h, &payload), 1);
	ck_assert_uint_eq(h.flags, 0);
	conn_consume(rx, &h);

	/* a flood of descriptors is a protocol error, and none leaks */
	for (i = 0; i <= SOCK_MAX_FDS; i++)
		ck_assert_int_eq(conn_send_fd(tx, FRAME_XPORT_REQ, p, sizeof(p),
					      fd, DEADLINE_NEVER), 0);
	while ((got = (int)conn_fill(rx)) > 0)
		;
	ck_assert_int_eq(got, -EPROTO);
	ck_assert_int_le(rx->nr_rx_fds, SOCK_MAX_FDS);
	conn_free(rx);
	conn_free(tx);

	/* TCP connections never carry one */
	tx = conn_new(-1, false);
	ck_assert_int_eq(conn_send_fd(tx, FRAME_XPORT_REQ, p, sizeof(p), fd,
				      DEADLINE_NEVER), -EOPNOTSUPP);
	conn_free(tx);
	close(fd);
}
END_TEST

int main(void)
{
	TCase *tc = tcase_create("frame");

	tcase_add_test(tc, test_header_round_trip);
	tcase_add_test(tc, test_header_rejects);
	tcase_add_test(tc, test_payloads);
	tcase_add_test(tc, test_stream_truncated_and_split);
	tcase_add_test(tc, test_stream_garbage);
	tcase_add_test(tc, test_stream_max_frame);
	tcase_add_test(tc, test_stream_fd_passing);
	return run_tcase("frame", tc);
}
