// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: the listener's handshake state machine, and the
 * dispatch of the frames that follow a WELCOME, reading a hostile dialer's
 * bytes. Each input gets a fresh listening communicator (its progress
 * thread runs the state machine, as in any process) and one connection
 * over loopback TCP, which sends the input, hangs up its sending side and
 * reads every answer until the listener lets go.
 *
 * Input: one mode byte, then the bytes the dialer sends.
 *   MODE_SECRET  the listener has a secret
 *   MODE_PROVEN  the harness first does the handshake right (HELLO, and
 *                with a secret: checks the CHALLENGE, answers AUTH), so
 *                that the input speaks to a welcomed peer
 * Beyond memory errors, what fails the run: an answer that is malformed
 * or never sent by a listener, a CHALLENGE without a secret, a WELCOME to
 * a dialer that never proved the secret, a listener that keeps the
 * connection of a dialer that hung up, or that no longer welcomes a good
 * dialer afterwards.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>

#include "fuzz.h"
#include "wire/auth.h"

#define MODE_SECRET	(1U << 0)
#define MODE_PROVEN	(1U << 1)

#define LISTENER_RANK	0
#define DIALER_RANK	1

static struct hmc_buf *buf;
static uint8_t frame[FRAME_HDR_LEN + FRAME_MAX_PAYLOAD];

static int dial(uint16_t port)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	check(fd >= 0);
	check(!connect(fd, (struct sockaddr *)&sa, sizeof(sa)));
	check(!fcntl(fd, F_SETFL, O_NONBLOCK));
	return fd;
}

static void send_frame(int fd, enum frame_type type, const void *p,
		       uint32_t len)
{
	frame_encode_hdr(frame, type, 0, len);
	memcpy(frame + FRAME_HDR_LEN, p, len);
	check(!fuzz_write_all(fd, frame, FRAME_HDR_LEN + len));
}

/* The handshake as a good dialer does it: MODE_PROVEN. */
static void handshake(int fd, bool secret)
{
	static const char key[] = FUZZ_SECRET;
	struct frame_hello hello = {
		.src_rank = DIALER_RANK,
		.dst_rank = LISTENER_RANK,
		.flags = secret ? FRAME_HELLO_F_AUTH : 0,
	};
	uint8_t p[FRAME_HELLO_LEN], mac[FRAME_MAC_LEN];
	struct frame_challenge ch;
	struct frame_hdr h;

	check(!auth_nonce(hello.nonce));
	send_frame(fd, FRAME_HELLO, p, (uint32_t)frame_encode_hello(p, &hello));
	if (secret) {
		check(fuzz_read_frame(fd, frame, &h) == 1);
		check(h.type == FRAME_CHALLENGE);
		check(!frame_decode_challenge(frame + FRAME_HDR_LEN, h.len, &ch));
		check(!auth_mac(key, strlen(key), AUTH_ROLE_LISTENER,
				hello.nonce, ch.nonce, DIALER_RANK,
				LISTENER_RANK, mac));
		check(auth_mac_equal(mac, ch.mac));
		check(!auth_mac(key, strlen(key), AUTH_ROLE_DIALER, hello.nonce,
				ch.nonce, DIALER_RANK, LISTENER_RANK, mac));
		send_frame(fd, FRAME_AUTH, mac, FRAME_MAC_LEN);
	}
	check(fuzz_read_frame(fd, frame, &h) == 1 && h.type == FRAME_WELCOME);
}

/* Every answer of the listener, until it hangs up. */
static void read_answers(int fd, bool secret, bool proven)
{
	struct frame_xport x;
	struct frame_hdr h;
	int32_t err;
	int rc;

	while ((rc = fuzz_read_frame(fd, frame, &h)) == 1) {
		const uint8_t *p = frame + FRAME_HDR_LEN;

		switch (h.type) {
		case FRAME_CHALLENGE:
			check(secret && !proven);
			break;
		case FRAME_WELCOME:
			/* the input cannot know the MAC: only its HELLO */
			check(!secret && !proven);
			break;
		case FRAME_REJECT:
			check(!frame_decode_s32(p, h.len, &err));
			check(err < 0 && err >= -FRAME_MAX_ERRNO);
			break;
		case FRAME_XPORT_ACK:
			check(!frame_decode_xport(p, h.len, &x));
			/* no transport here comes up for a stranger */
			check(x.status < 0);
			break;
		default:
			check(!"a frame a listener never sends");
		}
	}
	check(rc == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hmc_comm_opts o = {
		.sz = sizeof(o),
		.rank = LISTENER_RANK,
		.flags = HMC_COMM_F_NO_UNIX,
		.connect_timeout_ms = FUZZ_WAIT_MS,
	};
	bool secret, proven;
	struct hmc_comm *c;
	int port, fd;

	if (!buf) {
		/* Only what this harness says: no secret from the environment. */
		unsetenv("HMC_SECRET");
		check(!hmc_buf_create(HMC_MEM_CPU, 0, 64 << 10,
				      &(struct hmc_buf_opts){
					      .sz = sizeof(struct hmc_buf_opts),
					      .flags = HMC_BUF_F_NO_KMOD },
				      &buf));
	}
	if (!size)
		return 0;
	secret = data[0] & MODE_SECRET;
	proven = data[0] & MODE_PROVEN;
	data++;
	size--;
	if (fuzz_reaches_transport(data, size))
		return -1;

	o.secret = secret ? FUZZ_SECRET : NULL;
	check(!hmc_comm_create(buf, &o, &c));
	check(!hmc_comm_listen(c, "127.0.0.1", 0));
	port = hmc_comm_listen_port(c);
	check(port > 0);

	fd = dial((uint16_t)port);
	if (proven)
		handshake(fd, secret);
	/* A listener that stops reading makes this fail: no matter. */
	fuzz_write_all(fd, data, size);
	shutdown(fd, SHUT_WR);
	read_answers(fd, secret, proven);
	close(fd);

	/* Whatever the input did, the listener still welcomes a good dialer. */
	fd = dial((uint16_t)port);
	handshake(fd, secret);
	close(fd);
	hmc_comm_destroy(c);
	return 0;
}
