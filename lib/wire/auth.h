/* SPDX-License-Identifier: MIT */
/*
 * Control-plane authentication: an HMAC-SHA256 challenge-response on a
 * shared secret. Each side proves knowledge of the secret over both fresh
 * nonces and both ranks, under a label naming its role, so a MAC can be
 * neither replayed on another connection nor reflected back.
 */
#ifndef HMC_LIB_AUTH_H
#define HMC_LIB_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/frame.h"

enum auth_role {
	AUTH_ROLE_DIALER,
	AUTH_ROLE_LISTENER,
};

/* Fill @nonce with fresh random bytes: 0 or a negative errno. */
int auth_nonce(uint8_t nonce[FRAME_NONCE_LEN]);

/* The MAC that @role sends for this exchange: 0 or -EIO. */
int auth_mac(const void *secret, size_t secret_len, enum auth_role role,
	     const uint8_t dialer_nonce[FRAME_NONCE_LEN],
	     const uint8_t listener_nonce[FRAME_NONCE_LEN],
	     uint32_t dialer_rank, uint32_t listener_rank,
	     uint8_t mac[FRAME_MAC_LEN]);

/* Constant-time comparison. */
bool auth_mac_equal(const uint8_t a[FRAME_MAC_LEN],
		    const uint8_t b[FRAME_MAC_LEN]);

#endif
