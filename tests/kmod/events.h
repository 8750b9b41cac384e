/* SPDX-License-Identifier: GPL-2.0 */
/* test_events: listening to the "events" group of the family "hmc". */
#ifndef HMC_TESTS_KMOD_EVENTS_H
#define HMC_TESTS_KMOD_EVENTS_H

#include <netlink/genl/genl.h>

#include "kmod_test.h"

/* One event as received; @has has bit A set if attribute A came. */
struct ev {
	int cmd;
	uint64_t has;
	uint64_t seq, time_ns, size, offset, peer_id;
	uint32_t pid, file_id, buf_id, handle, buf_type, nr_mappings,
		 nr_exports, import_id, import_state, import_flags, nents,
		 transport, err, ioctl, port;
	int addr_len;
	uint8_t addr[HMC_PEER_ADDR_MAX];
	char exporter[HMC_EXPORTER_NAME_LEN], dev[64];
};

#define HAS(e, attr)	(((e)->has >> (attr)) & 1)
#define MAX_EVENTS	8192

struct listener {
	struct nl_sock *sk;
	int family;
	int n;			/* events received */
	int overruns;		/* ENOBUFS seen */
	struct ev ev[MAX_EVENTS];
};

/* Subscribes to the events group; 0 or -errno (-EPERM without CAP_NET_ADMIN). */
int listener_open(struct listener *l, int rcvbuf);
/* Receives until @count events came in all or @timeout_ms passed; the count. */
int listener_wait(struct listener *l, int count, int timeout_ms);
void listener_close(struct listener *l);
/* Events the kernel has sent or dropped (global counters). */
uint64_t events_done(int fd);
/* Waits (10 s at most) until events_done() reaches @n. */
void expect_events_done(int fd, uint64_t n);
/* Parses one message of the family into @e. */
void ev_parse(struct nl_msg *msg, struct ev *e);

#endif
