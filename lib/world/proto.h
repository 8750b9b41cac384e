/* SPDX-License-Identifier: MIT */
/*
 * The world store's wire protocol, between store.c (the server: hmcrun, or
 * the rank that hosts it) and client.c. Big-endian, over a stream (tls.h).
 *
 * Every message is a header and @len bytes of body. A request's reply has
 * the request's @id and op, @status 0 or a negative errno, and for errors a
 * text body saying why (the ranks that never came, ...). EVENT messages
 * are pushed by the server with id 0.
 *
 * Connection: HELLO {magic, version, client nonce} -> CHALLENGE {server
 * nonce, server MAC} -> AUTH {client MAC} -> AUTH reply. The MACs are
 * HMAC-SHA256 under the shared secret (empty without one) over a label
 * naming the side and both nonces, so either side proves the secret and
 * neither MAC can be replayed or reflected. Then JOIN, PUBLISH, and any
 * of READY, COLL, LEAVE.
 */
#ifndef HMC_LIB_WORLD_PROTO_H
#define HMC_LIB_WORLD_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define WP_MAGIC		0x484d4357u	/* "HMCW" */
#define WP_VERSION		1u
#define WP_HDR_LEN		16u
#define WP_NONCE_LEN		32u
#define WP_MAC_LEN		32u
#define WP_MAX_BODY		(64u << 20)	/* 64 MiB: a collective's result */
#define WP_MAX_SLOTS		65536u
#define WP_RANK_ANY		0xffffffffu

/* A rank's address record: fixed size, so the init rendezvous is an allgather. */
#define WP_REC_LEN		128u
#define WP_REC_HOST		0	/* host name, NUL-terminated, 64 bytes */
#define WP_REC_HOST_LEN		64u
#define WP_REC_IP		64	/* control address, NUL-terminated, 48 bytes */
#define WP_REC_IP_LEN		48u
#define WP_REC_PORT		112	/* be16 */
#define WP_REC_PID		116	/* be32 */
#define WP_REC_FLAGS		120	/* u8: WP_REC_F_* */
#define WP_REC_F_SHM		0x01	/* mapped the store's segment (shm.h) */

enum wp_op {
	WP_HELLO = 1,	/* be32 magic, be32 version, nonce */
	WP_CHALLENGE,	/* nonce, MAC */
	WP_AUTH,	/* MAC; reply: empty */
	/*
	 * be32 rank (WP_RANK_ANY: the lowest free), be32 size (0: join a
	 * running world). Reply: be32 rank, be32 slots, and for a start-up
	 * member of a world of at most WSHM_MAX_RANKS, the name of the
	 * store's shared segment (shm.h), NUL-terminated.
	 */
	WP_JOIN,
	/* Our record. Reply: be32 slots, then per member {be32 rank, record}. */
	WP_PUBLISH,
	/* A joiner is connected to every member: they get JOINED now. */
	WP_READY,
	/*
	 * be32 kind, be32 root, be32 timeout_ms, be32 slots the caller knows,
	 * data. Reply: be32 slots, then ALLGATHER: slots * len bytes (zeros
	 * for slots without a member), BCAST: the root's data.
	 */
	WP_COLL,
	WP_LEAVE,	/* reply: empty; the server then closes */
	WP_EVENT,	/* pushed: be32 type, be32 rank, be32 slots, be32 error */
};

/* The same values as enum hmc_world_event_type. */
enum wp_event {
	WP_EV_JOINED = 1,
	WP_EV_LEFT,
	WP_EV_FAILED,
};

enum wp_coll_kind {
	WP_COLL_ALLGATHER,
	WP_COLL_BCAST,
};

struct wp_hdr {
	uint32_t len;
	uint16_t op;
	uint16_t flags;		/* zero */
	uint32_t id;
	int32_t status;
};

enum wp_side {
	WP_SIDE_SERVER,
	WP_SIDE_CLIENT,
};

/* The MAC that @side sends: HMAC-SHA256(secret, label | cnonce | snonce). */
int wp_mac(const void *secret, size_t secret_len, enum wp_side side,
	   const uint8_t cnonce[WP_NONCE_LEN],
	   const uint8_t snonce[WP_NONCE_LEN], uint8_t mac[WP_MAC_LEN]);

void wp_hdr_encode(uint8_t *p, const struct wp_hdr *h);
void wp_hdr_decode(const uint8_t *p, struct wp_hdr *h);

#endif
