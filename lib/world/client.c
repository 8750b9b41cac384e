// SPDX-License-Identifier: MIT
/* The world store's client (see client.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "sys/log.h"
#include "wire/sock.h"
#include "sys/util.h"
#include "world/client.h"
#include "world/etcd.h"
#include "world/proto.h"
#include "world/store.h"
#include "wire/tls.h"

struct store_cli {
	struct etcd *etcd;	/* an etcd store: everything goes there */
	pthread_mutex_t lock;
	struct stream s;
	uint32_t next_id;
	uint32_t nslots;
	int err;		/* once the connection broke */
	struct store_ev *evq;	/* ring of queued events */
	size_t ev_head, ev_len, ev_cap;
	char msg[256];
};

static void set_msg(struct store_cli *cli, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void set_msg(struct store_cli *cli, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cli->msg, sizeof(cli->msg), fmt, ap);
	va_end(ap);
}

static int send_frame(struct store_cli *cli, uint16_t op, uint32_t id,
		      const void *a, size_t alen, const void *b, size_t blen,
		      int64_t deadline)
{
	struct wp_hdr h = { .len = (uint32_t)(alen + blen), .op = op, .id = id };
	uint8_t hb[WP_HDR_LEN];
	int rc;

	if (alen + blen > WP_MAX_BODY)
		return -EMSGSIZE;
	wp_hdr_encode(hb, &h);
	rc = tls_stream_write_full(&cli->s, hb, sizeof(hb), deadline);
	if (!rc && alen)
		rc = tls_stream_write_full(&cli->s, a, alen, deadline);
	if (!rc && blen)
		rc = tls_stream_write_full(&cli->s, b, blen, deadline);
	return rc;
}

/* Read one whole frame; its body is malloc'd. */
static int recv_frame(struct store_cli *cli, struct wp_hdr *h, uint8_t **body,
		      int64_t deadline)
{
	uint8_t hb[WP_HDR_LEN];
	int rc;

	rc = tls_stream_read_full(&cli->s, hb, sizeof(hb), deadline);
	if (rc)
		return rc;
	wp_hdr_decode(hb, h);
	if (h->len > WP_MAX_BODY)
		return -EPROTO;
	*body = malloc(h->len + 1);
	if (!*body)
		return -ENOMEM;
	rc = tls_stream_read_full(&cli->s, *body, h->len, deadline);
	if (rc) {
		free(*body);
		return rc;
	}
	(*body)[h->len] = '\0';	/* error texts are strings */
	return 0;
}

static int queue_event(struct store_cli *cli, const uint8_t *b, size_t len)
{
	struct store_ev *ev;

	if (len < 16)
		return -EPROTO;
	if (cli->ev_len == cli->ev_cap) {
		size_t cap = cli->ev_cap ? cli->ev_cap * 2 : 16, i;
		struct store_ev *q = malloc(cap * sizeof(*q));

		if (!q)
			return -ENOMEM;
		for (i = 0; i < cli->ev_len; i++)
			q[i] = cli->evq[(cli->ev_head + i) % cli->ev_cap];
		free(cli->evq);
		cli->evq = q;
		cli->ev_cap = cap;
		cli->ev_head = 0;
	}
	ev = &cli->evq[(cli->ev_head + cli->ev_len++) % cli->ev_cap];
	ev->type = get_be32(b);
	ev->rank = get_be32(b + 4);
	ev->nslots = get_be32(b + 8);
	ev->err = (int32_t)get_be32(b + 12);
	cli->nslots = ev->nslots;
	return 0;
}

/* A broken connection stays broken: every later call gets its error. */
static int broken(struct store_cli *cli, int rc)
{
	cli->err = rc;
	if (rc == -ECONNRESET)
		set_msg(cli, "the world store closed the connection");
	else
		set_msg(cli, "world store connection: %s", strerror(-rc));
	return rc;
}

static int call_locked(struct store_cli *cli, uint16_t op, const void *a,
		       size_t alen, const void *b, size_t blen,
		       int64_t deadline, uint8_t **reply, size_t *rlen)
{
	uint32_t id = ++cli->next_id ? cli->next_id : ++cli->next_id;
	struct wp_hdr h;
	uint8_t *body;
	int rc;

	if (cli->err)
		return cli->err;
	rc = send_frame(cli, op, id, a, alen, b, blen, deadline);
	if (rc)
		goto fail;
	for (;;) {
		rc = recv_frame(cli, &h, &body, deadline);
		if (rc)
			goto fail;
		if (h.op == WP_EVENT && !h.id) {
			rc = queue_event(cli, body, h.len);
			free(body);
			if (rc)
				goto fail;
			continue;
		}
		if (h.id != id || h.op != op) {
			free(body);
			rc = -EPROTO;
			goto fail;
		}
		break;
	}
	if (h.status) {
		set_msg(cli, "%s", h.len ? (char *)body : strerror(-h.status));
		free(body);
		return h.status;
	}
	if (reply) {
		*reply = body;
		*rlen = h.len;
	} else {
		free(body);
	}
	return 0;

fail:
	/* A timed-out request leaves half a frame: the connection is done. */
	if (rc == -ETIMEDOUT) {
		cli->err = -ECONNABORTED;
		set_msg(cli, "no answer from the world store in time");
		return rc;
	}
	return broken(cli, rc);
}

