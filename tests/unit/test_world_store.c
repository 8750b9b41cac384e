// SPDX-License-Identifier: MIT
/*
 * The world store and its client (lib/world): authentication, ranks,
 * collectives (data, mismatches, deadlines naming the missing ranks, a
 * member failing mid-collective) and events, over loopback.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hmc/world.h>

#include "pattern.h"
#include "run_tcase.h"
#include "sys/util.h"
#include "world/client.h"
#include "world/proto.h"
#include "world/store.h"

#define SECRET	"unit secret"

static struct store_srv *srv;

static void start(void)
{
	ck_assert_int_eq(store_srv_start("127.0.0.1", 0, SECRET, strlen(SECRET),
					 NULL, &srv), 0);
}

static void stop(void)
{
	store_srv_stop(srv);
}

static struct store_cli *dial(const char *secret, int *rc, char *msg)
{
	struct store_cli *cli = NULL;

	*rc = store_cli_connect("127.0.0.1", store_srv_port(srv), secret,
				strlen(secret), NULL, deadline_after_ms(3000),
				&cli, msg, 256);
	return cli;
}

/* JOIN: the rank given, or the error. */
static int join(struct store_cli *cli, uint32_t rank, uint32_t size)
{
	uint8_t req[8], *reply;
	size_t len;
	int rc;

	put_be32(req, rank);
	put_be32(req + 4, size);
	rc = store_cli_call(cli, WP_JOIN, req, sizeof(req), NULL, 0,
			    deadline_after_ms(3000), &reply, &len);
	if (rc)
		return rc;
	ck_assert_uint_ge(len, 8);	/* and the segment's name */
	rc = (int)get_be32(reply);
	store_cli_set_nslots(cli, get_be32(reply + 4));
	free(reply);
	return rc;
}

struct coll_call {
	pthread_t t;
	struct store_cli *cli;
	uint32_t kind, root, timeout_ms;
	uint8_t data[600];
	size_t len;
	int rc;
	uint8_t *reply;
	size_t rlen;
	char msg[256];
};

static void *coll_thread(void *arg)
{
	struct coll_call *c = arg;
	uint8_t hdr[16];

	put_be32(hdr, c->kind);
	put_be32(hdr + 4, c->root);
	put_be32(hdr + 8, c->timeout_ms);
	put_be32(hdr + 12, store_cli_nslots(c->cli));
	c->rc = store_cli_call(c->cli, WP_COLL, hdr, sizeof(hdr), c->data,
			       c->len, deadline_after_ms(5000), &c->reply,
			       &c->rlen);
	if (c->rc)
		strcpy(c->msg, store_cli_msg(c->cli));
	return NULL;
}

static void coll_start(struct coll_call *c, struct store_cli *cli,
		       uint32_t kind, uint32_t root, size_t len, uint64_t seed,
		       uint32_t timeout_ms)
{
	memset(c, 0, sizeof(*c));
	c->cli = cli;
	c->kind = kind;
	c->root = root;
	c->len = len;
	c->timeout_ms = timeout_ms;
	pattern_fill(c->data, len, seed);
	ck_assert_int_eq(pthread_create(&c->t, NULL, coll_thread, c), 0);
}

static void coll_end(struct coll_call *c)
{
	pthread_join(c->t, NULL);
}

START_TEST(test_wrong_secret_refused)
{
	char msg[256];
	int rc;

	start();
	ck_assert_ptr_null(dial("not the secret", &rc, msg));
	ck_assert_int_eq(rc, -EACCES);
	ck_assert_ptr_nonnull(strstr(msg, "secret"));
	stop();
}
END_TEST

START_TEST(test_ranks)
{
	struct store_cli *c[4];
	char msg[256];
	int rc, i;

	start();
	for (i = 0; i < 4; i++)
		c[i] = dial(SECRET, &rc, msg);
	ck_assert_int_eq(join(c[0], 1, 3), 1);
	ck_assert_int_eq(join(c[1], 1, 3), -EADDRINUSE);	/* taken */
	ck_assert_int_eq(join(c[1], WP_RANK_ANY, 3), 0);	/* arrival order */
	ck_assert_int_eq(join(c[2], WP_RANK_ANY, 3), 2);
	ck_assert_int_eq(join(c[3], WP_RANK_ANY, 3), -ENOSPC);	/* full */
	ck_assert_int_eq(join(c[3], WP_RANK_ANY, 5), -EINVAL);	/* size */
	for (i = 0; i < 4; i++)
		store_cli_close(c[i]);
	stop();
}
END_TEST

