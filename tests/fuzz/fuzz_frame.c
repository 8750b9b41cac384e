// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: the control-plane frame decoder (wire/frame.c) and
 * the stream parser of a connection (wire/conn.c). The input is a byte
 * stream cut into frames. Every header the decoder accepts must satisfy
 * its own rules and re-encode to the same 16 bytes; every payload a decoder
 * accepts must re-encode to the bytes it came from. The same stream, sent
 * through a socketpair in pieces whose sizes the input picks, must come out
 * of a connection as the same frames, up to the same error.
 */
#include "fuzz.h"
#include "wire/conn.h"

static uint8_t out[FRAME_MAX_PAYLOAD];

/* A payload @h's decoder accepted, re-encoded, must equal @p. */
static void payload_round_trip(const struct frame_hdr *h, const uint8_t *p)
{
	struct frame_challenge ch;
	struct frame_hello hello;
	struct frame_xport x;
	uint8_t mac[FRAME_MAC_LEN];
	uint64_t v;
	int32_t s;
	int n;

	switch (h->type) {
	case FRAME_HELLO:
		if (frame_decode_hello(p, h->len, &hello))
			return;
		check(!(hello.flags & ~FRAME_HELLO_F_AUTH));
		check(frame_encode_hello(out, &hello) == h->len);
		break;
	case FRAME_CHALLENGE:
		check(!frame_decode_challenge(p, h->len, &ch));
		check(frame_encode_challenge(out, &ch) == h->len);
		break;
	case FRAME_AUTH:
		check(!frame_decode_mac(p, h->len, mac));
		memcpy(out, mac, sizeof(mac));
		break;
	case FRAME_REJECT:
		check(!frame_decode_s32(p, h->len, &s));
		check(frame_encode_s32(out, s) == h->len);
		break;
	case FRAME_TAG:
	case FRAME_SIGNAL:
	case FRAME_BARRIER:
		check(!frame_decode_u64(p, h->len, &v));
		check(frame_encode_u64(out, v) == h->len);
		break;
	case FRAME_XPORT_REQ:
	case FRAME_XPORT_ACK:
		if (frame_decode_xport(p, h->len, &x))
			return;
		check(x.status <= 0 && x.status >= -FRAME_MAX_ERRNO);
		check(x.blob == p + FRAME_XPORT_HDR_LEN);
		check(x.blob_len == h->len - FRAME_XPORT_HDR_LEN);
		memcpy(out + FRAME_XPORT_HDR_LEN, x.blob, x.blob_len);
		n = frame_encode_xport(out, &x);
		check(n >= 0 && (uint32_t)n == h->len);
		break;
	default:	/* WELCOME, BYE: no payload */
		check(h->len == 0);
		return;
	}
	check(!memcmp(out, p, h->len));
}

/*
 * Where the direct walk of @data stops: the offset of the first frame that
 * is malformed (*@bad) or incomplete.
 */
static size_t walk(const uint8_t *data, size_t size, bool *bad)
{
	struct frame_hdr h;
	size_t pos = 0;

	*bad = false;
	while (size - pos >= FRAME_HDR_LEN) {
		if (frame_decode_hdr(data + pos, &h)) {
			*bad = true;
			break;
		}
		if (size - pos - FRAME_HDR_LEN < h.len)
			break;
		pos += FRAME_HDR_LEN + h.len;
	}
	return pos;
}

/* The stream through a connection: the frames of the walk, then its end. */
static void through_conn(const uint8_t *data, size_t size)
{
	size_t sent = 0, pos = 0, end;
	const uint8_t *payload;
	struct frame_hdr h;
	struct conn *cn;
	bool bad;
	int sv[2], rc;
	ssize_t n;

	end = walk(data, size, &bad);
	check(!socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			  0, sv));
	cn = conn_new(sv[0], true);
	check(cn);
	if (!size)
		shutdown(sv[1], SHUT_WR);
	for (;;) {
		while ((rc = conn_next_frame(cn, &h, &payload)) == 1) {
			check(pos < end);
			check(!memcmp(cn->rx + cn->rx_off, data + pos,
				      FRAME_HDR_LEN + h.len));
			check(payload == cn->rx + cn->rx_off + FRAME_HDR_LEN);
			pos += FRAME_HDR_LEN + h.len;
			conn_consume(cn, &h);
		}
		if (rc) {
			check(rc == -EPROTO && bad && pos == end);
			break;
		}
		if (sent < size) {
			/* a piece of 1 to 4096 bytes: the input says which */
			size_t piece = 1 + (data[sent] * 257u + sent) % 4096;

			piece = piece < size - sent ? piece : size - sent;
			n = send(sv[1], data + sent, piece, MSG_NOSIGNAL);
			check(n > 0 || (n < 0 && errno == EAGAIN));
			if (n > 0) {
				sent += (size_t)n;
				if (sent == size)
					shutdown(sv[1], SHUT_WR);
			}
		}
		n = conn_fill(cn);
		if (n == -ECONNRESET) {		/* all sent and read */
			check(!bad && pos == end);
			break;
		}
		check(n > 0 || n == -EAGAIN);
	}
	conn_free(cn);
	close(sv[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t hdr[FRAME_HDR_LEN];
	struct frame_hdr h;

	through_conn(data, size);
	while (size >= FRAME_HDR_LEN) {
		check(frame_type_name(data[5]) != NULL);
		if (frame_decode_hdr(data, &h))
			return 0;	/* a connection ends here */
		check(h.type >= FRAME_HELLO && h.type <= FRAME_TYPE_MAX);
		check(h.len <= FRAME_MAX_PAYLOAD);
		check(!(h.flags & ~FRAME_F_FD));
		check(!h.flags || h.type == FRAME_XPORT_REQ ||
		      h.type == FRAME_XPORT_ACK);
		frame_encode_hdr(hdr, h.type, h.flags, h.len);
		check(!memcmp(hdr, data, FRAME_HDR_LEN));
		data += FRAME_HDR_LEN;
		size -= FRAME_HDR_LEN;
		if (size < h.len)
			return 0;	/* waits for the rest */
		payload_round_trip(&h, data);
		data += h.len;
		size -= h.len;
	}
	return 0;
}
