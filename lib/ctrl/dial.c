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
#include "sys/host.h"
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

/* @addr: over a Unix socket, the address we dialed (sock_addr_v6()). */
static int dial_handshake(struct hmc_comm *c, struct conn *cn, uint32_t rank,
			  const uint8_t *addr, int64_t deadline)
{
	struct frame_hello hello = {
		.src_rank = c->rank,
		.dst_rank = rank,
		.flags = c->secret ? FRAME_HELLO_F_AUTH : 0,
	};
	uint8_t buf[FRAME_HELLO_LEN + FRAME_HELLO_HOST_LEN], mac[FRAME_MAC_LEN];
	struct frame_challenge ch;
	const uint8_t *payload;
	struct frame_hdr h;
	bool challenged = false;
	int rc;

	rc = auth_nonce(hello.nonce);
	if (rc)
		return rc;
	if (cn->is_unix) {
		hello.flags |= FRAME_HELLO_F_HOST;
		host_boot_id(hello.boot_id);
		hello.netns = host_netns();
		memcpy(hello.addr, addr, sizeof(hello.addr));
	}
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

enum dial_way {
	DIAL_UNIX_PATH,		/* the listener's path: any namespace of this host */
	DIAL_UNIX_ABSTRACT,	/* its abstract name: this namespace */
	DIAL_TCP,
	DIAL_WAYS,
};

static const char *const dial_way_names[DIAL_WAYS] = {
	"unix path", "unix abstract", "tcp",
};

/*
 * The ways to try, in order: HMC_CTRL_TRANSPORT=tcp|unix forces TCP or the
 * two Unix ones; by default the path (when it exists), the abstract name
 * for an address of this namespace, then TCP.
 */
static bool dial_way_wanted(struct hmc_comm *c, const char *ip,
			    enum dial_way way)
{
	const char *env = getenv("HMC_CTRL_TRANSPORT");

	if (env && !strcmp(env, "tcp"))
		return way == DIAL_TCP;
	if (env && !strcmp(env, "unix"))
		return way != DIAL_TCP;
	if (way == DIAL_TCP)
		return true;
	if (c->flags & HMC_COMM_F_NO_UNIX)
		return false;
	return way == DIAL_UNIX_PATH || sock_addr_is_local(ip);
}

static int dial_way(struct hmc_comm *c, const char *ip, uint16_t port,
		    enum dial_way way, int64_t deadline, int *fd)
{
	char name[108];
	int rc;

	switch (way) {
	case DIAL_UNIX_PATH:
		rc = sock_unix_path(name, sizeof(name), port, false);
		if (!rc)
			rc = sock_dial_unix(name, false, deadline, fd);
		break;
	case DIAL_UNIX_ABSTRACT:
		sock_unix_name(name, sizeof(name), port);
		rc = sock_dial_unix(name, true, deadline, fd);
		break;
	default:
		return sock_dial_tcp(ip, port, deadline, fd);
	}
	if (!rc) {
		rc = sock_check_peer_cred(*fd);
		if (rc)
			close(*fd);
	}
	return rc;
}

/*
 * The listener's Unix socket is tried first: its path is per port, not
 * per address, so over Unix the HELLO says which boot, network namespace
 * and address we meant, and a listener that is not the one answers
 * -ESRCH (listen.c).
 */
static int dial(struct hmc_comm *c, uint32_t rank, const char *ip,
		uint16_t port, int64_t deadline, struct conn **out)
{
	uint8_t addr[16] = { 0 };
	enum dial_way way;
	struct conn *cn;
	int fd, rc = -EHOSTUNREACH;

	*out = NULL;
	if (!ip || !*ip)
		return -EINVAL;
	/* An address we cannot resolve is for TCP to report. */
	sock_addr_v6(ip, addr);
	for (way = 0; way < DIAL_WAYS; way++) {
		if (!dial_way_wanted(c, ip, way))
			continue;
		rc = dial_way(c, ip, port, way, deadline, &fd);
		if (!rc) {
			cn = conn_new(fd, way != DIAL_TCP);
			if (!cn) {
				close(fd);
				return -ENOMEM;
			}
			rc = 0;
			if (c->tls_cli) {
				rc = conn_start_tls(cn, c->tls_cli, false);
				if (!rc)
					rc = tls_stream_handshake_wait(cn->tls,
								   deadline);
			}
			if (!rc)
				rc = dial_handshake(c, cn, rank, addr, deadline);
			/*
			 * TLS 1.3 finishes the dialer's handshake before the
			 * listener checks its certificate: a refusal shows as
			 * the connection closing (the alert is often lost to
			 * the reset) at the first frames.
			 */
			if (c->tls_cli && (rc == -ECONNRESET ||
					   rc == -ECONNREFUSED || rc == -EPIPE)) {
				pr_info("rank %u: rank %u closed the TLS control "
					"connection: our certificate refused?",
					c->rank, rank);
				rc = -EACCES;
			}
			if (!rc) {
				*out = cn;
				return 0;
			}
			conn_free(cn);
		}
		/*
		 * A Unix socket may lead to another listener (-ESRCH: not the
		 * one we meant, or not the rank), or to none: try the next
		 * way. The right listener's answer is final.
		 */
		if (rc == -EACCES || rc == -EEXIST || rc == -ETIMEDOUT)
			return rc;
		if (way != DIAL_TCP)
			pr_debug("rank %u: %s control to rank %u: %s", c->rank,
				 dial_way_names[way], rank, hmc_strerror(rc));
	}
	return rc;
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
