// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: the dialer's side of the handshake and its HMAC
 * exchange (wire/auth.c), facing a hostile listener. hmc_comm_connect()
 * dials a fake listener on loopback TCP, which reads the HELLO, answers
 * with the input and watches what the dialer sends back.
 *
 * Input: one mode byte, then the bytes the listener sends.
 *   MODE_SECRET  the dialer has a secret
 *   MODE_PROVEN  with a secret: the listener first proves it (a CHALLENGE
 *                with the right MAC) and checks the dialer's AUTH
 * Beyond memory errors, what fails the run: a HELLO, AUTH or XPORT_REQ
 * that is malformed or says the wrong thing, an AUTH or XPORT_REQ (the
 * dialer trusting the listener) after a secret listener that never proved
 * itself, a connect that succeeds or hangs.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>

#include "fuzz.h"
#include "wire/auth.h"

#define MODE_SECRET	(1U << 0)
#define MODE_PROVEN	(1U << 1)

/* longer than any wait of the fake listener */
#define CONNECT_TIMEOUT_MS	(2 * FUZZ_WAIT_MS)

#define DIALER_RANK	0
#define LISTENER_RANK	1

struct listener {
	int lfd;
	uint16_t port;
	/* this input */
	unsigned int mode;
	const uint8_t *data;
	size_t size;
};

static struct hmc_buf *buf;
static struct hmc_comm *dialers[2];	/* without, with a secret */
static struct listener fake;
static uint8_t frame[FRAME_HDR_LEN + FRAME_MAX_PAYLOAD];

/* Accept the dialer's connection: the fd, non-blocking. */
static int fake_accept(struct listener *l)
{
	struct pollfd pfd = { .fd = l->lfd, .events = POLLIN };
	int fd;

	check(poll(&pfd, 1, FUZZ_WAIT_MS) == 1);
	fd = accept4(l->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	check(fd >= 0);
	return fd;
}

/* Prove the secret to the dialer and check its proof: MODE_PROVEN. */
static void fake_prove(int fd, const struct frame_hello *hello)
{
	static const char secret[] = FUZZ_SECRET;
	uint8_t mac[FRAME_MAC_LEN], p[FRAME_CHALLENGE_LEN];
	struct frame_challenge ch;
	struct frame_hdr h;

	check(!auth_nonce(ch.nonce));
	check(!auth_mac(secret, strlen(secret), AUTH_ROLE_LISTENER,
			hello->nonce, ch.nonce, DIALER_RANK, LISTENER_RANK,
			ch.mac));
	frame_encode_hdr(frame, FRAME_CHALLENGE, 0, FRAME_CHALLENGE_LEN);
	frame_encode_challenge(p, &ch);
	memcpy(frame + FRAME_HDR_LEN, p, sizeof(p));
	check(!fuzz_write_all(fd, frame, FRAME_HDR_LEN + sizeof(p)));

	check(fuzz_read_frame(fd, frame, &h) == 1 && h.type == FRAME_AUTH);
	check(!frame_decode_mac(frame + FRAME_HDR_LEN, h.len, mac));
	check(!auth_mac(secret, strlen(secret), AUTH_ROLE_DIALER, hello->nonce,
			ch.nonce, DIALER_RANK, LISTENER_RANK, ch.mac));
	check(auth_mac_equal(mac, ch.mac));
}

static void *fake_listen(void *arg)
{
	struct listener *l = arg;
	bool secret = l->mode & MODE_SECRET;
	bool proven = secret && (l->mode & MODE_PROVEN);
	struct frame_hello hello;
	struct frame_hdr h;
	int fd, rc;

	fd = fake_accept(l);
	check(fuzz_read_frame(fd, frame, &h) == 1 && h.type == FRAME_HELLO);
	check(!frame_decode_hello(frame + FRAME_HDR_LEN, h.len, &hello));
	check(hello.src_rank == DIALER_RANK && hello.dst_rank == LISTENER_RANK);
	check(hello.flags == (secret ? FRAME_HELLO_F_AUTH : 0));
	if (proven)
		fake_prove(fd, &hello);

	/* Our answer; a dialer that stops reading makes it fail: no matter. */
	fuzz_write_all(fd, l->data, l->size);
	shutdown(fd, SHUT_WR);

	/* What the dialer makes of it, until it hangs up. */
	while ((rc = fuzz_read_frame(fd, frame, &h)) == 1) {
		switch (h.type) {
		case FRAME_AUTH:
			/* the proven listener had the only one */
			check(!"a dialer answered a CHALLENGE it cannot have verified");
			break;
		case FRAME_XPORT_REQ:
			/* the dialer took us for the listener it wanted */
			check(!secret || proven);
			break;
		case FRAME_BYE:
			break;
		default:
			check(!"a frame a dialer never sends");
		}
	}
	check(rc == 0);
	close(fd);
	return NULL;
}

static int fuzz_init(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	unsigned int i;

	/* Only what this harness says: no secret, no control over Unix. */
	unsetenv("HMC_SECRET");
	unsetenv("HMC_CTRL_TRANSPORT");
	setenv("UCX_TLS", "tcp,self", 1);
	setenv("UCX_NET_DEVICES", "lo", 1);
	if (hmc_buf_create(HMC_MEM_CPU, 0, 64 << 10,
			   &(struct hmc_buf_opts){ .sz = sizeof(struct hmc_buf_opts),
						   .flags = HMC_BUF_F_NO_KMOD },
			   &buf))
		return -1;
	for (i = 0; i < ARRAY_SIZE(dialers); i++) {
		struct hmc_comm_opts o = {
			.sz = sizeof(o),
			.rank = DIALER_RANK,
			.flags = HMC_COMM_F_NO_PROGRESS_THREAD |
				 HMC_COMM_F_NO_UNIX,
			.secret = i ? FUZZ_SECRET : NULL,
			.connect_timeout_ms = CONNECT_TIMEOUT_MS,
		};

		if (hmc_comm_create(buf, &o, &dialers[i]))
			return -1;
	}

	fake.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fake.lfd < 0 || bind(fake.lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(fake.lfd, 4) ||
	    getsockname(fake.lfd, (struct sockaddr *)&sa, &len))
		return -1;
	fake.port = ntohs(sa.sin_port);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	int64_t deadline;
	pthread_t t;
	int rc;

	if (!ready) {
		check(!fuzz_init());
		ready = true;
	}
	if (!size)
		return 0;
	fake.mode = data[0];
	fake.data = data + 1;
	fake.size = size - 1;
	if (fuzz_reaches_transport(fake.data, fake.size))
		return -1;

	check(!pthread_create(&t, NULL, fake_listen, &fake));
	deadline = deadline_after_ms(CONNECT_TIMEOUT_MS);
	rc = hmc_comm_connect(dialers[!!(fake.mode & MODE_SECRET)],
			      LISTENER_RANK, "127.0.0.1", fake.port,
			      HMC_TRANSPORT_UCX);
	check(!pthread_join(t, NULL));
	/*
	 * No listener here can bring a transport up; and every listener here
	 * hangs up, which the dialer must notice before its deadline.
	 */
	check(rc < 0 && rc >= -4095);
	check(!deadline_passed(deadline));
	return 0;
}
