/* SPDX-License-Identifier: MIT */
/*
 * A member's connection to the world store (proto.h): requests with
 * deadlines, and the membership events the store pushes, queued in order.
 * Calls may come from several threads; one request is on the wire at a
 * time.
 */
#ifndef HMC_LIB_WORLD_CLIENT_H
#define HMC_LIB_WORLD_CLIENT_H

#include <stddef.h>
#include <stdint.h>

struct store_cli;
struct tls_ctx;

struct store_ev {
	uint32_t type;		/* WP_EV_* */
	uint32_t rank;
	uint32_t nslots;	/* the world's ranks after it */
	int32_t err;		/* positive errno of a failure */
};

/*
 * Dial @host:@port (retrying while nobody listens yet: the store's host
 * may start after us), run TLS with @tls (a client context, NULL: plain)
 * and authenticate with @secret. -EACCES: wrong secret or certificate;
 * -ETIMEDOUT. @msg (@msg_len) receives why it failed.
 */
int store_cli_connect(const char *host, uint16_t port, const void *secret,
		      size_t secret_len, struct tls_ctx *tls, int64_t deadline,
		      struct store_cli **cli, char *msg, size_t msg_len);

/* The same, for a world whose store is etcd (etcd.h). */
int store_cli_connect_etcd(const char *endpoints, int64_t deadline,
			   struct store_cli **cli, char *msg, size_t msg_len);

/*
 * Send @op with body @a (@alen) followed by @b (@blen) and wait for its
 * reply until @deadline. 0 with the reply's body in *@reply (malloc'd,
 * *@rlen bytes; NULL @reply discards it), or the reply's negative errno
 * with its text in store_cli_msg(); -ECONNRESET once the store is gone.
 */
int store_cli_call(struct store_cli *cli, uint16_t op, const void *a,
		   size_t alen, const void *b, size_t blen, int64_t deadline,
		   uint8_t **reply, size_t *rlen);

/* The text of the last failed call or connection (never NULL). */
const char *store_cli_msg(struct store_cli *cli);

/* The oldest queued event, reading the store until @deadline: 0, -ETIMEDOUT. */
int store_cli_event(struct store_cli *cli, struct store_ev *ev,
		    int64_t deadline);

/* The world's rank count as of the last message read from the store. */
uint32_t store_cli_nslots(struct store_cli *cli);
void store_cli_set_nslots(struct store_cli *cli, uint32_t nslots);

/* Our address on the connection to the store: the one that reaches it. */
int store_cli_local_ip(struct store_cli *cli, char *ip, size_t len);

void store_cli_close(struct store_cli *cli);

#endif
