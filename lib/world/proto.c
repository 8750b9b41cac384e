// SPDX-License-Identifier: MIT
/* The store protocol's shared pieces (see proto.h). */
#include <errno.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "sys/util.h"
#include "world/proto.h"

int wp_mac(const void *secret, size_t secret_len, enum wp_side side,
	   const uint8_t cnonce[WP_NONCE_LEN],
	   const uint8_t snonce[WP_NONCE_LEN], uint8_t mac[WP_MAC_LEN])
{
	static const char *const label[] = {
		[WP_SIDE_SERVER] = "hmc world store server v1",
		[WP_SIDE_CLIENT] = "hmc world store client v1",
	};
	static const uint8_t empty;
	uint8_t msg[32 + 2 * WP_NONCE_LEN];
	unsigned int len = WP_MAC_LEN;
	size_t ll = strlen(label[side]);

	memset(msg, 0, sizeof(msg));
	memcpy(msg, label[side], ll);
	memcpy(msg + 32, cnonce, WP_NONCE_LEN);
	memcpy(msg + 32 + WP_NONCE_LEN, snonce, WP_NONCE_LEN);
	if (!HMAC(EVP_sha256(), secret_len ? secret : &empty, (int)secret_len,
		  msg, sizeof(msg), mac, &len) || len != WP_MAC_LEN)
		return -EIO;
	return 0;
}

void wp_hdr_encode(uint8_t *p, const struct wp_hdr *h)
{
	put_be32(p, h->len);
	put_be16(p + 4, h->op);
	put_be16(p + 6, h->flags);
	put_be32(p + 8, h->id);
	put_be32(p + 12, (uint32_t)h->status);
}

void wp_hdr_decode(const uint8_t *p, struct wp_hdr *h)
{
	h->len = get_be32(p);
	h->op = get_be16(p + 4);
	h->flags = get_be16(p + 6);
	h->id = get_be32(p + 8);
	h->status = (int32_t)get_be32(p + 12);
}
