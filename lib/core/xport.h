/* SPDX-License-Identifier: MIT */
/*
 * Transport interface: what a transport provides (struct xport_ops) and
 * what it may call back. The communicator core knows transports only
 * through this table; transports never call each other. lib/xport/ holds
 * the transports and hands out their tables with the optional ops filled
 * in with defaults (xport/xport.h), so that the core calls every op.
 *
 * Contract:
 *  - init() runs once per communicator, the first time a peer uses the
 *    transport; it registers the communicator's buffer once for all peers;
 *  - per peer: peer_create(), then peer_info() (our metadata, sent over the
 *    control plane) and peer_connect() (the peer's); peer_destroy() ends it
 *    and must hand back every request it still holds (req_complete with an
 *    error when they cannot finish);
 *  - post() starts a put, get or flush; when it returns 0 the transport owns
 *    the request and calls req_complete() exactly once, possibly before
 *    post() returns; on error it does not own it;
 *  - post() and put_signal() may run in any thread, concurrently with each
 *    other and with progress(), never with peer_destroy() of their peer:
 *    the core waits for its posters before destroying a transport peer;
 *  - peer_fd() (optional; default: none, -1) names a descriptor to pass to
 *    the peer with our metadata (Unix control connections only); the
 *    peer's transport gets its copy through peer_attach_fd() (default:
 *    closes it, -EPROTO) before peer_connect() and owns it;
 *  - put_signal() (optional; default: -EOPNOTSUPP) posts a put whose tag
 *    travels on the data path behind the data; the receiving transport
 *    hands the tag to comm_deliver_tag() once the data is visible. Without
 *    it the core puts, flushes and sends the tag over the control plane;
 *  - tags_in_band: hmc_comm_send_tag() sends its tag as a put_signal of
 *    0 bytes, for a transport whose data path could overtake the control
 *    plane: the peer then receives every tag in the order they were sent;
 *  - progress() and arm() never block; errors of a peer found while
 *    progressing are reported with comm_peer_error(), never by tearing the
 *    peer down from inside the transport;
 *  - a transport with one descriptor for all its peers names it with
 *    event_fd(); one with a descriptor per peer leaves event_fd out and
 *    hands each to xport_watch(), so that it sits in the progress engine's
 *    own epoll set: every level of nested epoll adds a wake-up to each
 *    packet's delivery. Such a transport watches its descriptors from
 *    arm() on, and may take them out of the set in unwatch(), which the
 *    engine calls once callers have spun without sleeping for a while:
 *    the wake-ups then cost every packet and serve nobody.
 */
#ifndef HMC_LIB_XPORT_H
#define HMC_LIB_XPORT_H

#include <stdint.h>

#include <hmc/hmc.h>

#include "core/req.h"

struct comm_mr;
struct hmc_comm;
struct peer;

struct xport_amo {
	uint64_t off;		/* in the peer's region */
	uint64_t operand;
	uint64_t compare;	/* HMC_AMO_CSWAP */
	uint64_t *fetch;	/* the old value, or NULL */
	uint8_t op;		/* enum hmc_amo_op */
	uint8_t size;		/* 4 or 8 */
};

struct xport_ops {
	enum hmc_transport type;

	int (*init)(struct hmc_comm *comm, void **ctx);
	void (*fini)(void *ctx);

	int (*peer_create)(void *ctx, struct peer *peer, void **xpeer);
	int (*peer_info)(void *ctx, void *xpeer, uint8_t *blob, uint32_t cap,
			 uint32_t *len);
	int (*peer_connect)(void *ctx, void *xpeer, const uint8_t *blob,
			    uint32_t len);
	int (*peer_fd)(void *ctx, void *xpeer);
	int (*peer_attach_fd)(void *ctx, void *xpeer, int fd);
	/* @graceful: finish what was posted first, until @deadline. */
	void (*peer_destroy)(void *ctx, void *xpeer, bool graceful,
			     int64_t deadline);

