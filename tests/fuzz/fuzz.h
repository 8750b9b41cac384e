/* SPDX-License-Identifier: MIT */
/* What the libFuzzer harnesses that talk to libhmc over a socket share. */
#ifndef HMC_TESTS_FUZZ_H
#define HMC_TESTS_FUZZ_H

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <hmc/hmc.h>

#include "sys/util.h"
#include "wire/frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken promise of libhmc: the fuzzer keeps the input that did it. */
#define check(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: check failed: %s\n",	\
				__FILE__, __LINE__, #cond);		\
			abort();					\
		}							\
	} while (0)

/* Every wait of a harness ends: libhmc answering this late is a hang. */
#define FUZZ_WAIT_MS	5000

#define FUZZ_SECRET	"fuzz-secret"

/*
 * Whether the frames at the start of @data (as a connection would cut them)
 * hand a transport blob to UCX or verbs: a XPORT_REQ for either, or a
 * XPORT_ACK that accepts one (the dialing harness asks for UCX). Their
 * worker addresses and keys are parsed by those libraries, which trust
 * them; such inputs are left out, so that the harnesses fuzz libhmc's
 * state machines and its own transports' blobs (tcp, shm) rather than UCX.
 */
static inline bool fuzz_reaches_transport(const uint8_t *data, size_t size)
{
	struct frame_xport x;
	struct frame_hdr h;

	while (size >= FRAME_HDR_LEN && !frame_decode_hdr(data, &h) &&
	       size - FRAME_HDR_LEN >= h.len) {
		if ((h.type == FRAME_XPORT_REQ || h.type == FRAME_XPORT_ACK) &&
		    !frame_decode_xport(data + FRAME_HDR_LEN, h.len, &x) &&
		    (h.type == FRAME_XPORT_REQ ?
		     x.transport == HMC_TRANSPORT_UCX ||
		     x.transport == HMC_TRANSPORT_VERBS : x.status == 0))
			return true;
		data += FRAME_HDR_LEN + h.len;
		size -= FRAME_HDR_LEN + h.len;
	}
	return false;
}

/* Write all of @len to non-blocking @fd within FUZZ_WAIT_MS: 0 or -errno. */
static inline int fuzz_write_all(int fd, const void *buf, size_t len)
{
	int64_t deadline = deadline_after_ms(FUZZ_WAIT_MS);
	const uint8_t *p = buf;
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (deadline_passed(deadline))
			return -ETIMEDOUT;
		poll(&pfd, 1, deadline_remaining_ms(deadline));
	}
	return 0;
}

/*
 * One frame from non-blocking @fd into @buf (FRAME_HDR_LEN +
 * FRAME_MAX_PAYLOAD bytes) within FUZZ_WAIT_MS: 1, 0 at EOF, -EPROTO for
 * a frame libhmc must never send, -ETIMEDOUT or another -errno.
 */
static inline int fuzz_read_frame(int fd, uint8_t *buf, struct frame_hdr *h)
{
	int64_t deadline = deadline_after_ms(FUZZ_WAIT_MS);
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	size_t have = 0, want = FRAME_HDR_LEN;

	while (have < want) {
		ssize_t n = recv(fd, buf + have, want - have, 0);

		if (n == 0)
			return have ? -EPROTO : 0;	/* a frame cut short */
		if (n > 0) {
			have += (size_t)n;
			if (have == FRAME_HDR_LEN) {
				if (frame_decode_hdr(buf, h))
					return -EPROTO;
				want += h->len;
			}
			continue;
		}
		if (errno == ECONNRESET)
			return 0;
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		if (deadline_passed(deadline))
			return -ETIMEDOUT;
		poll(&pfd, 1, deadline_remaining_ms(deadline));
	}
	return 1;
}

#endif
