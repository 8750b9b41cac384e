// SPDX-License-Identifier: MIT
/* Control connections (see conn.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wire/conn.h"

#define RX_MIN		4096u	/* the smallest read */

struct conn *conn_new(int fd, bool is_unix)
{
	struct conn *cn = calloc(1, sizeof(*cn));

	if (!cn)
		return NULL;
	cn->fd = fd;
	cn->is_unix = is_unix;
	pthread_mutex_init(&cn->tx_lock, NULL);
	return cn;
}

void conn_free(struct conn *cn)
{
	if (!cn)
		return;
	while (cn->nr_rx_fds)
		close(conn_take_fd(cn));
	if (cn->tls) {
		tls_stream_close(cn->tls);	/* closes cn->fd */
		free(cn->tls);
	} else if (cn->fd >= 0) {
		close(cn->fd);
	}
	free(cn->rx);
	pthread_mutex_destroy(&cn->tx_lock);
	free(cn);
}

int conn_start_tls(struct conn *cn, struct tls_ctx *ctx, bool server)
{
	struct stream *st = malloc(sizeof(*st));
	int rc;

	if (!st)
		return -ENOMEM;
	rc = tls_stream_init(st, cn->fd, ctx, server);
	if (rc) {
		cn->fd = -1;	/* tls_stream_init() closed it */
		free(st);
		return rc;
	}
	cn->tls = st;
	return 0;
}

/* A frame through TLS: one record for small frames (tags, handshakes). */
static int conn_write_tls(struct conn *cn, const uint8_t *hdr,
			  const void *payload, uint32_t len, int64_t deadline)
{
	uint8_t one[FRAME_HDR_LEN + 256];
	int rc;

	if (len <= sizeof(one) - FRAME_HDR_LEN) {
		memcpy(one, hdr, FRAME_HDR_LEN);
		if (len)	/* WELCOME, BYE: no payload, maybe NULL */
			memcpy(one + FRAME_HDR_LEN, payload, len);
		return tls_stream_write_full(cn->tls, one, FRAME_HDR_LEN + len,
					 deadline);
	}
	rc = tls_stream_write_full(cn->tls, hdr, FRAME_HDR_LEN, deadline);
	return rc ? rc : tls_stream_write_full(cn->tls, payload, len, deadline);
}

int conn_send_locked(struct conn *cn, enum frame_type type,
		     const void *payload, uint32_t len, int fd,
		     int64_t deadline)
{
	uint8_t hdr[FRAME_HDR_LEN];
	struct iovec iov[2] = {
		{ .iov_base = hdr, .iov_len = sizeof(hdr) },
		{ .iov_base = (void *)payload, .iov_len = len },
	};

	if (fd >= 0 && !cn->is_unix)
		return -EOPNOTSUPP;
	frame_encode_hdr(hdr, type, fd >= 0 ? FRAME_F_FD : 0, len);
	if (cn->tls)
		return conn_write_tls(cn, hdr, payload, len, deadline);
	return sock_send_all(cn->fd, iov, len ? 2 : 1, fd, deadline);
}

int conn_send_fd(struct conn *cn, enum frame_type type, const void *payload,
		 uint32_t len, int fd, int64_t deadline)
{
	int rc;

	pthread_mutex_lock(&cn->tx_lock);
	rc = conn_send_locked(cn, type, payload, len, fd, deadline);
	pthread_mutex_unlock(&cn->tx_lock);
	return rc;
}

int conn_send(struct conn *cn, enum frame_type type, const void *payload,
	      uint32_t len, int64_t deadline)
{
	return conn_send_fd(cn, type, payload, len, -1, deadline);
}

int conn_take_fd(struct conn *cn)
{
	int fd;

	if (!cn->nr_rx_fds)
		return -1;
	fd = cn->rx_fds[0];
	memmove(cn->rx_fds, cn->rx_fds + 1,
		--cn->nr_rx_fds * sizeof(cn->rx_fds[0]));
	return fd;
}

/* Room for @need buffered bytes from rx_off. */
static int rx_reserve(struct conn *cn, uint32_t need)
{
	uint32_t cap;
	uint8_t *rx;

	if (cn->rx_off) {
		memmove(cn->rx, cn->rx + cn->rx_off, cn->rx_len - cn->rx_off);
		cn->rx_len -= cn->rx_off;
		cn->rx_off = 0;
	}
	if (need <= cn->rx_cap)
		return 0;
	cap = cn->rx_cap ? cn->rx_cap : RX_MIN;
	while (cap < need)
		cap *= 2;
	rx = realloc(cn->rx, cap);
	if (!rx)
		return -ENOMEM;
	cn->rx = rx;
	cn->rx_cap = cap;
	return 0;
}

/*
 * TLS input: OpenSSL reads one record at a time from the socket (no
 * read-ahead), so what it has not decrypted is still in the socket and
 * epoll reports it; only a record larger than our room stays inside.
 */
static ssize_t conn_fill_tls(struct conn *cn)
{
	ssize_t n, got = 0;
	int rc;

	do {
		if (cn->rx_len == cn->rx_cap || cn->rx_off) {
			rc = rx_reserve(cn, cn->rx_len - cn->rx_off + RX_MIN);
			if (rc)
				return rc;
		}
		n = tls_stream_read(cn->tls, cn->rx + cn->rx_len,
				cn->rx_cap - cn->rx_len);
		if (n <= 0)
			return got ? got : n;
		cn->rx_len += (uint32_t)n;
		got += n;
	} while (tls_stream_pending(cn->tls));
	return got;
}

ssize_t conn_fill(struct conn *cn)
{
	ssize_t n;
	int rc;

	if (cn->tls)
		return conn_fill_tls(cn);
	if (cn->rx_len == cn->rx_cap || cn->rx_off) {
		rc = rx_reserve(cn, cn->rx_len - cn->rx_off + RX_MIN);
		if (rc)
			return rc;
	}
	n = sock_recv_some(cn->fd, cn->rx + cn->rx_len, cn->rx_cap - cn->rx_len,
			   cn->rx_fds, &cn->nr_rx_fds, SOCK_MAX_FDS);
	if (n > 0)
		cn->rx_len += (uint32_t)n;
	return n;
}

int conn_next_frame(struct conn *cn, struct frame_hdr *hdr,
		    const uint8_t **payload)
{
	uint32_t avail = cn->rx_len - cn->rx_off;
	int rc;

	if (avail < FRAME_HDR_LEN)
		return 0;
	rc = frame_decode_hdr(cn->rx + cn->rx_off, hdr);
	if (rc)
		return rc;
	if (avail < FRAME_HDR_LEN + hdr->len) {
		rc = rx_reserve(cn, FRAME_HDR_LEN + hdr->len);
		return rc ? rc : 0;
	}
	*payload = cn->rx + cn->rx_off + FRAME_HDR_LEN;
	return 1;
}

void conn_consume(struct conn *cn, const struct frame_hdr *hdr)
{
	cn->rx_off += FRAME_HDR_LEN + hdr->len;
	if (cn->rx_off == cn->rx_len)
		cn->rx_off = cn->rx_len = 0;
}

int conn_recv_frame(struct conn *cn, struct frame_hdr *hdr,
		    const uint8_t **payload, int64_t deadline)
{
	ssize_t n;
	int rc;

	for (;;) {
		rc = conn_next_frame(cn, hdr, payload);
		if (rc)
			return rc < 0 ? rc : 0;
		n = conn_fill(cn);
		if (n > 0)
			continue;
		if (n != -EAGAIN)
			return (int)n;
		rc = sock_wait_readable(cn->fd, deadline);
		if (rc)
			return rc;
	}
}
