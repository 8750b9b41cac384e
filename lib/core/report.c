// SPDX-License-Identifier: MIT
/* What became of each peer, told to hmc.ko for hmcstat and other monitors. */
#include <string.h>
#include <sys/socket.h>

#include "core/peer.h"
#include "mem/devhmc.h"
#include "sys/log.h"

/*
 * The address hmc.ko shows for a peer: its control connection's
 * sockaddr_in or sockaddr_in6, or, over a Unix socket, { AF_UNIX, pid }.
 */
static void peer_address(struct peer *p, struct conn *cn)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct ucred cred;
	uint32_t pid;

	p->addr_len = 0;
	if (cn->is_unix) {
		len = sizeof(cred);
		if (getsockopt(cn->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
			return;
		ss.ss_family = AF_UNIX;
		memcpy(p->addr, &ss.ss_family, sizeof(ss.ss_family));
		pid = (uint32_t)cred.pid;
		memcpy(p->addr + 4, &pid, sizeof(pid));
		p->addr_len = 8;
	} else if (!getpeername(cn->fd, (struct sockaddr *)&ss, &len) &&
		   len <= sizeof(p->addr)) {
		memcpy(p->addr, &ss, len);
		p->addr_len = len;
	}
}

void peer_report(struct hmc_comm *c, struct peer *p, uint32_t state, int err)
{
	int rc;

	if (c->report_fd < 0 || (state != HMC_PEER_CONNECTED && !p->reported))
		return;
	if (state == HMC_PEER_CONNECTED)
		peer_address(p, p->conn);
	rc = devhmc_peer_state(c->report_fd, p->rank, state,
			       state == HMC_PEER_DISCONNECTED ? 0 : err,
			       p->xops->type, p->addr, p->addr_len);
	if (rc)
		pr_debug("rank %u: PEER_STATE of rank %u: %s", c->rank, p->rank,
			 hmc_strerror(rc));
	else
		p->reported = state == HMC_PEER_CONNECTED;
}
