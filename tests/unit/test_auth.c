// SPDX-License-Identifier: MIT
/* HMAC challenge-response: every input changes the MAC. */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "wire/auth.h"
#include "pattern.h"
#include "run_tcase.h"

static uint8_t nd[FRAME_NONCE_LEN], nl[FRAME_NONCE_LEN];

static void mac_of(const char *secret, enum auth_role role, const uint8_t *d,
		   const uint8_t *l, uint32_t rd, uint32_t rl, uint8_t *out)
{
	ck_assert_int_eq(auth_mac(secret, strlen(secret), role, d, l, rd, rl,
				  out), 0);
}

START_TEST(test_mac_binds_everything)
{
	uint8_t base[FRAME_MAC_LEN], m[FRAME_MAC_LEN], nd2[FRAME_NONCE_LEN];

	pattern_fill(nd, sizeof(nd), 1);
	pattern_fill(nl, sizeof(nl), 2);
	mac_of("s3cret", AUTH_ROLE_DIALER, nd, nl, 1, 0, base);
	mac_of("s3cret", AUTH_ROLE_DIALER, nd, nl, 1, 0, m);
	ck_assert(auth_mac_equal(base, m));		/* deterministic */

	mac_of("s3creT", AUTH_ROLE_DIALER, nd, nl, 1, 0, m);
	ck_assert(!auth_mac_equal(base, m));		/* wrong secret */
	mac_of("s3cret", AUTH_ROLE_LISTENER, nd, nl, 1, 0, m);
	ck_assert(!auth_mac_equal(base, m));		/* no reflection */
	mac_of("s3cret", AUTH_ROLE_DIALER, nl, nd, 1, 0, m);
	ck_assert(!auth_mac_equal(base, m));		/* nonces swapped */
	memcpy(nd2, nd, sizeof(nd2));
	nd2[FRAME_NONCE_LEN - 1] ^= 1;
	mac_of("s3cret", AUTH_ROLE_DIALER, nd2, nl, 1, 0, m);
	ck_assert(!auth_mac_equal(base, m));		/* replayed elsewhere */
	mac_of("s3cret", AUTH_ROLE_DIALER, nd, nl, 2, 0, m);
	ck_assert(!auth_mac_equal(base, m));		/* another rank */
	mac_of("s3cret", AUTH_ROLE_DIALER, nd, nl, 1, 1, m);
	ck_assert(!auth_mac_equal(base, m));
	memcpy(m, base, sizeof(m));
	m[FRAME_MAC_LEN - 1] ^= 0x80;
	ck_assert(!auth_mac_equal(base, m));
}
END_TEST

START_TEST(test_nonces_are_fresh)
{
	uint8_t a[FRAME_NONCE_LEN], b[FRAME_NONCE_LEN];

	ck_assert_int_eq(auth_nonce(a), 0);
	ck_assert_int_eq(auth_nonce(b), 0);
	ck_assert(memcmp(a, b, sizeof(a)) != 0);
}
END_TEST

int main(void)
{
	TCase *tc = tcase_create("auth");

	tcase_add_test(tc, test_mac_binds_everything);
	tcase_add_test(tc, test_nonces_are_fresh);
	return run_tcase("auth", tc);
}
