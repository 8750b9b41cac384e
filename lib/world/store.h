/* SPDX-License-Identifier: MIT */
/*
 * The world store: a small server that hands out ranks, keeps each
 * member's address record, runs the world's collectives (a star through
 * the store, as memfabric's config store does) and tells members when
 * others join, leave or fail. hmcrun hosts one; so does the rank whose
 * address is HMC_STORE's, rank 0 under PMIx and torchrun, and the process
 * that made a unique id.
 *
 * Failure detection: a member's connection that closes (its process died:
 * the kernel closes its sockets) is a failure at once; a host that
 * vanishes is noticed by TCP keepalive and TCP_USER_TIMEOUT within
 * STORE_FAIL_DETECT_MS.
 */
#ifndef HMC_LIB_WORLD_STORE_H
#define HMC_LIB_WORLD_STORE_H

#include <stddef.h>
#include <stdint.h>

struct store_srv;
struct tls_ctx;

#define STORE_FAIL_DETECT_MS	5000

/* Keepalive and user timeout that bound STORE_FAIL_DETECT_MS on @fd. */
void store_set_keepalive(int fd);

/*
 * Listen on @ip:@port (0 picks one) and serve from a thread of our own.
 * @secret (@secret_len bytes, may be empty) authenticates members; @tls
 * (a server context, may be NULL) is taken over by the store. -EADDRINUSE
 * when another process serves that port already.
 */
int store_srv_start(const char *ip, uint16_t port, const void *secret,
		    size_t secret_len, struct tls_ctx *tls,
		    struct store_srv **srv);

uint16_t store_srv_port(const struct store_srv *srv);

/* Wait until no member is connected, or @deadline: 0 or -ETIMEDOUT. */
int store_srv_wait_idle(struct store_srv *srv, int64_t deadline);

/* Stop serving, close every connection and free the store. */
void store_srv_stop(struct store_srv *srv);

#endif
