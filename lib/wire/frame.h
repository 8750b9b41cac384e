/* SPDX-License-Identifier: MIT */
/*
 * Control-plane wire format. Every frame is a 16-byte header in network
 * byte order followed by a bounded payload:
 *
 *   0       4        5     6       8        12         16
 *   | magic | version | type | flags | length | reserved | payload ...
 *
 * Unknown types, a wrong magic or version, non-zero reserved bits, a length
 * over FRAME_MAX_PAYLOAD or one that does not fit the type are protocol
 * errors (-EPROTO) and end the connection.
 */
#ifndef HMC_LIB_FRAME_H
#define HMC_LIB_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define FRAME_MAGIC		0x484d4346u	/* "HMCF" */
#define FRAME_VERSION		1
#define FRAME_HDR_LEN		16
#define FRAME_MAX_PAYLOAD	(64 * 1024)
#define FRAME_NONCE_LEN		32
#define FRAME_MAC_LEN		32

enum frame_type {
	FRAME_HELLO = 1,	/* dialer -> listener: ranks, nonce, auth flag */
	FRAME_CHALLENGE,	/* listener -> dialer: nonce, listener's MAC */
	FRAME_AUTH,		/* dialer -> listener: dialer's MAC */
	FRAME_WELCOME,		/* listener -> dialer: the rank is bound */
	FRAME_REJECT,		/* either way, then close: an errno */
	FRAME_TAG,		/* u64 tag for hmc_comm_recv_tag() */
	FRAME_SIGNAL,		/* u64 tag of a put_signal, after its data */
	FRAME_BARRIER,		/* u64 barrier epoch */
	FRAME_XPORT_REQ,	/* transport metadata, asks for the peer's */
	FRAME_XPORT_ACK,	/* the peer's transport metadata, or an error */
	FRAME_BYE,		/* orderly disconnect */
	FRAME_MSG,		/* two-sided messages (lib/msg), opaque to the core */
	FRAME_TYPE_MAX = FRAME_MSG,
};

#define FRAME_HELLO_F_AUTH	(1U << 0)	/* the dialer has a secret */
/*
 * The HELLO carries the dialer's host part (FRAME_HELLO_HOST_LEN more
 * bytes): over a Unix socket, so that the listener can tell whether it is
 * the one the dialer meant (see ctrl.c).
 */
#define FRAME_HELLO_F_HOST	(1U << 1)

/*
 * Header flag: a file descriptor travels with this frame (SCM_RIGHTS, Unix
 * control sockets only); allowed on XPORT_REQ and XPORT_ACK.
 */
#define FRAME_F_FD		(1U << 0)

struct frame_hdr {
	uint8_t type;
	uint16_t flags;
	uint32_t len;
};

struct frame_hello {
	uint32_t src_rank;	/* the dialer */
	uint32_t dst_rank;	/* whom it meant to reach */
	uint32_t flags;		/* FRAME_HELLO_F_* */
	uint8_t nonce[FRAME_NONCE_LEN];
	/* FRAME_HELLO_F_HOST only: */
	uint8_t boot_id[16];	/* the dialer's kernel boot id */
	uint64_t netns;		/* its network namespace's inode */
	uint8_t addr[16];	/* the address it dialed (IPv6, v4-mapped) */
};

struct frame_challenge {
	uint8_t nonce[FRAME_NONCE_LEN];
	uint8_t mac[FRAME_MAC_LEN];
};

/* Transport metadata: the peer's buffer and an opaque transport blob. */
struct frame_xport {
	int32_t status;		/* ACK only: 0 or a negative errno (>= -FRAME_MAX_ERRNO) */
	uint32_t transport;	/* enum hmc_transport */
	uint64_t buf_size;
	const uint8_t *blob;	/* points into the received payload */
	uint32_t blob_len;
};

#define FRAME_HELLO_LEN		(12 + FRAME_NONCE_LEN)
#define FRAME_HELLO_HOST_LEN	40	/* boot_id, netns, addr */
#define FRAME_CHALLENGE_LEN	(FRAME_NONCE_LEN + FRAME_MAC_LEN)
#define FRAME_XPORT_HDR_LEN	16
#define FRAME_XPORT_MAX_BLOB	(FRAME_MAX_PAYLOAD - FRAME_XPORT_HDR_LEN)
/* The largest errno a frame may carry (the kernel's MAX_ERRNO). */
#define FRAME_MAX_ERRNO		4095

/* Encode a header for @type with a payload of @len bytes. */
void frame_encode_hdr(uint8_t hdr[FRAME_HDR_LEN], enum frame_type type,
		      uint16_t flags, uint32_t len);

/*
 * Decode and validate a header: 0, or -EPROTO (bad magic, version, type,
 * reserved bits, flags @type does not allow or a length outside its bounds).
 */
int frame_decode_hdr(const uint8_t hdr[FRAME_HDR_LEN], struct frame_hdr *out);

/* Payload encoders return the payload length; the buffer must be large enough. */
size_t frame_encode_hello(uint8_t *p, const struct frame_hello *h);
size_t frame_encode_challenge(uint8_t *p, const struct frame_challenge *c);
size_t frame_encode_u64(uint8_t *p, uint64_t v);
size_t frame_encode_s32(uint8_t *p, int32_t v);
/*
 * The XPORT header; the blob must already sit at p + FRAME_XPORT_HDR_LEN.
 * Returns the payload length, or -EMSGSIZE if the blob is too large.
 */
int frame_encode_xport(uint8_t *p, const struct frame_xport *x);

/* Payload decoders check the length against the header: 0 or -EPROTO. */
int frame_decode_hello(const uint8_t *p, uint32_t len, struct frame_hello *h);
int frame_decode_challenge(const uint8_t *p, uint32_t len,
			   struct frame_challenge *c);
int frame_decode_mac(const uint8_t *p, uint32_t len,
		     uint8_t mac[FRAME_MAC_LEN]);
int frame_decode_u64(const uint8_t *p, uint32_t len, uint64_t *v);
int frame_decode_s32(const uint8_t *p, uint32_t len, int32_t *v);
int frame_decode_xport(const uint8_t *p, uint32_t len, struct frame_xport *x);

const char *frame_type_name(unsigned int type);

#endif