int store_cli_call(struct store_cli *cli, uint16_t op, const void *a,
		   size_t alen, const void *b, size_t blen, int64_t deadline,
		   uint8_t **reply, size_t *rlen)
{
	int rc;

	if (cli->etcd)
		return etcd_call(cli->etcd, op, a, alen, b, blen, deadline,
				 reply, rlen);
	pthread_mutex_lock(&cli->lock);
	rc = call_locked(cli, op, a, alen, b, blen, deadline, reply, rlen);
	pthread_mutex_unlock(&cli->lock);
	return rc;
}

const char *store_cli_msg(struct store_cli *cli)
{
	if (cli->etcd)
		return etcd_msg(cli->etcd);
	return cli->msg;
}

int store_cli_event(struct store_cli *cli, struct store_ev *ev,
		    int64_t deadline)
{
	struct wp_hdr h;
	uint8_t *body;
	int rc = 0;

	if (cli->etcd)
		return etcd_event(cli->etcd, ev, deadline);
	pthread_mutex_lock(&cli->lock);
	while (!cli->ev_len) {
		if (cli->err) {
			rc = cli->err;
			break;
		}
		/* Wait for input without starting a frame we could not finish. */
		if (!tls_stream_pending(&cli->s)) {
			struct pollfd pfd = { .fd = cli->s.fd, .events = POLLIN };

			rc = poll(&pfd, 1, deadline_remaining_ms(deadline));
			if (rc < 0 && errno == EINTR)
				continue;
			if (rc < 0) {
				rc = -errno;
				break;
			}
			if (!rc) {
				rc = -ETIMEDOUT;
				break;
			}
		}
		/* A frame has started: give its rest a bounded time. */
		rc = recv_frame(cli, &h, &body, deadline_after_ms(
			STORE_FAIL_DETECT_MS));
		if (rc == -EAGAIN)
			continue;
		if (rc) {
			broken(cli, rc == -ETIMEDOUT ? -ECONNABORTED : rc);
			break;
		}
		if (h.op != WP_EVENT || h.id) {
			free(body);
			rc = broken(cli, -EPROTO);
			break;
		}
		rc = queue_event(cli, body, h.len);
		free(body);
		if (rc)
			break;
	}
	if (cli->ev_len) {
		*ev = cli->evq[cli->ev_head];
		cli->ev_head = (cli->ev_head + 1) % cli->ev_cap;
		cli->ev_len--;
		rc = 0;
	}
	pthread_mutex_unlock(&cli->lock);
	return rc;
}

uint32_t store_cli_nslots(struct store_cli *cli)
{
	uint32_t n;

	if (cli->etcd)
		return etcd_nslots(cli->etcd);
	pthread_mutex_lock(&cli->lock);
	n = cli->nslots;
	pthread_mutex_unlock(&cli->lock);
	return n;
}

void store_cli_set_nslots(struct store_cli *cli, uint32_t nslots)
{
	pthread_mutex_lock(&cli->lock);
	cli->nslots = nslots;
	pthread_mutex_unlock(&cli->lock);
}

static int dial(const char *host, uint16_t port, int64_t deadline, int *fd)
{
	int delay_ms = 5, rc;

	for (;;) {
		rc = sock_dial_tcp(host, port, deadline, fd);
		if (rc != -ECONNREFUSED || deadline_passed(deadline))
			return rc;
		/* The store's host may not be up yet. */
		if (deadline_remaining_ms(deadline) >= 0 &&
		    delay_ms > deadline_remaining_ms(deadline))
			delay_ms = deadline_remaining_ms(deadline);
		usleep((useconds_t)delay_ms * 1000);
		if (delay_ms < 100)
			delay_ms *= 2;
	}
}

