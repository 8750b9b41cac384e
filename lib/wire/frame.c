// SPDX-License-Identifier: MIT
/* Control-plane frames: encoding and strict validation (see frame.h). */
#include <errno.h>
#include <string.h>

#include "sys/util.h"
#include "wire/frame.h"

/* Payload length bounds per type: [min, max]. */
static const struct {
	const char *name;
	uint32_t min, max;
} frame_types[] = {
	[FRAME_HELLO] = { "hello", FRAME_HELLO_LEN,
			  FRAME_HELLO_LEN + FRAME_HELLO_HOST_LEN },
	[FRAME_CHALLENGE] = { "challenge", FRAME_CHALLENGE_LEN, FRAME_CHALLENGE_LEN },
	[FRAME_AUTH] = { "auth", FRAME_MAC_LEN, FRAME_MAC_LEN },
	[FRAME_WELCOME] = { "welcome", 0, 0 },
	[FRAME_REJECT] = { "reject", 4, 4 },
	[FRAME_TAG] = { "tag", 8, 8 },
	[FRAME_SIGNAL] = { "signal", 8, 8 },
	[FRAME_BARRIER] = { "barrier", 8, 8 },
	[FRAME_XPORT_REQ] = { "xport-req", FRAME_XPORT_HDR_LEN, FRAME_MAX_PAYLOAD },
	[FRAME_XPORT_ACK] = { "xport-ack", FRAME_XPORT_HDR_LEN, FRAME_MAX_PAYLOAD },
	[FRAME_BYE] = { "bye", 0, 0 },
	[FRAME_MSG] = { "msg", 8, FRAME_MAX_PAYLOAD },
};

const char *frame_type_name(unsigned int type)
{
	if (type == 0 || type > FRAME_TYPE_MAX)
		return "unknown";
	return frame_types[type].name;
}

void frame_encode_hdr(uint8_t hdr[FRAME_HDR_LEN], enum frame_type type,
		      uint16_t flags, uint32_t len)
{
	put_be32(hdr, FRAME_MAGIC);
	hdr[4] = FRAME_VERSION;
	hdr[5] = (uint8_t)type;
	put_be16(hdr + 6, flags);
	put_be32(hdr + 8, len);
	put_be32(hdr + 12, 0);
}

int frame_decode_hdr(const uint8_t hdr[FRAME_HDR_LEN], struct frame_hdr *out)
{
	uint8_t type = hdr[5];
	uint16_t flags = get_be16(hdr + 6);
	uint32_t len = get_be32(hdr + 8);

	if (get_be32(hdr) != FRAME_MAGIC || hdr[4] != FRAME_VERSION)
		return -EPROTO;
	if (get_be32(hdr + 12) != 0)
		return -EPROTO;
	if (type == 0 || type > FRAME_TYPE_MAX)
		return -EPROTO;
	if (flags & ~(type == FRAME_XPORT_REQ || type == FRAME_XPORT_ACK ?
		      FRAME_F_FD : 0))
		return -EPROTO;
	if (len < frame_types[type].min || len > frame_types[type].max)
		return -EPROTO;
	out->type = type;
	out->flags = flags;
	out->len = len;
	return 0;
}

size_t frame_encode_hello(uint8_t *p, const struct frame_hello *h)
{
	put_be32(p, h->src_rank);
	put_be32(p + 4, h->dst_rank);
	put_be32(p + 8, h->flags);
	memcpy(p + 12, h->nonce, FRAME_NONCE_LEN);
	if (!(h->flags & FRAME_HELLO_F_HOST))
		return FRAME_HELLO_LEN;
	p += FRAME_HELLO_LEN;
	memcpy(p, h->boot_id, sizeof(h->boot_id));
	put_be64(p + 16, h->netns);
	memcpy(p + 24, h->addr, sizeof(h->addr));
	return FRAME_HELLO_LEN + FRAME_HELLO_HOST_LEN;
}

