/* SPDX-License-Identifier: MIT */
/*
 * Socket helpers for the control plane: every socket is non-blocking and
 * close-on-exec, every wait has a deadline, EINTR is retried and no write
 * can raise SIGPIPE.
 */
#ifndef HMC_LIB_SOCK_H
#define HMC_LIB_SOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

/* TCP listener on @ip (numeric or name; NULL or "" for any) and @port. */
int sock_listen_tcp(const char *ip, uint16_t port, int *fd, uint16_t *bound);

/* Unix listener in the abstract namespace under @name. */
int sock_listen_unix(const char *name, int *fd);

/* Accept one connection: the fd, -EAGAIN if none is waiting. */
int sock_accept(int lfd);

int sock_dial_tcp(const char *ip, uint16_t port, int64_t deadline, int *fd);
int sock_dial_unix(const char *name, int64_t deadline, int *fd);

/* Whether @ip names this host: a loopback or a local interface address. */
bool sock_addr_is_local(const char *ip);

/* The abstract Unix name for the listener on TCP @port. */
void sock_unix_name(char *buf, size_t len, uint16_t port);

/* Whether the process at the other end of a Unix socket is ours or root's. */
int sock_check_peer_cred(int fd);

/*
 * Write all of @iov before @deadline, passing @pass_fd along (SCM_RIGHTS,
 * Unix sockets) unless it is negative: 0 or a negative errno.
 */
int sock_send_all(int fd, struct iovec *iov, int iovcnt, int pass_fd,
		  int64_t deadline);

#define SOCK_MAX_FDS	4

/*
 * One non-blocking read: bytes read, -EAGAIN, -ECONNRESET at EOF, -errno.
 * Descriptors passed along are stored in @fds (close-on-exec), their count
 * in *@nfds; more than @max_fds in one read is -EPROTO (and none is kept).
 */
ssize_t sock_recv_some(int fd, void *buf, size_t len, int *fds, int *nfds,
		       int max_fds);

/* Wait until @fd is readable (POLLIN) or @deadline: 0, -ETIMEDOUT, -errno. */
int sock_wait_readable(int fd, int64_t deadline);

#endif
