/* SPDX-License-Identifier: MIT */
/*
 * The world's store in etcd (HMC_STORE=etcd://host:port[,host:port...]),
 * through etcd's v3 HTTP/JSON gateway with libcurl and json-c, both
 * opened at run time. It answers the requests of proto.h (JOIN, PUBLISH,
 * READY, COLL, LEAVE) the way store.c does, so world.c does not know which
 * store it has (client.c routes to it). Keys, under HMC_ETCD_PREFIX
 * (default "hmc/world/"):
 *   size             the world's size
 *   rank/<r>         a member: be32 first collective, its record; bound to
 *                    its lease (4 s TTL, inside HMC_WORLD_FAIL_DETECT_MS),
 *                    kept alive every second, so a dead member's rank expires
 *   joined/<r>       rank r has had a member (else it never came)
 *   gone/<r>         rank r left (a rank key gone without it: failed)
 *   coll/<n>/<r>     rank r's part of collective n, bound to its lease
 * Members follow the others with watches on the prefix; when etcd comes
 * back without their keys (restarted with its data lost) each member's
 * keep-alive notices the lease is gone and publishes itself again.
 * Collectives go through etcd: correct, not fast (barrier-heavy programs
 * use a tcp:// store).
 */
#ifndef HMC_LIB_WORLD_ETCD_H
#define HMC_LIB_WORLD_ETCD_H

#include <stddef.h>
#include <stdint.h>

#include "world/client.h"

struct etcd;

/* @endpoints: "host:port[,host:port...]". -ENOENT without libcurl/json-c. */
int etcd_open(const char *endpoints, int64_t deadline, struct etcd **e,
	      char *msg, size_t msg_len);
void etcd_close(struct etcd *e);

/* store_cli_call() and friends, for an etcd store. */
int etcd_call(struct etcd *e, uint16_t op, const void *a, size_t alen,
	      const void *b, size_t blen, int64_t deadline, uint8_t **reply,
	      size_t *rlen);
int etcd_event(struct etcd *e, struct store_ev *ev, int64_t deadline);
uint32_t etcd_nslots(struct etcd *e);
const char *etcd_msg(struct etcd *e);
/* Our address towards the etcd endpoint in use. */
int etcd_local_ip(struct etcd *e, char *ip, size_t len);

#endif
