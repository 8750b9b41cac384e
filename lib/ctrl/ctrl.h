/* SPDX-License-Identifier: MIT */
/*
 * Control plane: the listener's and the dialer's handshakes, the
 * negotiation of a transport, and the frames of established peers handed
 * to the core. Everything here runs with the engine lock held, except the
 * dialer's side of a handshake, which runs in the caller of
 * hmc_comm_connect() on a connection nobody else knows yet.
 *
 *   dialer                          listener
 *   HELLO(src, dst, nonce_d) ---->  checks dst, auth mode, src not in use
 *                          <----  CHALLENGE(nonce_l, mac_l)   (secret only)
 *   checks mac_l; AUTH(mac_d) --->  checks mac_d
 *                          <----  WELCOME                       (or REJECT)
 *   XPORT_REQ(transport, ...) --->  brings the transport up
 *                          <----  XPORT_ACK(status, ...)
 *
 * A descriptor (the shm transport's buffer) travels only in XPORT_REQ and
 * XPORT_ACK: the dialer sends its REQ once WELCOME came (after the
 * listener proved the secret, when there is one), the listener answers
 * only a peer it welcomed (after the dialer proved it), and a frame that
 * comes out of turn ends the connection, its descriptor closed unread.
 *
 * Control over Unix sockets: the listener's socket sits at a filesystem
 * path named after its TCP port (wire/sock.c), which every network
 * namespace of the host reaches, else under an abstract name (its own
 * namespace only). The path is per port, not per address, so over a Unix
 * socket the HELLO says which boot, network namespace and address the
 * dialer meant, and a listener that is not the one answers -ESRCH: the
 * dialer then tries the next way (abstract name, TCP).
 */
#ifndef HMC_LIB_CTRL_H
#define HMC_LIB_CTRL_H

#include <stdint.h>

#include <hmc/hmc.h>

#include "core/comm.h"
#include "core/peer.h"
#include "engine/engine.h"
#include "wire/frame.h"

/* The communicator's steps of a progress round (engine_init()). */
extern const struct engine_ops ctrl_engine_ops;

/* ---- listener (listen.c) */
/* Listen on @ip:@port over TCP and, unless disabled, a Unix socket. */
int ctrl_listen(struct hmc_comm *c, const char *ip, uint16_t port);
/* Close the listeners and drop the handshakes under way. */
void ctrl_unlisten(struct hmc_comm *c);
/* Drop what missed its deadline; the earliest deadline left. */
int64_t ctrl_expire(struct hmc_comm *c);

/* ---- dialer (dial.c) */
/* Dial @rank and bring up @transport to it (hmc_comm_connect). */
int ctrl_connect(struct hmc_comm *c, uint32_t rank, const char *ip,
		 uint16_t port, enum hmc_transport transport);

/* ---- established peers (dispatch.c) */
/* Have the engine hand @p's control input to ctrl_peer_input(). */
int ctrl_watch_peer(struct hmc_comm *c, struct peer *p, bool rewatch);
/* Handle what @p's connection has (engine lock held). */
void ctrl_peer_input(struct hmc_comm *c, struct peer *p);

/* ---- transport negotiation (negotiate.c) */
/* The listener answers a XPORT_REQ: 0, or a fatal error. */
int ctrl_xport_accept(struct hmc_comm *c, struct peer *p,
		      const struct frame_hdr *h, const uint8_t *payload);
/* The dialer brings up @transport (or AUTO's choice) to @p over @cn. */
int ctrl_xport_dial(struct hmc_comm *c, struct peer *p, struct conn *cn,
		    enum hmc_transport transport, int64_t deadline,
		    struct xport_slot **slot, void **xpeer);

#endif