START_TEST(test_allgather_and_bcast)
{
	struct store_cli *c[3];
	struct coll_call cc[3];
	char msg[256];
	const size_t lens[3] = { 577, 577, 577 };
	int rc, i, r;

	start();
	for (i = 0; i < 3; i++) {
		c[i] = dial(SECRET, &rc, msg);
		ck_assert_int_eq(join(c[i], (uint32_t)i, 3), i);
	}
	for (i = 0; i < 3; i++)
		coll_start(&cc[i], c[i], WP_COLL_ALLGATHER, 0, lens[i], 10 + i,
			   2000);
	for (i = 0; i < 3; i++) {
		coll_end(&cc[i]);
		ck_assert_int_eq(cc[i].rc, 0);
		ck_assert_uint_eq(cc[i].rlen, 4 + 3 * 577);
		for (r = 0; r < 3; r++)
			ck_assert_int_eq(pattern_mismatch(cc[i].reply + 4 +
							  r * 577, 577, 10 + r),
					 -1);
		free(cc[i].reply);
	}
	/* bcast: only the root's bytes come back, whole */
	for (i = 0; i < 3; i++) {
		coll_start(&cc[i], c[i], WP_COLL_BCAST, 2, i == 2 ? 599 : 0,
			   42, 2000);
	}
	for (i = 0; i < 3; i++) {
		coll_end(&cc[i]);
		ck_assert_int_eq(cc[i].rc, 0);
		ck_assert_uint_eq(cc[i].rlen, 4 + 599);
		ck_assert_int_eq(pattern_mismatch(cc[i].reply + 4, 599, 42), -1);
		free(cc[i].reply);
	}
	/* different lengths: everyone hears why */
	for (i = 0; i < 3; i++)
		coll_start(&cc[i], c[i], WP_COLL_ALLGATHER, 0, 100 + (i == 1),
			   i, 2000);
	for (i = 0; i < 3; i++) {
		coll_end(&cc[i]);
		ck_assert_int_eq(cc[i].rc, -EINVAL);
		ck_assert_ptr_nonnull(strstr(cc[i].msg, "gave"));
	}
	for (i = 0; i < 3; i++)
		store_cli_close(c[i]);
	stop();
}
END_TEST

START_TEST(test_deadline_names_missing)
{
	struct store_cli *c[2];
	struct coll_call cc[2];
	char msg[256];
	int rc, i;

	start();
	for (i = 0; i < 2; i++) {
		c[i] = dial(SECRET, &rc, msg);
		ck_assert_int_eq(join(c[i], (uint32_t)i * 2, 4), i * 2);
	}
	for (i = 0; i < 2; i++)
		coll_start(&cc[i], c[i], WP_COLL_ALLGATHER, 0, 8, i, 300);
	for (i = 0; i < 2; i++) {
		coll_end(&cc[i]);
		ck_assert_int_eq(cc[i].rc, -ETIMEDOUT);
		ck_assert_str_eq(cc[i].msg, "timed out waiting for ranks 1, 3 "
				 "(never joined: 1, 3)");
	}
	for (i = 0; i < 2; i++)
		store_cli_close(c[i]);
	stop();
}
END_TEST

START_TEST(test_failure_ends_collective)
{
	struct store_cli *c[3];
	struct coll_call cc;
	struct store_ev ev;
	char msg[256];
	int rc, i;

	start();
	for (i = 0; i < 3; i++) {
		c[i] = dial(SECRET, &rc, msg);
		ck_assert_int_eq(join(c[i], (uint32_t)i, 3), i);
	}
	coll_start(&cc, c[0], WP_COLL_ALLGATHER, 0, 8, 1, 2000);
	usleep(100000);
	store_cli_close(c[1]);		/* as if its process died */
	coll_end(&cc);
	ck_assert_int_eq(cc.rc, -ECONNRESET);
	ck_assert_str_eq(cc.msg, "rank 1 failed");
	ck_assert_int_eq(store_cli_event(c[2], &ev, deadline_after_ms(2000)), 0);
	ck_assert_uint_eq(ev.type, WP_EV_FAILED);
	ck_assert_uint_eq(ev.rank, 1);
	ck_assert_int_eq(store_cli_event(c[2], &ev, deadline_after_ms(50)),
			 -ETIMEDOUT);
	store_cli_close(c[0]);
	store_cli_close(c[2]);
	stop();
}
END_TEST

START_TEST(test_uid_hex)
{
	struct hmc_world_uid a, b;
	char hex[2 * HMC_WORLD_UID_LEN + 1];

	pattern_fill(a.bytes, sizeof(a.bytes), 5);
	hmc_world_uid_to_hex(&a, hex);
	ck_assert_int_eq(hmc_world_uid_from_hex(hex, &b), 0);
	ck_assert_mem_eq(a.bytes, b.bytes, sizeof(a.bytes));
	hex[7] = 'g';
	ck_assert_int_eq(hmc_world_uid_from_hex(hex, &b), -EINVAL);
	ck_assert_int_eq(hmc_world_uid_from_hex("00", &b), -EINVAL);
}
END_TEST

int main(void)
{
	TCase *tc = tcase_create("world_store");

	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_wrong_secret_refused);
	tcase_add_test(tc, test_ranks);
	tcase_add_test(tc, test_allgather_and_bcast);
	tcase_add_test(tc, test_deadline_names_missing);
	tcase_add_test(tc, test_failure_ends_collective);
	tcase_add_test(tc, test_uid_hex);
	return run_tcase("world_store", tc);
}
