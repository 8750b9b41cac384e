// SPDX-License-Identifier: MIT
/* Plain and TLS 1.3 streams over non-blocking sockets (see tls.h). */
#include <errno.h>
#include <stdint.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "sys/log.h"
#include "sys/util.h"
#include "wire/tls.h"

struct tls_ctx {
	SSL_CTX *ssl_ctx;
};

static void log_ssl_errors(const char *what)
{
	unsigned long e;
	char buf[256];

	while ((e = ERR_get_error())) {
		ERR_error_string_n(e, buf, sizeof(buf));
		pr_warn("tls: %s: %s", what, buf);
	}
}

int tls_ctx_create(const char *cert, const char *key, const char *ca,
		   bool server, struct tls_ctx **ctx)
{
	struct tls_ctx *t;
	int rc = -ENOMEM;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->ssl_ctx = SSL_CTX_new(server ? TLS_server_method() :
				 TLS_client_method());
	if (!t->ssl_ctx)
		goto err_free;
	/* TLS 1.3 only: no renegotiation, no legacy ciphers, 1-RTT handshake. */
	if (!SSL_CTX_set_min_proto_version(t->ssl_ctx, TLS1_3_VERSION))
		goto err_ctx;
	rc = -ENOENT;
	if (SSL_CTX_use_certificate_chain_file(t->ssl_ctx, cert) != 1 ||
	    SSL_CTX_use_PrivateKey_file(t->ssl_ctx, key, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_load_verify_locations(t->ssl_ctx, ca, NULL) != 1) {
		log_ssl_errors("loading certificate, key or CA");
		goto err_ctx;
	}
	rc = -EINVAL;
	if (SSL_CTX_check_private_key(t->ssl_ctx) != 1) {
		log_ssl_errors("key does not match certificate");
		goto err_ctx;
	}
	SSL_CTX_set_verify(t->ssl_ctx, SSL_VERIFY_PEER |
			   SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	/* Both ends close the connection on any error: no session resumption. */
	SSL_CTX_set_session_cache_mode(t->ssl_ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_num_tickets(t->ssl_ctx, 0);
	/* The store's output queue retries from wherever its head now is. */
	SSL_CTX_set_mode(t->ssl_ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
			 SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	*ctx = t;
	return 0;

err_ctx:
	SSL_CTX_free(t->ssl_ctx);
err_free:
	free(t);
	return rc;
}

void tls_ctx_destroy(struct tls_ctx *ctx)
{
	if (!ctx)
		return;
	SSL_CTX_free(ctx->ssl_ctx);
	free(ctx);
}

static const char *pick(const char *arg, const char *env)
{
	const char *v = arg ? arg : getenv(env);

	return v && *v ? v : NULL;
}

int tls_ctx_from_env(const char *cert, const char *key, const char *ca,
		     bool server, struct tls_ctx **ctx)
{
	cert = pick(cert, "HMC_TLS_CERT");
	key = pick(key, "HMC_TLS_KEY");
	ca = pick(ca, "HMC_TLS_CA");
	*ctx = NULL;
	if (!cert && !key && !ca)
		return 0;
	if (!cert || !key || !ca) {
		pr_err("tls: HMC_TLS_CERT, HMC_TLS_KEY and HMC_TLS_CA go together");
		return -EINVAL;
	}
	return tls_ctx_create(cert, key, ca, server, ctx);
}

/*
 * OpenSSL's socket BIO writes with write(), which raises SIGPIPE on a
 * connection the peer closed; libhmc installs no handlers, so its sockets
 * go through this BIO, which sends with MSG_NOSIGNAL.
 */
static BIO_METHOD *nosig_method;
static pthread_once_t nosig_once = PTHREAD_ONCE_INIT;

static int nosig_fd(BIO *b)
{
	return (int)(intptr_t)BIO_get_data(b);
}

static int nosig_write(BIO *b, const char *buf, int len)
{
	ssize_t n = send(nosig_fd(b), buf, (size_t)len, MSG_NOSIGNAL);

	BIO_clear_retry_flags(b);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		BIO_set_retry_write(b);
	return (int)n;
}

static int nosig_read(BIO *b, char *buf, int len)
{
	ssize_t n = recv(nosig_fd(b), buf, (size_t)len, 0);

	BIO_clear_retry_flags(b);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		BIO_set_retry_read(b);
	return (int)n;
}

static long nosig_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int nosig_create(BIO *b)
{
	BIO_set_init(b, 1);
	return 1;
}

static void nosig_init(void)
{
	BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK,
				     "hmc socket");

	if (!m || !BIO_meth_set_write(m, nosig_write) ||
	    !BIO_meth_set_read(m, nosig_read) ||
	    !BIO_meth_set_ctrl(m, nosig_ctrl) ||
	    !BIO_meth_set_create(m, nosig_create)) {
		BIO_meth_free(m);
		return;
	}
	nosig_method = m;
}

int tls_stream_init(struct stream *s, int fd, struct tls_ctx *ctx, bool server)
{
	SSL *ssl;
	BIO *bio = NULL;

	s->fd = fd;
	s->ssl = NULL;
	s->want = POLLIN;
	s->server = server;
	pthread_mutex_init(&s->lock, NULL);
	if (!ctx)
		return 0;
	pthread_once(&nosig_once, nosig_init);
	ssl = SSL_new(ctx->ssl_ctx);
	if (ssl && nosig_method)
		bio = BIO_new(nosig_method);
	if (bio)
		BIO_set_data(bio, (void *)(intptr_t)fd);
	if (!ssl || !bio) {
		BIO_free(bio);
		SSL_free(ssl);
		close(fd);
		s->fd = -1;
		pthread_mutex_destroy(&s->lock);
		return -ENOMEM;
	}
	SSL_set_bio(ssl, bio, bio);
	if (server)
		SSL_set_accept_state(ssl);
	else
		SSL_set_connect_state(ssl);
	s->ssl = ssl;
	return 0;
}

void tls_stream_close(struct stream *s)
{
	if (s->ssl) {
		SSL_shutdown(s->ssl);	/* non-blocking: best effort */
		SSL_free(s->ssl);
		s->ssl = NULL;
	}
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	pthread_mutex_destroy(&s->lock);
}

/* Map an OpenSSL result to -EAGAIN (setting s->want) or an errno. */
static int ssl_result(struct stream *s, int ret, const char *what)
{
	int err = SSL_get_error(s->ssl, ret);
	long vr;

	switch (err) {
	case SSL_ERROR_WANT_READ:
		s->want = POLLIN;
		return -EAGAIN;
	case SSL_ERROR_WANT_WRITE:
		s->want = POLLOUT;
		return -EAGAIN;
	case SSL_ERROR_ZERO_RETURN:
		return -ECONNRESET;
	case SSL_ERROR_SYSCALL:
		ERR_clear_error();
		return errno && errno != EAGAIN ? -errno : -ECONNRESET;
	default:
		vr = SSL_get_verify_result(s->ssl);
		if (vr != X509_V_OK) {
			pr_warn("tls: %s: peer certificate refused: %s", what,
				X509_verify_cert_error_string(vr));
			ERR_clear_error();
			return -EACCES;
		}
		if (ERR_GET_LIB(ERR_peek_error()) == ERR_LIB_SSL &&
		    ERR_GET_REASON(ERR_peek_error()) >= SSL_AD_REASON_OFFSET) {
			/* The peer sent an alert: it refused our certificate. */
			log_ssl_errors(what);
			return -EACCES;
		}
		log_ssl_errors(what);
		return -EPROTO;
	}
}

int tls_stream_handshake(struct stream *s)
{
	int ret;

	if (!s->ssl)
		return 0;
	pthread_mutex_lock(&s->lock);
	ERR_clear_error();
	ret = SSL_do_handshake(s->ssl);
	ret = ret == 1 ? 0 : ssl_result(s, ret, "handshake");
	pthread_mutex_unlock(&s->lock);
	return ret;
}

ssize_t tls_stream_read(struct stream *s, void *buf, size_t len)
{
	ssize_t n;
	size_t got;
	int ret;

	if (!s->ssl) {
		n = recv(s->fd, buf, len, 0);
		if (n > 0)
			return n;
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR || errno == EAGAIN) {
			s->want = POLLIN;
			return -EAGAIN;
		}
		return -errno;
	}
	pthread_mutex_lock(&s->lock);
	ERR_clear_error();
	ret = SSL_read_ex(s->ssl, buf, len, &got);
	n = ret == 1 ? (ssize_t)got : ssl_result(s, ret, "read");
	pthread_mutex_unlock(&s->lock);
	return n;
}

ssize_t tls_stream_write(struct stream *s, const void *buf, size_t len)
{
	ssize_t n;
	size_t put;
	int ret;

	if (!s->ssl) {
		n = send(s->fd, buf, len, MSG_NOSIGNAL);
		if (n >= 0)
			return n;
		if (errno == EINTR || errno == EAGAIN) {
			s->want = POLLOUT;
			return -EAGAIN;
		}
		return -errno;
	}
	pthread_mutex_lock(&s->lock);
	ERR_clear_error();
	ret = SSL_write_ex(s->ssl, buf, len, &put);
	n = ret == 1 ? (ssize_t)put : ssl_result(s, ret, "write");
	pthread_mutex_unlock(&s->lock);
	return n;
}

bool tls_stream_pending(struct stream *s)
{
	bool p;

	if (!s->ssl)
		return false;
	pthread_mutex_lock(&s->lock);
	p = SSL_pending(s->ssl) > 0;
	pthread_mutex_unlock(&s->lock);
	return p;
}

/*
 * Wait for @events on the socket. Another thread's call may change
 * s->want, so reads wait for input and writes for room, each at most
 * STEP_MS at a time: the rare read that needs to write (or the other way
 * round, a TLS 1.3 key update) is retried within that.
 */
#define STEP_MS	10

static int stream_wait(struct stream *s, short events, int64_t deadline)
{
	struct pollfd pfd = { .fd = s->fd, .events = events };
	int rc, ms;

	if (deadline_passed(deadline))
		return -ETIMEDOUT;
	ms = deadline_remaining_ms(deadline);
	if (s->ssl && (ms < 0 || ms > STEP_MS))
		ms = STEP_MS;
	rc = poll(&pfd, 1, ms);
	if (rc < 0 && errno != EINTR)
		return -errno;
	return 0;
}

int tls_stream_handshake_wait(struct stream *s, int64_t deadline)
{
	int rc;

	while ((rc = tls_stream_handshake(s)) == -EAGAIN) {
		rc = stream_wait(s, s->want, deadline);
		if (rc)
			return rc;
	}
	return rc;
}

/* All @len bytes through @s, one way, waiting until @deadline. */
static int stream_full(struct stream *s, uint8_t *p, size_t len,
		       int64_t deadline, bool write)
{
	ssize_t n;
	int rc;

	while (len) {
		n = write ? tls_stream_write(s, p, len) :
			    tls_stream_read(s, p, len);
		if (n == -EAGAIN) {
			rc = stream_wait(s, write ? POLLOUT : POLLIN, deadline);
			if (rc)
				return rc;
			continue;
		}
		if (n < 0)
			return (int)n;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int tls_stream_read_full(struct stream *s, void *buf, size_t len,
			 int64_t deadline)
{
	return stream_full(s, buf, len, deadline, false);
}

int tls_stream_write_full(struct stream *s, const void *buf, size_t len,
			  int64_t deadline)
{
	return stream_full(s, (uint8_t *)buf, len, deadline, true);
}