int frame_decode_hello(const uint8_t *p, uint32_t len, struct frame_hello *h)
{
	if (len < FRAME_HELLO_LEN)
		return -EPROTO;
	h->src_rank = get_be32(p);
	h->dst_rank = get_be32(p + 4);
	h->flags = get_be32(p + 8);
	if (h->flags & ~(FRAME_HELLO_F_AUTH | FRAME_HELLO_F_HOST))
		return -EPROTO;
	if (len != FRAME_HELLO_LEN +
	    (h->flags & FRAME_HELLO_F_HOST ? FRAME_HELLO_HOST_LEN : 0))
		return -EPROTO;
	memcpy(h->nonce, p + 12, FRAME_NONCE_LEN);
	if (!(h->flags & FRAME_HELLO_F_HOST))
		return 0;
	p += FRAME_HELLO_LEN;
	memcpy(h->boot_id, p, sizeof(h->boot_id));
	h->netns = get_be64(p + 16);
	memcpy(h->addr, p + 24, sizeof(h->addr));
	return 0;
}

size_t frame_encode_challenge(uint8_t *p, const struct frame_challenge *c)
{
	memcpy(p, c->nonce, FRAME_NONCE_LEN);
	memcpy(p + FRAME_NONCE_LEN, c->mac, FRAME_MAC_LEN);
	return FRAME_CHALLENGE_LEN;
}

int frame_decode_challenge(const uint8_t *p, uint32_t len,
			   struct frame_challenge *c)
{
	if (len != FRAME_CHALLENGE_LEN)
		return -EPROTO;
	memcpy(c->nonce, p, FRAME_NONCE_LEN);
	memcpy(c->mac, p + FRAME_NONCE_LEN, FRAME_MAC_LEN);
	return 0;
}

int frame_decode_mac(const uint8_t *p, uint32_t len,
		     uint8_t mac[FRAME_MAC_LEN])
{
	if (len != FRAME_MAC_LEN)
		return -EPROTO;
	memcpy(mac, p, FRAME_MAC_LEN);
	return 0;
}

size_t frame_encode_u64(uint8_t *p, uint64_t v)
{
	put_be64(p, v);
	return 8;
}

int frame_decode_u64(const uint8_t *p, uint32_t len, uint64_t *v)
{
	if (len != 8)
		return -EPROTO;
	*v = get_be64(p);
	return 0;
}

size_t frame_encode_s32(uint8_t *p, int32_t v)
{
	put_be32(p, (uint32_t)v);
	return 4;
}

int frame_decode_s32(const uint8_t *p, uint32_t len, int32_t *v)
{
	if (len != 4)
		return -EPROTO;
	*v = (int32_t)get_be32(p);
	return 0;
}

int frame_encode_xport(uint8_t *p, const struct frame_xport *x)
{
	if (x->blob_len > FRAME_XPORT_MAX_BLOB)
		return -EMSGSIZE;
	put_be32(p, (uint32_t)x->status);
	put_be32(p + 4, x->transport);
	put_be64(p + 8, x->buf_size);
	return FRAME_XPORT_HDR_LEN + (int)x->blob_len;
}

int frame_decode_xport(const uint8_t *p, uint32_t len, struct frame_xport *x)
{
	if (len < FRAME_XPORT_HDR_LEN || len > FRAME_MAX_PAYLOAD)
		return -EPROTO;
	x->status = (int32_t)get_be32(p);
	x->transport = get_be32(p + 4);
	x->buf_size = get_be64(p + 8);
	x->blob = p + FRAME_XPORT_HDR_LEN;
	x->blob_len = len - FRAME_XPORT_HDR_LEN;
	/* an errno, as a REJECT's: the dialer hands it to its caller */
	if (x->status > 0 || x->status < -FRAME_MAX_ERRNO)
		return -EPROTO;
	return 0;
}
