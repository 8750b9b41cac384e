/* SPDX-License-Identifier: MIT */
/*
 * A byte stream over a non-blocking socket, plain or TLS 1.3 (OpenSSL),
 * with deadlines. With TLS both ends present a certificate and verify the
 * other's against the same CA: membership of the cluster is having a
 * certificate signed by that CA, so host names are not checked (ranks
 * move between hosts and are often named by address).
 */
#ifndef HMC_LIB_WIRE_TLS_H
#define HMC_LIB_WIRE_TLS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct tls_ctx;

/*
 * A context from PEM files: certificate chain @cert, private key @key and
 * trust anchors @ca; @server picks the accepting side. -ENOENT (a file
 * cannot be read), -EINVAL (a key that does not match the certificate),
 * -ENOMEM.
 */
int tls_ctx_create(const char *cert, const char *key, const char *ca,
		   bool server, struct tls_ctx **ctx);
void tls_ctx_destroy(struct tls_ctx *ctx);

/*
 * The client and server contexts from HMC_TLS_CERT, HMC_TLS_KEY and
 * HMC_TLS_CA, or from the arguments where they are not NULL: 0 with
 * *@ctx NULL when none of the three is set, -EINVAL when only some are.
 */
int tls_ctx_from_env(const char *cert, const char *key, const char *ca,
		     bool server, struct tls_ctx **ctx);

/*
 * An SSL object must not be used by two threads at once; @lock serialises
 * each (non-blocking) OpenSSL call, and is never held while waiting, so a
 * thread that reads is never stuck behind one that waits to write.
 */
struct stream {
	int fd;
	void *ssl;		/* SSL *, NULL for a plain stream */
	short want;		/* POLLIN/POLLOUT the last -EAGAIN waits for */
	bool server;
	pthread_mutex_t lock;
};

/* Wrap connected non-blocking @fd (NULL @ctx: plain). Owns @fd from now. */
int tls_stream_init(struct stream *s, int fd, struct tls_ctx *ctx, bool server);

/* Close the socket (after a TLS close_notify when it can be sent at once). */
void tls_stream_close(struct stream *s);

/*
 * One step of the TLS handshake: 0 once complete (at once for a plain
 * stream), -EAGAIN while it needs the socket (@s->want says
 * which way), -EACCES if the peer's certificate was refused or it refused
 * ours, -ECONNRESET, -EPROTO.
 */
int tls_stream_handshake(struct stream *s);


/* Non-blocking: bytes moved, -EAGAIN, -ECONNRESET (EOF too), -errno. */
ssize_t tls_stream_read(struct stream *s, void *buf, size_t len);
ssize_t tls_stream_write(struct stream *s, const void *buf, size_t len);

/* Whether decrypted input is waiting inside the TLS layer (poll misses it). */
bool tls_stream_pending(struct stream *s);

/* The blocking forms, each bounded by @deadline (util.h): 0 or -errno. */
int tls_stream_handshake_wait(struct stream *s, int64_t deadline);
int tls_stream_read_full(struct stream *s, void *buf, size_t len, int64_t deadline);
int tls_stream_write_full(struct stream *s, const void *buf, size_t len,
		      int64_t deadline);

#endif
