// SPDX-License-Identifier: MIT
/*
 * The dialer: hmc_comm_connect() runs the handshake and the transport
 * negotiation itself, on a connection that nobody else sees until the
 * peer is connected; the engine takes its input over from then on.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctrl/ctrl.h"
#include "sys/log.h"
#include "wire/auth.h"
#include "wire/sock.h"

/* An errno carried in a REJECT frame, sanitised. */
static int reject_errno(const uint8_t *p, uint32_t len)
{
	int32_t err;

	if (frame_decode_s32(p, len, &err) || err >= 0 || err < -FRAME_MAX_ERRNO)
		return -EPROTO;
	return err;
}

static int dial_handshake(struct hmc_comm *c, struct conn *cn, uint32_t rank,
			  int64_t deadline)
{
	struct frame_hello hello = {
		.src_rank = c->rank,
		.dst_rank = rank,
		.flags = c->secret ? FRAME_HELLO_F_AUTH : 0,
	};
	uint8_t buf[FRAME_HELLO_LEN], mac[FRAME_MAC_LEN];
	struct frame_challenge ch;
	const uint8_t *payload;
	struct frame_hdr h;
	bool challenged = false;
	int rc;

	rc = auth_nonce(hello.nonce);
	if (rc)
		return rc;
	rc = conn_send(cn, FRAME_HELLO, buf,
		       (uint32_t)frame_encode_hello(buf, &hello), deadline);
	for (;;) {
		if (rc)
			return rc;
		rc = conn_recv_frame(cn, &h, &payload, deadline);
		if (rc)
			return rc == -ECONNRESET ? -ECONNREFUSED : rc;
		switch (h.type) {
		case FRAME_REJECT:
			return reject_errno(payload, h.len);
		case FRAME_WELCOME:
			conn_consume(cn, &h);
			/* with a secret, the listener must have proven itself */
			return c->secret && !challenged ? -EACCES : 0;
		case FRAME_CHALLENGE:
			if (!c->secret || challenged ||
			    frame_decode_challenge(payload, h.len, &ch))
				return -EPROTO;
			conn_consume(cn, &h);
			challenged = true;
			rc = auth_mac(c->secret, c->secret_len,
				      AUTH_ROLE_LISTENER, hello.nonce, ch.nonce,
				      c->rank, rank, mac);
			if (rc)
				return rc;
			if (!auth_mac_equal(mac, ch.mac)) {
				pr_warn("rank %u: listener for rank %u failed authentication",
					c->rank, rank);
				return -EACCES;
			}
			rc = auth_mac(c->secret, c->secret_len, AUTH_ROLE_DIALER,
				      hello.nonce, ch.nonce, c->rank, rank, mac);
			if (!rc)
				rc = conn_send(cn, FRAME_AUTH, mac, FRAME_MAC_LEN,
					       deadline);
			break;
		default:
			return -EPROTO;
		}
	}
}

/* Which control socket to try: HMC_CTRL_TRANSPORT=tcp|unix forces one. */
static bool want_unix(struct hmc_comm *c, const char *ip, bool *forced)
{
	const char *env = getenv("HMC_CTRL_TRANSPORT");

	*forced = env && (!strcmp(env, "tcp") || !strcmp(env, "unix"));
	if (*forced)
		return !strcmp(env, "unix");
	return !(c->flags & HMC_COMM_F_NO_UNIX) && sock_addr_is_local(ip);
}

static int dial(struct hmc_comm *c, uint32_t rank, const char *ip,
		uint16_t port, int64_t deadline, struct conn **out)
{
	char name[64];
	bool forced, is_unix = want_unix(c, ip, &forced);
	struct conn *cn;
	int fd, rc;

	for (;;) {
		if (is_unix) {
			sock_unix_name(name, sizeof(name), port);
			rc = sock_dial_unix(name, deadline, &fd);
			if (!rc) {
				rc = sock_check_peer_cred(fd);
				if (rc)
					close(fd);
			}
		} else {
			rc = sock_dial_tcp(ip, port, deadline, &fd);
		}
		if (!rc) {
			cn = conn_new(fd, is_unix);
			if (!cn) {
				close(fd);
				return -ENOMEM;
			}
			rc = dial_handshake(c, cn, rank, deadline);
			if (!rc) {
				*out = cn;
				return 0;
			}
			conn_free(cn);
		}
		/*
		 * The Unix name is per port, not per address: another listener
		 * may own it (-ESRCH: not the rank we want). TCP decides.
		 */
		if (!is_unix || forced || rc == -EACCES || rc == -EEXIST ||
		    rc == -ETIMEDOUT)
			return rc;
		pr_debug("rank %u: unix control to rank %u: %s; trying tcp",
			 c->rank, rank, hmc_strerror(rc));
		is_unix = false;
	}
}

int ctrl_connect(struct hmc_comm *c, uint32_t rank, const char *ip,
		 uint16_t port, enum hmc_transport transport)
{
	int64_t deadline = deadline_after_ms(c->connect_timeout_ms);
	struct xport_slot *slot;
	struct peer *p, *old;
	struct conn *cn;
	void *xpeer;
	int rc;

	if (rank == c->rank || !ip)
		return -EINVAL;
	p = peer_new(c, rank);
	if (!p)
		return -ENOMEM;
	pthread_mutex_lock(&c->lock);
	old = peer_lookup_locked(c, rank);
	if (old && old->state != PEER_DOWN) {
		rc = old->state == PEER_CONNECTED ? -EISCONN : -EALREADY;
		pthread_mutex_unlock(&c->lock);
		peer_put(p);
		return rc;
	}
	if (old)
		peer_unlink(c, old);
	p->state = PEER_DIALING;	/* not in the table yet */
	peer_link(c, p);
	pthread_mutex_unlock(&c->lock);
	if (old)
		peer_put(old);

	rc = dial(c, rank, ip, port, deadline, &cn);
	if (rc)
		goto err;
	rc = ctrl_xport_dial(c, p, cn, transport, deadline, &slot, &xpeer);
	if (rc) {
		conn_free(cn);
		goto err;
	}

	engine_lock(&c->engine);
	pthread_mutex_lock(&c->lock);
	p->conn = cn;
	p->xops = slot->ops;
	p->xpeer = xpeer;
	peer_set_state(c, p, PEER_CONNECTED);
	pthread_mutex_unlock(&c->lock);
	rc = ctrl_watch_peer(c, p, false);
	if (rc) {
		peer_close(c, p, rc, PEER_CLOSE_REMOVE);
	} else {
		peer_report(c, p, HMC_PEER_CONNECTED, 0);
		if (conn_has_input(cn))	/* frames behind the ACK */
			ctrl_peer_input(c, p);
	}
	engine_unlock(&c->engine);
	if (!rc)
		pr_debug("rank %u: connected to rank %u at %s:%u over %s (%s control)",
			 c->rank, rank, ip, port,
			 hmc_transport_name(slot->ops->type),
			 cn->is_unix ? "unix" : "tcp");
	peer_put(p);
	return rc;
err:
	pthread_mutex_lock(&c->lock);
	peer_unlink(c, p);
	pthread_mutex_unlock(&c->lock);
	peer_put(p);	/* the table's */
	peer_put(p);	/* ours */
	pr_info("rank %u: connect to rank %u at %s:%u: %s", c->rank, rank, ip,
		port, hmc_strerror(rc));
	return rc;
}
