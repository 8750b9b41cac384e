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
#include <stddef.h>
#include <sys/uio.h>

/* TCP listener on @ip (numeric or name; NULL or "" for any) and @port. */
int sock_listen_tcp(const char *ip, uint16_t port, int *fd, uint16_t *bound);

/* Unix listener in the abstract namespace (one per network namespace). */
int sock_listen_unix(const char *name, int *fd);

/*
 * The filesystem path of the Unix listener for TCP @port, in a per-user
 * directory (HMC_RUNTIME_DIR, else /tmp/hmc-<euid>; made with @create) that
 * every network namespace of the host shares: 0 or -errno.
 */
int sock_unix_path(char *buf, size_t len, uint16_t port, bool create);

/*
 * Unix listener at @path, replacing a socket left behind by a dead one;
 * -EADDRINUSE if a live one has it. *@ino names ours for
 * sock_unlink_unix_path(), which removes it only if it is still ours.
 */
int sock_listen_unix_path(const char *path, int *fd, uint64_t *ino);
void sock_unlink_unix_path(const char *path, uint64_t ino);

/* A socket older than this that refuses connections is a dead listener's. */
#define SOCK_UNIX_STALE_S	10

/*
 * Remove the sockets that listeners killed before they could remove their
 * own left in @path's directory (those refusing connections and older
 * than SOCK_UNIX_STALE_S).
 */
void sock_unix_sweep(const char *path);

/* Accept one connection: the fd, -EAGAIN if none is waiting. */
int sock_accept(int lfd);

int sock_dial_tcp(const char *ip, uint16_t port, int64_t deadline, int *fd);
/* @name: abstract, or a filesystem path. */
int sock_dial_unix(const char *name, bool abstract, int64_t deadline,
		   int *fd);

/* Whether @ip names this host: a loopback or a local interface address. */
bool sock_addr_is_local(const char *ip);

/* @ip (numeric or a name: its first address) as IPv6, IPv4 v4-mapped. */
int sock_addr_v6(const char *ip, uint8_t out[16]);

enum {
	SOCK_ADDR_REMOTE,	/* no address of this network namespace */
	SOCK_ADDR_LOOPBACK,	/* 127/8 or ::1: every namespace has its own */
	SOCK_ADDR_LOCAL,	/* an address of one of its interfaces */
};

/* The address socket @fd is bound to, as sock_addr_v6(); *@any if a wildcard. */
int sock_bound_v6(int fd, uint8_t out[16], bool *any);

/* Where @addr (from sock_addr_v6()) lives: SOCK_ADDR_* or -errno. */
int sock_v6_locality(const uint8_t addr[16]);

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