static int authenticate(struct store_cli *cli, const void *secret,
			size_t secret_len, int64_t deadline)
{
	uint8_t hello[8 + WP_NONCE_LEN], cnonce[WP_NONCE_LEN];
	uint8_t mac[WP_MAC_LEN], *body = NULL;
	struct wp_hdr h;
	int rc;

	put_be32(hello, WP_MAGIC);
	put_be32(hello + 4, WP_VERSION);
	if (RAND_bytes(cnonce, sizeof(cnonce)) != 1)
		return -EIO;
	memcpy(hello + 8, cnonce, sizeof(cnonce));
	rc = send_frame(cli, WP_HELLO, 1, hello, sizeof(hello), NULL, 0,
			deadline);
	if (rc)
		return rc;
	rc = recv_frame(cli, &h, &body, deadline);
	if (rc)
		return rc;
	rc = -EPROTO;
	if (h.op != WP_CHALLENGE || h.len != WP_NONCE_LEN + WP_MAC_LEN)
		goto out;
	rc = wp_mac(secret, secret_len, WP_SIDE_SERVER, cnonce, body, mac);
	if (rc)
		goto out;
	if (CRYPTO_memcmp(mac, body + WP_NONCE_LEN, WP_MAC_LEN)) {
		set_msg(cli, "the world store does not know our secret "
			"(HMC_SECRET differs)");
		rc = -EACCES;
		goto out;
	}
	rc = wp_mac(secret, secret_len, WP_SIDE_CLIENT, cnonce, body, mac);
	if (rc)
		goto out;
	free(body);
	body = NULL;
	cli->next_id = 1;
	rc = call_locked(cli, WP_AUTH, mac, sizeof(mac), NULL, 0, deadline,
			 NULL, NULL);
out:
	free(body);
	return rc;
}

int store_cli_connect(const char *host, uint16_t port, const void *secret,
		      size_t secret_len, struct tls_ctx *tls, int64_t deadline,
		      struct store_cli **out, char *msg, size_t msg_len)
{
	struct store_cli *cli;
	int fd, rc;

	cli = calloc(1, sizeof(*cli));
	if (!cli)
		return -ENOMEM;
	pthread_mutex_init(&cli->lock, NULL);
	cli->s.fd = -1;
	rc = dial(host, port, deadline, &fd);
	if (rc) {
		set_msg(cli, "cannot reach the world store at %s:%u: %s", host,
			port, strerror(-rc));
		goto err;
	}
	store_set_keepalive(fd);
	rc = tls_stream_init(&cli->s, fd, tls, false);
	if (rc)
		goto err;
	rc = tls_stream_handshake_wait(&cli->s, deadline);
	if (rc) {
		set_msg(cli, "TLS with the world store at %s:%u: %s", host,
			port, rc == -EACCES ? "certificate refused" :
			strerror(-rc));
		goto err;
	}
	rc = authenticate(cli, secret, secret_len, deadline);
	if (rc) {
		if (!cli->msg[0] || rc == -ECONNRESET)
			set_msg(cli, "authenticating with the world store at "
				"%s:%u: %s", host, port,
				rc == -ECONNRESET && tls ?
				"connection closed (our certificate refused?)" :
				strerror(-rc));
		/* TLS 1.3 reports a refused client certificate on first read. */
		if (rc == -ECONNRESET && tls)
			rc = -EACCES;
		goto err;
	}
	*out = cli;
	return 0;

err:
	if (msg)
		snprintf(msg, msg_len, "%s", cli->msg);
	store_cli_close(cli);
	return rc;
}

int store_cli_local_ip(struct store_cli *cli, char *ip, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	const void *a;

	if (cli->etcd)
		return etcd_local_ip(cli->etcd, ip, len);
	if (getsockname(cli->s.fd, (struct sockaddr *)&ss, &sl))
		return -errno;
	if (ss.ss_family == AF_INET)
		a = &((struct sockaddr_in *)&ss)->sin_addr;
	else if (ss.ss_family == AF_INET6)
		a = &((struct sockaddr_in6 *)&ss)->sin6_addr;
	else
		return -EAFNOSUPPORT;
	if (!inet_ntop(ss.ss_family, a, ip, (socklen_t)len))
		return -errno;
	return 0;
}

int store_cli_connect_etcd(const char *endpoints, int64_t deadline,
			   struct store_cli **out, char *msg, size_t msg_len)
{
	struct store_cli *cli = calloc(1, sizeof(*cli));
	int rc;

	if (!cli)
		return -ENOMEM;
	pthread_mutex_init(&cli->lock, NULL);
	cli->s.fd = -1;
	rc = etcd_open(endpoints, deadline, &cli->etcd, msg, msg_len);
	if (rc) {
		pthread_mutex_destroy(&cli->lock);
		free(cli);
		return rc;
	}
	*out = cli;
	return 0;
}

void store_cli_close(struct store_cli *cli)
{
	if (!cli)
		return;
	if (cli->etcd) {
		etcd_close(cli->etcd);
		pthread_mutex_destroy(&cli->lock);
		free(cli);
		return;
	}
	tls_stream_close(&cli->s);
	free(cli->evq);
	pthread_mutex_destroy(&cli->lock);
	free(cli);
}