	int (*post)(void *ctx, void *xpeer, struct req *r, enum req_op op,
		    uint64_t local_off, uint64_t remote_off, uint64_t len);
	int (*put_signal)(void *ctx, void *xpeer, struct req *r,
			  uint64_t local_off, uint64_t remote_off, uint64_t len,
			  uint64_t tag);
	bool tags_in_band;

	/* Events handled (>= 0) or a negative errno. */
	int (*progress)(void *ctx);
	/* Before sleeping on event_fd(): 0, or -EBUSY if there is work. */
	int (*arm)(void *ctx);
	/* A file descriptor that becomes readable when there is work, or -1. */
	int (*event_fd)(void *ctx);
	/* Optional: nobody sleeps on xport_watch()ed fds until the next arm(). */
	void (*unwatch)(void *ctx);
	/*
	 * Optional (default: 0), for HMC_TRANSPORT_AUTO: 0 if this transport
	 * can reach the peer at the other end of the TCP control socket
	 * @ctrl_fd, else a negative errno (AUTO then moves on without asking
	 * the peer).
	 */
	int (*reaches)(void *ctx, int ctrl_fd);

	/*
	 * Memory regions besides the ConnBuffer (optional: default
	 * -EOPNOTSUPP). mr_reg() registers @mr (core/mr.h: address, length,
	 * rights, memory type; it stays put until mr_dereg()) for peers and
	 * for our own transfers, and mr_pack() writes the key that a peer's
	 * rmr_import() turns into its handle for that connection, of a region
	 * of @size bytes; the transport peer owns what rmr_import() made and
	 * frees it when destroyed. post_mr() is post() between a region of
	 * ours (@xmr, NULL: the ConnBuffer) and one of the peer's (@xrmr,
	 * NULL: its ConnBuffer; never both), ranges checked. The owner's side checks a peer's accesses itself.
	 */
	int (*mr_reg)(void *ctx, const struct comm_mr *mr, void **xmr);
	void (*mr_dereg)(void *ctx, void *xmr);
	int (*mr_pack)(void *ctx, void *xmr, uint8_t *key, uint32_t cap,
		       uint32_t *len);
	int (*rmr_import)(void *ctx, void *xpeer, const uint8_t *key,
			  uint32_t len, uint64_t size, void **xrmr);
	int (*post_mr)(void *ctx, void *xpeer, struct req *r, enum req_op op,
		       void *xmr, uint64_t local_off, void *xrmr,
		       uint64_t remote_off, uint64_t len);
	/*
	 * Remote atomics (optional: default -EOPNOTSUPP), applied with CPU
	 * atomics on the peer's side (see hmc.h): struct xport_amo says
	 * what; @xrmr NULL names the ConnBuffer; range, size and alignment
	 * are checked. With a->fetch, the old value is stored there before
	 * req_complete(); to one peer they are applied in the order posted.
	 */
	int (*amo)(void *ctx, void *xpeer, struct req *r, void *xrmr,
		   const struct xport_amo *a);
	/* Peers' writes into a region pass through us: we bump mr->notify. */
	bool notifies_writes;
};

/*
 * Progress transport @type when @fd becomes readable; 0 or -errno.
 * xport_unwatch() undoes it (before the fd is closed).
 */
int xport_watch(struct hmc_comm *c, enum hmc_transport type, int fd);
void xport_unwatch(struct hmc_comm *c, int fd);

/*
 * A transport found @p broken: it is closed by the next progress round
 * (callable from inside transport progress).
 */
void comm_peer_error(struct hmc_comm *c, struct peer *p, int err);
/*
 * A tag from @p arrived on a transport's data path (put_signal): queue it
 * for hmc_comm_recv_tag(); a flood fails the peer.
 */
void comm_deliver_tag(struct hmc_comm *c, struct peer *p, uint64_t tag);

#endif
