// SPDX-License-Identifier: MIT
/* HMAC-SHA256 challenge-response (see auth.h), on OpenSSL's libcrypto. */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "sys/util.h"
#include "wire/auth.h"

int auth_nonce(uint8_t nonce[FRAME_NONCE_LEN])
{
	size_t off = 0;

	while (off < FRAME_NONCE_LEN) {
		ssize_t n = getrandom(nonce + off, FRAME_NONCE_LEN - off, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		off += (size_t)n;
	}
	return 0;
}

int auth_mac(const void *secret, size_t secret_len, enum auth_role role,
	     const uint8_t dialer_nonce[FRAME_NONCE_LEN],
	     const uint8_t listener_nonce[FRAME_NONCE_LEN],
	     uint32_t dialer_rank, uint32_t listener_rank,
	     uint8_t mac[FRAME_MAC_LEN])
{
	static const char label[2][16] = {
		[AUTH_ROLE_DIALER] = "hmc1 dialer",
		[AUTH_ROLE_LISTENER] = "hmc1 listener",
	};
	uint8_t msg[sizeof(label[0]) + 2 * FRAME_NONCE_LEN + 8];
	unsigned int mac_len = FRAME_MAC_LEN;
	uint8_t *p = msg;

	memcpy(p, label[role], sizeof(label[0]));
	p += sizeof(label[0]);
	memcpy(p, dialer_nonce, FRAME_NONCE_LEN);
	p += FRAME_NONCE_LEN;
	memcpy(p, listener_nonce, FRAME_NONCE_LEN);
	p += FRAME_NONCE_LEN;
	put_be32(p, dialer_rank);
	put_be32(p + 4, listener_rank);

	if (!HMAC(EVP_sha256(), secret, (int)secret_len, msg, sizeof(msg), mac,
		  &mac_len) || mac_len != FRAME_MAC_LEN)
		return -EIO;
	return 0;
}

bool auth_mac_equal(const uint8_t a[FRAME_MAC_LEN],
		    const uint8_t b[FRAME_MAC_LEN])
{
	return CRYPTO_memcmp(a, b, FRAME_MAC_LEN) == 0;
}
