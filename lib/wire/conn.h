/* SPDX-License-Identifier: MIT */
/*
 * A control connection: a non-blocking socket that carries whole frames
 * (wire/frame.h) with, over Unix sockets, descriptors passed along. Input
 * is buffered: conn_fill() reads what the socket has, conn_next_frame()
 * looks at the oldest complete frame and conn_consume() drops it. Writers
 * are serialised by tx_lock, so that frames never interleave; a reader
 * needs no lock, since one thread at a time reads a connection (its owner
 * says which).
 */
#ifndef HMC_LIB_CONN_H
#define HMC_LIB_CONN_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "wire/frame.h"
#include "wire/sock.h"
#include "wire/tls.h"

struct conn {
	int fd;
	bool is_unix;
	bool tls_hs;			/* listener: TLS handshake under way */
	struct stream *tls;		/* TLS 1.3 over fd, or NULL */
	pthread_mutex_t tx_lock;
	uint8_t *rx;			/* buffered input: [rx_off, rx_len) */
	uint32_t rx_off, rx_len, rx_cap;
	int rx_fds[SOCK_MAX_FDS];	/* descriptors received, oldest first */
	int nr_rx_fds;
};

/* A connection over @fd, which it owns from now on. */
struct conn *conn_new(int fd, bool is_unix);
void conn_free(struct conn *cn);
/*
 * Run TLS over @cn from now (the handshake is the caller's): 0 or -errno,
 * after which @cn's socket is closed (conn_free() still frees @cn).
 */
int conn_start_tls(struct conn *cn, struct tls_ctx *ctx, bool server);

int conn_send(struct conn *cn, enum frame_type type, const void *payload,
	      uint32_t len, int64_t deadline);
/* The same, passing @fd along (FRAME_F_FD) unless it is negative. */
int conn_send_fd(struct conn *cn, enum frame_type type, const void *payload,
		 uint32_t len, int fd, int64_t deadline);
/* conn_send_fd() for a caller that holds cn->tx_lock. */
int conn_send_locked(struct conn *cn, enum frame_type type,
		     const void *payload, uint32_t len, int fd,
		     int64_t deadline);

/* The oldest descriptor received and not yet taken (ours to close), or -1. */
int conn_take_fd(struct conn *cn);
/* Whether input is buffered beyond the frames consumed. */
static inline bool conn_has_input(const struct conn *cn)
{
	return cn->rx_len > cn->rx_off;
}

/*
 * The next complete buffered frame: 1 (and @hdr, @payload), 0 if more input
 * is needed, -EPROTO for garbage. conn_consume() drops it.
 */
int conn_next_frame(struct conn *cn, struct frame_hdr *hdr,
		    const uint8_t **payload);
void conn_consume(struct conn *cn, const struct frame_hdr *hdr);
/* Read what the socket has: bytes, -EAGAIN, or an error (EOF: -ECONNRESET). */
ssize_t conn_fill(struct conn *cn);
/* Wait for one frame (a dialer's handshake): 0 or a negative errno. */
int conn_recv_frame(struct conn *cn, struct frame_hdr *hdr,
		    const uint8_t **payload, int64_t deadline);

#endif
